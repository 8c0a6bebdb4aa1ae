// Package backend manages connections to MySQL servers: dialing and
// authenticating, a pool per server, and the per-connection state (current
// database, session variables, prepared statements) that the frontend brings
// in line with a client session before each statement.
package backend

import (
	"container/list"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/mysql/auth"
)

// Capabilities the proxy asks of every backend. DEPRECATE_EOF and
// SESSION_TRACK let result terminators carry session-state changes;
// MULTI_STATEMENTS lets state restoration and a statement share a round trip.
const wantCaps = mysql.ClientLongPassword | mysql.ClientLongFlag | mysql.ClientProtocol41 |
	mysql.ClientTransactions | mysql.ClientSecureConnection | mysql.ClientMultiStatements |
	mysql.ClientMultiResults | mysql.ClientPSMultiResults | mysql.ClientPluginAuth |
	mysql.ClientPluginAuthLenencClientData | mysql.ClientLocalFiles | mysql.ClientSessionTrack |
	mysql.ClientDeprecateEOF | mysql.ClientConnectWithDB | mysql.ClientConnectAttrs

// requiredCaps are what the proxy cannot work without.
const requiredCaps = mysql.ClientProtocol41 | mysql.ClientSecureConnection | mysql.ClientSessionTrack

// Conn is one authenticated connection to a backend server.
type Conn struct {
	*mysql.Conn
	pool *Pool

	ThreadID      uint32 // the server's connection id (for KILL)
	Caps          uint32 // negotiated capabilities
	ServerVersion string
	FoundRows     bool // opened with CLIENT_FOUND_ROWS

	createdAt   time.Time
	lastUsed    time.Time
	lastChecked time.Time
	epoch       uint64 // pool epoch at dial time; older conns are dropped after a failure
	uses        uint64 // bumped each time the conn is handed out (affinity check)
	usesSeen    uint64 // uses when maintenance last set lastUsed (noteUses)
	idleIdx     int    // position in the pool's idle stack, -1 when in use

	// State as last set on the server, kept in step by the frontend.
	DB     string
	Vars   Vars
	VarsFP uint64 // fingerprint of Vars as last synced or learnt
	// LastInsertID is the connection's LAST_INSERT_ID(), unless
	// LastInsertIDUnknown: a read of it failed, so the next statement that
	// depends on it sets it first.
	LastInsertID        uint64
	LastInsertIDUnknown bool
	// Dirty marks state the proxy cannot describe (user variables, temporary
	// tables, locks...): the conn needs a reset before another session uses it.
	Dirty bool
	// Status is the server status of the last OK or EOF read by the
	// proxy's own statements (Exec, DrainResponse): whether a transaction
	// is open on the connection after them, where a client statement that
	// ended in an ERR (which carries no status) left it unsaid.
	Status uint16

	stmts     map[string]*list.Element // SQL text -> LRU element of *Stmt
	stmtLRU   *list.List
	stmtLimit int

	relay mysql.Relay

	// pending is a state sync the next COM_QUERY carries, sent one whose
	// answer is awaited (sync.go); onSyncAnswer is c.syncAnswered, made
	// once per connection.
	pending, sent deferredSync
	onSyncAnswer  func(ok int, failed bool)

	// The greeting's scramble and auth plugin, for COM_CHANGE_USER (ClearDB).
	salt   []byte
	plugin string
}

// Stmt is a statement prepared on one backend connection.
type Stmt struct {
	SQL     string
	DB      string
	ID      uint32
	Params  uint16
	Columns uint16
}

// DialConfig says how to reach and log in to a server.
type DialConfig struct {
	Addr           string // resolved ip:port
	User, Password string
	Database       string
	TLS            *tls.Config // nil: no TLS
	TLSRequired    bool        // fail when the server does not offer TLS
	ConnectTimeout time.Duration
	Charset        byte
	StmtLimit      int
}

// Dial connects and authenticates.
func Dial(ctx context.Context, dc *DialConfig, foundRows bool) (*Conn, error) {
	nc, err := connectTCP(ctx, dc)
	if err != nil {
		return nil, err
	}
	return login(ctx, nc, dc, foundRows)
}

