package difftest

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Issue 22's statements: reads that no route or merge answers, which
// shardgate evaluates on one server (docs/sharding.md, "Evaluated
// statements"): joins off the shard keys (inner, LEFT, RIGHT; of tables
// sharded alike or differently, with the reference and the unsharded
// table; two to four tables; on keys with NULLs, duplicates and _ci
// strings; with a side that holds no row) and WHERE, GROUP BY, HAVING,
// ORDER BY and LIMIT over the joined rows; derived tables and WITH
// queries with ORDER BY, LIMIT and GROUP BY inside; subqueries of every
// kind; window functions; GROUP BY … WITH ROLLUP; COUNT(DISTINCT a, b);
// UNIONs of sharded tables with the reference and the unsharded table.
// None is refusable: an answer is required.
//
// Each answer is determined on one server, by the merges' rules
// (gen_merge.go) and these:
//   - rows compare in order only under an ORDER BY ending with the
//     unique key of every table of the FROM (a NULL-extended row has
//     NULL keys, but there is one per row of the other side);
//   - a LIMIT inside a derived table, a WITH query or a subquery only
//     under such an order: Superset reaches the statement's own LIMIT
//     only;
//   - window functions whose value depends on the order of peers
//     (ROW_NUMBER, NTILE, LAG, LEAD, FIRST_VALUE, LAST_VALUE, NTH_VALUE,
//     ROWS frames) only under a total window order; RANK, DENSE_RANK,
//     PERCENT_RANK, CUME_DIST and RANGE frames, which take peers
//     together, under any;
//   - a scalar subquery returns one row by construction (an aggregate,
//     or LIMIT 1 under a total order): whether 1242 is raised would
//     depend on which outer rows the plan reaches;
//   - comparisons do not convert between types (a conversion warns once
//     per row compared, as many times as the plan compares), and strings
//     of different collations meet where one wins (an explicit COLLATE,
//     _bin, Unicode over latin1);
//   - GROUP_CONCAT only of DISTINCT small numbers: a longer one is cut at
//     group_concat_max_len with a warning naming the row number, which
//     depends on the order the plan reads the rows in.

// Construct names of issue 22's evaluated statements.
const (
	cJoinInner     = "join_inner"
	cJoinLeft      = "join_left"
	cJoinRight     = "join_right"
	cJoinSeveral   = "join_several_tables"
	cJoinSelf      = "join_self"
	cJoinNull      = "join_null_key"
	cJoinDup       = "join_duplicate_key"
	cJoinCI        = "join_ci_string_key"
	cJoinDate      = "join_date_key"
	cJoinColl      = "join_other_collation"
	cJoinEmpty     = "join_empty_side"
	cJoinAnti      = "join_anti"
	cJoinRule      = "join_sharded_differently"
	cJoinPlain     = "join_unsharded"
	cJoinWithRef   = "join_reference_off_key"
	cJoinAcross    = "join_condition_across"
	cJoinWhere     = "joined_where"
	cJoinGroup     = "joined_group_by"
	cJoinHaving    = "joined_having"
	cJoinOrder     = "joined_order_by"
	cJoinLimit     = "joined_limit"
	cDerivedGroup  = "derived_group_by"
	cDerivedLimit  = "derived_order_limit"
	cDerivedJoined = "derived_joined"
	cDerivedWindow = "derived_window"
	cCTE           = "cte"
	cCTESeveral    = "cte_several"
	cSubIn2        = "sub_in"
	cSubNotIn      = "sub_not_in"
	cSubNotInNull  = "sub_not_in_null"
	cSubExists2    = "sub_exists"
	cSubNotExists  = "sub_not_exists"
	cSubAny        = "sub_any"
	cSubAll        = "sub_all"
	cSubScalar2    = "sub_scalar"
	cSubCorrelated = "sub_correlated"
	cSubItem       = "sub_select_item"
	cSubOuterLocal = "sub_outer_reference_or_unsharded"
	cSubInnerMerge = "sub_inner_merge"
	cWinPartition  = "window_partition"
	cWinOrder      = "window_order"
	cWinRows       = "window_frame_rows"
	cWinRange      = "window_frame_range"
	cWinRank       = "window_rank"
	cWinOffset     = "window_value_of_row"
	cWinAggregate  = "window_aggregate"
	cWinNamed      = "window_named"
	cWinGrouped    = "window_over_groups"
	cRollup        = "rollup"
	cRollupTwo     = "rollup_two_keys"
	cCountDistMany = "count_distinct_several"
	cAggCompared   = "aggregates_compared"
	cUnionRef      = "union_reference"
	cUnionPlain    = "union_unsharded"
	cUnionBranch   = "union_branch_limit"
	cUnionTypes    = "union_mixed_types"
	cUnionDerived  = "union_derived"
	cValDate       = "value_date"
	cValDecimal    = "value_decimal"
	cValNull       = "value_null"
	cValCI         = "value_ci_string"
	cValColl       = "value_other_collation"
)

