// Package frontend accepts client connections and runs one Session per
// client: the handshake, the command loop, the session's state (database,
// variables, transaction, prepared statements) and which backend connection
// it holds and why.
package frontend

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/mysql/auth"
	"github.com/shardgate/shardgate/internal/planner"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/telemetry"
	"github.com/shardgate/shardgate/internal/tracing"
	"github.com/shardgate/shardgate/internal/xa"
)

// User is an account clients log in with. A session keeps the User it
// logged in as: a reload that changes a user's password or default
// database makes a new User for later logins, and one that moves the user
// to another cluster leaves sessions logged in before on the old cluster.
// The routing policy is shared by the generations of a user on one cluster
// and swapped atomically, so a reload reaches live sessions with it at
// their next statement.
type User struct {
	Name      string
	Stored    auth.Stored
	Cluster   *backend.Cluster
	DefaultDB string
	// Admin may log in on a listener's reserved admin connections.
	Admin bool
	// Process sees every client session in SHOW PROCESSLIST and
	// information_schema.PROCESSLIST, as MySQL's PROCESS privilege; a
	// user without it sees its own sessions only (processlist.go).
	Process bool
	policy  *atomic.Pointer[router.Policy]
	// Accounts, when set, make this a user of the backend's own accounts
	// (a cluster's users: from_backend): the backend checks its password
	// (authenticateBackend), and the session's statements run on
	// connections logged in as it, from Account's pools.
	Accounts *backend.Accounts
	Account  *backend.Account
	// unknown: a stand-in for an account that does not exist, which no
	// password opens (see Server.userOrStandIn).
	unknown bool
}

// NewUser makes a user with its read/write splitting policy on cl.
func NewUser(name string, stored auth.Stored, cl *backend.Cluster, defaultDB string, pol *router.Policy) *User {
	u := &User{Name: name, Stored: stored, Cluster: cl, DefaultDB: defaultDB, policy: new(atomic.Pointer[router.Policy])}
	u.policy.Store(pol)
	return u
}

// Renewed returns a User for later logins with new credentials, default
// database or admin and process flags, sharing u's cluster and policy.
func (u *User) Renewed(stored auth.Stored, defaultDB string, admin, process bool) *User {
	return &User{Name: u.Name, Stored: stored, Cluster: u.Cluster, DefaultDB: defaultDB, Admin: admin, Process: process, policy: u.policy}
}

// Policy returns the user's read/write splitting policy now (one atomic
// load: statements read it each time).
func (u *User) Policy() *router.Policy { return u.policy.Load() }

// SetPolicy changes the policy of u and of the users it was renewed from
// or to.
func (u *User) SetPolicy(p *router.Policy) { u.policy.Store(p) }

// Full-authentication policies for caching_sha2_password.
const (
	FullAuthFirstLogin = "first_login" // as MySQL: until the user is in the fast-auth cache
	FullAuthAlways     = "always"
	FullAuthNever      = "never"
)

// Identity is what the proxy presents itself as: the version string and
// the authentication plugin of its greeting, and the collation table that
// maps handshake character sets. The proxy learns them from the primary,
// which may be down at start, so they can change while the server runs
// (SetIdentity); each login reads them once.
type Identity struct {
	Version    string
	AuthPlugin string // default plugin; "" is mysql_native_password
	Collations *Collations
	// MaxPacket is the max_allowed_packet clients get: a packet that
	// reaches it is refused with 1153 before it is read.
	MaxPacket int
}