// connectTCP opens the TCP connection Dial logs in on. Its error is a
// *net.OpError with Op "dial": the server accepts no connections (see
// isConnectError).
func connectTCP(ctx context.Context, dc *DialConfig) (net.Conn, error) {
	d := net.Dialer{KeepAlive: 30 * time.Second}
	if _, ok := ctx.Deadline(); !ok {
		d.Timeout = dc.ConnectTimeout // else ctx's: a pool's connect timeout may be changed by a reload
	}
	nc, err := d.DialContext(ctx, "tcp", dc.Addr)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", dc.Addr, err)
	}
	return nc, nil
}

// isConnectError reports an error of connectTCP: the server did not accept
// the TCP connection (refused, unreachable, timed out), as opposed to one
// that failed after it was accepted.
func isConnectError(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// login authenticates on nc, a connection connectTCP opened, and sets up
// the session; it closes nc when it fails.
func login(ctx context.Context, nc net.Conn, dc *DialConfig, foundRows bool) (*Conn, error) {
	c := &Conn{Conn: mysql.NewConn(nc), createdAt: time.Now(), FoundRows: foundRows,
		stmts: make(map[string]*list.Element), stmtLRU: list.New(), stmtLimit: dc.StmtLimit, idleIdx: -1}
	if dc.StmtLimit <= 0 {
		c.stmtLimit = 256
	}
	if deadline, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(deadline)
	} else if dc.ConnectTimeout > 0 {
		_ = nc.SetDeadline(time.Now().Add(dc.ConnectTimeout))
	}
	if err := c.handshake(dc); err != nil {
		nc.Close()
		return nil, fmt.Errorf("login to %s as %q: %w", dc.Addr, dc.User, err)
	}
	if err := c.setupSession(); err != nil {
		nc.Close()
		return nil, fmt.Errorf("set up session on %s: %w", dc.Addr, err)
	}
	_ = c.NetConn().SetDeadline(time.Time{})
	c.DB = dc.Database
	c.lastUsed = time.Now()
	return c, nil
}

func (c *Conn) handshake(dc *DialConfig) error {
	p, err := c.ReadPacket()
	if err != nil {
		return fmt.Errorf("read greeting: %w", err)
	}
	g, err := mysql.ParseGreeting(p)
	if err != nil {
		return err
	}
	if g.Capabilities&requiredCaps != requiredCaps {
		return fmt.Errorf("server %q lacks required capabilities (protocol 4.1, secure auth, session tracking)", g.ServerVersion)
	}
	c.ThreadID = g.ConnectionID
	c.ServerVersion = g.ServerVersion
	c.salt = append([]byte(nil), g.AuthData...)
	c.plugin = g.AuthPlugin
	caps := wantCaps & g.Capabilities
	if dc.Database == "" {
		caps &^= mysql.ClientConnectWithDB
	}
	if c.FoundRows {
		caps |= mysql.ClientFoundRows
	}
	if dc.TLS != nil && g.Capabilities&mysql.ClientSSL != 0 {
		caps |= mysql.ClientSSL
		if err := c.startTLS(dc, caps); err != nil {
			return err
		}
	} else if dc.TLSRequired {
		return errors.New("server does not offer TLS but the cluster's tls.mode requires it")
	}
	c.Caps = caps
	plugin := g.AuthPlugin
	if plugin == "" {
		plugin = auth.PluginNative
	}
	resp, err := scrambleFor(plugin, dc.Password, g.AuthData)
	if err != nil {
		return err
	}
	hr := &mysql.HandshakeResponse{
		Capabilities: caps, MaxPacket: mysql.MaxPayload, Charset: dc.Charset,
		User: dc.User, AuthResponse: resp, Database: dc.Database, AuthPlugin: plugin,
		Attrs: connectAttrs(),
	}
	if err := c.EndPacket(mysql.AppendHandshakeResponse(c.BeginPacket(), hr)); err != nil {
		return err
	}
	if err := c.Flush(); err != nil {
		return err
	}
	return c.authResult(dc, plugin, g.AuthData)
}

func (c *Conn) startTLS(dc *DialConfig, caps uint32) error {
	if err := c.EndPacket(mysql.AppendSSLRequest(c.BeginPacket(), caps, mysql.MaxPayload, dc.Charset)); err != nil {
		return err
	}
	if err := c.Flush(); err != nil {
		return err
	}
	var tc *tls.Conn
	c.Upgrade(func(nc net.Conn) net.Conn {
		tc = tls.Client(nc, dc.TLS)
		return tc
	})
	if err := tc.Handshake(); err != nil {
		return fmt.Errorf("TLS handshake: %w", err)
	}
	return nil
}