// evalConstructs are issue 22's construct names, for the report's checks.
var evalConstructs = []string{cJoinInner, cJoinLeft, cJoinRight, cJoinSeveral, cJoinSelf, cJoinNull, cJoinDup, cJoinCI,
	cJoinDate, cJoinColl, cJoinEmpty, cJoinAnti, cJoinRule, cJoinPlain, cJoinWithRef, cJoinAcross, cJoinWhere, cJoinGroup,
	cJoinHaving, cJoinOrder, cJoinLimit, cDerivedGroup, cDerivedLimit, cDerivedJoined, cDerivedWindow, cCTE, cCTESeveral,
	cSubIn2, cSubNotIn, cSubNotInNull, cSubExists2, cSubNotExists, cSubAny, cSubAll, cSubScalar2, cSubCorrelated, cSubItem,
	cSubOuterLocal, cSubInnerMerge, cWinPartition, cWinOrder, cWinRows, cWinRange, cWinRank, cWinOffset, cWinAggregate,
	cWinNamed, cWinGrouped, cRollup, cRollupTwo, cCountDistMany, cAggCompared, cUnionRef, cUnionPlain, cUnionBranch,
	cUnionTypes, cUnionDerived, cValDate, cValDecimal, cValNull, cValCI, cValColl}

// ---- tables ----

// cityTable and noteTable are the reference and the unsharded table as
// the evaluated statements see them, next to the merges' sharded ones.
var (
	cityTable = &mtable{name: tCity, alias: "c", key: []string{"id"}, cols: []column{
		{"id", ctInt, ""}, {"name", ctStr, ""}, {"country", ctStr, ""}}, filter: (*Generator).cityFilter}
	noteTable = &mtable{name: tNote, alias: "n", key: []string{"id"}, cols: []column{
		{"id", ctInt, ""}, {"body", ctStr, ""}, {"created", ctDatetime, ""}}, filter: (*Generator).noteFilter}
	evalTables = append(slices.Clone(mergeTables), cityTable, noteTable)
)

func evalTable(name string) *mtable {
	for _, t := range evalTables {
		if t.name == name {
			return t
		}
	}
	panic("difftest: no table " + name) // a bug in the generator
}

// nullCols are the columns that hold NULLs.
var nullCols = map[string]bool{
	"sf_user.email": true, "sf_user.balance": true, "sf_user.score": true, "sf_user.born": true, "sf_user.created": true,
	"sf_user.city_id": true, "sf_order.ordered_at": true, "sf_order.note": true, "sf_event.amount": true,
	"sf_event.happened": true, "sf_log.level": true, "sf_tag.updated": true, "sf_note.created": true,
	"sf_member.city": true, "sf_member.code": true, "sf_member.nick": true, "sf_member.tag": true, "sf_member.age": true,
	"sf_member.score": true, "sf_member.joined": true, "sf_member.seen": true,
}

func nullable(table, col string) bool { return nullCols[table+"."+col] }

// shardedAlike reports whether two sharded tables place their rows by
// the same rule (sf_order is like sf_user); false for the reference and
// the unsharded table, which are not sharded.
func shardedAlike(a, b string) bool {
	group := func(t string) string {
		if t == tOrder {
			return tUser
		}
		return t
	}
	return group(a) == group(b)
}

func isSharded(t string) bool { return t != tCity && t != tNote }

func (g *Generator) cityFilter(p string) ([]any, bool) {
	if g.r.IntN(zeroOdds) == 0 {
		return []any{p + "id < ", intLit(0)}, true
	}
	switch g.r.IntN(3) {
	case 0:
		return []any{p + "country = ", strLit(pick(g.r, countries))}, false // 'DE' and 'de' alike
	case 1:
		return []any{p + "id <= ", intLit(1 + g.r.IntN(cities))}, false
	}
	return []any{p + "name <> ", strLit(pick(g.r, names) + " city")}, false
}

func (g *Generator) noteFilter(p string) ([]any, bool) {
	if g.r.IntN(zeroOdds) == 0 {
		return []any{p + "id < ", intLit(0)}, true
	}
	switch g.r.IntN(3) {
	case 0:
		return []any{p + "id <= ", intLit(1 + g.r.IntN(12))}, false
	case 1:
		return []any{p + "body <> ", strLit(pick(g.r, names))}, false
	}
	return []any{p + "created < ", datetimeLit(randDatetime(g.r))}, false
}

