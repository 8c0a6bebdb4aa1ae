package engine

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
)

// Evaluate answers a read that no route or merge answers exactly (see
// planner.EvalPlan) on one server: a connection to the evaluator (the
// schema's default cluster) of the proxy's own, outside the session's
// transaction (Cursor.Aside), gets a temporary table for each sharded
// table the statement names, filled with the rows of its sub-tables,
// then runs the client's statement, whose answer is relayed as a
// Scatter's of one part, and drops the tables. Inside a transaction the
// unsharded and reference tables it names are copied too, from the
// transaction's connection: every row the statement reads is then one
// the transaction sees, and the transaction itself is not touched (no
// temporary table is written inside it). The rows stream from each
// shard into INSERTs of at most evalBatch bytes, so the proxy holds one
// batch whatever the tables' sizes; the evaluator holds the copies.
//
// The copies are the proxy's doing: their statements are not the
// client's, so their answers (warnings, state changes) are not the
// session's; only the final statement's are.
type Evaluate struct {
	Evaluator *backend.Cluster
	// Stmt is the statement the evaluator prepares for a prepared
	// statement's execution; nil for a text statement, sent as the
	// client sent it.
	Stmt      []byte
	ReplicaOK bool
	Tables    []EvalCopy
	// OnSession: the statement writes the evaluator's own (unsharded)
	// tables, and runs on the session's connection there (see
	// planner.EvalPlan.OnSession; evaluate_write.go).
	OnSession bool

	rows  mysql.RowStream
	batch []byte
	made  []string        // the temporary tables created, to drop
	conns []*backend.Conn // by fetch: sent and not read yet (else nil)
	order []int           // the fetches in the order their connections are taken
	cat   mysql.Concat
	// okInfo and okState hold an OnSession write's OK text and session
	// state while the temporary tables are dropped.
	okInfo, okState []byte
}

// EvalCopy is one temporary table: its name (quoted, qualified), a
// table of the evaluator it is created like, else the table whose
// definition the first fetch's server shows (Describe), and the fetches
// that read its rows. InTrx: copied only inside a transaction (an
// unsharded or reference table, which the evaluator reads itself
// otherwise).
type EvalCopy struct {
	Temp, Like, Describe string
	InTrx                bool
	// Filtered: Fetches read only the rows the statement's conditions
	// allow (for Explain).
	Filtered bool
	Fetches  []Part
	// Reduce, when set, replaces Fetches: the rows whose key is among
	// the values of a column the evaluator has (see Evaluate.Reduce).
	Reduce *evalReduce
}

// evalReduce is a table's semi-join: the statement whose first column's
// values, on the evaluator, are the keys its rows may have (at most
// MaxReduce + 1 distinct values), and the fetches of the rows whose key
// is among a batch of them (false: they cannot be routed).
type evalReduce struct {
	values, batch string
	fetches       func(values []string) ([]Part, bool)
}

// Semi-join batches: at most reduceBatch values per fetch (one round trip
// per shard per batch), and at most MaxReduce values in all, beyond
// which the table's own fetches read it (a join that keeps that many
// keys reads most of the table anyway).
const (
	reduceBatch = 1000
	MaxReduce   = 20 * reduceBatch
)

// FetchPrefix starts every fetch of a table's rows (planner): the shard
// sends each string in its column's character set, unconverted, which
// the copy inserts as a binary string, the bytes the shard holds. An
// EXPLAIN of a fetch reads the SELECT after it.
const FetchPrefix = "SET STATEMENT character_set_results=binary FOR "

// evalBatch bounds an INSERT of copied rows (but for its last row):
// under the smallest max_allowed_packet a server is usually given (1 MB;
// the default is 16 MB), large enough that a round trip carries
// thousands of rows.
const evalBatch = 512 << 10

// Reset empties e for a new execution, keeping its buffers.
func (e *Evaluate) Reset(evaluator *backend.Cluster, stmt []byte, replicaOK bool) {
	e.Evaluator, e.Stmt, e.ReplicaOK, e.OnSession = evaluator, stmt, replicaOK, false
	e.Tables = e.Tables[:0]
}

