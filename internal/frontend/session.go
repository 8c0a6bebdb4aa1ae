package frontend

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/mysql/auth"
	"github.com/shardgate/shardgate/internal/router"
)

// Session is one client connection. An idle client costs the proxy
// its Session (and its socket): keep it within its allocation size class
// (1,792 bytes; TestSessionSize), its small fields side by side, and what
// only a busy session needs out of it (shed.go).
type Session struct {
	srv     *Server
	id      uint32
	pollKey uint32 // this session's key for srv.opt.Poller
	client  *mysql.Conn
	remote  string
	salt    [auth.ScrambleLen]byte
	tls     bool
	// paced: the login being checked has waited for the failures of its
	// user name at its address (pace); loginDeadline is when it must be
	// over.
	paced bool
	// multiStmts: the client may send several statements at once.
	multiStmts    bool
	caps          uint32
	user          *User
	loginDeadline time.Time

	// Session state the client would see on a direct connection.
	db           string
	vars         backend.Vars
	varsFP       uint64
	lastInsertID uint64
	// The previous statement's ROW_COUNT() and FOUND_ROWS(), for when the
	// connection that ran it has moved on.
	lastRowCount  int64
	lastFoundRows uint64

	// The connection that ran the previous statement, to reclaim it for a
	// statement that reads the previous one's diagnostics.
	last     *backend.Conn
	lastUses uint64
	// The backend connection held across statements, and why.
	pinned       *backend.Conn
	pins         pinReason
	skipAffinity bool // the proxy ran a statement of its own after the client's (last)
	// rowsProbed: the proxy read LAST_INSERT_ID() on the connection after
	// the previous statement (lastid.go), which replaced its ROW_COUNT()
	// and FOUND_ROWS() there: the session answers them, pinned or not.
	rowsProbed bool
	// lastIDConn, when set, is the pinned connection whose own
	// LAST_INSERT_ID() tells the session's, not read yet (lastid.go):
	// lastIDBase is what it held before the statements since, lastIDGuess
	// the last insert id their OKs reported.
	lastIDConn              *backend.Conn
	lastIDBase, lastIDGuess uint64

	stmts      map[uint32]*pstmt
	nextStmtID uint32

	// Parking (see parker): set while the session has no goroutine.
	parkFD     int32
	idleWait   idleWait // the untimed wait for the next command (sweep.go)
	wakeReason wakeReason
	freshWaits uint8     // waits for a command since login, up to parkAtOnceWaits
	parkUntil  time.Time // its idle timeout (zero: none); parker.expire ends it
	idleSince  time.Time // when the wait for the next command began

	// For KILL and shutdown, read by other goroutines.
	mu        sync.Mutex
	idle      bool // blocked reading the next command
	idleHolds bool // waiting while holding what a next command may need (holdsForNext)
	// command is the command being served (its first byte), published
	// with the statement it runs, for the list of sessions.
	command     byte
	handoffPoke bool   // a live upgrade interrupted the wait (handoff.go)
	idleSeq     uint32 // counts the waits for a command (idleState)
	// queryKilled: a KILL QUERY came while the current statement ran;
	// its parts not sent yet are not (killedError). Cleared when the
	// session goes idle.
	queryKilled atomic.Bool
	killed      atomic.Bool
	running     *backend.Conn // backend connection running a statement now
	pipe        *backend.Turn // the turn of the statement running on a lane (pipeline.go)
	act         activity      // what the session does, for SHOW SESSIONS (activity.go)
	// The connections of a statement in parts (engine.Cursor.Acquire)
	// not done yet: a merge runs one on every shard at once.
	partsRunning []*backend.Conn

	// The statement being run: its plan (filled in place, see plan), the
	// command it runs (Run), the cluster it runs on and, within it, where
	// it goes (route.go).
	planned engine.Route
	// work binds a statement on a sharded schema (shardWork); nil until
	// the session needs it (binder), and given back when it parks.
	work      *shardWork
	cmd       command
	home      *backend.Cluster // the user's cluster, or its schema's default cluster
	cl        *backend.Cluster // the cluster the statement runs on (home between statements)
	replicaOK bool             // the statement may read from a replica of cl
	// dryRun: the statement being planned is shown, not run (EXPLAIN,
	// the explain hint): planning it draws no key (planDry).
	dryRun bool
	// beginPending: the client's BEGIN on a sharded schema was answered
	// and the transaction opens where its first statement runs
	// (shards_trx.go, beginLater).
	beginPending bool
	// trxAborted: the session's transaction died with its backend
	// connection; statements fail until ROLLBACK or COMMIT ends it.
	trxAborted bool
	target     *backend.Server // where the next unpinned statement goes; nil: the writer
	avoid      *backend.Server // failed during this statement: retry elsewhere
	exec       stmtExec        // the prepared statement being executed
	others     []heldConn      // connections held on other clusters (shards.go)
	beginSQL   []byte          // the client's BEGIN, repeated on each shard its transaction touches
	// savepoints are the savepoints of the session's transaction on a
	// sharded schema, oldest first: set again, right after its BEGIN, on
	// each shard the transaction reaches after they were set.
	savepoints []string
	// nextTrxSQL is a SET TRANSACTION (next transaction only) not spent
	// yet; trxCharSQL the one the open transaction started with, repeated
	// before its BEGIN on each shard it reaches.
	nextTrxSQL, trxCharSQL []byte
	trxWriter              *backend.Cluster   // the shard the open transaction wrote to last
	trxWrote               []*backend.Cluster // the others it wrote to (cross_shard_writes: allow, atomic)
	xa                     xaState            // its XA branches (cross_shard_writes: atomic, shards_xa.go)

	// A statement on a sharded schema that is not the session's database
	// (shards_outside.go): the database its connections use instead of
	// the session's, and the cluster the session was on before it.
	partDB      string
	outsideFrom *backend.Cluster

	renamer mysql.TableRenamer // renameSubTable, made once
	warns   partWarnings       // warnings.go
	// annotate, when set, rewrites the errors the client is answered
	// with (engine.Cursor.AnnotateErrors).
	annotate func(*mysql.SQLError) *mysql.SQLError

	waitGTID  string    // the replica must apply this GTID before the read
	lastWrite time.Time // the session's last write, for read-your-writes
	lastGTID  string    // its GTID, when the server reported one

	// stream is the unread rest of the current command packet, too large to
	// hold (holdPacket): streamed to the backend (streamed set) or dropped.
	stream   *mysql.Stream
	streamed bool
	// drainOnClose: the session ends after refusing a packet the client
	// is still sending (close).
	drainOnClose bool
	// The connection the statement runs on came from the pool for it
	// (fromPool), and how much had been written to it before (sentMark):
	// see unreceived.
	fromPool bool
	sentMark uint64

	// waitTimeout is the client's own SET wait_timeout (0: not set), which
	// the proxy applies itself (idleLimit); interactiveTimeout its SET
	// interactive_timeout in seconds (0: not set), which it only reads
	// back. Both are reset on the backend connection that ran the SET.
	waitTimeout        time.Duration
	interactiveTimeout uint64

	scratch []byte // state-sync statements
	rewrite []byte // a client statement rewritten by the proxy

	tele stmtTele // the statement being timed (telemetry.go)
}