// Options configure a Server.
type Options struct {
	Identity    Identity // the initial one
	FullAuth    string
	TLS         *tls.Config // nil: TLS not offered
	TLSRequired bool
	RSAKey      *rsa.PrivateKey
	Users       func(name string) *User
	// BackendUser returns the user a name that Users does not know logs
	// in as when a cluster has users: from_backend (a User with
	// Accounts), else nil; nil: no backend accounts.
	BackendUser       func(name string) *User
	ClientIdleTimeout time.Duration
	// NetReadTimeout and NetWriteTimeout bound a client packet in progress
	// (MySQL's net_read_timeout, net_write_timeout); 0: no bound.
	NetReadTimeout, NetWriteTimeout time.Duration
	// HandshakeTimeout bounds a login; 0 is DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	MaxConnections   int
	// ReservedAdmin connections are admitted beyond MaxConnections; only
	// users with Admin may keep one once logged in.
	ReservedAdmin   int
	MaxStmtsPerSess int
	Log             *slog.Logger
	Metrics         *Metrics
	// AuthGuard delays and logs failed logins per client address; shared
	// by the listeners of a proxy. nil: a guard of the server's own that
	// delays nothing.
	AuthGuard *AuthGuard
	// Poller rations busy polling of client and backend sockets; nil: none.
	Poller *mysql.Poller
	// Keyspaces are the sharded schemas: statements in these databases
	// are planned by the sharding planner.
	Keyspaces planner.Keyspaces
	// XA registers the transactions with XA branches (cross_shard_writes:
	// atomic) and names their ids; nil: atomic schemas refuse writes on a
	// second shard. XAMetrics, when set, counts their commits.
	XA        *xa.Registry
	XAMetrics *xa.Metrics
	// Local, when set, makes the server answer every statement itself
	// through it (local.go), never touching a backend: the admin SQL port.
	// Its users have no cluster.
	Local LocalHandler
	// IDs numbers the sessions; the listeners of a proxy share one, so
	// that a connection id names one session of the proxy (KILL, SHOW
	// SESSIONS). nil: the server numbers its own.
	IDs *atomic.Uint32
	// Peer finds a session of any of the proxy's client listeners by id,
	// for a client's KILL; nil: the server's own sessions only.
	Peer func(id uint32) *Session
	// Peers yields the logged-in sessions of all the proxy's client
	// listeners, for SHOW PROCESSLIST; nil: the server's own.
	Peers func() iter.Seq[*Session]
	// Telemetry records every client statement (telemetry.go); nil
	// records nothing.
	Telemetry *telemetry.Recorder
	// Tracer exports spans of sampled statements (tracing.go); nil: off.
	// It needs Telemetry, which times the statements.
	Tracer *tracing.Tracer
}

// Server accepts clients on one listener.
type Server struct {
	opt    Options
	pubPEM []byte

	// idleTimeout and handshakeTimeout are opt.ClientIdleTimeout and
	// opt.HandshakeTimeout, which a reload may change.
	idleTimeout      atomic.Int64
	handshakeTimeout atomic.Int64
	// netReadTimeout and netWriteTimeout are opt's, which a reload may
	// change (for the sessions that log in after it).
	netReadTimeout, netWriteTimeout atomic.Int64

	lnMu     sync.Mutex // Serve sets ln while Shutdown may read it
	ln       net.Listener
	ids      *atomic.Uint32 // opt.IDs, or one of its own
	sessions sessionTable
	count    atomic.Int64
	wg       sync.WaitGroup

	shuttingDown atomic.Bool
	handoff      handoffPtr // a live upgrade's, while sessions move (handoff.go)
	notAccepting atomic.Bool
	parker       *parker // nil: idle sessions keep their goroutine
	relief       *memoryRelief
	stopSweep    chan struct{}
	stopOnce     sync.Once

	// shardWork holds what sessions that parked bound sharded statements
	// with (shed.go).
	shardWork sync.Pool

	sha2Cache sync.Map // user name -> struct{}: users that passed full auth
	// standInKey derives unknown users' stand-in passwords.
	standInKey []byte
	closing    chan struct{} // closed by Shutdown: delayed logins give up
	closeOnce  sync.Once

	ident atomic.Pointer[Identity]

	// shards are the sharded schemas and the names that make a statement
	// ask which of them plans it; a reload that adds schemas or tables
	// swaps them (SetKeyspaces).
	shards atomic.Pointer[shardedSchemas]
}

// shardedSchemas are the keyspaces a server plans with.
type shardedSchemas struct {
	keyspaces planner.Keyspaces
	// filters are the names that make a statement ask which sharded
	// schema plans it (planner.Keyspaces.Filters).
	filters []planner.SchemaFilter
}

// SetKeyspaces makes ks the sharded schemas from the next statement on (a
// reload added schemas or tables).
func (s *Server) SetKeyspaces(ks planner.Keyspaces) {
	s.shards.Store(&shardedSchemas{keyspaces: ks, filters: ks.Filters()})
}

// keyspaces are the sharded schemas now.
func (s *Server) keyspaces() planner.Keyspaces { return s.shards.Load().keyspaces }

// schemaFilters are the sharded schemas' filters now.
func (s *Server) schemaFilters() []planner.SchemaFilter { return s.shards.Load().filters }