// connectAttrs names the proxy in the server's performance_schema.
func connectAttrs() []byte {
	var b []byte
	b = mysql.AppendLenEncStr(b, "_client_name")
	b = mysql.AppendLenEncStr(b, "shardgate")
	b = mysql.AppendLenEncStr(b, "program_name")
	b = mysql.AppendLenEncStr(b, "shardgate")
	return b
}

func scrambleFor(plugin, password string, salt []byte) ([]byte, error) {
	switch plugin {
	case auth.PluginNative:
		return auth.NativeScramble([]byte(password), salt), nil
	case auth.PluginCachingSHA2:
		return auth.SHA2Scramble([]byte(password), salt), nil
	case auth.PluginEd25519:
		// MariaDB's ed25519 accounts (users: from_backend logs in to them
		// with the client's password).
		return auth.Ed25519Sign([]byte(password), salt)
	}
	return nil, fmt.Errorf("server asks for unsupported auth plugin %q", plugin)
}

// authResult follows the server through auth switches and caching_sha2
// exchanges until OK or ERR.
func (c *Conn) authResult(dc *DialConfig, plugin string, salt []byte) error {
	for {
		p, err := c.ReadPacket()
		if err != nil {
			return fmt.Errorf("read auth result: %w", err)
		}
		if len(p) == 0 {
			return fmt.Errorf("empty auth result: %w", mysql.ErrMalformed)
		}
		switch p[0] {
		case mysql.HeaderOK:
			return nil
		case mysql.HeaderErr:
			return mysql.ParseErr(p)
		case mysql.HeaderAuthSwitch:
			name, data, err := mysql.ParseAuthSwitch(p)
			if err != nil {
				return err
			}
			plugin, salt = name, data
			resp, err := scrambleFor(plugin, dc.Password, salt)
			if err != nil {
				return err
			}
			if err := c.writeAuth(resp); err != nil {
				return err
			}
		case mysql.HeaderAuthMore:
			if err := c.authMore(dc, plugin, salt, p[1:]); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected auth packet 0x%02x: %w", p[0], mysql.ErrMalformed)
		}
	}
}

// caching_sha2_password AuthMoreData codes.
const (
	sha2RequestPublicKey = 0x02
	sha2FastAuthOK       = 0x03
	sha2FullAuth         = 0x04
)

func (c *Conn) authMore(dc *DialConfig, plugin string, salt, data []byte) error {
	if plugin != auth.PluginCachingSHA2 || len(data) == 0 {
		return fmt.Errorf("unexpected auth data for %s: %w", plugin, mysql.ErrMalformed)
	}
	switch data[0] {
	case sha2FastAuthOK:
		return nil // OK follows
	case sha2FullAuth:
		if _, isTLS := c.NetConn().(*tls.Conn); isTLS {
			return c.writeAuth(append([]byte(dc.Password), 0))
		}
		if err := c.writeAuth([]byte{sha2RequestPublicKey}); err != nil {
			return err
		}
		p, err := c.ReadPacket()
		if err != nil {
			return fmt.Errorf("read public key: %w", err)
		}
		if len(p) < 2 || p[0] != mysql.HeaderAuthMore {
			return fmt.Errorf("public key response: %w", mysql.ErrMalformed)
		}
		pub, err := auth.ParsePublicKeyPEM(p[1:])
		if err != nil {
			return err
		}
		enc, err := auth.EncryptPassword([]byte(dc.Password), salt, pub)
		if err != nil {
			return err
		}
		return c.writeAuth(enc)
	}
	return fmt.Errorf("unexpected caching_sha2 status 0x%02x: %w", data[0], mysql.ErrMalformed)
}

func (c *Conn) writeAuth(b []byte) error {
	if err := c.WritePacket(b); err != nil {
		return err
	}
	return c.Flush()
}

// trackingSetup turns on the session tracking the proxy learns state from.
const trackingSetup = "SET SESSION session_track_system_variables='*', session_track_schema=1, session_track_state_change=1"

// sendCommand starts a new command with one argument; flush sends it now,
// otherwise it leaves with the next command (pipelined).
func (c *Conn) sendCommand(cmd byte, arg string, flush bool) error {
	c.ResetSeq()
	b := append(c.BeginPacket(), cmd)
	if c.beforeCommand(cmd) {
		// The deferred sync's statements first, in the same packet.
		b = append(b, c.pending.sql...)
		b = append(b, ';')
		b = append(b, arg...)
		if err := c.EndPacket(b); err != nil {
			return err
		}
		c.expectSync()
	} else {
		b = append(b, arg...)
		if err := c.EndPacket(b); err != nil {
			return err
		}
	}
	if !flush {
		return nil
	}
	return c.FlushForReply()
}

