package frontend

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/mysql/auth"
)

// serverCaps are the capabilities offered to clients. The proxy adapts
// result packets between these and its backend connections' capabilities.
const serverCaps = mysql.ClientLongPassword | mysql.ClientFoundRows | mysql.ClientLongFlag |
	mysql.ClientConnectWithDB | mysql.ClientLocalFiles | mysql.ClientProtocol41 |
	mysql.ClientInteractive | mysql.ClientTransactions | mysql.ClientSecureConnection |
	mysql.ClientMultiStatements | mysql.ClientMultiResults | mysql.ClientPSMultiResults |
	mysql.ClientPluginAuth | mysql.ClientConnectAttrs | mysql.ClientPluginAuthLenencClientData |
	mysql.ClientSessionTrack | mysql.ClientDeprecateEOF | mysql.ClientIgnoreSIGPIPE

// caching_sha2_password AuthMoreData codes.
const (
	sha2RequestPublicKey byte = 0x02
	sha2FastAuthOK       byte = 0x03
	sha2FullAuth         byte = 0x04
)

var errAuthFailed = errors.New("authentication failed")

// DefaultHandshakeTimeout bounds the whole login exchange unless
// Options.HandshakeTimeout says otherwise, so a client that stops half-way
// does not hold a session (and a connection slot) forever.
const DefaultHandshakeTimeout = 10 * time.Second

// maxHandshakePacket limits client packets before login; after it, the
// limit is max_allowed_packet (Identity.MaxPacket).
const maxHandshakePacket = 64 << 10

// maxClientPacket is the largest packet a server accepts, the limit when
// none is known.
const maxClientPacket = 1 << 30

// handshake greets the client, upgrades to TLS when asked, and
// authenticates. On failure it has already sent the client an ERR.
func (s *Session) handshake() error {
	raw := s.client.NetConn()
	s.loginDeadline = time.Now().Add(time.Duration(s.srv.handshakeTimeout.Load()))
	_ = raw.SetDeadline(s.loginDeadline)
	defer raw.SetDeadline(time.Time{}) // TLS layers over raw: this covers both
	// Before login nobody may make the proxy allocate much: a handshake
	// packet is a few hundred bytes.
	s.client.MaxPacket = maxHandshakePacket
	maxPacket := s.srv.clientMaxPacket()
	defer func() { s.afterHandshake(maxPacket) }()
	salt, err := auth.NewScramble()
	if err != nil {
		return err
	}
	s.salt = salt
	caps := serverCaps
	if s.srv.opt.TLS != nil {
		caps |= mysql.ClientSSL
	}
	id := s.srv.identity()
	g := &mysql.Greeting{
		ServerVersion: id.Version, ConnectionID: s.id, AuthData: s.salt[:],
		Capabilities: caps, Charset: id.Collations.ServerDefault(),
		Status: mysql.StatusAutocommit, AuthPlugin: id.AuthPlugin,
	}
	if err := s.client.EndPacket(mysql.AppendGreeting(s.client.BeginPacket(), g)); err != nil {
		return err
	}
	if err := s.client.Flush(); err != nil {
		return err
	}
	// A server checks its clients' sequence ids; so does the proxy, from
	// the first packet on: garbage and non-MySQL clients are told so.
	s.client.CheckSeq = true
	p, err := s.readLogin()
	if err != nil {
		return s.readFailedEarly("read handshake response", err)
	}
	if mysql.IsSSLRequest(p) {
		if s.srv.opt.TLS == nil {
			return s.fail(mysql.NewError(mysql.ERHandshake, mysql.StateConnFailure, "Bad handshake: TLS is not enabled on this listener"))
		}
		var tc *tls.Conn
		s.client.Upgrade(func(nc net.Conn) net.Conn {
			tc = tls.Server(nc, s.srv.opt.TLS)
			return tc
		})
		if err := tc.Handshake(); err != nil {
			return fmt.Errorf("TLS handshake: %w", err)
		}
		s.tls = true
		if p, err = s.readLogin(); err != nil {
			return s.readFailedEarly("read handshake response after TLS", err)
		}
	}
	hr, err := mysql.ParseHandshakeResponse(p)
	if err != nil {
		s.logger().Info("refusing a malformed handshake response", "err", err,
			"hint", "the client is not a MySQL client or sent a corrupt packet")
		return s.fail(mysql.NewError(mysql.ERHandshake, mysql.StateConnFailure, "Bad handshake"))
	}
	if s.srv.opt.TLSRequired && !s.tls {
		return s.fail(mysql.NewError(mysql.ERSecureTransport, mysql.StateGeneral,
			"Connections using insecure transport are prohibited"))
	}
	s.caps = hr.Capabilities & caps
	if err := s.authenticate(hr.User, hr.AuthPlugin, hr.AuthResponse); err != nil {
		return err
	}
	if err := s.admitUser(); err != nil {
		return err
	}
	return s.login(hr.User, hr.Database, hr.Charset)
}