func newSession(srv *Server, nc net.Conn, id uint32) *Session {
	remote := nc.RemoteAddr().String()
	s := &Session{srv: srv, id: id, client: mysql.NewConn(nc), remote: remote}
	s.client.Poller = srv.opt.Poller
	s.pollKey = srv.opt.Poller.Key()
	return s
}

// logger returns a logger with the session's attributes. It is built when
// something is logged (rarely), not kept: idle sessions stay small.
func (s *Session) logger() *slog.Logger {
	l := s.srv.opt.Log.With("conn_id", s.id, "client", s.remote)
	if s.user != nil {
		l = l.With("user", s.user.Name)
	}
	return l
}

// refuse sends a greeting-time error and closes.
func (s *Session) refuse(e *mysql.SQLError) {
	s.client.ResetSeq()
	_ = s.client.WriteErr(e)
	_ = s.client.Flush()
	_ = s.client.Close()
}

// greet runs the handshake and login; false ends the session.
func (s *Session) greet() bool {
	if err := s.handshake(); err != nil {
		if !errors.Is(err, errAuthFailed) && !isDisconnect(err) {
			s.logger().Info("client handshake failed", "err", err)
		}
		return false
	}
	return true
}

// wakeReason says why a parked session was resumed.
type wakeReason uint8

const (
	wakeNone wakeReason = iota
	wakeInput
	wakeIdleTimeout
	wakeShutdown
	wakeKilled
)

var errParked = errors.New("session parked")

// loop serves commands until the client leaves or the session ends. It
// reports true when the session was parked instead: its goroutine ends and
// another one resumes it later.
func (s *Session) loop() (parked bool) {
	for {
		p, err := s.readCommand()
		if err == errParked {
			return true
		}
		if err == errMoved {
			return false
		}
		if err != nil {
			s.readFailed(err)
			return false
		}
		s.srv.opt.Poller.Begin(s.pollKey)
		draining := s.srv.shuttingDown.Load()
		if draining && drainBoundary(p[0]) {
			s.client.HoldOutput(true)
		}
		ok := s.dispatch(p)
		if ok && s.stream != nil && !s.dropStream() {
			ok = false // (every answer drops it first; this is a guard)
		}
		if draining {
			ok = s.endDrainedCommand(p[0], ok)
		}
		if !ok {
			return false
		}
		s.streamed = false
	}
}

// endDrainedCommand ends a command that ran while the server drains: when
// the session holds nothing for a next command, the shutdown error goes
// out in the same write as the response and the session ends (false). A
// pooled client then finds the error queued behind the response it read
// before it uses the connection again, and takes another one, to the
// process that replaces this one: no statement of it fails. Otherwise the
// session goes on until what it holds ends (a transaction's COMMIT), or
// the shutdown deadline.
func (s *Session) endDrainedCommand(cmd byte, ok bool) bool {
	s.client.HoldOutput(false)
	if ok && drainBoundary(cmd) && !s.holdsForNext() {
		s.client.ResetSeq()
		_ = s.client.WriteErr(errShutdownInProgress())
		ok = false
	}
	if err := s.client.Flush(); err != nil {
		ok = false
	}
	return ok
}

// holdsForNext says whether the session holds something a next command
// may need: a held connection and why (a transaction, locks, state for the
// next statement), an XA branch, a transaction begun lazily on a sharded
// schema, a SET TRANSACTION for the next one, a statement outside its
// schema, connections on other shards. The drain does not end such a
// session, nor does a live upgrade move it.
func (s *Session) holdsForNext() bool {
	return s.heldPins() != 0 || s.xa.trx != nil || s.beginPending || len(s.nextTrxSQL) > 0 ||
		s.outsideFrom != nil || len(s.others) > 0
}

// drainBoundary says whether a command completes a unit of work, after
// which a client expects nothing more of the connection. Not a prepare
// (its execute follows on the connection) nor a command without an answer.
func drainBoundary(cmd byte) bool {
	switch cmd {
	case mysql.ComQuery, mysql.ComStmtExecute, mysql.ComPing, mysql.ComInitDB, mysql.ComResetConnection, mysql.ComStmtReset:
		return true
	}
	return false
}