// emptyCond is a condition no row of t meets: a side of a join, a
// subquery, a derived table that holds no row.
func emptyCond(t *mtable, p string) string {
	switch t.name {
	case tOrder:
		return p + "amount > 99999"
	case tEvent:
		return p + "id > 1073741824"
	case tLog:
		return p + "seq > 1073741824"
	case tTag:
		return p + "uses > 1000"
	case tCity, tNote:
		return p + "id < 0"
	}
	return p + "id > 100000" // sf_user, sf_member: fresh ids stay far below
}

// narrowCond keeps a tenth or so of t's rows: a join on a value many rows
// share is joined under it, so that its rows stay in the hundreds.
func (g *Generator) narrowCond(t *mtable, p string) []any {
	switch t.name {
	case tUser:
		lo := g.userKey()
		return []any{p + "id BETWEEN ", intLit(lo), " AND ", intLit(lo + 25)}
	case tMember:
		lo := 1 + g.r.IntN(140)
		return []any{p + "id BETWEEN ", intLit(lo), " AND ", intLit(lo + 25)}
	case tOrder:
		lo := g.userKey()
		return []any{p + "user_id BETWEEN ", intLit(lo), " AND ", intLit(lo + 25)}
	case tEvent:
		lo := g.eventKey()
		return []any{p + "id BETWEEN ", intLit(lo), " AND ", intLit(lo + 150)}
	case tLog:
		d := randDate(g.r)
		return []any{p + "day BETWEEN ", dateLit(d), " AND ", dateLit(addDays(d, 75))}
	case tTag:
		return []any{p + "uses < ", intLit(5 + g.r.IntN(10))}
	}
	return []any{p + "id <= ", intLit(3 + g.r.IntN(5))} // sf_city, sf_note
}

func addDays(d Date, n int) Date {
	t := time.Date(d.Year, time.Month(d.Month), d.Day, 0, 0, 0, 0, time.UTC).AddDate(0, 0, n)
	return Date{t.Year(), int(t.Month()), t.Day()}
}

// ---- join edges ----

// edge is a pair of columns (or expressions of them) of two tables that
// a join, IN, EXISTS, ANY or ALL may compare: of the same type, and for
// strings of collations that meet.
type edge struct {
	a, ca, b, cb string
	// ea, eb are the expressions compared when not the columns
	// themselves, %[1]s standing for the table's alias and a dot.
	ea, eb string
	// extra is a further condition on both, %[1]s for a, %[2]s for b.
	extra string
	// big: many rows share a value on both sides; joined only under
	// narrowCond.
	big  bool
	tags []string
}

func (e *edge) exprA(p string) string { return edgeExpr(e.ea, e.ca, p) }
func (e *edge) exprB(p string) string { return edgeExpr(e.eb, e.cb, p) }

func edgeExpr(expr, col, p string) string {
	if expr == "" {
		return p + col
	}
	return fmt.Sprintf(expr, p)
}

func (e *edge) extraOn(pa, pb string) string {
	if e.extra == "" {
		return ""
	}
	return fmt.Sprintf(e.extra, pa, pb)
}

// nullKey reports whether either side's values include NULL.
func (e *edge) nullKey() bool { return nullable(e.a, e.ca) || nullable(e.b, e.cb) }

