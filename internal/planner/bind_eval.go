package planner

import (
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/router"
)

// A read no route or merge answers, evaluated on one server: the sharded
// tables it names copied into temporary tables of a connection of the
// proxy's own to the default cluster, where the client's statement runs
// (EvalPlan, Keyspace.Evaluate, engine.Evaluate).

// evaluation binds the evaluation of a read that no route or merge
// answers (EvalPlan), or returns nil when it cannot be evaluated: sql,
// sh and vals are the statement's text, shape and values (nil at a
// prepare), stmt the client's text of a prepared statement, nil for a
// text statement. Not while tables are locked (the evaluator's
// connection holds none of them), nor for a cursor, nor with user
// variables (the shards would read them as NULL).
func (b *Binder) evaluation(ks *Keyspace, plan *Plan, st router.Stmt, sql []byte, sh *router.Shape, vals Values, stmt []byte, s Session) (*engine.Evaluate, error) {
	if plan.Eval == nil || st.Flags&router.FlagUserVar != 0 || s.LocksTables() || s.CursorRequested() {
		return nil, nil
	}
	if into := plan.Eval.Into; into != nil && stmt != nil {
		return nil, notSupported("a prepared INSERT … SELECT into sharded table " + into.Table.Name + " (send it as text)")
	}
	if plan.Eval.OnSession {
		if s.InTransaction() || !s.Autocommit() {
			// Temporary tables created inside a transaction mark it as
			// having changed non-transactional tables: every later
			// ROLLBACK would warn (1196), as one server would not.
			return nil, notSupported("a write to an unsharded table that reads sharded tables, inside a transaction")
		}
		if vals != nil { // (a prepare writes nothing)
			if e := s.CrossShardWrite(ks.Default, st); e != nil {
				return nil, e
			}
		}
	}
	// (The evaluator takes the client's parameters as they come: its
	// statement is a Part without Params.)
	ks.Evaluate(&b.eval, plan.Eval, sql, sh, vals, stmt, ReplicaOK(ks.Default, s.Policy(), st, s))
	return &b.eval, nil
}

// evaluate is evaluation as a primitive, nil when there is none.
func (b *Binder) evaluate(ks *Keyspace, plan *Plan, st router.Stmt, sql []byte, sh *router.Shape, vals Values, stmt []byte, s Session) engine.Primitive {
	e, err := b.evaluation(ks, plan, st, sql, sh, vals, stmt, s)
	switch {
	case err != nil:
		return b.refuseErr(err)
	case e != nil && plan.Eval.Into != nil:
		return b.insertSelect(ks, plan.Eval.Into, st, s)
	case e != nil:
		return e
	}
	return nil
}

// evaluateOr is evaluate, or the refusal err when the statement cannot
// be evaluated.
func (b *Binder) evaluateOr(ks *Keyspace, plan *Plan, st router.Stmt, sql []byte, sh *router.Shape, vals Values, stmt []byte, err error, s Session) engine.Primitive {
	if prim := b.evaluate(ks, plan, st, sql, sh, vals, stmt, s); prim != nil {
		return prim
	}
	if plan.EvalErr != nil {
		err = plan.EvalErr // why the read is not evaluated says more
	}
	return b.refuseErr(err)
}

// evalFallback is a merge's Fallback: the statement evaluated, bound
// only when the merge refuses it, against the session as it is then.
type evalFallback struct {
	b    *Binder
	s    Session
	ks   *Keyspace
	plan *Plan
	st   router.Stmt
	sql  []byte
	sh   *router.Shape
	vals Values
	stmt []byte
}

// Execute implements engine.Primitive.
func (f *evalFallback) Execute(c engine.Cursor, q []byte) bool {
	e, err := f.b.evaluation(f.ks, f.plan, f.st, f.sql, f.sh, f.vals, f.stmt, f.s)
	if err != nil {
		return c.Fail(ClientError(err))
	}
	if e == nil {
		return c.Fail(ClientError(f.plan.MergeErr))
	}
	return e.Execute(c, q)
}
