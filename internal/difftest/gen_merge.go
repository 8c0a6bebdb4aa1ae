package difftest

import (
	"fmt"
	"slices"
	"strconv"
)

// Issue 14's statements: reads whose answer needs rows of several shards
// merged (ORDER BY, LIMIT, GROUP BY and aggregates, HAVING, DISTINCT,
// UNION, top-N), joins and subqueries that are co-located, and joins
// across shards that must be refused.
//
// Each statement's answer is determined on one server: an ORDER BY under
// which rows are compared in order ends with a unique key; a LIMIT
// without such an order is checked against the statement without it
// (Statement.Superset); a group key, MIN/MAX or DISTINCT value of a _ci
// column, whose spelling a server takes from any row of its group, is
// compared under the collation (Statement.Fold). Floating-point SUM and
// AVG are left out: their last digits depend on the order of addition,
// which differs between one server and a merge of shards (MIN, MAX and
// COUNT of the DOUBLE column are exact and in).

// Construct names of the per-construct report (Report.Constructs).
const (
	cOrderBy     = "order_by"
	cOrderDesc   = "order_desc"
	cOrderMulti  = "order_several_keys"
	cOrderAlias  = "order_alias"
	cOrderExpr   = "order_expression"
	cOrderPos    = "order_position"
	cOrderQual   = "order_qualified"
	cLimit       = "limit"
	cLimitOffset = "limit_offset"
	cLimitAny    = "limit_unordered"
	cGroupBy     = "group_by"
	cGroupCI     = "group_ci_key"
	cCountStar   = "count_star"
	cCountCol    = "count_col"
	cSum         = "sum"
	cMinMax      = "min_max"
	cAvg         = "avg"
	cCountDist   = "count_distinct"
	cSumDist     = "sum_distinct"
	cGroupConcat = "group_concat"
	cBitAgg      = "bit_and_or_xor"
	cAggExpr     = "aggregate_expression"
	cHaving      = "having"
	cAggNoGroup  = "aggregate_no_group"
	cZeroRows    = "zero_rows"
	cTopN        = "top_n"
	cDistinct    = "distinct"
	cUnion       = "union"
	cUnionAll    = "union_all"
	cJoinKey     = "join_shard_key"
	cJoinRef     = "join_reference"
	cSubIn       = "subquery_in"
	cSubExists   = "subquery_exists"
	cSubScalar   = "subquery_scalar"
	cDerived     = "derived_table"
	cCross       = "cross_shard"
)

// allConstructs are the construct names, for the report's checks.
var allConstructs = append([]string{cOrderBy, cOrderDesc, cOrderMulti, cOrderAlias, cOrderExpr, cOrderPos, cOrderQual, cLimit, cLimitOffset, cLimitAny, cGroupBy, cGroupCI, cCountStar, cCountCol, cSum, cMinMax, cAvg, cCountDist, cSumDist, cGroupConcat, cBitAgg, cAggExpr, cHaving, cAggNoGroup, cZeroRows, cTopN, cDistinct, cUnion, cUnionAll, cJoinKey, cJoinRef, cSubIn, cSubExists, cSubScalar, cDerived, cCross}, append(append(compareConstructs, evalConstructs...), writeConstructs...)...)

// colType is what the generator needs to know of a column's type.
type colType int

const (
	ctInt colType = iota
	ctDec
	ctDouble
	ctStr // a string: utf8mb4_general_ci unless column.coll says otherwise
	ctDate
	ctDatetime
)

type column struct {
	name string
	typ  colType
	coll string // a string's collation, if not utf8mb4_general_ci
}

// generalCIName is the collation of the generator's strings but
// sf_member's.
const generalCIName = "utf8mb4_general_ci"

// collation is the collation a string column's values compare under, ""
// for other types.
func (c column) collation() string {
	switch {
	case c.typ != ctStr:
		return ""
	case c.coll == "":
		return generalCIName
	}
	return c.coll
}

// mtable is a sharded table as the merge statements see it.
type mtable struct {
	name   string
	alias  string   // the alias statements may give it
	key    []string // a unique key: an ORDER BY ending with it is total
	cols   []column
	filter func(g *Generator, p string) (parts []any, zero bool) // a WHERE condition on columns prefixed by p
}

var mergeTables = []*mtable{
	{name: tUser, alias: "u", key: []string{"id"}, cols: []column{
		{"id", ctInt, ""}, {"name", ctStr, ""}, {"email", ctStr, ""}, {"balance", ctDec, ""}, {"score", ctDouble, ""},
		{"born", ctDate, ""}, {"created", ctDatetime, ""}, {"city_id", ctInt, ""}}, filter: (*Generator).userFilter},
	{name: tOrder, alias: "o", key: []string{"user_id", "order_no"}, cols: []column{
		{"user_id", ctInt, ""}, {"order_no", ctInt, ""}, {"amount", ctDec, ""}, {"status", ctStr, ""},
		{"ordered_at", ctDatetime, ""}, {"note", ctStr, ""}}, filter: (*Generator).orderFilter},
	{name: tEvent, alias: "e", key: []string{"id"}, cols: []column{
		{"id", ctInt, ""}, {"kind", ctStr, ""}, {"amount", ctDec, ""}, {"happened", ctDatetime, ""}}, filter: (*Generator).eventFilter},
	{name: tLog, alias: "l", key: []string{"day", "seq"}, cols: []column{
		{"day", ctDate, ""}, {"seq", ctInt, ""}, {"msg", ctStr, ""}, {"level", ctInt, ""}}, filter: (*Generator).logFilter},
	{name: tTag, alias: "tg", key: []string{"name"}, cols: []column{
		{"name", ctStr, ""}, {"uses", ctInt, ""}, {"updated", ctDate, ""}}, filter: (*Generator).tagFilter},
	{name: tMember, alias: "mb", key: []string{"name", "id"}, cols: memberColumns, filter: (*Generator).memberFilter},
}