// edges are the joins off the shard keys: values that many rows share
// (duplicates), NULLs, _ci strings spelled in other cases, accents and
// trailing spaces, dates, strings of other collations, tables sharded
// alike and differently, the reference and the unsharded table.
var edges = []edge{
	{a: tUser, ca: "city_id", b: tOrder, cb: "order_no", big: true, tags: []string{cJoinDup}},
	{a: tUser, ca: "name", b: tOrder, cb: "note", big: true, tags: []string{cJoinDup, cJoinCI}},
	{a: tUser, ca: "id", b: tEvent, cb: "id"},
	{a: tUser, ca: "city_id", b: tMember, cb: "age", tags: []string{cJoinDup}},
	{a: tOrder, ca: "order_no", b: tLog, cb: "seq", big: true, tags: []string{cJoinDup}},
	{a: tUser, ca: "city_id", b: tTag, cb: "uses", tags: []string{cJoinDup}},
	{a: tUser, ca: "name", b: tNote, cb: "body", tags: []string{cJoinDup, cJoinCI}},
	{a: tUser, ca: "city_id", b: tNote, cb: "id", tags: []string{cJoinDup}},
	{a: tLog, ca: "level", b: tOrder, cb: "order_no", big: true, tags: []string{cJoinDup}},
	{a: tUser, ca: "city_id", b: tUser, cb: "city_id", big: true, tags: []string{cJoinDup}},
	{a: tUser, ca: "born", b: tLog, cb: "day", tags: []string{cJoinDate}},
	{a: tTag, ca: "updated", b: tLog, cb: "day", tags: []string{cJoinDate}},
	{a: tMember, ca: "joined", b: tUser, cb: "born", tags: []string{cJoinDate}},
	{a: tOrder, ca: "ordered_at", ea: "DATE(%[1]sordered_at)", b: tLog, cb: "day", tags: []string{cJoinDate, cJoinDup}},
	{a: tUser, ca: "city_id", b: tCity, cb: "id", tags: []string{cJoinDup}},
	{a: tUser, ca: "name", ea: "CONCAT(%[1]sname, ' city')", b: tCity, cb: "name", tags: []string{cJoinCI, cJoinDup}},
	// utf8mb4_unicode_ci ('ß' = 'ss') against utf8mb4_general_ci: the
	// explicit COLLATE decides which
	{a: tMember, ca: "name", b: tUser, cb: "name", eb: "%[1]sname COLLATE utf8mb4_unicode_ci", tags: []string{cJoinCI, cJoinColl, cJoinDup}},
	{a: tMember, ca: "name", ea: "%[1]sname COLLATE utf8mb4_general_ci", b: tOrder, cb: "note", big: true, tags: []string{cJoinCI, cJoinColl, cJoinDup}},
	// utf8mb4_bin wins over utf8mb4_general_ci: 'ß' is not 'ss', 'x' not 'X'
	{a: tMember, ca: "code", b: tUser, cb: "name", tags: []string{cJoinColl, cJoinDup}},
	{a: tMember, ca: "nick", b: tMember, cb: "nick", big: true, tags: []string{cJoinColl, cJoinDup, cJoinCI}},
	{a: tMember, ca: "city", b: tMember, cb: "city", big: true, tags: []string{cJoinColl, cJoinDup, cJoinCI}},
	{a: tMember, ca: "tag", b: tMember, cb: "tag", big: true, tags: []string{cJoinColl, cJoinDup}},
	{a: tEvent, ca: "id", b: tMember, cb: "age", tags: []string{cJoinDup}},
	{a: tOrder, ca: "user_id", b: tMember, cb: "id"},
	{a: tOrder, ca: "status", b: tOrder, cb: "status", extra: "%[2]suser_id = %[1]suser_id + 1", tags: []string{cJoinCI, cJoinDup}},
	{a: tUser, ca: "id", ea: "%[1]sid + 1", b: tOrder, cb: "user_id", extra: "%[2]samount < %[1]sbalance", tags: []string{cJoinAcross}},
	{a: tEvent, ca: "amount", ea: "TRUNCATE(%[1]samount / 2000, 0)", b: tOrder, cb: "order_no", big: true, tags: []string{cJoinDup}},
	{a: tTag, ca: "uses", b: tOrder, cb: "order_no", big: true, tags: []string{cJoinDup}},
	{a: tLog, ca: "level", ea: "%[1]slevel * 2", b: tEvent, cb: "id", tags: []string{cJoinDup}},
	{a: tNote, ca: "id", b: tOrder, cb: "order_no", big: true, tags: []string{cJoinDup}},
	{a: tCity, ca: "id", b: tMember, cb: "age", tags: []string{cJoinDup}},
	{a: tMember, ca: "score", ea: "FLOOR(%[1]sscore / 10000)", b: tUser, cb: "city_id", tags: []string{cJoinDup}},
}

// edgeTags are the constructs a join along e exercises.
func edgeTags(e *edge) []string {
	tags := slices.Clone(e.tags)
	if e.nullKey() {
		tags = append(tags, cJoinNull, cValNull)
	}
	switch {
	case e.a == e.b:
		tags = append(tags, cJoinSelf)
	case isSharded(e.a) && isSharded(e.b) && !shardedAlike(e.a, e.b):
		tags = append(tags, cJoinRule)
	}
	for _, t := range []string{e.a, e.b} {
		switch t {
		case tCity:
			tags = append(tags, cJoinWithRef)
		case tNote:
			tags = append(tags, cJoinPlain)
		}
	}
	return tags
}

// ---- a SELECT being assembled ----

// query is a SELECT put together clause by clause, then written in SQL's
// order (parts): the random choices of a clause may depend on another's
// written later (the select list on the FROM's tables).
type query struct {
	with     []any
	distinct bool
	items    [][]any
	from     []any
	where    [][]any // ANDed, each in parentheses
	group    []string
	rollup   bool
	having   []any
	window   string
	order    []string
	limit    []any
}

