package planner

import (
	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sharding"
)

// An INSERT … SELECT into a sharded table whose SELECT no route answers
// runs in two steps (engine.InsertSelect): the statement itself, as the
// client sent it, on the evaluator, into an empty temporary twin of the
// target (its SELECT's tables copied as an evaluated read copies them),
// which gives one server's conversions, errors, warnings and row count;
// then the twin's rows, read back, as one INSERT … VALUES into the
// target, bound as the client's own multi-row INSERT is (keys routed,
// generated ones drawn from the sequence, a split per sub-table under
// the rules of cross-shard writes).

// EvalInto is the target of an INSERT … SELECT into a sharded table.
type EvalInto struct {
	Table *sharding.SchemaTable
	// Twin is its temporary twin on the evaluator, named as the target
	// (the SELECT does not read the target).
	Twin EvalTable
	// Columns is the statement's column list (nil: none).
	Columns []string
}

// maxInsertSelectRows bounds the rows of an INSERT … SELECT into a
// sharded table, which the proxy holds, as one statement, between its
// two steps.
const maxInsertSelectRows = 10000

// insertInto plans the target of INSERT … SELECT ins, read with db as
// the current database: nil when it is not a sharded table (the
// statement's own refusal says why), an error for what is refused.
func (k *Keyspace) insertInto(ins *sqlparser.Insert, db string) (*EvalInto, error) {
	tn, ok := ins.Table.Expr.(sqlparser.TableName)
	if !ok {
		return nil, nil
	}
	t := k.listedTable(tn, db)
	if t == nil || t.Type != sharding.TableSharded {
		return nil, nil
	}
	if _, ok := ins.Rows.(sqlparser.Values); ok {
		return nil, nil
	}
	switch {
	case ins.Action == sqlparser.ReplaceAct:
		return nil, notSupported("REPLACE … SELECT into sharded table " + t.Name)
	case len(ins.OnDup) > 0:
		return nil, notSupported("INSERT … SELECT … ON DUPLICATE KEY UPDATE into sharded table " + t.Name)
	case bool(ins.Ignore):
		return nil, notSupported("INSERT IGNORE … SELECT into sharded table " + t.Name)
	case len(ins.Partitions) > 0:
		return nil, nil
	case t.Invisible():
		return nil, notSupported("INSERT … SELECT into sharded table " + t.Name + ", which has INVISIBLE columns")
	case k.reads(ins.Rows, t, db):
		return nil, notSupported("INSERT … SELECT into sharded table " + t.Name + " that reads " + t.Name + " itself")
	}
	twin := evalTable(k.Schema, t, quoteQualified(k.Schema.Name, t.Name))
	twin.Fetches = twin.Fetches[:1] // (its shard shows Describe's definition)
	into := &EvalInto{Table: t, Twin: twin}
	for _, c := range ins.Columns {
		into.Columns = append(into.Columns, c.String())
	}
	return into, nil
}

// reads reports whether n names table t.
func (k *Keyspace) reads(n sqlparser.SQLNode, t *sharding.SchemaTable, db string) bool {
	found := false
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		if tn, ok := n.(sqlparser.TableName); ok && k.listedTable(tn, db) == t {
			found = true
		}
		return !found, nil
	}, n)
	return found
}

// insertSelect binds an INSERT … SELECT into a sharded table, its
// SELECT's tables in b.eval.
func (b *Binder) insertSelect(ks *Keyspace, into *EvalInto, st router.Stmt, s Session) engine.Primitive {
	is := &b.insel
	twin := &into.Twin
	*is = engine.InsertSelect{
		Eval:    &b.eval,
		Twin:    engine.EvalCopy{Temp: twin.Temp, Like: twin.Like, Describe: twin.Describe, Fetches: []engine.Part{{Cluster: ks.Shard(twin.Fetches[0].Shard)}}},
		Table:   into.Table.Name,
		Columns: into.Columns,
		MaxRows: maxInsertSelectRows,
		Buf:     is.Buf,
		Write:   func(stmt []byte) engine.Primitive { return b.insertValues(ks, st, stmt, s) },
	}
	return is
}

// insertValues binds stmt, the INSERT … VALUES of an InsertSelect's
// rows, as the client's own multi-row INSERT is bound: a split of at
// least one part (whose OK the InsertSelect completes), or a refusal.
func (b *Binder) insertValues(ks *Keyspace, st router.Stmt, stmt []byte, s Session) engine.Primitive {
	sh := &b.inselShape
	router.ScanShape(stmt, sh)
	plan, _ := ks.build(stmt, sh, s.DB()) // (not cached: no client sent it)
	if plan.Err != nil {
		return b.refuseErr(plan.Err)
	}
	if plan.An == nil || plan.An.Insert == nil {
		return b.refuse("this INSERT … SELECT into a sharded table")
	}
	b.vals.Reset(stmt, sh)
	b.bulkInsert = true // (its ids are reserved as for the client's INSERT … SELECT)
	prim := b.insert(ks, plan, st, stmt, sh, &b.vals, false, s)
	b.bulkInsert = false
	if prim == engine.Primitive(&b.route) {
		b.ins.split = engine.InsertSplit{Parts: b.parts[:1], Rows: []int{plan.An.Insert.Rows}, Kind: plan.An.Insert.Kind}
		return &b.ins.split
	}
	return prim
}
