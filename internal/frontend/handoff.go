package frontend

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/router"
)

// Handoff is a client session's state as a live upgrade moves it, with its
// client socket and, when it holds one, its backend connection (whose
// server session keeps the user variables, temporary tables and text
// PREPAREs): what the client would see of its session goes on the same in
// the new process.
type Handoff struct {
	Listener           int                `json:"listener"` // which of the proxy's listeners (set by the proxy)
	ID                 uint32             `json:"id"`
	Remote             string             `json:"remote"`
	Salt               []byte             `json:"salt"` // the login's scramble, for COM_CHANGE_USER
	User               string             `json:"user"`
	DB                 string             `json:"db"`
	Caps               uint32             `json:"caps"`
	MultiStmts         bool               `json:"multi_stmts,omitempty"`
	Vars               backend.Vars       `json:"vars,omitempty"`
	WaitTimeout        time.Duration      `json:"wait_timeout,omitempty"`
	InteractiveTimeout uint64             `json:"interactive_timeout,omitempty"`
	LastInsertID       uint64             `json:"last_insert_id,omitempty"`
	LastRowCount       int64              `json:"last_row_count"`
	LastFoundRows      uint64             `json:"last_found_rows,omitempty"`
	RowsProbed         bool               `json:"rows_probed,omitempty"`
	Pins               uint16             `json:"pins,omitempty"`
	Stmts              []HandoffStmt      `json:"stmts,omitempty"`
	NextStmtID         uint32             `json:"next_stmt_id"`
	Input              []byte             `json:"input,omitempty"` // read from the client, not served yet
	Backend            *backend.ConnState `json:"backend,omitempty"`
	// LastIDOnBackend: the backend connection's LAST_INSERT_ID() is the
	// session's, not read yet (lastIDConn), LastIDBase and LastIDGuess as
	// the session keeps them.
	LastIDOnBackend bool   `json:"last_id_on_backend,omitempty"`
	LastIDBase      uint64 `json:"last_id_base,omitempty"`
	LastIDGuess     uint64 `json:"last_id_guess,omitempty"`
}

// HandoffStmt is a prepared statement of a moved session.
type HandoffStmt struct {
	ID      uint32 `json:"id"`
	SQL     string `json:"sql"`
	DB      string `json:"db"`
	Params  uint16 `json:"params"`
	Columns uint16 `json:"columns"`
	Types   []byte `json:"types,omitempty"`
}

// HandoffFunc sends a session to the new process: nil when it took the
// session and its sockets (the files, which the caller closes either way).
type HandoffFunc func(h *Handoff, files []*os.File) error

var errMoved = errors.New("session moved to the new process")

