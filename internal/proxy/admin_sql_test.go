package proxy_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/testenv"
)

// The admin port's account in these tests.
const (
	adminUser = "ops"
	adminPass = "ops-secret"
)

// withAdminSQL turns on the admin SQL port, on a free port, with the
// test's admin account.
func withAdminSQL(cfg *config.Config) *config.Config {
	cfg.Admin.SQL = "127.0.0.1:0"
	cfg.Admin.Users = []config.AdminUser{{Name: adminUser, PasswordHash: hashOf(adminPass)}}
	return cfg
}

// adminDSN is a go-sql-driver DSN for the admin port.
func adminDSN(p *proxy.Proxy, user, pass string) string {
	return fmt.Sprintf("%s:%s@tcp(%s)/", user, pass, p.AdminSQLAddr())
}

// adminRows runs an admin statement and returns its columns and rows as
// text.
func adminRows(t testing.TB, db *sql.DB, stmt string) ([]string, [][]string) {
	t.Helper()
	rows, err := db.Query(stmt)
	if err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for rows.Next() {
		raw := make([]sql.RawBytes, len(cols))
		dest := make([]any, len(cols))
		for i := range raw {
			dest[i] = &raw[i]
		}
		if err := rows.Scan(dest...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(cols))
		for i, r := range raw {
			row[i] = string(r)
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
	return cols, out
}

// adminTable is a view's rows as maps by column name.
func adminTable(t testing.TB, db *sql.DB, stmt string) []map[string]string {
	t.Helper()
	cols, rows := adminRows(t, db, stmt)
	out := make([]map[string]string, len(rows))
	for i, r := range rows {
		out[i] = map[string]string{}
		for j, c := range cols {
			out[i][c] = r[j]
		}
	}
	return out
}

func wantColumns(t testing.TB, db *sql.DB, stmt string, want ...string) {
	t.Helper()
	if cols, _ := adminRows(t, db, stmt); !slices.Equal(cols, want) {
		t.Errorf("%s: columns %v, want %v", stmt, cols, want)
	}
}

// startAdminProxy starts a proxy over the shared server with the admin
// port, once its health check has run, and opens the admin port and one
// client connection.
func startAdminProxy(t *testing.T) (*testenv.Server, *proxy.Proxy, *sql.DB, *sql.Conn) {
	t.Helper()
	srv := testenv.Shared(t)
	p := startProxy(t, withAdminSQL(proxyConfig(t, srv, "")))
	p.SetBuildVersion("v9.9.9-test")
	waitChecked(t, p)
	return srv, p, openDB(t, adminDSN(p, adminUser, adminPass)), oneConn(t, openDB(t, proxyDSN(p, appUser, appPass, "", "")))
}

// Every read statement of the admin port through go-sql-driver, with the
// statements drivers and clients send on connecting.
func TestAdminSQLStatements(t *testing.T) {
	srv, _, db, client := startAdminProxy(t)
	clientID := queryString(t, client, "SELECT CONNECTION_ID()")
	for range 5 {
		mustExec(t, client, "SELECT 1")
	}

	t.Run("connect chatter", func(t *testing.T) {
		for q, want := range map[string]string{
			"select @@version_comment limit 1": "shardgate admin",
			"SELECT DATABASE()":                "",
			"SELECT @@max_allowed_packet":      "1048576",
			"SELECT CURRENT_USER()":            adminUser + "@127.0.0.1",
		} {
			if got := queryString(t, db, q); got != want {
				t.Errorf("%s = %q, want %q", q, got, want)
			}
		}
		if v := queryString(t, db, "SELECT @@version"); v != queryString(t, client, "SELECT @@version") {
			t.Errorf("@@version on the admin port %q is not the one clients see", v)
		}
		mustExec(t, db, "SET NAMES utf8mb4", "SET autocommit=1", "SET sql_mode='STRICT_ALL_TABLES'", "SET character_set_results = NULL")
		if got := queryString(t, db, "SELECT 1 FROM DUAL"); got != "1" {
			t.Errorf("SELECT 1 FROM DUAL = %q", got)
		}
		wantColumns(t, db, "SHOW WARNINGS", "Level", "Code", "Message")
		if _, err := db.Exec("SELECT @@no_such_thing"); mysqlErrCode(err) != 1193 {
			t.Errorf("unknown variable: %v, want 1193", err)
		}
	})

	t.Run("SHOW BACKENDS", func(t *testing.T) {
		wantColumns(t, db, "SHOW BACKENDS", "cluster", "address", "role", "up", "read_only", "lag_seconds", "replicating",
			"breaker", "state", "weight", "pool_open", "pool_idle", "pool_in_use", "pool_waiting", "running", "errors",
			"wait_timeouts", "last_error")
		rows := adminTable(t, db, "show backends;")
		if len(rows) != 1 {
			t.Fatalf("rows %v, want the one server", rows)
		}
		r := rows[0]
		for k, want := range map[string]string{"cluster": "main", "address": srv.Addr, "role": "writer", "up": "yes",
			"read_only": "no", "breaker": "closed", "state": "online", "pool_waiting": "0"} {
			if r[k] != want {
				t.Errorf("%s = %q, want %q (row %v)", k, r[k], want, r)
			}
		}
		if n, _ := strconv.Atoi(r["pool_open"]); n < 1 {
			t.Errorf("pool_open = %s, want the connections clients used", r["pool_open"])
		}
	})

	t.Run("SHOW SESSIONS", func(t *testing.T) {
		wantColumns(t, db, "SHOW SESSIONS", "id", "user", "client", "db", "state", "time_in_state", "statement", "digest", "backends")
		found := false
		for _, r := range adminTable(t, db, "SHOW SESSIONS") {
			found = found || r["id"] == clientID
		}
		if !found {
			t.Errorf("SHOW SESSIONS lacks the client's session %s", clientID)
		}
	})

	t.Run("SHOW QUERY DIGESTS", func(t *testing.T) {
		wantColumns(t, db, "SHOW QUERY DIGESTS ORDER BY count DESC LIMIT 5", "digest", "user", "db", "text", "count",
			"total_ms", "mean_ms", "p50_ms", "p99_ms", "max_ms", "rows_sent", "rows_affected", "errors", "shards_touched",
			"first_seen", "last_seen")
		_, err := db.Exec("SHOW QUERY DIGESTS ORDER BY nope")
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1054 || !strings.Contains(me.Message, "total_ms") {
			t.Errorf("ORDER BY an unknown column: %v, want 1054 naming the columns", err)
		}
		mustExec(t, db, "RESET QUERY DIGESTS")
		if _, rows := adminRows(t, db, "SHOW QUERY DIGESTS"); len(rows) != 0 {
			t.Errorf("after RESET QUERY DIGESTS: %v", rows)
		}
	})

	t.Run("SHOW CONFIG", func(t *testing.T) {
		rows := adminTable(t, db, "SHOW CONFIG")
		values := map[string]string{}
		for _, r := range rows {
			values[r["key"]] = r["value"]
			for _, secret := range []string{testenv.Password, adminPass, hashOf(adminPass), hashOf(appPass)} {
				if strings.Contains(r["value"], secret) {
					t.Errorf("%s shows a secret: %s", r["key"], r["value"])
				}
			}
		}
		for k, want := range map[string]string{"clusters[main].password": "***", "admin.users[ops].password_hash": "***",
			"users[app].password_hash": "***", "clusters[main].pool.max_open": "4", "admin.sql": "127.0.0.1:0"} {
			if values[k] != want {
				t.Errorf("%s = %q, want %q", k, values[k], want)
			}
		}
	})

	t.Run("SHOW VERSION", func(t *testing.T) {
		rows := adminTable(t, db, "SHOW VERSION")
		if len(rows) != 3 || rows[0]["version"] != "v9.9.9-test" || rows[2]["address"] != srv.Addr ||
			!strings.Contains(rows[2]["version"], srv.Scalar(t, "SELECT @@version")) {
			t.Errorf("SHOW VERSION = %v", rows)
		}
	})

	t.Run("SHOW STATUS", func(t *testing.T) {
		status := map[string]string{}
		for _, r := range adminTable(t, db, "SHOW STATUS") {
			status[r["name"]] = r["value"]
		}
		if n, _ := strconv.Atoi(status["queries"]); n < 6 {
			t.Errorf("queries = %s, want at least the client's 6 statements (%v)", status["queries"], status)
		}
		if status["client_connections"] != "1" {
			t.Errorf("client_connections = %s, want 1 (admin sessions do not count) (%v)", status["client_connections"], status)
		}
		for _, k := range []string{"uptime_seconds", "qps", "errors", "client_connections_total"} {
			if _, ok := status[k]; !ok {
				t.Errorf("SHOW STATUS lacks %s: %v", k, status)
			}
		}
	})

	t.Run("unknown statement", func(t *testing.T) {
		for _, q := range []string{"SELECT * FROM t", "SHOW DATABASES", "DROP TABLE t", "SHOW BACKENDS; SHOW SESSIONS",
			"SET BACKENDS main." + srv.Addr + " OFFLINE", "SET autocommit=1; RELOAD CONFIG"} {
			_, err := db.Exec(q)
			var me *mysql.MySQLError
			if !errors.As(err, &me) || me.Number != 1064 || me.SQLState != [5]byte{'4', '2', '0', '0', '0'} ||
				!strings.Contains(me.Message, "SHOW QUERY DIGESTS") || !strings.Contains(me.Message, "RELOAD CONFIG") {
				t.Errorf("%s: %v, want 1064 (42000) listing the statements", q, err)
			}
		}
	})
}

// SHOW SHARDING lists each sub-table with its cluster, reference tables
// on every shard and the unlisted tables' cluster.
func TestAdminShowSharding(t *testing.T) {
	srv := testenv.Shared(t)
	schema := "    tables:\n      - {name: orders, shard_key: uid, rule: mod, shards: [s0, s1], sub_tables: 2}\n" +
		"      - {name: items, shard_key: uid, like: orders}\n      - {name: codes, type: reference}\n"
	cfg := withAdminSQL(parseConfig(t, twoShardYAML("adm", srv.Addr, srv.Addr, 2, schema, ""), "sharding.yaml"))
	p := startProxy(t, cfg)
	db := openDB(t, adminDSN(p, adminUser, adminPass))
	_, rows := adminRows(t, db, "SHOW SHARDING")
	want := [][]string{
		{"adm", "*", "unlisted", "", "", "", "s0"},
		{"adm", "orders", "sharded", "mod", "uid", "orders_0000", "s0"},
		{"adm", "orders", "sharded", "mod", "uid", "orders_0001", "s0"},
		{"adm", "orders", "sharded", "mod", "uid", "orders_0002", "s1"},
		{"adm", "orders", "sharded", "mod", "uid", "orders_0003", "s1"},
		{"adm", "items", "sharded", "mod like orders", "uid", "items_0000", "s0"},
		{"adm", "items", "sharded", "mod like orders", "uid", "items_0001", "s0"},
		{"adm", "items", "sharded", "mod like orders", "uid", "items_0002", "s1"},
		{"adm", "items", "sharded", "mod like orders", "uid", "items_0003", "s1"},
		{"adm", "codes", "reference", "", "", "codes", "s0"},
		{"adm", "codes", "reference", "", "", "codes", "s1"},
	}
	if !slices.EqualFunc(rows, want, slices.Equal) {
		t.Errorf("SHOW SHARDING:\n got %v\nwant %v", rows, want)
	}
}

// The admin port and the client listeners have separate accounts: each
// refuses the other's with 1045, as a wrong password.
func TestAdminSQLLogins(t *testing.T) {
	srv := testenv.Shared(t)
	p := startProxy(t, withAdminSQL(proxyConfig(t, srv, "")))
	login := func(dsn string) error {
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		return db.Ping()
	}
	if err := login(adminDSN(p, adminUser, adminPass)); err != nil {
		t.Fatalf("admin login: %v", err)
	}
	for name, err := range map[string]error{
		"wrong admin password":        login(adminDSN(p, adminUser, "nope")),
		"client user on the admin":    login(adminDSN(p, appUser, appPass)),
		"admin user on a client port": login(proxyDSN(p, adminUser, adminPass, "", "")),
	} {
		if mysqlErrCode(err) != 1045 {
			t.Errorf("%s: %v, want 1045", name, err)
		}
	}

	t.Run("reload", func(t *testing.T) {
		cfg := withAdminSQL(proxyConfig(t, srv, ""))
		cfg.Admin.Users = []config.AdminUser{{Name: "ops2", Password: "ops2-pw"}}
		changes := mustReload(t, p, cfg)
		if !hasChange(changes, "admin.users[ops2]") || !hasChange(changes, "admin.users[ops]") {
			t.Errorf("changes %v lack the admin users", changes)
		}
		if err := login(adminDSN(p, "ops2", "ops2-pw")); err != nil {
			t.Errorf("admin user added by a reload: %v", err)
		}
		if err := login(adminDSN(p, adminUser, adminPass)); mysqlErrCode(err) != 1045 {
			t.Errorf("admin user removed by a reload: %v, want 1045", err)
		}
	})

	t.Run("caching_sha2_password", func(t *testing.T) {
		cfg := withAdminSQL(proxyConfig(t, srv, ""))
		cfg.Server.DefaultAuthPlugin = "caching_sha2_password"
		p := startProxy(t, cfg)
		// Full authentication over RSA, then the fast path.
		for range 2 {
			if err := login(adminDSN(p, adminUser, adminPass) + "?allowPublicKeyRetrieval=true"); err != nil {
				t.Fatalf("admin login with caching_sha2_password: %v", err)
			}
		}
		if err := login(adminDSN(p, adminUser, "nope") + "?allowPublicKeyRetrieval=true"); mysqlErrCode(err) != 1045 {
			t.Errorf("wrong password: %v, want 1045", err)
		}
	})
}

// The mariadb command-line client connects to the admin port and runs
// every admin statement.
func TestAdminSQLMariadbCLI(t *testing.T) {
	srv := testenv.Shared(t)
	p := startProxy(t, withAdminSQL(proxyConfig(t, srv, "")))
	waitChecked(t, p)
	bin := clientsBinary(t, "mariadb")
	host, port, err := net.SplitHostPort(p.AdminSQLAddr())
	if err != nil {
		t.Fatal(err)
	}
	run := func(stmts string) clientsResult {
		return clientsExec(t, 30*time.Second, nil, bin, "--no-defaults", "-h", host, "-P", port, "-u", adminUser,
			"-p"+adminPass, "--skip-ssl", "--table", "-e", stmts)
	}
	r := run("select @@version_comment limit 1; SHOW BACKENDS; SHOW SESSIONS; SHOW QUERY DIGESTS ORDER BY count DESC LIMIT 3; " +
		"RESET QUERY DIGESTS; SHOW SHARDING; SHOW CONFIG; SHOW VERSION; SHOW STATUS; " +
		"SET BACKEND main." + srv.Addr + " ONLINE;\nstatus")
	if r.exitCode != 0 {
		t.Fatalf("mariadb:\n%s", r)
	}
	for _, want := range []string{"shardgate admin", "| main    | " + srv.Addr, "| writer", "client_connections",
		"clusters[main].password", "| shardgate", "uptime_seconds", "Connection id:"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r)
		}
	}
	r = run("KILL SESSION 4000000000")
	if r.exitCode == 0 || !strings.Contains(r.stderr, "ERROR 1094") {
		t.Errorf("KILL SESSION of no session:\n%s", r)
	}
	r = run("FLUSH TABLES")
	if r.exitCode == 0 || !strings.Contains(r.stderr, "ERROR 1064") || !strings.Contains(r.stderr, "SHOW BACKENDS") {
		t.Errorf("unknown statement:\n%s", r)
	}
}

