package frontend

import (
	"strings"
	"time"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/router"
)

// Activity is what a session is doing now, for SHOW SESSIONS: read by
// another goroutine, so every field is a copy.
type Activity struct {
	ID     uint32
	User   string
	Client string // the client's address
	DB     string
	State  string // idle | running | in transaction | pinned (reason)
	// Since is when the session entered State: zero when unknown, which
	// is after its first command when telemetry is off (the session then
	// reads no clock per statement).
	Since time.Time
	// Statement is the current (or, when idle, the last) statement, cut
	// to a few hundred bytes, as its digest text when
	// telemetry.slow_log.mask_literals is on; Digest its router.Stmt.Digest.
	Statement string
	Digest    uint64
	Backends  []string // addresses of the backend connections it holds or runs on
}

// activity is what the session publishes under s.mu for Activity, at the
// two points where it takes that lock per statement anyway: when it
// starts waiting for a command (publishIdle) and when a statement's
// backend connection starts running it (publishRunning). Copies go into
// fixed buffers, and a running statement longer than stmt into one the
// session keeps while it is busy: publishing allocates nothing in the
// steady state.
type activity struct {
	user, db string
	running  bool
	pins     pinReason
	begun    bool // published once (since: the login)
	since    time.Time
	stmt     [activityStmtMax]byte
	stmtLen  int
	// long is the running statement's text when stmt cannot hold it, up
	// to activityLongMax, for the list of sessions (processlist.go); nil
	// or empty otherwise.
	long   []byte
	cmd    byte   // the command running (mysql.ComQuery...)
	runs   uint32 // statements that have run: names the one running, for killAgain
	digest uint64
	held   [4]*backend.Conn // connections held between statements (the first ones)
	nheld  int
}

// activityStmtMax is how much of a statement SHOW SESSIONS shows.
const activityStmtMax = 256

// activityLongMax bounds the copy of a longer running statement: as
// much as information_schema.PROCESSLIST shows (the server cuts INFO
// there), and SHOW FULL PROCESSLIST through the proxy. A busy session
// keeps the buffer from one statement to the next (no allocation per
// statement, and at most this much copied), until it parks.
const activityLongMax = 65535

// publishIdle records, under s.mu, the session waiting for its next
// command and what it holds meanwhile.
func (s *Session) publishIdle() {
	a := &s.act
	if s.user != nil {
		a.user = s.user.Name
	}
	a.db = s.db
	a.running = false
	s.queryKilled.Store(false)
	a.pins = s.heldPins()
	switch {
	case !s.tele.end.IsZero():
		a.since = s.tele.end
	case !a.begun:
		a.since, a.begun = time.Now(), true // logged in
	case !s.srv.opt.Telemetry.Enabled():
		a.since = time.Time{} // no statement timed: unknown
	}
	a.long = a.long[:0]
	a.nheld = 0
	if s.pinned != nil {
		a.held[0], a.nheld = s.pinned, 1
	}
	for _, h := range s.others {
		if a.nheld == len(a.held) {
			break
		}
		a.held[a.nheld] = h.conn
		a.nheld++
	}
	s.publishStatement()
	s.tele.sql = nil // the session's buffer, which the next read reuses
}

// publishRunning records, under s.mu, the statement running.
func (s *Session) publishRunning() {
	a := &s.act
	if !a.running {
		a.running = true
		a.since = s.tele.start // zero (unknown) with telemetry off
		a.cmd = s.command
		a.runs++
	}
	s.publishStatement()
}

// publishStatement copies the statement's text, once per statement. The
// idle state's copy is the last use of the text: a statement the proxy
// answered itself is published then. A running statement longer than
// stmt is copied too (up to activityLongMax), for the list of sessions:
// the only copy beyond stmt's, made only for such statements, into a
// buffer the session keeps (see activityLongMax).
func (s *Session) publishStatement() {
	if s.tele.published {
		return
	}
	s.tele.published = true
	a := &s.act
	a.stmtLen = copy(a.stmt[:], s.tele.sql)
	a.digest = s.tele.digest
	if a.running && len(s.tele.sql) > len(a.stmt) {
		a.long = append(a.long[:0], s.tele.sql[:min(len(s.tele.sql), activityLongMax)]...)
	}
}

// text is the published statement's text: up to activityLongMax bytes
// while it runs (for the list of sessions), else its first
// activityStmtMax bytes.
func (a *activity) text() []byte {
	if len(a.long) > 0 {
		return a.long
	}
	return a.stmt[:a.stmtLen]
}

// dropLong lets go of the copy of a long statement before the session
// parks: an idle session keeps nothing it does not need.
func (s *Session) dropLong() {
	s.mu.Lock()
	s.act.long = nil
	s.mu.Unlock()
}

// Activity returns a snapshot of the session.
func (s *Session) Activity() Activity {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := &s.act
	act := Activity{ID: s.id, Client: s.remote, User: a.user, DB: a.db, Since: a.since,
		Statement: string(a.stmt[:a.stmtLen]), Digest: a.digest, State: a.state()}
	if s.srv.opt.Telemetry.MaskLiterals() {
		act.Statement = router.DigestText(a.stmt[:a.stmtLen])
	}
	addr := func(c *backend.Conn) {
		if c != nil {
			act.Backends = append(act.Backends, c.Pool().Addr())
		}
	}
	if a.running {
		addr(s.running)
		if s.pipe != nil {
			addr(s.pipe.Lane().Conn())
		}
		for _, c := range s.partsRunning {
			addr(c)
		}
	} else {
		for _, c := range a.held[:a.nheld] {
			addr(c)
		}
	}
	return act
}

func (a *activity) state() string {
	p := a.pins &^ pinHeld
	switch {
	case a.running:
		return "running"
	case p == 0:
		return "idle"
	case p == pinTrx:
		return "in transaction"
	}
	return "pinned (" + p.String() + ")"
}

var pinNames = []struct {
	p    pinReason
	name string
}{
	{pinTrx, "transaction"}, {pinLock, "LOCK TABLES"}, {pinSession, "session state"},
	{pinNextTrx, "SET TRANSACTION"}, {pinCursor, "open cursor"}, {pinLongData, "long data"},
	{pinHeld, "diagnostics"},
}

// String names the reasons, for SHOW SESSIONS.
func (p pinReason) String() string {
	var names []string
	for _, n := range pinNames {
		if p&n.p != 0 {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, ", ")
}
