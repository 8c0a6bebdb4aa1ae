package proxy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
)

// peerStatements are the query shapes other sharding proxies answered
// wrongly, or refused, in their issue trackers, over the generator's
// schema: each must get the answer one server holding every row gives
// (TestShardedPeerWrongAnswers). The comment of each names the issue and
// what the peer answered.
var peerStatements = []difftest.Statement{
	// apache/shardingsphere#24655: "select * from (select order_id,
	// user_id from t_order limit 1) t" answered 6 rows, one per
	// sub-table: the derived table's LIMIT was applied on each shard.
	// Without ORDER BY, any one row of the table is right.
	{SQL: "SELECT * FROM (SELECT id, name FROM sf_user LIMIT 1) t", Superset: &difftest.Statement{SQL: "SELECT id, name FROM sf_user"}},
	{SQL: "SELECT t.user_id, t.order_no FROM (SELECT user_id, order_no FROM sf_order ORDER BY user_id, order_no LIMIT 3) t ORDER BY t.user_id, t.order_no", Ordered: true},
	// apache/shardingsphere#12611, as the issue list names it (its thread
	// was not found in the issue store): a LIMIT inside a derived table
	// applied per shard, so the outer query counts and sums every
	// shard's first rows; and #2839's shape, such a derived table joined
	// with the orders of its rows, which answered each shard's first 10.
	{SQL: "SELECT COUNT(*), SUM(t.amount) FROM (SELECT amount FROM sf_order ORDER BY amount DESC, user_id, order_no LIMIT 10) t", Ordered: true},
	{SQL: "SELECT o.id, i.order_no FROM (SELECT id FROM sf_user ORDER BY id DESC LIMIT 10) AS o LEFT JOIN sf_order i ON i.user_id = o.id ORDER BY o.id, i.order_no", Ordered: true},
	// apache/shardingsphere#21540 (found beside them): "SELECT MAX(t.id)
	// as maxid, COUNT(1) AS cnt FROM (SELECT * FROM t_order WHERE id>0
	// ORDER BY id ASC LIMIT 1) t" answered cnt 6, where one server counts 1.
	{SQL: "SELECT MAX(t.id) AS maxid, COUNT(1) AS cnt FROM (SELECT * FROM sf_user WHERE id > 0 ORDER BY id ASC LIMIT 1) t", Ordered: true},
	// apache/shardingsphere#5586: "SELECT COUNT(*) FROM (SELECT * FROM
	// t_accountinfo o) t" answered a wrong count: the outer COUNT ran on
	// each shard's rows, not on the merged derived table.
	{SQL: "SELECT COUNT(*) FROM (SELECT * FROM sf_user o) t", Ordered: true},
	{SQL: "SELECT COUNT(*), AVG(t.balance) FROM (SELECT * FROM sf_user o WHERE o.city_id IS NOT NULL) t", Ordered: true},
	// apache/shardingsphere#21417 was not found in the issue store; its
	// neighbour #21407: "select cc, sum(a) … group by cc" answered the
	// group 'U' twice (and 'u' apart), one row per shard: groups equal
	// under the column's _ci collation were not merged across shards.
	{SQL: "SELECT name, COUNT(*), SUM(city_id) FROM sf_user GROUP BY name", Fold: []int{0}},
	// vitessio/vitess#16515: "select co.id, co.name from corder.tb1 co
	// join customer.tb1 cu on cu.id=co.id where cu.id=1", two tables
	// sharded apart (two keyspaces) joined on their keys, was refused
	// from v18 on ("VT12001: unsupported: cross-shard correlated
	// subquery"). Here: two tables of one schema sharded by different
	// rules (range and hash), which the proxy evaluates.
	{SQL: "SELECT e.id, e.kind FROM sf_event e JOIN sf_user u ON u.id = e.id WHERE u.id = 1", Ordered: true},
	{SQL: "SELECT e.id, e.kind, u.name FROM sf_event e JOIN sf_user u ON u.id = e.id ORDER BY e.id", Ordered: true},
	// vitessio/vitess#9203, as the issue list names it ("VT12001
	// unsupported"; its thread was not found in the issue store), and its
	// sibling #9204: "select * from user join user_extra", a cross-shard
	// join of every column, refused ("unsupported: '*' expression in
	// cross-shard query"); and a correlated subquery across shards,
	// which #16515's VT12001 names.
	{SQL: "SELECT * FROM sf_user u JOIN sf_order o ON o.order_no = u.city_id WHERE u.id < 40 ORDER BY u.id, o.user_id, o.order_no", Ordered: true},
	{SQL: "SELECT u.id, (SELECT MAX(o.amount) FROM sf_order o WHERE o.order_no = u.city_id) AS m FROM sf_user u ORDER BY u.id", Ordered: true},
	// vitessio/vitess#12037: "SELECT t2.* FROM table1 AS t1 INNER JOIN
	// table2 AS t2 ON t1.table2_id = t2.id WHERE t1.id IN (1234, 5678)",
	// two rows, failed with "Row count exceeded 10000": the join was
	// planned before the filter, fetching the whole table past the row
	// cap. sf_user holds more than 12,000 rows here (peerBigUsers), and
	// no row cap refuses a statement whose answer one server gives.
	{SQL: "SELECT u.* FROM sf_order AS o INNER JOIN sf_user AS u ON o.order_no = u.id WHERE o.user_id IN (5, 9) ORDER BY u.id", Ordered: true},
	{SQL: "SELECT COUNT(*), SUM(u.id) FROM sf_user u JOIN sf_order o ON o.order_no = u.city_id WHERE u.id >= 1000", Ordered: true},
}

// peerBigUsers are the INSERTs that give sf_user 12,000 more rows (ids
// from 1000, beyond the generator's), for vitessio/vitess#12037's row
// cap, in statements of 1,000 rows.
func peerBigUsers() []difftest.Statement {
	var out []difftest.Statement
	for first := 1000; first < 13000; first += 1000 {
		rows := make([]string, 0, 1000)
		for id := first; id < first+1000; id++ {
			rows = append(rows, fmt.Sprintf("(%d, 'big%d', %d)", id, id, id%5))
		}
		out = append(out, write("sf_user", "INSERT INTO sf_user (id, name, city_id) VALUES "+strings.Join(rows, ", ")))
	}
	return out
}

// TestShardedPeerWrongAnswers replays peerStatements, text and prepared,
// through shardgate and on a reference server holding every row, and
// compares every answer (rows, column definitions, warnings): none may
// differ or be refused.
func TestShardedPeerWrongAnswers(t *testing.T) {
	gen := difftest.NewGenerator(20261201)
	d := startShardedDiff(t, gen)
	difftest.LoadData(t, d.ref, d.got, gen, diffOptions())
	compareStatements(t, d, peerBigUsers())
	if t.Failed() {
		t.FailNow()
	}
	rep, err := difftest.Apply(d.ref, d.got, 1, preparedAndText("peer", peerStatements), diffOptions())
	if err != nil {
		t.Fatal(err)
	}
	checkEvaluated(t, rep)
}
