package proxy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
)

// Regression tests for the wrong answers other sharding proxies give to
// reads merged across shards (issue 14, Acceptance). The rows are placed
// so that a merge done the peers' way answers wrongly: every group has
// rows on both shards, fewer on each than a HAVING asks for, and its
// names are spelled differently on each shard ('alice' on s0, 'ALICE '
// on s1: one value under utf8mb4_general_ci). Each statement runs as text
// and prepared, and its whole answer (column definitions, rows, warnings,
// status) must be the reference server's.

// mergeCities are the groups of the rows: mergePerShard users each on
// each shard.
var mergeCities = []int{900, 901, 902}

const mergePerShard = 4

// mergeNames are the names of a city's users on s0 and on s1: equal in
// pairs under utf8mb4_general_ci (case, trailing spaces, accents,
// supplementary characters).
var mergeNames = [2][mergePerShard]string{{"alice", "bob", "😀", "Ève"}, {"ALICE ", "Bob  ", "😁", "eve"}}

// mergeRows returns the INSERTs of the users and orders, ids from 5001
// placed by the hash rule so that each city has mergePerShard users on
// each shard, and checks that placement.
func mergeRows(t *testing.T) []difftest.Statement {
	t.Helper()
	const subTables, perShard = 8, 4 // sf_user: 2 shards × 4 (difftest.SchemaYAML)
	var users, orders []string
	next := map[[2]int]int{} // (city index, shard) → users placed
	for id := int64(5001); len(users) < len(mergeCities)*2*mergePerShard; id++ {
		shard := subTableOf(t, id, subTables) / perShard
		ci := -1
		for i := range mergeCities {
			if next[[2]int{i, shard}] < mergePerShard {
				ci = i
				break
			}
		}
		if ci < 0 {
			continue
		}
		j := next[[2]int{ci, shard}]
		next[[2]int{ci, shard}]++
		balance := fmt.Sprintf("%d.%02d", (1-2*shard)*int(id%97), id%100) // s0 positive, s1 negative
		if j == 3 && shard == 1 {
			balance = "NULL"
		}
		users = append(users, fmt.Sprintf("(%d, '%s', %s, %d)", id, mergeNames[shard][j], balance, mergeCities[ci]))
		for no := 1; no <= 2; no++ {
			orders = append(orders, fmt.Sprintf("(%d, %d, %d.%02d, '%s')", id, no, int(id%50)*no, int(id%7)*no, []string{"paid", "PAID ", "new"}[(int(id)+no)%3]))
		}
	}
	return []difftest.Statement{
		write("sf_user", "INSERT INTO sf_user (id, name, balance, city_id) VALUES "+strings.Join(users, ", ")),
		write("sf_order", "INSERT INTO sf_order (user_id, order_no, amount, status) VALUES "+strings.Join(orders, ", ")),
	}
}

// mergeCase is a statement of a regression test: compared in order when
// its ORDER BY is total, fold are columns compared under the collation.
type mergeCase struct {
	sql     string
	ordered bool
	fold    []int
}

// both runs each case as text, then prepared.
func both(cases ...mergeCase) []difftest.Statement {
	var out []difftest.Statement
	for _, c := range cases {
		st := difftest.Statement{Kind: "merge_regression", SQL: c.sql, Ordered: c.ordered, Fold: c.fold}
		out = append(out, st)
		st.Prepared = c.sql
		out = append(out, st)
	}
	return out
}

