package proxy_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
)

// TestShardedConnectionDeadlock: two transactions over two shards whose
// pools have one connection each, each holding one shard's and waiting
// for the other's. No server sees that deadlock; the transaction that
// waited longest (pool.wait_timeout) is rolled back on every shard and
// answered 1213, as a server answers a deadlock, which lets the other go
// on. Without it both waited out wait_timeout and got 9001, and sysbench
// at 16 threads over pools of 8 failed so (TestShardedSysbenchAtomic).
func TestShardedConnectionDeadlock(t *testing.T) {
	srv := testenv.Shared(t)
	const db = "cdl"
	srv.Exec(t, "DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db)
	for i := range 4 {
		srv.Exec(t, fmt.Sprintf("CREATE TABLE %s.u_%04d (id INT PRIMARY KEY, k INT NOT NULL)", db, i))
	}
	cfg := parseConfig(t, twoShardYAML(db, srv.Addr, srv.Addr, 1, `    tables:
      - {name: u, shard_key: k, rule: hash, shards: [s0, s1], sub_tables: 2}
`, ""), "deadlock.yaml")
	cfg.Admin.HTTP = "127.0.0.1:0"
	// a waits for s1, b for s0: a times out first, by far, whatever the
	// machine's load; the connection its rollback frees is b's.
	cfg.Clusters[0].Pool.WaitTimeout = 30 * time.Second
	cfg.Clusters[1].Pool.WaitTimeout = time.Second
	p := startProxy(t, cfg)
	conns := openDB(t, proxyDSN(p, appUser, appPass, db, ""))
	a, b := oneConn(t, conns), oneConn(t, conns)
	on0, on1 := keysOnBothShards(t, 4)
	mustExec(t, a, "BEGIN", fmt.Sprintf("INSERT INTO u VALUES (1, %d)", on0)) // a holds s0
	mustExec(t, b, "BEGIN", fmt.Sprintf("SELECT * FROM u WHERE k = %d", on1)) // b holds s1
	aDone := make(chan error, 1)
	go func() {
		_, err := a.ExecContext(context.Background(), fmt.Sprintf("SELECT * FROM u WHERE k = %d", on1))
		aDone <- err
	}()
	waitFor(t, "a waiting for s1's connection", 20*time.Second, func() bool {
		return poolMetric(t, p, "shardgate_backend_pool_waiters") == 1
	})
	if _, err := b.ExecContext(context.Background(), fmt.Sprintf("SELECT * FROM u WHERE k = %d", on0)); err != nil {
		t.Fatalf("b, once a let go of s0: %v", err)
	}
	if err := <-aDone; mysqlErrCode(err) != 1213 {
		t.Fatalf("a, waiting for s1 while holding s0: %v, want 1213", err)
	}
	mustExec(t, b, "COMMIT")
	// a's transaction was rolled back: its row is not there, and a goes on.
	if got := queryString(t, a, fmt.Sprintf("SELECT COUNT(*) FROM u WHERE k = %d", on0)); got != "0" {
		t.Fatalf("a's insert after its rollback: %s rows", got)
	}
	mustExec(t, a, fmt.Sprintf("INSERT INTO u VALUES (1, %d)", on0))
	if got := queryString(t, b, fmt.Sprintf("SELECT COUNT(*) FROM u WHERE k = %d", on0)); got != "1" {
		t.Fatalf("a's autocommitted insert: %s rows", got)
	}
}