// readCommand waits for the next command; while it waits, the session counts
// as idle for the drain (idleState) and a live upgrade may move it.
func (s *Session) readCommand() ([]byte, error) {
	s.client.ResetSeq()
	// The wait for a command has no deadline: clear the one a read of the
	// previous packet, streamed or not, or a LOAD DATA LOCAL set.
	s.client.DisarmReadDeadline()
	why := s.wakeReason
	s.wakeReason = wakeNone
	switch why {
	case wakeIdleTimeout:
		return nil, errIdleTimeout
	case wakeKilled:
		return nil, net.ErrClosed
	}
	if s.srv.handoff.Load() != nil && s.tryHandOff() {
		return nil, errMoved
	}
	s.mu.Lock()
	s.idle = true
	s.idleSeq++
	s.idleHolds = s.holdsForNext()
	s.publishIdle()
	s.mu.Unlock()
	err := s.waitCommand()
	for s.srv.handoff.Load() != nil && s.takePoke() {
		// The upgrade interrupted the wait: move, or wait on.
		_ = s.client.NetConn().SetReadDeadline(time.Time{})
		if err == nil || !isTimeout(err) {
			break
		}
		if s.tryHandOff() {
			s.setIdle(false)
			return nil, errMoved
		}
		s.idleSince = time.Time{}
		err = s.waitCommand()
	}
	if err == errParked {
		return nil, err
	}
	var p []byte
	if err == nil {
		p, s.stream, err = s.client.ReadCommand(holdPacket, s.client.MaxPacket)
		if err != nil && isTimeout(err) {
			err = &stalledError{err}
		}
	}
	s.setIdle(false)
	s.idleSince = time.Time{}
	if err == nil && len(p) == 0 {
		// The server reads an empty packet as COM_SLEEP, a command clients
		// may not send: "Unknown command", and the session goes on.
		p = emptyCommand
	}
	return p, err
}

// holdPacket is the largest command packet a session reads whole; a larger
// one is read as far as its head and streamed to the backend (mysql.Stream),
// so that a client cannot make the proxy hold what it sends.
const holdPacket = 1 << 20

// stalledError is a client that stopped sending in the middle of a packet
// for longer than server.net_read_timeout.
type stalledError struct{ err error }

func (e *stalledError) Error() string {
	return "client stalled in the middle of a packet: " + e.err.Error()
}
func (e *stalledError) Unwrap() error { return e.err }

// dropStream reads and drops the rest of the current packet, so that the
// session can answer it. false: the session must end (the client went away
// or stalled, or the packet reached max_allowed_packet, which has been
// answered).
func (s *Session) dropStream() bool {
	st := s.stream
	s.stream = nil
	err := st.Discard()
	if err != nil {
		s.streamReadFailed(err)
		return false
	}
	return true
}

// readWhole reads the rest of the current packet into memory, for the
// commands and statements that are not streamed; nil when the session must
// end. It costs the packet's size, at most max_allowed_packet.
func (s *Session) readWhole(head []byte) []byte {
	st := s.stream
	s.stream = nil
	p, err := st.ReadAll(head)
	if err != nil {
		s.streamReadFailed(err)
		return nil
	}
	return p
}

// streamReadFailed ends a session whose packet could not be read to its
// end.
func (s *Session) streamReadFailed(err error) {
	var re *mysql.RelayError
	if errors.As(err, &re) {
		err = re.Err
		if isTimeout(err) {
			err = &stalledError{err}
		}
	}
	s.readFailed(err)
}

// emptyCommand is what an empty command packet stands for.
var emptyCommand = []byte{mysql.ComSleep}

// parkIdleAfter is how long a session waits for its next command with its
// goroutine before it parks (see parker).
const parkIdleAfter = 2 * time.Second

// parkAtOnceWaits: this many first waits for a command after login park
// the session as soon as they find nothing to read, without waiting
// parkIdleAfter first. Applications open connections in bursts (a pool
// filling up, services restarting), and most of a pool's connections sit
// idle after the login and a command or two (a ping, a SET): had they
// waited with their goroutines, a burst of 10,000 logins in 2 s had
// 10,000 goroutines at once, and the runtime keeps a dead goroutine's
// descriptor (480 bytes) for good: 390 bytes per idle connection
// (issue 23). A busy client pays a park and a resume (a few µs) for each
// of its first commands only.
const parkAtOnceWaits = 4

// waitCommand waits until the next command arrives, the idle timeout passes
// or the session is parked. When the command is already there (a busy
// client) this is one read syscall: no clock, no deadline.
func (s *Session) waitCommand() error {
	limit := s.idleLimit()
	left := limit // idle time left; the whole limit unless resumed from parking
	if limit > 0 && !s.idleSince.IsZero() {
		if left = limit - time.Since(s.idleSince); left <= 0 {
			return errIdleTimeout
		}
	}
	canPark := s.srv.parker != nil && (limit == 0 || left > parkIdleAfter)
	var err error
	switch {
	case canPark && s.idleSince.IsZero() && s.parkAtOnce():
		ready, err := s.client.TryInput()
		if ready || err != nil {
			return err
		}
		s.idleSince = time.Now()
		return s.parkOrWait(limit)
	case canPark && s.idleSince.IsZero():
		// The common case: no deadline, a sweep interrupts a long wait.
		if err = s.idleWait.wait(s.client); err == nil || !isTimeout(err) {
			return err
		}
		s.idleSince = time.Now().Add(-sweepEvery) // waited at least this long
	case canPark:
		err = s.client.WaitInput(parkIdleAfter)
	default:
		err = s.client.WaitInput(left)
	}
	if err == nil || !isTimeout(err) {
		return err
	}
	if s.idleSince.IsZero() {
		s.idleSince = s.client.WaitStart
	}
	if s.srv.shuttingDown.Load() || s.poked() {
		return err
	}
	if !canPark {
		return errIdleTimeout
	}
	return s.parkOrWait(limit)
}

