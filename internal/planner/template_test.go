package planner

import (
	"errors"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sharding"
)

var testParser = NewParser()

// shardedTest renames t (table 0) and u (table 1) of the current database
// or of database shop, in any case.
func shardedTest(qualifier, name string) int {
	if qualifier != "" && !strings.EqualFold(qualifier, "shop") {
		return -1
	}
	switch strings.ToLower(name) {
	case "t":
		return 0
	case "u":
		return 1
	}
	return -1
}

// compile scans, parses and compiles sql.
func compile(t *testing.T, sql string) (*Template, *router.Shape, error) {
	t.Helper()
	sh := new(router.Shape)
	router.ScanShape([]byte(sql), sh)
	p, err := testParser.Parse([]byte(sql), sh)
	if err != nil {
		t.Fatalf("%q: parse: %v", sql, err)
	}
	tpl, err := NewTemplate(p, sh, shardedTest)
	return tpl, sh, err
}

func TestTemplateRenders(t *testing.T) {
	for _, tc := range []struct{ sql, tpl, out string }{
		{"SELECT a FROM t WHERE id = 42",
			"select a from {table 0: t} where id = {lit 0}",
			"select a from t_0003 where id = 42"},
		{"select t.a, T.b, shop.t.c, t.* from shop.t where t.id in (1, 'x', 0x2A, X'2a', b'1', N'n', 1.5e3, -7)",
			"select {table 0: t}.a, {table 0: T}.b, shop.{table 0: t}.c, {table 0: t}.* from shop.{table 0: t} where {table 0: t}.id in ({lit 0}, {lit 1}, {lit 2}, {lit 3}, {lit 4}, {lit 5}, {lit 6}, -{lit 7})",
			"select t_0003.a, T_0003.b, shop.t_0003.c, t_0003.* from shop.t_0003 where t_0003.id in (1, 'x', 0x2A, X'2a', b'1', N'n', 1.5e3, -7)"},
		// aliases are left alone; other databases' t and unsharded tables too
		{"SELECT x.a FROM t AS x JOIN u y ON x.id = y.id JOIN other.t ON other.t.id = x.id JOIN r ON r.id = 1",
			"select x.a from {table 0: t} as x join {table 1: u} as y on x.id = y.id join other.t on other.t.id = x.id join r on r.id = {lit 0}",
			"select x.a from t_0003 as x join u_0012 as y on x.id = y.id join other.t on other.t.id = x.id join r on r.id = 1"},
		// an alias named like a sharded table not in the statement
		{"SELECT u.a FROM r AS u JOIN t ON t.id = u.id",
			"select u.a from r as u join {table 0: t} on {table 0: t}.id = u.id",
			"select u.a from r as u join t_0003 on t_0003.id = u.id"},
		// subqueries and ORDER BY t.col
		{"SELECT * FROM t WHERE t.a IN (SELECT u.a FROM u WHERE u.b = t.b) ORDER BY t.c DESC LIMIT 5",
			"select * from {table 0: t} where {table 0: t}.a in (select {table 1: u}.a from {table 1: u} where {table 1: u}.b = {table 0: t}.b) order by {table 0: t}.c desc limit {lit 0}",
			"select * from t_0003 where t_0003.a in (select u_0012.a from u_0012 where u_0012.b = t_0003.b) order by t_0003.c desc limit 5"},
		{"UPDATE t SET t.a = 'it''s', b = b + 1 WHERE id = ?",
			"update {table 0: t} set {table 0: t}.a = {lit 0}, b = b + {lit 1} where id = {param 0}",
			"update t_0003 set t_0003.a = 'it''s', b = b + 1 where id = ?"},
		{"DELETE t FROM t JOIN u ON t.id = u.id WHERE u.x = 1",
			"delete {table 0: t} from {table 0: t} join {table 1: u} on {table 0: t}.id = {table 1: u}.id where {table 1: u}.x = {lit 0}",
			"delete t_0003 from t_0003 join u_0012 on t_0003.id = u_0012.id where u_0012.x = 1"},
		{"INSERT INTO t (id, a) VALUES (1, 'a'), (2, \"b\") ON DUPLICATE KEY UPDATE a = VALUES(a)",
			"insert into {table 0: t}(id, a) values ({lit 0}, {lit 1}), ({lit 2}, {lit 3}) on duplicate key update a = values(a)",
			"insert into t_0003(id, a) values (1, 'a'), (2, \"b\") on duplicate key update a = values(a)"},
		// quoted names stay quoted; the suffix goes inside the quotes
		{"SELECT `select`.a FROM shop.`t` AS `select` WHERE 1",
			"select `select`.a from shop.{table 0: t} as `select` where {lit 0}",
			"select `select`.a from shop.t_0003 as `select` where 1"},
		// an exact parse: the literals are Vitess's, parameters still slots
		// an expression the server names by its text keeps the client's
		// spelling as its alias
		{"SELECT CAST(a AS DECIMAL(10,2)) FROM t WHERE id = ?",
			"select cast(a as DECIMAL(10, 2)){as item 0} from {table 0: t} where id = {param 0}",
			"select cast(a as DECIMAL(10, 2)) as `CAST(a AS DECIMAL(10,2))` from t_0003 where id = ?"},
		{"SELECT COUNT(*), NULL, 1, -1, t.a, b AS x FROM t WHERE id = 1",
			"select count(*){as item 0}, null{as item 1}, {lit 0}, -{lit 1}{as item 3}, {table 0: t}.a, b as x from {table 0: t} where id = {lit 2}",
			"select count(*) as `COUNT(*)`, null as `NULL`, 1, -1 as `-1`, t_0003.a, b as x from t_0003 where id = 1"},
		// hints and executable comments Vitess runs
		{"SELECT /*+ MAX_EXECUTION_TIME(100) */ a FROM t WHERE id = /*!50000 7 */",
			"select /*+ MAX_EXECUTION_TIME(100) */ a from {table 0: t} where id = {lit 0}",
			"select /*+ MAX_EXECUTION_TIME(100) */ a from t_0003 where id = 7"},
		{"SELECT a FROM t WHERE _utf8mb4'x' COLLATE utf8mb4_bin = a",
			"select a from {table 0: t} where _utf8mb4 {lit 0} collate utf8mb4_bin = a",
			"select a from t_0003 where _utf8mb4 'x' collate utf8mb4_bin = a"},
	} {
		tpl, sh, err := compile(t, tc.sql)
		if err != nil {
			t.Errorf("%q: %v", tc.sql, err)
			continue
		}
		if got := tpl.String(); got != tc.tpl {
			t.Errorf("%q: template\n%s\nwant\n%s", tc.sql, got, tc.tpl)
		}
		if got := string(tpl.Append(nil, []byte(tc.sql), sh, []int{3, 12})); got != tc.out {
			t.Errorf("%q: rendered\n%s\nwant\n%s", tc.sql, got, tc.out)
		}
	}
}