// item adds a select item and returns its position.
func (q *query) item(parts ...any) int {
	q.items = append(q.items, parts)
	return len(q.items) - 1
}

func (q *query) cond(parts ...any) { q.where = append(q.where, parts) }

// parts is the SELECT as parts of a builder; withLimit false leaves out
// its LIMIT (the statement a Superset runs).
func (q *query) parts(withLimit bool) []any {
	out := append([]any{}, q.with...)
	out = append(out, "SELECT ")
	if q.distinct {
		out = append(out, "DISTINCT ")
	}
	for i, it := range q.items {
		if i > 0 {
			out = append(out, ", ")
		}
		out = append(out, it...)
	}
	out = append(out, " FROM ")
	out = append(out, q.from...)
	for i, c := range q.where {
		out = append(out, pick2s(i == 0, " WHERE (", " AND ("))
		out = append(out, c...)
		out = append(out, ")")
	}
	if len(q.group) > 0 {
		out = append(out, " GROUP BY "+strings.Join(q.group, ", "))
		if q.rollup {
			out = append(out, " WITH ROLLUP")
		}
	}
	if len(q.having) > 0 {
		out = append(out, " HAVING ")
		out = append(out, q.having...)
	}
	if q.window != "" {
		out = append(out, " WINDOW "+q.window)
	}
	if len(q.order) > 0 {
		out = append(out, " ORDER BY "+strings.Join(q.order, ", "))
	}
	if withLimit {
		out = append(out, q.limit...)
	}
	return out
}

// sub is q in parentheses, as a derived table or a subquery.
func (q *query) sub() []any {
	return append(append([]any{"("}, q.parts(true)...), ")")
}

func pick2s(first bool, a, b string) string {
	if first {
		return a
	}
	return b
}

// evalDone is the statement of q: not refusable, and checked against the
// statement without its LIMIT when its order is not total.
func (g *Generator) evalDone(m *mstmt, q *query) Statement {
	m.add(q.parts(true)...)
	st := m.done()
	st.Refusable = false
	st.PlanNotNull = slices.Contains(m.tags, cJoinLeft) || slices.Contains(m.tags, cJoinRight)
	if len(q.limit) > 0 && !m.order {
		full := newMstmt()
		full.add(q.parts(false)...)
		sup := full.done()
		sup.Refusable = false
		st.Superset = &sup
		m.tag(cLimitAny)
		st.Constructs = m.tags
	}
	return st
}

// ---- values ----

// value tags the category of a column a statement selects, groups, sorts
// or joins by.
func (m *mstmt) value(t *mtable, c column) {
	switch c.typ {
	case ctDate, ctDatetime:
		m.tag(cValDate)
	case ctDec:
		m.tag(cValDecimal)
	case ctStr:
		if c.coll == "" {
			m.tag(cValCI)
		} else {
			m.tag(cValColl)
		}
	}
	if nullable(t.name, c.name) {
		m.tag(cValNull)
	}
}

// ---- sides of a FROM ----

// side is one table of a FROM and its alias.
type side struct {
	t     *mtable
	alias string
}

func (s side) p() string { return s.alias + "." }

// keys are s's unique key, qualified: the end of a total order.
func (s side) keys() []string {
	out := make([]string, len(s.t.key))
	for i, k := range s.t.key {
		out[i] = s.p() + k
	}
	return out
}

// fromClause is a FROM being built: its tables and its text.
type fromClause struct {
	sides []side
	parts []any
	where [][]any // conditions the FROM puts in the WHERE: a comma join's
	left  []int   // sides LEFT JOINed: an anti-join may ask for their NULL rows
	outer bool    // some rows may be NULL-extended
}

// newSide adds a side for t, its alias made unique (u, u2, u3).
func (f *fromClause) newSide(t *mtable) side {
	alias := t.alias
	for n := 2; f.hasAlias(alias); n++ {
		alias = fmt.Sprintf("%s%d", t.alias, n)
	}
	s := side{t, alias}
	f.sides = append(f.sides, s)
	return s
}

func (f *fromClause) hasAlias(a string) bool {
	for _, s := range f.sides {
		if s.alias == a {
			return true
		}
	}
	return false
}

func (f *fromClause) hasTable(name string) bool {
	for _, s := range f.sides {
		if s.t.name == name {
			return true
		}
	}
	return false
}

// totalOrder is an ORDER BY over f's rows that is total: every side's
// unique key, each ASC or DESC.
func (g *Generator) totalOrder(m *mstmt, f *fromClause) []string {
	var keys []string
	for _, s := range f.sides {
		for _, k := range s.keys() {
			if g.r.IntN(4) == 0 {
				m.tag(cOrderDesc)
				k += " DESC"
			}
			keys = append(keys, k)
		}
	}
	return keys
}

