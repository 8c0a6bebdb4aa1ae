package engine

import (
	"fmt"
	"strings"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
)

// Part is one statement of a plan that runs in parts: the command packet
// for one sub-table (nil: the client's own, as for a reference table) and
// the cluster (shard) holding it. The execution of a prepared statement
// sends the client's COM_STMT_EXECUTE for the server-side statement
// prepared from Stmt (nil: the client's own text), which the cursor
// prepares on each connection (Cursor.Send).
type Part struct {
	Cluster *backend.Cluster
	Query   []byte
	Stmt    []byte
	// Params are the client's parameters (0-based) Stmt takes, in its
	// order, when it takes only some (the rows of a split INSERT) or in
	// another order; nil: all of them, in the statement's own order.
	Params []int
	// Union: the part reads several sub-tables as one UNION ALL (a
	// Merge's part), whose column definitions are a UNION's.
	Union bool
}

// Scatter streams the rows a SELECT finds on several sub-tables to the
// client as one result set, part after part, memory flat: only a read
// that needs no merge (no ORDER BY, GROUP BY, aggregate, DISTINCT,
// LIMIT… the planner refuses those across sub-tables). A part's error
// ends the result with that error, never with partial rows presented as
// complete.
type Scatter struct {
	Parts     []Part
	ReplicaOK bool
	cat       mysql.Concat
}

// Execute implements Primitive.
func (s *Scatter) Execute(c Cursor, q []byte) bool {
	s.cat.Reset()
	for i := range s.Parts {
		p := &s.Parts[i]
		conn, ok := c.AcquireToSend(p.Cluster, s.ReplicaOK)
		if conn == nil {
			return ok
		}
		if err := c.Send(conn, p, q); err != nil {
			return s.failed(c, conn, p, err)
		}
		r := c.Relay(conn)
		if err := s.cat.Part(r); err != nil {
			return s.failed(c, conn, p, err)
		}
		c.Done(conn, &r.Info)
		if s.cat.Info.Err != nil {
			// The part's ERR went to the client in place of the rest.
			return s.cat.Finish(c.Status()) == nil
		}
	}
	return s.cat.Finish(c.Status()) == nil
}

// failed ends the result after p's connection failed, with an error that
// names p's shard: the rows before it came from other shards, and the
// client must learn which one is missing (its connection errors name
// no shard).
func (s *Scatter) failed(c Cursor, conn *backend.Conn, p *Part, err error) bool {
	c.AnnotateErrors(func(e *mysql.SQLError) *mysql.SQLError {
		return &mysql.SQLError{Code: e.Code, State: e.State,
			Message: fmt.Sprintf("shardgate: shard %s failed during a multi-shard read: %s", p.Cluster.Name, e.Message)}
	})
	defer c.AnnotateErrors(nil)
	return c.Failed(conn, err, s.cat.Info.Sent)
}

// Fanout runs a write on several sub-tables (UPDATE or DELETE without one
// shard key, a write to a reference table on every shard) and answers
// with one OK: the parts' merged, or, for a reference table (OneServer),
// the first server's, since each holds the same rows. A part's error stops
// the statement: the client gets it, naming the shards where parts had
// already been applied, since outside a transaction those stay applied.
//
// Locks: the statement is LOCK TABLES, which one server takes all or
// none, releasing the locks held before it either way. A part's failure
// then undoes the parts before it and any lock held before
// (Cursor.UnlockTables), and the client gets the server's error as it is.
type Fanout struct {
	Parts     []Part
	OneServer bool
	Locks     bool
	merge     mysql.OKMerge
	first     mysql.OKPacket
}

// Execute implements Primitive.
func (f *Fanout) Execute(c Cursor, q []byte) bool {
	f.merge.Reset()
	for i := range f.Parts {
		p := &f.Parts[i]
		conn, ok := c.Acquire(p.Cluster, false)
		if conn == nil {
			return f.undo(c, ok)
		}
		okp, r, err := writePart(c, conn, p, q)
		if err != nil {
			return f.undo(c, c.Failed(conn, err, false))
		}
		if e := r.Info.Err; e != nil {
			c.Done(conn, &r.Info)
			if f.Locks {
				return f.undo(c, c.Fail(e))
			}
			return c.Fail(partFailed(e, f.Parts[:i], *p))
		}
		f.merge.Add(&okp)
		if i == 0 && f.OneServer {
			f.first = okp
			f.first.Info = append([]byte(nil), okp.Info...) // okp aliases the read buffer
			f.first.SessionState = nil
		}
		if i > 0 && f.OneServer {
			c.SkipWarnings() // every copy warns alike: one server's
		}
		c.Done(conn, &r.Info)
	}
	ok := f.merge.OK()
	if f.OneServer {
		ok.AffectedRows, ok.LastInsertID, ok.Info, ok.Warnings = f.first.AffectedRows, f.first.LastInsertID, f.first.Info, f.first.Warnings
	}
	ok.Status = c.Status() | ok.Status&mysql.StatusSessionStateChange
	return c.Answer(&ok)
}

// undo lets go, after a LOCK TABLES (Locks) failed on a part and the
// client was answered, of the table locks the session holds; ok is
// whether the session goes on, which it returns.
func (f *Fanout) undo(c Cursor, ok bool) bool {
	if f.Locks && ok {
		return c.UnlockTables()
	}
	return ok
}

// writePart sends part p of the client's command q on conn and reads its
// answer, an OK not relayed (it aliases conn's read buffer: use it before
// c.Done). A server's ERR is r.Info.Err with a zero OK; err is a failure
// of either side, for c.Failed.
func writePart(c Cursor, conn *backend.Conn, p *Part, q []byte) (okp mysql.OKPacket, r *mysql.Relay, err error) {
	if err := c.Send(conn, p, q); err != nil {
		return okp, nil, err
	}
	r = c.Relay(conn)
	okp, err = r.PartOK()
	return okp, r, err
}

// partFailed is the error of a write that failed on one part after others
// were applied: the server's code and state, and a message that says
// where it was applied (or the server's error as it is, when nothing was).
func partFailed(e *mysql.SQLError, applied []Part, failed Part) *mysql.SQLError {
	if len(applied) == 0 {
		return e
	}
	var names []string
	seen := map[string]bool{}
	for _, p := range applied {
		if !seen[p.Cluster.Name] {
			seen[p.Cluster.Name] = true
			names = append(names, p.Cluster.Name)
		}
	}
	return &mysql.SQLError{Code: e.Code, State: e.State, Message: fmt.Sprintf(
		"shardgate: the statement failed on shard %s after it was applied to %d sub-table(s) on shard(s) %s: %s",
		failed.Cluster.Name, len(applied), strings.Join(names, ", "), e.Message)}
}