// NewServer prepares a server; Serve starts accepting.
func NewServer(opt Options) (*Server, error) {
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	if opt.Metrics == nil {
		opt.Metrics = NewMetrics(nil)
	}
	if opt.FullAuth == "" {
		opt.FullAuth = FullAuthFirstLogin
	}
	if opt.MaxStmtsPerSess <= 0 {
		opt.MaxStmtsPerSess = 16382
	}
	if opt.AuthGuard == nil {
		opt.AuthGuard = NewAuthGuard(AuthDelayConfig{}, opt.Log, opt.Metrics)
	}
	s := &Server{opt: opt, ids: opt.IDs, standInKey: make([]byte, 32), closing: make(chan struct{})}
	s.SetKeyspaces(opt.Keyspaces)
	if s.ids == nil {
		s.ids = new(atomic.Uint32)
	}
	s.shardWork.New = s.newShardWork
	if _, err := rand.Read(s.standInKey); err != nil {
		return nil, fmt.Errorf("generate the key of unknown users' stand-ins: %w", err)
	}
	s.idleTimeout.Store(int64(opt.ClientIdleTimeout))
	s.SetNetTimeouts(opt.NetReadTimeout, opt.NetWriteTimeout)
	s.SetHandshakeTimeout(opt.HandshakeTimeout)
	s.SetIdentity(opt.Identity)
	if parkingSupported {
		p, err := newParker(opt.Log)
		if err != nil {
			opt.Log.Warn("idle sessions will keep a goroutine each", "err", err)
		} else {
			s.parker = p
			s.relief = newMemoryRelief()
			s.stopSweep = make(chan struct{})
			go s.sweepIdle(s.stopSweep)
		}
	}
	if opt.RSAKey != nil {
		pem, err := auth.PublicKeyPEM(&opt.RSAKey.PublicKey)
		if err != nil {
			return nil, fmt.Errorf("encode RSA public key: %w", err)
		}
		s.pubPEM = pem
	}
	return s, nil
}

// Serve accepts connections on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	s.lnMu.Lock()
	s.ln = ln
	s.lnMu.Unlock()
	if s.shuttingDown.Load() {
		_ = ln.Close() // Shutdown came first and did not see ln
		return nil
	}
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.shuttingDown.Load() || s.notAccepting.Load() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return fmt.Errorf("accept: %w", err)
		}
		s.wg.Add(1)
		go s.handle(nc)
	}
}

// SetIdentity changes what new logins see of the server.
func (s *Server) SetIdentity(id Identity) {
	if id.AuthPlugin == "" {
		id.AuthPlugin = auth.PluginNative
	}
	if id.Collations == nil {
		id.Collations = &Collations{}
	}
	s.ident.Store(&id)
}

// identity returns what the server presents itself as now.
func (s *Server) identity() *Identity { return s.ident.Load() }

// Identity returns what the server presents itself as now.
func (s *Server) Identity() Identity { return *s.identity() }

// Addr returns the listening address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// handle admits a client and runs its login; the command loop then runs in
// a goroutine of its own, so the deep stack of the handshake (TLS, RSA) is
// gone and an idle session's stack can shrink to the minimum.
func (s *Server) handle(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		_ = tc.SetKeepAlive(true)
	}
	sess := newSession(s, nc, s.ids.Add(1))
	if !s.admit(sess) {
		s.wg.Done()
		return
	}
	if !sess.greet() {
		s.finish(sess)
		return
	}
	go s.commandLoop(sess)
}

// admit applies the connection limit and registers the session. The user
// is not known yet (the handshake names it), so this admits up to the
// reserved admin connections beyond max_connections, and admitUser
// refuses a user who is not an administrator one of those once it is
// known. A connection counts from here: one that stalls in the handshake
// holds its slot until the handshake timeout.
func (s *Server) admit(sess *Session) bool {
	n := s.count.Add(1)
	if s.opt.MaxConnections > 0 && n > int64(s.opt.MaxConnections+s.opt.ReservedAdmin) {
		s.count.Add(-1)
		sess.refuse(errTooManyConnections())
		return false
	}
	if s.shuttingDown.Load() {
		s.count.Add(-1)
		sess.refuse(mysql.NewError(mysql.ERServerShutdown, mysql.StateGeneral, "Server shutdown in progress"))
		return false
	}
	s.sessions.store(sess)
	s.opt.Metrics.ClientConnects.Inc()
	s.opt.Metrics.ClientsConnected.Inc()
	return true
}