// TestShardedMergeRegressions replays what the peers answer wrongly.
func TestShardedMergeRegressions(t *testing.T) {
	gen := difftest.NewGenerator(14)
	d := startShardedDiff(t, gen)
	difftest.LoadData(t, d.ref, d.got, gen, diffOptions())
	compareStatements(t, d, mergeRows(t))
	if t.Failed() {
		t.FailNow()
	}
	mine := "WHERE id > 5000"

	t.Run("HAVING after the merge", func(t *testing.T) {
		// Every city has 8 users, 4 on each shard: a HAVING evaluated on
		// each shard drops them all.
		compareStatements(t, d, both(
			mergeCase{"SELECT city_id, COUNT(*) FROM sf_user " + mine + " GROUP BY city_id HAVING COUNT(*) > 5", false, nil},
			mergeCase{"SELECT city_id, COUNT(*) AS n FROM sf_user " + mine + " GROUP BY city_id HAVING n > 5 ORDER BY city_id", true, nil},
			mergeCase{"SELECT city_id FROM sf_user " + mine + " GROUP BY city_id HAVING SUM(id) > 30000 ORDER BY city_id DESC", true, nil},
			mergeCase{"SELECT o.status, COUNT(*) FROM sf_order o JOIN sf_user u ON u.id = o.user_id WHERE u.id > 5000 GROUP BY o.status HAVING COUNT(*) > 20", false, []int{0}},
			mergeCase{"SELECT COUNT(*) FROM sf_user " + mine + " HAVING COUNT(*) > 20", true, nil},
		))
	})

	t.Run("COUNT(DISTINCT) across shards", func(t *testing.T) {
		// 4 distinct names per city under the collation, 4 spellings on
		// each shard: per-shard counts summed give 8.
		compareStatements(t, d, both(
			mergeCase{"SELECT COUNT(DISTINCT name) FROM sf_user " + mine, true, nil},
			mergeCase{"SELECT city_id, COUNT(DISTINCT name), COUNT(DISTINCT id % 3) FROM sf_user " + mine + " GROUP BY city_id ORDER BY city_id", true, nil},
			mergeCase{"SELECT COUNT(DISTINCT city_id), SUM(DISTINCT city_id), COUNT(DISTINCT status) FROM sf_user u JOIN sf_order o ON o.user_id = u.id WHERE u.id > 5000", true, nil},
		))
	})

	t.Run("SUM(a) - SUM(b) and other aggregate expressions", func(t *testing.T) {
		compareStatements(t, d, both(
			mergeCase{"SELECT SUM(balance) - SUM(city_id), COUNT(*) * 2, MAX(id) - MIN(id), SUM(balance) / COUNT(*) FROM sf_user " + mine, true, nil},
			mergeCase{"SELECT city_id, SUM(balance) - SUM(id) AS d, COUNT(*) * 2 + 1 FROM sf_user " + mine + " GROUP BY city_id ORDER BY d DESC, city_id", true, nil},
			mergeCase{"SELECT SUM(o.amount) - SUM(u.balance) FROM sf_user u JOIN sf_order o ON o.user_id = u.id WHERE u.id > 5000", true, nil},
		))
	})

	t.Run("GROUP BY with LIMIT", func(t *testing.T) {
		// The LIMIT applies to merged groups, not to each shard's.
		compareStatements(t, d, both(
			mergeCase{"SELECT city_id, COUNT(*), SUM(balance) FROM sf_user " + mine + " GROUP BY city_id ORDER BY city_id LIMIT 2", true, nil},
			mergeCase{"SELECT city_id, COUNT(*) FROM sf_user GROUP BY city_id ORDER BY COUNT(*) DESC, city_id LIMIT 3", true, nil},
			mergeCase{"SELECT user_id, SUM(amount) AS s FROM sf_order GROUP BY user_id ORDER BY s DESC, user_id LIMIT 5", true, nil},
			mergeCase{"SELECT status, COUNT(*) FROM sf_order GROUP BY status ORDER BY 2 DESC, 1 LIMIT 1, 2", true, []int{0}},
		))
	})

	t.Run("ORDER BY t.col through aliases", func(t *testing.T) {
		compareStatements(t, d, both(
			mergeCase{"SELECT u.id, u.name FROM sf_user u " + strings.Replace(mine, "id", "u.id", 1) + " ORDER BY u.name DESC, u.id", true, nil},
			mergeCase{"SELECT u.name AS n, u.balance AS b FROM sf_user AS u WHERE u.city_id = 901 ORDER BY u.balance, u.id DESC", true, nil},
			mergeCase{"SELECT sf_user.id FROM sf_user WHERE sf_user.city_id = 902 ORDER BY sf_user.balance DESC, sf_user.id", true, nil},
			mergeCase{"SELECT o.user_id, o.order_no, o.amount FROM sf_order o JOIN sf_user u ON u.id = o.user_id WHERE u.city_id = 900 ORDER BY o.amount DESC, o.user_id, o.order_no", true, nil},
		))
	})

	t.Run("duplicate groups under _ci collations", func(t *testing.T) {
		// 'alice' on s0 and 'ALICE ' on s1 are one group, one DISTINCT
		// value, one UNION row: the spelling shown may be either.
		compareStatements(t, d, both(
			mergeCase{"SELECT name, COUNT(*), MIN(id) FROM sf_user " + mine + " GROUP BY name", false, []int{0}},
			mergeCase{"SELECT name, COUNT(*) FROM sf_user " + mine + " GROUP BY name ORDER BY name", true, []int{0}},
			mergeCase{"SELECT DISTINCT name FROM sf_user " + mine + " ORDER BY name", true, []int{0}},
			mergeCase{"SELECT name, city_id FROM sf_user " + mine + " UNION SELECT name, city_id FROM sf_user " + mine + " ORDER BY 2, 1", true, []int{0}},
			mergeCase{"SELECT status, COUNT(*) FROM sf_order WHERE user_id > 5000 GROUP BY status", false, []int{0}},
		))
	})

	t.Run("select options a UNION takes in its first SELECT only", func(t *testing.T) {
		// A shard's sub-tables are read as a UNION ALL of the client's
		// SELECT: these options in a later SELECT were error 1234.
		compareStatements(t, d, both(
			mergeCase{"SELECT SQL_NO_CACHE id, name FROM sf_user ORDER BY id LIMIT 5", true, nil},
			mergeCase{"SELECT /*!40001 SQL_NO_CACHE */ id FROM sf_user ORDER BY id DESC LIMIT 3", true, nil},
			mergeCase{"SELECT HIGH_PRIORITY SQL_BUFFER_RESULT COUNT(*), SUM(balance) FROM sf_user", true, nil},
			mergeCase{"SELECT SQL_CACHE DISTINCT city_id FROM sf_user ORDER BY city_id", true, nil},
			mergeCase{"SELECT STRAIGHT_JOIN SQL_SMALL_RESULT HIGH_PRIORITY city_id, COUNT(*) FROM sf_user GROUP BY city_id ORDER BY city_id", true, nil},
		))
	})

	t.Run("AVG scale", func(t *testing.T) {
		// AVG of a DECIMAL(12,2) is DECIMAL with 6 decimals, of an INT 4:
		// the division of merged SUM and COUNT, typed as the server types it.
		compareStatements(t, d, both(
			mergeCase{"SELECT AVG(balance), AVG(id), AVG(city_id), AVG(balance) * 2 FROM sf_user " + mine, true, nil},
			mergeCase{"SELECT city_id, AVG(balance), AVG(id) FROM sf_user " + mine + " GROUP BY city_id ORDER BY city_id", true, nil},
			mergeCase{"SELECT AVG(amount), AVG(DISTINCT order_no) FROM sf_order WHERE user_id > 5000", true, nil},
		))
	})

	t.Run("aggregates over zero rows", func(t *testing.T) {
		// One row: COUNT 0, SUM, AVG, MIN, MAX and GROUP_CONCAT NULL,
		// BIT_AND all ones; with GROUP BY, no row.
		none := "WHERE city_id = 12345"
		compareStatements(t, d, both(
			mergeCase{"SELECT COUNT(*), COUNT(name), SUM(balance), AVG(balance), MIN(name), MAX(id), GROUP_CONCAT(name), BIT_AND(id), BIT_OR(id), BIT_XOR(id), COUNT(DISTINCT name) FROM sf_user " + none, true, nil},
			mergeCase{"SELECT COUNT(*) * 2, SUM(balance) - SUM(id) FROM sf_user " + none, true, nil},
			mergeCase{"SELECT city_id, COUNT(*) FROM sf_user " + none + " GROUP BY city_id", true, nil},
			mergeCase{"SELECT COUNT(*) FROM sf_user " + none + " HAVING COUNT(*) > 0", true, nil},
		))
	})

	t.Run("string types of a derived table", func(t *testing.T) {
		// MIN() of a CHAR column read from a derived table is a VARCHAR
		// in one SELECT, a CHAR in each SELECT of a shard's UNION ALL: the
		// merge took that for a difference and sent the UNION's
		// definitions, without schema and table (differential test, seed
		// 987654321, statement #3182, the derived table empty).
		compareStatements(t, d, both(
			mergeCase{"SELECT u.city_id, YEAR(u.born), MIN(c.country) AS a1 FROM sf_user u, (SELECT * FROM sf_city WHERE id < 0) AS c WHERE (CONCAT(u.name, ' city') = c.name) AND (u.balance > 15505.58) GROUP BY u.city_id, YEAR(u.born)", false, nil},
			mergeCase{"SELECT u.city_id, MIN(c.country), MAX(c.name) FROM sf_user u JOIN (SELECT * FROM sf_city WHERE id > 0) AS c ON c.id = u.city_id GROUP BY u.city_id ORDER BY u.city_id", true, nil},
		))
	})

	t.Run("deep LIMIT offset,count", func(t *testing.T) {
		compareStatements(t, d, both(
			mergeCase{"SELECT id, name FROM sf_user ORDER BY id LIMIT 100, 10", true, nil},
			mergeCase{"SELECT user_id, order_no, amount FROM sf_order ORDER BY amount DESC, user_id, order_no LIMIT 300, 5", true, nil},
			mergeCase{"SELECT id FROM sf_user ORDER BY balance, id LIMIT 7 OFFSET 120", true, nil},
			mergeCase{"SELECT id FROM sf_user ORDER BY id DESC LIMIT 100000, 5", true, nil},
			mergeCase{"SELECT day, seq FROM sf_log ORDER BY day DESC, seq LIMIT 150, 3", true, nil},
		))
	})
}