// HandOff makes the server's sessions move to the new process through
// send: it stops accepting, and each session moves at its next wait for
// a command (an idle one at once), unless it holds what cannot move
// (TLS, an open transaction, a cursor, connections on several shards),
// in which case it moves once that ends. It returns when no session is
// left or ctx ends; the caller then drains what stayed (Shutdown).
func (s *Server) HandOff(done <-chan struct{}, send HandoffFunc) int {
	s.handoff.Store(&send)
	defer s.handoff.Store(nil) // what stays drains; it does not try again
	s.StopAccepting()
	if s.parker != nil {
		s.stopOnce.Do(func() { close(s.stopSweep) })
		s.parker.close(wakeShutdown) // parked sessions resume and move
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	poked := map[*Session]uint32{}
	var buf []*Session
	for {
		left := 0
		s.sessions.each(&buf, func(sess *Session) bool {
			left++
			if seq, idle, _ := sess.idleState(); idle && poked[sess] != seq {
				poked[sess] = seq
				sess.pokeForHandoff(seq)
			}
			return true
		})
		if left == 0 {
			return 0
		}
		select {
		case <-done:
			return left
		case <-tick.C:
		}
	}
}

// ResumeAccepting serves on ln again, after a live upgrade whose new
// process died: ln is this process's copy of the listening socket.
func (s *Server) ResumeAccepting(ln net.Listener) error {
	s.notAccepting.Store(false)
	return s.Serve(ln)
}

// StopAccepting closes the listener, whose socket a live upgrade's new
// process accepts on now; the sessions go on.
func (s *Server) StopAccepting() {
	s.notAccepting.Store(true)
	s.lnMu.Lock()
	if s.ln != nil {
		_ = s.ln.Close()
	}
	s.lnMu.Unlock()
}

// pokeForHandoff interrupts wait seq so that the session tries to move.
func (s *Session) pokeForHandoff(seq uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idle && s.idleSeq == seq {
		s.handoffPoke = true
		_ = s.client.NetConn().SetReadDeadline(time.Now())
	}
}

// tryHandOff moves the session if an upgrade is under way and it can
// move: true when it moved (the session ends here without a word to the
// client, whose connection the new process serves now).
func (s *Session) tryHandOff() bool {
	send := s.srv.handoff.Load()
	if send == nil || s.unmovable() != "" {
		return false
	}
	h, files, err := s.exportState()
	if err != nil {
		s.logger().Debug("session not moved", "err", err)
		return false
	}
	err = (*send)(h, files)
	for _, f := range files {
		f.Close()
	}
	if err != nil {
		s.logger().Warn("the new process did not take the session; it stays here until the upgrade's deadline", "err", err)
		return false
	}
	if c := s.pinned; c != nil {
		s.pinned, s.pins = nil, 0
		c.Pool().Forget(c)
	}
	s.lastIDConn, s.last = nil, nil
	return true
}

// unmovable says why the session cannot move now ("" when it can).
func (s *Session) unmovable() string {
	switch {
	case s.tls:
		return "TLS"
	case s.user == nil || s.user.Accounts != nil || s.user.unknown:
		return "not a configured user"
	case len(s.others) > 0 || s.xa.trx != nil || s.beginPending || s.trxAborted || s.outsideFrom != nil:
		return "a transaction over shards"
	case s.stream != nil:
		return "a command being read"
	case s.pinned != nil && s.cl != s.home:
		return "a connection held on another cluster than its own"
	case len(s.nextTrxSQL) > 0:
		return "a SET TRANSACTION for the next transaction"
	case s.pins&(pinTrx|pinCursor|pinLongData) != 0:
		return "an open transaction or cursor"
	case s.lastIDConn != nil && s.lastIDConn != s.pinned:
		return "an unread LAST_INSERT_ID()"
	}
	for _, ps := range s.stmts {
		if ps.sh != nil {
			return "a statement prepared on a sharded schema"
		}
	}
	return ""
}

// exportState is the session's Handoff and its sockets: the client's, then
// the backend connection's when it holds one.
func (s *Session) exportState() (*Handoff, []*os.File, error) {
	tc, ok := s.client.NetConn().(*net.TCPConn)
	if !ok {
		return nil, nil, errors.New("client connection is not TCP")
	}
	h := &Handoff{ID: s.id, Remote: s.remote, Salt: append([]byte(nil), s.salt[:]...), User: s.user.Name, DB: s.db, Caps: s.caps, MultiStmts: s.multiStmts,
		Vars: s.vars, WaitTimeout: s.waitTimeout, InteractiveTimeout: s.interactiveTimeout,
		LastInsertID: s.lastInsertID, LastRowCount: s.lastRowCount, LastFoundRows: s.lastFoundRows,
		RowsProbed: s.rowsProbed, Pins: uint16(s.pins), NextStmtID: s.nextStmtID,
		Input:           append([]byte(nil), s.client.Unread()...),
		LastIDOnBackend: s.lastIDConn != nil, LastIDBase: s.lastIDBase, LastIDGuess: s.lastIDGuess}
	for _, ps := range s.stmts {
		h.Stmts = append(h.Stmts, HandoffStmt{ID: ps.id, SQL: ps.sql, DB: ps.db, Params: ps.params, Columns: ps.columns, Types: ps.types})
	}
	var files []*os.File
	if c := s.pinned; c != nil {
		f, st, err := c.HandOff()
		if err != nil {
			return nil, nil, err
		}
		h.Backend = &st
		files = append(files, f)
	}
	if !h.textIsUTF8() {
		for _, f := range files {
			f.Close()
		}
		// The state travels as JSON, which would change such text.
		return nil, nil, errors.New("the session's statements or variables hold text that is not UTF-8")
	}
	f, err := tc.File()
	if err != nil {
		for _, f := range files {
			f.Close()
		}
		return nil, nil, err
	}
	return h, append([]*os.File{f}, files...), nil
}

// Adopt serves a session another process handed over: client is its
// socket, pinned its backend connection (adopted by the caller), nil when
// it held none.
func (s *Server) Adopt(h *Handoff, client *os.File, pinned *backend.Conn) error {
	u := s.opt.Users(h.User)
	if u == nil {
		return errors.New("user " + h.User + " is not in the new process's configuration")
	}
	if s.sessions.load(h.ID) != nil {
		return fmt.Errorf("a session of this process has id %d already", h.ID)
	}
	nc, err := net.FileConn(client)
	if err != nil {
		return err
	}
	sess := newSession(s, nc, h.ID)
	sess.remote = h.Remote
	sess.importState(h, u, pinned)
	sess.afterHandshake(s.clientMaxPacket())
	s.count.Add(1)
	s.sessions.store(sess)
	s.opt.Metrics.ClientConnects.Inc()
	s.opt.Metrics.ClientsConnected.Inc()
	s.wg.Add(1)
	go s.commandLoop(sess)
	return nil
}

func (s *Session) importState(h *Handoff, u *User, pinned *backend.Conn) {
	s.user = u
	copy(s.salt[:], h.Salt)
	s.home = s.homeCluster(u)
	s.cl = s.home
	s.caps, s.multiStmts, s.db = h.Caps, h.MultiStmts, h.DB
	s.vars = h.Vars
	s.varsFP = s.vars.Fingerprint()
	s.noteCharset()
	s.waitTimeout, s.interactiveTimeout = h.WaitTimeout, h.InteractiveTimeout
	s.lastInsertID, s.lastRowCount, s.lastFoundRows, s.rowsProbed = h.LastInsertID, h.LastRowCount, h.LastFoundRows, h.RowsProbed
	s.nextStmtID = h.NextStmtID
	if len(h.Stmts) > 0 {
		s.stmts = make(map[uint32]*pstmt, len(h.Stmts))
		for _, st := range h.Stmts {
			s.stmts[st.ID] = &pstmt{id: st.ID, sql: st.SQL, text: []byte(st.SQL), db: st.DB, params: st.Params,
				columns: st.Columns, types: st.Types, stmt: router.Classify([]byte(st.SQL))}
		}
	}
	if pinned != nil {
		s.pinned, s.pins = pinned, pinReason(h.Pins)
		if h.LastIDOnBackend {
			s.lastIDConn, s.lastIDBase, s.lastIDGuess = pinned, h.LastIDBase, h.LastIDGuess
		}
	}
	s.client.Prefill(h.Input)
	s.freshWaits = parkAtOnceWaits // a moved session is no new login
}

// handoffPtr is the server's upgrade in progress, if any.
type handoffPtr = atomic.Pointer[HandoffFunc]

// poked reports a live upgrade's interrupt of the current wait.
func (s *Session) poked() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.handoffPoke
}

// takePoke reports and clears it.
func (s *Session) takePoke() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.handoffPoke
	s.handoffPoke = false
	return p
}

// textIsUTF8 says whether the state's text survives JSON unchanged.
func (h *Handoff) textIsUTF8() bool {
	ok := utf8.ValidString(h.DB)
	for _, v := range h.Vars {
		ok = ok && utf8.ValidString(v.Value)
	}
	for _, st := range h.Stmts {
		ok = ok && utf8.ValidString(st.SQL) && utf8.ValidString(st.DB)
	}
	if b := h.Backend; b != nil {
		ok = ok && utf8.ValidString(b.DB)
		for _, v := range b.Vars {
			ok = ok && utf8.ValidString(v.Value)
		}
		for _, st := range b.Stmts {
			ok = ok && utf8.ValidString(st.SQL) && utf8.ValidString(st.DB)
		}
	}
	return ok
}