// AddTable adds a temporary table (see EvalCopy).
func (e *Evaluate) AddTable(temp, like, describe string, inTrx bool) {
	e.Tables = append(e.Tables, EvalCopy{Temp: temp, Like: like, Describe: describe, InTrx: inTrx})
}

// Describe makes d the table whose definition the last table's first
// fetch shows.
func (e *Evaluate) Describe(d string) { e.Tables[len(e.Tables)-1].Describe = d }

// Reduce makes the last table a semi-join: its rows whose key is among
// the values of the first column of statement values on the evaluator
// (distinct, not NULL, at most MaxReduce + 1 of them), fetched as
// fetches gives them for each batch of values, batch describing such a
// fetch (for Explain). Its own fetches (AddFetch) read it when the
// values are too many.
func (e *Evaluate) Reduce(values, batch string, fetches func(values []string) ([]Part, bool)) {
	e.Tables[len(e.Tables)-1].Reduce = &evalReduce{values: values, batch: batch, fetches: fetches}
}

// Filtered notes that the last table's fetches read only the rows the
// statement's conditions allow.
func (e *Evaluate) Filtered() { e.Tables[len(e.Tables)-1].Filtered = true }

// AddFetch adds a fetch of the last table's rows on cl.
func (e *Evaluate) AddFetch(cl *backend.Cluster, q []byte) {
	t := &e.Tables[len(e.Tables)-1]
	t.Fetches = append(t.Fetches, Part{Cluster: cl, Query: q})
}

// Execute implements Primitive. A client that goes away meanwhile
// interrupts it (WatchClient): the copies of tables of millions of rows
// would otherwise go on for minutes, then the statement, until its first
// row was written to nobody.
func (e *Evaluate) Execute(c Cursor, q []byte) bool {
	defer c.WatchClient()()
	if e.OnSession {
		return e.executeWrite(c, q)
	}
	ev, err := c.Aside(e.Evaluator)
	if err != nil {
		return c.Fail(evaluatorFailed(e.Evaluator, err))
	}
	if err := e.copyAll(c, ev); err != nil {
		return e.fail(c, ev, err)
	}
	if err := e.interrupted(c); err != nil {
		return e.fail(c, ev, err)
	}
	final := Part{Cluster: e.Evaluator, Stmt: e.Stmt}
	if err := c.Send(ev, &final, q); err != nil {
		return e.fail(c, ev, err)
	}
	e.cat.Reset()
	r := c.Relay(ev)
	if err := e.cat.Part(r); err != nil {
		c.ReleaseAside(ev, true) // its temporary tables go with it
		if clientFailed(err) {
			return false
		}
		return c.Fail(evaluatorFailed(e.Evaluator, err))
	}
	// The tables are dropped before the connection goes back, which
	// would replace the statement's diagnostics: the session takes them
	// first.
	c.TakeWarnings(ev, &r.Info)
	c.ReleaseAside(ev, e.drop(ev) != nil)
	c.Merged(&e.cat.Info)
	return e.cat.Finish(c.Status()) == nil
}

// copyAll creates the temporary tables on ev and copies their rows.
func (e *Evaluate) copyAll(c Cursor, ev *backend.Conn) error {
	e.made = e.made[:0]
	inTrx := c.Status()&mysql.StatusInTrans != 0
	for i := range e.Tables {
		t := &e.Tables[i]
		if t.InTrx && !inTrx {
			continue
		}
		if t.Like != "" {
			if err := e.create(c, ev, t); err != nil {
				return err
			}
		}
		if t.Reduce != nil {
			done, err := e.semiJoin(c, ev, t)
			if err != nil {
				return err
			}
			if done {
				continue
			}
		}
		if err := e.copyParts(c, ev, t, t.Fetches, t.Like == ""); err != nil {
			return err
		}
	}
	return nil
}