// PyMySQL on the admin port: it logs in, reads a view as dictionaries
// (the column names and types it decodes), and gets the unknown
// statement's error as a MySQL error with its code.
func TestAdminSQLPyMySQL(t *testing.T) {
	srv := testenv.Shared(t)
	p := startProxy(t, withAdminSQL(proxyConfig(t, srv, "")))
	waitChecked(t, p)
	py := clientsPython(t)
	host, port, err := net.SplitHostPort(p.AdminSQLAddr())
	if err != nil {
		t.Fatal(err)
	}
	script := `
import json, sys, pymysql, pymysql.cursors
conn = pymysql.connect(host=sys.argv[1], port=int(sys.argv[2]), user=sys.argv[3], password=sys.argv[4],
                       cursorclass=pymysql.cursors.DictCursor, autocommit=True)
with conn.cursor() as c:
    c.execute("SHOW BACKENDS")
    rows = c.fetchall()
    print(json.dumps([{"address": r["address"], "role": r["role"], "pool_open": r["pool_open"]} for r in rows]))
    try:
        c.execute("SHOW DATABASES")
        print("no error")
    except pymysql.MySQLError as e:
        print("error", e.args[0])
conn.close()
`
	r := clientsExec(t, 30*time.Second, nil, py, "-c", script, host, port, adminUser, adminPass)
	if r.exitCode != 0 {
		t.Fatalf("PyMySQL on the admin port:\n%s", r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var backends []struct {
		Address  string `json:"address"`
		Role     string `json:"role"`
		PoolOpen int    `json:"pool_open"`
	}
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &backends) != nil {
		t.Fatalf("PyMySQL printed:\n%s", r)
	}
	if len(backends) != 1 || backends[0].Address != srv.Addr || backends[0].Role != "writer" {
		t.Errorf("SHOW BACKENDS through PyMySQL: %+v, want the writer %s", backends, srv.Addr)
	}
	if lines[1] != "error 1064" {
		t.Errorf("SHOW DATABASES through PyMySQL: %q, want error 1064", lines[1])
	}
}

// SET BACKEND ... OFFLINE drains a replica: reads go to the other one;
// ONLINE brings it back.
func TestAdminSetBackendOfflineOnline(t *testing.T) {
	r := testenv.StartReplicated(t, 2)
	r.Primary.Exec(t, "CREATE DATABASE ab")
	r.WaitCaughtUp(t)
	ids := serverIDs(t, r)
	cfg := withAdminSQL(asApp(proxyConfig(t, r.Primary, splitConfig(t, r, []int{1, 1}, "    routing:\n      consistency: none\n"))))
	p, logs := startProxyLogged(t, cfg)
	waitChecked(t, p)
	admin := openDB(t, adminDSN(p, adminUser, adminPass))
	db := openDB(t, proxyDSN(p, appUser, appPass, "ab", ""))
	if got := whoAnswers(t, db, ids, 100, "SELECT @@server_id"); got[1] == 0 || got[2] == 0 {
		t.Fatalf("reads before: %v, want both replicas", got)
	}
	versions := adminTable(t, admin, "SHOW VERSION")[2:]
	if len(versions) != 3 {
		t.Errorf("SHOW VERSION lists %d servers, want 3: %v", len(versions), versions)
	}
	for _, v := range versions {
		if !strings.Contains(v["version"], "MariaDB") {
			t.Errorf("SHOW VERSION: %v, want each server's @@version", v)
		}
	}
	res, err := admin.Exec("SET BACKEND main." + r.Replicas[0].Addr + " OFFLINE")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Errorf("SET BACKEND affected %d rows, want 1", n)
	}
	if got := whoAnswers(t, db, ids, 60, "SELECT @@server_id"); got[1] != 0 || got[2] != 60 {
		t.Errorf("reads with replica 1 offline: %v, want all on replica 2", got)
	}
	for _, row := range adminTable(t, admin, "SHOW BACKENDS") {
		if want := map[bool]string{true: "offline", false: "online"}[row["address"] == r.Replicas[0].Addr]; row["state"] != want {
			t.Errorf("%s: state %s, want %s", row["address"], row["state"], want)
		}
	}
	mustExec(t, admin, "SET BACKEND `main`.`"+r.Replicas[0].Addr+"` ONLINE")
	if got := whoAnswers(t, db, ids, 100, "SELECT @@server_id"); got[1] == 0 || got[2] == 0 {
		t.Errorf("reads after ONLINE: %v, want both replicas", got)
	}
	for stmt, want := range map[string]string{
		"SET BACKEND nope.h:1 OFFLINE":           `no cluster "nope" (clusters: main)`,
		"SET BACKEND main.10.9.9.9:3306 OFFLINE": "cluster main has no server 10.9.9.9:3306 (its servers: " + r.Primary.Addr,
	} {
		if _, err := admin.Exec(stmt); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", stmt, err, want)
		}
	}
	found := 0
	for _, rec := range logs.records(t, "INFO") {
		if rec["msg"] == "admin: backend state set" && rec["admin_user"] == adminUser && rec["client"] != "" {
			found++
		}
	}
	if found != 2 {
		t.Errorf("%d SET BACKEND actions logged with the admin user and client, want 2:\n%s", found, logs)
	}
}

