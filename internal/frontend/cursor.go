package frontend

import (
	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
)

// The session as the engine's cursor: the steps of statements that run in
// parts (Scatter, Fanout) and of transactions over several shards. Run,
// the whole of a one-cluster statement, is in query.go.

// Acquire implements engine.Cursor.
func (s *Session) Acquire(cl *backend.Cluster, replicaOK bool) (*backend.Conn, bool) {
	s.cmd.parts = true
	s.enter(cl)
	s.joinTransaction(nil)
	s.pinBefore(s.cmd.st)
	if e := s.routeQuery(replicaOK); e != nil {
		return nil, s.writeErr(e)
	}
	c, ok := s.borrow(s.cmd.n)
	if c != nil {
		s.setRunning(c)
	}
	return c, ok
}

// Send implements engine.Cursor.
func (s *Session) Send(c *backend.Conn, p *engine.Part, q []byte) error {
	if s.exec.ps != nil {
		s.exec.sql = p.Stmt
		if p.Params != nil {
			s.exec.order = p.Params
		}
		return s.sendExecute(c, q)
	}
	if p.Query != nil {
		q = p.Query
	}
	if err := c.WriteCommand(q); err != nil {
		return mysql.BackendError(err)
	}
	return nil
}

// Relay implements engine.Cursor.
func (s *Session) Relay(c *backend.Conn) *mysql.Relay {
	r := c.Relay(s.client, s.caps)
	r.RenameTable = s.renamer
	return r
}

// Done implements engine.Cursor.
func (s *Session) Done(c *backend.Conn, info *mysql.ResponseInfo) {
	s.setRunning(nil)
	if info.Err == nil && info.Warnings > 0 && !s.cmd.skipWarns || info.Err != nil && s.cmd.renameWarns != nil {
		s.collectWarnings(c, s.cmd.renameWarns)
	}
	s.cmd.skipWarns, s.cmd.renameWarns = false, nil
	s.after(c, info, s.cmd.st)
	if router.IsWrite(s.cmd.st) {
		s.wrote()
	}
	s.release(c)
}

// SkipWarnings implements engine.Cursor.
func (s *Session) SkipWarnings() { s.cmd.skipWarns = true }

// RenameWarnings implements engine.Cursor.
func (s *Session) RenameWarnings(f func(string) string) { s.cmd.renameWarns = f }

// Failed implements engine.Cursor.
func (s *Session) Failed(c *backend.Conn, err error, sent bool) bool {
	s.setRunning(nil)
	if pf := asPrepareFailed(err); pf != nil {
		// The part's statement could not be prepared there: that
		// server's error ends the answer.
		s.release(c)
		return s.writeErr(pf.SQLError)
	}
	return s.relayFailed(c, err, sent)
}

// Status implements engine.Cursor.
func (s *Session) Status() uint16 { return s.status() }

// Answer implements engine.Cursor.
func (s *Session) Answer(ok *mysql.OKPacket) bool {
	s.lastRowCount = int64(ok.AffectedRows)
	if ok.LastInsertID != 0 {
		s.lastInsertID = ok.LastInsertID
	}
	return s.writeOK(ok)
}

// AnswerResult implements engine.Cursor.
func (s *Session) AnswerResult(rs *mysql.ResultSet) bool {
	s.lastRowCount, s.lastFoundRows = -1, uint64(len(rs.Rows))
	if err := s.client.WriteResultSet(rs, s.caps, s.status()); err != nil {
		return false
	}
	return s.client.Flush() == nil
}

// AnswerInsert implements engine.Cursor.
func (s *Session) AnswerInsert(ok *mysql.OKPacket, generated uint64) bool {
	s.lastRowCount = int64(ok.AffectedRows)
	if generated != 0 {
		s.lastInsertID = generated
	}
	return s.writeOK(ok)
}

// AnnotateErrors implements engine.Cursor.
func (s *Session) AnnotateErrors(f func(*mysql.SQLError) *mysql.SQLError) { s.annotate = f }

// Fail implements engine.Cursor.
func (s *Session) Fail(e *mysql.SQLError) bool { return s.writeErr(e) }

// EndTransaction implements engine.Cursor. The shards that only read end
// their part first, their answers unseen (a failure there loses nothing
// that was written); the shard that wrote, if any, ends last and its
// answer is the client's, so a failed COMMIT of the writes is what the
// client sees.
func (s *Session) EndTransaction(q []byte) bool {
	last := s.trxWriter
	if last == nil {
		last = s.cl
	}
	for i := 0; i < len(s.others); {
		h := s.others[i]
		if h.cl == last || h.pins&pinTrx == 0 {
			i++
			continue
		}
		s.others = append(s.others[:i], s.others[i+1:]...)
		s.endHeld(h, q)
	}
	s.trxWriter = nil
	return s.Run(last, false, q)
}

// endHeld ends the transaction of a connection held on another shard and
// lets it go unless other state keeps it.
func (s *Session) endHeld(h heldConn, q []byte) {
	err := h.conn.Exec(string(q[1:]))
	if err != nil && !isSQLError(err) {
		s.logger().Warn("backend connection failed ending a read-only part of a transaction", "backend", h.conn.Pool().Addr(), "err", err)
		h.conn.Pool().Discard(h.conn, true)
		return
	}
	h.pins &^= pinTrx | pinNextTrx | pinHeld
	if err != nil {
		h.conn.Dirty = true // its transaction state is unknown
	}
	if h.pins != 0 {
		s.others = append(s.others, h)
		return
	}
	if h.conn.Dirty {
		s.releaseDirty(h.conn)
		return
	}
	h.conn.Pool().Release(h.conn)
}