// TestTemplateServesTheShape: one template serves every statement of its
// shape, with that statement's literals as written.
func TestTemplateServesTheShape(t *testing.T) {
	tpl, _, err := compile(t, "SELECT a FROM t WHERE id = 1 AND b IN ('x', 2)")
	if err != nil {
		t.Fatal(err)
	}
	sql := []byte("select a from t where id = 0x2A and b in (\"it's\", 0.5e1)")
	var sh router.Shape
	router.ScanShape(sql, &sh)
	want := "select a from t_0001 where id = 0x2A and b in (\"it's\", 0.5e1)"
	if got := string(tpl.Append(nil, sql, &sh, []int{1, 0})); got != want {
		t.Fatalf("rendered %q, want %q", got, want)
	}
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { buf = tpl.Append(buf[:0], sql, &sh, []int{1, 0}) }); n != 0 {
		t.Fatalf("Append allocates %v times", n)
	}
}

// TestTemplateParamOrder: Vitess writes LIMIT ? OFFSET ? as LIMIT ?, ?
// (offset first); Params says which client parameter each '?' is.
func TestTemplateParamOrder(t *testing.T) {
	tpl, sh, err := compile(t, "SELECT a FROM t WHERE b = ? LIMIT ? OFFSET ?")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(tpl.Append(nil, nil, sh, []int{0, 0})), "select a from t_0000 where b = ? limit ?, ?"; got != want {
		t.Fatalf("rendered %q, want %q", got, want)
	}
	if got := tpl.Params(); len(got) != 3 || got[0] != 0 || got[1] != 2 || got[2] != 1 {
		t.Fatalf("Params() = %v, want [0 2 1]", got)
	}
}

func TestTemplateSuffixIsSubTableName(t *testing.T) {
	for _, i := range []int{0, 7, 10, 99, 100, 999, 1000, 9999, 10000, 123456} {
		if got, want := string(appendSubTableSuffix([]byte("t"), i)), sharding.SubTableName("t", i); got != want {
			t.Errorf("suffix %d: %q, want %q", i, got, want)
		}
	}
}

// TestTemplateRefuses: what Vitess would write back changed, and names
// that could mean two tables, get ER_NOT_SUPPORTED_YET.
func TestTemplateRefuses(t *testing.T) {
	for _, sql := range []string{
		"SELECT /*M!100100 SQL_NO_CACHE */ a FROM t",
		"SELECT a /*M!100100 , b */ FROM t",
		"SELECT a /*!90000 , b */ FROM t",
		"SELECT a FROM t WHERE b = @'v'",
		"SELECT a FROM t WHERE b = @\"v\"",
		"SELECT a FROM t WHERE b = @@session.sql_mode",
		"SELECT a FROM t WHERE b = @@local.sql_mode",
		"SELECT NEXT VALUE FOR s",
		"SELECT u.a FROM r AS u JOIN u AS v ON v.id = u.id", // alias u hides table u
		"WITH t AS (SELECT 1 AS a) SELECT t.a FROM t",
	} {
		_, _, err := compile(t, sql)
		var se *mysql.SQLError
		if !errors.As(err, &se) || se.Code != mysql.ERNotSupportedYet || se.State != "42000" {
			t.Errorf("%q: %v, want ER_NOT_SUPPORTED_YET", sql, err)
		}
	}
}