// parkAtOnce reports whether this wait for a command is one of the first
// parkAtOnceWaits after login, on a session that can park (not TLS).
func (s *Session) parkAtOnce() bool {
	if s.freshWaits >= parkAtOnceWaits || s.tls {
		return false
	}
	s.freshWaits++
	return true
}

// parkOrWait parks the idle session (errParked) or, when it cannot park,
// waits on with its goroutine until input comes or the idle limit, counted
// from s.idleSince, passes.
func (s *Session) parkOrWait(limit time.Duration) error {
	var deadline time.Time
	if limit > 0 {
		deadline = s.idleSince.Add(limit)
	}
	if fd := s.socketFD(); fd >= 0 {
		s.shed()
		if s.srv.parker.park(s, fd, deadline) {
			return errParked
		}
	}
	left := time.Duration(0)
	if limit > 0 {
		if left = time.Until(deadline); left <= 0 {
			return errIdleTimeout
		}
	}
	err := s.client.WaitInput(left)
	if err != nil && isTimeout(err) && !s.srv.shuttingDown.Load() && !s.poked() {
		return errIdleTimeout
	}
	return err
}

// idleLimit is how long the session may wait for its next command: the
// client's own wait_timeout when it set one, else (or when shorter)
// server.client_idle_timeout; 0 is no limit.
func (s *Session) idleLimit() time.Duration {
	limit := time.Duration(s.srv.idleTimeout.Load())
	if w := s.waitTimeout; w > 0 && (limit == 0 || w < limit) {
		return w
	}
	return limit
}

// clientTimeout reports the idle timeouts a client sets for its own
// session. On a direct connection the server closes the client after
// wait_timeout idle seconds; here a backend connection serves many
// sessions, so the setting must not stay on it (the server would close it
// under another session) and the proxy applies it to the client instead.
func clientTimeout(name string) bool {
	return name == "wait_timeout" || name == "interactive_timeout"
}

// setClientTimeout records a client's wait_timeout or interactive_timeout.
// interactive_timeout only seeds wait_timeout at connect, so setting it
// later changes nothing for the session, as on the server, but the
// session reads it back (clientTimeoutValues).
func (s *Session) setClientTimeout(name string, value []byte) {
	secs, err := strconv.ParseUint(string(value), 10, 32)
	if err != nil || secs == 0 {
		return
	}
	if name == "wait_timeout" {
		s.waitTimeout = time.Duration(secs) * time.Second
	} else {
		s.interactiveTimeout = secs
	}
}

// maxWaitTimeout is the largest wait_timeout MariaDB takes, in seconds.
const maxWaitTimeout = 31536000

// clientTimeoutValues fills in sub the session's @@wait_timeout and
// @@interactive_timeout: the ones the client set; else, for wait_timeout,
// the idle limit the proxy applies to the session (server.client_idle_timeout,
// the proxy's global wait_timeout as it were, in whole seconds), and for
// interactive_timeout the server's, left to the backend.
func (s *Session) clientTimeoutValues(sub *router.Substitutions) {
	secs := uint64(s.waitTimeout / time.Second)
	if secs == 0 {
		d := time.Duration(s.srv.idleTimeout.Load())
		if d <= 0 {
			return // no limit: the server's value is as good as any
		}
		secs = min(uint64((d+time.Second-1)/time.Second), maxWaitTimeout)
	}
	sub.WaitTimeout = router.SessionVariableValue(secs)
	if s.interactiveTimeout != 0 {
		sub.InteractiveTimeout = router.SessionVariableValue(s.interactiveTimeout)
	}
}

// ownTimeoutExpired reports that the idle limit that passed is the client's
// own wait_timeout: the server would close such a client without a word.
func (s *Session) ownTimeoutExpired() bool {
	return s.waitTimeout > 0 && s.waitTimeout == s.idleLimit()
}

// isTimeout reports a deadline error. It is a function of its own so that
// the error variable escapes only when there is an error.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// errIdleTimeout reports a client idle past server.client_idle_timeout.
var errIdleTimeout error = &idleTimeoutError{}

type idleTimeoutError struct{}

func (*idleTimeoutError) Error() string   { return "client idle timeout" }
func (*idleTimeoutError) Timeout() bool   { return true }
func (*idleTimeoutError) Temporary() bool { return true }

func (s *Session) setIdle(v bool) {
	s.mu.Lock()
	s.idle = v
	s.mu.Unlock()
}

