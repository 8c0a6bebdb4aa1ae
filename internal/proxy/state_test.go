package proxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
)

func singleConnProxy(t *testing.T) (*testenv.Server, string) {
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS st1", "CREATE DATABASE IF NOT EXISTS st2",
		"CREATE TABLE IF NOT EXISTS st1.ai (id INT AUTO_INCREMENT PRIMARY KEY, v INT)",
		"CREATE TABLE IF NOT EXISTS st1.tx (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
	cfg := proxyConfig(t, srv, "")
	cfg.Clusters[0].Pool.MaxOpen, cfg.Clusters[0].Pool.MaxIdle, cfg.Clusters[0].Pool.MinIdle = 1, 1, 1
	p := startProxy(t, cfg)
	return srv, proxyDSN(p, appUser, appPass, "st1", "")
}

func TestSessionVariablesDoNotLeak(t *testing.T) {
	_, dsn := singleConnProxy(t)
	db := openDB(t, dsn)
	a, b := oneConn(t, db), oneConn(t, db)
	ctx := context.Background()
	defMode := queryString(t, b, "SELECT @@session.sql_mode")
	defTZ := queryString(t, b, "SELECT @@session.time_zone")
	mustExec(t, a, "SET SESSION sql_mode='ANSI_QUOTES'", "SET time_zone='+05:00'", "SET NAMES latin1",
		"SET SESSION sort_buffer_size=1048576", "SET @@session.autocommit=1")
	for i := 0; i < 3; i++ {
		if got := queryString(t, b, "SELECT @@session.sql_mode"); got != defMode {
			t.Fatalf("b sees sql_mode %q, want default %q", got, defMode)
		}
		if got := queryString(t, b, "SELECT @@session.time_zone"); got != defTZ {
			t.Fatalf("b sees time_zone %q", got)
		}
		if got := queryString(t, b, "SELECT @@session.character_set_client"); got != "utf8mb4" {
			t.Fatalf("b sees character_set_client %q", got)
		}
		if got := queryString(t, a, "SELECT @@session.sql_mode"); got != "ANSI_QUOTES" {
			t.Fatalf("a lost sql_mode: %q", got)
		}
		if got := queryString(t, a, "SELECT @@session.time_zone"); got != "+05:00" {
			t.Fatalf("a lost time_zone: %q", got)
		}
		if got := queryString(t, a, "SELECT @@session.character_set_results"); got != "latin1" {
			t.Fatalf("a lost character_set_results: %q", got)
		}
		if got := queryString(t, a, "SELECT @@session.sort_buffer_size"); got != "1048576" {
			t.Fatalf("a lost sort_buffer_size: %q", got)
		}
	}
	// Back to default on a: b's view and a's view agree again.
	mustExec(t, a, "SET SESSION sql_mode=DEFAULT")
	if got := queryString(t, a, "SELECT @@session.sql_mode"); got != defMode {
		t.Fatalf("a after DEFAULT: %q want %q", got, defMode)
	}
	_ = ctx
}

func TestCurrentDatabaseFollowsSession(t *testing.T) {
	_, dsn := singleConnProxy(t)
	db := openDB(t, dsn)
	a, b := oneConn(t, db), oneConn(t, db)
	mustExec(t, a, "USE st2")
	for i := 0; i < 3; i++ {
		if got := queryString(t, a, "SELECT DATABASE()"); got != "st2" {
			t.Fatalf("a: %q", got)
		}
		if got := queryString(t, b, "SELECT DATABASE()"); got != "st1" {
			t.Fatalf("b: %q", got)
		}
	}
	if _, err := a.ExecContext(context.Background(), "USE no_such_db"); mysqlErrCode(err) != 1049 {
		t.Fatalf("USE unknown db: %v", err)
	}
	if got := queryString(t, a, "SELECT DATABASE()"); got != "st2" {
		t.Fatalf("a after failed USE: %q", got)
	}
}

func TestLastInsertIDPerSession(t *testing.T) {
	_, dsn := singleConnProxy(t)
	db := openDB(t, dsn)
	a, b := oneConn(t, db), oneConn(t, db)
	ctx := context.Background()
	ra, err := a.ExecContext(ctx, "INSERT INTO ai (v) VALUES (1)")
	if err != nil {
		t.Fatal(err)
	}
	ida, _ := ra.LastInsertId()
	rb, err := b.ExecContext(ctx, "INSERT INTO ai (v) VALUES (2)")
	if err != nil {
		t.Fatal(err)
	}
	idb, _ := rb.LastInsertId()
	if got := queryString(t, a, "SELECT LAST_INSERT_ID()"); got != fmt.Sprint(ida) {
		t.Fatalf("a: LAST_INSERT_ID()=%s want %d", got, ida)
	}
	if got := queryString(t, b, "SELECT LAST_INSERT_ID()"); got != fmt.Sprint(idb) {
		t.Fatalf("b: LAST_INSERT_ID()=%s want %d", got, idb)
	}
}

