package proxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/testenv"
)

// shardedPair starts a proxy over two shards s0 (the shared server) and s1
// (a server of its own) with schema db: table t hash-sharded over both, 2
// sub-tables each, whose sub-tables the test creates on the backends.
func shardedPair(t *testing.T, db string) (p0, p1 *sql.DB, s0, s1 *testenv.Server, proxyDB func(params string) *sql.DB) {
	t.Helper()
	s0, s1 = testenv.Shared(t), testenv.Start(t, testenv.Options{})
	for _, s := range []*testenv.Server{s0, s1} {
		s.Exec(t, "DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db)
	}
	s0.Exec(t, "CREATE TABLE "+db+".t_0000 (id INT PRIMARY KEY, v INT)", "CREATE TABLE "+db+".t_0001 (id INT PRIMARY KEY, v INT)")
	s1.Exec(t, "CREATE TABLE "+db+".t_0002 (id INT PRIMARY KEY, v INT)", "CREATE TABLE "+db+".t_0003 (id INT PRIMARY KEY, v INT)")
	yaml := fmt.Sprintf(`
listeners: [{address: "127.0.0.1:0"}]
users:
  - {name: %s, password_hash: "%s", default_database: %s}
clusters:
  - {name: s0, user: %s, password: %s, pool: {max_open: 4}, primary: {address: "%s"}}
  - {name: s1, user: %s, password: %s, pool: {max_open: 4}, primary: {address: "%s"}}
schemas:
  - name: %s
    default_cluster: s0
    tables:
      - {name: t, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: 2}
`, appUser, hashOf(appPass), db, testenv.User, testenv.Password, s0.Addr, testenv.User, testenv.Password, s1.Addr, db)
	cfg, err := config.Parse([]byte(yaml), "sharded.yaml")
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	p := startProxy(t, cfg)
	return openDB(t, s0.DSN(db)), openDB(t, s1.DSN(db)), s0, s1, func(params string) *sql.DB {
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
	// Until statements are routed by their shard key, the proxy refuses
	// them rather than guess a shard.
	_, err = db.Exec("SELECT * FROM t WHERE id = 1")
	if mysqlErrCode(err) != mysql.ERNotSupportedYet || !contains(err.Error(), "shardgate:shard=") {
		t.Fatalf("unrouted statement on a sharded schema: %v, want 1235", err)
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