// KILL SESSION ends a client's connection, whichever listener it is on;
// connection ids are unique across the listeners.
func TestAdminKillSession(t *testing.T) {
	srv := testenv.Shared(t)
	cfg := withAdminSQL(proxyConfig(t, srv, ""))
	cfg.Listeners = append(cfg.Listeners, cfg.Listeners[0])
	p := startProxy(t, cfg)
	admin := openDB(t, adminDSN(p, adminUser, adminPass))
	first := oneConn(t, openDB(t, proxyDSN(p, appUser, appPass, "", "")))
	second := oneConn(t, openDB(t, fmt.Sprintf("%s:%s@tcp(%s)/", appUser, appPass, p.Addrs()[1])))
	id1, id2 := queryString(t, first, "SELECT CONNECTION_ID()"), queryString(t, second, "SELECT CONNECTION_ID()")
	if id1 == id2 {
		t.Fatalf("sessions of two listeners share connection id %s", id1)
	}
	adminID := queryString(t, admin, "SELECT CONNECTION_ID()")
	if adminID == id1 || adminID == id2 {
		t.Errorf("the admin session's id %s is a client's", adminID)
	}
	// A client's KILL reaches its own sessions on the other listener.
	third := oneConn(t, openDB(t, fmt.Sprintf("%s:%s@tcp(%s)/", appUser, appPass, p.Addrs()[1])))
	id3 := queryString(t, third, "SELECT CONNECTION_ID()")
	mustExec(t, first, "KILL CONNECTION "+id3)
	if _, err := third.ExecContext(context.Background(), "SELECT 1"); err == nil {
		t.Error("the session a client killed on the other listener still answers")
	}
	mustExec(t, admin, "KILL SESSION "+id2)
	if _, err := second.ExecContext(context.Background(), "SELECT 1"); err == nil {
		t.Error("the killed session still answers")
	}
	mustExec(t, first, "SELECT 1")
	if _, err := admin.Exec("KILL SESSION " + id2); mysqlErrCode(err) != 1094 {
		t.Errorf("KILL SESSION of a gone session: %v, want 1094", err)
	}
}

