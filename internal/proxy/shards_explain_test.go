package proxy_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/testenv"
)

// EXPLAIN of a statement on a sharded schema answers with the proxy's
// plan: each step's primitive, shard and SQL, then that shard's own
// EXPLAIN rows of the SQL; FORMAT=JSON embeds each shard's document.
// Nothing of the statement runs.

// explainPair is a schema of two tables sharded by different keys over
// s0 and s1, two sub-tables each (t by id, o by t_id), a reference table
// and an unsharded one, with a few rows; it returns a proxy handle and
// the two shards' direct handles.
func explainPair(t *testing.T, db string) (proxyDB func(params string) *sql.DB, d0, d1 *sql.DB) {
	t.Helper()
	s0, s1 := testenv.Shared(t), testenv.Start(t, testenv.Options{})
	for i, s := range []*testenv.Server{s0, s1} {
		s.Exec(t, "DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db, "CREATE TABLE "+db+".city (id INT PRIMARY KEY, name VARCHAR(20))")
		for k := 2 * i; k < 2*i+2; k++ {
			s.Exec(t, fmt.Sprintf("CREATE TABLE %s.t_%04d (id INT PRIMARY KEY, v INT, KEY (v))", db, k),
				fmt.Sprintf("CREATE TABLE %s.o_%04d (id INT PRIMARY KEY, t_id INT, amount INT, KEY (amount))", db, k))
		}
	}
	s0.Exec(t, "CREATE TABLE "+db+".plain (id INT PRIMARY KEY)")
	cfg := parseConfig(t, twoShardYAML(db, s0.Addr, s1.Addr, 4, `    tables:
      - {name: t, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: 2}
      - {name: o, shard_key: t_id, rule: hash, shards: [s0, s1], sub_tables: 2}
      - {name: city, type: reference}
`, ""), "explain.yaml")
	p := startProxy(t, cfg)
	proxyDB = func(params string) *sql.DB { return openDB(t, proxyDSN(p, appUser, appPass, db, params)) }
	pdb := proxyDB("")
	for id := 1; id <= 20; id++ {
		mustExec(t, pdb, fmt.Sprintf("INSERT INTO t (id, v) VALUES (%d, %d)", id, id%5),
			fmt.Sprintf("INSERT INTO o (id, t_id, amount) VALUES (%d, %d, %d)", id, id%7, id%5))
	}
	return proxyDB, openDB(t, s0.DSN(db)), openDB(t, s1.DSN(db))
}

// explained is an EXPLAIN's answer: its column names and rows (NULL as
// nil).
type explained struct {
	cols []string
	rows [][]*string
}

// explainQuery runs an EXPLAIN and reads its answer.
func explainQuery(t *testing.T, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, sqlText string) explained {
	t.Helper()
	rows, err := q.QueryContext(context.Background(), sqlText)
	if err != nil {
		t.Fatalf("%s: %v", sqlText, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	out := explained{cols: cols}
	defer func() { t.Logf("%s\n%v", sqlText, out) }()
	for rows.Next() {
		vals, err := scanNullStrings(rows, len(cols))
		if err != nil {
			t.Fatal(err)
		}
		row := make([]*string, len(vals))
		for i, v := range vals {
			if v.Valid {
				s := v.String
				row[i] = &s
			}
		}
		out.rows = append(out.rows, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", sqlText, err)
	}
	return out
}

// col is the value of column name in row r ("NULL" for NULL).
func (e explained) col(r int, name string) string {
	i := slices.Index(e.cols, name)
	if i < 0 || e.rows[r][i] == nil {
		return "NULL"
	}
	return *e.rows[r][i]
}

// steps are the rows' distinct shardgate_step numbers, each with its
// primitive.
func (e explained) steps() []string {
	var out []string
	for r := range e.rows {
		s := e.col(r, "shardgate_step") + " " + e.col(r, "primitive")
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	return out
}

func (e explained) String() string {
	var b strings.Builder
	b.WriteString(strings.Join(e.cols, " | "))
	for r := range e.rows {
		b.WriteString("\n")
		for i := range e.cols {
			if i > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(e.col(r, e.cols[i]))
		}
	}
	return b.String()
}

var explainLead = []string{"shardgate_step", "primitive", "shard", "query"}

// A point select: one step, the Route to the key's sub-table, with its
// shard's EXPLAIN rows after the leading columns, in the server's
// columns (EXTENDED's filtered included); DESCRIBE is EXPLAIN.
func TestShardedExplainRoutedPointSelect(t *testing.T) {
	proxyDB, _, _ := explainPair(t, "sexp_route")
	db := proxyDB("")
	id := int64(1)
	for subTableOf(t, id, 4) < 2 { // a key on s1
		id++
	}
	sub := fmt.Sprintf("t_%04d", subTableOf(t, id, 4))
	got := explainQuery(t, db, fmt.Sprintf("EXPLAIN SELECT id, v FROM t WHERE id = %d", id))
	want := append(slices.Clone(explainLead), "id", "select_type", "table", "type", "possible_keys", "key", "key_len", "ref", "rows", "Extra")
	if !slices.Equal(got.cols, want) {
		t.Fatalf("columns %v, want %v", got.cols, want)
	}
	if len(got.rows) != 1 || got.col(0, "shardgate_step") != "1" || got.col(0, "primitive") != "Route" || got.col(0, "shard") != "s1" ||
		!contains(got.col(0, "query"), sub) || got.col(0, "table") != sub || got.col(0, "type") != "const" || got.col(0, "key") != "PRIMARY" {
		t.Fatalf("EXPLAIN of a point select:\n%v\nwant one Route to s1 reading %s by its PRIMARY key", got, sub)
	}
	conn := oneConn(t, db)
	got = explainQuery(t, conn, fmt.Sprintf("DESCRIBE EXTENDED SELECT id, v FROM t WHERE id = %d", id))
	if !slices.Contains(got.cols, "filtered") || len(got.rows) != 1 || got.col(0, "table") != sub {
		t.Fatalf("DESCRIBE EXTENDED of a point select:\n%v\nwant the filtered column and one row of %s", got, sub)
	}
	// Its note (the query as the shard rewrote it) is the statement's.
	if w := explainQuery(t, conn, "SHOW WARNINGS"); len(w.rows) != 1 || w.col(0, "Code") != "1003" || !contains(w.col(0, "Message"), sub) {
		t.Errorf("SHOW WARNINGS after EXPLAIN EXTENDED:\n%v\nwant the shard's note 1003", w)
	}
	// An EXPLAIN without notes leaves none, whatever the statement before
	// it left.
	queryString(t, conn, fmt.Sprintf("SELECT v + 'x' FROM t WHERE id = %d", id))
	explainQuery(t, conn, fmt.Sprintf("EXPLAIN SELECT id, v FROM t WHERE id = %d", id))
	if w := explainQuery(t, conn, "SHOW WARNINGS"); len(w.rows) != 0 {
		t.Errorf("SHOW WARNINGS after EXPLAIN:\n%v\nwant none", w)
	}
	// From a session on another database, as in one on the schema.
	other := oneConn(t, db)
	mustExec(t, other, "USE information_schema")
	got = explainQuery(t, other, fmt.Sprintf("EXPLAIN SELECT id, v FROM sexp_route.t WHERE id = %d", id))
	if len(got.rows) != 1 || got.col(0, "table") != sub || got.col(0, "type") != "const" {
		t.Fatalf("EXPLAIN from information_schema:\n%v\nwant the Route's row", got)
	}
	if got := queryString(t, other, "SELECT DATABASE()"); got != "information_schema" {
		t.Fatalf("after it, the session's database is %q", got)
	}
	// DESCRIBE of a table is still the table's columns.
	if got := explainQuery(t, db, "DESCRIBE t"); len(got.rows) != 2 || got.cols[0] != "Field" {
		t.Fatalf("DESCRIBE t:\n%v", got)
	}
}

// A merge across shards: one step per shard (its sub-tables' UNION ALL,
// ordered and limited), each with the shard's EXPLAIN of it, then the
// proxy's merge, whose server columns are NULL.
func TestShardedExplainMerge(t *testing.T) {
	proxyDB, _, _ := explainPair(t, "sexp_merge")
	got := explainQuery(t, proxyDB(""), "EXPLAIN SELECT id, v FROM t ORDER BY v DESC, id LIMIT 3")
	if steps := got.steps(); !slices.Equal(steps, []string{"1 Merge", "2 Merge", "3 Merge"}) {
		t.Fatalf("steps %v, want two shards' parts and the merge:\n%v", steps, got)
	}
	tables := map[string][]string{}
	for r := range got.rows {
		step := got.col(r, "shardgate_step")
		if step == "3" {
			if got.col(r, "shard") != "NULL" || got.col(r, "id") != "NULL" || got.col(r, "table") != "NULL" ||
				!contains(got.col(r, "query"), "merge by") || !contains(got.col(r, "query"), "rows 1 to 3") {
				t.Errorf("the merge's row: %v", got.rows[r])
			}
			continue
		}
		if !contains(strings.ToLower(got.col(r, "query")), "union all") || !contains(strings.ToLower(got.col(r, "query")), "limit 3") {
			t.Errorf("step %s sends %q, want a UNION ALL limited to 3", step, got.col(r, "query"))
		}
		tables[got.col(r, "shard")] = append(tables[got.col(r, "shard")], got.col(r, "table"))
	}
	// Each shard explains the UNION ALL of its own two sub-tables.
	for shard, want := range map[string][]string{"s0": {"t_0000", "t_0001"}, "s1": {"t_0002", "t_0003"}} {
		for _, sub := range want {
			if !slices.Contains(tables[shard], sub) {
				t.Errorf("shard %s's EXPLAIN rows name tables %v, want %s among them", shard, tables[shard], sub)
			}
		}
	}
}

// An evaluated join off the shard key: each table's creation on the
// evaluator and its copy from each shard (explained there), the
// statement explained on the evaluator over the temporary tables,
// created empty, and the drop. Nothing is copied.
func TestShardedExplainEvaluatedJoin(t *testing.T) {
	proxyDB, _, _ := explainPair(t, "sexp_join")
	got := explainQuery(t, proxyDB(""), "EXPLAIN SELECT t.id, o.id FROM t JOIN o ON o.amount = t.v WHERE t.v > 2")
	var prims []string
	for _, s := range got.steps() {
		prims = append(prims, s[strings.IndexByte(s, ' ')+1:])
	}
	if len(prims) < 8 || prims[0] != "Evaluate: create" || prims[len(prims)-2] != "Evaluate: the statement" || prims[len(prims)-1] != "Evaluate: drop" {
		t.Fatalf("steps %v, want each table created and copied, the statement, the drop:\n%v", prims, got)
	}
	fetched := map[string]bool{}
	var statementTables []string
	for r := range got.rows {
		switch prim := got.col(r, "primitive"); {
		case strings.HasPrefix(prim, "Evaluate: copy into"):
			// (The table's fetch, explained without its SET STATEMENT.)
			if got.col(r, "select_type") == "NULL" || !strings.HasPrefix(got.col(r, "table"), "t_") && !strings.HasPrefix(got.col(r, "table"), "o_") &&
				!strings.HasPrefix(got.col(r, "table"), "<union") {
				t.Errorf("a fetch's row without its shard's EXPLAIN: %v", got.rows[r])
			}
			fetched[got.col(r, "shard")+" "+got.col(r, "table")] = true
		case prim == "Evaluate: the statement":
			if got.col(r, "shard") != "s0" {
				t.Errorf("the statement explained on %s, want the evaluator s0", got.col(r, "shard"))
			}
			statementTables = append(statementTables, got.col(r, "table"))
		case prim == "Evaluate: create", prim == "Evaluate: drop":
			if got.col(r, "id") != "NULL" {
				t.Errorf("%s has server columns: %v", prim, got.rows[r])
			}
		}
	}
	for _, want := range []string{"s0 t_0000", "s0 t_0001", "s1 t_0002", "s1 t_0003", "s0 o_0000", "s1 o_0003"} {
		if !fetched[want] {
			t.Errorf("no EXPLAIN row of the fetch of %s (got %v)", want, fetched)
		}
	}
	slices.Sort(statementTables)
	if !slices.Equal(statementTables, []string{"o", "t"}) {
		t.Errorf("the statement's EXPLAIN reads %v, want the temporary tables o and t", statementTables)
	}
}

// A semi-join: the table joined on its shard key is read by the other
// side's values: the statement giving them is explained on the
// evaluator; its batches, whose values are known only as it runs, have
// no server rows; its own fetches (when the values are too many) are
// explained. An IN subquery is a semi-join too.
func TestShardedExplainSemiJoin(t *testing.T) {
	proxyDB, _, _ := explainPair(t, "sexp_semi")
	db := proxyDB("")
	for _, q := range []string{
		"EXPLAIN SELECT t.id, o.id FROM t JOIN o ON o.t_id = t.v WHERE t.id < 10",
		"EXPLAIN SELECT id FROM o WHERE t_id IN (SELECT v FROM t WHERE id < 5)",
	} {
		got := explainQuery(t, db, q)
		var values, batch, instead bool
		for r := range got.rows {
			prim := got.col(r, "primitive")
			switch {
			case strings.HasPrefix(prim, "Evaluate: semi-join values"):
				values = got.col(r, "shard") == "s0" && got.col(r, "select_type") != "NULL" && contains(strings.ToUpper(got.col(r, "query")), "SELECT DISTINCT")
			case strings.HasSuffix(prim, "(semi-join)"):
				batch = got.col(r, "id") == "NULL" && contains(got.col(r, "query"), "IN (…)") && contains(got.col(r, "query"), "o_NNNN")
			case strings.Contains(prim, "(instead, when the values are more than"):
				instead = got.col(r, "select_type") != "NULL"
			}
		}
		if !values || !batch || !instead {
			t.Errorf("%s: values explained %v, batches shown %v, own fetches explained %v:\n%v", q, values, batch, instead, got)
		}
	}
}

// An UPDATE without its key runs on every sub-table: each part is
// explained on its shard, and none of them runs.
func TestShardedExplainUpdateAcrossShards(t *testing.T) {
	proxyDB, _, _ := explainPair(t, "sexp_upd")
	got := explainQuery(t, proxyDB(""), "EXPLAIN UPDATE t SET v = v + 100 WHERE v = 3")
	if steps := got.steps(); len(steps) != 4 {
		t.Fatalf("steps %v, want one per sub-table:\n%v", steps, got)
	}
	for r := range got.rows {
		sub := fmt.Sprintf("t_%04d", r)
		if got.col(r, "primitive") != "Fanout" || got.col(r, "table") != sub || !contains(got.col(r, "query"), sub) ||
			!contains(strings.ToLower(got.col(r, "query")), "update") || got.col(r, "key") != "v" {
			t.Errorf("row %d: %v, want the Fanout's UPDATE of %s explained by its key v", r, got.rows[r], sub)
		}
	}
	if n := queryString(t, proxyDB(""), "SELECT COUNT(*) FROM t WHERE v >= 100"); n != "0" {
		t.Errorf("the explained UPDATE ran: %s rows updated", n)
	}
}

// EXPLAIN FORMAT=JSON: one row, one column, a JSON document of the plan
// whose steps hold their shards' own documents as JSON objects.
func TestShardedExplainFormatJSON(t *testing.T) {
	proxyDB, _, _ := explainPair(t, "sexp_json")
	got := explainQuery(t, proxyDB(""), "EXPLAIN FORMAT=JSON SELECT id, v FROM t WHERE v = 1 ORDER BY id")
	if len(got.rows) != 1 || len(got.cols) != 1 || got.cols[0] != "EXPLAIN" {
		t.Fatalf("FORMAT=JSON answer:\n%v\nwant one row of one column EXPLAIN", got)
	}
	var doc struct {
		Shardgate struct {
			Plan []struct {
				Step      int             `json:"step"`
				Primitive string          `json:"primitive"`
				Shard     string          `json:"shard"`
				Query     string          `json:"query"`
				Explain   json.RawMessage `json:"explain"`
			} `json:"plan"`
		} `json:"shardgate"`
	}
	if err := json.Unmarshal([]byte(got.col(0, "EXPLAIN")), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, got.col(0, "EXPLAIN"))
	}
	plan := doc.Shardgate.Plan
	if len(plan) != 3 || plan[0].Step != 1 || plan[2].Primitive != "Merge" || plan[2].Explain != nil {
		t.Fatalf("plan %+v, want two shards' parts and the merge", plan)
	}
	for _, st := range plan[:2] {
		var shard struct {
			QueryBlock map[string]any `json:"query_block"`
		}
		if err := json.Unmarshal(st.Explain, &shard); err != nil || shard.QueryBlock == nil || st.Shard == "" {
			t.Errorf("step %d on %q: explain %s, want the shard's own document as an object (%v)", st.Step, st.Shard, st.Explain, err)
		}
	}
}

// Refusals: an inner statement the proxy refuses gets the same error; a
// syntax error the server's 1064; a format MariaDB does not know its
// 1791; ANALYZE, which runs the statement, only on one sub-table (the
// shard's answer relayed); a prepared EXPLAIN 1235.
func TestShardedExplainRefusals(t *testing.T) {
	proxyDB, _, _ := explainPair(t, "sexp_ref")
	db := proxyDB("")
	ctx := context.Background()
	for _, c := range []struct {
		sql  string
		code uint16
		text string
	}{
		{"EXPLAIN SELECT id, @v FROM t", mysql.ERNotSupportedYet, "user variables"},
		{"EXPLAIN UPDATE t SET id = 5 WHERE id = 1", mysql.ERNotSupportedYet, "UPDATE of shard key"},
		{"EXPLAIN SELECT id FROM t WHERE", mysql.ERParse, "syntax"},
		{"EXPLAIN FORMAT=TREE SELECT id FROM t", 1791, "TREE"},
		{"ANALYZE SELECT id FROM t WHERE v = 1", mysql.ERNotSupportedYet, "ANALYZE"},
		{"EXPLAIN ANALYZE SELECT id FROM t WHERE id = 1", mysql.ERParse, "syntax"},
	} {
		_, err := db.ExecContext(ctx, c.sql)
		if mysqlErrCode(err) != c.code || !contains(err.Error(), c.text) {
			t.Errorf("%s: %v, want %d naming %q", c.sql, err, c.code, c.text)
		}
	}
	// The plain statement's own refusal, word for word.
	_, plain := db.ExecContext(ctx, "SELECT id, @v FROM t")
	_, explain := db.ExecContext(ctx, "EXPLAIN SELECT id, @v FROM t")
	if plain == nil || explain == nil || plain.Error() != explain.Error() {
		t.Errorf("refusals differ: %v and %v", plain, explain)
	}
	// ANALYZE of a point select runs on its sub-table: the server's
	// answer, r_rows and all.
	got := explainQuery(t, db, "ANALYZE SELECT id, v FROM t WHERE id = 3")
	if !slices.Contains(got.cols, "r_rows") || len(got.rows) != 1 || got.col(0, "table") != fmt.Sprintf("t_%04d", subTableOf(t, 3, 4)) {
		t.Errorf("ANALYZE of a point select:\n%v", got)
	}
	// Prepared (interpolateParams=false: the driver prepares it).
	pdb := proxyDB("interpolateParams=false")
	_, err := pdb.QueryContext(ctx, "EXPLAIN SELECT id FROM t WHERE id = ?", 1)
	if mysqlErrCode(err) != mysql.ERNotSupportedYet || !contains(err.Error(), "prepared statement") {
		t.Errorf("prepared EXPLAIN: %v, want 1235 naming prepared statements", err)
	}
}

// Inside a transaction: a shard's EXPLAIN runs on the transaction's
// connection there (it sees the transaction's uncommitted row, which
// another connection would not); an explained write the transaction
// may not make is refused as the write would be, and one it may make
// is not recorded: the transaction goes on as if the EXPLAINs had not
// been.
func TestShardedExplainInTransaction(t *testing.T) {
	proxyDB, _, d1 := explainPair(t, "sexp_trx")
	conn := oneConn(t, proxyDB(""))
	on := func(shard int) int64 { // a new key on sub-table 2·shard
		id := int64(1000)
		for subTableOf(t, id, 4) != 2*shard {
			id++
		}
		return id
	}
	k0, k1 := on(0), on(1)
	mustExec(t, conn, "BEGIN")
	mustExec(t, conn, fmt.Sprintf("INSERT INTO t (id, v) VALUES (%d, 1)", k1))
	got := explainQuery(t, conn, fmt.Sprintf("EXPLAIN SELECT id, v FROM t WHERE id = %d", k1))
	if len(got.rows) != 1 || got.col(0, "type") != "const" || got.col(0, "table") != "t_0002" {
		t.Fatalf("EXPLAIN of the transaction's own row:\n%v\nwant a const read of t_0002 (the transaction's connection)", got)
	}
	// Reads on both shards are explained; the other shard is not joined.
	if got := explainQuery(t, conn, "EXPLAIN SELECT id FROM t WHERE v = 1"); len(got.steps()) != 3 {
		t.Fatalf("EXPLAIN of a read of every shard in the transaction:\n%v", got)
	}
	_, err := conn.ExecContext(context.Background(), fmt.Sprintf("EXPLAIN UPDATE t SET v = 7 WHERE id = %d", k0))
	if mysqlErrCode(err) != mysql.ERNotSupportedYet || !contains(err.Error(), "cross_shard_writes") {
		t.Fatalf("EXPLAIN of a write on a second shard: %v, want the write's refusal", err)
	}
	if got := explainQuery(t, conn, fmt.Sprintf("EXPLAIN UPDATE t SET v = 7 WHERE id = %d", k1)); len(got.rows) != 1 || got.col(0, "shard") != "s1" {
		t.Fatalf("EXPLAIN of a write on the transaction's shard:\n%v", got)
	}
	mustExec(t, conn, "COMMIT")
	if got := queryString(t, d1, fmt.Sprintf("SELECT v FROM t_0002 WHERE id = %d", k1)); got != "1" {
		t.Fatalf("after COMMIT v = %s, want 1 (the explained UPDATE did not run)", got)
	}
	// After it, a write on s0 is a transaction of its own: nothing of
	// the EXPLAINs was recorded.
	mustExec(t, conn, "BEGIN")
	mustExec(t, conn, fmt.Sprintf("INSERT INTO t (id, v) VALUES (%d, 2)", k0))
	mustExec(t, conn, "COMMIT")
}

// An INSERT whose keys the sequence generates is explained with the ids
// it would hand out next, none drawn (nor by the explain hint): the
// next INSERT gets the first id still.
func TestShardedExplainInsertDrawsNoKey(t *testing.T) {
	a := startAutoShards(t, "sexp_ins")
	db := openDB(t, proxyDSN(a.proxy, appUser, appPass, a.db, ""))
	got := explainQuery(t, db, "EXPLAIN INSERT INTO t (v) VALUES (1), (2), (3)")
	if len(got.rows) == 0 || got.col(0, "primitive") != "InsertSplit" || got.col(0, "select_type") != "INSERT" {
		t.Fatalf("EXPLAIN of an INSERT of generated keys:\n%v\nwant the split INSERT's parts explained", got)
	}
	rows, err := db.Query("/* shardgate:explain */ INSERT INTO t (v) VALUES (4), (5)")
	if err != nil {
		t.Fatal(err)
	}
	rows.Close()
	res, err := db.Exec("INSERT INTO t (v) VALUES (6)")
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := res.LastInsertId(); id != 1 {
		t.Errorf("the INSERT after the explained ones got id %d, want 1 (an explained INSERT drew ids)", id)
	}
	if n := queryString(t, db, "SELECT COUNT(*) FROM t"); n != "1" {
		t.Errorf("%s rows, want 1: an explained INSERT ran", n)
	}
}
