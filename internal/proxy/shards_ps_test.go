package proxy_test

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/testenv"
)

// Prepared statements (go-sql-driver without interpolateParams: binary
// COM_STMT_PREPARE / EXECUTE) on a sharded table: routed per execution by
// the typed parameters.
func TestShardedPreparedStatementsRouteByParams(t *testing.T) {
	d0, d1, _, _, proxyDB := shardedPair(t, "sps")
	db := proxyDB("interpolateParams=false")
	direct := []*sql.DB{d0, d0, d1, d1} // by sub-table

	ins, err := db.Prepare("INSERT INTO t (id, v) VALUES (?, ?)")
	if err != nil {
		t.Fatal(err)
	}
	for id := int64(-5); id <= 14; id++ {
		if _, err := ins.Exec(id, id*10); err != nil {
			t.Fatalf("prepared INSERT of id %d: %v", id, err)
		}
	}
	ins.Close()
	for id := int64(-5); id <= 14; id++ {
		want := subTableOf(t, id, 4)
		for i, d := range direct {
			n := queryString(t, d, fmt.Sprintf("SELECT COUNT(*) FROM t_%04d WHERE id = %d", i, id))
			if (n == "1") != (i == want) {
				t.Fatalf("id %d: %s row(s) on t_%04d, want it on t_%04d only", id, n, i, want)
			}
		}
	}

	// The parameter's type is the client's, the comparison the column's:
	// each finds the row on its one sub-table (ORDER BY … LIMIT is refused
	// over several, so an answer proves the routing).
	for _, arg := range []any{int64(7), uint64(7), "7", 7.0, "7.0", []byte("7")} {
		var v int
		if err := db.QueryRow("SELECT v FROM t WHERE id = ? ORDER BY v LIMIT 1", arg).Scan(&v); err != nil || v != 70 {
			t.Errorf("id = %#v: v = %d, %v; want 70", arg, v, err)
		}
	}
	// Vitess writes LIMIT ? OFFSET ? as LIMIT ?, ?: the parameters follow.
	if got := queryInts(t, db, "SELECT v FROM t WHERE id = ? LIMIT ? OFFSET ?", 7, 1, 0); fmt.Sprint(got) != "[70]" {
		t.Errorf("LIMIT 1 OFFSET 0: %v, want [70]", got)
	}
	if got := queryInts(t, db, "SELECT v FROM t WHERE id = ? LIMIT ? OFFSET ?", 7, 1, 1); len(got) != 0 {
		t.Errorf("LIMIT 1 OFFSET 1: %v, want none", got)
	}
	// NULL matches no row.
	if got := queryInts(t, db, "SELECT v FROM t WHERE id = ?", nil); len(got) != 0 {
		t.Errorf("id = NULL: %v", got)
	}

	// Without a key: every sub-table, one result set.
	got := queryInts(t, db, "SELECT id FROM t WHERE v >= ?", 0)
	sort.Ints(got)
	if fmt.Sprint(got) != "[0 1 2 3 4 5 6 7 8 9 10 11 12 13 14]" {
		t.Errorf("scatter read: %v", got)
	}
	// Merged across sub-tables (issue 14), the LIMIT a parameter.
	if got := fmt.Sprint(queryInts(t, db, "SELECT id FROM t WHERE v > ? ORDER BY id DESC LIMIT ?", 0, 3)); got != "[14 13 12]" {
		t.Errorf("ORDER BY across sub-tables: %s", got)
	}

	// Writes by key and without.
	expectAffected(t, db, 1, "UPDATE t SET v = ? WHERE id = ?", 777, 7)
	if got := queryString(t, direct[subTableOf(t, 7, 4)], fmt.Sprintf("SELECT v FROM t_%04d WHERE id = 7", subTableOf(t, 7, 4))); got != "777" {
		t.Errorf("UPDATE by key: v = %s on the backend", got)
	}
	expectAffected(t, db, 10, "UPDATE t SET v = v + ? WHERE v < ?", 1, 50)
	expectAffected(t, db, 1, "DELETE FROM t WHERE id = ?", "3")
	expectAffected(t, db, 5, "DELETE FROM t WHERE v < ?", 0)
	if got := queryInts(t, db, "SELECT id FROM t WHERE id >= ? AND id <> ?", 0, 3); len(got) != 14 {
		t.Errorf("rows left: %v, want 14", got)
	}

	// Reference and unsharded tables.
	expectAffected(t, db, 1, "INSERT INTO city VALUES (?, ?)", 1, "Oslo")
	for i, d := range []*sql.DB{d0, d1} {
		if got := queryString(t, d, "SELECT name FROM city WHERE id = 1"); got != "Oslo" {
			t.Errorf("shard s%d: city 1 = %q", i, got)
		}
	}
	var name string
	if err := db.QueryRow("SELECT name FROM city WHERE id = ?", 1).Scan(&name); err != nil || name != "Oslo" {
		t.Errorf("reference read: %q, %v", name, err)
	}
	expectAffected(t, db, 1, "INSERT INTO plain VALUES (?)", 9)
	if got := queryString(t, d0, "SELECT COUNT(*) FROM plain WHERE id = 9"); got != "1" {
		t.Errorf("unsharded INSERT: %s rows on s0", got)
	}

	// In a transaction, on the writer's shard, undone by ROLLBACK.
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("UPDATE t SET v = ? WHERE id = ?", -1, 9); err != nil {
		t.Fatal(err)
	}
	var v int
	if err := tx.QueryRow("SELECT v FROM t WHERE id = ?", 9).Scan(&v); err != nil || v != -1 {
		t.Errorf("read in the transaction: %d, %v", v, err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if got := queryString(t, db, "SELECT v FROM t WHERE id = 9"); got != "90" {
		t.Errorf("after ROLLBACK: v = %s, want 90", got)
	}
}

// What the shape alone refuses is the PREPARE's error; text PREPARE is
// refused on a sharded schema.
func TestShardedPrepareRefusals(t *testing.T) {
	_, _, _, _, proxyDB := shardedPair(t, "spsr")
	db := proxyDB("interpolateParams=false")
	_, err := db.Prepare("UPDATE t, city SET city.name = ? WHERE t.id = city.id")
	if mysqlErrCode(err) != mysql.ERNotSupportedYet || !contains(err.Error(), "reference table city") {
		t.Errorf("PREPARE of a refused shape: %v, want 1235 naming reference table city", err)
	}
	// A read the planner cannot write back for a sub-table is evaluated:
	// prepared where it runs, over the tables' copies.
	if _, err := db.Exec("INSERT INTO t VALUES (9, 90), (10, 100)"); err != nil {
		t.Fatal(err)
	}
	var mode, v string
	if err := db.QueryRow("SELECT @@SESSION.sql_mode, v FROM t WHERE id = ?", 9).Scan(&mode, &v); err != nil || v != "90" {
		t.Errorf("a prepared read the planner cannot write back: %v, v = %s, want 90", err, v)
	}
	_, err = db.Prepare("SELECT v FROM t WHERE")
	if code := mysqlErrCode(err); code != mysql.ERParse && code != mysql.ERNotSupportedYet {
		t.Errorf("PREPARE of a syntax error: %v, want the parser's refusal", err)
	}
	_, err = db.Exec("PREPARE s FROM 'SELECT v FROM t WHERE id = ?'")
	if mysqlErrCode(err) != mysql.ERNotSupportedYet || !contains(err.Error(), "binary protocol") {
		t.Errorf("text PREPARE: %v, want 1235 pointing to the binary protocol", err)
	}
}

// TestShardedPreparedInsertSplits: a prepared multi-row INSERT whose rows
// go to several sub-tables runs as one server-side statement per part,
// each executed with the parameters of its own rows.
func TestShardedPreparedInsertSplits(t *testing.T) {
	d0, d1, _, _, proxyDB := shardedPair(t, "spsplit")
	db := proxyDB("interpolateParams=false")
	ids := []int64{1, 2, 3, 4, 5, 6, 7, 8}
	res, err := db.Exec("INSERT INTO t (id, v) VALUES (?, ?), (?, ?), (?, ?), (?, ?), (?, ?), (?, ?), (?, ?), (?, ?)",
		1, 10, 2, 20, 3, 30, 4, 40, 5, 50, 6, 60, 7, 70, 8, 80)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 8 {
		t.Fatalf("rows affected %d, want 8", n)
	}
	direct := []*sql.DB{d0, d0, d1, d1}
	for _, id := range ids {
		sub := subTableOf(t, id, 4)
		if got := queryString(t, direct[sub], fmt.Sprintf("SELECT v FROM t_%04d WHERE id = %d", sub, id)); got != fmt.Sprint(id*10) {
			t.Errorf("id %d: v = %q on t_%04d, want %d", id, got, sub, id*10)
		}
	}
}

func queryInts(t *testing.T, db *sql.DB, q string, args ...any) []int {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s %v: %v", q, args, err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s %v: %v", q, args, err)
	}
	return out
}

