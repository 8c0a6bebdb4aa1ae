package frontend

import (
	"context"
	"encoding/binary"
	"net"
	"strings"
	"time"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
)

// login sets up the session's initial state after authentication and sends
// the final OK. A database the client names that does not exist is
// refused here, as the server refuses it at connect time. The user's
// default_database, when it does not exist (yet), is not selected: the
// session starts without a database, as a client naming none does, and
// can create it (a sharded schema's database is created through the
// proxy).
func (s *Session) login(user, db string, charset byte) error {
	s.multiStmts = s.caps&mysql.ClientMultiStatements != 0
	s.resetState(charset)
	named := db != ""
	if !named {
		db = s.user.DefaultDB
	}
	if db != "" && s.srv.opt.Local == nil {
		if e := s.checkDB(db); e != nil {
			if named || e.Code != mysql.ERBadDB {
				return s.fail(e)
			}
			db = ""
		}
	}
	s.db = db
	if err := s.client.WriteOK(&mysql.OKPacket{Status: mysql.StatusAutocommit}, s.caps); err != nil {
		return err
	}
	return s.client.Flush()
}

// resetState returns the session to a fresh connection's state for the
// given handshake character set.
func (s *Session) resetState(charset byte) {
	s.vars = s.vars[:0]
	if coll, ok := s.srv.identity().Collations.Lookup(charset); ok && charset != mysql.CollationUTF8MB4GeneralCI {
		s.vars.Set("character_set_client", coll.Charset)
		s.vars.Set("character_set_connection", coll.Charset)
		s.vars.Set("character_set_results", coll.Charset)
		s.vars.Set("collation_connection", coll.Name)
	}
	s.varsFP = s.vars.Fingerprint()
	s.noteCharset()
	s.waitTimeout, s.interactiveTimeout = 0, 0
	s.lastInsertID, s.lastIDConn = 0, nil
	s.lastRowCount, s.lastFoundRows = -1, 0
	s.stmts = nil
	s.last = nil
}

// checkDB makes a backend connection use db, returning the server's error
// when it cannot (unknown database, no privilege).
func (s *Session) checkDB(db string) *mysql.SQLError {
	c, err := s.acquire(0)
	if err != nil {
		if se, ok := err.(*mysql.SQLError); ok {
			return se
		}
		return mysql.NewError(backend.ErrCodeBackendUnavailable, mysql.StateGeneral, "shardgate: %v", err)
	}
	s.db = db
	err = s.sync(c, 0)
	s.db = ""
	if err != nil {
		c.Dirty = true
		s.releaseDirty(c)
		if se, ok := err.(*mysql.SQLError); ok {
			return se
		}
		return mysql.NewError(mysql.ERConnectionKilled, mysql.StateConnFailure, "Lost connection to backend server during login")
	}
	s.release(c)
	return nil
}

// comResetConnection resets the session as COM_RESET_CONNECTION does on a
// server: transaction rolled back, variables, user variables, temporary
// tables and prepared statements gone; user and database kept.
func (s *Session) comResetConnection() bool {
	if c := s.pinned; c != nil {
		s.pinned, s.pins = nil, 0
		s.releaseDirty(c)
	}
	s.pins = 0
	s.resetState(s.charsetID())
	return s.writeOK(&mysql.OKPacket{Status: mysql.StatusAutocommit})
}

// charsetID is the collation id the session logged in with.
func (s *Session) charsetID() byte {
	if v, ok := s.vars.Get("collation_connection"); ok {
		if id, ok := s.srv.identity().Collations.ID(v); ok {
			return id
		}
	}
	return mysql.CollationUTF8MB4GeneralCI
}

// comChangeUser re-authenticates and starts a fresh session state. A failed
// attempt closes the connection, as the server does.
func (s *Session) comChangeUser(p []byte) bool {
	hr, err := mysql.ParseChangeUser(p, s.caps)
	if err != nil {
		_ = s.fail(mysql.NewError(mysql.ERMalformedPacket, mysql.StateGeneral, "Malformed COM_CHANGE_USER packet"))
		return false
	}
	if c := s.pinned; c != nil {
		s.pinned, s.pins = nil, 0
		s.releaseDirty(c)
	}
	s.pins = 0
	s.loginDeadline = time.Now().Add(time.Duration(s.srv.handshakeTimeout.Load()))
	if err := s.authenticate(hr.User, hr.AuthPlugin, hr.AuthResponse); err != nil {
		return false
	}
	charset := hr.Charset
	if charset == 0 {
		charset = s.charsetID()
	}
	return s.login(hr.User, hr.Database, charset) == nil
}

// kill handles KILL [CONNECTION | QUERY] id for the proxy's own connection
// ids. Other forms are refused: they would reach the backend's threads.
func (s *Session) kill(st router.Stmt) (handled, ok bool) {
	if !st.KillHasID {
		return true, s.writeErr(mysql.NewError(mysql.ERNotSupportedYet, mysql.StateFeatureNotSupp,
			"shardgate supports KILL [CONNECTION | QUERY] <connection id> only"))
	}
	if e := s.killID(st.KillID, st.KillQuery); e != nil {
		return true, s.writeErr(e)
	}
	if !st.KillQuery && st.KillID == uint64(s.id) {
		return true, false
	}
	return true, s.writeOK(&mysql.OKPacket{Status: s.status()})
}