// adminReloadYAML is a configuration file of a replicated cluster with the
// admin port, replicas and pool bound as given.
func adminReloadYAML(r *testenv.Replicated, replicas []int, maxOpen int) string {
	var b strings.Builder
	for _, i := range replicas {
		fmt.Fprintf(&b, "      - address: %s\n", r.Replicas[i].Addr)
	}
	return fmt.Sprintf(`listeners: [{address: "127.0.0.1:0"}]
admin:
  sql: 127.0.0.1:0
  users: [{name: %s, password_hash: "%s"}]
users:
  - {name: %s, password_hash: "%s"}
clusters:
  - name: main
    user: %s
    password: %s
    pool: {max_open: %d, wait_timeout: 10s}
    routing: {consistency: none}
    primary: {address: "%s"}
    replicas:
%s`, adminUser, hashOf(adminPass), appUser, hashOf(appPass), testenv.AppUser, testenv.AppPassword, maxOpen, r.Primary.Addr, b.String())
}

// RELOAD CONFIG re-reads the file under a load of client statements: a
// replica added and a pool limit changed apply with no client error; a
// broken file is refused with its FILE:LINE problems and changes nothing.
func TestAdminReloadConfig(t *testing.T) {
	r := testenv.StartReplicated(t, 2)
	r.Primary.Exec(t, "CREATE DATABASE arl", "CREATE TABLE arl.t (id INT PRIMARY KEY AUTO_INCREMENT)")
	r.WaitCaughtUp(t)
	file := filepath.Join(t.TempDir(), "shardgate.yaml")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(adminReloadYAML(r, []int{0}, 3))
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	p, logs := startProxyLogged(t, cfg)
	p.SetReloadFunc(func() ([]config.Change, error) {
		cfg, err := config.Load(file)
		if err != nil {
			return nil, err
		}
		return p.Reload(cfg)
	})
	waitChecked(t, p)
	admin := openDB(t, adminDSN(p, adminUser, adminPass))
	db := openDB(t, proxyDSN(p, appUser, appPass, "arl", ""))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	var statements sync.Map
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			defer func() { statements.Store(g, n) }()
			for {
				select {
				case <-stop:
					return
				default:
				}
				var c int
				if err := db.QueryRow("SELECT COUNT(*) FROM t").Scan(&c); err != nil {
					errs <- err
					return
				}
				if _, err := db.Exec("INSERT INTO t VALUES ()"); err != nil {
					errs <- err
					return
				}
				n += 2
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)

	write(adminReloadYAML(r, []int{0, 1}, 5))
	changes := adminTable(t, admin, "RELOAD CONFIG")
	got := map[string]map[string]string{}
	for _, c := range changes {
		got[c["key"]] = c
	}
	added := "clusters[main].replicas[" + r.Replicas[1].Addr + "]"
	if c := got[added]; c["old"] != "(none)" || c["new"] != "(added)" || c["result"] != "applied" {
		t.Errorf("%s: %v (changes %v)", added, c, changes)
	}
	if c := got["clusters[main].pool.max_open"]; c["old"] != "3" || c["new"] != "5" || c["result"] != "applied" {
		t.Errorf("max_open: %v (changes %v)", c, changes)
	}
	if len(changes) != 4 { // max_idle and min_idle follow max_open
		t.Errorf("changes %v, want four", changes)
	}
	waitChecked(t, p)
	time.Sleep(300 * time.Millisecond)

	write(adminReloadYAML(r, []int{0, 1}, 5) + "bogus: 1\n")
	_, err = admin.Exec("RELOAD CONFIG")
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1105 || !strings.Contains(me.Message, file+":") ||
		!strings.Contains(me.Message, "bogus: unknown key") {
		t.Errorf("RELOAD CONFIG of a broken file: %v, want 1105 with its FILE:LINE problems", err)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("client statement during RELOAD CONFIG: %v", err)
	}
	total := 0
	statements.Range(func(_, v any) bool { total += v.(int); return true })
	if total < 20 {
		t.Errorf("only %d client statements ran during the reloads: not a load", total)
	}

	rows := adminTable(t, admin, "SHOW BACKENDS")
	if len(rows) != 3 {
		t.Errorf("SHOW BACKENDS after the reloads: %v, want the primary and both replicas", rows)
	}
	for _, s := range adminTable(t, admin, "SHOW CONFIG") {
		if s["key"] == "clusters[main].pool.max_open" && s["value"] != "5" {
			t.Errorf("after the broken file, max_open = %s, want 5 still", s["value"])
		}
	}
	logged := false
	for _, rec := range logs.records(t, "INFO") {
		logged = logged || rec["msg"] == "admin: configuration reloaded" && rec["admin_user"] == adminUser
	}
	if !logged {
		t.Errorf("RELOAD CONFIG not logged with its admin user:\n%s", logs)
	}
}
