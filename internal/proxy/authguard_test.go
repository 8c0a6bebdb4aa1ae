package proxy_test

import (
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/mysql/auth"
	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/testenv"
)

// authTrace logs in over a raw socket as user with password, proposing
// plugin in the handshake response, and answers the proxy the way client
// libraries do: an auth switch with the scramble for the plugin asked for,
// caching_sha2 full authentication with the password over TLS or
// RSA-encrypted after asking for the public key. It returns the proxy's
// replies in order, the user name in an error message replaced by <user>.
func authTrace(t *testing.T, addr, user, password, plugin string, useTLS bool) []string {
	t.Helper()
	cl := mfDial(t, addr)
	// Longer than the proxy's handshake timeout, which ends long delays.
	_ = cl.nc.SetDeadline(time.Now().Add(20 * time.Second))
	cl.mustGreeting(t)
	salt := cl.g.AuthData
	seq := byte(1)
	caps := mfCaps
	if useTLS {
		caps |= mysql.ClientSSL
		cl.writePacket(seq, mysql.AppendSSLRequest(nil, caps, 1<<24, mysql.CollationUTF8MB4GeneralCI))
		var tc *tls.Conn
		cl.c.Upgrade(func(nc net.Conn) net.Conn {
			tc = tls.Client(nc, &tls.Config{InsecureSkipVerify: true})
			return tc
		})
		if err := tc.Handshake(); err != nil {
			t.Fatalf("TLS handshake: %v", err)
		}
		seq++
	}
	scramble := func(plugin string, salt []byte) []byte {
		if plugin == auth.PluginCachingSHA2 {
			return auth.SHA2Scramble([]byte(password), salt)
		}
		return auth.NativeScramble([]byte(password), salt)
	}
	cl.writePacket(seq, mysql.AppendHandshakeResponse(nil, &mysql.HandshakeResponse{
		Capabilities: caps, MaxPacket: 1 << 24, Charset: mysql.CollationUTF8MB4GeneralCI, User: user,
		AuthResponse: scramble(plugin, salt), AuthPlugin: plugin,
	}))
	var replies []string
	for len(replies) < 10 {
		p, err := cl.c.ReadPacket()
		if err != nil {
			return append(replies, "read error: "+err.Error())
		}
		switch {
		case mysql.IsOK(p):
			return append(replies, "OK")
		case mysql.IsErr(p):
			e := mysql.ParseErr(p)
			msg := strings.Replace(e.Message, "'"+user+"'@", "'<user>'@", 1)
			return append(replies, fmt.Sprintf("ERR %d %s %s", e.Code, e.State, msg))
		case p[0] == mysql.HeaderAuthSwitch:
			name, data, err := mysql.ParseAuthSwitch(p)
			if err != nil {
				t.Fatalf("auth switch %x: %v", p, err)
			}
			replies = append(replies, "auth switch to "+name)
			salt = data
			cl.writePacket(cl.c.Seq(), scramble(name, salt))
		case p[0] == mysql.HeaderAuthMore && len(p) == 2 && p[1] == 0x03:
			replies = append(replies, "AuthMoreData fast auth OK")
		case p[0] == mysql.HeaderAuthMore && len(p) == 2 && p[1] == 0x04:
			replies = append(replies, "AuthMoreData full authentication")
			if useTLS {
				cl.writePacket(cl.c.Seq(), append([]byte(password), 0))
				continue
			}
			cl.writePacket(cl.c.Seq(), []byte{0x02}) // request the public key
		case p[0] == mysql.HeaderAuthMore:
			pub, err := auth.ParsePublicKeyPEM(p[1:])
			if err != nil {
				return append(replies, fmt.Sprintf("AuthMoreData %x", p[1:]))
			}
			replies = append(replies, "AuthMoreData public key")
			enc, err := auth.EncryptPassword([]byte(password), salt, pub)
			if err != nil {
				t.Fatal(err)
			}
			cl.writePacket(cl.c.Seq(), enc)
		default:
			return append(replies, fmt.Sprintf("unexpected %x", p))
		}
	}
	return append(replies, "too many packets")
}

