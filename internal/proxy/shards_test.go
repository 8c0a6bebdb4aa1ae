package proxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/sharding"
	"github.com/shardgate/shardgate/internal/testenv"
)

// shardedPair starts a proxy over two shards s0 (the shared server) and s1
// (a server of its own) with schema db: table t hash-sharded over both, 2
// sub-tables each, whose sub-tables the test creates on the backends.
func shardedPair(t testing.TB, db string) (p0, p1 *sql.DB, s0, s1 *testenv.Server, proxyDB func(params string) *sql.DB) {
	t.Helper()
	_, p0, p1, s0, s1, proxyDB = shardedPairProxy(t, db)
	return p0, p1, s0, s1, proxyDB
}

// shardedPairProxy is shardedPair that returns the proxy too, for raw
// protocol clients.
func shardedPairProxy(t testing.TB, db string, schemaKeys ...string) (p *proxy.Proxy, p0, p1 *sql.DB, s0, s1 *testenv.Server, proxyDB func(params string) *sql.DB) {
	t.Helper()
	return shardedPairPools(t, db, 4, schemaKeys...)
}

// shardedPairPools is shardedPairProxy whose clusters' pools hold at most
// maxOpen connections each.
func shardedPairPools(t testing.TB, db string, maxOpen int, schemaKeys ...string) (p *proxy.Proxy, p0, p1 *sql.DB, s0, s1 *testenv.Server, proxyDB func(params string) *sql.DB) {
	t.Helper()
	s0, s1 = testenv.Shared(t), testenv.Start(t, testenv.Options{})
	for _, s := range []*testenv.Server{s0, s1} {
		s.Exec(t, "DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db)
	}
	s0.Exec(t, "CREATE TABLE "+db+".t_0000 (id INT PRIMARY KEY, v INT)", "CREATE TABLE "+db+".t_0001 (id INT PRIMARY KEY, v INT)",
		"CREATE TABLE "+db+".city (id INT PRIMARY KEY, name VARCHAR(20))", "CREATE TABLE "+db+".plain (id INT PRIMARY KEY)")
	s1.Exec(t, "CREATE TABLE "+db+".t_0002 (id INT PRIMARY KEY, v INT)", "CREATE TABLE "+db+".t_0003 (id INT PRIMARY KEY, v INT)",
		"CREATE TABLE "+db+".city (id INT PRIMARY KEY, name VARCHAR(20))")
	cfg := parseConfig(t, twoShardYAML(db, s0.Addr, s1.Addr, maxOpen, strings.Join(schemaKeys, "")+`    tables:
      - {name: t, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: 2}
      - {name: city, type: reference}
`, ""), "sharded.yaml")
	p = startProxy(t, cfg)
	return p, openDB(t, s0.DSN(db)), openDB(t, s1.DSN(db)), s0, s1, func(params string) *sql.DB {
		return openDB(t, proxyDSN(p, appUser, appPass, db, params))
	}
}

func TestShardHintSendsAStatementToOneShard(t *testing.T) {
	d0, d1, _, _, proxyDB := shardedPair(t, "shint")
	db := proxyDB("")
	mustExec(t, db, "/* shardgate:shard=s1 */ INSERT INTO t_0002 VALUES (1, 10)")
	if got := queryString(t, d1, "SELECT v FROM t_0002 WHERE id = 1"); got != "10" {
		t.Fatalf("row on s1 = %q, want 10", got)
	}
	if got := queryString(t, d0, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'shint' AND table_name = 't_0002'"); got != "0" {
		t.Fatalf("s0 has a t_0002")
	}
	if got := queryString(t, db, "/* shardgate:shard=s1 */ SELECT v FROM t_0002 WHERE id = 1"); got != "10" {
		t.Fatalf("read through the hint = %q, want 10", got)
	}

	_, err := db.Exec("/* shardgate:shard=s9 */ SELECT 1")
	if mysqlErrCode(err) != mysql.ERNotSupportedYet || !contains(err.Error(), `"s9"`) {
		t.Fatalf("unknown shard in a hint: %v, want 1235 naming it", err)
	}
}

func TestTransactionAcrossShards(t *testing.T) {
	d0, d1, _, _, proxyDB := shardedPair(t, "stx")
	ctx := context.Background()
	conn, err := proxyDB("").Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	// Reads on both shards and writes on one: committed together.
	mustExec(t, conn, "BEGIN")
	mustExec(t, conn, "/* shardgate:shard=s1 */ INSERT INTO t_0002 VALUES (1, 1)")
	if got := queryString(t, conn, "/* shardgate:shard=s0 */ SELECT COUNT(*) FROM t_0000"); got != "0" {
		t.Fatalf("s0 count = %s", got)
	}
	if got := queryString(t, d1, "SELECT COUNT(*) FROM t_0002"); got != "0" {
		t.Fatalf("the write on s1 is visible before COMMIT (autocommitted?)")
	}
	// A second shard's write is refused before it runs; the transaction
	// stays open for the client to end.
	_, err = conn.ExecContext(ctx, "/* shardgate:shard=s0 */ INSERT INTO t_0000 VALUES (2, 2)")
	if mysqlErrCode(err) != mysql.ERNotSupportedYet || !contains(err.Error(), "cross_shard_writes") {
		t.Fatalf("second shard's write: %v, want 1235 naming cross_shard_writes", err)
	}
	mustExec(t, conn, "COMMIT")
	if got := queryString(t, d1, "SELECT COUNT(*) FROM t_0002"); got != "1" {
		t.Fatalf("s1 rows after COMMIT = %s, want 1", got)
	}
	if got := queryString(t, d0, "SELECT COUNT(*) FROM t_0000"); got != "0" {
		t.Fatalf("the refused write reached s0")
	}

	// A transaction that reaches s1 only after reading s0 still holds
	// the s1 write back until the end, and ROLLBACK undoes it.
	mustExec(t, conn, "START TRANSACTION")
	queryString(t, conn, "/* shardgate:shard=s0 */ SELECT COUNT(*) FROM t_0001")
	mustExec(t, conn, "/* shardgate:shard=s1 */ UPDATE t_0002 SET v = 5 WHERE id = 1")
	if got := queryString(t, d1, "SELECT v FROM t_0002 WHERE id = 1"); got != "1" {
		t.Fatalf("s1 sees the update before the end of the transaction: v = %s", got)
	}
	mustExec(t, conn, "ROLLBACK")
	if got := queryString(t, d1, "SELECT v FROM t_0002 WHERE id = 1"); got != "1" {
		t.Fatalf("ROLLBACK left v = %s on s1, want 1", got)
	}
	// After the transaction, writes go to any shard again.
	mustExec(t, conn, "/* shardgate:shard=s0 */ INSERT INTO t_0000 VALUES (3, 3)")
	if got := queryString(t, d0, "SELECT COUNT(*) FROM t_0000"); got != "1" {
		t.Fatalf("s0 rows = %s after the transaction, want 1", got)
	}
}

// subTableOf is where the hash rule puts an INT key among n sub-tables.
func subTableOf(t testing.TB, id int64, n int) int {
	t.Helper()
	h, err := sharding.NewHash(n)
	if err != nil {
		t.Fatal(err)
	}
	i, err := h.Index(sharding.IntValue(id))
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// keysOnBothShards returns a key whose row the hash rule over n
// sub-tables puts on each of two shards (the first n/2 sub-tables on s0,
// the others on s1): the last of the keys from 1 on that lands there
// before both are found.
func keysOnBothShards(t testing.TB, n int) (onS0, onS1 int64) {
	t.Helper()
	for id := int64(1); onS0 == 0 || onS1 == 0; id++ {
		if subTableOf(t, id, n) < n/2 {
			onS0 = id
		} else {
			onS1 = id
		}
	}
	return onS0, onS1
}

func TestShardedStatementsRouteByKey(t *testing.T) {
	d0, d1, _, _, proxyDB := shardedPair(t, "sroute")
	db := proxyDB("")
	direct := []*sql.DB{d0, d0, d1, d1} // by sub-table
	for id := int64(-5); id <= 14; id++ {
		mustExec(t, db, fmt.Sprintf("INSERT INTO t (id, v) VALUES (%d, %d)", id, id*10))
	}
	// Each row is on the sub-table the hash rule names, and only there.
	for id := int64(-5); id <= 14; id++ {
		want := subTableOf(t, id, 4)
		for i, d := range direct {
			n := queryString(t, d, fmt.Sprintf("SELECT COUNT(*) FROM t_%04d WHERE id = %d", i, id))
			if (n == "1") != (i == want) {
				t.Fatalf("id %d: %s row(s) on t_%04d, want it on t_%04d only", id, n, i, want)
			}
		}
	}
	// The key is typed: every spelling of 7 finds the row.
	for _, lit := range []string{"7", "'7'", "7.0", "0x07", "'7.0'"} {
		if got := queryString(t, db, "SELECT v FROM t WHERE id = "+lit); got != "70" {
			t.Errorf("id = %s: v = %q, want 70", lit, got)
		}
	}
	if got := queryString(t, db, "SELECT v FROM t WHERE id = -1"); got != "-10" {
		t.Errorf("id = -1: v = %q", got)
	}
	// Without a column list, the values follow the table's columns, learnt
	// from the shards with the key type.
	mustExec(t, db, "INSERT INTO t VALUES (100, 1), (101, 2), (102, 3)")
	for id, v := range map[int64]string{100: "1", 101: "2", 102: "3"} {
		d := direct[subTableOf(t, id, 4)]
		if got := queryString(t, d, fmt.Sprintf("SELECT v FROM t_%04d WHERE id = %d", subTableOf(t, id, 4), id)); got != v {
			t.Errorf("INSERT without a column list: id %d has v %q on its sub-table, want %s", id, got, v)
		}
	}
	mustExec(t, db, "DELETE FROM t WHERE id >= 100")
	// A read without a key: every sub-table's rows, one result set.
	rows, err := db.Query("SELECT id FROM t WHERE v >= 0")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil || n != 15 {
		t.Fatalf("scatter read: %d rows, err %v; want 15", n, err)
	}
	// Writes without a key go to every sub-table, affected rows summed.
	res, err := db.Exec("UPDATE t SET v = v + 1 WHERE v < 50")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 10 {
		t.Errorf("UPDATE over every sub-table: %d rows affected, want 10", n)
	}
	res, err = db.Exec("DELETE FROM t WHERE id IN (1, 2, 3, 4)")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 4 {
		t.Errorf("DELETE by keys: %d rows affected, want 4", n)
	}
	// What needs a merge across sub-tables is merged (issue 14); what no
	// merge answers is evaluated (issue 22).
	if got := queryString(t, db, "SELECT GROUP_CONCAT(id ORDER BY id DESC) FROM t WHERE id BETWEEN 5 AND 7"); got != "7,6,5" {
		t.Errorf("GROUP_CONCAT across sub-tables: %q", got)
	}
	if got := queryString(t, db, "SELECT GROUP_CONCAT(rn ORDER BY id) FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY id DESC) rn FROM t WHERE id BETWEEN 5 AND 7) w"); got != "3,2,1" {
		t.Errorf("a window function across sub-tables: %q, want 3,2,1", got)
	}
	// One key: the whole statement on its sub-table, ORDER BY included.
	if got := queryString(t, db, "SELECT v FROM t WHERE id = 9 ORDER BY v LIMIT 1"); got != "90" {
		t.Errorf("ORDER BY on one sub-table: %q", got)
	}

	// A reference table: written on every shard, read from one.
	res, err = db.Exec("INSERT INTO city VALUES (1, 'Oslo'), (2, 'Rome')")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 2 {
		t.Errorf("reference INSERT: %d rows affected, want 2 (one server's)", n)
	}
	for i, d := range []*sql.DB{d0, d1} {
		if got := queryString(t, d, "SELECT COUNT(*) FROM city"); got != "2" {
			t.Errorf("shard s%d holds %s city rows, want 2", i, got)
		}
	}
	if got := queryString(t, db, "SELECT name FROM city WHERE id = 2"); got != "Rome" {
		t.Errorf("reference read: %q", got)
	}
	// Unlisted tables live on the default cluster.
	mustExec(t, db, "INSERT INTO plain VALUES (5)")
	if got := queryString(t, d0, "SELECT COUNT(*) FROM plain"); got != "1" {
		t.Errorf("unsharded table on s0 has %s rows", got)
	}
}

func TestShardedSchemaRefusesParserChangingSQLModes(t *testing.T) {
	_, _, _, _, proxyDB := shardedPair(t, "smode")
	ctx := context.Background()
	conn, err := proxyDB("").Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	mustExec(t, conn, "INSERT INTO t VALUES (1, 1)")
	for _, mode := range []string{"ANSI_QUOTES", "ANSI", "PIPES_AS_CONCAT", "NO_BACKSLASH_ESCAPES", "HIGH_NOT_PRECEDENCE"} {
		mustExec(t, conn, "SET sql_mode = '"+mode+"'")
		_, err := conn.ExecContext(ctx, `SELECT v FROM t WHERE id = 1`)
		if mysqlErrCode(err) != mysql.ERNotSupportedYet || !contains(err.Error(), "sql_mode") {
			t.Errorf("sql_mode %s: %v, want 1235 naming the sql_mode", mode, err)
		}
	}
	mustExec(t, conn, "SET sql_mode = 'STRICT_TRANS_TABLES'")
	if got := queryString(t, conn, "SELECT v FROM t WHERE id = 1"); got != "1" {
		t.Fatalf("after a plain sql_mode: %q", got)
	}
}

func TestExplainHintShowsThePlanWithoutRunningIt(t *testing.T) {
	_, d1, _, _, proxyDB := shardedPair(t, "sexplain")
	db := proxyDB("")
	explain := func(sql string) [][]string {
		t.Helper()
		rows, err := db.Query("/* shardgate:explain */ " + sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		defer rows.Close()
		var out [][]string
		for rows.Next() {
			var step, prim, shard, q string
			if err := rows.Scan(&step, &prim, &shard, &q); err != nil {
				t.Fatal(err)
			}
			out = append(out, []string{prim, shard, q})
		}
		return out
	}
	id := int64(0)
	for subTableOf(t, id, 4) < 2 { // a key on s1
		id++
	}
	got := explain(fmt.Sprintf("INSERT INTO t (id, v) VALUES (%d, 1)", id))
	want := fmt.Sprintf("t_%04d", subTableOf(t, id, 4))
	if len(got) != 1 || got[0][0] != "Route" || got[0][1] != "s1" || !contains(got[0][2], want) {
		t.Fatalf("explain of an INSERT on s1: %v, want one Route to s1 naming %s", got, want)
	}
	if n := queryString(t, d1, "SELECT COUNT(*) FROM "+want); n != "0" {
		t.Fatalf("the explained INSERT ran: %s rows", n)
	}
	// (Each shard's 2 sub-tables in one UNION ALL, all shards at once.)
	if got := explain("SELECT * FROM t WHERE v = 1"); len(got) != 3 || got[0][0] != "Merge" || !contains(got[1][2], "union all") ||
		!contains(got[2][2], "rows passed on as they come") {
		t.Fatalf("explain of a read without key: %v, want a Merge passing rows over 2 shards", got)
	}
	// A statement with effects is not run once more as a column probe:
	// sub-table by sub-table.
	if got := explain("SELECT v, SLEEP(0) FROM t WHERE v = 1"); len(got) != 4 || got[0][0] != "Scatter" {
		t.Fatalf("explain of a read without key calling SLEEP: %v, want a Scatter over 4 sub-tables", got)
	}
	if got := explain("SELECT v, COUNT(*) FROM t GROUP BY v ORDER BY COUNT(*) DESC LIMIT 3"); len(got) != 3 || got[0][0] != "Merge" || got[2][0] != "Merge" ||
		!contains(got[2][2], "COUNT of column 2") || !contains(got[2][2], "then sort by 2 DESC") {
		t.Fatalf("explain of a merge: %v, want a Merge over 2 shards and its description", got)
	}
	// Evaluated: the table copied from each shard into a temporary table
	// of the default cluster, where the statement runs.
	if got := explain("SELECT id, ROW_NUMBER() OVER (ORDER BY id) FROM t"); len(got) != 5 || got[0][0] != "Evaluate: create" ||
		got[1][1] != "s0" || got[2][1] != "s1" || !contains(got[2][2], "UNION ALL") || got[3][0] != "Evaluate: the statement" || got[4][0] != "Evaluate: drop" {
		t.Fatalf("explain of an evaluated statement: %v", got)
	}
	if got := explain("SELECT id, @v FROM t"); len(got) != 1 || got[0][0] != "Refuse" || !contains(got[0][2], "1235") {
		t.Fatalf("explain of a refused statement: %v", got)
	}
}

// User variables live on one backend connection: a statement that reads
// one goes where SET put it (the default cluster), and one on sharded
// tables, which would read NULL on the other shards, is refused.
func TestShardedUserVariables(t *testing.T) {
	_, _, _, _, proxyDB := shardedPair(t, "suvar")
	ctx := context.Background()
	conn, err := proxyDB("").Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	mustExec(t, conn, "INSERT INTO t VALUES (1, 10), (2, 20), (3, 30), (4, 40)")
	// Move the session to s1 first, so SET would land there were it run
	// where the session is.
	queryString(t, conn, "/* shardgate:shard=s1 */ SELECT COUNT(*) FROM t_0002")
	mustExec(t, conn, "SET @x = 7")
	if got := queryString(t, conn, "SELECT @x"); got != "7" {
		t.Fatalf("SELECT @x = %q, want 7", got)
	}
	mustExec(t, conn, "INSERT INTO plain VALUES (@x)")
	if got := queryString(t, conn, "SELECT id FROM plain"); got != "7" {
		t.Fatalf("unsharded table written with @x: %q, want 7", got)
	}
	_, err = conn.ExecContext(ctx, "UPDATE t SET v = @x")
	if mysqlErrCode(err) != mysql.ERNotSupportedYet || !contains(err.Error(), "user variables") {
		t.Fatalf("UPDATE of a sharded table with @x: %v, want 1235 naming user variables", err)
	}
}

func TestShardedSessionStatements(t *testing.T) {
	_, _, _, _, proxyDB := shardedPair(t, "ssess")
	db := proxyDB("")
	for _, q := range []string{"USE ssess", "DO 1", "SET NAMES utf8mb4", "SET SESSION sql_mode = 'STRICT_ALL_TABLES'"} {
		if _, err := db.Exec(q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	if got := queryString(t, db, "SELECT DATABASE()"); got != "ssess" {
		t.Errorf("DATABASE() = %q", got)
	}
}

func TestExplainCoversEveryPrimitive(t *testing.T) {
	_, _, _, _, proxyDB := shardedPair(t, "sexplain2")
	db := proxyDB("")
	for sql, want := range map[string]string{
		"INSERT INTO t (id, v) VALUES (1, 1), (2, 2), (3, 3), (4, 4), (5, 5)": "InsertSplit",
		"ALTER TABLE t ADD COLUMN w INT":                                      "DDL",
		"SHOW TABLES":                                                         "Metadata",
		"UPDATE city SET name = 'x'":                                          "Fanout",
	} {
		var step, prim, shard, q string
		if err := db.QueryRow("/* shardgate:explain */ "+sql).Scan(&step, &prim, &shard, &q); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if !contains(prim, want) {
			t.Errorf("explain %s: first step %q, want %s", sql, prim, want)
		}
	}
	var n int
	rows, err := db.Query("SELECT id FROM t")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		n++
	}
	if n != 0 {
		t.Errorf("an explained INSERT ran: %d rows", n)
	}
}

// A DDL through the proxy drops the plans it may have made stale: an
// INSERT without a column list planned before an ALTER that adds a
// column takes the new column's value after it.
func TestShardedDDLForgetsStalePlans(t *testing.T) {
	_, d1, _, _, proxyDB := shardedPair(t, "sstale")
	db := proxyDB("")
	mustExec(t, db, "INSERT INTO t VALUES (1, 10)")
	// The shape of three values is planned (and refused, as the server
	// would) before the column exists…
	if _, err := db.Exec("INSERT INTO t VALUES (3, 30, 300)"); mysqlErrCode(err) != 1136 {
		t.Fatalf("three values for two columns: %v, want 1136", err)
	}
	mustExec(t, db, "ALTER TABLE t ADD COLUMN w INT")
	// …and planned again after it.
	mustExec(t, db, "INSERT INTO t VALUES (2, 20, 200)")
	id := int64(2)
	sub := subTableOf(t, id, 4)
	d := d1
	if sub < 2 {
		d = proxyDB("") // s0's rows are read through the proxy by key
		if got := queryString(t, d, "SELECT w FROM t WHERE id = 2"); got != "200" {
			t.Fatalf("w = %q, want 200", got)
		}
		return
	}
	if got := queryString(t, d, fmt.Sprintf("SELECT w FROM t_%04d WHERE id = 2", sub)); got != "200" {
		t.Fatalf("w = %q on t_%04d, want 200", got, sub)
	}
}

// writeBothShards opens, on a proxy whose schema db has
// cross_shard_writes: allow, a transaction that writes a row on each
// shard (t_0000 on s0 first, then t_0002 on s1), and returns its
// connection, the shards and direct connections to them.
func writeBothShards(t *testing.T, db string) (conn *sql.Conn, d0, d1 *sql.DB, s0 *testenv.Server) {
	t.Helper()
	_, d0, d1, s0, _, proxyDB := shardedPairProxy(t, db, "    cross_shard_writes: allow\n")
	conn, err := proxyDB("").Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	mustExec(t, conn, "BEGIN")
	mustExec(t, conn, "/* shardgate:shard=s0 */ INSERT INTO t_0000 VALUES (1, 1)")
	mustExec(t, conn, "/* shardgate:shard=s1 */ INSERT INTO t_0002 VALUES (2, 2)")
	return conn, d0, d1, s0
}

// cross_shard_writes: allow lets a transaction write on both shards; the
// shards commit in turn, and a ROLLBACK undoes both.
func TestCrossShardWritesAllowed(t *testing.T) {
	conn, d0, d1, _ := writeBothShards(t, "sxallow")
	if got := queryString(t, d1, "SELECT COUNT(*) FROM t_0002"); got != "0" {
		t.Fatalf("s1's write is visible before COMMIT")
	}
	mustExec(t, conn, "COMMIT")
	if a, b := queryString(t, d0, "SELECT COUNT(*) FROM t_0000"), queryString(t, d1, "SELECT COUNT(*) FROM t_0002"); a != "1" || b != "1" {
		t.Fatalf("after COMMIT: s0 %s rows, s1 %s rows; want 1 and 1", a, b)
	}
	mustExec(t, conn, "START TRANSACTION")
	mustExec(t, conn, "/* shardgate:shard=s1 */ UPDATE t_0002 SET v = 20")
	mustExec(t, conn, "/* shardgate:shard=s0 */ UPDATE t_0000 SET v = 10")
	mustExec(t, conn, "ROLLBACK")
	if a, b := queryString(t, d0, "SELECT v FROM t_0000"), queryString(t, d1, "SELECT v FROM t_0002"); a != "1" || b != "2" {
		t.Fatalf("after ROLLBACK: s0 v=%s, s1 v=%s; want 1 and 2", a, b)
	}
}

// A shard that fails at COMMIT under cross_shard_writes: allow: the
// shards not yet committed roll back and the client is told which did.
func TestCrossShardCommitFailure(t *testing.T) {
	conn, d0, d1, s0 := writeBothShards(t, "sxfail")
	ctx := context.Background()
	// s0, written first, commits first: its connection dies before.
	root := s0.RootDB(t)
	rows, err := root.Query("SELECT id FROM information_schema.processlist WHERE db = 'sxfail' AND user = ?", testenv.User)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for rows.Next() {
		var id string
		_ = rows.Scan(&id)
		ids = append(ids, id)
	}
	rows.Close()
	for _, id := range ids {
		_, _ = root.Exec("KILL " + id)
	}
	_, err = conn.ExecContext(ctx, "COMMIT")
	if mysqlErrCode(err) != mysql.ERErrorDuringCommit || !contains(err.Error(), "shard s0") || !contains(err.Error(), "no shard had committed") {
		t.Fatalf("COMMIT with s0's connection gone: %v, want 1180 naming s0", err)
	}
	if a, b := queryString(t, d0, "SELECT COUNT(*) FROM t_0000"), queryString(t, d1, "SELECT COUNT(*) FROM t_0002"); a != "0" || b != "0" {
		t.Fatalf("after the failed COMMIT: s0 %s rows, s1 %s rows; want none", a, b)
	}
	if got := queryString(t, conn, "SELECT 1"); got != "1" {
		t.Fatalf("the session does not go on after the failed COMMIT: %q", got)
	}
}
