package proxy_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"
)

// TestCommitEndsEveryShardsPart: COMMIT (or ROLLBACK) of a transaction
// whose last statement ran on another shard than the one that wrote
// last. That shard's part, the session's current connection, was not
// among those ended: it stayed open after the client's COMMIT, with its
// snapshot (the session read stale rows there) and, under
// cross_shard_writes: allow, with its writes uncommitted.
func TestCommitEndsEveryShardsPart(t *testing.T) {
	for _, mode := range []string{"refuse", "allow"} {
		t.Run(mode, func(t *testing.T) {
			db := "trxend_" + mode
			_, d0, d1, _, _, proxyDB := shardedPairProxy(t, db, "    cross_shard_writes: "+mode+"\n")
			mustExec(t, d0, "INSERT INTO t_0000 VALUES (1, 0)")
			mustExec(t, d1, "INSERT INTO t_0002 VALUES (2, 0)")
			conn, err := proxyDB("").Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			for _, end := range []string{"COMMIT", "ROLLBACK"} {
				mustExec(t, conn, "BEGIN")
				if mode == "allow" {
					mustExec(t, conn, "/* shardgate:shard=s1 */ UPDATE t_0002 SET v = v + 1")
				}
				mustExec(t, conn, "/* shardgate:shard=s0 */ UPDATE t_0000 SET v = v + 1",
					"/* shardgate:shard=s1 */ SELECT * FROM t_0002", end)
				checkNoTrx(t, d1, db, "s1")
				if mode == "allow" && end == "COMMIT" {
					if got := queryString(t, d1, "SELECT v FROM t_0002"); got != "1" {
						t.Fatalf("s1 after COMMIT: v = %s, want 1", got)
					}
				}
				// The session reads s1's latest rows, not a snapshot of
				// the transaction.
				mustExec(t, d1, "UPDATE t_0002 SET v = 10")
				if got := queryString(t, conn, "/* shardgate:shard=s1 */ SELECT v FROM t_0002"); got != "10" {
					t.Fatalf("after %s: s1 reads v = %s through shardgate, want 10", end, got)
				}
				mustExec(t, d1, "UPDATE t_0002 SET v = 0")
			}
		})
	}
}

// execAsync runs sql on c in the background; the channel gets its error.
func execAsync(c *sql.Conn, sql string) <-chan error {
	ch := make(chan error, 1)
	go func() {
		_, err := c.ExecContext(context.Background(), sql)
		ch <- err
	}()
	return ch
}

// trxCount counts the transactions of database db on d's server in state
// ("" for any).
func trxCount(t *testing.T, d *sql.DB, db, state string) string {
	t.Helper()
	q := "SELECT COUNT(*) FROM information_schema.innodb_trx x JOIN information_schema.processlist p ON p.id = x.trx_mysql_thread_id WHERE p.db = '" + db + "'"
	if state != "" {
		q += " AND x.trx_state = '" + state + "'"
	}
	return queryString(t, d, q)
}

// waitTrx polls d's server until trxCount(state) satisfies cond. InnoDB
// refreshes what information_schema.innodb_trx shows only when it was not
// read in the last 0.1 s: the polls are 0.25 s apart.
func waitTrx(t *testing.T, d *sql.DB, db, state, what string, cond func(n string) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond(trxCount(t, d, db, state)) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitLockWait waits until a statement in database db of d's server
// waits for a row lock.
func waitLockWait(t *testing.T, d *sql.DB, db string) {
	t.Helper()
	waitTrx(t, d, db, "LOCK WAIT", "a lock wait", func(n string) bool { return n != "0" })
}

// checkNoTrx checks that d's server holds no transaction in database db
// and no prepared XA branch of shardgate's in it (the branch qualifier
// ends with the schema's name).
func checkNoTrx(t *testing.T, d *sql.DB, db, name string) {
	t.Helper()
	waitTrx(t, d, db, "", "no transaction left on "+name, func(n string) bool { return n == "0" })
	var left []string
	for _, x := range xaPrepared(t, d) {
		if strings.HasSuffix(x, ":"+db) {
			left = append(left, x)
		}
	}
	if len(left) != 0 {
		t.Fatalf("prepared branches left on %s: %q", name, left)
	}
}