// authGuardConfig is proxyConfig with the login failure delay set (threshold
// 0: off) and a user with only MySQL's native hash.
func authGuardConfig(t *testing.T, srv *testenv.Server, threshold int, minDelay, maxDelay time.Duration) *config.Config {
	t.Helper()
	cfg := proxyConfig(t, srv, "")
	cfg.Server.AuthFailureDelay = config.AuthFailureDelay{Threshold: threshold, MinDelay: minDelay, MaxDelay: maxDelay}
	addLegacyUser(t, cfg, "")
	return cfg
}

// TestUnknownUserLooksLikeWrongPassword checks that the proxy's replies do
// not tell which accounts exist: a login as an unknown user goes through
// the same auth switches, caching_sha2 requests and RSA key exchange as a
// wrong password for a real account, and ends with the same error, for
// either default plugin, either plugin proposed by the client, with and
// without TLS, before and after the account passed full authentication
// (caching_sha2 fast-auth cache).
func TestUnknownUserLooksLikeWrongPassword(t *testing.T) {
	srv := testenv.Shared(t)
	for _, defaultPlugin := range []string{auth.PluginNative, auth.PluginCachingSHA2} {
		t.Run(defaultPlugin, func(t *testing.T) {
			cfg := authGuardConfig(t, srv, 0, 0, 0)
			cfg.Server.DefaultAuthPlugin = defaultPlugin
			cfg.Server.CachingSHA2FullAuth = "first_login"
			p := startProxy(t, cfg)
			addr := p.Addrs()[0]
			compare := func(t *testing.T, cache string) {
				// sha256_password: a plugin the proxy does not offer, which it
				// answers with an auth switch.
				for _, plugin := range []string{auth.PluginNative, auth.PluginCachingSHA2, "sha256_password"} {
					for _, useTLS := range []bool{false, true} {
						for _, pass := range []string{"wrong", ""} {
							what := fmt.Sprintf("%s, client proposes %s, TLS %v, password %q", cache, plugin, useTLS, pass)
							unknown := authTrace(t, addr, "nobody", pass, plugin, useTLS)
							for _, user := range []string{appUser, "legacy"} {
								known := authTrace(t, addr, user, pass, plugin, useTLS)
								if strings.Join(known, "\n") != strings.Join(unknown, "\n") {
									t.Errorf("%s: %s answered\n\t%s\nbut an unknown user\n\t%s",
										what, user, strings.Join(known, "\n\t"), strings.Join(unknown, "\n\t"))
								}
							}
							if !strings.HasPrefix(unknown[len(unknown)-1], "ERR 1045 28000 Access denied for user '<user>'@'127.0.0.1' (using password: ") {
								t.Errorf("%s: unknown user: %q", what, unknown)
							}
						}
					}
				}
			}
			compare(t, "not cached")
			// Full authentication puts the accounts in the fast-auth cache;
			// the trace client must log in with the right password too.
			for _, useTLS := range []bool{false, true} {
				for _, user := range []struct{ name, pass string }{{appUser, appPass}, {"legacy", "password"}} {
					if got := authTrace(t, addr, user.name, user.pass, auth.PluginCachingSHA2, useTLS); got[len(got)-1] != "OK" {
						t.Fatalf("%s with the right password (TLS %v): %q", user.name, useTLS, got)
					}
				}
			}
			if got := authTrace(t, addr, appUser, appPass, auth.PluginCachingSHA2, false); strings.Join(got, ",") != "AuthMoreData fast auth OK,OK" &&
				defaultPlugin == auth.PluginCachingSHA2 {
				t.Fatalf("cached user: %q, want the fast path", got)
			}
			compare(t, "cached")
		})
	}
}

// authAttempt logs in as user with mysql_native_password and returns how
// long the proxy took to answer and whether it let the client in.
func authAttempt(t *testing.T, p *proxy.Proxy, user, password string) (time.Duration, bool) {
	t.Helper()
	start := time.Now()
	got := authTrace(t, p.Addrs()[0], user, password, auth.PluginNative, false)
	took := time.Since(start)
	last := got[len(got)-1]
	if last != "OK" && !strings.HasPrefix(last, "ERR 1045 ") {
		t.Fatalf("login as %s: %q", user, got)
	}
	return took, last == "OK"
}

