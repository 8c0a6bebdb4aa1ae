package planner

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/sharding"
)

// The fixture is issue 13's example schema plus a range, a date_month, a
// string-keyed table and a table whose key type is not known yet:
//
//	sf_user  hash on id (INT), s0 × 4 + s1 × 4 sub-tables
//	sf_order like sf_user, on user_id (INT)
//	sf_city  reference
//	sf_name  hash on name (VARCHAR utf8mb4_general_ci), s0 × 2 + s1 × 2
//	sf_uname hash on name (VARCHAR utf8mb4_unicode_ci), s0 × 2 + s1 × 2
//	sf_range range on k (INT): [0,100) [100,200) on s0, [200,300) [300,400) on s1
//	sf_log   date_month on d (DATE): 2024-01 … 2024-04, two per shard
//	sf_nokey hash on id, like sf_user, key type unknown
//
// Unlisted tables (plain) live on the default cluster s0.
func fixture(t *testing.T) *sharding.Schema {
	t.Helper()
	s := sharding.NewSchema("shop", "s0", []string{"s0", "s1"})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	group := func(r sharding.Rule, err error, perShard int) *sharding.Group {
		t.Helper()
		must(err)
		l, err := sharding.NewLayout([]string{"s0", "s1"}, perShard)
		must(err)
		g, err := sharding.NewGroup(r, l)
		must(err)
		return g
	}
	add := func(name, key string, g *sharding.Group, ct *sharding.ColumnType) {
		st := &sharding.SchemaTable{Table: sharding.Table{Name: name, ShardKey: key, Group: g}, Type: sharding.TableSharded}
		if g == nil {
			st.Type = sharding.TableReference
		}
		if ct != nil {
			st.SetKeyType(*ct)
		}
		must(s.Add(st))
	}
	intKey := &sharding.ColumnType{Class: sharding.ClassInt, Bits: 32}
	users := group(hashRule(8))
	add("sf_user", "id", users, intKey)
	add("sf_order", "user_id", users, intKey)
	add("sf_nokey", "id", users, nil)
	add("sf_city", "", nil, nil)
	add("sf_name", "name", group(hashRule(4)), &sharding.ColumnType{Class: sharding.ClassString, Collation: sharding.CollationUTF8MB4GeneralCI})
	add("sf_uname", "name", group(hashRule(4)), &sharding.ColumnType{Class: sharding.ClassString, Collation: unicodeCI(t)})
	var bounds []sharding.Bound
	for i := int64(0); i < 4; i++ {
		bounds = append(bounds, sharding.Bound{Start: sharding.IntValue(i * 100), End: sharding.IntValue(i*100 + 100), HasStart: true, HasEnd: true})
	}
	r, err := sharding.NewRange(bounds)
	add("sf_range", "k", group(r, err, 2), intKey)
	var periods []sharding.Periods
	for m := 1; m <= 4; m++ {
		p, err := sharding.ParsePeriod(sharding.Month, fmt.Sprintf("2024-%02d", m))
		must(err)
		periods = append(periods, sharding.Periods{First: p, Last: p})
	}
	d, err := sharding.NewDate(sharding.Month, periods)
	add("sf_log", "d", group(d, err, 2), &sharding.ColumnType{Class: sharding.ClassDate})
	return s
}

func hashRule(n int) (sharding.Rule, error, int) {
	h, err := sharding.NewHash(n)
	return h, err, n / 2
}

// h is the sf_user sub-table of integer key k.
func h(t *testing.T, k int64) int {
	t.Helper()
	r, _ := sharding.NewHash(8)
	i, err := r.Index(sharding.IntValue(k))
	if err != nil {
		t.Fatal(err)
	}
	return i
}

