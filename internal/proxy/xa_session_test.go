package proxy_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/shardgate/shardgate/internal/mysql"
)

// TestAtomicFirstStatementOverBothShards: a transaction's first write is
// a multi-row INSERT over both shards, whose first row is on the shard
// the transaction did not open on (BEGIN runs where the session's last
// statement ran). Its parts were checked in row order, which made that
// shard the transaction's writer and refused the part on the shard
// where BEGIN ran, as a second local transaction beside the
// coordinator; the shard BEGIN opened on coordinates, the other joins as
// an XA branch. (Two local transactions, autocommit=0 and a first
// statement over both shards, still refuse the second write:
// TestAtomicTransactionSemantics.)
func TestAtomicFirstStatementOverBothShards(t *testing.T) {
	conn, d0, d1 := atomicPair(t, "xafirstrow")
	one := subTableOf(t, 1, 4) / 2 // the shard of id 1, the first row
	for _, before := range []string{"s0", "s1"} {
		for _, begin := range []string{"BEGIN", "START TRANSACTION READ WRITE"} {
			mustExec(t, conn, "DELETE FROM t", "/* shardgate:shard="+before+" */ SELECT 1", begin)
			if _, err := conn.ExecContext(context.Background(), "INSERT INTO t VALUES (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6)"); err != nil {
				t.Fatalf("%s on %s, the first row's on s%d: %v", begin, before, one, err)
			}
			mustExec(t, conn, "COMMIT")
			n0 := queryString(t, d0, "SELECT (SELECT COUNT(*) FROM t_0000) + (SELECT COUNT(*) FROM t_0001)")
			n1 := queryString(t, d1, "SELECT (SELECT COUNT(*) FROM t_0002) + (SELECT COUNT(*) FROM t_0003)")
			if n0 == "0" || n1 == "0" || queryString(t, conn, "SELECT COUNT(*) FROM t") != "6" {
				t.Fatalf("%s on %s: s0 holds %s rows, s1 %s; want the 6 rows on both", begin, before, n0, n1)
			}
		}
	}
}

// Under cross_shard_writes: atomic, a transaction whose part on one shard
// fails with a deadlock (1213) or a lock wait timeout (1205) is rolled
// back on every shard: one server rolls a deadlocked transaction back as
// a whole, and only rolling back a transaction caught in a deadlock
// across shards, which no server sees and which only times out, releases
// the locks the other transaction waits for.

// atomicConns is atomicPair's layout with two client connections, their
// rows in place: ids 1..6 in t_0000 on s0 and in t_0002 on s1, v = 0
// (written with hints: which sub-table holds a key does not matter here).
func atomicConns(t *testing.T, db string) (a, b *sql.Conn, d0, d1 *sql.DB) {
	t.Helper()
	_, d0, d1, _, _, proxyDB := shardedPairProxy(t, db, "    cross_shard_writes: atomic\n")
	mustExec(t, d0, "INSERT INTO t_0000 VALUES (1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (6, 0)")
	mustExec(t, d1, "INSERT INTO t_0002 VALUES (1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (6, 0)")
	pdb := proxyDB("")
	return dbConn(t, pdb), dbConn(t, pdb), d0, d1
}