// readFailed handles a failed command read: client gone, idle timeout,
// shutdown, or garbage.
func (s *Session) readFailed(err error) {
	var ne net.Error
	switch {
	case s.killed.Load():
	case errors.As(err, new(*stalledError)):
		s.logger().Info("closing client that stopped sending in the middle of a packet", "err", err,
			"net_read_timeout", s.client.ReadTimeout)
	case errors.As(err, new(*mysql.TooLargeError)):
		// As the server: 1153 with the sequence id after the header that
		// announced too much, then close (the rest is unread).
		s.logger().Info("closing client after a packet over max_allowed_packet", "max_allowed_packet", s.client.MaxPacket)
		_ = s.client.WriteErr(mysql.PacketTooLargeError())
		_ = s.client.Flush()
		s.drainOnClose = true // so that the client, still sending, reads the error
	case s.srv.shuttingDown.Load() && errors.As(err, &ne) && ne.Timeout():
		s.sendShutdown()
	case errors.As(err, &ne) && ne.Timeout() && s.ownTimeoutExpired():
		s.logger().Debug("closing client idle past its own wait_timeout", "wait_timeout", s.waitTimeout)
	case errors.As(err, &ne) && ne.Timeout():
		s.client.ResetSeq()
		_ = s.client.WriteErr(mysql.NewError(mysql.ERClientInteractionTO, mysql.StateGeneral,
			"The client was disconnected by the server because of inactivity."))
		_ = s.client.Flush()
	case isDisconnect(err):
	case errors.Is(err, mysql.ErrPacketsOutOfOrder):
		s.logger().Warn("closing client after a packet out of sequence", "err", err,
			"hint", "the client is not a MySQL client, or its protocol state went wrong")
		s.client.ResetSeq()
		_ = s.client.WriteErr(errOutOfOrder())
		_ = s.client.Flush()
	case errors.Is(err, mysql.ErrMalformed) || errors.Is(err, mysql.ErrPacketTooLarge):
		s.logger().Warn("closing client after a malformed packet", "err", err)
		s.client.ResetSeq()
		_ = s.client.WriteErr(mysql.NewError(mysql.ERNetReadError, mysql.StateConnFailure, "Got an error reading communication packets"))
		_ = s.client.Flush()
	default:
		s.logger().Info("client read failed", "err", err)
	}
}

func (s *Session) sendShutdown() {
	s.client.ResetSeq()
	_ = s.client.WriteErr(errShutdownInProgress())
	_ = s.client.Flush()
}

func errShutdownInProgress() *mysql.SQLError {
	return mysql.NewError(mysql.ERServerShutdown, mysql.StateGeneral, "Server shutdown in progress")
}

