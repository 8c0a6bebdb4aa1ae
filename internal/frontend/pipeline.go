package frontend

import (
	"context"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
)

// Pipelining (pool.pipeline_connections): a read that leaves nothing on
// its connection for the session's next statement runs on a lane, a
// connection carrying several sessions' statements at once (backend.Lane),
// when one in the session's state has room. Anything else, and any read
// a lane fails, runs the one-at-a-time way (execute).

// pipelinable reports whether the statement may run on a lane: a
// text-protocol read of a table (which replaces the diagnostics with its
// own) that sets nothing and reads nothing of the session's (no user
// variables, LAST_INSERT_ID(), FOUND_ROWS(), locking or side-effect
// functions: router.IsReadOnly), outside a transaction, with no
// connection held for the session (and with autocommit on, which
// runPipelined checks once pipelining is on). Its answer is then all it
// leaves, and running it twice (after a lane failed) changes nothing.
func (s *Session) pipelinable(p []byte, n needs, rk relayKind, st router.Stmt) bool {
	return rk == relayQuery && st.Kind == router.KindSelect && !st.NoTable && router.IsReadOnly(st) &&
		len(p) > 0 && p[0] == mysql.ComQuery && s.exec.ps == nil && s.stream == nil &&
		s.pinned == nil && s.pins == 0 && n&(lastIDNeedsMask|needBegin) == 0 &&
		s.waitGTID == "" && s.lastIDConn == nil
}

// runPipelined runs the current read on a lane of its server. handled
// false: it did not run (no lane has room, or the lane failed before a
// byte of the answer reached the client), and the caller runs it the
// one-at-a-time way; otherwise ok says whether the session goes on.
func (s *Session) runPipelined(p []byte, st router.Stmt) (handled, ok bool) {
	srv := s.target
	if srv == nil {
		if srv = s.cl.Writer(); srv == nil {
			return false, false
		}
	}
	if !srv.Pool.Pipelines() || !s.autocommit() || s.user.Account != nil {
		// (A backend account's statements run on its own pools, which
		// do not pipeline.)
		return false, false
	}
	l := s.pickLane(srv)
	if l == nil {
		return false, false
	}
	s.setPipe(nil) // running from here: a KILL QUERY marks it (queryKilled)
	t, err := l.Send(p, s.client, s.caps, s.tableRenamer())
	if err != nil {
		return false, false
	}
	defer t.Release()
	s.setPipe(t)
	if s.queryKilled.Load() {
		s.killQuery() // the KILL that came before t was published
	}
	srv.Begin()
	t.Wait()
	srv.End()
	s.setPipe(nil) // no KILL may reach t once it is released
	info := &t.Info
	switch {
	case t.Err == backend.ErrTurnAbandoned:
		return true, s.writeErr(errInterrupted)
	case t.Err == backend.ErrLaneBroken:
		return false, false // it may not have run: run it on a connection of its own
	}
	s.teleRan(s.cl, l.Conn())
	switch {
	case t.Err != nil && !mysql.IsBackendError(t.Err):
		s.relayFailedPipelined(t.Err)
		return true, false // the client went away
	case t.Err != nil && !t.Sent:
		s.client.DiscardOutput()
		return false, false // the lane failed: run it on a connection of its own
	case t.Err != nil:
		return true, s.backendFailedMidAnswer(t.Err)
	case info.Err != nil && info.Err.Code == mysql.ERQueryInterrupted && !s.queryKilled.Load() && !t.Sent:
		// A KILL QUERY of the statement before it on the lane, which had
		// already ended, reached this one: it runs again on its own.
		s.client.DiscardOutput()
		return false, false
	}
	if err := s.client.Flush(); err != nil {
		s.relayFailedPipelined(err)
		return true, false
	}
	s.teleResult(info)
	srv.StatementOK()
	if len(info.SessionState) > 0 || info.Status&mysql.StatusInTrans != 0 {
		s.pipelineStateChanged(l, info)
	}
	s.afterPipelined(info, st)
	switch {
	case info.Err != nil && interrupted(info.Err.Code):
		// Run again, it would run as long: its error is its diagnostics.
		s.ownWarnings()
		s.errorDiagnostics(info.Err)
	case info.Warnings > 0 || info.Err != nil:
		s.diagnosticsFor(p, srv, int(info.Warnings))
	}
	return true, true
}

// relayFailedPipelined logs a client that went away while its pipelined
// read was answered; the session ends.
func (s *Session) relayFailedPipelined(err error) {
	s.logger().Debug("client went away during a pipelined read", "err", err)
}

// interrupted reports the errors of a statement stopped while it ran
// (KILL QUERY, max_statement_time).
func interrupted(code uint16) bool {
	return code == mysql.ERQueryInterrupted || code == 1969 || code == 3024
}

