package proxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/mysql/auth"
	"github.com/shardgate/shardgate/internal/testenv"
)

// TestConnectionIDColumns: the proxy answers CONNECTION_ID() with its own
// connection id, in the column the server would have returned: the same
// name (the expression as written, or the alias) and type.
func TestConnectionIDColumns(t *testing.T) {
	srv := testenv.Shared(t)
	p := startProxy(t, proxyConfig(t, srv, ""))
	direct := oneConn(t, openDB(t, srv.DSN("")))
	proxied := oneConn(t, openDB(t, proxyDSN(p, appUser, appPass, "", "")))
	proxyID := queryString(t, proxied, "SELECT CONNECTION_ID()")
	for _, q := range []string{
		"SELECT CONNECTION_ID()",
		"select connection_id()",
		"SELECT CONNECTION_ID( )",
		"SELECT CONNECTION_ID() + 0",
		"SELECT CONNECTION_ID() AS id",
		"SELECT CONNECTION_ID() id",
		"SELECT 1, /* c */ CONNECTION_ID() FROM dual",
		"SELECT (SELECT CONNECTION_ID())",
		"SELECT DISTINCT CONNECTION_ID() FROM dual WHERE CONNECTION_ID() > 0",
		"SELECT /* a */ CONNECTION_ID() /* b */ + 0 /* c */, /* d */ CONNECTION_ID() -- e\n",
		"SELECT 1 /*!50000 , CONNECTION_ID() */",
		"SELECT CONNECTION_ID() UNION SELECT CONNECTION_ID()",
	} {
		want, _ := columnsOf(t, direct, q)
		got, vals := columnsOf(t, proxied, q)
		if got != want {
			t.Errorf("%s: columns through the proxy %s, direct %s", q, got, want)
		}
		if last := vals[len(vals)-1]; last != proxyID {
			t.Errorf("%s: got %s, want the proxy's connection id %s", q, last, proxyID)
		}
	}
}

// columnsOf runs q and describes its columns (name, type, Go scan type) and
// returns the values of its first row.
func columnsOf(t *testing.T, conn *sql.Conn, q string) (string, []string) {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var desc []string
	for _, ct := range types {
		nullable, _ := ct.Nullable()
		desc = append(desc, fmt.Sprintf("%q %s %v null=%v", ct.Name(), ct.DatabaseTypeName(), ct.ScanType(), nullable))
	}
	if !rows.Next() {
		t.Fatalf("%s: no row (%v)", q, rows.Err())
	}
	vals, err := scanNullStrings(rows, len(types))
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = v.String
	}
	return "[" + strings.Join(desc, ", ") + "]", out
}

// greetingOf connects to addr and returns its greeting.
func greetingOf(t *testing.T, addr string) *mysql.Greeting {
	t.Helper()
	cl := mfDial(t, addr)
	cl.mustGreeting(t)
	cl.close()
	return cl.g
}

// TestGreetingFollowsBackend: in front of MariaDB the proxy greets clients
// as MariaDB does: its version string and mysql_native_password, not
// caching_sha2_password, which MariaDB does not have. The configuration
// overrides both.
func TestGreetingFollowsBackend(t *testing.T) {
	srv := testenv.Shared(t)
	direct := greetingOf(t, srv.Addr)
	if direct.AuthPlugin != auth.PluginNative {
		t.Fatalf("MariaDB proposes %q; the test expects mysql_native_password", direct.AuthPlugin)
	}
	p := startProxy(t, proxyConfig(t, srv, ""))
	if g := greetingOf(t, p.Addrs()[0]); g.ServerVersion != direct.ServerVersion || g.AuthPlugin != direct.AuthPlugin {
		t.Errorf("proxy greets with %q and %s, MariaDB with %q and %s", g.ServerVersion, g.AuthPlugin, direct.ServerVersion, direct.AuthPlugin)
	}
	// Clients log in with either plugin whatever the greeting says.
	if got := queryString(t, openDB(t, proxyDSN(p, appUser, appPass, "", "")), "SELECT 1"); got != "1" {
		t.Fatalf("login: SELECT 1 = %q", got)
	}

	cfg := proxyConfig(t, srv, "")
	cfg.Server.Version, cfg.Server.DefaultAuthPlugin = "8.0.99-configured", auth.PluginCachingSHA2
	p = startProxy(t, cfg)
	if g := greetingOf(t, p.Addrs()[0]); g.ServerVersion != "8.0.99-configured" || g.AuthPlugin != auth.PluginCachingSHA2 {
		t.Errorf("configured: proxy greets with %q and %s", g.ServerVersion, g.AuthPlugin)
	}
}

// TestIdentityLearntOnceReachable: a primary that is down when the proxy
// starts does not leave the proxy advertising a generic version forever:
// once the health checks see it up, new clients get its version, and
// handshake character sets its collation table knows.
func TestIdentityLearntOnceReachable(t *testing.T) {
	srv := testenv.Start(t, testenv.Options{})
	direct := greetingOf(t, srv.Addr)
	if err := srv.Halt(); err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, proxyConfig(t, srv, "    health:\n      interval: 100ms\n"))
	addr := p.Addrs()[0]
	if g := greetingOf(t, addr); g.ServerVersion == direct.ServerVersion || g.AuthPlugin != auth.PluginNative {
		t.Fatalf("primary down: proxy greets with %q and %s, want a generic version and mysql_native_password", g.ServerVersion, g.AuthPlugin)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the proxy to advertise the primary's version", 20*time.Second, func() bool {
		return greetingOf(t, addr).ServerVersion == direct.ServerVersion
	})
	if g := greetingOf(t, addr); g.AuthPlugin != direct.AuthPlugin {
		t.Errorf("proxy proposes %s, MariaDB %s", g.AuthPlugin, direct.AuthPlugin)
	}
	// latin1_general_ci (48) is not in the built-in table.
	const latin1GeneralCI = 48
	want := collationAfterLogin(t, srv.Addr, latin1GeneralCI)
	if got := collationAfterLogin(t, addr, latin1GeneralCI); got != want || want != "latin1_general_ci" {
		t.Errorf("handshake collation 48: @@collation_connection %q through the proxy, %q on the server", got, want)
	}
}

// collationAfterLogin logs in to addr with a handshake character set and
// returns @@collation_connection.
func collationAfterLogin(t *testing.T, addr string, charset byte) string {
	t.Helper()
	cl := mfDial(t, addr)
	cl.mustGreeting(t)
	cl.writePacket(1, mysql.AppendHandshakeResponse(nil, &mysql.HandshakeResponse{
		Capabilities: mfCaps, MaxPacket: 1 << 24, Charset: charset, User: testenv.User,
		AuthResponse: auth.NativeScramble([]byte(testenv.Password), cl.g.AuthData), AuthPlugin: auth.PluginNative,
	}))
	if p, err := cl.c.ReadPacket(); err != nil || !mysql.IsOK(p) {
		t.Fatalf("login to %s with charset %d: %x, %v", addr, charset, p, err)
	}
	cl.writePacket(0, append([]byte{mysql.ComQuery}, "SELECT @@collation_connection"...))
	res, err := cl.readResult()
	if err != nil || res.err != nil || len(res.rows) != 1 {
		t.Fatalf("SELECT @@collation_connection on %s: %+v, %v", addr, res, err)
	}
	cl.close()
	return res.rows[0][0]
}
