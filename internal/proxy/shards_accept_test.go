package proxy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/mysql"
)

// compareStatements runs stmts on the reference and through shardgate and
// fails the test for every answer (or written table) that differs.
func compareStatements(t *testing.T, d *shardedDiff, stmts []difftest.Statement) {
	t.Helper()
	rep, err := difftest.Apply(d.ref, d.got, 0, stmts, diffOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, diff := range rep.Differences {
		t.Errorf("%v", diff)
	}
	for msg, n := range rep.Pending {
		t.Errorf("%d× refused: %s", n, msg)
	}
}

func reads(ordered bool, sqls ...string) []difftest.Statement {
	out := make([]difftest.Statement, len(sqls))
	for i, s := range sqls {
		out[i] = difftest.Statement{Kind: "regression", SQL: s, Ordered: ordered}
	}
	return out
}

func write(table, sql string) difftest.Statement {
	return difftest.Statement{Kind: "regression", SQL: sql, Ordered: true, Writes: []string{table}}
}

// TestShardedPeersKnownFailures replays, against a reference server, the
// statements other sharding proxies are known to answer wrongly (issue 13,
// Acceptance): every answer must be the reference's, field by field.
func TestShardedPeersKnownFailures(t *testing.T) {
	gen := difftest.NewGenerator(13)
	gen.SingleRowLoad()
	d := startShardedDiff(t, gen)
	difftest.LoadData(t, d.ref, d.got, gen, diffOptions())

	t.Run("precedence", func(t *testing.T) {
		// Routed by "id = 1 OR id = 2" alone, or by the last equality, these
		// would miss rows.
		compareStatements(t, d, reads(false,
			"SELECT id, name FROM sf_user WHERE id = 3 OR id = 4 AND name = 'bob'",
			"SELECT id, name FROM sf_user WHERE name = 'alice' AND id = 3 OR id = 4",
			"SELECT id, name FROM sf_user WHERE (id = 3 OR id = 4) AND balance IS NOT NULL",
			"SELECT id FROM sf_user WHERE id = 5 AND (name = 'x' OR NOT id = 6)",
			"SELECT id FROM sf_user WHERE NOT (id <> 7)",
			"SELECT id FROM sf_user WHERE NOT (id = 7)",
			"SELECT id FROM sf_user WHERE id = 7 OR TRUE",
			"SELECT id FROM sf_user WHERE id = 7 XOR id = 8",
			"SELECT user_id, order_no FROM sf_order WHERE NOT (user_id <> 9 AND user_id <> 10) AND order_no < 3",
		))
	})

	t.Run("comments and empty statements", func(t *testing.T) {
		// the mariadb CLI with --comments sends a file's comment blocks alone
		compareStatements(t, d, reads(true, "-- a comment", "/* a comment */", "# a comment", "-- one\n-- two\n", "", " "))
	})

	t.Run("typed literals", func(t *testing.T) {
		var stmts []difftest.Statement
		// Exact keys: one sub-table, so ORDER BY is fine.
		for _, k := range []string{"-1", "'-1'", "1.0", "'1.0'", "0x01", "1e0", "'1'", "1", "-1.0", "b'1'", "0", "'0'", "-0"} {
			stmts = append(stmts, reads(true, "SELECT * FROM sf_user WHERE id = "+k, "SELECT * FROM sf_order WHERE user_id = "+k+" ORDER BY order_no")...)
		}
		// Not exactly one INT: every sub-table answers (no row can match 1.5).
		stmts = append(stmts, reads(false, "SELECT * FROM sf_user WHERE id = 1.5", "SELECT * FROM sf_order WHERE user_id = 2.5",
			"SELECT id FROM sf_user WHERE id IN (-1, '-1', 1.0, 0x01, '2', 3e0)")...)
		compareStatements(t, d, stmts)
	})

	t.Run("ci strings with trailing spaces", func(t *testing.T) {
		compareStatements(t, d, []difftest.Statement{
			write("sf_tag", "INSERT INTO sf_tag (name, uses) VALUES ('Mauve', 1)"),
			write("sf_tag", "INSERT INTO sf_tag (name, uses) VALUES ('mauve  ', 2)"), // a duplicate key: 1062 on both
			reads(true, "SELECT name, uses FROM sf_tag WHERE name = 'MAUVE'")[0],
			reads(true, "SELECT name, uses FROM sf_tag WHERE name = 'mauve   '")[0],
			reads(false, "SELECT name FROM sf_tag WHERE name IN ('Mauve ', 'RED', 'red ', 'Blue  ')")[0],
			write("sf_tag", "UPDATE sf_tag SET uses = uses + 10 WHERE name = 'mAuVe '"),
			reads(true, "SELECT uses FROM sf_tag WHERE name = 'Mauve'")[0],
			write("sf_tag", "DELETE FROM sf_tag WHERE name = 'MAUVE  '"),
		})
	})

	t.Run("ORDER BY t.col on one shard", func(t *testing.T) {
		compareStatements(t, d, reads(true,
			"SELECT sf_user.id, sf_user.name FROM sf_user WHERE sf_user.id = 5 ORDER BY sf_user.name",
			"SELECT shop.sf_user.id FROM shop.sf_user WHERE shop.sf_user.id = 6 ORDER BY shop.sf_user.id",
			"SELECT sf_order.order_no FROM sf_order WHERE sf_order.user_id = 7 ORDER BY sf_order.order_no DESC",
			"SELECT `sf_order`.`order_no`, sf_order.amount FROM `sf_order` WHERE `sf_order`.user_id = 8 ORDER BY `sf_order`.`amount`, sf_order.order_no",
			"SELECT sf_user.name, sf_order.amount FROM sf_user JOIN sf_order ON sf_order.user_id = sf_user.id WHERE sf_user.id = 9 ORDER BY sf_order.order_no",
		))
	})

	t.Run("joins on the key in either order", func(t *testing.T) {
		compareStatements(t, d, append(reads(true,
			"SELECT u.id, u.name, o.order_no FROM sf_user u JOIN sf_order o ON u.id = o.user_id WHERE u.id = 11 ORDER BY o.order_no",
			"SELECT u.id, u.name, o.order_no FROM sf_order o JOIN sf_user u ON o.user_id = u.id WHERE o.user_id = 11 ORDER BY o.order_no",
			"SELECT u.id, o.order_no FROM sf_order o, sf_user u WHERE u.id = o.user_id AND u.id = 12 ORDER BY o.order_no",
			"SELECT o.order_no, u.email FROM sf_order o LEFT JOIN sf_user u ON u.id = o.user_id WHERE o.user_id = 13 ORDER BY o.order_no",
		), reads(false,
			// keys equated: the join runs on every sub-table at once
			"SELECT u.id, o.order_no FROM sf_user u JOIN sf_order o ON o.user_id = u.id",
			"SELECT u.id, o.order_no FROM sf_order o JOIN sf_user u ON u.id = o.user_id WHERE o.amount > 100",
			"SELECT u.id, o.order_no FROM sf_user u JOIN sf_order o ON o.user_id = u.id WHERE u.id IN (1, 50, -3, 170)",
		)...))
	})

	t.Run("negative and expression keys", func(t *testing.T) {
		compareStatements(t, d, []difftest.Statement{
			reads(true, "SELECT * FROM sf_user WHERE id = -5")[0],
			reads(true, "SELECT * FROM sf_user WHERE id = - 5")[0],
			reads(true, "SELECT * FROM sf_user WHERE id = -(-5)")[0],
			reads(false, "SELECT id FROM sf_user WHERE id IN (-1, -20, -7)")[0],
			reads(false, "SELECT id FROM sf_user WHERE id BETWEEN -12 AND -3")[0],
			// An expression key constrains nothing: every sub-table answers.
			reads(true, "SELECT * FROM sf_user WHERE id = 1 + 1")[0],
			reads(true, "SELECT * FROM sf_user WHERE id = ABS(-3)")[0],
			reads(false, "SELECT id FROM sf_user WHERE id = city_id")[0],
			reads(true, "SELECT * FROM sf_order WHERE user_id = 2 * 3 AND order_no = 1")[0],
			write("sf_user", "INSERT INTO sf_user (id, name) VALUES (-777, 'neg')"),
			// a duplicate ignored: the warning is read with SHOW WARNINGS
			write("sf_user", "INSERT IGNORE INTO sf_user (id, name) VALUES (-777, 'dup')"),
			write("sf_user", "UPDATE sf_user SET score = 1 WHERE id = 10 - 3"),
			write("sf_user", "UPDATE sf_user SET score = 2 WHERE id = -777"),
			write("sf_user", "DELETE FROM sf_user WHERE id = -(777)"),
		})
	})

	t.Run("IN with keys on every shard", func(t *testing.T) {
		var keys []string
		for k := -20; k <= 180; k += 7 {
			keys = append(keys, fmt.Sprint(k))
		}
		in := strings.Join(keys, ", ")
		compareStatements(t, d, []difftest.Statement{
			reads(false, "SELECT id, name, balance FROM sf_user WHERE id IN ("+in+")")[0],
			reads(false, "SELECT * FROM sf_order WHERE user_id IN ("+in+")")[0],
			write("sf_order", "UPDATE sf_order SET note = 'in-all' WHERE user_id IN ("+in+")"),
			write("sf_user", "DELETE FROM sf_user WHERE id IN ("+in+") AND balance < 0"),
			reads(false, "SELECT * FROM sf_event WHERE id IN (-40, -2, 0, 2, 98, 100, 998, 1000, 1198)")[0],
			reads(false, "SELECT * FROM sf_log WHERE day IN ('2023-01-03', '2023-08-01', '2024-02-29', '2024-12-31')")[0],
		})
	})
}

// TestShardDown stops one shard: statements routed to the other keep
// working; statements that need the stopped one fail with an error naming
// it, and a read over both never passes partial rows off as complete.
func TestShardDown(t *testing.T) {
	gen := difftest.NewGenerator(17)
	gen.SingleRowLoad()
	d := startShardedDiff(t, gen)
	db := openDB(t, proxyDSN(d.proxy, appUser, appPass, diffDB, ""))
	// Keys on each shard: sf_user sub-tables 0-3 live on s0, 4-7 on s1.
	onS0, onS1 := keysOnBothShards(t, 8)
	for _, id := range []int64{onS0, onS1} {
		mustExec(t, db, fmt.Sprintf("INSERT INTO sf_user (id, name) VALUES (%d, 'k%d')", id, id))
	}
	mustExec(t, db, "INSERT INTO sf_city (id, name, country) VALUES (1, 'Oslo', 'NO')")
	if err := d.shards[1].Stop(); err != nil {
		t.Fatal(err)
	}

	// s0 only: answered.
	for _, q := range []string{
		fmt.Sprintf("SELECT name FROM sf_user WHERE id = %d", onS0),
		"SELECT name FROM sf_city WHERE id = 1", // a reference read runs on the default cluster
		"SELECT COUNT(*) FROM sf_note",
	} {
		var s string
		if err := db.QueryRow(q).Scan(&s); err != nil {
			t.Errorf("%s with s1 down: %v", q, err)
		}
	}
	mustExec(t, db, fmt.Sprintf("UPDATE sf_user SET score = 1 WHERE id = %d", onS0))

	// s1 needed: an error naming it.
	needS1 := []string{
		fmt.Sprintf("SELECT name FROM sf_user WHERE id = %d", onS1),
		fmt.Sprintf("UPDATE sf_user SET score = 1 WHERE id = %d", onS1),
		"UPDATE sf_user SET score = 2 WHERE score IS NULL",
		"INSERT INTO sf_city (id, name, country) VALUES (2, 'Rome', 'IT')",
	}
	for _, q := range needS1 {
		_, err := db.Exec(q)
		checkNamesShard(t, q, err, "s1")
	}

	// A scatter read: s0's rows may come first, but the result ends in an
	// error, never in a clean end of rows.
	// (The first execution of a merge's shape reads its column probe
	// before s0's rows: both are read before s0's connection is used
	// again, or the next statement there would read them.)
	for _, q := range []string{"SELECT id, name FROM sf_user", "SELECT id FROM sf_user WHERE id IN (" + fmt.Sprint(onS0, ", ", onS1) + ")",
		"SELECT id, name FROM sf_user ORDER BY name, id"} {
		rows, err := db.Query(q)
		if err != nil {
			checkNamesShard(t, q, err, "s1")
			continue
		}
		n := 0
		for rows.Next() {
			n++
		}
		err = rows.Err()
		rows.Close()
		if err == nil {
			t.Errorf("%s with s1 down: %d rows and no error; want an error naming s1 after s0's rows", q, n)
			continue
		}
		checkNamesShard(t, q, err, "s1")
	}
	// The session is still usable for s0.
	var s string
	if err := db.QueryRow(fmt.Sprintf("SELECT name FROM sf_user WHERE id = %d", onS0)).Scan(&s); err != nil || s != fmt.Sprintf("k%d", onS0) {
		t.Errorf("s0 read after the failures: %q, %v", s, err)
	}
}

func checkNamesShard(t *testing.T, q string, err error, shard string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s with %s down: no error", q, shard)
		return
	}
	if !strings.Contains(err.Error(), shard) {
		t.Errorf("%s with %s down: %v (code %d); want an error naming %s", q, shard, err, mysqlErrCode(err), shard)
	}
	if mysqlErrCode(err) == mysql.ERNotSupportedYet {
		t.Errorf("%s with %s down: %v; want a backend error, not a refusal", q, shard, err)
	}
}