func (t *mtable) col(name string) column {
	for _, c := range t.cols {
		if c.name == name {
			return c
		}
	}
	panic("difftest: no column " + name + " in " + t.name) // a bug in the generator
}

// zeroOdds: one WHERE in zeroOdds matches no row at all.
const zeroOdds = 8

func (g *Generator) userFilter(p string) ([]any, bool) {
	if g.r.IntN(zeroOdds) == 0 {
		return []any{p + "id > ", intLit(100000)}, true
	}
	switch g.r.IntN(6) {
	case 0:
		return []any{p + "balance > ", decimal(g.r, 5, 2)}, false
	case 1:
		return []any{p + "city_id IS NULL OR " + p + "city_id < ", intLit(g.r.IntN(cities))}, false
	case 2:
		return []any{p + "name <> ", strLit(pick(g.r, names))}, false
	case 3:
		return []any{p + "id IN (", g.userKeys(3 + g.r.IntN(10)), ")"}, false
	case 4:
		lo := g.userKey()
		return []any{p + "id BETWEEN ", intLit(lo), " AND ", intLit(lo + 20 + g.r.IntN(150))}, false
	}
	return []any{p + "born < ", dateLit(randDate(g.r))}, false
}

func (g *Generator) orderFilter(p string) ([]any, bool) {
	if g.r.IntN(zeroOdds) == 0 {
		return []any{p + "amount > ", intLit(99999)}, true
	}
	switch g.r.IntN(4) {
	case 0:
		return []any{p + "amount > ", decimal(g.r, 4, 2)}, false
	case 1:
		return []any{p + "status <> ", strLit(pick(g.r, statuses))}, false
	case 2:
		return []any{p + "user_id IN (", g.userKeys(3 + g.r.IntN(10)), ")"}, false
	}
	return []any{p + "order_no <= ", intLit(1 + g.r.IntN(ordersPerUser))}, false
}

func (g *Generator) eventFilter(p string) ([]any, bool) {
	if g.r.IntN(zeroOdds) == 0 {
		return []any{p + "id > ", intLit(1 << 30)}, true
	}
	switch g.r.IntN(3) {
	case 0:
		return []any{p + "kind = ", strLit(caseVariant(g.r, pick(g.r, []string{"click", "view", "buy"})))}, false
	case 1:
		return []any{p + "amount < ", decimal(g.r, 3, 3)}, false
	}
	lo := g.eventKey()
	return []any{p + "id BETWEEN ", intLit(lo), " AND ", intLit(lo + 100 + g.r.IntN(900))}, false
}

func (g *Generator) logFilter(p string) ([]any, bool) {
	if g.r.IntN(zeroOdds) == 0 {
		return []any{p + "seq > ", intLit(1 << 30)}, true
	}
	if g.r.IntN(2) == 0 {
		return []any{p + "level >= ", intLit(g.r.IntN(8))}, false
	}
	return []any{p + "day >= ", dateLit(randDate(g.r))}, false
}

func (g *Generator) tagFilter(p string) ([]any, bool) {
	if g.r.IntN(zeroOdds) == 0 {
		return []any{p + "uses > ", intLit(1000)}, true
	}
	return []any{p + "uses > ", intLit(g.r.IntN(40))}, false
}

// mstmt collects a merge statement: its builder, its constructs and the
// columns compared under the collation.
type mstmt struct {
	b      *builder
	tags   []string
	fold   []int
	foldAs []string // the collation of each of fold
	order  bool     // the ORDER BY is total
}

// foldAt compares column i under collation coll ("": as it is).
func (m *mstmt) foldAt(i int, coll string) {
	if coll != "" && coll != nopadBin {
		m.fold = append(m.fold, i)
		m.foldAs = append(m.foldAs, coll)
	}
}

func newMstmt() *mstmt { return &mstmt{b: new(builder)} }

func (m *mstmt) add(parts ...any) *mstmt { m.b.add(parts...); return m }

func (m *mstmt) tag(tags ...string) {
	for _, t := range tags {
		if !slices.Contains(m.tags, t) {
			m.tags = append(m.tags, t)
		}
	}
}

// done is the statement: refusable (a 1235 for a merge not built yet is
// counted, not a difference).
func (m *mstmt) done() Statement {
	st := m.b.stmt("")
	st.Ordered, st.Refusable, st.Constructs, st.Fold, st.FoldAs = m.order, true, m.tags, m.fold, m.foldAs
	return st
}

// prefixFor is how a statement names t's columns: bare, through its
// alias, or through the table's name.
type naming struct {
	from   string // the FROM item
	prefix string // "", "u.", "sf_user."
}

func (g *Generator) naming(t *mtable) naming {
	switch g.r.IntN(4) {
	case 0:
		return naming{t.name, ""}
	case 1:
		return naming{t.name, t.name + "."}
	case 2:
		return naming{t.name + " AS " + t.alias, t.alias + "."}
	}
	return naming{t.name + " " + t.alias, t.alias + "."}
}