func (s *Session) killID(id uint64, queryOnly bool) *mysql.SQLError {
	var target *Session
	if id <= 0xffffffff {
		target = s.srv.peer(uint32(id))
	}
	var owner *User
	if target != nil {
		target.mu.Lock() // set by the target's login
		owner = target.user
		target.mu.Unlock()
	}
	if owner == nil {
		return mysql.NewError(mysql.ERNoSuchThread, mysql.StateGeneral, "Unknown thread id: %d", id)
	}
	if owner.Name != s.user.Name {
		return mysql.NewError(mysql.ERKillDenied, mysql.StateGeneral, "You are not owner of thread %d", id)
	}
	if queryOnly {
		target.killQuery()
		return nil
	}
	if target != s {
		target.killConnection()
	}
	return nil
}

// comProcessKill is the old binary form of KILL CONNECTION.
func (s *Session) comProcessKill(p []byte) bool {
	if len(p) < 5 {
		return s.writeErr(mysql.NewError(mysql.ERMalformedPacket, mysql.StateGeneral, "Malformed communication packet"))
	}
	id := uint64(binary.LittleEndian.Uint32(p[1:]))
	if e := s.killID(id, false); e != nil {
		return s.writeErr(e)
	}
	if id == uint64(s.id) {
		return false
	}
	return s.writeOK(&mysql.OKPacket{Status: s.status()})
}

// killQuery interrupts the statement the session runs now, if any, with
// KILL QUERY on its backend thread. The session's lock is held meanwhile so
// the backend connection cannot move to another session before the kill.
func (s *Session) killQuery() {
	s.mu.Lock()
	running, runs := s.act.running, s.act.runs
	if running {
		// The parts of the statement not sent yet are not (killedError):
		// one waiting for a connection, or being prepared on its shard,
		// has nothing running to interrupt.
		s.queryKilled.Store(true)
	}
	s.killBackendQueries()
	s.mu.Unlock()
	if running {
		go s.killAgain(runs)
	}
}

// killBackendQueries sends KILL QUERY to the backend threads running the
// session's statement; s.mu is held.
func (s *Session) killBackendQueries() {
	if c := s.running; c != nil {
		s.killBackendQuery(c)
	}
	if t := s.pipe; t != nil && t.Abandon() {
		// Its answer is the next read on the lane: the server runs it,
		// or has just run it (a statement after it that the kill reaches
		// instead runs again: runPipelined).
		s.killBackendQuery(t.Lane().Conn())
	}
	for _, c := range s.partsRunning {
		s.killBackendQuery(c)
	}
}

// killAgainAfter are the waits between the repeats of a KILL QUERY.
var killAgainAfter = []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond,
	80 * time.Millisecond, 160 * time.Millisecond, 320 * time.Millisecond, 640 * time.Millisecond,
	time.Second, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 12 * time.Second}

// killAgain repeats the KILL QUERY of the session's statement number
// runs for as long as that statement runs (about 30 s at most). A
// statement is published as running (and listed so by SHOW PROCESSLIST)
// once it has its backend connection, just before it is written there;
// a KILL QUERY that reaches the backend thread before the thread has read
// the statement is lost (the server clears a kill at the thread's next
// command), and the statement would run on as if never killed. A repeat
// is made under the session's lock and only while the same statement
// runs on the same connections, so it never reaches another statement;
// one that finds the thread between commands is lost, harmlessly.
func (s *Session) killAgain(runs uint32) {
	for _, d := range killAgainAfter {
		time.Sleep(d)
		s.mu.Lock()
		if !s.act.running || s.act.runs != runs || (s.running == nil && s.pipe == nil && len(s.partsRunning) == 0) {
			s.mu.Unlock()
			return
		}
		s.killBackendQueries()
		s.mu.Unlock()
	}
}

func (s *Session) killBackendQuery(c *backend.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Pool().KillQuery(ctx, c.ThreadID); err != nil {
		s.logger().Warn("KILL QUERY on backend failed", "thread_id", c.ThreadID, "err", err)
	}
}

// killConnection ends the session: its running statement is interrupted and
// its client connection closed.
func (s *Session) killConnection() {
	s.killed.Store(true)
	s.killQuery()
	if p := s.srv.parker; p != nil && p.take(s) {
		// Parked: nobody would notice the close; resume it to end it.
		_ = s.client.NetConn().Close()
		s.wakeReason = wakeKilled
		go s.srv.commandLoop(s)
		return
	}
	_ = s.client.NetConn().Close()
}

func splitHost(addr string) (string, string, error) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return strings.TrimSpace(addr), "", err
	}
	return h, p, nil
}
