package frontend

import (
	"context"
	"time"

	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/planner"
	"github.com/shardgate/shardgate/internal/router"
)

// learnAfterDDLWait bounds the look-up of a table's shard-key type after
// DDL through the proxy created or altered it.
const learnAfterDDLWait = 5 * time.Second

// erKeyColumnDoesNotExist is MySQL's ER_KEY_COLUMN_DOES_NOT_EXITS.
const erKeyColumnDoesNotExist uint16 = 1072

// ddlKind reports whether statements of kind k may be DDL about a
// sharded schema's tables or database.
func ddlKind(k router.Kind) bool {
	switch k {
	case router.KindCreate, router.KindAlter, router.KindDrop, router.KindTruncate, router.KindRename:
		return true
	}
	return false
}

// planSchemaDDL plans, in a session whose database is not a sharded
// schema, a text DDL statement that is about one (CREATE DATABASE shop,
// ALTER TABLE shop.t …); nil for any other statement.
func (s *Session) planSchemaDDL(st router.Stmt, p []byte) engine.Primitive {
	if len(s.srv.opt.Keyspaces) == 0 || s.exec.ps != nil || s.stream != nil || p[0] != mysql.ComQuery {
		return nil
	}
	return s.planDDL(st, p)
}

// planDDL plans a DDL statement about a sharded schema
// (planner.Keyspaces.PlanDDL), or returns nil for a statement that is
// not one. DDL commits the open transaction on the server that runs it,
// which on shards would commit it on some only: it is refused inside a
// transaction.
func (s *Session) planDDL(st router.Stmt, p []byte) engine.Primitive {
	plan, err := s.srv.opt.Keyspaces.PlanDDL(p[1:], s.db)
	switch {
	case err != nil:
		return s.refuseErr(err)
	case plan == nil:
		return nil
	case plan.Run == nil:
		return s.routeToShard(plan.Keyspace.Default, st)
	case s.inTrx():
		return s.refuse1235("This version of shardgate doesn't yet support '%s'", "DDL on a sharded schema inside a transaction (it would commit the transaction on some shards only); COMMIT or ROLLBACK first")
	}
	plan.Run.Then = func() *mysql.SQLError {
		// Plans may hold what the DDL changed (an INSERT's column list).
		plan.Keyspace.ForgetPlans()
		return s.learnAfterDDL(plan)
	}
	return plan.Run
}

// learnAfterDDL learns the shard-key types of the tables a DDL statement
// created or altered, so that the next statements route by key. A table
// created LIKE another may lack its key column: the client learns it at
// once, the table being created.
func (s *Session) learnAfterDDL(plan *planner.DDLPlan) *mysql.SQLError {
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
		s.logger().Warn("shard-key type not learnt after DDL: statements on the table go to all of its sub-tables, and INSERTs into it are refused, until it is", "err", err)
		if plan.Like {
			return mysql.NewError(erKeyColumnDoesNotExist, mysql.StateSyntax,
				"shardgate: table %s was created, but its shard key %s could not be read from it (%v): statements on it go to every sub-table and INSERTs into it are refused until ALTER TABLE gives it the column",
				t.Name, t.ShardKey, err)
		}
	}
	return nil
}
