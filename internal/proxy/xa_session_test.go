package proxy_test

import (
	"context"
	"testing"
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
