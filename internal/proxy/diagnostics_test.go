package proxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/shardgate/shardgate/internal/testenv"
)

// diagnosticsScript reads the previous statement's diagnostics after each
// kind of statement.
var diagnosticsScript = []string{
	"DELETE FROM diag",
	"INSERT INTO diag VALUES (1, 1), (2, 2), (3, 3)",
	"SELECT ROW_COUNT()",
	"UPDATE diag SET v = v + 1 WHERE id < 3",
	"SELECT ROW_COUNT()",
	"SELECT * FROM diag ORDER BY id",
	"SELECT FOUND_ROWS()",
	"SELECT ROW_COUNT()",
	"SELECT SQL_CALC_FOUND_ROWS * FROM diag ORDER BY id LIMIT 1",
	"SELECT FOUND_ROWS()",
	"SELECT 1/0",
	"SHOW WARNINGS",
	"SELECT 1/0",
	"SHOW COUNT(*) WARNINGS",
	"SELECT 1/0",
	"SELECT @@warning_count",
	"SELECT v FROM diag WHERE id = 1",
	"SHOW WARNINGS",
	"INSERT INTO diag VALUES (1, 1)",
	"SHOW ERRORS",
	"INSERT INTO diag VALUES (1, 1)",
	"SELECT @@error_count, @@warning_count",
	"DELETE FROM diag WHERE id = 3",
	"SHOW WARNINGS",
	"SHOW COUNT(*) ERRORS",
	"SELECT ROW_COUNT()",
	"SELECT v FROM diag",
	"SHOW WARNINGS",
	"SELECT FOUND_ROWS()",
	"SHOW COUNT(*) WARNINGS",
	"SELECT FOUND_ROWS()",
	// Statements that read no table leave the diagnostics in place,
	// those that read one replace them (with none).
	"SELECT 1/0",
	"SELECT 1",
	"SHOW WARNINGS",
	"SHOW WARNINGS",
	"SELECT @@warning_count",
	"DO 1",
	"SHOW COUNT(*) WARNINGS",
	"SELECT v FROM diag WHERE id = 1",
	"SELECT 1",
	"SHOW WARNINGS",
	"SELECT @@warning_count",
}

// runScript runs the script on one connection; between statements, noise
// (if not nil) runs on another session, taking whatever backend connection
// the script's session just released.
func runScript(t *testing.T, conn *sql.Conn, noise func()) []string {
	t.Helper()
	var out []string
	for _, q := range diagnosticsScript {
		out = append(out, q+" => "+resultString(conn, q))
		if noise != nil {
			noise()
		}
	}
	return out
}

func resultString(conn *sql.Conn, q string) string {
	rows, err := conn.QueryContext(context.Background(), q)
	if err != nil {
		if me, ok := err.(*mysql.MySQLError); ok {
			return fmt.Sprintf("ERROR %d", me.Number)
		}
		return "ERROR " + err.Error()
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	// Column names and types too: the proxy may answer with values of its
	// own (substituted for FOUND_ROWS() and the like), in the server's
	// columns.
	types, _ := rows.ColumnTypes()
	var heads []string
	for _, ct := range types {
		heads = append(heads, ct.Name()+" "+ct.DatabaseTypeName())
	}
	lines := []string{strings.Join(heads, ",")}
	for rows.Next() {
		vals, err := scanNullStrings(rows, len(cols))
		if err != nil {
			return "SCAN " + err.Error()
		}
		var parts []string
		for _, v := range vals {
			if !v.Valid {
				v.String = "NULL" // not the empty string's
			}
			parts = append(parts, v.String)
		}
		lines = append(lines, strings.Join(parts, ","))
	}
	if err := rows.Err(); err != nil {
		if me, ok := err.(*mysql.MySQLError); ok {
			return fmt.Sprintf("ERROR %d", me.Number)
		}
		return "ERROR " + err.Error()
	}
	return "[" + strings.Join(lines, "|") + "]"
}

// TestPreviousStatementDiagnostics: ROW_COUNT(), FOUND_ROWS(), SHOW
// WARNINGS/ERRORS and the warning counters answer as on a direct
// connection, also when other sessions use the backend connection in
// between.
func TestPreviousStatementDiagnostics(t *testing.T) {
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS diagdb", "CREATE TABLE IF NOT EXISTS diagdb.diag (id INT PRIMARY KEY, v INT)")
	direct := openDB(t, srv.DSN("diagdb"))
	want := runScript(t, oneConn(t, direct), nil)

	cfg := proxyConfig(t, srv, "")
	cfg.Clusters[0].Pool.MaxOpen, cfg.Clusters[0].Pool.MaxIdle, cfg.Clusters[0].Pool.MinIdle = 2, 2, 2
	p := startProxy(t, cfg)
	db := openDB(t, proxyDSN(p, appUser, appPass, "diagdb", ""))
	noisy := oneConn(t, openDB(t, proxyDSN(p, appUser, appPass, "diagdb", "")))
	noise := func() {
		// Leaves its own warnings and found-rows on whichever connection it gets.
		_ = resultString(noisy, "SELECT SQL_CALC_FOUND_ROWS 1/0 FROM diag")
		_ = resultString(noisy, "SELECT 42")
	}
	for _, tc := range []struct {
		name  string
		noise func()
	}{{"alone", nil}, {"with another session in between", noise}} {
		t.Run(tc.name, func(t *testing.T) {
			got := runScript(t, oneConn(t, db), tc.noise)
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("through the proxy: %s\n                   direct: %s", got[i], want[i])
				}
			}
		})
	}
}

// TestDiagnosticsOfANewSession: a new session has no diagnostics, also
// when the backend connection its first statements run on holds another
// session's (a statement that reads no table leaves them in place on
// the server): the pool's one connection ran the other session's last
// statement, which raised a warning.
func TestDiagnosticsOfANewSession(t *testing.T) {
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS diagdb")
	cfg := proxyConfig(t, srv, "")
	cfg.Clusters[0].Pool.MaxOpen, cfg.Clusters[0].Pool.MaxIdle, cfg.Clusters[0].Pool.MinIdle = 1, 1, 1
	p := startProxy(t, cfg)
	other := openDB(t, proxyDSN(p, appUser, appPass, "diagdb", ""))
	c := oneConn(t, other)
	if got := resultString(c, "SELECT 1/0"); strings.HasPrefix(got, "ERROR") {
		t.Fatalf("SELECT 1/0: %s", got)
	}
	c.Close()
	other.Close() // the session ends; its connection goes back to the pool
	direct := oneConn(t, openDB(t, srv.DSN("diagdb")))
	fresh := oneConn(t, openDB(t, proxyDSN(p, appUser, appPass, "diagdb", "")))
	for _, q := range []string{"SELECT 1", "SHOW WARNINGS", "SELECT @@warning_count", "SHOW COUNT(*) WARNINGS", "SHOW WARNINGS"} {
		if got, want := resultString(fresh, q), resultString(direct, q); got != want {
			t.Fatalf("%s in a new session: %s, on a new connection to the server %s", q, got, want)
		}
	}
}
