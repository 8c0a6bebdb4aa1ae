package testenv_test

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shardgate/shardgate/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

func queryOne(ctx context.Context, db *sql.DB, q string) (string, error) {
	var s string
	err := db.QueryRowContext(ctx, q).Scan(&s)
	return s, err
}

func openDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestKillRestart(t *testing.T) {
	t.Parallel()
	srv := testenv.Start(t, testenv.Options{})
	ctx := context.Background()

	if !strings.HasPrefix(srv.Addr, "127.0.0.1:") || srv.Port == 0 {
		t.Fatalf("bad address %q / port %d", srv.Addr, srv.Port)
	}
	if srv.User != testenv.User || srv.Password != testenv.Password {
		t.Fatalf("credentials = %q/%q", srv.User, srv.Password)
	}

	srv.Exec(t,
		"CREATE DATABASE kr",
		"USE kr",
		"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB",
		"INSERT INTO t VALUES (1, 'one')",
	)

	db := openDB(t, srv.DSN("kr"))
	if got, err := queryOne(ctx, db, "SELECT CURRENT_USER()"); err != nil || got != "shardgate@%" {
		t.Fatalf("CURRENT_USER() = %q, %v", got, err)
	}
	if got, err := queryOne(ctx, db, "SELECT v FROM t WHERE id = 1"); err != nil || got != "one" {
		t.Fatalf("SELECT v = %q, %v", got, err)
	}

	// Root over TCP needs the password.
	rootTCP := openDB(t, srv.RootDSN(""))
	if got, err := queryOne(ctx, rootTCP, "SELECT CURRENT_USER()"); err != nil || got != "root@127.0.0.1" {
		t.Fatalf("root over TCP: CURRENT_USER() = %q, %v", got, err)
	}
	noPw := openDB(t, "root@tcp("+srv.Addr+")/")
	if err := noPw.PingContext(ctx); err == nil {
		t.Fatal("root over TCP without password was accepted")
	}

	// Queries fail while the server is down, whichever way it went down.
	var err error
	pid := srv.Pid()
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if srv.Running() || srv.Pid() != 0 {
		t.Fatal("still running after Kill")
	}
	if _, err := os.Stat(srv.DataDir); err != nil {
		t.Fatalf("datadir gone after Kill: %v", err)
	}
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err = queryOne(qctx, db, "SELECT v FROM t WHERE id = 1")
	cancel()
	if err == nil {
		t.Fatal("query succeeded while the server is killed")
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if srv.Pid() == 0 || srv.Pid() == pid {
		t.Fatalf("pid after restart = %d (before %d)", srv.Pid(), pid)
	}
	// The committed row survived the crash; the old pool reconnects.
	if got, err := queryOne(ctx, db, "SELECT v FROM t WHERE id = 1"); err != nil || got != "one" {
		t.Fatalf("after restart: SELECT v = %q, %v", got, err)
	}

	// A clean Halt + Restart also works, and Stop removes the datadir.
	if err := srv.Halt(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	root := srv.RootDB(t)
	if got, err := queryOne(ctx, root, "SELECT COUNT(*) FROM kr.t"); err != nil || got != "1" {
		t.Fatalf("after second restart: count = %q, %v", got, err)
	}
	root.Close()

	// Restart keeps the port; it waits while someone else briefly holds it.
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", srv.Addr)
	if err != nil {
		t.Fatalf("port not free after Kill: %v", err)
	}
	time.AfterFunc(700*time.Millisecond, func() { l.Close() })
	if err := srv.Restart(); err != nil {
		t.Fatalf("Restart with port briefly taken: %v", err)
	}
	if got, err := queryOne(ctx, db, "SELECT v FROM t WHERE id = 1"); err != nil || got != "one" {
		t.Fatalf("after third restart: SELECT v = %q, %v", got, err)
	}

	db.Close()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(srv.DataDir); !os.IsNotExist(err) {
		t.Fatalf("datadir still there after Stop: %v", err)
	}
	if err := srv.Restart(); err == nil {
		t.Fatal("Restart after Stop succeeded")
	}
	if err := srv.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestTLS(t *testing.T) {
	t.Parallel()
	srv := testenv.Start(t, testenv.Options{TLS: true})
	if srv.CAFile == "" {
		t.Fatal("CAFile empty")
	}
	if _, err := os.Stat(srv.CAFile); err != nil {
		t.Fatal(err)
	}
	if err := mysql.RegisterTLSConfig("custom", srv.TLSConfig()); err != nil {
		t.Fatal(err)
	}
	db := openDB(t, srv.DSN("")+"&tls=custom")
	var name, cipher string
	if err := db.QueryRow("SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&name, &cipher); err != nil {
		t.Fatal(err)
	}
	if cipher == "" {
		t.Fatal("connection is not encrypted")
	}
	var version string
	if err := db.QueryRow("SHOW SESSION STATUS LIKE 'Ssl_version'").Scan(&name, &version); err != nil {
		t.Fatal(err)
	}
	t.Logf("TLS: %s %s", version, cipher)
}

func TestOptions(t *testing.T) {
	t.Parallel()
	srv := testenv.Start(t, testenv.Options{LogBin: true, ServerID: 42, ExtraArgs: []string{"--binlog-format=ROW"}})
	root := srv.RootDB(t)
	var logBin, serverID, format string
	if err := root.QueryRow("SELECT @@log_bin, @@server_id, @@binlog_format").Scan(&logBin, &serverID, &format); err != nil {
		t.Fatal(err)
	}
	if logBin != "1" || serverID != "42" || format != "ROW" {
		t.Fatalf("log_bin=%s server_id=%s binlog_format=%s", logBin, serverID, format)
	}
}

func TestShared(t *testing.T) {
	t.Parallel()
	srvs := []*testenv.Server{testenv.Shared(t), testenv.Shared(t)}
	for _, s := range srvs[1:] {
		if s != srvs[0] {
			t.Fatal("Shared returned different servers")
		}
	}
	db := openDB(t, srvs[0].DSN(""))
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(srvs[0].Socket) != srvs[0].DataDir {
		t.Fatalf("socket %s not in datadir %s", srvs[0].Socket, srvs[0].DataDir)
	}
}

func TestStartFailureShowsLog(t *testing.T) {
	t.Parallel()
	srv, err := testenv.StartE(testenv.Options{ExtraArgs: []string{"--no-such-option-xyz"}})
	if err == nil {
		srv.Stop()
		t.Fatal("StartE with a bad option succeeded")
	}
	if errors.Is(err, testenv.ErrNotInstalled) {
		t.Fatalf("unexpected ErrNotInstalled: %v", err)
	}
	if !strings.Contains(err.Error(), "no-such-option-xyz") {
		t.Fatalf("error does not include the error log: %v", err)
	}
}
