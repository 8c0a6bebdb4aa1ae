package frontend

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
)

// The session as the engine's cursor: the steps of statements that run in
// parts (Scatter, Fanout) and of transactions over several shards. Run,
// the whole of a one-cluster statement, is in query.go.

// Acquire implements engine.Cursor.
// The connection is the current cluster's (s.pinned) until Done, Failed
// or Drop: a statement that holds one per shard at once (Merge) acquires
// the next shard's before it is done with this one, and enter then sets
// it aside with its pin reasons, as it does a pinned one.
func (s *Session) Acquire(cl *backend.Cluster, replicaOK bool) (*backend.Conn, bool) {
	return s.acquirePart(cl, replicaOK, 0)
}

// AcquireToSend implements engine.Cursor.
func (s *Session) AcquireToSend(cl *backend.Cluster, replicaOK bool) (*backend.Conn, bool) {
	return s.acquirePart(cl, replicaOK, s.foldable())
}

// acquirePart takes the connection of a part on cl; fold is needFold
// when the part's command carries the connection's sync.
func (s *Session) acquirePart(cl *backend.Cluster, replicaOK bool, fold needs) (*backend.Conn, bool) {
	if !s.cmd.parts {
		// Before the statement's first part goes out on any connection
		// (the one keeping LAST_INSERT_ID() may be one of them): its
		// parts then start from the session's value.
		s.resolveLastID()
	}
	s.cmd.parts = true
	s.enter(cl)
	s.cmd.n &^= needBegin // the previous part's shard's, not this one's
	s.joinTransaction(nil)
	s.pinBefore(s.cmd.st)
	if e := s.routeQuery(replicaOK); e != nil {
		return nil, s.writeErr(e)
	}
	c, ok := s.borrow(s.cmd.n | fold)
	s.teleRan(cl, c)
	if c != nil {
		s.pinned = c
		s.partRunning(c, true)
		s.traceBackend(cl, c)
	}
	return c, ok
}

// enterPart makes the cluster of c, a part's connection, the current one
// again, and unpublishes c for KILL.
func (s *Session) enterPart(c *backend.Conn) {
	s.partRunning(c, false)
	if s.pinned == c {
		return
	}
	for _, h := range s.others {
		if h.conn == c {
			s.enter(h.cl)
			return
		}
	}
}