// authenticate checks the client's credentials, switching plugins and
// running caching_sha2 full authentication as needed. A user name that
// names no account goes through the same exchange as a wrong password
// (userOrStandIn). Before its first reply that depends on the password,
// each attempt waits as long as the failures of its user name from the
// client's address earned (pace).
func (s *Session) authenticate(user, plugin string, resp []byte) error {
	s.paced = false
	host, _, _ := splitHost(s.remote)
	u := s.userOrStandIn(user)
	if u.Accounts != nil {
		return s.authenticateBackend(u, host, plugin, resp)
	}
	if plugin == "" || !u.Stored.Supports(plugin) || !knownPlugin(plugin) {
		// Ask for the server default if the user's stored form allows it,
		// else for the one it allows.
		plugin = s.srv.identity().AuthPlugin
		if !u.Stored.Supports(plugin) {
			plugin = auth.PluginNative
		}
		data := append(s.salt[:len(s.salt):len(s.salt)], 0)
		if err := s.client.EndPacket(mysql.AppendAuthSwitch(s.client.BeginPacket(), plugin, data)); err != nil {
			return err
		}
		if err := s.client.Flush(); err != nil {
			return err
		}
		p, err := s.readLogin()
		if err != nil {
			return s.readFailedEarly("read auth switch response", err)
		}
		resp = append([]byte(nil), p...)
	}
	var ok bool
	switch plugin {
	case auth.PluginNative:
		ok = u.Stored.VerifyNative(s.salt[:], resp)
	case auth.PluginCachingSHA2:
		var err error
		ok, err = s.cachingSHA2(u, host, resp)
		if err != nil {
			return err
		}
	}
	if u.unknown {
		return s.denied(user, host, len(resp) > 0, "unknown user")
	}
	if !ok {
		return s.denied(user, host, len(resp) > 0, "wrong password")
	}
	return s.becomeUser(u, host)
}

// becomeUser makes u the session's user once its password proved right,
// after the wait the failures of its name from host earned.
func (s *Session) becomeUser(u *User, host string) error {
	if err := s.pace(host, s.srv.opt.AuthGuard.Delay(host, u.Name)); err != nil {
		return err
	}
	s.srv.opt.AuthGuard.Succeeded(host, u.Name)
	s.mu.Lock() // other goroutines read it: Sessions, Activity, KILL
	s.user = u
	s.mu.Unlock()
	s.home = s.homeCluster(u)
	s.cl = s.home
	return nil
}

// userOrStandIn returns the account a client logs in to or, for a name
// that names none, a stand-in whose password derives from the name and a
// secret of the process. Logging in to the stand-in runs the exchange of a
// real account (auth switches, caching_sha2 full authentication, the RSA
// key) and fails at the same step with the same error, so the replies do
// not tell which accounts exist. The stand-in is derived for every login,
// so both cost the same hashing.
func (s *Session) userOrStandIn(name string) *User {
	standIn := auth.DummyStored(s.srv.standInKey, name)
	if u := s.srv.opt.Users(name); u != nil {
		return u
	}
	if s.srv.opt.BackendUser != nil {
		if u := s.srv.opt.BackendUser(name); u != nil {
			return u
		}
	}
	return &User{Name: name, Stored: standIn, unknown: true}
}