// setupSession turns on the session tracking the proxy learns state from.
func (c *Conn) setupSession() error {
	return c.Exec(trackingSetup)
}

// Bounded runs f, round trips on c, within ctx: c is closed if ctx ends
// first (a server that stopped answering holds no goroutine forever),
// and the error then says so, whatever f returned. The proxy's own
// connections (sequences, XA recovery) use it; a closed c is unusable.
func (c *Conn) Bounded(ctx context.Context, f func() error) error {
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	err := f()
	if !stop() {
		return fmt.Errorf("%w (connection closed mid-statement)", context.Cause(ctx))
	}
	return err
}

// Exec runs a statement of the proxy's own and discards its results (all of
// them, for a multi-statement). It returns the first server error.
func (c *Conn) Exec(sql string) error {
	if err := c.sendCommand(mysql.ComQuery, sql, true); err != nil {
		return err
	}
	return c.DrainResponse()
}

// DrainResponse reads a full COM_QUERY-style response and discards it,
// returning the first ERR as an *mysql.SQLError.
func (c *Conn) DrainResponse() error {
	var firstErr error
	for {
		more, err := c.drainResult()
		if err != nil {
			var se *mysql.SQLError
			if !errors.As(err, &se) {
				return err
			}
			if firstErr == nil {
				firstErr = err
			}
		}
		if !more {
			return firstErr
		}
	}
}

func (c *Conn) drainResult() (bool, error) {
	p, err := c.ReadPacket()
	if err != nil {
		return false, err
	}
	switch {
	case mysql.IsErr(p):
		return false, mysql.ParseErr(p)
	case mysql.IsOK(p):
		ok, _ := mysql.ParseOK(p, c.Caps)
		c.noteOK(&ok)
		c.Status = ok.Status
		return ok.Status&mysql.StatusMoreResultsExists != 0, nil
	case len(p) > 0 && p[0] == mysql.HeaderLocalInfile:
		// Never for the proxy's own statements; refuse politely.
		if err := c.writeAuth(nil); err != nil {
			return false, err
		}
		return c.drainResult()
	}
	cols, _, _, _ := mysql.ReadLenEncInt(p)
	for i := uint64(0); i < cols; i++ {
		if _, err := c.ReadPacket(); err != nil {
			return false, err
		}
	}
	for {
		p, err := c.ReadPacket()
		if err != nil {
			return false, err
		}
		if mysql.IsErr(p) {
			return false, mysql.ParseErr(p)
		}
		if mysql.IsEOF(p) && len(p) < 0xffffff {
			ok, _ := mysql.ParseOK(p, c.Caps)
			c.Status = ok.Status
			return ok.Status&mysql.StatusMoreResultsExists != 0, nil
		}
	}
}

// noteOK keeps the connection's own record of facts reported in OK packets
// of the proxy's statements.
func (c *Conn) noteOK(ok *mysql.OKPacket) {
	if ok.LastInsertID != 0 {
		c.LastInsertID = ok.LastInsertID
	}
}

// Relay returns the connection's relay, set up for a client. It renames no
// tables: a sharded statement sets RenameTable after this call.
func (c *Conn) Relay(client *mysql.Conn, clientCaps uint32) *mysql.Relay {
	r := &c.relay
	r.Client, r.Backend = client, c.Conn
	r.ClientCaps, r.BackendCaps = clientCaps, c.Caps
	r.LocalFiles = clientCaps&mysql.ClientLocalFiles != 0
	r.RenameTable, r.HoldFlush = nil, false
	return r
}

// WriteCommand sends a client's command packet as is, starting a new command.
// A command with a reply is written by the read of that reply
// (FlushForReply), saving a syscall.
func (c *Conn) WriteCommand(p []byte) error {
	if len(p) > 0 && c.beforeCommand(p[0]) {
		if err := c.writeQueryAfterSync(p); err != nil {
			return err
		}
		return c.FlushForReply()
	}
	c.ResetSeq()
	if err := c.WritePacket(p); err != nil {
		return err
	}
	if len(p) > 0 && hasReply(p[0]) {
		return c.FlushForReply()
	}
	return c.Flush()
}