// tableItem is t under alias s as a FROM item: its name, or now and then
// a derived table of none of its rows.
func (g *Generator) tableItem(m *mstmt, s side) []any {
	if g.r.IntN(12) == 0 {
		m.tag(cJoinEmpty)
		return []any{"(SELECT * FROM " + s.t.name + " WHERE " + emptyCond(s.t, "") + ") AS " + s.alias}
	}
	return []any{s.t.name + pick(g.r, []string{" ", " AS "}) + s.alias}
}

// singleFrom is a FROM of one table.
func (g *Generator) singleFrom(t *mtable) *fromClause {
	f := &fromClause{}
	s := f.newSide(t)
	f.parts = []any{t.name + pick(g.r, []string{" ", " AS "}) + s.alias}
	return f
}

// attachment is a way to add a table to a FROM: along an edge, from one
// of its sides.
type attachment struct {
	e      *edge
	from   int  // the side it joins
	newIsA bool // the new table is the edge's a
}

// attachments lists the edges joining a table to f's sides.
func attachments(f *fromClause) []attachment {
	var out []attachment
	for i := range edges {
		e := &edges[i]
		for j, s := range f.sides {
			if s.t.name == e.a {
				out = append(out, attachment{e, j, false})
			}
			if s.t.name == e.b {
				out = append(out, attachment{e, j, true})
			}
		}
	}
	return out
}

// joinCount is how many tables a join has: mostly two, sometimes three
// or four.
func (g *Generator) joinCount() int {
	switch n := g.r.IntN(10); {
	case n < 6:
		return 2
	case n < 9:
		return 3
	}
	return 4
}

// joinFrom is a FROM joining n tables along edges, starting from a table
// of them (first, or any when nil).
func (g *Generator) joinFrom(m *mstmt, n int, first *mtable) *fromClause {
	if first == nil {
		e := pick(g.r, edges)
		first = evalTable(pick(g.r, []string{e.a, e.b}))
	}
	f := &fromClause{}
	s0 := f.newSide(first)
	f.parts = g.tableItem(m, s0)
	m.tag(cJoinWhere) // every join has a condition; joinWhere adds a WHERE's
	if n > 2 {
		m.tag(cJoinSeveral)
	}
	for j := 1; j < n; j++ {
		g.attach(m, f, pick(g.r, attachments(f)), j, n)
	}
	return f
}

// attach joins a table to f along at, as table j of n: an inner, LEFT or
// RIGHT join (of two tables also as a comma join with its condition in
// the WHERE: a comma binds looser than JOIN, so a later JOIN's ON could
// not name the tables before it, 1054), on
// the edge's columns, under a narrowing for a big edge, and now and then
// with a condition in the ON that no row meets.
func (g *Generator) attach(m *mstmt, f *fromClause, at attachment, j, n int) {
	e := at.e
	old := f.sides[at.from]
	nt := e.b
	if at.newIsA {
		nt = e.a
	}
	ns := f.newSide(evalTable(nt))
	pa, pb := old.p(), ns.p()
	if at.newIsA {
		pa, pb = pb, pa
	}
	on := []any{e.exprA(pa) + " = " + e.exprB(pb)}
	if x := e.extraOn(pa, pb); x != "" {
		on = append(on, " AND "+x)
	}
	m.tag(edgeTags(e)...)
	m.value(evalTable(e.a), evalTable(e.a).col(e.ca))
	m.value(evalTable(e.b), evalTable(e.b).col(e.cb))
	if e.big {
		// in the ON, so that an outer join still keeps every row of
		// its preserved side: it bounds the matches, not the rows
		on = append(on, " AND ")
		on = append(on, g.narrowCond(ns.t, ns.p())...)
		on = append(on, " AND ")
		on = append(on, g.narrowCond(old.t, old.p())...)
	}
	if g.r.IntN(10) == 0 {
		m.tag(cJoinEmpty)
		on = append(on, " AND "+emptyCond(ns.t, ns.p()))
	}
	item := g.tableItem(m, ns)
	switch k := g.r.IntN(20); {
	case k < 8:
		m.tag(cJoinInner)
		if n == 2 && k < 2 {
			f.parts = append(f.parts, ", ")
			f.parts = append(f.parts, item...)
			f.where = append(f.where, on)
			return
		}
		f.parts = append(f.parts, " "+pick(g.r, []string{"JOIN", "INNER JOIN", "JOIN", "STRAIGHT_JOIN"})+" ")
	case k < 15:
		m.tag(cJoinLeft)
		f.outer = true
		f.left = append(f.left, len(f.sides)-1)
		f.parts = append(f.parts, " "+pick(g.r, []string{"LEFT JOIN", "LEFT OUTER JOIN"})+" ")
	default:
		m.tag(cJoinRight)
		f.outer = true
		f.parts = append(f.parts, " "+pick(g.r, []string{"RIGHT JOIN", "RIGHT OUTER JOIN"})+" ")
	}
	f.parts = append(f.parts, item...)
	f.parts = append(f.parts, " ON ")
	f.parts = append(f.parts, on...)
}