// where adds a WHERE clause half the time.
func (g *Generator) where(m *mstmt, t *mtable, p string) {
	if g.r.IntN(2) == 0 {
		return
	}
	parts, zero := t.filter(g, p)
	m.add(" WHERE ").add(parts...)
	if zero {
		m.tag(cZeroRows)
	}
}

// limit adds LIMIT n, LIMIT off, n or LIMIT n OFFSET off; the numbers
// are placeholders in the prepared form half the time.
func (g *Generator) limit(m *mstmt, deep bool) { m.add(g.limitParts(m, deep)...) }

// limitParts is the LIMIT limit adds, as parts of a builder, its
// constructs tagged on m.
func (g *Generator) limitParts(m *mstmt, deep bool) []any {
	n := 1 + g.r.IntN(12)
	num := func(v int) any {
		if g.r.IntN(2) == 0 {
			return intLit(v)
		}
		return strconv.Itoa(v)
	}
	m.tag(cLimit)
	if g.r.IntN(2) == 0 {
		return []any{" LIMIT ", num(n)}
	}
	off := g.r.IntN(20)
	if deep {
		off = g.r.IntN(300)
	}
	m.tag(cLimitOffset)
	if g.r.IntN(2) == 0 {
		return []any{" LIMIT ", num(off), ", ", num(n)}
	}
	return []any{" LIMIT ", num(n), " OFFSET ", num(off)}
}

// ---- ORDER BY across shards ----

// selItem is one item of a select list.
type selItem struct {
	expr  string // as written in the select list (no literals)
	col   string // the column it is, "" for an expression
	typ   colType
	alias string
}

// orderExprs are expressions of a column a statement may select or sort
// by; "%s" is the column with its prefix.
func orderExpr(c column) string {
	switch c.typ {
	case ctInt:
		return pick2(c.name, "-%s", "COALESCE(%s, -1) * 2")
	case ctDec:
		return pick2(c.name, "%s * 2", "ABS(%s)")
	case ctDouble:
		return "-%s"
	case ctStr:
		return pick2(c.name, "LOWER(%s)", "CONCAT(%s, 'x')")
	case ctDate, ctDatetime:
		return pick2(c.name, "YEAR(%s)", "DAYOFMONTH(%s)")
	}
	return "%s"
}

// pick2 picks one of two forms by the column's name, so that a column's
// expression is the same wherever a statement uses it.
func pick2(name, a, b string) string {
	if len(name)%2 == 0 {
		return a
	}
	return b
}

// mergeOrder is a read of one sharded table sorted by a total ORDER BY
// (leading keys, then the unique key), each key spelled as a column, a
// qualified column, a select-list alias, a position or an expression,
// ASC or DESC, with and without LIMIT and OFFSET.
func (g *Generator) mergeOrder() Statement {
	t := pick(g.r, mergeTables)
	nm := g.naming(t)
	m := newMstmt()
	m.order = true
	m.tag(cOrderBy)
	// the select list: some columns, maybe aliased, maybe an expression
	var items []selItem
	for _, i := range g.r.Perm(len(t.cols))[:1+g.r.IntN(min(4, len(t.cols)))] {
		c := t.cols[i]
		it := selItem{expr: nm.prefix + c.name, col: c.name, typ: c.typ}
		if g.r.IntN(3) == 0 {
			it.alias = fmt.Sprintf("c%d", len(items)+1)
		}
		items = append(items, it)
	}
	if g.r.IntN(3) == 0 {
		c := pick(g.r, t.cols)
		items = append(items, selItem{expr: fmt.Sprintf(orderExpr(c), nm.prefix+c.name), typ: c.typ, alias: fmt.Sprintf("x%d", len(items)+1)})
	}
	m.add("SELECT " + g.selectOption())
	for i, it := range items {
		if i > 0 {
			m.add(", ")
		}
		m.add(it.expr)
		if it.alias != "" {
			m.add(" AS " + it.alias)
		}
	}
	m.add(" FROM " + nm.from)
	g.where(m, t, nm.prefix)
	// leading keys, then the unique key
	var keys []string
	for range g.r.IntN(3) {
		c := pick(g.r, t.cols)
		switch g.r.IntN(3) {
		case 0: // an expression, selected or not
			if it := items[len(items)-1]; it.col == "" {
				keys = append(keys, g.orderKey(m, it, nm, len(items)))
			} else {
				m.tag(cOrderExpr)
				keys = append(keys, fmt.Sprintf(orderExpr(c), nm.prefix+c.name))
			}
		default:
			keys = append(keys, g.orderKeyCol(m, items, c, nm))
		}
	}
	for _, k := range t.key {
		keys = append(keys, g.orderKeyCol(m, items, t.col(k), nm))
	}
	if len(keys) > 1 {
		m.tag(cOrderMulti)
	}
	m.add(" ORDER BY ")
	for i, k := range keys {
		if i > 0 {
			m.add(", ")
		}
		m.add(k)
		if g.r.IntN(3) == 0 {
			m.add(" DESC")
			m.tag(cOrderDesc)
		} else if g.r.IntN(4) == 0 {
			m.add(" ASC")
		}
	}
	if g.r.IntN(3) > 0 {
		g.limit(m, true)
	}
	return m.done()
}