func isDisconnect(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// idleState reports which wait for a command the session is in (seq),
// whether it waits now, and whether it holds meanwhile what a next command
// may need (holdsForNext). The drain closes a session seen in the same
// wait twice, drainQuiet apart, holding nothing; a live upgrade pokes each
// wait once.
func (s *Session) idleState() (seq uint32, idle, holds bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idleSeq, s.idle, s.idleHolds
}

// interruptIfIdle wakes a session blocked in wait seq for a command, so it
// can close with a shutdown error.
func (s *Session) interruptIfIdle(seq uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idle && s.idleSeq == seq {
		_ = s.client.NetConn().SetReadDeadline(time.Now())
	}
}

// forceClose ends a session at the shutdown deadline.
func (s *Session) forceClose() {
	s.killed.Store(true)
	_ = s.client.NetConn().Close()
	s.mu.Lock()
	c := s.running
	parts := slices.Clone(s.partsRunning)
	s.mu.Unlock()
	if c != nil {
		_ = c.NetConn().Close()
	}
	for _, p := range parts {
		_ = p.NetConn().Close()
	}
}

// close releases everything the session holds.
func (s *Session) close() {
	if s.xa.trx != nil {
		s.rollbackHeld() // XA branches end explicitly; nothing stays prepared
	}
	if c := s.pinned; c != nil {
		held := s.pins
		s.pinned, s.pins = nil, 0
		if held&^pinHeld == 0 && !c.Dirty {
			c.Pool().Release(c)
		} else {
			s.releaseDirty(c) // rolls back an open transaction too
		}
	}
	s.releaseOthers()
	s.shed() // the binder serves the next session
	if s.drainOnClose {
		_ = s.client.CloseAfterDraining(drainOnCloseFor, int64(s.client.MaxPacket))
		return
	}
	_ = s.client.Close()
}

// drainOnCloseFor bounds how long a session closed after an oversized
// packet reads (and drops) the rest the client still sends.
const drainOnCloseFor = 2 * time.Second

// dispatch runs one command; false ends the session.
func (s *Session) dispatch(p []byte) bool {
	if s.srv.opt.Local != nil {
		return s.dispatchLocal(p)
	}
	s.srv.opt.Metrics.Commands.Inc()
	s.command = p[0]
	s.warns.current, s.warns.held = false, nil // a new command's
	if s.stream != nil && p[0] != mysql.ComQuery && p[0] != mysql.ComStmtExecute {
		// Only statements are streamed; other commands this large are
		// rare enough to hold (at most max_allowed_packet).
		if p = s.readWhole(p); p == nil {
			return false
		}
	}
	switch p[0] {
	case mysql.ComQuery:
		s.teleBegin()
		ok := s.comQuery(p)
		s.teleEnd()
		return ok
	case mysql.ComQuit:
		return false
	case mysql.ComPing:
		return s.writeOK(&mysql.OKPacket{Status: s.status()})
	case mysql.ComInitDB:
		return s.comInitDB(p)
	case mysql.ComFieldList:
		return s.comFieldList(p)
	case mysql.ComStatistics:
		return s.forward(p, 0, relaySingle)
	case mysql.ComSetOption:
		return s.comSetOption(p)
	case mysql.ComResetConnection:
		return s.comResetConnection()
	case mysql.ComChangeUser:
		return s.comChangeUser(p)
	case mysql.ComProcessKill:
		return s.comProcessKill(p)
	case mysql.ComStmtPrepare:
		return s.comStmtPrepare(p)
	case mysql.ComStmtExecute:
		s.teleBegin()
		ok := s.comStmtExecute(p)
		s.teleEnd()
		return ok
	case mysql.ComStmtSendLongData:
		return s.comStmtSendLongData(p)
	case mysql.ComStmtClose:
		return s.comStmtClose(p)
	case mysql.ComStmtReset:
		return s.comStmtReset(p)
	case mysql.ComStmtFetch:
		return s.comStmtFetch(p)
	}
	return s.unknownCommand(p[0])
}

// unknownCommand answers a command the proxy does not serve with the
// server's error, message included; the session goes on.
func (s *Session) unknownCommand(cmd byte) bool {
	s.logger().Debug("refusing an unknown command", "command", cmd)
	return s.writeErr(mysql.NewError(mysql.ERUnknownCom, mysql.StateConnFailure, "Unknown command"))
}

// status is the server status the client would see between statements.
func (s *Session) status() uint16 {
	st := mysql.StatusAutocommit
	if !s.autocommit() {
		st = 0
	}
	if s.inTrx() {
		st |= mysql.StatusInTrans
	}
	return st
}

func (s *Session) writeOK(ok *mysql.OKPacket) bool {
	if s.stream != nil && !s.dropStream() {
		return false
	}
	if err := s.client.WriteOK(ok, s.caps); err != nil {
		return false
	}
	return s.client.Flush() == nil
}

// writeErr sends an error; the session continues.
func (s *Session) writeErr(e *mysql.SQLError) bool {
	if s.stream != nil && !s.dropStream() {
		return false
	}
	s.srv.opt.Metrics.ClientErrors.Inc()
	if s.annotate != nil {
		e = s.annotate(e)
	}
	s.errorDiagnostics(e)
	s.teleError(e)
	if err := s.client.WriteErr(e); err != nil {
		return false
	}
	return s.client.Flush() == nil
}

// needs say what a command requires of the backend connection it runs on.
type needs uint8

const (
	needDB       needs = 1 << iota // current database and variables in step
	needLastID                     // LAST_INSERT_ID() in step (lastid.go)
	needPrevious                   // the connection that ran the previous statement
	needBegin                      // join the session's transaction, open on other shards (shards.go)
	// LAST_INSERT_ID() either 0 or in step (needLastIDBase), or either
	// not 0 or in step (needLastIDNonZero): what learnLastID needs to tell
	// from the connection's value after the statement whether it changed.
	needLastIDBase
	needLastIDNonZero
	// needFold: the connection's next command is the client's COM_QUERY,
	// written by the caller right after borrow: a sync rides in its packet
	// (backend.Conn.DeferSync) instead of costing a round trip of its own.
	needFold

	lastIDNeedsMask = needLastID | needLastIDBase | needLastIDNonZero
)

// acquire returns the backend connection a command runs on: the pinned one
// or one from the pool.
func (s *Session) acquire(n needs) (*backend.Conn, error) {
	if s.pinned != nil {
		return s.pinned, nil
	}
	srv := s.target
	s.target = nil // one statement's
	if srv == nil {
		w, e := s.writer()
		if e != nil {
			return nil, e
		}
		srv = w
	}
	c, err := s.poolOf(srv).Acquire(context.Background(), s.caps&mysql.ClientFoundRows != 0)
	if err == nil {
		c.Poller = s.srv.opt.Poller
	}
	return c, err
}

// poolOf is the pool the session's statements take srv's connections
// from: the server's, or for a user of the backend's own accounts, the
// pool of connections logged in as that account.
func (s *Session) poolOf(srv *backend.Server) *backend.Pool {
	if a := s.user.Account; a != nil {
		return a.Pool(srv)
	}
	return srv.Pool
}

// borrow takes the connection a statement runs on and brings it in step
// with the session's state. When it returns nil the client has been
// answered with the error, and ok says whether the session goes on. A read
// whose replica cannot give a connection, or cannot catch up with the
// session's last write in time, goes to another server.
func (s *Session) borrow(n needs) (c *backend.Conn, ok bool) {
	resends := 0
	for attempt := 0; ; attempt++ {
		target, waitGTID := s.target, s.waitGTID
		s.waitGTID = ""
		if waitGTID != "" {
			// The wait is the connection's next command: the sync runs
			// before it, on its own.
			n &^= needFold
		}
		fromPool := s.pinned == nil
		c, err := s.acquire(n)
		if err != nil {
			if target != nil && target != s.cl.Writer() && attempt < maxReadRetries {
				// A read's replica: try another server.
				s.avoid = target
				if e := s.reroute(); e == nil {
					continue
				}
			}
			s.unpinAfterFailure()
			return nil, s.acquireFailed(err)
		}
		s.fromPool, s.sentMark = fromPool, c.BytesWritten()
		if err := s.sync(c, n); err != nil {
			if resends < maxResends && s.unreceived(c, err) {
				resends++
				s.resend(c, target, err)
				s.waitGTID = waitGTID // the fresh connection must wait too
				continue
			}
			c.Dirty = true
			s.unpinAfterFailure()
			return nil, s.syncFailed(c, err)
		}
		if waitGTID != "" && !s.causalWait(c, waitGTID) {
			w, e := s.writer()
			if e != nil {
				return nil, s.writeErr(e)
			}
			s.target = w
			continue
		}
		return c, true
	}
}

// foldable is needFold when the statement's command to the backend is
// a text query the session writes whole (writeCommand, Send), which can
// carry a state sync; a prepared statement's execution and a streamed
// query are written otherwise (and get their sync on its own).
func (s *Session) foldable() needs {
	if s.exec.ps != nil || s.stream != nil {
		return 0
	}
	return needFold
}

// sync brings c's database, variables and (when needed) LAST_INSERT_ID() to
// the session's, in one round trip, or none when the statement's packet
// carries them (n has needFold; a transaction to join is not folded).
func (s *Session) sync(c *backend.Conn, n needs) error {
	c.DropDeferredSync() // one that no command carried: c's record is still its server's
	db := s.connDB()
	if db == "" && c.DB != "" {
		// The connection last served a session with a database; this one
		// has none and must not see that one (DATABASE(), table names).
		if err := c.ClearDB(); err != nil {
			return err
		}
	}
	dbOK := c.DB == db || db == ""
	varsOK := c.VarsFP == s.varsFP && c.Vars.Equal(s.vars)
	lidOK := n&lastIDNeedsMask == 0 || s.lastIDInStep(c, n)
	if dbOK && varsOK && lidOK && n&needBegin == 0 {
		return nil
	}
	b, stmts := s.appendSync(s.scratch[:0], c, !dbOK, !varsOK || !lidOK, !lidOK)
	if n&needBegin != 0 {
		b = s.appendBegin(b)
	}
	s.scratch = b
	if len(b) == 0 {
		c.VarsFP = s.varsFP
		return nil
	}
	to := backend.SyncTarget{DB: db, UseDB: !dbOK, Vars: s.vars, VarsFP: s.varsFP,
		LastInsertID: s.lastInsertID, SetLastInsertID: !lidOK}
	if n&(needFold|needBegin) == needFold {
		c.DeferSync(b, stmts, &to)
		return nil
	}
	if err := c.Exec(string(b)); err != nil {
		return err
	}
	c.Synced(&to)
	return nil
}

// appendSync appends to b the statements that bring c's database (use)
// and variables (set), LAST_INSERT_ID() among them when lastID, to the
// session's, and says how many statements they are.
func (s *Session) appendSync(b []byte, c *backend.Conn, use, set, lastID bool) ([]byte, int) {
	stmts := 0
	if use {
		b = backend.AppendUseDB(b, s.connDB())
		stmts++
	}
	if !set {
		return b, stmts
	}
	at := len(b) // where the SET starts
	if at > 0 {
		b = append(b, ';')
		at++
	}
	b = c.AppendSync(b, s.vars)
	if lastID {
		if len(b) == at {
			b = append(b, "SET "...)
		} else {
			b = append(b, ", "...)
		}
		b = append(b, "@@session.last_insert_id = "...)
		b = strconv.AppendUint(b, s.lastInsertID, 10)
	}
	switch {
	case len(b) > at:
		stmts++
	case at > 0:
		b = b[:at-1] // nothing to SET: no separator either
	}
	return b, stmts
}

// setRunning publishes the backend connection running a statement, for KILL.
func (s *Session) setRunning(c *backend.Conn) {
	s.mu.Lock()
	s.running = c
	if c != nil {
		s.publishRunning()
	}
	s.mu.Unlock()
}

// partRunning publishes (on) or unpublishes the connection of a part of
// a statement, for KILL.
func (s *Session) partRunning(c *backend.Conn, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		s.partsRunning = append(s.partsRunning, c)
		s.publishRunning()
		return
	}
	for i, r := range s.partsRunning {
		if r == c {
			s.partsRunning = append(s.partsRunning[:i], s.partsRunning[i+1:]...)
			return
		}
	}
}