// ErrorBeforeClose returns the error a server sent before closing the
// connection, read after a command failed on it: a server refuses a packet
// over its max_allowed_packet with 1153 and closes at once, so the write of
// the rest fails while the answer sits in the socket. It returns nil when
// there is no such error. The socket is closed or reset, so the read does
// not wait; a short deadline guards against one that is not.
func (c *Conn) ErrorBeforeClose() *mysql.SQLError {
	c.DiscardOutput()
	_ = c.NetConn().SetReadDeadline(time.Now().Add(errorBeforeCloseWait))
	defer c.NetConn().SetReadDeadline(time.Time{})
	p, err := c.ReadPacket()
	if err != nil || !mysql.IsErr(p) {
		return nil
	}
	if se := mysql.ParseErr(p); mysql.ClosesConnection(se.Code) {
		return se
	}
	return nil
}

const errorBeforeCloseWait = 100 * time.Millisecond

// hasReply reports whether the server answers a command.
func hasReply(cmd byte) bool {
	return cmd != mysql.ComStmtClose && cmd != mysql.ComStmtSendLongData && cmd != mysql.ComQuit
}

// Ping checks the connection.
func (c *Conn) Ping() error {
	c.ResetSeq()
	if err := c.WritePacket([]byte{mysql.ComPing}); err != nil {
		return err
	}
	if err := c.Flush(); err != nil {
		return err
	}
	p, err := c.ReadPacket()
	if err != nil {
		return err
	}
	if mysql.IsErr(p) {
		return mysql.ParseErr(p)
	}
	return nil
}

// Reset returns the server session to a clean state (rolls back, drops user
// variables, temporary tables, locks and prepared statements) and turns
// session tracking back on, in one round trip.
func (c *Conn) Reset() error {
	c.DropDeferredSync() // the reset returns every variable to its default
	if err := c.sendCommand(mysql.ComResetConnection, "", false); err != nil {
		return err
	}
	if err := c.sendCommand(mysql.ComQuery, trackingSetup, true); err != nil {
		return err
	}
	p, err := c.ReadPacket()
	if err != nil {
		return err
	}
	if mysql.IsErr(p) {
		// The SET still runs; read its reply before reporting.
		_ = c.DrainResponse()
		return mysql.ParseErr(p)
	}
	if err := c.DrainResponse(); err != nil {
		return err
	}
	c.forgetSession()
	return nil
}

// ClearDB leaves the connection without a current database, as a client
// session without one must find it (DATABASE() is NULL, an unqualified
// table name fails with 1046). No statement does that; COM_CHANGE_USER to
// the same account without a database does, and like Reset it returns the
// session to a clean state, so session tracking is turned on again.
func (c *Conn) ClearDB() error {
	if c.pool == nil {
		return errors.New("clear database: connection has no pool")
	}
	dc := c.pool.dial
	plugin := c.plugin
	if plugin == "" {
		plugin = auth.PluginNative
	}
	resp, err := scrambleFor(plugin, dc.Password, c.salt)
	if err != nil {
		return err
	}
	c.DropDeferredSync() // the change of user returns every variable to its default
	c.ResetSeq()
	b := append(c.BeginPacket(), mysql.ComChangeUser)
	b = append(append(b, dc.User...), 0)
	b = append(append(b, byte(len(resp))), resp...)
	b = append(b, 0)             // no database
	b = append(b, dc.Charset, 0) // collation id, 2 bytes
	b = append(append(b, plugin...), 0)
	if c.Caps&mysql.ClientConnectAttrs != 0 {
		b = mysql.AppendLenEncStr(b, string(connectAttrs()))
	}
	if err := c.EndPacket(b); err != nil {
		return err
	}
	if err := c.Flush(); err != nil {
		return err
	}
	if err := c.authResult(dc, plugin, c.salt); err != nil {
		return fmt.Errorf("change user to clear the database: %w", err)
	}
	c.DB = ""
	c.forgetSession()
	return c.setupSession()
}

// forgetSession drops the record of the session state a reset or a change
// of user cleared on the server (the database, which a reset keeps, is the
// caller's).
func (c *Conn) forgetSession() {
	c.Vars = c.Vars[:0]
	c.VarsFP = 0
	c.LastInsertID, c.LastInsertIDUnknown = 0, false
	c.Dirty = false
	c.forgetStmts()
}