// pace waits, once per login attempt, before the first reply that depends
// on the password, for d (what the failures of its user name from host,
// the client's address, earned: AuthGuard). The session's own goroutine
// waits, without its buffers; a wait that would outlast the login
// deadline ends the connection there without an answer, as the handshake
// timeout would, and so does one the address has too many of at once
// (AuthGuard.Wait).
func (s *Session) pace(host string, d time.Duration) error {
	if s.paced {
		return nil
	}
	s.paced = true
	if d <= 0 {
		return nil
	}
	guard := s.srv.opt.AuthGuard
	if !guard.Wait(host) {
		return fmt.Errorf("%w: too many logins from this address wait for their failure delay", errAuthFailed)
	}
	defer guard.Done(host)
	s.srv.opt.Metrics.AuthDelayed.Inc()
	// What was read and written so far is answered: a login that waits
	// seconds need not hold 32 KB of buffers (2,000 of them held 64 MB).
	s.client.ReleaseBuffers()
	wait, expires := d, false
	if left := time.Until(s.loginDeadline); wait >= left {
		wait, expires = max(left, 0), true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.srv.closing:
		return s.fail(mysql.NewError(mysql.ERServerShutdown, mysql.StateGeneral, "Server shutdown in progress"))
	}
	if expires {
		return fmt.Errorf("%w: the login delay (%v) after failures from this address outlasts the handshake timeout", errAuthFailed, d)
	}
	return nil
}

func knownPlugin(p string) bool {
	return p == auth.PluginNative || p == auth.PluginCachingSHA2
}

// cachingSHA2 verifies a caching_sha2_password response: the fast path when
// allowed, else full authentication with the cleartext password over TLS or
// RSA-encrypted over plain TCP.
func (s *Session) cachingSHA2(u *User, host string, resp []byte) (bool, error) {
	// Checked whether or not the fast path is allowed: the same work for
	// every account, cached or not.
	fastOK := u.Stored.VerifySHA2Fast(s.salt[:], resp)
	if fastOK && s.fastAuthAllowed(u) {
		if err := s.pace(host, s.srv.opt.AuthGuard.Delay(host, u.Name)); err != nil {
			return false, err
		}
		if err := s.client.WritePacket([]byte{mysql.HeaderAuthMore, sha2FastAuthOK}); err != nil {
			return false, err
		}
		return true, nil
	}
	if len(resp) == 0 {
		// Empty password: nothing to exchange.
		return fastOK, nil
	}
	password, ok, err := s.fullAuthPassword(host, u.Name)
	if !ok || err != nil {
		return false, err
	}
	if !u.Stored.MatchesPlain(password) || u.unknown {
		return false, nil
	}
	s.srv.sha2Cache.Store(u.Name, struct{}{})
	return true, nil
}

// fullAuthPassword runs caching_sha2_password's full authentication and
// returns the client's cleartext password: sent over TLS, or encrypted
// with the proxy's RSA key over plain TCP. ok is false when the client
// sent none the proxy can read (cleartext over plain TCP, which MySQL
// refuses too; a ciphertext that does not decrypt).
func (s *Session) fullAuthPassword(host, user string) (password []byte, ok bool, err error) {
	// The request for full authentication tells a cached user's client
	// that the fast path failed: the wait comes before it.
	if err := s.pace(host, s.srv.opt.AuthGuard.Delay(host, user)); err != nil {
		return nil, false, err
	}
	if err := s.client.WritePacket([]byte{mysql.HeaderAuthMore, sha2FullAuth}); err != nil {
		return nil, false, err
	}
	if err := s.client.Flush(); err != nil {
		return nil, false, err
	}
	p, err := s.readLogin()
	if err != nil {
		return nil, false, s.readFailedEarly("read full auth", err)
	}
	switch {
	case s.tls:
		return bytes.TrimRight(p, "\x00"), true, nil
	case len(p) == 1 && p[0] == sha2RequestPublicKey:
		if s.srv.opt.RSAKey == nil {
			return nil, false, nil
		}
		if err := s.client.WritePacket(append([]byte{mysql.HeaderAuthMore}, s.srv.pubPEM...)); err != nil {
			return nil, false, err
		}
		if err := s.client.Flush(); err != nil {
			return nil, false, err
		}
		enc, err := s.readLogin()
		if err != nil {
			return nil, false, s.readFailedEarly("read encrypted password", err)
		}
		if password, err = auth.DecryptPassword(enc, s.salt[:], s.srv.opt.RSAKey); err != nil {
			return nil, false, nil
		}
		return password, true, nil
	}
	// A cleartext password over an insecure channel is refused, as
	// MySQL does.
	return nil, false, nil
}