// evaluatorFailed is the client's error when the evaluator's connection
// failed: 2013's message, naming the cluster.
func evaluatorFailed(cl *backend.Cluster, err error) *mysql.SQLError {
	return mysql.NewError(mysql.ERUnknownError, mysql.StateGeneral,
		"shardgate: cluster %s, evaluating a statement across shards, failed: %v", cl.Name, err)
}

// Prepare prepares the client's statement where its executions will be
// evaluated, for the server's parameter and column definitions: prepare
// prepares it on ev, over the temporary tables created empty
// (withEmptyCopies), and answers the client (gone: ev was given up, and
// goOn says whether the session goes on; info: the server's answer).
func (e *Evaluate) Prepare(c Cursor, prepare func(ev *backend.Conn) (goOn, gone bool, info *mysql.ResponseInfo)) bool {
	goOn := true
	err := e.withEmptyCopies(c, func(ev *backend.Conn) bool {
		var gone bool
		var info *mysql.ResponseInfo
		if goOn, gone, info = prepare(ev); !gone {
			c.TakeWarnings(ev, info) // (the prepare's error or warnings, for SHOW WARNINGS)
		}
		return gone
	})
	if err != nil {
		return answerFailure(c, err)
	}
	return goOn
}

// withEmptyCopies runs f on a connection to the evaluator of the proxy's
// own (Cursor.Aside) that holds the statement's temporary tables created
// empty: what needs the statement's tables and none of their rows, the
// server's definitions of a prepared statement's parameters and columns
// (Prepare), the server's plan of the statement (ExplainPlan). The
// tables copied only inside a transaction are not created: the evaluator
// has them. A table without a model there is created from the definition
// its first fetch's shard shows where the session reads (inspect), which
// opens no transaction on that shard. Afterwards the tables are dropped
// and the connection goes back, unless f gave it up (gone). The error is
// the client's, or answered: the evaluator or a shard failed before f
// ran.
func (e *Evaluate) withEmptyCopies(c Cursor, f func(ev *backend.Conn) (gone bool)) error {
	ev, err := c.Aside(e.Evaluator)
	if err != nil {
		return evaluatorFailed(e.Evaluator, err)
	}
	e.made = e.made[:0]
	for i := range e.Tables {
		if t := &e.Tables[i]; !t.InTrx {
			if err := e.createEmpty(c, ev, t); err != nil {
				c.ReleaseAside(ev, e.drop(ev) != nil)
				return err
			}
		}
	}
	if !f(ev) {
		c.ReleaseAside(ev, e.drop(ev) != nil)
	}
	return nil
}