// admitUser is admit's second step, after authentication: beyond
// max_connections only an administrator may stay, as MySQL keeps its last
// connection for a user with SUPER (or CONNECTION ADMIN). On refusal the
// client has the error.
func (s *Session) admitUser() error {
	max := s.srv.opt.MaxConnections
	if max <= 0 || s.user.Admin || s.srv.count.Load() <= int64(max) {
		return nil
	}
	s.logger().Warn("refusing a login: max_connections reached, the connections left are reserved for administrators",
		"max_connections", max, "reserved_admin_connections", s.srv.opt.ReservedAdmin,
		"hint", "raise listeners[].max_connections, or find the clients that hold the connections")
	return s.fail(errTooManyConnections())
}

// errTooManyConnections is the server's answer beyond max_connections.
func errTooManyConnections() *mysql.SQLError {
	return mysql.NewError(mysql.ERConCount, mysql.StateConnRejected, "Too many connections")
}

// commandLoop runs (or resumes) a session's command loop; a session that
// parks is finished later by the goroutine that resumes it.
func (s *Server) commandLoop(sess *Session) {
	if sess.loop() {
		return
	}
	s.finish(sess)
}

// finish releases what the session holds and unregisters it.
func (s *Server) finish(sess *Session) {
	sess.close()
	s.sessions.delete(sess.id)
	s.opt.Metrics.ClientsConnected.Dec()
	s.count.Add(-1)
	s.wg.Done()
}

// peer returns the session KILL id names: one of the proxy's client
// listeners' (Options.Peer), or of this server's.
func (s *Server) peer(id uint32) *Session {
	if s.opt.Peer != nil {
		return s.opt.Peer(id)
	}
	return s.Session(id)
}

// Session returns a live session by id.
func (s *Server) Session(id uint32) *Session {
	return s.sessions.load(id)
}

// SetClientIdleTimeout changes how long a client may stay idle: sessions
// apply it from their next wait for a command (a session parked already
// keeps the deadline it parked with).
func (s *Server) SetClientIdleTimeout(d time.Duration) { s.idleTimeout.Store(int64(d)) }

// SetNetTimeouts changes net_read_timeout and net_write_timeout for the
// sessions that log in from now on.
func (s *Server) SetNetTimeouts(read, write time.Duration) {
	s.netReadTimeout.Store(int64(read))
	s.netWriteTimeout.Store(int64(write))
}

// SetHandshakeTimeout changes how long a login may take, for logins that
// start after it; 0 is DefaultHandshakeTimeout.
func (s *Server) SetHandshakeTimeout(d time.Duration) {
	if d <= 0 {
		d = DefaultHandshakeTimeout
	}
	s.handshakeTimeout.Store(int64(d))
}

// ForgetFastAuth drops a user from the caching_sha2_password fast-auth
// cache (its password changed), as ALTER USER does on MySQL.
func (s *Server) ForgetFastAuth(user string) { s.sha2Cache.Delete(user) }

// Clients reports the number of connected clients.
func (s *Server) Clients() int64 { return s.count.Load() }

// drainQuiet is how long a session must have waited for a command before
// the drain closes it there. A busy client's session ends right after a
// response instead (endDrainedCommand); one idle this long is, for a
// pool, a spare connection it is not about to use.
const drainQuiet = time.Second

// Shutdown drains the server: it stops accepting; a session ends after its
// next response once it holds nothing for a following command (the
// shutdown error sent behind the response), or after drainQuiet waiting
// for one; transactions and other held state run on until they end. When
// ctx ends, what is left is closed.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shuttingDown.Store(true)
	s.closeOnce.Do(func() { close(s.closing) })
	s.lnMu.Lock()
	if s.ln != nil {
		_ = s.ln.Close()
	}
	s.lnMu.Unlock()
	if s.parker != nil {
		s.stopOnce.Do(func() { close(s.stopSweep) })
		s.parker.close(wakeShutdown) // parked sessions resume and close
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var buf []*Session
	type seen struct {
		seq uint32
		at  time.Time
	}
	idle := map[*Session]seen{}
	for {
		now := time.Now()
		s.sessions.each(&buf, func(sess *Session) bool {
			seq, waiting, holds := sess.idleState()
			closable := waiting && !holds
			switch m, ok := idle[sess]; {
			case !closable:
				delete(idle, sess)
			case !ok || m.seq != seq:
				idle[sess] = seen{seq, now}
			case now.Sub(m.at) >= drainQuiet:
				sess.interruptIfIdle(seq)
			}
			return true
		})
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			s.sessions.each(&buf, func(sess *Session) bool {
				sess.forceClose()
				return true
			})
			<-done
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// ParkedSessions reports idle sessions currently held without a goroutine.
func (s *Server) ParkedSessions() int {
	if s.parker == nil {
		return 0
	}
	return s.parker.count()
}