// orderKeyCol spells column c as an ORDER BY key: by the select item that
// is it (alias, position, the item's spelling) or as a column, qualified
// or not, or an expression of it (leading keys only get expressions; the
// caller ends with the unique key's columns).
func (g *Generator) orderKeyCol(m *mstmt, items []selItem, c column, nm naming) string {
	for i, it := range items {
		if it.col == c.name {
			return g.orderKey(m, it, nm, i+1)
		}
	}
	if nm.prefix != "" && g.r.IntN(2) == 0 {
		m.tag(cOrderQual)
		return nm.prefix + c.name
	}
	return c.name
}

func (g *Generator) orderKey(m *mstmt, it selItem, nm naming, pos int) string {
	switch g.r.IntN(4) {
	case 0:
		if it.alias != "" {
			m.tag(cOrderAlias)
			return it.alias
		}
	case 1:
		m.tag(cOrderPos)
		return strconv.Itoa(pos)
	}
	if it.col == "" {
		m.tag(cOrderExpr)
	} else if nm.prefix != "" {
		m.tag(cOrderQual)
	}
	return it.expr
}

// mergeLimitAny is a LIMIT without ORDER BY: any rows will do, so the
// answer is checked against the rows of the statement without LIMIT.
func (g *Generator) mergeLimitAny() Statement {
	t := pick(g.r, mergeTables)
	nm := g.naming(t)
	build := func(withLimit bool, lim func(m *mstmt)) *mstmt {
		m := newMstmt()
		m.tag(cLimitAny)
		m.add("SELECT ")
		for i, c := range t.cols[:2] {
			if i > 0 {
				m.add(", ")
			}
			m.add(nm.prefix + c.name)
		}
		m.add(" FROM " + nm.from)
		if withLimit {
			lim(m)
		}
		return m
	}
	// the same random choices for both forms: draw them once
	n, off, form := 1+g.r.IntN(10), g.r.IntN(30), g.r.IntN(3)
	lim := func(m *mstmt) {
		switch form {
		case 0:
			m.add(" LIMIT ", intLit(n))
		case 1:
			m.tag(cLimitOffset)
			m.add(" LIMIT ", intLit(off), ", ", intLit(n))
		default:
			m.tag(cLimitOffset)
			m.add(" LIMIT " + strconv.Itoa(n) + " OFFSET " + strconv.Itoa(off))
		}
	}
	st := build(true, lim).done()
	full := build(false, lim).done()
	st.Superset = &full
	return st
}

// ---- GROUP BY and aggregates ----

// groupKey is a GROUP BY key: a column or an expression of one.
type groupKey struct {
	expr string
	coll string // a string's collation: its spelling is any of the group's
}

func (g *Generator) groupKeys(t *mtable, p string) []groupKey {
	var ks []groupKey
	byTable := map[string][]groupKey{
		tUser:  {{p + "city_id", ""}, {p + "name", generalCIName}, {"YEAR(" + p + "born)", ""}, {p + "city_id % 3", ""}},
		tOrder: {{p + "status", generalCIName}, {p + "order_no", ""}, {p + "user_id", ""}, {p + "note", generalCIName}},
		tEvent: {{p + "kind", generalCIName}, {"FLOOR(" + p + "id / 100)", ""}},
		tLog:   {{p + "level", ""}, {"MONTH(" + p + "day)", ""}, {p + "seq", ""}},
		tTag:   {{p + "uses % 5", ""}, {"YEAR(" + p + "updated)", ""}},
		tMember: {{p + "city", "utf8mb4_unicode_520_ci"}, {p + "code", "utf8mb4_bin"}, {p + "nick", "latin1_swedish_ci"},
			{p + "tag", ""}, {p + "age % 4", ""}, {"YEAR(" + p + "seen)", ""}, {"UPPER(" + p + "name)", "utf8mb4_unicode_ci"}},
		// the reference and the unsharded table, for the evaluated
		// statements (gen_eval.go)
		tCity: {{p + "country", generalCIName}, {p + "id % 4", ""}},
		tNote: {{"YEAR(" + p + "created)", ""}, {p + "body", generalCIName}},
	}
	all := byTable[t.name]
	for _, i := range g.r.Perm(len(all))[:1+g.r.IntN(min(2, len(all)))] {
		ks = append(ks, all[i])
	}
	return ks
}

// aggregate is one aggregate item: its SQL, whether its value is a _ci
// string (MIN/MAX of one) and its constructs.
type aggregate struct {
	expr string
	coll string // the collation of a string value (MIN/MAX of one)
	tags []string
}