func unicodeCI(t *testing.T) sharding.Collation {
	c, err := sharding.LookupCollation("utf8mb4_unicode_ci")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// nameSub is the sf_name sub-table of a utf8mb4_general_ci string.
func nameSub(t *testing.T, s string) int {
	t.Helper()
	return collSub(t, sharding.CollationUTF8MB4GeneralCI, s)
}

// collSub is the sub-table of string s under c on 4 hashed sub-tables.
func collSub(t *testing.T, c sharding.Collation, s string) int {
	t.Helper()
	r, _ := sharding.NewHash(4)
	v, err := sharding.Convert(sharding.ColumnType{Class: sharding.ClassString, Collation: c}, sharding.StringLit(s))
	if err != nil {
		t.Fatal(err)
	}
	i, _ := r.Index(v)
	return i
}

var parser = sqlparser.NewTestParser()

func parse(t *testing.T, sql string) sqlparser.Statement {
	t.Helper()
	stmt, err := parser.ParseStrictDDL(sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return stmt
}

// values is a Values from slices, in a session whose literals are in cs.
type values struct {
	lits, params []sharding.Literal
	cs           sharding.Charset
}

func (v values) Lit(i int) (sharding.Literal, bool)   { return at(v.lits, i) }
func (v values) Param(i int) (sharding.Literal, bool) { return at(v.params, i) }
func (v values) ClientCharset() sharding.Charset      { return v.cs }

func at(ls []sharding.Literal, i int) (sharding.Literal, bool) {
	if i < 1 || i > len(ls) {
		return sharding.Literal{}, false
	}
	return ls[i-1], true
}

// normalize does what the plan cache's normalizer does to a statement:
// every literal becomes :sgl<i>, and its value is returned as literal i.
func normalize(t *testing.T, stmt sqlparser.Statement) (sqlparser.Statement, values) {
	t.Helper()
	var v values
	out := sqlparser.Rewrite(sqlparser.Clone(stmt), func(c *sqlparser.Cursor) bool {
		if l, ok := c.Node().(*sqlparser.Literal); ok {
			ref, ok := literal(l)
			if !ok || ref.temporal {
				return true
			}
			v.lits = append(v.lits, ref.lit)
			c.Replace(sqlparser.NewArgument(fmt.Sprintf("sgl%d", len(v.lits))))
		}
		return true
	}, nil)
	return parse(t, sqlparser.String(out)), v
}

// route analyzes and routes sql in both forms, real literals and
// placeholders, checks that they agree, and returns the sub-tables.
func route(t *testing.T, schema *sharding.Schema, db, sql string) ([]int, error) {
	t.Helper()
	stmt := parse(t, sql)
	got, err := routeStmt(schema, db, stmt, nil)
	norm, v := normalize(t, stmt)
	got2, err2 := routeStmt(schema, db, norm, v)
	if !slices.Equal(got, got2) || fmt.Sprint(err) != fmt.Sprint(err2) {
		t.Errorf("%s: literals route to %v, %v; placeholders (%s) to %v, %v", sql, got, err, sqlparser.String(norm), got2, err2)
	}
	return got, err
}

func routeStmt(schema *sharding.Schema, db string, stmt sqlparser.Statement, v Values) ([]int, error) {
	an, err := Analyze(stmt, schema, db)
	if err != nil {
		return nil, err
	}
	if an.Placement != Sharded {
		return nil, fmt.Errorf("placement %s", an.Placement)
	}
	if an.Insert != nil {
		var k RowKeys
		if err := an.Keys(v, false, &k); err != nil {
			return nil, err
		}
		err := an.Place(&k, 1)
		return k.Sub, err
	}
	tg, err := an.Route(v)
	if err != nil {
		return nil, err
	}
	var out []int
	for i := tg.Next(0); i >= 0; i = tg.Next(i + 1) {
		out = append(out, i)
	}
	return out, nil
}

func sorted(xs ...int) []int {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}

func every(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestRouteKeys covers the key predicates, and the peers' known failures:
// AND/OR precedence, typed literals, NOT, negative and expression keys.
func TestRouteKeys(t *testing.T) {
	s := fixture(t)
	all := every(8)
	// distinct keys on distinct sub-tables, for precedence cases
	k1, k2 := int64(1), int64(2)
	for h(t, k2) == h(t, k1) {
		k2++
	}
	for _, c := range []struct {
		where string
		want  []int
	}{
		{"id = 42", sorted(h(t, 42))},
		{"id = '42'", sorted(h(t, 42))},
		{"id = 42.0", sorted(h(t, 42))},
		{"id = 0x2A", sorted(h(t, 42))},
		{"id = b'101010'", sorted(h(t, 42))},
		{"id = ' 42 '", sorted(h(t, 42))},
		{"42 = id", sorted(h(t, 42))},
		{"sf_user.id = 42", sorted(h(t, 42))},
		{"shop.sf_user.id = 42", sorted(h(t, 42))},
		{"id = -1", sorted(h(t, -1))},
		{"id = '-1'", sorted(h(t, -1))},
		{"id = -1.0", sorted(h(t, -1))},
		{"id = -'1'", sorted(h(t, -1))},
		{"id = - -1", sorted(h(t, 1))},
		{"id = 1", sorted(h(t, 1))},
		{"id = 1.0", sorted(h(t, 1))},
		{"id = 0x01", sorted(h(t, 1))},
		{"id = '1'", sorted(h(t, 1))},
		{"id = true", sorted(h(t, 1))},
		{"id = 42.5", all},    // no INT equals it: every sub-table, never a guess
		{"id = '42abc'", all}, // compared as 42 with a warning
		{"id = X'2A'", all},   // a string: '*'
		{"id = 1+1", all},
		{"id = abs(-2)", all},
		{"id = x", all},
		{"id = 'a' collate utf8mb4_bin", all},
		{fmt.Sprintf("id = %d or id = %d and x = 3", k1, k2), sorted(h(t, k1), h(t, k2))},
		{fmt.Sprintf("(id = %d or id = %d) and x = 3", k1, k2), sorted(h(t, k1), h(t, k2))},
		{fmt.Sprintf("id = %d or x = 3", k1), all},
		{fmt.Sprintf("id = %d and (id = %d or x = 3)", k1, k2), sorted(h(t, k1))},
		{fmt.Sprintf("id = %d and id = %d", k1, k2), []int{0}}, // no row: one sub-table answers empty
		{fmt.Sprintf("id = %d xor id = %d", k1, k2), all},
		{"not (id = 1)", all},
		{"id <> 1", all},
		{"not (id <> 1)", sorted(h(t, 1))},
		{"not (id = 1 or id = 2)", all},
		{"not (id not in (1, 2))", sorted(h(t, 1), h(t, 2))},
		{"not (id <> 1 or x = 2)", sorted(h(t, 1))},
		{"id in (1, 2, 3)", sorted(h(t, 1), h(t, 2), h(t, 3))},
		{"id in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32)", all},
		{"id in (1, x)", all},
		{"id in (select 1)", all},
		{"id = any (select 1)", all},
		{"id = null", []int{0}},
		{"id in (null, 5)", sorted(h(t, 5))},
		{"id is null", []int{0}}, // hash puts NULL on sub-table 0
		{"id <=> null", []int{0}},
		{"id <=> 5", sorted(h(t, 5))},
		{"not (id <=> 5)", all},
		{"id is not null", all},
		{"not (id is not null)", []int{0}},
		{"id between 1 and 3", sorted(h(t, 1), h(t, 2), h(t, 3))},
		{"id between -1 and 1", sorted(h(t, -1), h(t, 0), h(t, 1))},
		{"id between 1 and 1000", all},
		{"id > 5", all},
		{"id < null", []int{0}},
		{"id like '1%'", all},
	} {
		got, err := route(t, s, "shop", "select * from sf_user where "+c.where)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("WHERE %s: %v, %v; want %v", c.where, got, err, c.want)
		}
	}
}

// Range and date rules prune ranges; string keys compare under their
// collation; an unknown key type routes everywhere.
func TestRouteRulesAndTypes(t *testing.T) {
	s := fixture(t)
	for _, c := range []struct {
		sql  string
		want []int
	}{
		{"select * from sf_range where k = 150", []int{1}},
		{"select * from sf_range where k = '150'", []int{1}},
		{"select * from sf_range where k between 150 and 250", []int{1, 2}},
		{"select * from sf_range where k < 100", []int{0}},
		{"select * from sf_range where k >= 300", []int{3}},
		{"select * from sf_range where 300 <= k", []int{3}},
		{"select * from sf_range where not (k < 100)", []int{1, 2, 3}},
		{"select * from sf_range where k not between 100 and 300", []int{0, 3}},
		{"select * from sf_range where k > 150 and k < 250", []int{1, 2}},
		{"select * from sf_range where k < 100 or k >= 300", []int{0, 3}},
		{"select * from sf_range where k = 1000", []int{0}}, // no sub-table holds it: empty answer
		{"select * from sf_range where k = -5", []int{0}},
		{"select * from sf_range where k is null", []int{0}},
		{"select * from sf_log where d = '2024-02-15'", []int{1}},
		{"select * from sf_log where d = date'2024-04-01'", []int{3}},
		{"select * from sf_log where d between '2024-01-20' and '2024-02-03'", []int{0, 1}},
		{"select * from sf_log where d >= '2024-03-01'", []int{2, 3}},
		{"select * from sf_log where d = '2024-02-15 10:00:00'", []int{0, 1, 2, 3}}, // a DATE holds no time
		{"select * from sf_log where d = 20240215", []int{0, 1, 2, 3}},
		{"select * from sf_name where name = 'Abc'", []int{nameSub(t, "abc")}},
		{"select * from sf_name where name = 'abc   '", []int{nameSub(t, "abc")}},
		{"select * from sf_name where name = _utf8mb4'ABC'", []int{nameSub(t, "abc")}},
		{"select * from sf_name where name = _binary'abc'", []int{nameSub(t, "ABC")}}, // the bytes, compared under the column's collation
		{"select * from sf_name where name = 42", []int{0, 1, 2, 3}},
		// MariaDB: 'Straße' = 'STRASSE' under utf8mb4_unicode_ci, not under utf8mb4_general_ci.
		{"select * from sf_uname where name = 'STRASSE '", []int{collSub(t, unicodeCI(t), "straße")}},
		{"select * from sf_name where name = 'STRASSE'", []int{nameSub(t, "strasse")}},
		{"select * from sf_uname where name in ('Straße', 'strasse', 'STRASSE')", []int{collSub(t, unicodeCI(t), "strasse")}},
		{"select * from sf_uname where name = _binary'x'", []int{collSub(t, unicodeCI(t), "X")}},
		{"select * from sf_nokey where id = 1", every(8)},
	} {
		got, err := route(t, s, "shop", c.sql)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, %v; want %v", c.sql, got, err, c.want)
		}
	}
}

// Joins and subqueries route by whichever table's key is constrained,
// when the statement equates the keys; otherwise only a single shared
// sub-table will do.
// union is the sorted set of sub-tables a and b.
func union(a, b int) []int {
	if a == b {
		return []int{a}
	}
	return []int{min(a, b), max(a, b)}
}

func TestRouteJoinsAndSubqueries(t *testing.T) {
	s := fixture(t)
	all := every(8)
	h7, h5 := h(t, 7), h(t, 5)
	for _, c := range []struct {
		sql  string
		want []int
		err  string
	}{
		{sql: "select * from sf_user u join sf_order o on u.id = o.user_id where o.user_id = 7", want: []int{h7}},
		{sql: "select * from sf_user u join sf_order o on u.id = o.user_id where u.id = 7", want: []int{h7}},
		{sql: "select * from sf_order o join sf_user u on o.user_id = u.id where u.id = 7", want: []int{h7}},
		{sql: "select * from sf_user u, sf_order o where u.id = o.user_id and o.user_id = 7", want: []int{h7}},
		{sql: "select * from sf_user u join sf_order o on u.id = o.user_id", want: all},
		{sql: "select * from sf_user join sf_nokey using (id) where sf_user.id = 7", want: []int{h7}},
		{sql: "select * from sf_user join sf_nokey using (x) where sf_user.id = 7", err: "a join of sf_user and sf_nokey across sub-tables"},
		{sql: "select * from sf_user as u inner join shop.sf_order on u.id = sf_order.user_id where shop.sf_order.user_id = 7", want: []int{h7}},
		{sql: "select * from sf_user u join sf_order o on u.id = o.user_id and o.user_id = 7", want: []int{h7}},
		{sql: "select * from sf_user u left join sf_order o on u.id = o.user_id and o.user_id = 7", want: all},
		{sql: "select * from sf_user u left join sf_order o on u.id = o.user_id where o.user_id is null", want: all},
		{sql: "select * from sf_user u left join sf_order o on u.id = o.user_id where u.id = 7", want: []int{h7}},
		{sql: "select * from sf_order o right join sf_user u on u.id = o.user_id where o.user_id <=> null", want: all},
		{sql: "select * from sf_user u join sf_order o on u.x = o.x where u.id = 7 and o.user_id = 7", want: []int{h7}},
		{sql: "select * from sf_user u join sf_order o on u.x = o.x where u.id = 7", err: "a join of sf_user and sf_order across sub-tables"},
		{sql: "select * from sf_user a join sf_user b on a.x = b.x", err: "a join of sf_user and sf_user across sub-tables"},
		{sql: "select * from sf_user u join sf_city c on u.city = c.id where u.id = 7", want: []int{h7}},
		{sql: "select * from sf_city c join sf_user u on u.city = c.id", want: all},
		{sql: "select * from sf_user where id in (select user_id from sf_order where user_id = 5)", want: all},
		{sql: "select * from sf_user where id = 7 and id in (select user_id from sf_order)", want: []int{h7}},
		{sql: "select * from sf_user where id = 7 and x in (select x from sf_order where user_id = 7)", want: []int{h7}},
		{sql: "select * from sf_user where id = 7 and x in (select x from sf_order)", err: "across sub-tables"},
		{sql: "select * from sf_user u where exists (select 1 from sf_order o where o.user_id = u.id)", want: all},
		{sql: "select * from sf_user u where u.id = 5 and exists (select 1 from sf_order o where o.user_id = u.id)", want: []int{h5}},
		{sql: "select * from sf_user u where not exists (select 1 from sf_order o where o.user_id = u.id and o.user_id = 5)", want: all},
		{sql: "select * from sf_user u where exists (select 1 from sf_order o where o.user_id = u.id and u.id = 5)", want: all},
		{sql: "select * from sf_user where id = 7 and city in (select id from sf_city)", want: []int{h7}},
		{sql: "select * from (select * from sf_user where id = 7) d", want: []int{h7}},
		{sql: "select * from (select * from sf_user where id = 7) d where d.id = 5", want: []int{h7}},
		{sql: "with c as (select * from sf_user where id = 7) select * from c", want: []int{h7}},
		{sql: "select id, (select count(*) from sf_order o where o.user_id = u.id) from sf_user u where u.id = 7", want: []int{h7}},
		{sql: "select * from sf_user where id = 7 union all select * from sf_order where user_id = 7", want: []int{h7}},
		// A UNION whose SELECTs all read sharded tables runs whole on
		// the sub-tables any of them needs, merged (TopMerge).
		{sql: "select * from sf_user where id = 7 union all select * from sf_order where user_id = 5", want: union(h7, h5)},
		{sql: "select id from sf_user where id < 0 union select user_id from sf_order where amount > 1", want: all},
		{sql: "select id from sf_user where id > 7 union all select 1", err: "UNION across several sub-tables of sf_user"},
	} {
		got, err := route(t, s, "shop", c.sql)
		if c.err != "" {
			checkRefused(t, c.sql, err, c.err)
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, %v; want %v", c.sql, got, err, c.want)
		}
	}
}

// Co-located work runs on the sub-tables as written, whatever it holds
// (issue 22): a correlated subquery whose tables' keys equal the outer
// row's, a derived table grouped by the shard key (joined on it, or read
// alone). Work that needs other sub-tables' rows is not co-located: a
// correlation off the key or on an outer join's ON, a derived table
// grouped by another column, cut by LIMIT or DISTINCT, a key equated
// only inside a subquery of the subquery.
func TestRouteColocated(t *testing.T) {
	s := fixture(t)
	all := every(8)
	for _, c := range []struct {
		sql string
		err string
	}{
		{sql: "select u.id, (select count(*) from sf_order o where o.user_id = u.id) from sf_user u"},
		{sql: "select u.id from sf_user u where u.id > (select avg(o.amount) from sf_order o where u.id = o.user_id and o.amount > 1)"},
		{sql: "select u.id, (select o.amount from sf_order o where o.user_id = u.id order by o.amount desc limit 1) from sf_user u"},
		{sql: "select u.id from sf_user u where exists (select o.user_id from sf_order o join sf_order p on p.user_id = o.user_id where o.user_id = u.id group by o.user_id having count(*) > 1)"},
		{sql: "select t.user_id, t.n from (select user_id, count(*) n from sf_order group by user_id) t where t.n > 1"},
		{sql: "select u.id, t.s from sf_user u join (select user_id as k, sum(amount) s from sf_order group by user_id) t on t.k = u.id"},
		{sql: "select u.id, (select count(*) from sf_order o where o.amount > u.id) from sf_user u", err: "across sub-tables"},
		{sql: "select u.id, (select count(*) from sf_order o left join sf_user v on v.id = u.id where o.user_id = u.id + 0) from sf_user u", err: "across sub-tables"},
		{sql: "select t.n from (select amount, count(*) n from sf_order group by amount) t", err: "across several sub-tables"},
		{sql: "select t.n from (select user_id, count(*) n from sf_order group by user_id limit 3) t", err: "across several sub-tables"},
		{sql: "select t.n from (select distinct count(*) n from sf_order group by user_id) t", err: "across several sub-tables"},
		{sql: "select u.id, (select count(*) from sf_order o where exists (select 1 from sf_order p where p.user_id = o.user_id and p.user_id = u.id)) from sf_user u", err: "across several sub-tables"},
		{sql: "select u.id, t.s from sf_user u join (select user_id, sum(amount) s from sf_order group by user_id) t on t.s = u.id", err: "across sub-tables"},
	} {
		got, err := route(t, s, "shop", c.sql)
		if c.err != "" {
			checkRefused(t, c.sql, err, c.err)
			continue
		}
		if err != nil || !slices.Equal(got, all) {
			t.Errorf("%s: %v, %v; want every sub-table", c.sql, got, err)
		}
	}
}

func checkRefused(t *testing.T, sql string, err error, want string) {
	t.Helper()
	var se *mysql.SQLError
	if !errors.As(err, &se) || se.Code != mysql.ERNotSupportedYet || se.State != "42000" || !strings.Contains(se.Message, want) {
		t.Errorf("%s: %v; want error 1235 (42000) containing %q", sql, err, want)
	}
}

// Constructs that need a merge are refused across sub-tables and allowed
// on one, except those of the statement's own SELECT, which a merge
// answers (Analysis.TopMerge, TestMergePlans).
func TestRouteMergeConstructs(t *testing.T) {
	s := fixture(t)
	for _, c := range []struct {
		sql       string
		construct Constructs
	}{
		{"select * from sf_user order by id", MergeOrderBy},
		{"select * from sf_user group by x", MergeGroupBy},
		{"select count(*) from sf_user", MergeAggregate},
		{"select distinct x from sf_user", MergeDistinct},
		{"select * from sf_user limit 10", MergeLimit},
		{"select x from sf_user having x > 1", MergeHaving},
	} {
		an, err := Analyze(parse(t, c.sql), s, "shop")
		if err != nil {
			t.Fatal(err)
		}
		target, err := an.Route(nil)
		if err != nil || target.Len() < 2 || an.TopMerge != c.construct || an.Merge != 0 {
			t.Errorf("%s: %d sub-tables, %v, merges %v and %v; want every sub-table, top-level %v", c.sql, target.Len(), err, an.TopMerge, an.Merge, c.construct)
		}
	}
	for _, c := range []struct {
		sql, construct string
	}{
		{"select x from sf_user union all select 1", "UNION"},
		{"select row_number() over (order by x) from sf_user", "window functions"},
		{"select * from (select count(*) from sf_user) d", "aggregate functions"},
		{"select * from (select * from sf_user limit 1) d", "LIMIT"},
		{"update sf_user set x = 1 limit 1", "UPDATE … LIMIT"},
		{"update sf_user set x = 1 where id in (1, 2, 3) order by x", "UPDATE … ORDER BY"},
		{"delete from sf_user where id > 5 limit 1", "DELETE … LIMIT"},
	} {
		_, err := route(t, s, "shop", c.sql)
		checkRefused(t, c.sql, err, c.construct+" across several sub-tables of sf_user")
	}
	for _, sql := range []string{
		"select * from sf_user where id = 1 order by x limit 5",
		"select count(*), x from sf_user where id = 1 group by x having count(*) > 1",
		"select * from sf_user where id = 1 union select * from sf_user where id = 1",
		"update sf_user set x = 1 where id = 1 order by x limit 1",
		"delete from sf_user where id = 1 limit 1",
	} {
		if got, err := route(t, s, "shop", sql); err != nil || len(got) != 1 {
			t.Errorf("%s: %v, %v; want one sub-table", sql, got, err)
		}
	}
	// an aggregate over a reference table is the same on every shard
	sql := "select * from sf_user where x in (select max(id) from sf_city)"
	if got, err := route(t, s, "shop", sql); err != nil || len(got) != 8 {
		t.Errorf("%s: %v, %v; want every sub-table", sql, got, err)
	}
}

// Writes: UPDATE and DELETE route by the key; INSERT places each row.
func TestRouteWrites(t *testing.T) {
	s := fixture(t)
	for _, c := range []struct {
		sql  string
		want []int
		err  string
		code uint16
	}{
		{sql: "update sf_user set x = 1 where id = 7", want: []int{h(t, 7)}},
		{sql: "update sf_user set x = 1", want: every(8)},
		{sql: "delete from sf_user where id in (5, 7)", want: sorted(h(t, 5), h(t, 7))},
		{sql: "delete u from sf_user u join sf_order o on u.id = o.user_id where o.user_id = 7", want: []int{h(t, 7)}},
		{sql: "update sf_user u join sf_city c on u.city = c.id set u.x = c.x where u.id = 7", want: []int{h(t, 7)}},
		{sql: "insert into sf_user (id, x) values (1, 'a'), (2, 'b'), (-1, 'c'), ('1', 'd')", want: []int{h(t, 1), h(t, 2), h(t, -1), h(t, 1)}},
		{sql: "insert into sf_user set id = 7, x = 1", want: []int{h(t, 7)}},
		{sql: "replace into sf_user (x, id) values ('a', 7)", want: []int{h(t, 7)}},
		{sql: "insert ignore into sf_user (id, x) values (7, 1) on duplicate key update x = values(x)", want: []int{h(t, 7)}},
		{sql: "insert into sf_user (id) values (null)", want: []int{0}},
		{sql: "insert into sf_range (k) values (150), (399)", want: []int{1, 3}},
		{sql: "insert into sf_log (d) values ('2024-03-31')", want: []int{2}},
		{sql: "insert into sf_range (k) values (150), (1000)", code: 1526, err: "Table has no partition for value 1000"},
		{sql: "insert into sf_user (id) values (42.5)", err: "whose shard key id is not exactly one value of its type"},
		{sql: "insert into sf_nokey (id) values (1)", err: "before the type of its shard key id is known"},
		{sql: "insert into sf_user (x) values (1)", err: "omits its shard key id, which is not AUTO_INCREMENT"},
		{sql: "insert into sf_user (id) values (default)", err: "whose shard key id is not exactly one value of its type"},
		{sql: "update sf_user set id = 5 where id = 4", err: "UPDATE of shard key column sf_user.id"},
		{sql: "update sf_user u join sf_order o on u.id = o.user_id set o.user_id = 5", err: "UPDATE of shard key column sf_order.user_id"},
		{sql: "insert into sf_user (id, x) values (1, 2) on duplicate key update id = 3", err: "ON DUPLICATE KEY UPDATE of shard key column sf_user.id"},
		{sql: "insert into sf_user values (1, 2)", err: "INSERT into sharded table sf_user without a column list before its columns are known"},
		{sql: "insert into sf_user (id) values (1+1)", err: "whose shard key id in row 1 is an expression, not a value"},
		{sql: "insert into sf_user (id) select user_id from sf_order", err: "INSERT … SELECT into sharded table sf_user"},
		{sql: "replace into sf_user (id) select id from plain", err: "REPLACE … SELECT into sharded table sf_user"},
		{sql: "insert into sf_user (id, x) values (1, (select max(user_id) from sf_order))", err: "an INSERT into sharded table sf_user that reads table sf_order"},
		{sql: "update sf_user u join sf_city c on u.city = c.id set c.x = 1 where u.id = 7", err: "a write to reference table sf_city in a statement on sharded table sf_user"},
		{sql: "update sf_user u join sf_city c on u.city = c.id set x = 1 where u.id = 7", err: "a write to reference table sf_city"},
	} {
		got, err := route(t, s, "shop", c.sql)
		switch {
		case c.code != 0:
			var se *mysql.SQLError
			if !errors.As(err, &se) || se.Code != c.code || !strings.Contains(se.Message, c.err) {
				t.Errorf("%s: %v; want error %d containing %q", c.sql, err, c.code, c.err)
			}
		case c.err != "":
			checkRefused(t, c.sql, err, c.err)
		case err != nil || !slices.Equal(got, c.want):
			t.Errorf("%s: %v, %v; want %v", c.sql, got, err, c.want)
		}
	}
}

// An INSERT that omits the key is marked for the sequence, not refused.
func TestAnalyzeInsertSequence(t *testing.T) {
	an, err := Analyze(parse(t, "insert into sf_user (x, y) values (1, 2)"), fixture(t), "shop")
	if err != nil {
		t.Fatal(err)
	}
	if ir := an.Insert; ir == nil || !ir.NeedsSequence || ir.SequenceColumn != "id" || ir.KeyColumn != -1 {
		t.Fatalf("Insert = %+v; want NeedsSequence on id", an.Insert)
	}
}

// Statements on unsharded and reference tables keep one placement; tables
// of other databases are only refused next to sharded ones.
func TestAnalyzePlacement(t *testing.T) {
	s := fixture(t)
	for _, c := range []struct {
		db, sql string
		want    Placement
		write   bool
		err     string
	}{
		{db: "shop", sql: "select 1", want: Unsharded},
		{db: "shop", sql: "select * from plain where id = 1", want: Unsharded},
		{db: "shop", sql: "select * from information_schema.schemata", want: Unsharded},
		{db: "shop", sql: "select * from information_schema.tables", want: InfoSchema},
		{db: "shop", sql: "select 1 from dual where exists (select 1 from INFORMATION_SCHEMA.Statistics)", want: InfoSchema},
		{db: "shop", sql: "select * from information_schema.tables t join sf_city c on t.table_name = c.name", err: "a statement on information_schema.TABLES and on table sf_city of sharded schema shop"},
		{db: "other", sql: "select * from sf_user where id = 1", want: Unsharded},
		{db: "other", sql: "select * from shop.sf_user where id = 1", want: Sharded},
		{db: "", sql: "select * from SHOP.SF_USER where ID = 1", want: Sharded},
		{db: "shop", sql: "select * from sf_city", want: Reference},
		{db: "shop", sql: "select * from sf_city c join plain p on c.id = p.city", want: Unsharded},
		{db: "shop", sql: "update sf_city set x = 1", want: Reference, write: true},
		{db: "shop", sql: "insert into sf_city (id) values (1)", want: Reference, write: true},
		{db: "shop", sql: "insert into plain select * from sf_city", want: Unsharded, write: true},
		{db: "shop", sql: "insert into sf_city select * from plain", err: "a write to reference table sf_city that reads plain, which is not on every shard"},
		{db: "shop", sql: "select * from sf_user u join other.t on u.x = t.x", err: "a statement on sharded table sf_user and on table other.t of another database"},
		{db: "shop", sql: "select * from sf_user u join sf_name n on u.x = n.x", err: "a join of sf_user and sf_name, sharded by different rules"},
		{db: "shop", sql: "select * from sf_user u join sf_range r on u.id = r.k", err: "a join of sf_user and sf_range"},
		{db: "shop", sql: "show tables", err: "Show statements on sharded schema shop"},
		{db: "shop", sql: "-- a comment\n-- only", want: Unsharded},
		{db: "shop", sql: "/* nothing */", want: Unsharded},
	} {
		an, err := Analyze(parse(t, c.sql), s, c.db)
		if c.err != "" {
			checkRefused(t, c.sql, err, c.err)
			continue
		}
		if err != nil || an.Placement != c.want || an.Write != c.write {
			t.Errorf("%s (db %q): %+v, %v; want %s write=%v", c.sql, c.db, an, err, c.want, c.write)
			continue
		}
		if an.Placement == Unsharded && an.Cluster != "s0" {
			t.Errorf("%s: cluster %q, want the default cluster s0", c.sql, an.Cluster)
		}
	}
}

// A sharded table may join an unsharded one only on the sub-tables of the
// default cluster (s0 holds sub-tables 0-3).
func TestRouteWithUnsharded(t *testing.T) {
	s := fixture(t)
	var onS0, onS1 int64
	for k := int64(1); h(t, onS0) >= 4 || h(t, onS1) < 4; k++ {
		if h(t, k) < 4 {
			onS0 = k
		} else {
			onS1 = k
		}
	}
	sql := "select * from sf_user u join plain p on u.x = p.x where u.id = %d"
	if got, err := route(t, s, "shop", fmt.Sprintf(sql, onS0)); err != nil || !slices.Equal(got, []int{h(t, onS0)}) {
		t.Errorf("key on s0: %v, %v", got, err)
	}
	_, err := route(t, s, "shop", fmt.Sprintf(sql, onS1))
	checkRefused(t, "key on s1", err, "a statement on sharded table sf_user and unsharded table plain that needs sub-tables outside cluster s0")
	got, err := route(t, s, "shop", "select * from sf_user u join plain p on u.x = p.x where u.id = null")
	if err != nil || !slices.Equal(got, []int{0}) {
		t.Errorf("empty answer: %v, %v; want sub-table 0 of s0", got, err)
	}
	_, err = route(t, s, "shop", fmt.Sprintf("insert into plain select * from sf_user where id in (%d, %d)", onS0, onS0+1000))
	if h(t, onS0) != h(t, onS0+1000) {
		checkRefused(t, "insert into plain from two sub-tables", err, "a write to unsharded table plain from several sub-tables of sf_user")
	}
}

// Prepared-statement parameters (:sgp<i>, or Vitess's :v<i> when the text
// could not be normalized) route per execution.
func TestRouteParams(t *testing.T) {
	s := fixture(t)
	for _, sql := range []string{"select * from sf_user where id = :sgp1", "select * from sf_user where id = ?"} {
		an, err := Analyze(parse(t, sql), s, "shop")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []sharding.Literal{sharding.IntLit(42), sharding.StringLit("42"), sharding.DoubleLit(42), sharding.UintLit(42)} {
			tg, err := an.Route(values{params: []sharding.Literal{p}})
			if i, one := tg.Single(); err != nil || !one || i != h(t, 42) {
				t.Errorf("%s with %v: %v, %v; want %d", sql, p, tg.Set().Indices(), err, h(t, 42))
			}
		}
		if tg, err := an.Route(values{}); err != nil || tg.Len() != 8 {
			t.Errorf("%s without a value: %d sub-tables, %v; want every one", sql, tg.Len(), err)
		}
	}
}