// Send implements engine.Cursor.
func (s *Session) Send(c *backend.Conn, p *engine.Part, q []byte) error {
	if err := s.killedError(); err != nil {
		return err
	}
	if s.exec.ps != nil {
		s.exec.sql, s.exec.order = p.Stmt, p.Params
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

// Killed implements engine.Cursor.
func (s *Session) Killed() bool { return s.queryKilled.Load() }

// WatchClient implements engine.Cursor.
func (s *Session) WatchClient() (stop func()) {
	return s.client.WatchClose(s.clientClosed)
}

// clientClosed interrupts the session's statement as KILL QUERY does
// (killQuery): its client closed the connection while the statement ran,
// and no one will read its answer. Called on the watch's goroutine.
func (s *Session) clientClosed() {
	s.logger().Info("client closed its connection while its statement ran; interrupting the statement")
	s.killQuery()
}

// Relay implements engine.Cursor.
func (s *Session) Relay(c *backend.Conn) *mysql.Relay {
	r := c.Relay(s.client, s.caps)
	r.RenameTable = s.tableRenamer()
	return r
}

// Done implements engine.Cursor.
func (s *Session) Done(c *backend.Conn, info *mysql.ResponseInfo) {
	s.enterPart(c)
	s.teleResult(info)
	s.traceBackendDone(c, nil)
	if info.Err == nil && info.Warnings > 0 && !s.cmd.skipWarns || info.Err != nil && s.cmd.renameWarns != nil {
		s.collectWarnings(c, int(info.Warnings), s.cmd.renameWarns)
	}
	s.cmd.skipWarns, s.cmd.renameWarns = false, nil
	s.after(c, info, s.cmd.st)
	if router.IsWrite(s.cmd.st) {
		s.wrote()
	}
	s.release(c)
}

// Held implements engine.Cursor: the connection the session holds on cl
// for more than the previous statement's diagnostics.
func (s *Session) Held(cl *backend.Cluster) *backend.Conn {
	if cl == s.cl {
		if s.pinned != nil && s.pins&^pinHeld != 0 {
			return s.pinned
		}
		return nil
	}
	for _, h := range s.others {
		if h.cl == cl && h.pins&^pinHeld != 0 {
			return h.conn
		}
	}
	return nil
}

// Aside implements engine.Cursor. The connection comes from the primary's
// evaluator pool, not from the pool the statement's parts take theirs
// from (see backend.Pool.Evaluator): an evaluation holding it may then
// wait for a part's connection to the same server without holding one of
// that pool.
func (s *Session) Aside(cl *backend.Cluster) (*backend.Conn, error) {
	w := cl.Writer()
	if w == nil {
		return nil, fmt.Errorf("cluster %s has no primary", cl.Name)
	}
	c, err := s.poolOf(w).Evaluator().Acquire(context.Background(), s.caps&mysql.ClientFoundRows != 0)
	if err != nil {
		return nil, err
	}
	c.Poller = s.srv.opt.Poller
	// In step with the session's variables, and its LAST_INSERT_ID()
	// when the statement reads it (a prepared statement's, which the
	// proxy does not substitute).
	if err := s.sync(c, s.cmd.n&lastIDNeedsMask); err != nil {
		c.Pool().Discard(c, !mysql.IsSQLError(err))
		return nil, err
	}
	s.partRunning(c, true) // a KILL QUERY reaches it
	return c, nil
}

// ReleaseAside implements engine.Cursor.
func (s *Session) ReleaseAside(c *backend.Conn, broken bool) {
	s.partRunning(c, false)
	if broken {
		c.Pool().Discard(c, true)
		return
	}
	c.Pool().Release(c)
}

// TakeWarnings implements engine.Cursor.
func (s *Session) TakeWarnings(c *backend.Conn, info *mysql.ResponseInfo) {
	if info.Warnings > 0 && !s.cmd.skipWarns || info.Err != nil {
		s.collectWarnings(c, int(info.Warnings), s.cmd.renameWarns)
	}
	info.Warnings = 0
}

// Merged implements engine.Cursor.
func (s *Session) Merged(info *mysql.ResponseInfo) {
	s.lastRowCount, s.lastFoundRows = -1, info.Rows // FOUND_ROWS(): the client's rows
	s.teleMerged(info)
}

// SkipWarnings implements engine.Cursor.
func (s *Session) SkipWarnings() { s.cmd.skipWarns = true }

// RenameWarnings implements engine.Cursor.
func (s *Session) RenameWarnings(f func(string) string) { s.cmd.renameWarns = f }

// Failed implements engine.Cursor.
func (s *Session) Failed(c *backend.Conn, err error, sent bool) bool {
	s.enterPart(c)
	s.traceBackendDone(c, err)
	if pf := asNotRun(err); pf != nil {
		// The part's statement could not be prepared there: that
		// server's error ends the answer.
		s.release(c)
		return s.writeErr(pf.SQLError)
	}
	return s.relayFailed(c, err, sent)
}

// Drop implements engine.Cursor.
func (s *Session) Drop(c *backend.Conn, err error) bool {
	s.enterPart(c)
	s.traceBackendDone(c, err)
	if s.dropBackend(c, err) {
		s.logger().Warn("closing client whose transaction or session state was lost with its backend connection")
		return false
	}
	return true
}

// Status implements engine.Cursor.
func (s *Session) Status() uint16 { return s.status() }

// Answer implements engine.Cursor.
func (s *Session) Answer(ok *mysql.OKPacket) bool {
	s.lastRowCount = int64(ok.AffectedRows)
	s.tele.affected = ok.AffectedRows // the whole statement's, not the sum of its parts' again
	// LAST_INSERT_ID() is what the parts left (learnLastID), not the OK's
	// insert id, which may be one a row gave.
	return s.writeOK(ok)
}

// AnswerResult implements engine.Cursor.
func (s *Session) AnswerResult(rs *mysql.ResultSet) bool {
	s.lastRowCount, s.lastFoundRows = -1, uint64(len(rs.Rows))
	s.tele.rows = uint64(len(rs.Rows))
	if err := s.client.WriteResultSet(rs, s.caps, s.status()); err != nil {
		return false
	}
	return s.client.Flush() == nil
}

// AnswerInsert implements engine.Cursor.
func (s *Session) AnswerInsert(ok *mysql.OKPacket, generated uint64) bool {
	s.lastRowCount = int64(ok.AffectedRows)
	s.tele.affected = ok.AffectedRows
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
	if s.xa.trx != nil {
		return s.endXA(q)
	}
	last := s.trxWriter
	if last == nil {
		last = s.cl
	}
	wrote := s.trxWrote
	s.trxWriter, s.trxWrote = nil, s.trxWrote[:0]
	// The current shard's part, when another shard ends last, is one of
	// the others: ended in the loop below, not left open (its writes
	// uncommitted, its snapshot kept).
	s.enter(last)
	end := q
	if q[0] != mysql.ComQuery {
		// A prepared COMMIT or ROLLBACK: the other shards get it as text.
		end = s.endStatement()
	}
	// Shards that only read first, then (cross_shard_writes: allow) the
	// other shards that wrote, in the order they wrote.
	for _, writers := range []bool{false, true} {
		for i := 0; i < len(s.others); {
			h := s.others[i]
			if h.cl == last || h.pins&pinTrx == 0 || slices.Contains(wrote, h.cl) != writers {
				i++
				continue
			}
			s.others = append(s.others[:i], s.others[i+1:]...)
			if err := s.endHeld(h, end); err != nil && writers {
				return s.partialEnd(end, h.cl, err, wrote, last)
			}
		}
	}
	return s.runOn(last, false, q)
}

// Savepoint implements engine.Cursor: q runs on each other shard in the
// transaction, then on the current one, whose answer the client gets.
// The session's list of savepoints follows the statement once it has run
// everywhere: a shard joining the transaction for this very statement
// gets the savepoints as they were before it.
func (s *Session) Savepoint(q []byte) bool {
	for _, h := range s.others {
		if h.pins&pinTrx == 0 {
			continue
		}
		err := h.conn.Exec(string(q[1:]))
		if err == nil {
			continue
		}
		if mysql.IsSQLError(err) {
			return s.writeErr(asSQLError(err))
		}
		s.enter(h.cl)
		if s.dropBackend(h.conn, err) {
			s.logger().Warn("closing client whose transaction or session state was lost with its backend connection")
			return false
		}
		return s.writeErr(lostBackendError())
	}
	ok := s.runOn(s.cl, false, q)
	s.noteSavepoint(q[1:])
	return ok
}

// endStatement is the COM_QUERY of the current statement, COMMIT or
// ROLLBACK, as text.
func (s *Session) endStatement() []byte {
	if s.cmd.st.Kind == router.KindRollback {
		return []byte("\x03ROLLBACK")
	}
	return []byte("\x03COMMIT")
}

// partialEnd answers a COMMIT (or ROLLBACK) that failed on shard failed
// after shards that wrote before it had ended theirs: the shards still
// open roll back, and the client learns which shards committed.
func (s *Session) partialEnd(q []byte, failed *backend.Cluster, err error, wrote []*backend.Cluster, last *backend.Cluster) bool {
	var done []string
	for _, cl := range wrote {
		if cl == failed {
			break
		}
		done = append(done, cl.Name)
	}
	rollback := []byte{mysql.ComQuery}
	rollback = append(rollback, "ROLLBACK"...)
	for len(s.others) > 0 {
		h := s.others[0]
		s.others = s.others[1:]
		_ = s.endHeld(h, rollback)
	}
	s.enter(last)
	if s.pinned != nil {
		_ = s.endHeld(heldConn{cl: last, conn: s.pinned, pins: s.pins}, rollback)
		s.pinned, s.pins = nil, 0
	}
	committed := "no shard had committed"
	if len(done) > 0 {
		committed = "shard(s) " + strings.Join(done, ", ") + " had committed (cross_shard_writes: allow is not atomic)"
	}
	return s.writeErr(mysql.NewError(mysql.ERErrorDuringCommit, mysql.StateGeneral,
		"shardgate: %s failed on shard %s (%v); %s; the other shards rolled back",
		strings.ToUpper(strings.TrimSpace(string(q[1:]))), failed.Name, err, committed))
}

// endHeld ends the transaction of a connection held on another shard and
// lets it go unless other state keeps it. It returns the server's error
// or the connection's failure, if any.
func (s *Session) endHeld(h heldConn, q []byte) error {
	return s.finishHeld(h, h.conn.Exec(string(q[1:])))
}

// finishHeld is endHeld after the statement that ended the transaction
// returned err.
func (s *Session) finishHeld(h heldConn, err error) error {
	if err != nil && !mysql.IsSQLError(err) {
		s.logger().Warn("backend connection failed ending a part of a transaction", "backend", h.conn.Pool().Addr(), "err", err)
		h.conn.Pool().Discard(h.conn, true)
		return err
	}
	s.saveDiagnostics(h.conn) // COMMIT and ROLLBACK leave them in place
	h.pins &^= pinTrx | pinNextTrx | pinHeld
	if err != nil {
		h.conn.Dirty = true // its transaction state is unknown
	}
	if h.pins != 0 {
		s.others = append(s.others, h)
		return err
	}
	if h.conn.Dirty {
		s.releaseDirty(h.conn)
		return err
	}
	h.conn.Pool().Release(h.conn)
	return err
}

// KeepCursor implements engine.Cursor: the rows of the cursor the
// statement being executed opened over several shards.
func (s *Session) KeepCursor(h *mysql.RowHold) {
	if ps := s.exec.ps; ps != nil && ps.sh != nil {
		ps.sh.held = h
	}
}