// aggregate returns an aggregate a statement on t may select, its
// columns prefixed by p.
func (g *Generator) aggregate(t *mtable, p string) aggregate {
	var nums, ints, strs, all []string
	colls := map[string]string{}
	for _, c := range t.cols {
		all = append(all, p+c.name)
		colls[p+c.name] = c.collation()
		switch c.typ {
		case ctInt:
			nums, ints = append(nums, p+c.name), append(ints, p+c.name)
		case ctDec:
			nums = append(nums, p+c.name)
		case ctStr:
			strs = append(strs, p+c.name)
		}
	}
	uniq := ""
	for i, k := range t.key {
		if i > 0 {
			uniq += ", "
		}
		uniq += p + k
	}
	switch g.r.IntN(14) {
	case 0:
		return aggregate{expr: "COUNT(*)", tags: []string{cCountStar}}
	case 1:
		return aggregate{expr: "COUNT(" + pick(g.r, all) + ")", tags: []string{cCountCol}}
	case 2:
		return aggregate{expr: "SUM(" + pick(g.r, nums) + ")", tags: []string{cSum}}
	case 3:
		c := pick(g.r, all)
		return aggregate{expr: pick(g.r, []string{"MIN", "MAX"}) + "(" + c + ")", coll: colls[c], tags: []string{cMinMax}}
	case 4:
		if len(strs) > 0 {
			c := pick(g.r, strs)
			return aggregate{expr: pick(g.r, []string{"MIN", "MAX"}) + "(" + c + ")", coll: colls[c], tags: []string{cMinMax}}
		}
		return aggregate{expr: "MAX(" + pick(g.r, nums) + ")", tags: []string{cMinMax}}
	case 5:
		return aggregate{expr: "AVG(" + pick(g.r, nums) + ")", tags: []string{cAvg}}
	case 6:
		return aggregate{expr: "COUNT(DISTINCT " + pick(g.r, all) + ")", tags: []string{cCountDist}}
	case 7:
		return aggregate{expr: "SUM(DISTINCT " + pick(g.r, nums) + ")", tags: []string{cSumDist}}
	case 8:
		// ordered by the value, then the unique key: a total order, so the
		// string is determined even where _ci values tie
		dir := pick(g.r, []string{"", " DESC"})
		sep := pick(g.r, []string{"", " SEPARATOR '|'", " SEPARATOR ''", " SEPARATOR ', '"})
		if g.r.IntN(3) == 0 {
			c := "ABS(" + pick(g.r, ints) + ") % 7"
			return aggregate{expr: "GROUP_CONCAT(DISTINCT " + c + " ORDER BY " + c + dir + sep + ")", tags: []string{cGroupConcat}}
		}
		c := pick(g.r, all)
		return aggregate{expr: "GROUP_CONCAT(" + c + " ORDER BY " + c + dir + ", " + uniq + sep + ")", tags: []string{cGroupConcat}}
	case 9:
		return aggregate{expr: pick(g.r, []string{"BIT_AND", "BIT_OR", "BIT_XOR"}) + "(" + pick(g.r, ints) + ")", tags: []string{cBitAgg}}
	case 10:
		a, b := pick(g.r, nums), pick(g.r, nums)
		return aggregate{expr: "SUM(" + a + ") - SUM(" + b + ")", tags: []string{cAggExpr, cSum}}
	case 11:
		return aggregate{expr: "COUNT(*) * 2", tags: []string{cAggExpr, cCountStar}}
	case 12:
		a := pick(g.r, nums)
		return aggregate{expr: "MAX(" + a + ") - MIN(" + a + ")", tags: []string{cAggExpr, cMinMax}}
	}
	a := pick(g.r, nums)
	return aggregate{expr: "SUM(" + a + ") / COUNT(*)", tags: []string{cAggExpr, cSum, cCountStar}}
}

// having is a HAVING condition on an aggregate, selected or not, with a
// literal that is a placeholder in the prepared form.
func (g *Generator) having(t *mtable, p string, aliases []string) []any {
	if len(aliases) > 0 && g.r.IntN(3) == 0 {
		return []any{pick(g.r, aliases) + " IS NOT NULL AND COUNT(*) > ", intLit(g.r.IntN(3))}
	}
	var nums []string
	for _, c := range t.cols {
		if c.typ == ctInt || c.typ == ctDec {
			nums = append(nums, p+c.name)
		}
	}
	switch g.r.IntN(4) {
	case 0:
		return []any{"COUNT(*) > ", intLit(g.r.IntN(6))}
	case 1:
		return []any{"SUM(" + pick(g.r, nums) + ") > ", decimal(g.r, 3, 1)}
	case 2:
		return []any{"COUNT(DISTINCT " + pick(g.r, nums) + ") >= ", intLit(1 + g.r.IntN(3))}
	}
	return []any{"MIN(" + pick(g.r, nums) + ") < ", intLit(g.r.IntN(100))}
}

