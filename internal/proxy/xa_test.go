package proxy_test

import (
	"context"
	"database/sql"
	"testing"
)

// atomicPair is shardedPairProxy's layout under cross_shard_writes:
// atomic: t_0000, t_0001 on s0 (the default cluster, which coordinates a
// transaction opened by BEGIN), t_0002, t_0003 on s1.
func atomicPair(t *testing.T, db string) (conn *sql.Conn, d0, d1 *sql.DB) {
	t.Helper()
	_, d0, d1, _, _, proxyDB := shardedPairProxy(t, db, "    cross_shard_writes: atomic\n")
	conn, err := proxyDB("").Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn, d0, d1
}

// xaPrepared lists the prepared XA branches of a server.
func xaPrepared(t *testing.T, d *sql.DB) []string {
	t.Helper()
	rows, err := d.Query("XA RECOVER")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var f, gl, bl int
		var data string
		if err := rows.Scan(&f, &gl, &bl, &data); err != nil {
			t.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

func TestAtomicTransactionCommitsOnEveryShard(t *testing.T) {
	conn, d0, d1 := atomicPair(t, "xacommit")
	mustExec(t, conn, "BEGIN")
	mustExec(t, conn, "/* shardgate:shard=s0 */ INSERT INTO t_0000 VALUES (1, 1)")
	mustExec(t, conn, "/* shardgate:shard=s1 */ INSERT INTO t_0002 VALUES (2, 2)")
	if got := queryString(t, d1, "SELECT COUNT(*) FROM t_0002"); got != "0" {
		t.Fatalf("s1's write is visible before COMMIT")
	}
	mustExec(t, conn, "COMMIT")
	if a, b := queryString(t, d0, "SELECT COUNT(*) FROM t_0000"), queryString(t, d1, "SELECT COUNT(*) FROM t_0002"); a != "1" || b != "1" {
		t.Fatalf("after COMMIT: s0 %s rows, s1 %s rows; want 1 and 1", a, b)
	}
	if p := xaPrepared(t, d1); len(p) != 0 {
		t.Fatalf("prepared branches left on s1: %q", p)
	}
	if got := queryString(t, d0, "SELECT COUNT(*) FROM shardgate_xa_decisions WHERE decision = 'commit'"); got != "1" {
		t.Fatalf("commit decisions on s0 = %s, want 1", got)
	}

	// ROLLBACK undoes both.
	mustExec(t, conn, "START TRANSACTION")
	mustExec(t, conn, "/* shardgate:shard=s1 */ UPDATE t_0002 SET v = 20")
	mustExec(t, conn, "/* shardgate:shard=s0 */ UPDATE t_0000 SET v = 10")
	mustExec(t, conn, "ROLLBACK")
	if a, b := queryString(t, d0, "SELECT v FROM t_0000"), queryString(t, d1, "SELECT v FROM t_0002"); a != "1" || b != "2" {
		t.Fatalf("after ROLLBACK: s0 v=%s, s1 v=%s; want 1 and 2", a, b)
	}

	// Only s1 writes: one phase.
	mustExec(t, conn, "BEGIN")
	mustExec(t, conn, "/* shardgate:shard=s0 */ SELECT * FROM t_0000")
	mustExec(t, conn, "/* shardgate:shard=s1 */ UPDATE t_0002 SET v = 21")
	mustExec(t, conn, "COMMIT")
	if b := queryString(t, d1, "SELECT v FROM t_0002"); b != "21" {
		t.Fatalf("one-phase commit on s1: v=%s, want 21", b)
	}
	if p := xaPrepared(t, d1); len(p) != 0 {
		t.Fatalf("prepared branches left on s1: %q", p)
	}
	// The connection goes on working.
	if got := queryString(t, conn, "SELECT COUNT(*) FROM t"); got != "2" {
		t.Fatalf("rows of t after the transactions = %s, want 2", got)
	}
}