// TestAuthFailureDelay checks server.auth_failure_delay: after threshold
// consecutive failures of a user name from an address, each login as it
// from there (a right password too) is answered min_delay later per
// failure over the threshold, and a success resets the count; another
// user name from the same address is not delayed (issue 23: a flood of
// wrong passwords made a legitimate user from the flood's address time
// out); reloading the keys applies them live.
func TestAuthFailureDelay(t *testing.T) {
	srv := testenv.Shared(t)
	const minDelay = 150 * time.Millisecond
	// max_delay is also how long a count lasts without a failure: long
	// enough for the attempts between two of appUser's on a busy machine.
	cfg := authGuardConfig(t, srv, 3, minDelay, 3*time.Second)
	p := startProxy(t, cfg)
	fast := minDelay / 2
	for i := 1; i <= 3; i++ {
		if took, _ := authAttempt(t, p, appUser, "wrong"); took >= fast {
			t.Fatalf("failure %d of the threshold answered after %v", i, took)
		}
	}
	// The 4th attempt waits min_delay, the 5th twice that.
	if took, _ := authAttempt(t, p, appUser, "wrong"); took < minDelay {
		t.Fatalf("4th failed attempt answered after %v, want >= %v", took, minDelay)
	}
	// Another user from the same address is answered at once, with a
	// right password and a wrong one; an unknown user counts as a name
	// of its own, as a known one does.
	if took, ok := authAttempt(t, p, "legacy", "password"); !ok || took >= fast {
		t.Fatalf("another user's right password after 4 failures of %s: ok %v after %v, want ok at once", appUser, ok, took)
	}
	for i := 1; i <= 3; i++ {
		if took, _ := authAttempt(t, p, "nobody", "wrong"); took >= fast {
			t.Fatalf("failure %d of an unknown user after 4 failures of %s answered after %v, want at once", i, appUser, took)
		}
	}
	if took, _ := authAttempt(t, p, "nobody", "wrong"); took < minDelay {
		t.Fatalf("4th failure of an unknown user answered after %v, want >= %v", took, minDelay)
	}
	if took, _ := authAttempt(t, p, appUser, "wrong"); took < 2*minDelay {
		t.Fatalf("5th failed attempt answered after %v, want >= %v", took, 2*minDelay)
	}
	if n := metricValue(t, p, "shardgate_client_auth_delayed_addresses"); n != 2 {
		t.Errorf("shardgate_client_auth_delayed_addresses = %v, want 2 (%s and nobody at 127.0.0.1)", n, appUser)
	}
	// The right password waits too (else the quick answer would tell it),
	// then resets the count.
	took, ok := authAttempt(t, p, appUser, appPass)
	if !ok || took < 3*minDelay {
		t.Fatalf("right password after 5 failures: ok %v after %v, want ok after >= %v", ok, took, 3*minDelay)
	}
	if took, _ := authAttempt(t, p, appUser, "wrong"); took >= fast {
		t.Fatalf("failure after a success answered after %v: the success did not reset the count", took)
	}
	if n := metricValue(t, p, "shardgate_client_auth_delayed_total"); n != 4 {
		t.Errorf("shardgate_client_auth_delayed_total = %v, want 4", n)
	}
	if n := metricValue(t, p, "shardgate_client_auth_delayed_addresses"); n != 1 {
		t.Errorf("shardgate_client_auth_delayed_addresses = %v after a success, want 1 (nobody)", n)
	}

	// Live reload: off, then on with a threshold the count has passed.
	off := *cfg
	off.Server.AuthFailureDelay.Threshold = 0
	if _, err := p.Reload(&off); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		if took, _ := authAttempt(t, p, appUser, "wrong"); took >= fast {
			t.Fatalf("delay off: a failure answered after %v", took)
		}
	}
	on := *cfg
	on.Server.AuthFailureDelay.MinDelay = 2 * minDelay
	if _, err := p.Reload(&on); err != nil {
		t.Fatal(err)
	}
	// 5 consecutive failures now: (5-3+1) * 2 * min_delay.
	if took, _ := authAttempt(t, p, appUser, "wrong"); took < 6*minDelay {
		t.Fatalf("after reloading min_delay %v: 6th failure answered after %v, want >= %v", 2*minDelay, took, 6*minDelay)
	}
}

