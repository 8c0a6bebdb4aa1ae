package proxy_test

import (
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
)

// evalWrites write the unsharded table sf_note from sharded tables
// (issue 22): INSERT … SELECT of a join, a derived table with ORDER BY
// and LIMIT over every shard, a GROUP BY, with the id generated or given
// (LAST_INSERT_ID read after), a duplicate key (its error, nothing
// written), IGNORE and ON DUPLICATE KEY UPDATE, a warning (a value cut
// to the column); UPDATE and DELETE whose subquery or join reads sharded
// rows; CREATE TABLE … SELECT. Each is compared with one server's answer (affected rows,
// insert id, warnings, the table's contents after), text and prepared.
var evalWrites = []difftest.Statement{
	{SQL: "INSERT INTO sf_note (body, created) SELECT CONCAT(u.name, '/', o.status), o.ordered_at FROM sf_user u JOIN sf_order o ON o.order_no = u.city_id ORDER BY u.id, o.user_id, o.order_no"},
	{SQL: "SELECT LAST_INSERT_ID()"},
	{SQL: "INSERT INTO sf_note (body) SELECT name FROM (SELECT id, name FROM sf_user ORDER BY id DESC LIMIT 7) t ORDER BY t.id"},
	{SQL: "INSERT INTO sf_note (id, body) SELECT id + 100000, CONCAT('user ', name) FROM sf_user WHERE balance > ? ORDER BY id", Args: []any{"10.5"}},
	{SQL: "INSERT INTO sf_note (id, body) SELECT 100000 + MIN(id), 'again' FROM sf_user WHERE balance > ?", Args: []any{"10.5"}},
	{SQL: "INSERT IGNORE INTO sf_note (id, body) SELECT id + 100000, 'ignored' FROM sf_user ORDER BY id"},
	{SQL: "INSERT INTO sf_note (id, body) SELECT user_id + 200000, status FROM sf_order WHERE order_no = 1 ORDER BY user_id ON DUPLICATE KEY UPDATE body = CONCAT(sf_note.body, '+')"},
	{SQL: "INSERT INTO sf_note (body) SELECT CONCAT(status, REPEAT('x', 70)) FROM sf_order GROUP BY status ORDER BY status"},
	{SQL: "UPDATE sf_note SET body = 'has orders' WHERE id IN (SELECT user_id + 100000 FROM sf_order WHERE amount > ?)", Args: []any{"20.5"}},
	{SQL: "UPDATE sf_note n JOIN sf_user u ON u.id + 100000 = n.id SET n.created = u.created WHERE u.city_id IS NOT NULL"},
	{SQL: "DELETE FROM sf_note WHERE id IN (SELECT id + 100000 FROM sf_user WHERE name LIKE ?)", Args: []any{"a%"}},
	{SQL: "DELETE n FROM sf_note n JOIN sf_event e ON e.id = n.id - 100000"},
	{SQL: "SELECT id, body, created FROM sf_note ORDER BY id"},
}

// TestShardedEvaluateWrites compares evalWrites' answers with a reference
// server's, outside a transaction, then inside one that writes the
// sharded tables first (the copies see its rows) and rolls back.
func TestShardedEvaluateWrites(t *testing.T) {
	gen := difftest.NewGenerator(20261201)
	d := startShardedDiff(t, gen)
	opts := diffOptions()
	difftest.LoadData(t, d.ref, d.got, gen, opts)
	var stmts []difftest.Statement
	add := func(sql string, writes ...string) {
		stmts = append(stmts, difftest.Statement{Kind: "trx", SQL: sql, Writes: writes, Constructs: []string{"evaluated"}})
	}
	stmts = append(stmts, evalWriteList()...)
	// CREATE TABLE … SELECT of a new unsharded table, its column
	// definitions those of the join and the aggregates; refused inside a
	// transaction (it would commit there only).
	add("CREATE TABLE sf_copy SELECT u.id, u.name, COUNT(o.order_no) AS orders, SUM(o.amount) AS total FROM sf_user u LEFT JOIN sf_order o ON o.user_id = u.id GROUP BY u.id, u.name", "sf_copy")
	add("SHOW CREATE TABLE sf_copy")
	add("CREATE TABLE sf_copy2 SELECT * FROM sf_member WHERE nick IS NOT NULL", "sf_copy2")
	add("CREATE TABLE sf_copy2 SELECT * FROM sf_member")
	add("DROP TABLE sf_copy, sf_copy2")
	add("BEGIN")
	add("INSERT INTO sf_user (id, name, city_id, balance) VALUES (9001, 'Zoë', 7, 12.50), (9002, 'zoe', 8, 1.00)", "sf_user")
	stmts = append(stmts, evalWriteList()...)
	add("ROLLBACK", "sf_user", "sf_note")
	add("SELECT COUNT(*) FROM sf_note")
	rep, err := difftest.Apply(d.ref, d.got, 1, stmts, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkEvaluated(t, rep)
}

// evalWriteList is evalWrites as statements of the runner: each write
// once as text (a write runs once), prepared when it has arguments.
func evalWriteList() []difftest.Statement {
	var out []difftest.Statement
	for _, st := range evalWrites {
		st.Kind = "evaluated"
		st.Constructs = []string{"evaluated"}
		st.Ordered = true
		if st.SQL[0] != 'S' {
			st.Writes = []string{"sf_note"}
		}
		if len(st.Args) > 0 {
			st.Prepared = st.SQL
		}
		st.SQL = inline(st.SQL, st.Args)
		out = append(out, st)
	}
	return out
}