// errInterrupted answers a statement killed (KILL QUERY) before it ran or
// while it waited for its turn on a lane.
var errInterrupted = mysql.NewError(mysql.ERQueryInterrupted, mysql.StateQueryInterrupted, "Query execution was interrupted")

// setPipe publishes the turn of the session's statement on a lane, for
// KILL, and the statement as running; nil before the turn is had, or
// once it is over (the statement still listed as running until the
// session is idle, as on a connection of its own).
func (s *Session) setPipe(t *backend.Turn) {
	s.mu.Lock()
	s.pipe = t
	s.publishRunning()
	s.mu.Unlock()
}

// pickLane returns the lane of srv for the session's state with the
// fewest reads in flight, opening one when the pool allows; nil when the
// read runs the one-at-a-time way. A lane with pipeline_depth reads in
// flight takes more only when the pool has no idle connection: under
// saturation every read then queues on a lane, in order, rather than some
// there and the rest for connections, which would leave those behind
// waiting far longer.
func (s *Session) pickLane(srv *backend.Server) *backend.Lane {
	foundRows := s.caps&mysql.ClientFoundRows != 0
	l, full, open := srv.Pool.PickLane(s.connDB(), s.varsFP, s.vars, foundRows)
	if l != nil {
		if full && srv.Pool.HasIdle(foundRows) {
			return nil
		}
		return l
	}
	if !open {
		return nil
	}
	c := s.syncedConn(srv)
	if c == nil {
		return nil
	}
	l, ok := srv.Pool.OpenLane(c)
	if !ok {
		srv.Pool.Release(c)
	}
	return l
}

// syncedConn takes a connection of srv's pool and brings it to the
// session's state (a lane's, or the one a read's diagnostics are taken
// on); nil when none could be had.
func (s *Session) syncedConn(srv *backend.Server) *backend.Conn {
	c, err := srv.Pool.Acquire(context.Background(), s.caps&mysql.ClientFoundRows != 0)
	if err != nil {
		return nil
	}
	if err := s.sync(c, 0); err != nil {
		c.Pool().Discard(c, !mysql.IsSQLError(err))
		return nil
	}
	return c
}

// afterPipelined learns from a lane's answer what after learns from a
// connection of the session's own: ROW_COUNT() and FOUND_ROWS() for the
// next statement, and the diagnostics, which are that read's own. The
// connection that ran it is no one's to reclaim.
func (s *Session) afterPipelined(info *mysql.ResponseInfo, st router.Stmt) {
	s.noteRowCounts(info)
	s.diagnosticsAfter(info, st)
	s.last = nil
}

// diagnosticsFor gives the session the diagnostics of the read it ran on
// a lane, which answered with warnings or an error: the lane's
// connection has run other statements since, so the read runs again,
// alone, on a connection of srv, whose SHOW WARNINGS the session keeps
// (partWarnings). Only reads that raise a condition pay for it.
func (s *Session) diagnosticsFor(p []byte, srv *backend.Server, raised int) {
	s.warns.rows, s.warns.count, s.warns.valid, s.warns.current = s.warns.rows[:0], 0, true, true
	c := s.syncedConn(srv)
	if c == nil {
		s.warns.count = raised
		return
	}
	s.setRunning(c) // a KILL QUERY stops it
	err := c.Exec(string(p[1:]))
	s.setRunning(nil)
	if err != nil && !mysql.IsSQLError(err) {
		c.Pool().Discard(c, true)
		s.warns.count = raised
		return
	}
	s.collectWarnings(c, raised, s.cmd.renameWarns)
	c.Pool().Release(c)
}

// pipelineStateChanged handles a read whose answer says it changed the
// session's state on the lane (a stored function setting a variable):
// the session takes the change as from a connection of its own. The
// lane, whose connection is no longer in the state it serves, was
// retired by its reader, its connection to be closed (backend.Lane.read).
// The reads written behind it on the lane ran in that state: pipelining
// requires that reads change no state (docs/routing.md).
func (s *Session) pipelineStateChanged(l *backend.Lane, info *mysql.ResponseInfo) {
	s.logger().Warn("a pipelined read changed the session state on its backend connection; the connection leaves pipelining. Set pool.pipeline_connections to 0 if reads call stored functions that set variables",
		"backend", l.Conn().Pool().Addr())
	var scratch backend.Conn // the lane's connection is not the session's
	s.applyStateChanges(&scratch, info.SessionState)
	s.pins &^= pinSession // what it set is on the lane's connection, closed
}

// backendFailedMidAnswer ends a statement whose lane failed after part of
// its answer reached the client: an ERR in place of the next row tells
// the client it is incomplete, as on a connection of its own.
func (s *Session) backendFailedMidAnswer(err error) bool {
	s.srv.opt.Metrics.BackendErrors.Inc()
	s.logger().Warn("pipelined backend connection failed during a statement", "err", err)
	e := lostBackendError()
	s.teleError(e)
	_ = s.client.WriteErr(e)
	return s.client.Flush() == nil
}
