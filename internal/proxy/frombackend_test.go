package proxy_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/testenv"
)

// fromBackendProxy starts a proxy whose cluster on srv takes logins with
// the server's own accounts (users: from_backend), each verification
// trusted for ttl, with at most maxOpen backend connections per account
// and server.
func fromBackendProxy(t *testing.T, srv *testenv.Server, ttl string, maxOpen int) *proxy.Proxy {
	t.Helper()
	cfg := proxyConfig(t, srv, "    users: from_backend\n    users_cache_ttl: "+ttl+"\n")
	pl := &cfg.Clusters[0].Pool
	pl.MaxOpen, pl.MaxIdle, pl.MinIdle = maxOpen, maxOpen, 0
	return startProxy(t, cfg)
}

// backendLoginErr logs in as user and runs a statement; it returns the error.
func backendLoginErr(t *testing.T, p *proxy.Proxy, user, pass, params string) error {
	t.Helper()
	db := openDB(t, proxyDSN(p, user, pass, "", params))
	defer db.Close()
	var s string
	return db.QueryRow("SELECT CURRENT_USER()").Scan(&s)
}

// mustDeny checks that err is the proxy's access denied: 1045, 28000.
func mustDeny(t *testing.T, what string, err error) {
	t.Helper()
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1045 || string(me.SQLState[:]) != "28000" {
		t.Fatalf("%s: %v, want 1045 (28000) access denied", what, err)
	}
}

