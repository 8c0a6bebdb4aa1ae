package planner

import (
	"context"
	"time"

	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
)

// DDL about a sharded schema (Keyspaces.PlanDDL): run on every sub-table
// or shard, then the plans of the schema forgotten and the shard-key
// types of the tables it created or altered learnt again.

// learnAfterDDLWait bounds the look-up of a table's shard-key type after
// DDL through the proxy created or altered it.
const learnAfterDDLWait = 5 * time.Second

// ddlKind reports whether statements of kind k may be DDL about a
// sharded schema's tables or database.
func ddlKind(k router.Kind) bool {
	switch k {
	case router.KindCreate, router.KindAlter, router.KindDrop, router.KindTruncate, router.KindRename:
		return true
	}
	return false
}

// SchemaDDL binds, in a session whose database is not a sharded schema,
// a text DDL statement p (classified st) that is about one (CREATE
// DATABASE shop, ALTER TABLE shop.t …); nil for any other statement,
// which the caller plans as it would without sharded schemas.
func (b *Binder) SchemaDDL(st router.Stmt, p []byte, s Session) engine.Primitive {
	if !ddlKind(st.Kind) || len(b.Keyspaces) == 0 || s.Streaming() || p[0] != mysql.ComQuery {
		return nil
	}
	return b.ddl(st, p, s)
}

// ddl binds a DDL statement about a sharded schema, or returns nil for a
// statement that is not one. DDL commits the open transaction on the
// server that runs it, which on shards would commit it on some only: it
// is refused inside a transaction.
func (b *Binder) ddl(st router.Stmt, p []byte, s Session) engine.Primitive {
	plan, err := b.Keyspaces.PlanDDL(p[1:], s.DB())
	if (err != nil || plan != nil && plan.Run == nil) && st.Kind == router.KindCreate {
		if prim := b.ddlFromShards(st, p[1:], s); prim != nil {
			return prim
		}
	}
	switch {
	case err != nil:
		return b.refuseErr(err)
	case plan == nil:
		return nil
	case plan.Run == nil:
		return b.routeTo(plan.Keyspace.Default, st, s)
	case s.InTransaction():
		return b.refuse("DDL on a sharded schema inside a transaction (it would commit the transaction on some shards only); COMMIT or ROLLBACK first")
	}
	plan.Run.Then = func() *mysql.SQLError {
		// Plans may hold what the DDL changed (an INSERT's column list, a
		// merge's collation), and plans made while the tables were
		// learnt again hold what they had before.
		plan.Keyspace.ForgetPlans()
		err := learnAfterDDL(plan, s)
		plan.Keyspace.ForgetPlans()
		return err
	}
	return plan.Run
}

// ddlFromShards plans CREATE TABLE … SELECT of a new unsharded table
// from sharded tables, evaluated on the default cluster (EvalPlan
// OnSession): nil for other DDL, run as written there.
func (b *Binder) ddlFromShards(st router.Stmt, sql []byte, s Session) engine.Primitive {
	ks := b.Keyspaces.Lookup(s.DB())
	if ks == nil {
		return nil
	}
	sh := &b.shape
	router.ScanShape(sql, sh)
	plan := ks.Plan(sql, sh, s.DB())
	if plan.Eval == nil || !plan.Eval.OnSession {
		return nil
	}
	if s.InTransaction() {
		return b.refuse("CREATE TABLE … SELECT from sharded tables inside a transaction (it would commit the transaction on the default cluster only); COMMIT or ROLLBACK first")
	}
	err := plan.Err
	if err == nil {
		err = notSupported("CREATE TABLE … SELECT from sharded tables here")
	}
	b.vals.Reset(sql, sh)
	return b.evaluateOr(ks, plan, st, sql, sh, &b.vals, nil, err, s)
}

// learnAfterDDL learns the shard-key types of the tables a DDL statement
// created or altered, so that the next statements route by key. A table
// created LIKE another may lack its key column: the client learns it at
// once, the table being created.
func learnAfterDDL(plan *DDLPlan, s Session) *mysql.SQLError {
	ctx, cancel := context.WithTimeout(context.Background(), learnAfterDDLWait)
	defer cancel()
	for _, t := range plan.Learn {
		if plan.Created {
			t.ForgetKeyType()
		}
		err := plan.Keyspace.LearnKeyType(ctx, t)
		if err == nil {
			continue
		}
		s.Logger().Warn("shard-key type not learnt after DDL: statements on the table go to all of its sub-tables, and INSERTs into it are refused, until it is", "err", err)
		if plan.Like {
			return mysql.NewError(erKeyColumnDoesNotExist, mysql.StateSyntax,
				"shardgate: table %s was created, but its shard key %s could not be read from it (%v): statements on it go to every sub-table and INSERTs into it are refused until ALTER TABLE gives it the column",
				t.Name, t.ShardKey, err)
		}
	}
	return nil
}
