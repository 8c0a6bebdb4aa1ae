package backend

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// dialConfig is how the proxy dials srv (the test account, utf8mb4).
func dialConfig(srv *testenv.Server) *DialConfig {
	return &DialConfig{
		Addr: srv.Addr, User: testenv.User, Password: testenv.Password,
		ConnectTimeout: 3 * time.Second, Charset: mysql.CollationUTF8MB4GeneralCI,
	}
}

// dialT dials a connection that is closed when the test ends.
func dialT(t *testing.T, dc *DialConfig, foundRows bool) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, dc, foundRows)
	if err != nil {
		t.Fatalf("Dial %s: %v", dc.Addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// queryOne runs sql on c and returns the single value it yields.
func queryOne(t *testing.T, c *Conn, sql string) string {
	t.Helper()
	rows, err := c.QueryRows(sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if len(rows) != 1 || len(rows[0]) != 1 {
		t.Fatalf("%s: want one value, got %q", sql, rows)
	}
	return rows[0][0]
}

func mustExec(t *testing.T, c *Conn, sql string) {
	t.Helper()
	if err := c.Exec(sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newPool creates a pool on srv that is closed when the test ends.
func newPool(t *testing.T, name string, dc *DialConfig, cfg PoolConfig) *Pool {
	t.Helper()
	p := NewPool(name, dc, cfg, discardLog())
	t.Cleanup(p.Close)
	return p
}

// newUntickedPool is newPool whose maintenance never ticks: the test runs
// p.tick itself, at the points it chooses.
func newUntickedPool(t *testing.T, name string, dc *DialConfig, cfg PoolConfig) *Pool {
	t.Helper()
	p := startPool(name, dc, cfg, discardLog(), false)
	t.Cleanup(p.Close)
	return p
}

func acquire(t *testing.T, p *Pool, foundRows bool) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := p.Acquire(ctx, foundRows)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	return c
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// threadAlive asks the server (as root) whether connection id exists.
func threadAlive(t *testing.T, root *sql.DB, id uint32) bool {
	t.Helper()
	var n int
	if err := root.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", id).Scan(&n); err != nil {
		t.Fatalf("processlist: %v", err)
	}
	return n > 0
}

// wantSQLError asserts err is (or wraps) an *mysql.SQLError with code and
// returns it.
func wantSQLError(t *testing.T, err error, code uint16) *mysql.SQLError {
	t.Helper()
	var se *mysql.SQLError
	if !errors.As(err, &se) {
		t.Fatalf("want *mysql.SQLError %d, got %T: %v", code, err, err)
	}
	if se.Code != code {
		t.Fatalf("want error code %d, got %d: %v", code, se.Code, se)
	}
	return se
}

func wantContains(t *testing.T, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%q does not mention %q", s, sub)
		}
	}
}

// closedAddr returns a 127.0.0.1 address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// sessionVars reads session variables by name as SHOW VARIABLES spells their
// values (ON/OFF, NULL as "").
func sessionVars(t *testing.T, c *Conn, names []string) map[string]string {
	t.Helper()
	q := "SELECT LOWER(VARIABLE_NAME), VARIABLE_VALUE FROM information_schema.SESSION_VARIABLES WHERE VARIABLE_NAME IN ("
	for i, n := range names {
		if i > 0 {
			q += ", "
		}
		q += "'" + strings.ToUpper(n) + "'"
	}
	rows, err := c.QueryRows(q + ")")
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	got := make(map[string]string, len(rows))
	for _, r := range rows {
		got[r[0]] = r[1]
	}
	for _, n := range names {
		if _, ok := got[n]; !ok {
			t.Fatalf("server has no session variable %s", n)
		}
	}
	return got
}