// mergeGroup is GROUP BY with aggregates: keys as columns, expressions,
// aliases or positions; HAVING; ORDER BY the keys, or an aggregate then
// the keys (top-N) with LIMIT; or no ORDER BY (compared as a multiset).
func (g *Generator) mergeGroup() Statement {
	t := pick(g.r, mergeTables)
	nm := g.naming(t)
	m := newMstmt()
	m.tag(cGroupBy)
	keys := g.groupKeys(t, nm.prefix)
	m.add("SELECT " + g.selectOption())
	var spelled []string // the keys as GROUP BY and ORDER BY may name them
	for i, k := range keys {
		if i > 0 {
			m.add(", ")
		}
		m.add(k.expr)
		if k.coll != "" {
			m.foldAt(i, k.coll)
			m.tag(cGroupCI)
		}
		switch g.r.IntN(4) {
		case 0:
			alias := fmt.Sprintf("k%d", i+1)
			m.add(" AS " + alias)
			spelled = append(spelled, alias)
		case 1:
			spelled = append(spelled, strconv.Itoa(i+1))
		default:
			spelled = append(spelled, k.expr)
		}
	}
	// aliases name aggregates; orderable those a merge can order by (not
	// a GROUP_CONCAT, whose collation the proxy does not know).
	var aliases, orderable []string
	for j := range 1 + g.r.IntN(4) {
		a := g.aggregate(t, nm.prefix)
		m.tag(a.tags...)
		m.add(", " + a.expr)
		m.foldAt(len(keys)+j, a.coll)
		if g.r.IntN(3) == 0 {
			alias := fmt.Sprintf("a%d", j+1)
			m.add(" AS " + alias)
			aliases = append(aliases, alias)
			if !slices.Contains(a.tags, cGroupConcat) {
				orderable = append(orderable, alias)
			}
		}
	}
	m.add(" FROM " + nm.from)
	g.where(m, t, nm.prefix)
	m.add(" GROUP BY ")
	for i, s := range spelled {
		if i > 0 {
			m.add(", ")
		}
		m.add(s)
	}
	if g.r.IntN(3) == 0 {
		m.tag(cHaving)
		m.add(" HAVING ").add(g.having(t, nm.prefix, aliases)...)
	}
	switch g.r.IntN(3) {
	case 0: // no ORDER BY: a multiset
	case 1:
		m.order = true
		m.tag(cOrderBy)
		m.add(" ORDER BY ")
		g.keysOrder(m, spelled)
		if g.r.IntN(2) == 0 {
			g.limit(m, false)
		}
	default:
		m.order = true
		m.tag(cOrderBy, cTopN)
		m.add(" ORDER BY ")
		if len(orderable) > 0 && g.r.IntN(2) == 0 {
			m.add(pick(g.r, orderable))
		} else {
			a := g.aggregate(t, nm.prefix)
			for slices.Contains(a.tags, cGroupConcat) {
				a = g.aggregate(t, nm.prefix)
			}
			m.tag(a.tags...)
			m.add(a.expr)
		}
		m.add(pick(g.r, []string{" DESC", "", " ASC"}), ", ")
		g.keysOrder(m, spelled)
		g.limit(m, false)
	}
	return m.done()
}

// keysOrder adds the group keys as ORDER BY keys, each ASC or DESC.
func (g *Generator) keysOrder(m *mstmt, spelled []string) {
	for i, s := range spelled {
		if i > 0 {
			m.add(", ")
		}
		m.add(s)
		if g.r.IntN(3) == 0 {
			m.tag(cOrderDesc)
			m.add(" DESC")
		}
	}
	if len(spelled) > 1 {
		m.tag(cOrderMulti)
	}
}

// mergeAggregate is aggregates without GROUP BY: one row, also over no
// rows at all (COUNT 0, SUM NULL).
func (g *Generator) mergeAggregate() Statement {
	t := pick(g.r, mergeTables)
	nm := g.naming(t)
	m := newMstmt()
	m.order = true // one row
	m.tag(cAggNoGroup)
	m.add("SELECT ")
	for j := range 1 + g.r.IntN(5) {
		if j > 0 {
			m.add(", ")
		}
		a := g.aggregate(t, nm.prefix)
		m.tag(a.tags...)
		m.add(a.expr)
		m.foldAt(j, a.coll)
	}
	m.add(" FROM " + nm.from)
	if g.r.IntN(4) == 0 {
		parts, _ := t.filter(g, nm.prefix)
		m.add(" WHERE (").add(parts...).add(") AND " + nm.prefix + t.key[0] + " IS NULL")
		m.tag(cZeroRows)
	} else {
		g.where(m, t, nm.prefix)
	}
	if g.r.IntN(5) == 0 {
		m.tag(cHaving)
		m.add(" HAVING COUNT(*) > ", intLit(g.r.IntN(50)))
	}
	return m.done()
}

// ---- DISTINCT, UNION ----

// mergeDistinct is SELECT DISTINCT of one or two columns, sorted by them
// (total: distinct rows), or not, or with a LIMIT and no order (checked
// against the rows without LIMIT).
func (g *Generator) mergeDistinct() Statement {
	t := pick(g.r, mergeTables)
	nm := g.naming(t)
	cols := g.r.Perm(len(t.cols))[:1+g.r.IntN(2)]
	form, desc := g.r.IntN(3), g.r.IntN(2) == 0
	n := 1 + g.r.IntN(8)
	filter, zero := t.filter(g, nm.prefix)
	withWhere := g.r.IntN(2) == 0
	build := func(limit bool) *mstmt {
		m := newMstmt()
		m.tag(cDistinct)
		m.add("SELECT DISTINCT ")
		for i, ci := range cols {
			if i > 0 {
				m.add(", ")
			}
			c := t.cols[ci]
			m.add(nm.prefix + c.name)
			m.foldAt(i, c.collation())
		}
		m.add(" FROM " + nm.from)
		if withWhere {
			m.add(" WHERE ").add(filter...)
			if zero {
				m.tag(cZeroRows)
			}
		}
		switch {
		case form == 1:
			m.order = true
			m.tag(cOrderBy)
			m.add(" ORDER BY ")
			for i, ci := range cols {
				if i > 0 {
					m.add(", ")
				}
				m.add(t.cols[ci].name)
				if desc {
					m.tag(cOrderDesc)
					m.add(" DESC")
				}
			}
			if limit {
				m.tag(cLimit)
				m.add(" LIMIT ", intLit(n))
			}
		case form == 2 && limit:
			m.tag(cLimitAny)
			m.add(" LIMIT ", intLit(n))
		}
		return m
	}
	st := build(true).done()
	if form == 2 {
		full := build(false).done()
		st.Superset = &full
	}
	return st
}