func (s *Session) fastAuthAllowed(u *User) bool {
	switch s.srv.opt.FullAuth {
	case FullAuthAlways:
		return false
	case FullAuthNever:
		return true
	}
	_, cached := s.srv.sha2Cache.Load(u.Name)
	return cached
}

// readLogin reads the client's next packet of the login. Waiting for it
// holds no buffer (WaitInput gives them back while it waits): a client
// may take until the handshake timeout to answer, and a flood of logins
// has thousands waiting at once (2,000 held 64 MB of buffers).
func (s *Session) readLogin() ([]byte, error) {
	if err := s.client.WaitInput(0); err != nil {
		return nil, err
	}
	return s.client.ReadPacket()
}

// readFailedEarly handles a failed read before login. A frame out of
// sequence (garbage, an HTTP request, a port scanner) gets the error the
// server sends, ER_NET_PACKETS_OUT_OF_ORDER, before the close; a client that
// left gets nothing.
func (s *Session) readFailedEarly(what string, err error) error {
	if !errors.Is(err, mysql.ErrPacketsOutOfOrder) {
		return fmt.Errorf("%s: %w", what, err)
	}
	s.logger().Info("refusing a client that does not speak the MySQL protocol", "err", err,
		"hint", "something other than a MySQL client (an HTTP client, a port scanner) connected to the MySQL port")
	return s.fail(errOutOfOrder())
}

// errOutOfOrder is the server's answer to a frame out of sequence.
func errOutOfOrder() *mysql.SQLError {
	return mysql.NewError(mysql.ERNetPacketsOutOfOrder, mysql.StateConnFailure, "Got packets out of order")
}

// denied sends ERR 1045, after the delay the failures of user from the
// client's address earned, and has the failure counted and logged
// (AuthGuard).
func (s *Session) denied(user, host string, usingPassword bool, why string) error {
	s.srv.opt.Metrics.AuthFailures.Inc()
	if err := s.pace(host, s.srv.opt.AuthGuard.Failed(host, user, why)); err != nil {
		return err
	}
	yes := "NO"
	if usingPassword {
		yes = "YES"
	}
	return s.fail(mysql.NewError(mysql.ERAccessDenied, mysql.StateAccessDenied,
		"Access denied for user '%s'@'%s' (using password: %s)", user, host, yes))
}

// fail sends e to the client and returns errAuthFailed.
func (s *Session) fail(e *mysql.SQLError) error {
	_ = s.client.WriteErr(e)
	_ = s.client.Flush()
	return fmt.Errorf("%w: %s", errAuthFailed, e.Message)
}

// clientMaxPacket is the largest packet a logged-in client may send: the
// backend's max_allowed_packet, learnt, or maxClientPacket.
func (s *Server) clientMaxPacket() int {
	if m := s.identity().MaxPacket; m > 0 {
		return m
	}
	return maxClientPacket
}

// afterHandshake sets the limits a logged-in client's packets are read
// under: max_allowed_packet, and net_read_timeout / net_write_timeout for
// a packet in progress.
func (s *Session) afterHandshake(maxPacket int) {
	s.client.MaxPacket = maxPacket
	s.client.ReadTimeout = time.Duration(s.srv.netReadTimeout.Load())
	s.client.WriteTimeout = time.Duration(s.srv.netWriteTimeout.Load())
}