// TestAuthFailureDelayEndsAtHandshakeTimeout checks that a delay longer than
// the handshake timeout (10s) closes the connection at the timeout without
// an answer, on the session's own goroutine, and that COM_CHANGE_USER
// failures count too.
func TestAuthFailureDelayEndsAtHandshakeTimeout(t *testing.T) {
	srv := testenv.Shared(t)
	p := startProxy(t, authGuardConfig(t, srv, 1, time.Minute, time.Hour))
	cl := mfDial(t, p.Addrs()[0])
	cl.mustLogin(t)
	cl.writePacket(0, changeUserPacket(appUser, "wrong", cl.g.AuthData))
	if e := cl.expectErr(t); e.Code != mysql.ERAccessDenied {
		t.Fatalf("COM_CHANGE_USER with a wrong password: %v", e)
	}
	start := time.Now()
	got := authTrace(t, p.Addrs()[0], appUser, appPass, auth.PluginNative, false)
	took := time.Since(start)
	if len(got) != 1 || !strings.HasPrefix(got[0], "read error: ") || !strings.Contains(got[0], "EOF") {
		t.Fatalf("login delayed past the handshake timeout: %q, want the connection closed without an answer", got)
	}
	if took < 9*time.Second || took > 12*time.Second {
		t.Fatalf("delayed login closed after %v, want at the 10s handshake timeout", took)
	}
}

// changeUserPacket is COM_CHANGE_USER to user with a mysql_native_password
// response to salt.
func changeUserPacket(user, password string, salt []byte) []byte {
	b := append([]byte{mysql.ComChangeUser}, user...)
	resp := auth.NativeScramble([]byte(password), salt)
	b = append(append(b, 0, byte(len(resp))), resp...)
	b = append(b, 0) // database
	b = binary.LittleEndian.AppendUint16(b, uint16(mysql.CollationUTF8MB4GeneralCI))
	return append(append(b, auth.PluginNative...), 0)
}

// metricValue reads one unlabelled metric of the proxy.
func metricValue(t *testing.T, p *proxy.Proxy, name string) float64 {
	t.Helper()
	for _, line := range strings.Split(scrapeMetrics(t, p), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %q: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestAuthFailureLogVolume checks that failed logins do not write a log
// line each: 200 failures from one address give the first at once and
// then at most a line per interval.
func TestAuthFailureLogVolume(t *testing.T) {
	srv := testenv.Shared(t)
	p, logs := startProxyLogged(t, authGuardConfig(t, srv, 0, 0, 0))
	for i := 0; i < 200; i++ {
		user := appUser
		if i%2 == 1 {
			user = fmt.Sprintf("guess%d", i%7)
		}
		authAttempt(t, p, user, "wrong")
	}
	var lines []map[string]any
	for _, r := range logs.records(t, "") {
		if msg, _ := r["msg"].(string); strings.HasPrefix(msg, "client authentication fail") {
			lines = append(lines, r)
		}
	}
	if len(lines) == 0 || len(lines) > 2 {
		t.Fatalf("200 failed logins wrote %d log lines, want 1 or 2 (the first, then one per 10s)", len(lines))
	}
	if first := lines[0]; first["user"] != appUser || first["client"] != "127.0.0.1" || first["reason"] != "wrong password" {
		t.Errorf("first failure logged as %v", first)
	}
	if n := metricValue(t, p, "shardgate_client_auth_failures_total"); n != 200 {
		t.Errorf("shardgate_client_auth_failures_total = %v, want 200", n)
	}
}
