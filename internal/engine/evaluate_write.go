package engine

import (
	"bytes"
	"errors"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
)

// A write evaluated where it writes (Evaluate.OnSession): the statement
// writes unsharded tables of the evaluator's cluster and reads sharded
// ones. It runs on the session's own connection there, inside the
// session's transaction, after the sharded tables it reads are copied
// into temporary tables of that connection: it is then that server's
// statement, atomic, its answer (affected rows, insert id, warnings,
// error) the client's as a routed statement's is. The sub-tables on the
// evaluator's own cluster are copied by the server itself (INSERT …
// SELECT), which also keeps that connection from being asked for as a
// fetch's while it is the session's.

// executeWrite runs an OnSession evaluation.
func (e *Evaluate) executeWrite(c Cursor, q []byte) bool {
	ev, ok := c.Acquire(e.Evaluator, false)
	if ev == nil {
		return ok
	}
	if err := e.copyAll(c, ev); err != nil {
		return e.failWrite(c, ev, err)
	}
	final := Part{Cluster: e.Evaluator, Stmt: e.Stmt}
	okp, r, err := writePart(c, ev, &final, q)
	if err != nil {
		if clientFailed(err) {
			return false
		}
		return c.Failed(ev, err, false) // (its temporary tables go with it)
	}
	// The OK's text is the connection's buffer, which the statements
	// below reuse.
	e.okInfo = append(e.okInfo[:0], okp.Info...)
	e.okState = append(e.okState[:0], okp.SessionState...)
	okp.Info, okp.SessionState = e.okInfo, e.okState
	// Its diagnostics are taken before the tables are dropped, which
	// would replace them.
	c.TakeWarnings(ev, &r.Info)
	if err := e.drop(ev); err != nil {
		return c.Failed(ev, mysql.BackendError(err), false)
	}
	c.Done(ev, &r.Info)
	if r.Info.Err != nil {
		return c.Fail(r.Info.Err)
	}
	okp.Status = c.Status() | okp.Status&mysql.StatusSessionStateChange
	return c.Answer(&okp)
}

// failWrite ends an OnSession evaluation that failed before its
// statement ran: the temporary tables are dropped and the session's
// connection done with (discarded if that fails), and the client gets
// err, unless the cursor answered it already.
func (e *Evaluate) failWrite(c Cursor, ev *backend.Conn, err error) bool {
	if derr := e.drop(ev); derr != nil {
		var a *answered
		if !errors.As(err, &a) {
			return c.Failed(ev, mysql.BackendError(derr), false)
		}
		return c.Drop(ev, derr) && a.goOn
	}
	c.SkipWarnings()
	c.Done(ev, &mysql.ResponseInfo{Status: c.Status()}) // (statements of the proxy's: the transaction goes on)
	return answerFailure(c, err)
}

// local reports whether fetch f reads sub-tables on the connection the
// OnSession statement runs on, which copies them itself.
func (e *Evaluate) local(f *Part) bool {
	return e.OnSession && f.Cluster == e.Evaluator
}

// copyLocal copies the rows fetch f selects into t's temporary table on
// ev, server-side, as the client's transaction sees them.
func (e *Evaluate) copyLocal(ev *backend.Conn, t *EvalCopy, f *Part) error {
	sel, ok := bytes.CutPrefix(f.Query[1:], []byte(FetchPrefix))
	if !ok {
		return errors.New("a fetch of the evaluator's own sub-tables without its prefix")
	}
	return ev.Exec("SET STATEMENT sql_mode='' FOR INSERT INTO " + t.Temp + " " + string(sel))
}
