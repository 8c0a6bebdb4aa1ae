package proxy_test

import (
	"context"
	"database/sql"
	"strings"
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

// insertSelects insert into sharded tables from sharded ones (issue 22):
// rows routed by key over every layout (hash on INT, hash on a _ci
// string, range, date_month), an aggregate's rows, a Note for a rounded
// DECIMAL, a value too long (the server's error, nothing written), no
// row at all. As text: a prepared INSERT … SELECT into a sharded table
// is refused at PREPARE.
var insertSelects = []string{
	"INSERT INTO sf_event (id, kind, amount, happened) SELECT id * 10 + 3, LEFT(name, 16), balance / 3, created FROM sf_user WHERE balance BETWEEN -9999 AND 9999 ORDER BY id",
	"INSERT INTO sf_tag (name, uses, updated) SELECT CONCAT('t-', u.name), COUNT(o.order_no), MAX(u.born) FROM sf_user u LEFT JOIN sf_order o ON o.user_id = u.city_id GROUP BY u.name",
	"INSERT INTO sf_log (day, seq, msg, level) SELECT born, id + 100000, name, city_id % 100 FROM sf_user WHERE born BETWEEN '2023-01-01' AND '2024-12-31'",
	"INSERT INTO sf_order (user_id, order_no, amount, status, note) SELECT e.id, e.id + 7000, COALESCE(e.amount, 0), e.kind, 'copied' FROM sf_event e WHERE e.id BETWEEN 1 AND 500",
	"INSERT INTO sf_event (id, kind) SELECT id + 20000, CONCAT(name, REPEAT('z', 20)) FROM sf_user",
	"INSERT INTO sf_event (id, kind) SELECT id + 30000, name FROM sf_user WHERE name = 'nobody at all'",
	"SELECT COUNT(*), SUM(amount) FROM sf_event",
}

// TestShardedEvaluateWrites compares evalWrites', insertSelects' and
// CREATE TABLE … SELECT's answers with a reference server's.
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
	for _, sql := range insertSelects {
		st := difftest.Statement{Kind: "evaluated", SQL: sql, Constructs: []string{"evaluated"}, Ordered: true}
		if sql[0] == 'I' {
			st.Writes = []string{sql[len("INSERT INTO "):strings.Index(sql, " (")]}
		}
		stmts = append(stmts, st)
	}
	// CREATE TABLE … SELECT of a new unsharded table, its column
	// definitions those of the join and the aggregates; refused inside a
	// transaction (it would commit there only).
	add("CREATE TABLE sf_copy SELECT u.id, u.name, COUNT(o.order_no) AS orders, SUM(o.amount) AS total FROM sf_user u LEFT JOIN sf_order o ON o.user_id = u.id GROUP BY u.id, u.name", "sf_copy")
	add("SHOW CREATE TABLE sf_copy")
	add("CREATE TABLE sf_copy2 SELECT * FROM sf_member WHERE nick IS NOT NULL", "sf_copy2")
	add("CREATE TABLE sf_copy2 SELECT * FROM sf_member")
	add("DROP TABLE sf_copy, sf_copy2")
	rep, err := difftest.Apply(d.ref, d.got, 1, stmts, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep.Summary())
	checkEvaluated(t, rep)

	db := openDB(t, proxyDSN(d.proxy, appUser, appPass, diffDB, "interpolateParams=true"))
	conn := oneConn(t, db)
	checkExplainedWrites(t, conn)

	// Inside a transaction such a write is refused: its temporary copies
	// would make every later ROLLBACK warn (1196).
	mustExec(t, conn, "BEGIN")
	_, err = conn.ExecContext(context.Background(), "INSERT INTO sf_note (body) SELECT name FROM sf_user ORDER BY id LIMIT 2")
	if mysqlErrCode(err) != 1235 || !strings.Contains(err.Error(), "inside a transaction") {
		t.Fatalf("INSERT … SELECT into sf_note inside a transaction: %v, want the 1235 refusal", err)
	}
	mustExec(t, conn, "ROLLBACK")
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

// checkExplainedWrites: EXPLAIN shows an evaluated write's steps without
// running it: the copies, the statement on the session's connection
// (explained over empty copies); an INSERT … SELECT into a sharded
// table's twin, read back and written as a multi-row INSERT.
func checkExplainedWrites(t *testing.T, conn *sql.Conn) {
	t.Helper()
	count := func() string { return queryString(t, conn, "SELECT COUNT(*) FROM sf_note") }
	before := count()
	got := explainQuery(t, conn, "EXPLAIN INSERT INTO sf_note (body) SELECT u.name FROM sf_user u JOIN sf_order o ON o.order_no = u.city_id")
	if steps := strings.Join(got.steps(), "\n"); !strings.Contains(steps, "on the session's connection") || !strings.Contains(steps, "Evaluate: copy into") {
		t.Errorf("EXPLAIN of an INSERT … SELECT into the unsharded table:\n%s", steps)
	}
	got = explainQuery(t, conn, "EXPLAIN INSERT INTO sf_event (id, kind) SELECT id + 50000, LEFT(name, 16) FROM sf_user WHERE balance > 1")
	steps := strings.Join(got.steps(), "\n")
	for _, want := range []string{"InsertSelect: the statement, into the twin", "InsertSelect: read back", "InsertSelect: write"} {
		if !strings.Contains(steps, want) {
			t.Errorf("EXPLAIN of an INSERT … SELECT into a sharded table lacks %q:\n%s", want, steps)
		}
	}
	if after := count(); after != before || queryString(t, conn, "SELECT COUNT(*) FROM sf_event WHERE id > 50000") != "0" {
		t.Errorf("EXPLAIN ran the writes (sf_note %s rows, was %s)", after, before)
	}
}