// joinWhere adds conditions over the joined rows: a table's filter, a
// comparison of two tables' columns, an anti-join's IS NULL.
func (g *Generator) joinWhere(m *mstmt, q *query, f *fromClause) {
	q.where = append(q.where, f.where...)
	if g.r.IntN(2) == 0 {
		s := pick(g.r, f.sides)
		parts, zero := s.t.filter(g, s.p())
		q.cond(parts...)
		if zero {
			m.tag(cZeroRows)
		}
	}
	if g.r.IntN(3) == 0 {
		if c := g.acrossCond(f); c != "" {
			m.tag(cJoinAcross)
			q.cond(c)
		}
	}
	if len(f.left) > 0 && g.r.IntN(3) == 0 {
		m.tag(cJoinAnti)
		s := f.sides[pick(g.r, f.left)]
		q.cond(s.keys()[0] + " IS NULL")
	}
}

// colClass is what a column may be compared with without a conversion.
func colClass(c column) string {
	switch c.typ {
	case ctInt, ctDec:
		return "number"
	case ctDate, ctDatetime:
		return "time"
	case ctStr:
		return "string " + c.collation()
	}
	return "" // DOUBLE: compared with nothing but itself
}

// acrossCond compares columns of two sides of the same class: numbers,
// dates with datetimes, strings of one collation; "" when none meet.
func (g *Generator) acrossCond(f *fromClause) string {
	if len(f.sides) < 2 {
		return ""
	}
	perm := g.r.Perm(len(f.sides))
	a, b := f.sides[perm[0]], f.sides[perm[1]]
	for _, i := range g.r.Perm(len(a.t.cols)) {
		ca := a.t.cols[i]
		for _, k := range g.r.Perm(len(b.t.cols)) {
			cb := b.t.cols[k]
			if cl := colClass(ca); cl != "" && cl == colClass(cb) {
				op := pick(g.r, []string{" < ", " > ", " <= ", " >= ", " <> ", " = ", " <=> "})
				return a.p() + ca.name + op + b.p() + cb.name
			}
		}
	}
	return ""
}

// pickCol is a column of one of f's sides, qualified, its value tagged.
func (g *Generator) pickCol(m *mstmt, f *fromClause) (side, column) {
	s := pick(g.r, f.sides)
	c := pick(g.r, s.t.cols)
	m.value(s.t, c)
	return s, c
}

// rowItems selects 2 to 5 columns of f's sides, the first two of
// different sides.
func (g *Generator) rowItems(m *mstmt, q *query, f *fromClause, fold bool) {
	n := 2 + g.r.IntN(4)
	for i := range n {
		s, c := g.pickCol(m, f)
		if i == 1 && len(f.sides) > 1 {
			s = f.sides[1]
			c = pick(g.r, s.t.cols)
			m.value(s.t, c)
		}
		pos := q.item(s.p() + c.name)
		if fold {
			m.foldAt(pos, c.collation())
		}
	}
}

// ---- joins ----

// evalJoin joins two to four tables off their shard keys and reads the
// joined rows as a multiset, DISTINCT, in a total order (with LIMIT), by
// a partial order with LIMIT (checked against the rows without it),
// grouped, or aggregated to one row.
func (g *Generator) evalJoin() Statement {
	m := newMstmt()
	q := &query{}
	f := g.joinFrom(m, g.joinCount(), nil)
	q.from = f.parts
	g.joinWhere(m, q, f)
	switch k := g.r.IntN(20); {
	case k < 5:
		distinct := g.r.IntN(4) == 0
		if distinct {
			m.tag(cDistinct)
			q.distinct = true
		}
		g.rowItems(m, q, f, distinct)
	case k < 10:
		m.order = true
		m.tag(cJoinOrder)
		g.rowItems(m, q, f, false)
		q.order = g.totalOrder(m, f)
		if g.r.IntN(2) == 0 {
			s, c := g.pickCol(m, f)
			q.order = append([]string{s.p() + c.name + pick(g.r, []string{"", " DESC"})}, q.order...)
		}
		if g.r.IntN(3) > 0 {
			m.tag(cJoinLimit)
			q.limit = g.limitParts(m, true)
		}
	case k < 12:
		m.tag(cJoinOrder, cJoinLimit)
		g.rowItems(m, q, f, false)
		s, c := g.pickCol(m, f)
		q.order = []string{s.p() + c.name}
		q.limit = g.limitParts(m, false)
	case k < 18:
		m.tag(cJoinGroup)
		g.grouped(m, q, f)
	default:
		m.order = true // one row
		m.tag(cAggNoGroup)
		g.aggregates(m, q, f, 1+g.r.IntN(4))
	}
	return g.evalDone(m, q)
}