// release ends the use of c after a statement: it stays pinned if the
// session needs it, else goes back to the pool (reset first if dirty).
func (s *Session) release(c *backend.Conn) {
	if s.pins != 0 {
		s.pinned = c
		return
	}
	if c == s.lastIDConn {
		s.resolveLastID() // before another session's statements change it
	}
	s.pinned = nil
	if c.Dirty {
		s.releaseDirty(c)
		return
	}
	s.last, s.lastUses = c, c.Uses()
	if s.skipAffinity {
		s.last, s.skipAffinity = nil, false
	}
	c.Pool().Release(c)
}

// releaseDirty resets a connection holding session state nobody else may see
// (an open transaction, user variables, locks...) before pooling it.
func (s *Session) releaseDirty(c *backend.Conn) {
	if err := c.Reset(); err != nil {
		s.logger().Info("discarding backend connection that failed to reset", "err", err)
		c.Pool().Discard(c, !mysql.IsSQLError(err))
		return
	}
	// COM_RESET_CONNECTION keeps the current database: c.DB stays true, so
	// that a session without one clears it (sync).
	c.VarsFP = 0
	c.Pool().Release(c)
}

// maxResends bounds how often one statement moves to a fresh connection
// because the server had closed the one it was written to (unreceived).
const maxResends = 3

// unreceived reports whether a statement whose backend connection failed
// with err provably never reached the server, so that it may run again on
// another connection, write or read alike: the connection came from the
// pool for this statement (no session state is lost with it), the server
// closed it (end of stream or reset, not a timeout: a peer that is alive
// enough to close also acknowledges what it read) and its TCP stack did not
// acknowledge the last bytes written (mysql.Conn.Unreceived). That is what a
// connection the server closed while it sat in the pool (wait_timeout, a
// restart, KILL) looks like.
func (s *Session) unreceived(c *backend.Conn, err error) bool {
	return s.fromPool && !s.killed.Load() && peerClosed(err) && c.Unreceived(s.sentMark)
}

// peerClosed reports a connection the other side closed or reset.
func peerClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// resend drops a connection the server had closed before the statement
// reached it and routes the statement to the same server again. Idle
// connections dialed before it most likely died the same way: the pool
// retires them, so the next one is freshly dialed.
func (s *Session) resend(c *backend.Conn, target *backend.Server, err error) {
	s.logger().Info("backend connection was closed by the server before the statement reached it; sending it on a fresh connection",
		"backend", c.Pool().Addr(), "thread_id", c.ThreadID, "err", err)
	s.srv.opt.Metrics.Resends.Inc()
	if s.last == c {
		s.last = nil
	}
	s.client.DiscardOutput()
	c.Pool().Discard(c, true)
	s.target = target
}