// forgetStmts drops the record of server-side statements (after a reset
// deallocated them).
func (c *Conn) forgetStmts() {
	clear(c.stmts)
	c.stmtLRU.Init()
}

// LookupStmt returns the statement prepared here for sql under db, if any,
// and marks it recently used.
func (c *Conn) LookupStmt(sql []byte, db string) *Stmt {
	e, ok := c.stmts[string(sql)]
	if !ok {
		return nil
	}
	st := e.Value.(*Stmt)
	if st.DB != db {
		return nil
	}
	c.stmtLRU.MoveToFront(e)
	return st
}

// AddStmt records a statement prepared here, replacing one for the same SQL
// and evicting the least recently used beyond the limit (closing them on the
// server so thousands of sessions never exhaust max_prepared_stmt_count).
func (c *Conn) AddStmt(st *Stmt) error {
	if e, ok := c.stmts[st.SQL]; ok {
		old := e.Value.(*Stmt)
		c.stmtLRU.Remove(e)
		delete(c.stmts, st.SQL)
		if old.ID != st.ID {
			if err := c.closeStmt(old.ID); err != nil {
				return err
			}
		}
	}
	c.stmts[st.SQL] = c.stmtLRU.PushFront(st)
	for c.stmtLRU.Len() > c.stmtLimit {
		e := c.stmtLRU.Back()
		old := e.Value.(*Stmt)
		c.stmtLRU.Remove(e)
		delete(c.stmts, old.SQL)
		if err := c.closeStmt(old.ID); err != nil {
			return err
		}
	}
	return nil
}

// StmtCount reports how many statements are prepared on this connection.
func (c *Conn) StmtCount() int { return c.stmtLRU.Len() }

func (c *Conn) closeStmt(id uint32) error {
	c.ResetSeq()
	b := append(c.BeginPacket(), mysql.ComStmtClose)
	b = mysql.AppendUint32(b, id)
	return c.EndPacket(b) // no response; flushed with the next command
}

// Prepare prepares sql on this connection for the proxy's own use (the
// client already has its metadata) and records it.
func (c *Conn) Prepare(sql string, db string) (*Stmt, error) {
	if err := c.sendCommand(mysql.ComStmtPrepare, sql, true); err != nil {
		return nil, err
	}
	p, err := c.ReadPacket()
	if err != nil {
		return nil, err
	}
	if mysql.IsErr(p) {
		return nil, mysql.ParseErr(p)
	}
	st, err := ParsePrepareOK(p)
	if err != nil {
		return nil, err
	}
	st.SQL, st.DB = sql, db
	if err := c.skipPrepareMetadata(st); err != nil {
		return nil, err
	}
	if err := c.AddStmt(st); err != nil {
		return nil, err
	}
	return st, nil
}

// ParsePrepareOK decodes the first packet of a COM_STMT_PREPARE response.
func ParsePrepareOK(p []byte) (*Stmt, error) {
	r := mysql.NewReader(p)
	if r.Byte() != mysql.HeaderOK {
		return nil, fmt.Errorf("prepare response: %w", mysql.ErrMalformed)
	}
	st := &Stmt{ID: r.Uint32(), Columns: r.Uint16(), Params: r.Uint16()}
	if !r.OK() {
		return nil, fmt.Errorf("prepare response: %w", mysql.ErrMalformed)
	}
	return st, nil
}

func (c *Conn) skipPrepareMetadata(st *Stmt) error {
	n := int(st.Params) + int(st.Columns)
	if c.Caps&mysql.ClientDeprecateEOF == 0 {
		if st.Params > 0 {
			n++
		}
		if st.Columns > 0 {
			n++
		}
	}
	for i := 0; i < n; i++ {
		if _, err := c.ReadPacket(); err != nil {
			return err
		}
	}
	return nil
}

// Uses reports how many times the connection was handed out.
func (c *Conn) Uses() uint64 { return c.uses }

// Pool returns the pool the connection belongs to.
func (c *Conn) Pool() *Pool { return c.pool }

// takeLastInsertIDSQL reads the connection's LAST_INSERT_ID() and sets it
// to 0 in the same statement: LAST_INSERT_ID(0) takes effect for the
// statements after it, while the first item reads the value from before.
// A statement that uses no table leaves the previous statement's warnings
// on the connection.
const takeLastInsertIDSQL = "SELECT LAST_INSERT_ID(), LAST_INSERT_ID(0)"

