package proxy_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/admin"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/testenv"
	sgxa "github.com/shardgate/shardgate/internal/xa"
)

// atomicPair is shardedPairProxy's layout under cross_shard_writes:
// atomic: t_0000, t_0001 on s0 (the default cluster, which coordinates a
// transaction opened by BEGIN), t_0002, t_0003 on s1.
func atomicPair(t *testing.T, db string) (conn *sql.Conn, d0, d1 *sql.DB) {
	t.Helper()
	return atomicPairMode(t, db, "atomic")
}

// atomicPairMode is atomicPair under another cross_shard_writes.
func atomicPairMode(t *testing.T, db, mode string) (conn *sql.Conn, d0, d1 *sql.DB) {
	t.Helper()
	_, d0, d1, _, _, proxyDB := shardedPairProxy(t, db, "    cross_shard_writes: "+mode+"\n")
	return dbConn(t, proxyDB("")), d0, d1
}

// dbConn is one connection of db's, closed at the end of the test.
func dbConn(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// xaPrepared lists the prepared XA branches of shardgate on a server.
func xaPrepared(t *testing.T, d *sql.DB) []string {
	t.Helper()
	p, err := testenv.XAPrepared(d, sgxa.FormatID)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// wantValues checks v of the one row of t_0000 on s0 (d0) and of t_0002
// on s1 (d1).
func wantValues(t *testing.T, d0, d1 *sql.DB, after, want0, want1 string) {
	t.Helper()
	if a, b := queryString(t, d0, "SELECT v FROM t_0000"), queryString(t, d1, "SELECT v FROM t_0002"); a != want0 || b != want1 {
		t.Fatalf("after %s: s0 v=%s, s1 v=%s; want %s and %s", after, a, b, want0, want1)
	}
}

func TestAtomicTransactionCommitsOnEveryShard(t *testing.T) {
	p, d0, d1, _, s1, proxyDB := shardedPairProxy(t, "xacommit", "    cross_shard_writes: atomic\n")
	conn := dbConn(t, proxyDB(""))
	prepares, commits := statusCounter(t, s1, "Com_xa_prepare"), statusCounter(t, s1, "Com_xa_commit")
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
	// Two phases on s1's branch. (The commit decision on s0 may already
	// be gone: recovery's pass at start, on a busy machine, can come
	// after the commit and remove it.)
	if n, m := statusCounter(t, s1, "Com_xa_prepare")-prepares, statusCounter(t, s1, "Com_xa_commit")-commits; n != 1 || m != 1 {
		t.Fatalf("s1 ran %d XA PREPARE and %d XA COMMIT, want 1 and 1", n, m)
	}
	// Recovery removes a decision no branch needs any more.
	if left := p.RecoverNow(context.Background()); len(left) != 0 {
		t.Fatalf("recovery left branches in doubt: %+v", left)
	}
	if got := queryString(t, d0, "SELECT COUNT(*) FROM shardgate_xa_decisions"); got != "0" {
		t.Fatalf("decision rows on s0 after a recovery pass = %s, want 0", got)
	}

	// ROLLBACK undoes both.
	mustExec(t, conn, "START TRANSACTION")
	mustExec(t, conn, "/* shardgate:shard=s1 */ UPDATE t_0002 SET v = 20")
	mustExec(t, conn, "/* shardgate:shard=s0 */ UPDATE t_0000 SET v = 10")
	mustExec(t, conn, "ROLLBACK")
	wantValues(t, d0, d1, "ROLLBACK", "1", "2")

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

// Savepoints, READ ONLY and consistent-snapshot transactions, autocommit
// off, and the statements refused while XA branches are open.
func TestAtomicTransactionSemantics(t *testing.T) {
	conn, d0, d1 := atomicPair(t, "xasem")
	mustExec(t, conn, "/* shardgate:shard=s0 */ INSERT INTO t_0000 VALUES (1, 1)")
	mustExec(t, conn, "/* shardgate:shard=s1 */ INSERT INTO t_0002 VALUES (2, 2)")

	// A savepoint set before a shard joins covers that shard's part.
	mustExec(t, conn, "BEGIN")
	mustExec(t, conn, "/* shardgate:shard=s0 */ UPDATE t_0000 SET v = 10")
	mustExec(t, conn, "SAVEPOINT a")
	mustExec(t, conn, "/* shardgate:shard=s1 */ UPDATE t_0002 SET v = 20")
	mustExec(t, conn, "/* shardgate:shard=s0 */ UPDATE t_0000 SET v = 11")
	mustExec(t, conn, "ROLLBACK TO SAVEPOINT a")
	mustExec(t, conn, "/* shardgate:shard=s1 */ UPDATE t_0002 SET v = 21")
	mustExec(t, conn, "RELEASE SAVEPOINT a")
	mustExec(t, conn, "COMMIT")
	wantValues(t, d0, d1, "savepoints", "10", "21")

	// Statements that would commit the transaction on one shard only.
	mustExec(t, conn, "BEGIN")
	mustExec(t, conn, "/* shardgate:shard=s0 */ UPDATE t_0000 SET v = 12")
	mustExec(t, conn, "/* shardgate:shard=s1 */ UPDATE t_0002 SET v = 22")
	for _, q := range []string{"BEGIN", "START TRANSACTION", "SET autocommit = 1", "COMMIT AND CHAIN", "XA START 'x'", "XA RECOVER"} {
		if _, err := conn.ExecContext(context.Background(), q); mysqlErrCode(err) != mysql.ERNotSupportedYet {
			t.Fatalf("%s with XA branches open: %v, want 1235", q, err)
		}
	}
	mustExec(t, conn, "ROLLBACK")
	wantValues(t, d0, d1, "ROLLBACK", "10", "21")

	// A READ ONLY transaction opens no XA branch: reads work everywhere,
	// writes fail as on one server.
	mustExec(t, conn, "START TRANSACTION READ ONLY")
	if got := queryString(t, conn, "/* shardgate:shard=s1 */ SELECT v FROM t_0002"); got != "21" {
		t.Fatalf("read in a READ ONLY transaction: %s", got)
	}
	if _, err := conn.ExecContext(context.Background(), "/* shardgate:shard=s1 */ UPDATE t_0002 SET v = 0"); mysqlErrCode(err) != 1792 {
		t.Fatalf("write in a READ ONLY transaction: %v, want 1792", err)
	}
	mustExec(t, conn, "COMMIT")

	// WITH CONSISTENT SNAPSHOT, then a write on each shard: atomic.
	mustExec(t, conn, "START TRANSACTION WITH CONSISTENT SNAPSHOT")
	mustExec(t, conn, "/* shardgate:shard=s0 */ UPDATE t_0000 SET v = 13")
	mustExec(t, conn, "/* shardgate:shard=s1 */ UPDATE t_0002 SET v = 23")
	mustExec(t, conn, "COMMIT")
	wantValues(t, d0, d1, "a consistent-snapshot transaction", "13", "23")

	// autocommit off: the implicit transaction is atomic too.
	mustExec(t, conn, "SET autocommit = 0")
	mustExec(t, conn, "/* shardgate:shard=s0 */ UPDATE t_0000 SET v = 14")
	mustExec(t, conn, "/* shardgate:shard=s1 */ UPDATE t_0002 SET v = 24")
	mustExec(t, conn, "COMMIT")
	wantValues(t, d0, d1, "autocommit=0", "14", "24")
	// autocommit off, the first statement on both shards: it opened a
	// local transaction on each; the second shard written is refused,
	// since its part could not commit atomically, and the rest commits.
	if got := queryString(t, conn, "SELECT SUM(v) FROM t"); got != "38" {
		t.Fatalf("SUM(v) = %s, want 38", got)
	}
	mustExec(t, conn, "/* shardgate:shard=s0 */ UPDATE t_0000 SET v = 15")
	_, err := conn.ExecContext(context.Background(), "/* shardgate:shard=s1 */ UPDATE t_0002 SET v = 25")
	if mysqlErrCode(err) != mysql.ERNotSupportedYet || !contains(err.Error(), "shard s1") {
		t.Fatalf("a write on a second shard opened outside XA: %v, want 1235 naming s1", err)
	}
	mustExec(t, conn, "COMMIT")
	mustExec(t, conn, "SET autocommit = 1")
	a, b := queryString(t, d0, "SELECT v FROM t_0000"), queryString(t, d1, "SELECT v FROM t_0002")
	if a != "15" || b != "24" {
		t.Fatalf("after the autocommit=0 transaction: s0 v=%s, s1 v=%s; want 15 and 24", a, b)
	}
	if p := xaPrepared(t, d1); len(p) != 0 {
		t.Fatalf("prepared branches left on s1: %q", p)
	}
}

// A client that disconnects, or whose session is killed, in the middle
// of a transaction with XA branches leaves nothing behind: no prepared
// branch, no row.
func TestAtomicTransactionEndsWithItsSession(t *testing.T) {
	p, d0, d1, _, _, proxyDB := shardedPairProxy(t, "xadisc", "    cross_shard_writes: atomic\n")
	db := proxyDB("")
	for i, end := range []string{"close", "kill"} {
		conn, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, conn, "BEGIN")
		mustExec(t, conn, fmt.Sprintf("/* shardgate:shard=s0 */ INSERT INTO t_0000 VALUES (%d, 1)", i))
		mustExec(t, conn, fmt.Sprintf("/* shardgate:shard=s1 */ INSERT INTO t_0002 VALUES (%d, 2)", i))
		v := admin.TransactionsView(p)
		if len(v.Rows) != 1 || v.Rows[0][0] != "open" || v.Rows[0][3] != "s0" || v.Rows[0][4] != "s0,s1" || v.Rows[0][5] != "active" {
			t.Fatalf("%s: SHOW TRANSACTIONS = %v, want one open transaction coordinated by s0 over s0,s1, active", end, v.Rows)
		}
		id := queryString(t, conn, "SELECT CONNECTION_ID()")
		if end == "kill" {
			mustExec(t, db, "KILL "+id)
		}
		_ = conn.Raw(func(any) error { return driver.ErrBadConn }) // drop it from the pool
		_ = conn.Close()
		waitFor(t, end+": the transaction ends", 30*time.Second, func() bool { return len(p.Transactions()) == 0 })
		if a, b := queryString(t, d0, "SELECT COUNT(*) FROM t_0000"), queryString(t, d1, "SELECT COUNT(*) FROM t_0002"); a != "0" || b != "0" {
			t.Fatalf("%s: rows left: s0 %s, s1 %s", end, a, b)
		}
		if pr := xaPrepared(t, d1); len(pr) != 0 {
			t.Fatalf("%s: prepared branches left on s1: %q", end, pr)
		}
	}
}

// SET TRANSACTION (the next transaction only) reaches every shard the
// transaction does, as SET SESSION TRANSACTION does through the session's
// variables: a shard joined later reads at READ COMMITTED too, and the
// transaction after it is back to the session's level.
func TestNextTransactionIsolationOnEveryShard(t *testing.T) {
	for _, mode := range []string{"atomic", "refuse"} {
		conn, _, d1 := atomicPairMode(t, "xaiso_"+mode, mode)
		mustExec(t, d1, "INSERT INTO t_0002 VALUES (1, 1)")
		reads := func() (string, string) {
			mustExec(t, conn, "BEGIN")
			mustExec(t, conn, "/* shardgate:shard=s0 */ SELECT * FROM t_0000")
			a := queryString(t, conn, "/* shardgate:shard=s1 */ SELECT v FROM t_0002")
			mustExec(t, d1, "UPDATE t_0002 SET v = v + 1")
			b := queryString(t, conn, "/* shardgate:shard=s1 */ SELECT v FROM t_0002")
			mustExec(t, conn, "COMMIT")
			return a, b
		}
		mustExec(t, conn, "SET TRANSACTION ISOLATION LEVEL READ COMMITTED")
		if a, b := reads(); a == b {
			t.Fatalf("%s: READ COMMITTED transaction read %s then %s on the shard it joined; want the committed change", mode, a, b)
		}
		if a, b := reads(); a != b {
			t.Fatalf("%s: the next transaction read %s then %s; want REPEATABLE READ again", mode, a, b)
		}
	}
}

// A transaction that wrote on one shard and committed leaves nothing
// behind for the next: under refuse, the next transaction may write on
// another shard; under atomic, it commits in one phase, without a
// decision row. (The shard written last used to count as the next
// transaction's writer when the COMMIT went to that shard alone.)
func TestNextTransactionStartsWithNoWriter(t *testing.T) {
	for _, mode := range []string{"refuse", "atomic"} {
		conn, d0, _ := atomicPairMode(t, "xanext_"+mode, mode)
		for i, shard := range []string{"s1", "s1", "s0", "s1", "s0"} {
			table := map[string]string{"s0": "t_0000", "s1": "t_0002"}[shard]
			for _, end := range []string{"COMMIT", "ROLLBACK"} {
				mustExec(t, conn, "BEGIN")
				mustExec(t, conn, fmt.Sprintf("/* shardgate:shard=%s */ INSERT INTO %s VALUES (%d, 1)", shard, table, 10*i+len(end)))
				mustExec(t, conn, end)
			}
			mustExec(t, conn, "SET autocommit = 0")
			mustExec(t, conn, fmt.Sprintf("/* shardgate:shard=%s */ INSERT INTO %s VALUES (%d, 2)", shard, table, 10*i+9))
			mustExec(t, conn, "COMMIT")
			mustExec(t, conn, "SET autocommit = 1")
		}
		if mode == "atomic" {
			if got := queryString(t, d0, "SELECT COUNT(*) FROM shardgate_xa_decisions"); got != "0" {
				t.Fatalf("atomic: %s decision rows after transactions that each wrote on one shard", got)
			}
		}
	}
}

// BEGIN on a sharded schema opens the transaction where its first
// statement runs: a transaction on one shard sends nothing to another,
// and under atomic, it never uses XA.
func TestBeginOpensWhereTheFirstStatementRuns(t *testing.T) {
	_, _, d1, s0, s1, proxyDB := shardedPairProxy(t, "xalazy", "    cross_shard_writes: atomic\n")
	conn := dbConn(t, proxyDB(""))
	mustExec(t, conn, "/* shardgate:shard=s1 */ INSERT INTO t_0002 VALUES (1, 1)")
	begins, xaStarts := statusCounter(t, s0, "Com_begin"), statusCounter(t, s1, "Com_xa_start")
	for i := range 3 {
		// The session is on s0 when BEGIN comes.
		mustExec(t, conn, "/* shardgate:shard=s0 */ SELECT COUNT(*) FROM t_0000")
		mustExec(t, conn, "BEGIN")
		mustExec(t, conn, "/* shardgate:shard=s1 */ UPDATE t_0002 SET v = v + 1")
		mustExec(t, conn, "/* shardgate:shard=s1 */ UPDATE t_0002 SET v = v + 1")
		if i == 1 {
			mustExec(t, conn, "ROLLBACK")
		} else {
			mustExec(t, conn, "COMMIT")
		}
	}
	if got := queryString(t, d1, "SELECT v FROM t_0002"); got != "5" {
		t.Fatalf("v = %s after two committed transactions of two increments, want 5", got)
	}
	if n := statusCounter(t, s0, "Com_begin") - begins; n != 0 {
		t.Fatalf("transactions on s1 sent %d BEGINs to s0", n)
	}
	if n := statusCounter(t, s1, "Com_xa_start") - xaStarts; n != 0 {
		t.Fatalf("transactions on one shard started %d XA branches", n)
	}
	// A transaction whose first statement never comes, and one read
	// where the session is.
	mustExec(t, conn, "START TRANSACTION")
	mustExec(t, conn, "COMMIT")
	mustExec(t, conn, "BEGIN WORK")
	mustExec(t, conn, "ROLLBACK")
	if got := queryString(t, conn, "SELECT @@in_transaction"); got != "0" {
		t.Fatalf("@@in_transaction after COMMIT = %s", got)
	}
	mustExec(t, conn, "BEGIN")
	if got := queryString(t, conn, "SELECT @@in_transaction"); got != "1" {
		t.Fatalf("@@in_transaction after BEGIN = %s", got)
	}
	mustExec(t, conn, "COMMIT")
}