// backendFailed handles a backend connection that failed while running a
// client's command. The client gets an error unless a result is half sent;
// a session that lost a transaction or other held state is closed, so it can
// never commit work that is gone.
func (s *Session) backendFailed(c *backend.Conn, err error, sent bool) bool {
	lostState := s.dropBackend(c, err)
	if s.stream != nil && !s.dropStream() {
		return false
	}
	if s.killed.Load() {
		return false
	}
	e := lostBackendError()
	if se, ok := errors.Unwrap(err).(*mysql.SQLError); ok && !sent {
		e = se
	}
	if s.annotate != nil {
		e = s.annotate(e)
	}
	s.teleError(e)
	if sent && !lostState {
		// Mid-result: an ERR in place of the next row tells the client the
		// result is incomplete.
		_ = s.client.WriteErr(e)
		_ = s.client.Flush()
		return true
	}
	if !sent {
		s.client.DiscardOutput()
	}
	_ = s.client.WriteErr(e)
	_ = s.client.Flush()
	if lostState {
		s.logger().Warn("closing client whose transaction or session state was lost with its backend connection")
		return false
	}
	return true
}

// backendClosed handles a statement the server answered with an error
// after which it closes the connection (mysql.ClosesConnection): the client
// already has that error, as it would from the server; the connection goes,
// and with it only what this session held on it.
func (s *Session) backendClosed(c *backend.Conn, e *mysql.SQLError) bool {
	if s.dropBackend(c, e) {
		s.logger().Warn("closing client whose transaction or session state was lost with its backend connection")
		return false
	}
	return true
}

// dropBackend discards a backend connection that failed or was closed by
// the server under a statement, and forgets what the session held on it. A
// session that held only a transaction stays, in the aborted state; it
// reports whether other held state (user variables, locks...) was lost, in
// which case the session must end. Only a failure without the server's word
// for it (not a SQL error) retires the pool's other idle connections.
func (s *Session) dropBackend(c *backend.Conn, err error) (lostState bool) {
	s.srv.opt.Metrics.BackendErrors.Inc()
	s.logger().Warn("backend connection failed during a statement", "backend", c.Pool().Addr(), "thread_id", c.ThreadID, "err", err)
	lost := s.pins &^ pinHeld
	s.pinned, s.pins = nil, 0
	if lost != 0 && lost&^(pinTrx|pinNextTrx) == 0 {
		// Only a transaction was lost: the session stays, in the aborted
		// state, until the client ends that transaction (see abortedTrx).
		s.trxAborted = true
		lost = 0
	}
	if s.last == c {
		s.last = nil
	}
	c.Pool().Discard(c, !mysql.IsSQLError(err))
	return lost != 0
}

// lostBackendError is the answer to a statement whose backend connection
// died under it.
func lostBackendError() *mysql.SQLError {
	return mysql.NewError(mysql.ERConnectionKilled, mysql.StateConnFailure, "Lost connection to backend server during query")
}

// acquireFailed reports a backend that could not be had.
func (s *Session) acquireFailed(err error) bool {
	if errors.Is(err, backend.ErrWaitTimedOut) && !s.cmd.parts && s.holdsOtherTrx() {
		return s.connectionDeadlock(err)
	}
	var se *mysql.SQLError
	if !errors.As(err, &se) {
		se = mysql.NewError(backend.ErrCodeBackendUnavailable, mysql.StateGeneral, "shardgate: %v", err)
	}
	return s.writeErr(se)
}

// holdsOtherTrx reports a transaction holding connections of other
// clusters (shards) than the one the session waits for.
func (s *Session) holdsOtherTrx() bool {
	for _, h := range s.others {
		if h.pins&pinTrx != 0 {
			return true
		}
	}
	return false
}

// connectionDeadlock ends a transaction over several shards that waited
// wait_timeout for a connection of one shard while holding connections of
// others (a statement in one part: one in several has parts written on
// the connections held, whose answers the merge must read first, and gets
// 9001 as before): with more such transactions at once than a shard's max_open,
// each can hold what the others wait for, a deadlock no server sees. It
// is rolled back on every shard and answered as a server answers a
// deadlock (1213), which clients retry, so that the connections it held
// let the others go on.
func (s *Session) connectionDeadlock(err error) bool {
	s.logger().Warn("a transaction over several shards waited for a backend connection while holding others: rolled back as a deadlock (1213). Raise pool.max_open to the number of sessions running such transactions at once",
		"err", err)
	s.rollbackHeld()
	s.beginPending = false
	s.savepoints, s.trxCharSQL = s.savepoints[:0], s.trxCharSQL[:0]
	return s.writeErr(errConnectionDeadlock)
}

var errConnectionDeadlock = mysql.NewError(1213, "40001",
	"Deadlock found when trying to get lock; try restarting transaction (shardgate: waited for a backend connection held by other transactions over several shards)")

// syncFailed reports a failure to bring a backend connection to the
// session's state (a database that no longer exists, say). The statement
// was not run.
func (s *Session) syncFailed(c *backend.Conn, err error) bool {
	if mysql.IsSQLError(err) {
		s.release(c)
		var se *mysql.SQLError
		errors.As(err, &se)
		return s.writeErr(se)
	}
	return s.backendFailed(c, err, false)
}