// TakeLastInsertID returns the connection's LAST_INSERT_ID() and leaves it
// at 0 (LastInsertID then says so). It is a statement of its own: it
// replaces the connection's ROW_COUNT() and FOUND_ROWS(). When the server
// answers with an error the connection's value is unknown
// (LastInsertIDUnknown); an I/O error leaves the connection unusable.
func (c *Conn) TakeLastInsertID() (uint64, error) {
	rows, err := c.QueryRows(takeLastInsertIDSQL)
	if err != nil {
		c.LastInsertIDUnknown = true
		return 0, fmt.Errorf("read LAST_INSERT_ID(): %w", err)
	}
	if len(rows) != 1 || len(rows[0]) != 2 {
		c.LastInsertIDUnknown = true
		return 0, fmt.Errorf("read LAST_INSERT_ID(): %d rows", len(rows))
	}
	v, err := strconv.ParseUint(rows[0][0], 10, 64)
	if err != nil {
		c.LastInsertIDUnknown = true
		return 0, fmt.Errorf("read LAST_INSERT_ID(): %w", err)
	}
	c.LastInsertID, c.LastInsertIDUnknown = 0, false
	return v, nil
}

// QueryResultSet runs a statement of the proxy's own that answers with
// one small result set (EXPLAIN, SHOW CREATE TABLE) and reads it into
// memory, its column definitions as the server sent them: the proxy
// rewrites it into its own answer. A server's error is returned as an
// *mysql.SQLError (the connection is fine); any other error leaves the
// connection unusable.
func (c *Conn) QueryResultSet(sql string) (*mysql.ResultSet, error) {
	if err := c.sendCommand(mysql.ComQuery, sql, true); err != nil {
		return nil, err
	}
	rs, serr, err := mysql.ReadResultSet(c.Conn, c.Caps)
	switch {
	case err != nil:
		return nil, err
	case serr != nil:
		return nil, serr
	}
	return rs, nil
}

// QueryRows runs a statement and returns its text rows (NULL as "").
func (c *Conn) QueryRows(sql string) ([][]string, error) {
	_, rows, err := c.QueryColumns(sql)
	return rows, err
}

// QueryColumns runs a statement and returns its column names and text rows
// (NULL as "").
func (c *Conn) QueryColumns(sql string) ([]string, [][]string, error) {
	if err := c.sendCommand(mysql.ComQuery, sql, true); err != nil {
		return nil, nil, err
	}
	p, err := c.ReadPacket()
	if err != nil {
		return nil, nil, err
	}
	switch {
	case mysql.IsErr(p):
		return nil, nil, mysql.ParseErr(p)
	case mysql.IsOK(p):
		return nil, nil, nil
	}
	ncols, _, _, ok := mysql.ReadLenEncInt(p)
	if !ok || ncols > 4096 {
		return nil, nil, fmt.Errorf("column count: %w", mysql.ErrMalformed)
	}
	names := make([]string, ncols)
	for i := range names {
		p, err := c.ReadPacket()
		if err != nil {
			return nil, nil, err
		}
		names[i] = columnName(p)
	}
	if c.Caps&mysql.ClientDeprecateEOF == 0 {
		if _, err := c.ReadPacket(); err != nil {
			return nil, nil, err
		}
	}
	var rows [][]string
	for {
		p, err := c.ReadPacket()
		if err != nil {
			return nil, nil, err
		}
		if mysql.IsErr(p) {
			return nil, nil, mysql.ParseErr(p)
		}
		if mysql.IsEOF(p) {
			return names, rows, nil
		}
		r := mysql.NewReader(p)
		row := make([]string, ncols)
		for i := range row {
			if len(r.Rest()) > 0 && r.Rest()[0] == 0xfb {
				r.Byte()
				continue
			}
			row[i] = string(r.LenEncString())
		}
		if !r.OK() {
			return nil, nil, fmt.Errorf("row: %w", mysql.ErrMalformed)
		}
		rows = append(rows, row)
	}
}

// columnName reads the name from a column definition packet (catalog,
// schema, table, org_table, then name).
func columnName(p []byte) string {
	r := mysql.NewReader(p)
	for i := 0; i < 4; i++ {
		r.LenEncString()
	}
	name := r.LenEncString()
	if !r.OK() {
		return ""
	}
	return string(name)
}