// An account created on the backend after the proxy started logs in with
// the backend's password and runs statements under the server's grants,
// on pooled connections logged in as it: several client sessions share at
// most max_open backend connections of the account.
func TestUsersFromBackendLogin(t *testing.T) {
	srv := testenv.Shared(t)
	p := fromBackendProxy(t, srv, "0s", 2)
	srv.Exec(t,
		"DROP USER IF EXISTS fb_alice",
		"DROP DATABASE IF EXISTS fb_db",
		"CREATE DATABASE fb_db",
		"CREATE TABLE fb_db.open_t (id INT PRIMARY KEY)",
		"CREATE TABLE fb_db.secret_t (id INT PRIMARY KEY)",
		"INSERT INTO fb_db.open_t VALUES (1), (2), (3)",
		"CREATE USER fb_alice IDENTIFIED BY 'alice-pw'",
		"GRANT SELECT ON fb_db.open_t TO fb_alice",
	)
	t.Cleanup(func() { _ = srv.ExecE("DROP USER IF EXISTS fb_alice", "DROP DATABASE IF EXISTS fb_db") })

	db := openDB(t, proxyDSN(p, "fb_alice", "alice-pw", "fb_db", ""))
	if got := queryString(t, db, "SELECT CURRENT_USER()"); got != "fb_alice@%" {
		t.Fatalf("CURRENT_USER() = %q, want the backend account fb_alice@%%", got)
	}
	if got := queryString(t, db, "SELECT COUNT(*) FROM open_t"); got != "3" {
		t.Fatalf("COUNT(*) = %s, want 3", got)
	}
	// The server's grants: no SELECT on secret_t, the server's error.
	var n int
	err := db.QueryRow("SELECT COUNT(*) FROM secret_t").Scan(&n)
	if code := mysqlErrCode(err); code != 1142 {
		t.Fatalf("SELECT on a table without the grant: %v, want the server's 1142", err)
	}

	// Pooling: 6 sessions at once, each running statements, over at most
	// 2 backend connections of the account (max_open).
	ctx := context.Background()
	var conns []*sql.Conn
	for range 6 {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	db.SetMaxIdleConns(6)
	for round := range 3 {
		for i, c := range conns {
			if got := queryString(t, c, "SELECT COUNT(*) FROM open_t WHERE id > 0"); got != "3" {
				t.Fatalf("round %d session %d: COUNT(*) = %s", round, i, got)
			}
		}
	}
	backendConns := queryString(t, srv.RootDB(t), "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'fb_alice'")
	if backendConns != "1" && backendConns != "2" {
		t.Fatalf("6 client sessions of fb_alice hold %s backend connections, want 1 or 2 (pooled, max_open 2)", backendConns)
	}
	for _, c := range conns {
		c.Close()
	}

	mustDeny(t, "wrong password", backendLoginErr(t, p, "fb_alice", "not-the-password", ""))
	mustDeny(t, "no such account", backendLoginErr(t, p, "fb_nobody", "x", ""))
	// Over TLS too (full authentication sends the password in the clear
	// inside TLS rather than RSA-encrypted).
	if err := backendLoginErr(t, p, "fb_alice", "alice-pw", "tls=skip-verify"); err != nil {
		t.Fatalf("login over TLS: %v", err)
	}
}

// A password changed on the backend: the old one stops working (at once,
// with users_cache_ttl 0), the new one works; a dropped account cannot
// log in.
func TestUsersFromBackendPasswordChangeAndDrop(t *testing.T) {
	srv := testenv.Shared(t)
	p := fromBackendProxy(t, srv, "0s", 2)
	srv.Exec(t, "DROP USER IF EXISTS fb_bob", "CREATE USER fb_bob IDENTIFIED BY 'old-pw'")
	t.Cleanup(func() { _ = srv.ExecE("DROP USER IF EXISTS fb_bob") })

	for range 2 { // the second login takes the fast path, checked again with the backend
		if err := backendLoginErr(t, p, "fb_bob", "old-pw", ""); err != nil {
			t.Fatalf("login with the password: %v", err)
		}
	}
	srv.Exec(t, "ALTER USER fb_bob IDENTIFIED BY 'new-pw'")
	mustDeny(t, "old password after ALTER USER", backendLoginErr(t, p, "fb_bob", "old-pw", ""))
	if err := backendLoginErr(t, p, "fb_bob", "new-pw", ""); err != nil {
		t.Fatalf("login with the new password: %v", err)
	}
	srv.Exec(t, "DROP USER fb_bob")
	mustDeny(t, "dropped account", backendLoginErr(t, p, "fb_bob", "new-pw", ""))
}

// Within users_cache_ttl a verified password is not checked again: the
// staleness the documentation states. With a long TTL, the old password
// keeps logging in after ALTER USER (from the cache); a password that was
// never verified is checked with the backend at once.
func TestUsersFromBackendCacheBound(t *testing.T) {
	srv := testenv.Shared(t)
	p := fromBackendProxy(t, srv, "1h", 2)
	srv.Exec(t, "DROP USER IF EXISTS fb_carol", "CREATE USER fb_carol IDENTIFIED BY 'old-pw'")
	t.Cleanup(func() { _ = srv.ExecE("DROP USER IF EXISTS fb_carol") })
	if err := backendLoginErr(t, p, "fb_carol", "old-pw", ""); err != nil {
		t.Fatal(err)
	}
	srv.Exec(t, "ALTER USER fb_carol IDENTIFIED BY 'new-pw'")
	if err := backendLoginErr(t, p, "fb_carol", "old-pw", ""); err != nil {
		t.Fatalf("within users_cache_ttl the verified password logs in from the cache: %v", err)
	}
	if err := backendLoginErr(t, p, "fb_carol", "new-pw", ""); err != nil {
		t.Fatalf("the new password, checked with the backend: %v", err)
	}
	// The new password replaced the old one, whose pools closed: the old
	// one is checked with the backend again, which refuses it.
	mustDeny(t, "old password once the new one was verified", backendLoginErr(t, p, "fb_carol", "old-pw", ""))
}

// A configured user with the name of a backend account keeps its
// configured password.
func TestUsersFromBackendConfiguredFirst(t *testing.T) {
	srv := testenv.Shared(t)
	p := fromBackendProxy(t, srv, "0s", 2)
	srv.Exec(t, "DROP USER IF EXISTS "+appUser, "CREATE USER "+appUser+" IDENTIFIED BY 'backend-pw'")
	t.Cleanup(func() { _ = srv.ExecE("DROP USER IF EXISTS " + appUser) })
	if err := backendLoginErr(t, p, appUser, appPass, ""); err != nil {
		t.Fatalf("configured password: %v", err)
	}
	mustDeny(t, "the backend account's password for a configured user", backendLoginErr(t, p, appUser, "backend-pw", ""))
}

// An account with MariaDB's ed25519 plugin logs in (the proxy signs the
// backend's challenge with the client's password), through go-sql-driver
// and the mariadb CLI (TLS and RSA).
func TestUsersFromBackendEd25519(t *testing.T) {
	srv := testenv.Shared(t)
	p := fromBackendProxy(t, srv, "0s", 2)
	srv.Exec(t,
		"INSTALL PLUGIN IF NOT EXISTS ed25519 SONAME 'auth_ed25519'",
		"DROP USER IF EXISTS fb_ed",
		"CREATE USER fb_ed IDENTIFIED VIA ed25519 USING PASSWORD('ed-pw')",
	)
	t.Cleanup(func() { _ = srv.ExecE("DROP USER IF EXISTS fb_ed") })
	var plugin string
	if err := srv.RootDB(t).QueryRow("SELECT plugin FROM mysql.user WHERE user = 'fb_ed'").Scan(&plugin); err != nil || plugin != "ed25519" {
		t.Fatalf("fb_ed's plugin %q (%v), want ed25519", plugin, err)
	}
	db := openDB(t, proxyDSN(p, "fb_ed", "ed-pw", "", ""))
	if got := queryString(t, db, "SELECT CURRENT_USER()"); got != "fb_ed@%" {
		t.Fatalf("CURRENT_USER() = %q", got)
	}
	mustDeny(t, "ed25519 account, wrong password", backendLoginErr(t, p, "fb_ed", "wrong", ""))

	bin := clientsBinary(t, "mariadb")
	tg := clientsProxyTarget(t, p)
	tg.user, tg.pass = "fb_ed", "ed-pw"
	for _, mode := range [][]string{clientsTLS, clientsNoTLS} {
		r := clientsMariaDB(t, bin, tg, "", mode, "SELECT CURRENT_USER()")
		if r.exitCode != 0 || strings.TrimSpace(r.stdout) != "fb_ed@%" {
			t.Fatalf("mariadb CLI %v as fb_ed:\n%s", mode, r)
		}
	}
	tg.pass = "wrong"
	r := clientsMariaDB(t, bin, tg, "", clientsTLS, "SELECT 1")
	if r.exitCode == 0 || !strings.Contains(r.stderr, "1045") {
		t.Fatalf("mariadb CLI with a wrong password:\n%s", r)
	}
}

// The accounts cluster's writer down during a login: a clear error that
// is not access denied.
func TestUsersFromBackendServerDown(t *testing.T) {
	srv := testenv.Shared(t)
	cfg := proxyConfig(t, srv, "    users: from_backend\n")
	cfg.Clusters[0].Primary.Address = "127.0.0.1:1" // nothing listens
	cfg.Clusters[0].Pool.MinIdle = 0
	p := startProxy(t, cfg)
	start := time.Now()
	err := backendLoginErr(t, p, "fb_anyone", "pw", "")
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 9001 || !strings.Contains(me.Message, "cannot check the login") {
		t.Fatalf("login with the backend down: %v, want 9001 naming the check", err)
	}
	if time.Since(start) > time.Minute {
		t.Fatalf("the refusal took %v", time.Since(start))
	}
}