func TestTransactionsPinAndIsolate(t *testing.T) {
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS st1", "CREATE TABLE IF NOT EXISTS st1.tx (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
	cfg := proxyConfig(t, srv, "")
	cfg.Clusters[0].Pool.MaxOpen, cfg.Clusters[0].Pool.MaxIdle, cfg.Clusters[0].Pool.MinIdle = 2, 2, 2
	p := startProxy(t, cfg)
	db := openDB(t, proxyDSN(p, appUser, appPass, "st1", ""))
	ctx := context.Background()
	mustExec(t, db, "DELETE FROM tx")
	a, b := oneConn(t, db), oneConn(t, db)
	// Explicit transaction: invisible to b until commit, rolled back work is gone.
	mustExec(t, a, "BEGIN", "INSERT INTO tx VALUES (1, 1)")
	if n := queryString(t, b, "SELECT COUNT(*) FROM tx"); n != "0" {
		t.Fatalf("b sees uncommitted row: %s", n)
	}
	if n := queryString(t, a, "SELECT COUNT(*) FROM tx"); n != "1" {
		t.Fatalf("a lost its own row: %s", n)
	}
	mustExec(t, a, "ROLLBACK")
	if n := queryString(t, a, "SELECT COUNT(*) FROM tx"); n != "0" {
		t.Fatalf("rollback did not happen: %s", n)
	}
	// autocommit=0: every statement is inside a transaction until COMMIT.
	mustExec(t, a, "SET autocommit=0", "INSERT INTO tx VALUES (2, 2)")
	if n := queryString(t, b, "SELECT COUNT(*) FROM tx"); n != "0" {
		t.Fatalf("b sees autocommit=0 row before commit: %s", n)
	}
	mustExec(t, a, "COMMIT")
	if n := queryString(t, b, "SELECT COUNT(*) FROM tx"); n != "1" {
		t.Fatalf("b does not see committed row: %s", n)
	}
	if got := queryString(t, b, "SELECT @@autocommit"); got != "1" {
		t.Fatalf("b inherited autocommit=%s", got)
	}
	// A client that disconnects inside a transaction: rolled back.
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "BEGIN", "INSERT INTO tx VALUES (3, 3)")
	c.Raw(func(dc any) error { return nil })
	_ = c.Close()
	db.SetMaxIdleConns(0) // closes the returned driver connection
	db.SetMaxIdleConns(2)
	var n int
	for i := 0; i < 50; i++ {
		if err := b.QueryRowContext(ctx, "SELECT COUNT(*) FROM tx WHERE id = 3").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	if n != 0 {
		t.Fatalf("row of a disconnected client's transaction was committed")
	}
}

func TestUserVariablesPinSession(t *testing.T) {
	_, dsn := singleConnProxy(t)
	dbA, dbB := openDB(t, dsn), openDB(t, dsn)
	a := oneConn(t, dbA)
	mustExec(t, a, "SET @x = 42")
	if got := queryString(t, a, "SELECT @x"); got != "42" {
		t.Fatalf("@x = %q", got)
	}
	// With a one-connection pool, a is pinned: b waits for it, and must
	// see no @x once a has disconnected.
	go func() {
		time.Sleep(200 * time.Millisecond)
		a.Close()
		dbA.Close()
	}()
	b := oneConn(t, dbB)
	var v sql.NullString
	if err := b.QueryRowContext(context.Background(), "SELECT @x").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v.Valid {
		t.Fatalf("b sees a's user variable: %q", v.String)
	}
}

// TestCharsetAndCollationFollowSession: SET NAMES with and without COLLATE,
// and a bare connection character set, replayed on other backend
// connections exactly as the server set them.
func TestCharsetAndCollationFollowSession(t *testing.T) {
	srv := testenv.Shared(t)
	cfg := proxyConfig(t, srv, "")
	cfg.Clusters[0].Pool.MaxOpen, cfg.Clusters[0].Pool.MaxIdle, cfg.Clusters[0].Pool.MinIdle = 2, 2, 2
	p := startProxy(t, cfg)
	db := openDB(t, proxyDSN(p, appUser, appPass, "", ""))
	a, noise := oneConn(t, db), oneConn(t, db)
	const q = "SELECT CONCAT_WS(',', @@character_set_client, @@character_set_connection, @@character_set_results, @@collation_connection)"
	steps := []struct{ set, want string }{
		{"SET NAMES utf8mb4 COLLATE utf8mb4_unicode_ci", "utf8mb4,utf8mb4,utf8mb4,utf8mb4_unicode_ci"},
		{"SET NAMES latin1", "latin1,latin1,latin1,latin1_swedish_ci"},
		{"SET collation_connection = latin1_bin", "latin1,latin1,latin1,latin1_bin"},
		{"SET NAMES latin1", "latin1,latin1,latin1,latin1_swedish_ci"},
		{"SET character_set_connection = utf8mb4", "latin1,utf8mb4,latin1,utf8mb4_general_ci"},
		{"SET NAMES utf8mb4", "utf8mb4,utf8mb4,utf8mb4,utf8mb4_general_ci"},
	}
	for _, st := range steps {
		mustExec(t, a, st.set)
		for i := 0; i < 4; i++ { // alternate backend connections
			if got := queryString(t, a, q); got != st.want {
				t.Fatalf("after %q (round %d): %s, want %s", st.set, i, got, st.want)
			}
			if got := queryString(t, noise, q); got != "utf8mb4,utf8mb4,utf8mb4,utf8mb4_general_ci" {
				t.Fatalf("other session after %q: %s", st.set, got)
			}
		}
	}
}
