package proxy_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
)

// TestOversizedStatementCostsOnlyItself sends statements larger than the
// server's max_allowed_packet while other clients write: as directly on
// MariaDB, the sender gets 1153 every time and nobody else sees an error.
func TestOversizedStatementCostsOnlyItself(t *testing.T) {
	srv := testenv.Start(t, testenv.Options{ExtraArgs: []string{"--max-allowed-packet=16M"}})
	srv.Exec(t, "CREATE DATABASE iso", "CREATE TABLE iso.t (id INT PRIMARY KEY, n INT)", "INSERT INTO iso.t VALUES (1, 0)")
	p := startProxy(t, proxyConfig(t, srv, ""))

	big := "SELECT '" + strings.Repeat("x", 17<<20) + "'"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var updates, failed atomic.Int64
	var firstErr atomic.Value
	for range 4 {
		db := openDB(t, proxyDSN(p, appUser, appPass, "iso", ""))
		db.SetMaxOpenConns(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_, err := db.ExecContext(context.Background(), "UPDATE t SET n = n + 1 WHERE id = 1")
				updates.Add(1)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	for i := range 10 {
		db := openDB(t, proxyDSN(p, appUser, appPass, "iso", "maxAllowedPacket=67108864"))
		_, err := db.Exec(big)
		if code := mysqlErrCode(err); code != 1153 {
			t.Errorf("oversized statement %d: want error 1153, got %v", i, err)
		}
		db.Close()
	}
	cancel()
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Errorf("%d of %d concurrent UPDATEs failed, first: %v", n, updates.Load(), firstErr.Load())
	}
	// The proxy still serves.
	var one int
	if err := openDB(t, proxyDSN(p, appUser, appPass, "iso", "")).QueryRow("SELECT 1").Scan(&one); err != nil {
		t.Fatalf("after the oversized statements: %v", err)
	}
}

// TestStatementOnConnectionServerClosed: a pooled connection that the server
// closed while it sat idle (KILL, wait_timeout, restart) costs the client
// nothing: the statement, read or write, is sent on a fresh connection,
// because the server provably never received it.
func TestStatementOnConnectionServerClosed(t *testing.T) {
	srv := testenv.Start(t, testenv.Options{})
	srv.Exec(t, "CREATE DATABASE rs", "CREATE TABLE rs.t (id INT PRIMARY KEY, n INT)", "INSERT INTO rs.t VALUES (1, 0)")
	cfg := proxyConfig(t, srv, "")
	cfg.Clusters[0].Pool.MinIdle = 4
	p := startProxy(t, cfg)
	db := openDB(t, proxyDSN(p, appUser, appPass, "rs", ""))
	db.SetMaxIdleConns(8)
	want := 0
	update := func(what string) {
		t.Helper()
		res, err := db.Exec("UPDATE t SET n = n + 1 WHERE id = 1")
		if err != nil {
			t.Fatalf("%s: update: %v", what, err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			t.Fatalf("%s: update affected %d rows", what, n)
		}
		want++
		if got := queryString(t, db, "SELECT n FROM t WHERE id = 1"); got != fmt.Sprint(want) {
			t.Fatalf("%s: n = %s, want %d (a statement ran twice or not at all)", what, got, want)
		}
	}
	update("warm")
	root := srv.RootDB(t)
	killIdle := func() int {
		t.Helper()
		rows, err := root.Query("SELECT ID FROM information_schema.PROCESSLIST WHERE USER = ? AND COMMAND = 'Sleep'", testenv.User)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		rows.Close()
		for _, id := range ids {
			if _, err := root.Exec(fmt.Sprintf("KILL %d", id)); err != nil {
				t.Logf("kill %d: %v", id, err)
			}
		}
		return len(ids)
	}
	for round := range 3 {
		// The pool warms up min_idle connections in the background.
		waitFor(t, "an idle backend connection to kill", 5*time.Second, func() bool { return killIdle() > 0 })
		time.Sleep(50 * time.Millisecond) // the closes reach the proxy's sockets
		update(fmt.Sprintf("after KILL, round %d", round))
	}

	// wait_timeout: the server closes the pool's connections after 1 s idle.
	mustExec(t, root, "SET GLOBAL wait_timeout = 1")
	killIdle() // new connections get the new timeout
	update("new connections")
	time.Sleep(2500 * time.Millisecond)
	update("after wait_timeout")
	mustExec(t, root, "SET GLOBAL wait_timeout = 28800")

	// A restart closes every connection.
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// A connect that failed while the server was down took it out for a
	// moment; the pooled connections from before are what matters here.
	waitFor(t, "the server back in use", 10*time.Second, func() bool {
		w := p.Cluster("main").Writer()
		return w != nil && w.Available()
	})
	update("after restart")
}

// TestNoDatabaseDoesNotLeak: a session without a default database sees none
// (DATABASE() NULL, 1046 for an unqualified table) whatever backend
// connection serves it, also one that last served a session with one.
func TestNoDatabaseDoesNotLeak(t *testing.T) {
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS leak", "CREATE TABLE IF NOT EXISTS leak.t (id INT PRIMARY KEY)")
	cfg := proxyConfig(t, srv, "")
	cfg.Clusters[0].Pool.MaxOpen = 1 // every session gets the same backend connection
	p := startProxy(t, cfg)
	withDB := openDB(t, proxyDSN(p, appUser, appPass, "leak", ""))
	noDB := openDB(t, proxyDSN(p, appUser, appPass, "", ""))
	for i := range 3 {
		if got := queryString(t, withDB, "SELECT DATABASE()"); got != "leak" {
			t.Fatalf("session with a database: DATABASE() = %q", got)
		}
		mustExec(t, withDB, "SET @@session.sql_mode = 'ANSI_QUOTES'", "SELECT COUNT(*) FROM t")
		var db sql.NullString
		if err := noDB.QueryRow("SELECT DATABASE()").Scan(&db); err != nil {
			t.Fatal(err)
		}
		if db.Valid {
			t.Fatalf("round %d: session without a database: DATABASE() = %q, want NULL", i, db.String)
		}
		_, err := noDB.Exec("SELECT COUNT(*) FROM t")
		if code := mysqlErrCode(err); code != 1046 {
			t.Fatalf("round %d: unqualified table without a database: want 1046, got %v", i, err)
		}
		if got := queryString(t, noDB, "SELECT @@session.sql_mode"); strings.Contains(got, "ANSI_QUOTES") {
			t.Fatalf("round %d: the other session's sql_mode leaked: %s", i, got)
		}
		if got := queryString(t, noDB, "SELECT COUNT(*) FROM leak.t"); got != "0" {
			t.Fatalf("round %d: qualified table: %s", i, got)
		}
	}
}

// TestClientWaitTimeout: a client's SET wait_timeout applies to that client,
// as on the server (the mariadb CLI's next statement after the idle time
// fails with 2006 or 2013), and never to the shared backend connection.
func TestClientWaitTimeout(t *testing.T) {
	srv := testenv.Shared(t)
	cfg := proxyConfig(t, srv, "")
	cfg.Clusters[0].Pool.MaxOpen = 1 // one backend connection for every session
	p := startProxy(t, cfg)
	bin := clientsBinary(t, "mariadb")
	for _, tg := range []clientsTarget{clientsDirectTarget(srv), clientsProxyTarget(t, p)} {
		t.Run(tg.name, func(t *testing.T) {
			out := cliIdleSession(t, bin, tg, "SET SESSION wait_timeout = 1;", 2500*time.Millisecond, "SELECT 'still here';")
			if !strings.Contains(out, "ERROR 2006") && !strings.Contains(out, "ERROR 2013") {
				t.Fatalf("statement after wait_timeout: want ERROR 2006 or 2013, got:\n%s", out)
			}
			if ranStillHere(out) {
				t.Fatalf("the statement after wait_timeout ran:\n%s", out)
			}
		})
	}
	// The other sessions' connection kept the server's wait_timeout (read
	// from the connection: @@wait_timeout is the session's own).
	db := openDB(t, proxyDSN(p, appUser, appPass, "", ""))
	if got, want := queryString(t, db, "SELECT VARIABLE_VALUE FROM information_schema.SESSION_VARIABLES WHERE VARIABLE_NAME = 'WAIT_TIMEOUT'"),
		srv.Scalar(t, "SELECT @@global.wait_timeout"); got != want {
		t.Fatalf("the backend connection's wait_timeout = %s, want the server's %s", got, want)
	}
	// A client that sets a longer wait_timeout stays.
	out := cliIdleSession(t, bin, clientsProxyTarget(t, p), "SET SESSION wait_timeout = 30;", 1500*time.Millisecond, "SELECT 'still here';")
	if !ranStillHere(out) {
		t.Fatalf("client with wait_timeout 30 after 1.5 s idle:\n%s", out)
	}
}

// TestClientTimeoutVariables: @@wait_timeout and @@interactive_timeout
// (also @@session., @@local.) read the session's own values, which the
// proxy keeps per client rather than on the backend connections: what the
// client set, from whichever backend connection the read runs on; before
// that, for wait_timeout the idle limit the proxy applies
// (server.client_idle_timeout, here 1234 s where the server's is 28800),
// for interactive_timeout the server's. @@global. reads the server's. The
// columns are the server's (name, type, width, nullability).
func TestClientTimeoutVariables(t *testing.T) {
	srv := testenv.Shared(t)
	cfg := proxyConfig(t, srv, "")
	cfg.Server.ClientIdleTimeout = 1234 * time.Second
	cfg.Clusters[0].Pool.MaxOpen, cfg.Clusters[0].Pool.MaxIdle = 2, 2
	p := startProxy(t, cfg)
	db := openDB(t, proxyDSN(p, appUser, appPass, "", ""))
	a, b := oneConn(t, db), oneConn(t, db)
	direct := oneConn(t, openDB(t, srv.DSN("")))
	global := srv.Scalar(t, "SELECT @@global.wait_timeout")
	globalInteractive := srv.Scalar(t, "SELECT @@global.interactive_timeout")
	const read = "SELECT @@wait_timeout, @@session.wait_timeout, @@LOCAL.Wait_Timeout, @@global.wait_timeout, @@interactive_timeout, @@session.interactive_timeout"
	check := func(c *sql.Conn, when, wait, interactive string) {
		t.Helper()
		want := fmt.Sprintf("%s %s %s %s %s %s", wait, wait, wait, global, interactive, interactive)
		if got := strings.Join(queryRow(t, c, read), " "); got != want {
			t.Fatalf("%s: %s = %s, want %s", when, read, got, want)
		}
	}
	check(a, "a fresh session", "1234", globalInteractive)
	// b holds a backend connection in a transaction: a's statements run on
	// the other one, not the one that ran its SET.
	mustExec(t, a, "SET wait_timeout = 77")
	mustExec(t, b, "BEGIN")
	queryString(t, b, "SELECT 1")
	check(a, "after SET wait_timeout = 77", "77", globalInteractive)
	mustExec(t, a, "SET SESSION wait_timeout = 88", "SET @@session.interactive_timeout = 99")
	check(a, "after SET SESSION wait_timeout = 88, interactive_timeout = 99", "88", "99")
	mustExec(t, b, "COMMIT")
	mustExec(t, a, "SET @@local.wait_timeout = 66")
	check(a, "after SET @@local.wait_timeout = 66", "66", "99")
	check(b, "the other session", "1234", globalInteractive)
	mustExec(t, a, "BEGIN", "SET wait_timeout = 55")
	check(a, "inside a transaction", "55", "99")
	mustExec(t, a, "COMMIT")
	if got := queryString(t, a, "SELECT @@wait_timeout + 1 AS w"); got != "56" {
		t.Fatalf("SELECT @@wait_timeout + 1 AS w = %s", got)
	}
	// The columns are the server's.
	mustExec(t, direct, "SET wait_timeout = 55", "SET interactive_timeout = 99")
	const cols = "SELECT @@wait_timeout, @@session.interactive_timeout, @@wait_timeout + 0"
	if got, want := columnTypes(t, a, cols), columnTypes(t, direct, cols); got != want {
		t.Fatalf("%s: columns %s, the server's %s", cols, got, want)
	}
}

// queryRow returns the one row of sqlText's answer, NULL as "NULL".
func queryRow(t *testing.T, c *sql.Conn, sqlText string) []string {
	t.Helper()
	rows, err := c.QueryContext(context.Background(), sqlText)
	if err != nil {
		t.Fatalf("%s: %v", sqlText, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if !rows.Next() {
		t.Fatalf("%s: no row (%v)", sqlText, rows.Err())
	}
	if err := rows.Scan(ptrs...); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = "NULL"
		if v.Valid {
			out[i] = v.String
		}
	}
	return out
}

// columnTypes describes the columns of sqlText's answer: name, type,
// length, nullability, and the values.
func columnTypes(t *testing.T, c *sql.Conn, sqlText string) string {
	t.Helper()
	rows, err := c.QueryContext(context.Background(), sqlText)
	if err != nil {
		t.Fatalf("%s: %v", sqlText, err)
	}
	defer rows.Close()
	cts, err := rows.ColumnTypes()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, ct := range cts {
		n, _ := ct.Nullable()
		l, _ := ct.Length()
		fmt.Fprintf(&b, "[%s %s %d null=%v] ", ct.Name(), ct.DatabaseTypeName(), l, n)
	}
	for rows.Next() {
	}
	return b.String()
}

// cliIdleSession runs the mariadb CLI, sends first, stays idle for idle,
// then sends then, and returns everything the CLI printed.
func cliIdleSession(t *testing.T, bin string, tg clientsTarget, first string, idle time.Duration, then string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--no-defaults", "-h", tg.host, "-P", tg.port, "-u", tg.user, "-p"+tg.pass,
		"--protocol=TCP", "--skip-ssl", "--batch", "--skip-reconnect")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(stdin, first)
	time.Sleep(idle)
	fmt.Fprintln(stdin, then)
	stdin.Close()
	_ = cmd.Wait()
	return out.String()
}

// ranStillHere reports whether the CLI printed the row of SELECT 'still
// here' (its error messages quote the statement, not as a line of its own).
func ranStillHere(out string) bool {
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if l == "still here" {
			n++
		}
	}
	return n >= 2 // the column heading and the value
}

// TestNoDatabaseAfterDirtyRelease: a backend connection reset after a
// session with a database held state on it (a user variable pins and
// dirties it) still has that database on the server: the next session
// without one must not see it.
func TestNoDatabaseAfterDirtyRelease(t *testing.T) {
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS leak2", "CREATE TABLE IF NOT EXISTS leak2.t (id INT PRIMARY KEY)")
	cfg := proxyConfig(t, srv, "")
	cfg.Clusters[0].Pool.MaxOpen = 1 // every session gets the same backend connection
	p := startProxy(t, cfg)
	for i := range 2 {
		withDB := openDB(t, proxyDSN(p, appUser, appPass, "leak2", ""))
		withDB.SetMaxOpenConns(1)
		mustExec(t, withDB, "SET @x = 1", "SELECT COUNT(*) FROM t")
		withDB.Close() // the pinned, dirty connection is reset and pooled
		noDB := openDB(t, proxyDSN(p, appUser, appPass, "", ""))
		var db sql.NullString
		if err := noDB.QueryRow("SELECT DATABASE()").Scan(&db); err != nil {
			t.Fatal(err)
		}
		if db.Valid {
			t.Fatalf("round %d: session without a database: DATABASE() = %q, want NULL", i, db.String)
		}
		noDB.Close()
	}
}

// TestOversizedStatementsDoNotTakeServerOut: a client repeatedly sending
// packets the server refuses (1153, then a close) is the client's doing:
// the server stays in use for everyone.
func TestOversizedStatementsDoNotTakeServerOut(t *testing.T) {
	srv := testenv.Start(t, testenv.Options{ExtraArgs: []string{"--max-allowed-packet=4M"}})
	cfg := proxyConfig(t, srv, "")
	cfg.Server.MaxAllowedPacket = 64 << 20 // the proxy lets them through to the server
	p := startProxy(t, cfg)
	big := "SELECT '" + strings.Repeat("x", 5<<20) + "'"
	for i := range 5 {
		db := openDB(t, proxyDSN(p, appUser, appPass, "", "maxAllowedPacket=67108864"))
		if _, err := db.Exec(big); mysqlErrCode(err) != 1153 {
			t.Fatalf("oversized statement %d: want 1153, got %v", i, err)
		}
		db.Close()
	}
	if w := p.Cluster("main").Writer(); w == nil || !w.Available() {
		t.Fatalf("the server was taken out by a client's oversized statements")
	}
	if got := queryString(t, openDB(t, proxyDSN(p, appUser, appPass, "", "")), "SELECT 1"); got != "1" {
		t.Fatal(got)
	}
}