// unionBranches are the SELECTs a UNION combines: two columns, an INT
// (named first) and a _ci string, of a sharded table or the reference
// table, and a condition to complete with a number.
var unionBranches = []struct {
	sql, first string
	dec        bool // the condition's number is a DECIMAL
}{
	{"SELECT id, name FROM sf_user WHERE balance > ", "id", true},
	{"SELECT user_id, status FROM sf_order WHERE amount > ", "user_id", true},
	{"SELECT id, kind FROM sf_event WHERE amount > ", "id", true},
	{"SELECT seq, msg FROM sf_log WHERE level > ", "seq", false},
	{"SELECT uses, name FROM sf_tag WHERE uses > ", "uses", false},
	{"SELECT id, name FROM sf_city WHERE id > ", "id", false},
}

// mergeUnion is UNION or UNION ALL of two or three branches, sorted by
// both columns (by position or the first branch's name, maybe with a
// LIMIT) or not. The string column is compared under its collation: a
// UNION keeps any one spelling of equal strings, and in an ordered UNION
// ALL rows with equal strings tie.
func (g *Generator) mergeUnion() Statement {
	m := newMstmt()
	op := " UNION "
	if g.r.IntN(2) == 0 {
		op = " UNION ALL "
		m.tag(cUnionAll)
	} else {
		m.tag(cUnion)
	}
	m.fold = []int{1}
	perm := g.r.Perm(len(unionBranches))[:2+g.r.IntN(2)]
	for i, bi := range perm {
		br := unionBranches[bi]
		if i > 0 {
			m.add(op)
		}
		if br.dec {
			m.add(br.sql, decimal(g.r, 3, 1))
		} else {
			m.add(br.sql, intLit(g.r.IntN(8)))
		}
	}
	if g.r.IntN(2) == 0 {
		m.order = true
		m.tag(cOrderBy, cOrderMulti)
		first := pick(g.r, []string{"1", unionBranches[perm[0]].first})
		if g.r.IntN(2) == 0 {
			m.add(" ORDER BY 2, " + first)
		} else {
			m.tag(cOrderDesc)
			m.add(" ORDER BY " + first + " DESC, 2")
		}
		if g.r.IntN(2) == 0 {
			g.limit(m, false)
		}
	}
	return m.done()
}

// ---- co-located joins and subqueries ----

// joinFroms are sf_user and sf_order joined on the shard key in either
// FROM order and spelling; where says whether the join's condition is
// already in a WHERE clause.
var joinFroms = []struct {
	from  string
	where bool
}{
	{"sf_user u JOIN sf_order o ON o.user_id = u.id", false},
	{"sf_order o JOIN sf_user u ON u.id = o.user_id", false},
	{"sf_order AS o INNER JOIN sf_user AS u ON o.user_id = u.id", false},
	{"sf_user u LEFT JOIN sf_order o ON o.user_id = u.id", false},
	{"sf_order o, sf_user u WHERE u.id = o.user_id", true},
}

// mergeJoin joins sf_user and sf_order on the shard key over every shard,
// maybe with the reference table: sorted by a total order, grouped, or as
// a multiset.
func (g *Generator) mergeJoin() Statement {
	m := newMstmt()
	m.tag(cJoinKey)
	jf := pick(g.r, joinFroms)
	from, cond := jf.from, " WHERE "
	if jf.where {
		cond = " AND "
	}
	withCity := g.r.IntN(3) == 0
	if withCity {
		m.tag(cJoinRef)
		if jf.where {
			from = "sf_city c, " + from + " AND c.id = u.city_id"
		} else {
			from += pick(g.r, []string{" JOIN sf_city c ON c.id = u.city_id", " LEFT JOIN sf_city c ON c.id = u.city_id"})
		}
	}
	amount := decimal(g.r, 3, 1)
	switch g.r.IntN(3) {
	case 0: // rows in a total order
		m.order = true
		m.tag(cOrderBy, cOrderMulti)
		m.add("SELECT u.id, u.name, o.order_no, o.amount")
		if withCity {
			m.add(", c.country")
		}
		m.add(" FROM "+from+cond+"(u.balance IS NULL OR o.amount > ", amount, ")")
		switch g.r.IntN(3) {
		case 0:
			m.tag(cOrderQual, cOrderDesc)
			m.add(" ORDER BY o.amount DESC, u.id, o.order_no")
		case 1:
			m.tag(cOrderQual, cOrderDesc)
			m.add(" ORDER BY u.name, u.id, o.order_no DESC")
		default:
			m.tag(cOrderPos)
			m.add(" ORDER BY 4, 1, 3")
		}
		if g.r.IntN(2) == 0 {
			g.limit(m, true)
		}
	case 1: // grouped
		m.tag(cGroupBy, cSum, cCountCol, cMinMax)
		key := pick(g.r, []string{"u.city_id", "o.status", "u.id"})
		if withCity && g.r.IntN(2) == 0 {
			key = "c.country"
		}
		if key == "o.status" || key == "c.country" {
			m.fold = []int{0}
			m.tag(cGroupCI)
		}
		m.add("SELECT "+key+", COUNT(o.order_no), SUM(o.amount), MAX(u.balance) FROM "+from+cond+"o.amount > ", amount)
		m.add(" GROUP BY " + key)
		if g.r.IntN(2) == 0 {
			m.tag(cHaving)
			m.add(" HAVING COUNT(o.order_no) > ", intLit(g.r.IntN(4)))
		}
		if g.r.IntN(2) == 0 {
			m.order = true
			m.tag(cOrderBy, cTopN)
			m.add(" ORDER BY SUM(o.amount) DESC, " + key)
			g.limit(m, false)
		}
	default: // a multiset
		m.add("SELECT u.id, o.order_no, o.status FROM "+from+cond+"o.status = ", strLit(pick(g.r, statuses)))
	}
	return m.done()
}

