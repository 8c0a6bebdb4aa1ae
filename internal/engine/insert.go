package engine

import (
	"errors"
	"slices"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
)

// savepoint is the savepoint InsertSplit sets inside a transaction, so
// that a part's failure undoes the parts before it. A name clients are
// unlikely to use: setting it again replaces a client's of that name.
const (
	savepointSQL  = "SAVEPOINT shardgate_insert"
	rollbackToSQL = "ROLLBACK TO SAVEPOINT shardgate_insert"
)

// InsertSplit runs an INSERT or REPLACE whose rows the proxy split per
// sub-table (Parts, in the order of their first row, each with its rows
// in statement order), or whose keys the proxy generated, and answers
// with the one OK one server would have sent for the whole statement:
// affected rows summed, the "Records: N  Duplicates: D  Warnings: W" info
// (mysql.OKMerge.AddInsert), the insert id by MySQL's rules.
//
// A part's error stops the statement. Outside a transaction the parts
// applied before stay applied, and the error names their shards; inside
// one (Savepoint), the parts run after a savepoint and a failure rolls
// back to it, so the statement is undone whole as on one server and the
// client gets the server's error as it is. (Inside a transaction every
// part is on the one shard the transaction writes to: the session refuses
// a second shard's write before anything runs.)
type InsertSplit struct {
	Parts []Part
	Rows  []int // Rows[i] is the number of rows of Parts[i]
	Kind  mysql.InsertKind
	// KeysGiven: the shard key is the sub-tables' AUTO_INCREMENT column and
	// every row sent gives it (its own or one the proxy generated), so the
	// servers generate nothing: their OK's insert id is the last row's key
	// and their LAST_INSERT_ID() does not change.
	KeysGiven bool
	// Generated is the first id the proxy generated for the statement (0:
	// none): the OK's insert id and the session's LAST_INSERT_ID(), as for
	// MySQL's first generated id.
	Generated uint64
	// LastKey is the statement's last row's key (LastKeyKnown: it gives an
	// integer): with KeysGiven and nothing generated, MySQL's insert id
	// when any row was written.
	LastKey      uint64
	LastKeyKnown bool
	Savepoint    bool
	merge        mysql.OKMerge
	saved        []*backend.Cluster // the clusters whose connection has the savepoint
}

// Execute implements Primitive.
func (s *InsertSplit) Execute(c Cursor, q []byte) bool {
	s.merge.Reset()
	s.saved = s.saved[:0]
	for i := range s.Parts {
		p := &s.Parts[i]
		conn, ok := c.Acquire(p.Cluster, false)
		if conn == nil {
			return s.undoAnswered(c, ok)
		}
		if s.Savepoint && !slices.Contains(s.saved, p.Cluster) {
			// On each shard the statement writes (several, under
			// cross_shard_writes: allow or atomic), before its first part.
			if err := conn.Exec(savepointSQL); err != nil {
				return savepointFailed(c, conn, err)
			}
			s.saved = append(s.saved, p.Cluster)
		}
		okp, r, err := writePart(c, conn, p, q)
		if err != nil {
			return c.Failed(conn, err, false)
		}
		if e := r.Info.Err; e != nil {
			if s.Savepoint {
				// A server's error here means the savepoint is gone: the
				// part's error (a deadlock) rolled back the whole
				// transaction, as the error tells the client.
				if err := conn.Exec(rollbackToSQL); err != nil && !mysql.IsSQLError(err) {
					return c.Failed(conn, mysql.BackendError(err), false)
				}
				c.Done(conn, &r.Info)
				if !s.undoOthers(c, p.Cluster) {
					return false
				}
				return c.Fail(e)
			}
			c.Done(conn, &r.Info)
			return c.Fail(partFailed(e, s.Parts[:i], *p))
		}
		if s.KeysGiven {
			// Not a generated id: the connection's LAST_INSERT_ID() is
			// what it was, and so is the session's.
			r.Info.LastInsertID = 0
		}
		s.merge.AddInsert(&okp, s.Rows[i], s.Kind)
		c.Done(conn, &r.Info)
	}
	ok := s.merge.OK()
	// Without KeysGiven the sub-tables may have generated ids, or not: the
	// OK's id may be a row's own, and the cursor learns from each part's
	// connection which it was (Done).
	generated := uint64(0)
	if s.KeysGiven {
		generated = s.Generated
		ok.LastInsertID = s.Generated
		if s.Generated == 0 && s.LastKeyKnown && ok.AffectedRows > 0 {
			ok.LastInsertID = s.LastKey
		}
	}
	ok.Status = c.Status() | ok.Status&mysql.StatusSessionStateChange
	return c.AnswerInsert(&ok, generated)
}

// undoOthers rolls back to the savepoint on the shards the statement
// wrote before the one whose part failed (failed), so that it is undone
// whole. false: a connection failed, and the session must end.
func (s *InsertSplit) undoOthers(c Cursor, failed *backend.Cluster) bool {
	for _, cl := range s.saved {
		if cl == failed {
			continue
		}
		conn, ok := c.Acquire(cl, false)
		if conn == nil {
			return ok
		}
		if err := conn.Exec(rollbackToSQL); err != nil && !mysql.IsSQLError(err) {
			return c.Failed(conn, mysql.BackendError(err), false)
		}
		c.SkipWarnings()
		c.Done(conn, &mysql.ResponseInfo{Status: c.Status()})
	}
	return true
}

// undoAnswered undoes what the statement wrote after the client was
// answered with an error (Acquire failed), and returns goOn.
func (s *InsertSplit) undoAnswered(c Cursor, goOn bool) bool {
	if goOn && s.Savepoint {
		return s.undoOthers(c, nil) && goOn
	}
	return goOn
}

// savepointFailed answers a SAVEPOINT that failed before any part ran:
// the server's error as the statement's, a broken connection as the
// session handles one.
func savepointFailed(c Cursor, conn *backend.Conn, err error) bool {
	var se *mysql.SQLError
	if errors.As(err, &se) {
		c.Done(conn, &mysql.ResponseInfo{Err: se})
		return c.Fail(se)
	}
	return c.Failed(conn, mysql.BackendError(err), false)
}