// TestAtomicDeadlockRollsBackEveryShard: a deadlock on the coordinator
// shard (s0, where BEGIN opened the transaction) or on a shard whose part
// is an XA branch (s1). The other shard's part is rolled back at once,
// its locks released before the victim's next statement, and the
// victim's COMMIT then commits nothing, as on one server
// (TestAtomicTransactionDeadlockRollsBackEveryShard: the next statement
// runs outside the transaction).
func TestAtomicDeadlockRollsBackEveryShard(t *testing.T) {
	for _, c := range []struct{ name, on, other string }{{"coordinator", "s0", "s1"}, {"branch", "s1", "s0"}} {
		t.Run(c.name, func(t *testing.T) {
			db := "xadeadlock_" + c.name
			a, b, d0, d1 := atomicConns(t, db)
			d := map[string]*sql.DB{"s0": d0, "s1": d1}
			table := map[string]string{"s0": "t_0000", "s1": "t_0002"}
			update := func(shard, v, id string) string {
				return "/* shardgate:shard=" + shard + " */ UPDATE " + table[shard] + " SET v = " + v + " WHERE id = " + id
			}
			// b holds more rows than a on the deadlock's shard: InnoDB
			// picks a, the lighter transaction, as the victim.
			mustExec(t, b, "BEGIN")
			for _, id := range []string{"2", "3", "4", "5", "6"} {
				mustExec(t, b, update(c.on, "2", id))
			}
			mustExec(t, a, "BEGIN", update("s0", "1", "1"), update("s1", "1", "1"))
			aDone := execAsync(a, update(c.on, "1", "2"))
			waitLockWait(t, d[c.on], db)
			bDone := execAsync(b, update(c.on, "2", "1"))
			if err := <-aDone; mysqlErrCode(err) != 1213 {
				t.Fatalf("a's UPDATE: %v, want the deadlock (1213)", err)
			}
			if err := <-bDone; err != nil {
				t.Fatalf("b's UPDATE after a's deadlock: %v", err)
			}
			// a's part on the other shard was rolled back with the
			// deadlock, its lock released.
			checkNoTrx(t, d[c.other], db, c.other)
			// COMMIT after the deadlock commits nothing, as on one server.
			mustExec(t, a, "COMMIT")
			mustExec(t, b, "COMMIT")
			if got := queryString(t, d[c.other], "SELECT GROUP_CONCAT(v ORDER BY id) FROM "+table[c.other]); got != "0,0,0,0,0,0" {
				t.Errorf("%s: v = %s after the deadlocked transaction, want 0s (rolled back)", c.other, got)
			}
			if got := queryString(t, d[c.on], "SELECT GROUP_CONCAT(v ORDER BY id) FROM "+table[c.on]); got != "2,2,2,2,2,2" {
				t.Errorf("%s: v = %s, want b's writes only", c.on, got)
			}
			checkNoTrx(t, d[c.on], db, c.on)
			// The session goes on: a new transaction over both shards
			// commits.
			mustExec(t, a, "BEGIN", update("s1", "3", "1"), update("s0", "3", "1"), "COMMIT")
			if x, y := queryString(t, d0, "SELECT v FROM t_0000 WHERE id = 1"), queryString(t, d1, "SELECT v FROM t_0002 WHERE id = 1"); x != "3" || y != "3" {
				t.Errorf("after a new transaction: s0 v = %s, s1 v = %s, want 3 and 3", x, y)
			}
		})
	}
}

// TestAtomicDeadlockAcrossShardsTimesOut: two transactions each waiting
// for the other's row on the other shard. The first lock wait timeout
// (1205) rolls its transaction back on both shards, which lets the other
// go on; it commits.
func TestAtomicDeadlockAcrossShardsTimesOut(t *testing.T) {
	a, b, d0, d1 := atomicConns(t, "xatimeout")
	mustExec(t, a, "SET SESSION innodb_lock_wait_timeout = 1", "BEGIN",
		"/* shardgate:shard=s0 */ UPDATE t_0000 SET v = 1 WHERE id = 1")
	mustExec(t, b, "SET SESSION innodb_lock_wait_timeout = 30", "BEGIN",
		"/* shardgate:shard=s1 */ UPDATE t_0002 SET v = 2 WHERE id = 1")
	aDone := execAsync(a, "/* shardgate:shard=s1 */ UPDATE t_0002 SET v = 1 WHERE id = 1")
	waitLockWait(t, d1, "xatimeout")
	bDone := execAsync(b, "/* shardgate:shard=s0 */ UPDATE t_0000 SET v = 2 WHERE id = 1")
	if err := <-aDone; mysqlErrCode(err) != mysql.ERLockWaitTimeout {
		t.Fatalf("a's UPDATE: %v, want the lock wait timeout (1205)", err)
	}
	if err := <-bDone; err != nil {
		t.Fatalf("b's UPDATE once a timed out: %v", err)
	}
	mustExec(t, b, "COMMIT")
	mustExec(t, a, "COMMIT") // nothing left to commit
	if x, y := queryString(t, d0, "SELECT v FROM t_0000 WHERE id = 1"), queryString(t, d1, "SELECT v FROM t_0002 WHERE id = 1"); x != "2" || y != "2" {
		t.Errorf("s0 v = %s, s1 v = %s, want b's 2 and 2", x, y)
	}
	checkNoTrx(t, d0, "xatimeout", "s0")
	checkNoTrx(t, d1, "xatimeout", "s1")
}