// mergeSubquery is a subquery co-located with its outer table (IN and
// EXISTS on the shard key, a scalar subquery per row, a derived table
// grouped by the shard key), over every shard.
func (g *Generator) mergeSubquery() Statement {
	m := newMstmt()
	amount := decimal(g.r, 3, 1)
	switch g.r.IntN(8) {
	case 6:
		m.tag(cSubExists, cOrderBy, cOrderQual, cOrderDesc)
		m.order = true
		m.add("SELECT o.user_id, o.order_no FROM sf_order o WHERE EXISTS (SELECT 1 FROM sf_user u WHERE u.id = o.user_id AND u.balance > ", amount, ") ORDER BY o.user_id DESC, o.order_no")
		g.limit(m, true)
	case 7:
		m.tag(cSubScalar)
		m.add("SELECT u.id, u.name FROM sf_user u WHERE (SELECT SUM(o.amount) FROM sf_order o WHERE o.user_id = u.id) > ", amount)
	case 0:
		m.tag(cSubIn)
		m.add("SELECT id, name FROM sf_user WHERE id IN (SELECT user_id FROM sf_order WHERE amount > ", amount, ")")
		if g.r.IntN(2) == 0 {
			m.order = true
			m.tag(cOrderBy)
			m.add(" ORDER BY id DESC")
		}
	case 1:
		m.tag(cSubExists)
		not := pick(g.r, []string{"", "NOT "})
		m.add("SELECT u.id, u.balance FROM sf_user u WHERE "+not+"EXISTS (SELECT 1 FROM sf_order o WHERE o.user_id = u.id AND o.status = ", strLit(pick(g.r, statuses)), ")")
		m.order = true
		m.tag(cOrderBy, cOrderQual)
		m.add(" ORDER BY u.balance, u.id")
		if g.r.IntN(2) == 0 {
			g.limit(m, false)
		}
	case 2:
		m.tag(cSubScalar, cOrderBy, cOrderAlias, cLimit)
		m.order = true
		m.add("SELECT u.id, (SELECT COUNT(*) FROM sf_order o WHERE o.user_id = u.id) AS n FROM sf_user u ORDER BY n DESC, u.id LIMIT ", intLit(1+g.r.IntN(10)))
	case 3:
		m.tag(cDerived, cGroupBy, cSum)
		m.add("SELECT t.user_id, t.total FROM (SELECT user_id, SUM(amount) AS total FROM sf_order GROUP BY user_id) AS t WHERE t.total > ", amount)
		if g.r.IntN(2) == 0 {
			m.order = true
			m.tag(cOrderBy, cTopN)
			m.add(" ORDER BY t.total DESC, t.user_id")
			g.limit(m, false)
		}
	case 4:
		m.tag(cDerived, cGroupBy, cCountStar)
		m.add("SELECT d.city_id, COUNT(*) FROM (SELECT u.id, u.city_id FROM sf_user u WHERE u.balance > ", amount, ") AS d GROUP BY d.city_id")
	default:
		m.tag(cSubIn, cJoinRef, cGroupBy, cAvg)
		m.add("SELECT city_id, AVG(balance) FROM sf_user WHERE city_id IN (SELECT id FROM sf_city WHERE country = ", strLit(pick(g.r, countries)), ") GROUP BY city_id")
		if g.r.IntN(2) == 0 {
			m.order = true
			m.tag(cOrderBy)
			m.add(" ORDER BY city_id DESC")
		}
	}
	return m.done()
}

// crossShard needs rows of two shards together: a join not on the shard
// keys, of tables sharded differently, a subquery not co-located, which
// the proxy evaluates (issue 22): answered, never refused.
func (g *Generator) crossShard() Statement {
	m := newMstmt()
	m.tag(cCross)
	switch g.r.IntN(5) {
	case 0:
		m.add("SELECT u.id, o.order_no FROM sf_user u JOIN sf_order o ON o.order_no = u.city_id")
	case 1:
		m.add("SELECT u.id, t.name FROM sf_user u JOIN sf_tag t ON t.uses = u.id")
	case 2:
		m.add("SELECT e.id, l.seq FROM sf_event e JOIN sf_log l ON l.seq = e.id WHERE e.amount > ", decimal(g.r, 2, 1))
	case 3:
		m.add("SELECT id FROM sf_user WHERE city_id IN (SELECT user_id FROM sf_order WHERE amount > ", decimal(g.r, 3, 1), ")")
	default:
		m.add("SELECT u.id FROM sf_user u WHERE EXISTS (SELECT 1 FROM sf_order o WHERE o.user_id = u.city_id)")
	}
	st := m.done()
	st.Refusable = false
	return st
}

// selectOption is now and then a select option that changes neither rows
// nor columns; those a UNION takes in its first SELECT only test the
// UNION ALL a shard's sub-tables are read with.
func (g *Generator) selectOption() string {
	if g.r.IntN(8) != 0 {
		return ""
	}
	return pick(g.r, []string{"SQL_NO_CACHE ", "/*!40001 SQL_NO_CACHE */ ", "HIGH_PRIORITY ", "SQL_BUFFER_RESULT ",
		"SQL_SMALL_RESULT ", "SQL_CACHE "})
}