// explain describes the evaluation step by step: each table's
// creation on the evaluator and its copy from each shard (the semi-join
// of a table read by another's values: the statement giving those values
// on the evaluator, then its batches to the shards, else its own
// fetches), the statement, the drop.
func (e *Evaluate) explain(q []byte) []Step {
	var steps []Step
	ev := e.Evaluator
	for i := range e.Tables {
		t := &e.Tables[i]
		into := "Evaluate: copy into " + t.Temp
		if t.InTrx {
			at := "(inside a transaction) "
			steps = append(steps, Step{Primitive: "Evaluate: create", Shard: ev.Name, InTrx: true,
				Query: at + "CREATE TEMPORARY TABLE " + t.Temp + " (as " + t.Describe + ")"})
			for _, f := range t.Fetches {
				st := fetchStep(into, f)
				st.Query, st.InTrx = at+st.Query, true
				steps = append(steps, st)
			}
			continue
		}
		create := "CREATE TEMPORARY TABLE " + t.Temp + " LIKE " + t.Like
		if t.Like == "" {
			create = "CREATE TEMPORARY TABLE " + t.Temp + " (the columns and keys of " + t.Describe + ", shown by SHOW CREATE TABLE on shard " + t.Fetches[0].Cluster.Name + ")"
		}
		steps = append(steps, Step{Primitive: "Evaluate: create", Shard: ev.Name, Query: create})
		own := into
		if r := t.Reduce; r != nil {
			steps = append(steps,
				Step{Primitive: "Evaluate: semi-join values for " + t.Temp, Shard: ev.Name, Query: r.values,
					SQL: r.values, Cluster: ev, Evaluator: true},
				Step{Primitive: into + " (semi-join)",
					Query: r.batch + " for each sub-table the values hash to (a shard's by one UNION ALL), " + strconv.Itoa(reduceBatch) + " values a batch"})
			own += " (instead, when the values are more than " + strconv.Itoa(MaxReduce) + " or not plain numbers)"
		}
		if t.Filtered {
			own += " (the rows the statement's conditions allow)"
		}
		for _, f := range t.Fetches {
			steps = append(steps, fetchStep(own, f))
		}
	}
	final := Step{Primitive: "Evaluate: the statement", Shard: ev.Name, Query: text(q), Cluster: ev, Evaluator: true}
	if e.OnSession {
		final.Primitive = "Evaluate: the statement, on the session's connection (the copies of the shard's own sub-tables made there by INSERT … SELECT)"
	}
	if e.Stmt != nil {
		final.Query = string(e.Stmt)
	} else {
		final.SQL = final.Query
	}
	steps = append(steps, final)
	if len(e.Tables) > 0 {
		var names []string
		for _, t := range e.Tables {
			names = append(names, t.Temp)
		}
		steps = append(steps, Step{Primitive: "Evaluate: drop", Shard: ev.Name, Query: dropSQL(names)})
	}
	return steps
}

// fetchStep describes fetch f of a table's rows, a step of primitive
// name.
func fetchStep(name string, f Part) Step {
	return Step{Primitive: name, Shard: f.Cluster.Name, Query: text(f.Query), SQL: explainable(f.Query, nil), Cluster: f.Cluster}
}

// answered is an error the cursor has answered the client with already
// (Acquire failed): goOn says whether the session goes on.
type answered struct{ goOn bool }

func (a *answered) Error() string { return "answered" }

// partFailed ends a fetch that failed: after the server's ERR the
// connection is done with, else (it failed, or rows are left unread) it
// is discarded, and err is returned, naming the shard, for the statement
// to fail with.
func (e *Evaluate) partFailed(c Cursor, conn *backend.Conn, shard string, err error, unread bool) error {
	var se *mysql.SQLError
	if errors.As(err, &se) && !mysql.IsBackendError(err) && !unread {
		// The server's ERR: the connection is fine.
		c.SkipWarnings()
		c.Done(conn, &mysql.ResponseInfo{Status: c.Status()}) // (a statement of the proxy's: the transaction goes on)
		return se
	}
	if !c.Drop(conn, err) {
		return &answered{goOn: false}
	}
	return fmt.Errorf("shard %s failed while the proxy read its rows: %w", shard, err)
}

// fail ends an execution that failed before its statement ran: the
// temporary tables created so far are dropped, the evaluator's
// connection goes back (discarded if that failed), and the client gets
// err, unless the cursor answered it already.
func (e *Evaluate) fail(c Cursor, ev *backend.Conn, err error) bool {
	c.ReleaseAside(ev, e.drop(ev) != nil)
	return answerFailure(c, err)
}

// answerFailure answers the client with err, unless the cursor answered
// it already (answered), and reports whether the session goes on.
func answerFailure(c Cursor, err error) bool {
	var a *answered
	if errors.As(err, &a) {
		return a.goOn
	}
	return c.Fail(asClientError(err))
}

// asClientError is err as the client's error: the server's, or a 1105
// that says what failed.
func asClientError(err error) *mysql.SQLError {
	var se *mysql.SQLError
	if errors.As(err, &se) && !mysql.IsBackendError(err) {
		return se
	}
	return mysql.NewError(mysql.ERUnknownError, mysql.StateGeneral, "shardgate: %v", err)
}