// evalAggregate is an aggregate of a side's columns for rows of a join
// or a derived table: the merges' aggregates, GROUP_CONCAT only of
// DISTINCT small numbers (see the top of this file).
func (g *Generator) evalAggregate(s side) aggregate {
	a := g.aggregate(s.t, s.p())
	if !slices.Contains(a.tags, cGroupConcat) || strings.Contains(a.expr, "DISTINCT") {
		return a
	}
	for _, c := range s.t.cols {
		if c.typ == ctInt {
			x := "ABS(" + s.p() + c.name + ") % 7"
			a.expr = "GROUP_CONCAT(DISTINCT " + x + " ORDER BY " + x + " DESC SEPARATOR '/')"
			break
		}
	}
	return a
}

// aggregates adds n aggregate items of f's sides, and now and then a
// COUNT(DISTINCT a, b); it returns the aliases it gave.
func (g *Generator) aggregates(m *mstmt, q *query, f *fromClause, n int) (aliases []string) {
	for j := range n {
		var expr, coll string
		if g.r.IntN(6) == 0 {
			expr = g.countDistinctSeveral(m, f)
		} else {
			s := pick(g.r, f.sides)
			a := g.evalAggregate(s)
			m.tag(a.tags...)
			expr, coll = a.expr, a.coll
		}
		pos := q.item(expr)
		m.foldAt(pos, coll)
		if g.r.IntN(3) == 0 {
			alias := fmt.Sprintf("a%d", j+1)
			q.items[pos] = append(q.items[pos], " AS "+alias)
			aliases = append(aliases, alias)
		}
	}
	return aliases
}

// countDistinctSeveral is COUNT(DISTINCT a, b[, c]) of f's columns: rows
// with a NULL in any are not counted, _ci strings count once per
// collation's value.
func (g *Generator) countDistinctSeveral(m *mstmt, f *fromClause) string {
	m.tag(cCountDistMany)
	var cols []string
	for range 2 + g.r.IntN(2) {
		s, c := g.pickCol(m, f)
		cols = append(cols, s.p()+c.name)
	}
	return "COUNT(DISTINCT " + strings.Join(cols, ", ") + ")"
}

// grouped makes q group f's rows: one or two keys of a side (a _ci key
// folded), aggregates of any side, maybe HAVING, and no order, the keys'
// order (maybe with LIMIT) or a top-N by an aggregate.
func (g *Generator) grouped(m *mstmt, q *query, f *fromClause) {
	m.tag(cGroupBy)
	s := pick(g.r, f.sides)
	keys := g.groupKeys(s.t, s.p())
	for _, k := range keys {
		pos := q.item(k.expr)
		q.group = append(q.group, k.expr)
		if k.coll != "" {
			m.foldAt(pos, k.coll)
			m.tag(cGroupCI)
		}
	}
	aliases := g.aggregates(m, q, f, 1+g.r.IntN(3))
	if g.r.IntN(2) == 0 {
		m.tag(cHaving, cJoinHaving)
		hs := pick(g.r, f.sides)
		q.having = g.having(hs.t, hs.p(), aliases)
	}
	switch g.r.IntN(3) {
	case 0: // a multiset
	case 1:
		m.order = true
		m.tag(cOrderBy)
		q.order = g.keysOrderList(m, q.group)
		if g.r.IntN(2) == 0 {
			q.limit = g.limitParts(m, false)
		}
	default:
		m.order = true
		m.tag(cOrderBy, cTopN)
		a := g.evalAggregate(pick(g.r, f.sides))
		m.tag(a.tags...)
		q.order = append([]string{a.expr + pick(g.r, []string{" DESC", "", " ASC"})}, g.keysOrderList(m, q.group)...)
		q.limit = g.limitParts(m, false)
	}
}

// keysOrderList is the group keys as ORDER BY keys, each ASC or DESC:
// total, since no two groups have equal keys.
func (g *Generator) keysOrderList(m *mstmt, keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k
		if g.r.IntN(3) == 0 {
			m.tag(cOrderDesc)
			out[i] += " DESC"
		}
	}
	return out
}