// compileInsert is compile for an INSERT into t whose shard key is key.
func compileInsert(t *testing.T, sql, key string) (*Template, *router.Shape) {
	t.Helper()
	sh := new(router.Shape)
	router.ScanShape([]byte(sql), sh)
	p, err := testParser.Parse([]byte(sql), sh)
	if err != nil {
		t.Fatalf("%q: parse: %v", sql, err)
	}
	tpl, err := NewInsertTemplate(p, sh, shardedTest, key)
	if err != nil {
		t.Fatalf("%q: %v", sql, err)
	}
	plain, err := NewTemplate(p, sh, shardedTest)
	if err != nil {
		t.Fatal(err)
	}
	// Writing the rows itself, the insert template writes what Vitess does.
	if got, want := tpl.String(), plain.String(); got != want {
		t.Fatalf("%q: insert template %q, Vitess writes %q", sql, got, want)
	}
	return tpl, sh
}

// TestTemplateAppendRows: a part of an INSERT carries some of its rows,
// in the order given, with generated keys in place of NULL/0/DEFAULT or in
// a key column added to the list.
func TestTemplateAppendRows(t *testing.T) {
	for _, tc := range []struct {
		sql, key string
		rows     []int
		ids      []uint64
		out      string
	}{
		{"INSERT INTO t (id, a) VALUES (1, 'x'), (2, \"y\"), (-3, 0x2A) ON DUPLICATE KEY UPDATE a = VALUES(a)", "id", []int{0, 2}, nil,
			"insert into t_0001(id, a) values (1, 'x'), (-3, 0x2A) on duplicate key update a = values(a)"},
		{"REPLACE /* c */ INTO shop.t (a, id) VALUES ('x', 1), ('y', 2)", "id", []int{1}, nil,
			"replace /* c */ into shop.t_0001(a, id) values ('y', 2)"},
		{"INSERT IGNORE INTO t (a, ID) VALUES ('x', NULL), ('y', 0), ('z', 7), ('w', DEFAULT)", "id", []int{3, 1, 2}, []uint64{100, 101, 0, 102},
			"insert ignore into t_0001(a, ID) values ('w', 102), ('y', 101), ('z', 7)"},
		{"INSERT INTO t (a, b) VALUES ('x', 1), ('y', 2), ('z', 3)", "id", []int{0, 2}, []uint64{5, 6, 7},
			"insert into t_0001(a, b, `id`) values ('x', 1, 5), ('z', 3, 7)"},
		{"insert into t set a = 'q'", "id", []int{0}, []uint64{9},
			"insert into t_0001(a, `id`) values ('q', 9)"},
		{"INSERT INTO t (`a`) VALUES (1) ON DUPLICATE KEY UPDATE a = a + 1", "id", []int{0}, []uint64{42},
			"insert into t_0001(a, `id`) values (1, 42) on duplicate key update a = a + 1"},
	} {
		tpl, sh := compileInsert(t, tc.sql, tc.key)
		got := string(tpl.AppendRows(nil, []byte(tc.sql), sh, []int{1}, tc.rows, tc.ids))
		if got != tc.out {
			t.Errorf("%s\n rows %v ids %v:\n got  %s\n want %s", tc.sql, tc.rows, tc.ids, got, tc.out)
		}
		all := make([]int, tpl.Rows())
		for i := range all {
			all[i] = i
		}
		if tc.ids == nil {
			if a, b := string(tpl.AppendRows(nil, []byte(tc.sql), sh, []int{1}, all, nil)), string(tpl.Append(nil, []byte(tc.sql), sh, []int{1})); a != b {
				t.Errorf("%s: every row %q, Append %q", tc.sql, a, b)
			}
		}
	}
	sql := "INSERT INTO t (a, b) VALUES ('x', 1), ('y', 2), ('z', 3)"
	tpl, sh := compileInsert(t, sql, "id")
	buf := make([]byte, 0, 256)
	rows, ids, text := []int{2, 0}, []uint64{1, 2, 3}, []byte(sql)
	if n := testing.AllocsPerRun(100, func() { buf = tpl.AppendRows(buf[:0], text, sh, []int{1}, rows, ids) }); n != 0 {
		t.Fatalf("AppendRows allocates %v times", n)
	}
}
