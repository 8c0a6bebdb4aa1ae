package proxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/testenv"
)

// answerOf runs sqlText on c and renders its answer: the rows, or the
// error code.
func answerOf(c *sql.Conn, sqlText string) string {
	rows, err := c.QueryContext(context.Background(), sqlText)
	if err != nil {
		return fmt.Sprintf("error %d", mysqlErrCode(err))
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, v int
		if err := rows.Scan(&id, &v); err != nil {
			return "scan: " + err.Error()
		}
		fmt.Fprintf(&b, "%d=%d ", id, v)
	}
	if err := rows.Err(); err != nil {
		return fmt.Sprintf("error %d", mysqlErrCode(err))
	}
	return b.String()
}

// TestShardedSavepoints: savepoints in transactions that write on both
// shards (cross_shard_writes: allow) answer as on one server: each is set
// on every shard in the transaction, and on a shard the transaction
// reaches later right after its BEGIN, so ROLLBACK TO undoes every
// shard's writes after it. The statements run on one connection through
// shardgate and on one to the reference server; every answer, and the
// rows after each step, are the same.
func TestShardedSavepoints(t *testing.T) {
	const db = "sp_sharded"
	srvs := testenv.StartN(t, 3, testenv.Options{})
	for _, s := range srvs {
		s.Exec(t, "CREATE DATABASE "+db)
	}
	p := startProxy(t, clientShardsConfig(t, db, srvs[1:], "    cross_shard_writes: allow\n",
		[]string{"{name: t, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: 2}"}))
	px := oneConn(t, openDB(t, proxyDSN(p, appUser, appPass, db, "")))
	ref := oneConn(t, openDB(t, srvs[0].DSN(db)))
	for _, c := range []*sql.Conn{ref, px} {
		mustExec(t, c, "CREATE TABLE t (id INT NOT NULL PRIMARY KEY, v INT NOT NULL)",
			"INSERT INTO t VALUES (1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (6, 0), (7, 0), (8, 0)")
	}
	const all = "SELECT id, v FROM t ORDER BY id"
	steps := []string{
		"BEGIN",
		"UPDATE t SET v = v + 1 WHERE id = 1",
		"SAVEPOINT a",
		"UPDATE t SET v = v + 10 WHERE id = 2",
		"SAVEPOINT `b`",
		"UPDATE t SET v = v + 100 WHERE id IN (3, 4, 5, 6)",
		all,
		"ROLLBACK TO SAVEPOINT b",
		all,
		"UPDATE t SET v = v + 1000 WHERE id = 7",
		"SAVEPOINT a", // replaces the first a
		"UPDATE t SET v = v + 3 WHERE id > 4",
		"ROLLBACK WORK TO A",
		all,
		"ROLLBACK TO b",
		all,
		"RELEASE SAVEPOINT b",
		"ROLLBACK TO b", // released: 1305
		"ROLLBACK TO a", // set after b, released with it: 1305
		all,
		"COMMIT",
		all,
		// A savepoint set before the transaction reaches any shard but
		// the one it started on.
		"START TRANSACTION",
		"SAVEPOINT s",
		"UPDATE t SET v = v - 5 WHERE id IN (1, 2, 3, 4, 5, 6, 7, 8)",
		"ROLLBACK TO SAVEPOINT s",
		all,
		"UPDATE t SET v = v + 7 WHERE id = 8",
		"COMMIT",
		all,
		// Outside a transaction a savepoint lasts no longer than its
		// statement.
		"SAVEPOINT x",
		"ROLLBACK TO x",
		"UPDATE t SET v = 0 WHERE id = 8",
		"BEGIN",
		"ROLLBACK TO x",
		"ROLLBACK",
		all,
	}
	for i, sqlText := range steps {
		want, got := answerOf(ref, sqlText), answerOf(px, sqlText)
		if got != want {
			t.Fatalf("step %d, %s: shardgate answered %q, the reference %q", i+1, sqlText, got, want)
		}
	}
	if got := answerOf(ref, all); got != "1=1 2=10 3=0 4=0 5=0 6=0 7=0 8=0 " {
		t.Fatalf("the reference's rows are %q: the steps do not test what they should", got)
	}
}
