package proxy_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/testenv"
)

func TestMain(m *testing.M) {
	// Trust a test CA as a system root, so go-sql-driver's plain tls=true
	// (which verifies against the system pool) can be tested. Go reads
	// SSL_CERT_FILE when it first loads the pool, after this.
	dir, err := os.MkdirTemp("", "shardgate-ca-")
	if err != nil {
		panic(err)
	}
	systemCA = writeCA(dir)
	os.Setenv("SSL_CERT_FILE", systemCA.caFile)
	code := testenv.Main(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// systemCA is the CA the test process trusts as a system root, with a
// server certificate for 127.0.0.1 signed by it.
var systemCA testCA

// Test accounts of the proxy (not of the server).
const (
	appUser = "app"
	appPass = "app-secret"
)

// proxyConfig is the configuration the integration tests start from: one
// cluster on srv, the app user (stored hash) and the server's own account.
func proxyConfig(t testing.TB, srv *testenv.Server, extra string) *config.Config {
	t.Helper()
	yaml := fmt.Sprintf(`
listeners:
  - address: 127.0.0.1:0
admin:
  http: 127.0.0.1:0
log:
  level: debug
users:
  - name: %s
    password_hash: "%s"
    default_database: ""
  - name: %s
    password: %s
clusters:
  - name: main
    user: %s
    password: %s
    pool:
      max_open: 4
      wait_timeout: 10s
    primary:
      address: %s
%s`, appUser, hashOf(appPass), testenv.User, testenv.Password, testenv.User, testenv.Password, srv.Addr, extra)
	cfg, err := config.Parse([]byte(yaml), "test.yaml")
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	return cfg
}

func hashOf(pw string) string {
	return proxyHash(pw)
}

// startProxy starts a proxy for cfg and stops it at the end of the test.
func startProxy(t testing.TB, cfg *config.Config) *proxy.Proxy {
	t.Helper()
	var w io.Writer = io.Discard
	if os.Getenv("SHARDGATE_TEST_LOG") != "" {
		w = os.Stderr
	}
	return startProxyWithLog(t, cfg, slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})))
}

// startProxyWithLog is startProxy logging to log.
func startProxyWithLog(t testing.TB, cfg *config.Config, log *slog.Logger) *proxy.Proxy {
	t.Helper()
	p, err := proxy.New(cfg, log)
	if err != nil {
		t.Fatalf("start proxy: %v", err)
	}
	p.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = p.Shutdown(ctx)
	})
	return p
}

// logCapture collects the proxy's log records (JSON lines) for a test to
// inspect.
type logCapture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logCapture) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String returns everything logged so far.
func (l *logCapture) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// records returns the records logged so far at level (all levels if "").
func (l *logCapture) records(t testing.TB, level string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(l.buf.Bytes(), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if level == "" || r["level"] == level {
			out = append(out, r)
		}
	}
	return out
}

// startProxyLogged is startProxy with the proxy's log, down to DEBUG,
// captured as JSON lines.
func startProxyLogged(t testing.TB, cfg *config.Config) (*proxy.Proxy, *logCapture) {
	t.Helper()
	lc := &logCapture{}
	return startProxyWithLog(t, cfg, slog.New(slog.NewJSONHandler(lc, &slog.HandlerOptions{Level: slog.LevelDebug}))), lc
}

// proxyDSN is a go-sql-driver DSN for the proxy's first listener.
func proxyDSN(p *proxy.Proxy, user, pass, db, params string) string {
	dsn := fmt.Sprintf("%s:%s@tcp(%s)/%s", user, pass, p.Addrs()[0], db)
	if params != "" {
		dsn += "?" + params
	}
	return dsn
}

func openDB(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// oneConn returns a single dedicated client connection.
func oneConn(t testing.TB, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func queryString(t testing.TB, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, sqlText string, args ...any) string {
	t.Helper()
	var s sql.NullString
	if err := q.QueryRowContext(context.Background(), sqlText, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sqlText, err)
	}
	return s.String
}

func mustExec(t testing.TB, q interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := q.ExecContext(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func mysqlErrCode(err error) uint16 {
	if me, ok := err.(*mysql.MySQLError); ok {
		return me.Number
	}
	return 0
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// twoShardYAML is the configuration of shardgate over two shards, s0 (the
// schema's default cluster, at addr0) and s1 (at addr1), serving schema db
// to appUser, whose default database it is. schema is the rest of the
// schema's entry, YAML lines indented by four (its tables: …); users, more
// entries of users:, indented by two; maxOpen bounds each cluster's pool.
func twoShardYAML(db, addr0, addr1 string, maxOpen int, schema, users string) string {
	return fmt.Sprintf(`
listeners: [{address: "127.0.0.1:0"}]
users:
  - {name: %s, password_hash: "%s", default_database: %s}
%sclusters:
  - {name: s0, user: %s, password: %s, pool: {max_open: %d}, primary: {address: "%s"}}
  - {name: s1, user: %s, password: %s, pool: {max_open: %d}, primary: {address: "%s"}}
schemas:
  - name: %s
    default_cluster: s0
%s`, appUser, hashOf(appPass), db, users, testenv.User, testenv.Password, maxOpen, addr0,
		testenv.User, testenv.Password, maxOpen, addr1, db, schema)
}

// parseConfig parses a test's configuration text, failing the test with
// the text on an error.
func parseConfig(t testing.TB, yaml, file string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml), file)
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	return cfg
}

// scanNullStrings scans the current row of rows, n columns, as nullable
// strings.
func scanNullStrings(rows *sql.Rows, n int) ([]sql.NullString, error) {
	vals := make([]sql.NullString, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	return vals, rows.Scan(ptrs...)
}