func expectAffected(t *testing.T, db *sql.DB, want int64, q string, args ...any) {
	t.Helper()
	res, err := db.Exec(q, args...)
	if err != nil {
		t.Fatalf("%s %v: %v", q, args, err)
	}
	if n, _ := res.RowsAffected(); n != want {
		t.Errorf("%s %v: %d rows affected, want %d", q, args, n, want)
	}
}

// psDiffTables are the sharded tables of TestShardedPreparedMatchesOneServer,
// one per key type, and their columns.
var psDiffTables = []struct{ name, key, cols string }{
	{"u", "id", "id INT NOT NULL PRIMARY KEY, name VARCHAR(32), amount DECIMAL(10,2), day DATE"},
	{"tag", "name", "name VARCHAR(32) NOT NULL PRIMARY KEY, uses INT"},
	{"money", "amount", "amount DECIMAL(10,2) NOT NULL PRIMARY KEY, note VARCHAR(20)"},
	{"logd", "day", "day DATE NOT NULL, seq INT NOT NULL, PRIMARY KEY (day, seq)"},
}

// TestShardedPreparedMatchesOneServer executes prepared statements with
// typed binary parameters (integers, strings, decimals, doubles, dates,
// NULL) on tables sharded by keys of each type, through shardgate and on
// one server holding every row, and requires the same answers: prepare
// responses (parameter count, every field of the column definitions),
// binary rows, OK packets, and the tables' contents at the end.
func TestShardedPreparedMatchesOneServer(t *testing.T) {
	const db = "spsd"
	s0 := testenv.Shared(t)
	srvs := testenv.StartN(t, 2, testenv.Options{})
	s1, refSrv := srvs[0], srvs[1]
	for _, s := range []*testenv.Server{s0, s1, refSrv} {
		s.Exec(t, "DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db+" CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci")
	}
	var tables strings.Builder
	for _, tb := range psDiffTables {
		refSrv.Exec(t, fmt.Sprintf("CREATE TABLE %s.%s (%s)", db, tb.name, tb.cols))
		for i := 0; i < 4; i++ {
			s := []*testenv.Server{s0, s0, s1, s1}[i]
			s.Exec(t, fmt.Sprintf("CREATE TABLE %s.%s_%04d (%s)", db, tb.name, i, tb.cols))
		}
		fmt.Fprintf(&tables, "      - {name: %s, shard_key: %s, rule: hash, shards: [s0, s1], sub_tables: 2}\n", tb.name, tb.key)
	}
	for _, s := range []*testenv.Server{s0, s1, refSrv} {
		s.Exec(t, "CREATE TABLE "+db+".city (id INT PRIMARY KEY, name VARCHAR(20))")
	}
	cfg := parseConfig(t, twoShardYAML(db, s0.Addr, s1.Addr, 4, "    tables:\n"+tables.String()+"      - {name: city, type: reference}\n", ""), "sharded.yaml")
	p := startProxy(t, cfg)
	ctx := context.Background()
	ref, err := difftest.Dial(ctx, difftest.ServerTarget("reference", refSrv, db))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	got, err := difftest.Dial(ctx, difftest.Target{Name: "shardgate", Addr: p.Addrs()[0], User: appUser, Password: appPass, Database: db})
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()

	text := func(sql string) {
		t.Helper()
		a, err := ref.Query(sql)
		if err != nil || a.Err != nil {
			t.Fatalf("reference: %s: %v %v", sql, err, a.Err)
		}
		b, err := got.Query(sql)
		if err != nil || b.Err != nil {
			t.Fatalf("shardgate: %s: %v %v", sql, err, b.Err)
		}
	}
	for id := 1; id <= 30; id++ {
		text(fmt.Sprintf("INSERT INTO u (id, name, amount, day) VALUES (%d, 'n%d', %d.25, '2024-01-%02d')", id, id, id, id%28+1))
		text(fmt.Sprintf("INSERT INTO city VALUES (%d, 'c%d')", id, id))
	}
	for i, w := range []string{"Red", "Green", "Blue", "Black", "White", "ärger"} {
		text(fmt.Sprintf("INSERT INTO tag (name, uses) VALUES ('%s', %d)", w, i))
	}
	for _, a := range []string{"12.50", "0.01", "-3.00", "100.00", "7.25"} {
		text("INSERT INTO money (amount, note) VALUES (" + a + ", 'm')")
	}
	for d := 1; d <= 10; d++ {
		for seq := 1; seq <= 2; seq++ {
			text(fmt.Sprintf("INSERT INTO logd (day, seq) VALUES ('2024-01-%02d', %d)", d, seq))
		}
	}

	jan3 := time.Date(2024, 1, 3, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		sql  string
		args [][]any
	}{
		{"SELECT * FROM u WHERE id = ? LIMIT 1", [][]any{{int64(7)}, {uint64(7)}, {"7"}, {7.0}, {difftest.Decimal("7.00")}, {nil}, {-1}}},
		{"SELECT id, name FROM u WHERE id IN (?, ?, ?)", [][]any{{1, 8, 100}, {"2", 2.0, nil}}},
		{"SELECT id, amount FROM u WHERE amount > ?", [][]any{{difftest.Decimal("20.5")}, {25}}},
		{"SELECT * FROM u WHERE id = ? AND day = ?", [][]any{{7, difftest.Date{Year: 2024, Month: 1, Day: 8}}}},
		{"SELECT name, amount FROM u WHERE id = ? LIMIT ? OFFSET ?", [][]any{{7, 1, 0}, {7, 1, 1}}},
		{"SELECT u.id, city.name AS city FROM u JOIN city ON city.id = u.id WHERE u.id = ?", [][]any{{9}}},
		// LIMIT is refused over several sub-tables: these answers prove
		// that each parameter picked one.
		{"SELECT * FROM tag WHERE name = ? LIMIT 5", [][]any{{"Red"}, {"red "}, {"RED"}, {"Ärger"}, {[]byte("blue")}}},
		{"SELECT * FROM money WHERE amount = ? LIMIT 5", [][]any{{difftest.Decimal("12.50")}, {12.5}, {"12.5"}, {difftest.Decimal("-3")}, {int64(100)}}},
		{"SELECT * FROM logd WHERE day = ? ORDER BY seq", [][]any{{difftest.Date{Year: 2024, Month: 1, Day: 3}}, {jan3}, {"2024-01-03"}}},
		{"SELECT seq FROM logd WHERE day = ? AND seq = ?", [][]any{{difftest.Date{Year: 2024, Month: 1, Day: 4}, 2}}},
		{"UPDATE u SET name = ? WHERE id = ?", [][]any{{"x", 7}, {"x", 7}, {"y", "8"}}},
		{"UPDATE u SET amount = amount + ? WHERE amount < ?", [][]any{{difftest.Decimal("1"), difftest.Decimal("10")}}},
		{"INSERT INTO u (id, name, amount, day) VALUES (?, ?, ?, ?)", [][]any{{99, "new", difftest.Decimal("1.50"), difftest.Date{Year: 2024, Month: 2, Day: 2}}, {99, "dup", nil, nil}}},
		{"INSERT INTO tag (name, uses) VALUES (?, ?)", [][]any{{"Violet", 1}, {"violet ", 2}}},
		{"INSERT INTO logd (day, seq) VALUES (?, ?)", [][]any{{difftest.Date{Year: 2024, Month: 5, Day: 5}, 1}, {time.Date(2024, 5, 6, 0, 0, 0, 0, time.UTC), 1}}},
		{"DELETE FROM tag WHERE name = ?", [][]any{{"blue "}}},
		{"DELETE FROM money WHERE amount < ?", [][]any{{0}}},
		{"UPDATE city SET name = ? WHERE id = ?", [][]any{{"Oslo", 1}}},
	}
	for _, c := range cases {
		rs, ra, err := ref.Prepare(c.sql)
		if err != nil || rs == nil {
			t.Fatalf("reference: prepare %s: %v %v", c.sql, err, ra.Err)
		}
		gs, ga, err := got.Prepare(c.sql)
		if err != nil {
			t.Fatalf("shardgate: prepare %s: %v", c.sql, err)
		}
		if d := difftest.Diff(ra, ga, false); d != "" {
			t.Errorf("PREPARE %s:\n%s", c.sql, d)
		}
		if gs == nil {
			continue
		}
		for _, args := range c.args {
			ra, err := rs.Execute(args...)
			if err != nil {
				t.Fatalf("reference: %s %v: %v", c.sql, args, err)
			}
			ga, err := gs.Execute(args...)
			if err != nil {
				t.Fatalf("shardgate: %s %v: %v", c.sql, args, err)
			}
			if d := difftest.Diff(ra, ga, false); d != "" {
				t.Errorf("EXECUTE %s %v:\n%s", c.sql, args, d)
			}
		}
		if err := errors.Join(rs.Close(), gs.Close()); err != nil {
			t.Fatal(err)
		}
	}
	for _, tb := range append([]string{"city"}, "u", "tag", "money", "logd") {
		ra, err := ref.Query("SELECT * FROM " + tb)
		if err != nil {
			t.Fatal(err)
		}
		ga, err := got.Query("SELECT * FROM " + tb)
		if err != nil {
			t.Fatal(err)
		}
		if d := difftest.Diff(ra, ga, false); d != "" {
			t.Errorf("contents of %s:\n%s", tb, d)
		}
	}
}

// A cursor on one sub-table is fetched from its shard's connection while
// other statements run on the other shard; over several sub-tables the
// proxy holds the merged rows and serves the fetches. Long data (COM_STMT_SEND_LONG_DATA) is held by the proxy until
// EXECUTE, routes like any parameter and reaches the sub-table.
func TestShardedPreparedCursorAndLongData(t *testing.T) {
	const db = "spsc"
	p, _, _, _, _, proxyDB := shardedPairProxy(t, db)
	sub := make(map[int][]int64) // sub-table -> ids
	for id := int64(1); id <= 20; id++ {
		mustExec(t, proxyDB(""), fmt.Sprintf("INSERT INTO t (id, v) VALUES (%d, %d)", id, id*10))
		sub[subTableOf(t, id, 4)] = append(sub[subTableOf(t, id, 4)], id)
	}
	a, b := sub[2][0], sub[2][1] // two rows of t_0002, on s1
	other := sub[0][0]           // a row of t_0000, on s0

	cl := mfDial(t, p.Addrs()[0])
	cl.mustGreeting(t)
	if err := cl.authenticateAs(appUser, appPass); err != nil {
		t.Fatal(err)
	}
	// The session starts in the user's default database, db.

	id, params := cl.mustPrepare(t, "SELECT v FROM t WHERE id IN (?, ?)")
	if params != 2 {
		t.Fatalf("params = %d", params)
	}
	// fetchAll fetches statement id's open cursor, n rows at a time, with
	// a statement on the other shard between fetches.
	fetchAll := func(id uint32, n uint32) []int {
		t.Helper()
		var got []int
		for done, fetches := false, 0; !done; fetches++ {
			if v := cl.scalar(t, fmt.Sprintf("SELECT v FROM t WHERE id = %d", other)); v != fmt.Sprint(other*10) {
				t.Fatalf("read on s0 between fetches: %s", v)
			}
			var rows [][]byte
			rows, done = cl.fetch(t, id, n)
			for _, pkt := range rows {
				got = append(got, int(int32(binary.LittleEndian.Uint32(pkt[2:]))))
			}
			if len(rows) > int(n) || fetches > 40 {
				t.Fatalf("fetch of %d sent %d rows, after %d fetches: %v", n, len(rows), fetches, got)
			}
		}
		return got
	}
	cl.writePacket(0, executePacket(id, mysql.CursorTypeReadOnly, int64(a), int64(b)))
	expectCursorOpened(t, cl)
	got := fetchAll(id, 1)
	sort.Ints(got)
	if want := fmt.Sprint([]int64{a * 10, b * 10}); fmt.Sprint(got) != want {
		t.Errorf("fetched %v, want %s", got, want)
	}

	// Over several sub-tables: the proxy holds the merged rows and
	// serves the fetches (as the server materializes a cursor).
	cl.writePacket(0, executePacket(id, mysql.CursorTypeReadOnly, int64(a), int64(other)))
	expectCursorOpened(t, cl)
	got = fetchAll(id, 1)
	sort.Ints(got)
	if want := fmt.Sprint([]int64{min(a, other) * 10, max(a, other) * 10}); fmt.Sprint(got) != want {
		t.Errorf("fetched over two sub-tables %v, want %s", got, want)
	}
	ord, _ := cl.mustPrepare(t, "SELECT v FROM t WHERE id BETWEEN ? AND ? ORDER BY v DESC")
	cl.writePacket(0, executePacket(ord, mysql.CursorTypeReadOnly, int64(3), int64(17)))
	expectCursorOpened(t, cl)
	if got, want := fmt.Sprint(fetchAll(ord, 4)), "[170 160 150 140 130 120 110 100 90 80 70 60 50 40 30]"; got != want {
		t.Errorf("a merge's cursor fetched %s, want %s", got, want)
	}
	cl.mustSelect1(t)

	// Long data for the key: routed by it (LIMIT proves one sub-table).
	sel, _ := cl.mustPrepare(t, "SELECT v FROM t WHERE id = ? LIMIT 1")
	cl.writePacket(0, longDataPacket(sel, 0, fmt.Sprint(a)))
	cl.writePacket(0, executePacket(sel, mysql.CursorTypeNoCursor, longData{}))
	res, err := cl.readResult()
	if err != nil || res.err != nil || len(res.rows) != 1 {
		t.Fatalf("SELECT by long data: %+v %v", res, err)
	}
	if v := int64(int32(binary.LittleEndian.Uint32([]byte(res.rows[0][0])[2:]))); v != a*10 {
		t.Errorf("SELECT by long data: v = %d, want %d", v, a*10)
	}
	// Consumed by that execution: the next one binds its own value.
	cl.writePacket(0, executePacket(sel, mysql.CursorTypeNoCursor, int64(b)))
	if res, err := cl.readResult(); err != nil || res.err != nil || len(res.rows) != 1 ||
		int64(binary.LittleEndian.Uint32([]byte(res.rows[0][0])[2:])) != b*10 {
		t.Errorf("execute after long data: %+v %v", res, err)
	}

	// Long data in a write, sent in two pieces, reaches the sub-table.
	ins, _ := cl.mustPrepare(t, "INSERT INTO t (id, v) VALUES (?, ?)")
	cl.writePacket(0, longDataPacket(ins, 1, "12"))
	cl.writePacket(0, longDataPacket(ins, 1, "34"))
	cl.writePacket(0, executePacket(ins, mysql.CursorTypeNoCursor, int64(100), longData{}))
	if res, err := cl.readResult(); err != nil || !res.ok {
		t.Fatalf("INSERT with long data: %+v %v", res, err)
	}
	if v := cl.scalar(t, "SELECT v FROM t WHERE id = 100"); v != "1234" {
		t.Errorf("v = %s, want 1234", v)
	}
	// A parameter number out of range: the next EXECUTE's error.
	cl.writePacket(0, longDataPacket(sel, 5, "x"))
	cl.writePacket(0, executePacket(sel, mysql.CursorTypeNoCursor, int64(a)))
	if e := cl.expectErr(t); e.Code != mysql.ERWrongArguments {
		t.Errorf("long data for parameter 6 of 1: %v, want 1210", e)
	}
	cl.mustSelect1(t)
}

// longData marks a parameter whose value was sent as long data.
type longData struct{}

// executePacket builds COM_STMT_EXECUTE of statement id with cursor type
// flags and parameters (int64 as LONGLONG, longData as a VAR_STRING whose
// value the packet leaves out).
func executePacket(id uint32, flags byte, args ...any) []byte {
	b := []byte{mysql.ComStmtExecute, 0, 0, 0, 0, flags, 1, 0, 0, 0}
	binary.LittleEndian.PutUint32(b[1:], id)
	b = append(b, make([]byte, (len(args)+7)/8)...)
	b = append(b, 1)
	var values []byte
	for _, a := range args {
		switch v := a.(type) {
		case int64:
			b = append(b, mysql.TypeLongLong, 0)
			values = binary.LittleEndian.AppendUint64(values, uint64(v))
		case longData:
			b = append(b, mysql.TypeVarString, 0)
		}
	}
	return append(b, values...)
}

func longDataPacket(id uint32, param uint16, data string) []byte {
	b := []byte{mysql.ComStmtSendLongData, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(b[1:], id)
	b = binary.LittleEndian.AppendUint16(b, param)
	return append(b, data...)
}

// expectCursorOpened reads a cursor's execute answer: column count and
// definitions, then one EOF with SERVER_STATUS_CURSOR_EXISTS.
func expectCursorOpened(t *testing.T, cl *mfClient) {
	t.Helper()
	pkt, err := cl.c.ReadPacket()
	if err != nil || mysql.IsErr(pkt) {
		t.Fatalf("cursor execute: %x %v", pkt, err)
	}
	cols, _, _, _ := mysql.ReadLenEncInt(pkt)
	for i := uint64(0); i < cols; i++ {
		if _, err := cl.c.ReadPacket(); err != nil {
			t.Fatal(err)
		}
	}
	pkt, err = cl.c.ReadPacket()
	_, status, ok := mysql.ParseEOF(pkt)
	if err != nil || !ok || status&mysql.StatusCursorExists == 0 {
		t.Fatalf("cursor execute: want EOF with CURSOR_EXISTS, got %x %v", pkt, err)
	}
}

// TestShardedExecuteDoesNotAllocate: an execution of a prepared statement
// on a sharded table (binding its parameters, routing, rendering the
// sub-table's text, finding its backend statement, reordering parameters)
// costs the proxy no heap allocation once warm, on one sub-table as over
// several.
func TestShardedExecuteDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector (it drops sync.Pool items)")
	}
	p, _, _, _, _, proxyDB := shardedPairProxy(t, "spshot")
	mustExec(t, proxyDB(""), "INSERT INTO t (id, v) VALUES (5000, 1)")
	cl := mfDial(t, p.Addrs()[0])
	cl.mustGreeting(t)
	if err := cl.authenticateAs(appUser, appPass); err != nil {
		t.Fatal(err)
	}
	_ = cl.nc.SetDeadline(time.Time{})
	h := &hotClient{mfClient: cl, p: p}
	for _, tc := range []struct {
		name, sql string
		args      []any
	}{
		{"one sub-table", "SELECT v FROM t WHERE id = ?", []any{int64(5000)}},
		{"parameters reordered", "SELECT v FROM t WHERE id = ? LIMIT ? OFFSET ?", []any{int64(5000), int64(1), int64(0)}},
		{"every sub-table", "SELECT v FROM t WHERE v = ?", []any{int64(1)}},
	} {
		id, _ := cl.mustPrepare(t, tc.sql)
		cmd := executePacket(id, mysql.CursorTypeNoCursor, tc.args...)
		h.roundTrip(t, cmd) // prepares the backend statements, grows buffers
		h.roundTrip(t, cmd)
		if n := testing.AllocsPerRun(300, func() { h.roundTrip(t, cmd) }); n != 0 {
			t.Errorf("%s: %.2f allocations per execution, want 0", tc.name, n)
		}
	}
	h.telemetryRecorded(t, "SELECT v FROM t WHERE v = ?", 300)
}
