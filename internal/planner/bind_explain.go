package planner

import (
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
)

// EXPLAIN (DESCRIBE, DESC) of a statement on a sharded schema: the
// statement is bound as it would run, with the session's state, and its
// plan, not the statement, is what runs (engine.ExplainPlan: the steps,
// the SQL each sends, each server's own EXPLAIN of that SQL). ANALYZE,
// which runs the statement, only where it runs whole on one server.

// erUnknownExplainFormat is MariaDB's answer to a FORMAT it does not
// know (ER_UNKNOWN_EXPLAIN_FORMAT).
const erUnknownExplainFormat = 1791

// explain binds EXPLAIN or ANALYZE of a statement: text statement p
// (classified st), head what precedes the statement in it. The statement
// is bound as Statement binds it (its refusal, or the server's syntax
// error, is the EXPLAIN's answer), without a column probe: nothing of it
// runs. The session's part is the frontend's: it plans an EXPLAIN
// without effects (no sequence draws, no write recorded).
func (b *Binder) explain(ks *Keyspace, head router.ExplainHead, st router.Stmt, p []byte, s Session) engine.Primitive {
	if head.Format != "" {
		return b.refuseErr(mysql.NewError(erUnknownExplainFormat, mysql.StateGeneral, "Unknown EXPLAIN/ANALYZE format name: '%s'", head.Format))
	}
	stmt := append([]byte{mysql.ComQuery}, p[1+head.Stmt:]...)
	inner := router.Classify(stmt[1:])
	b.explaining = true
	prim := b.Statement(ks, inner, stmt, s)
	b.explaining = false
	if _, refused := prim.(*engine.Refuse); refused {
		return prim
	}
	if head.Analyze {
		return b.analyze(ks, p[1:1+head.Stmt], prim, p, s)
	}
	return &engine.ExplainPlan{Head: string(p[1 : 1+head.Stmt]), JSON: head.JSON, Plan: prim, Query: stmt}
}

// analyze binds ANALYZE of a statement (MariaDB's ANALYZE, MySQL's
// EXPLAIN ANALYZE), which runs the statement and answers with its plan
// and what the run found, given the statement's plan prim: when that is
// one Route, the head before the statement's SQL there, the server's
// answer relayed as it is; else refused, since running each part for its
// plan would run the statement in parts, and their answers are no
// server's. (MySQL's form on MariaDB gets the server's syntax error.)
func (b *Binder) analyze(ks *Keyspace, head []byte, prim engine.Primitive, p []byte, s Session) engine.Primitive {
	if r, ok := prim.(*engine.Route); ok && r.Stmt == nil {
		if r.Query != nil {
			r.Query = append(append([]byte{mysql.ComQuery}, head...), r.Query[1:]...)
		} // (else the client's statement runs as written)
		return r
	}
	if e := s.SyntaxError(ks.Default, p[1:]); e != nil {
		return b.refuseErr(e)
	}
	return b.refuse("ANALYZE of a statement on sharded schema " + ks.Schema.Name +
		" that runs on several sub-tables or is evaluated (ANALYZE runs it; EXPLAIN shows its plan)")
}

// refuseExplainPrepared is the answer to a prepared EXPLAIN or ANALYZE
// of a statement on a sharded schema: its plan depends on the values of
// each execution, which the plan's EXPLAINs would need in their text.
func refuseExplainPrepared(ks *Keyspace) PrepareAt {
	return PrepareAt{Err: ClientError(notSupported("EXPLAIN or ANALYZE of a statement on sharded schema " + ks.Schema.Name +
		" as a prepared statement (send it as a text statement)"))}
}
