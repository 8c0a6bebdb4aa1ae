package difftest

import (
	"fmt"
	"slices"
	"strconv"
)

// Issue 22's subqueries, derived tables and WITH queries (see
// gen_eval.go): the inner query reads another table along an edge, or
// needs every shard's rows (its GROUP BY, ORDER BY with LIMIT, DISTINCT,
// window function), and the outer rows come from a sharded table, the
// reference table or the unsharded one.

// ---- subqueries ----

// innerSide is the table a subquery reads along an edge from the outer
// side o: its side (an alias other than o's, so that o's columns stay
// visible inside), the outer and the inner expressions compared, and the
// edge's further condition on both.
type innerSide struct {
	s          side
	outerExpr  string
	innerExpr  string
	innerCol   column
	extra      string
	nullInside bool // the inner expression has NULLs
}

// innerAlong picks a table joined to o along an edge, for a subquery.
func (g *Generator) innerAlong(m *mstmt, o side) innerSide {
	f := &fromClause{sides: []side{o}}
	var ats []attachment
	for _, at := range attachments(f) {
		if subquerySafe(at) {
			ats = append(ats, at)
		}
	}
	at := pick(g.r, ats)
	e := at.e
	nt, col := e.b, e.cb
	if at.newIsA {
		nt, col = e.a, e.ca
	}
	is := f.newSide(evalTable(nt))
	pa, pb := o.p(), is.p()
	oe, ie := e.exprA(pa), e.exprB(pb)
	if at.newIsA {
		pa, pb = pb, pa
		oe, ie = e.exprB(o.p()), e.exprA(is.p())
	}
	m.tag(edgeTags(e)...)
	m.value(is.t, is.t.col(col))
	return innerSide{s: is, outerExpr: oe, innerExpr: ie, innerCol: is.t.col(col), extra: e.extraOn(pa, pb),
		nullInside: nullable(nt, col)}
}

// subquerySafe reports whether a subquery along at compares the outer
// row's value as one server answers it whatever the order it reads the
// rows in. MariaDB's subquery cache keeps a correlated subquery's result
// per value of the outer column, values equal under the column's
// collation being one ('o”brien ' and 'O”Brien' under
// utf8mb4_general_ci), so a subquery that sees more of the value than
// its collation does (CONCAT(u.name, ' city') keeps the trailing space;
// a _bin or other collation tells 'x' from 'X') gives every row of the
// class the answer of the first spelling read. An outer string is
// therefore compared only as the column itself under its own collation.
// (An IN or ANY is rewritten into a correlated EXISTS and cached the
// same way.)
func subquerySafe(at attachment) bool {
	e := at.e
	outerTable, outerCol, outerExpr := e.a, e.ca, e.ea
	if at.newIsA {
		outerTable, outerCol, outerExpr = e.b, e.cb, e.eb
	}
	if evalTable(outerTable).col(outerCol).typ != ctStr {
		return true
	}
	return outerExpr == "" && !slices.Contains(e.tags, cJoinColl)
}

// innerQuery is the subquery's SELECT of items over in's table, maybe
// filtered, correlated by the edge's further condition when it has one.
func (g *Generator) innerQuery(m *mstmt, in innerSide, items ...string) *query {
	iq := &query{from: []any{in.s.t.name + " " + in.s.alias}}
	for _, it := range items {
		iq.item(it)
	}
	if in.extra != "" {
		m.tag(cSubCorrelated)
		iq.cond(in.extra)
	}
	if g.r.IntN(2) == 0 {
		parts, zero := in.s.t.filter(g, in.s.p())
		iq.cond(parts...)
		if zero {
			m.tag(cZeroRows)
		}
	}
	return iq
}

// subPredicate is a condition on o's rows by a subquery: [NOT] IN
// (NULLs inside or not, the inner query merged across shards or not),
// [NOT] EXISTS correlated, ANY/SOME/ALL, a scalar subquery, correlated
// or not.
func (g *Generator) subPredicate(m *mstmt, o side) []any {
	k := g.r.IntN(50)
	if k < 15 {
		return g.inPredicate(m, o)
	}
	in := g.innerAlong(m, o)
	switch {
	case k < 26:
		m.tag(cSubCorrelated)
		not := ""
		if g.r.IntN(2) == 0 {
			not = "NOT "
			m.tag(cSubNotExists)
		} else {
			m.tag(cSubExists2)
		}
		iq := g.innerQuery(m, in, "1")
		iq.cond(in.innerExpr + " = " + in.outerExpr)
		return append([]any{not + "EXISTS "}, iq.sub()...)
	case k < 40:
		op := pick(g.r, []string{" = ", " <> ", " < ", " <= ", " > ", " >= "})
		kw := pick(g.r, []string{"ANY ", "SOME ", "ALL ", "ALL "})
		if kw == "ALL " {
			m.tag(cSubAll)
		} else {
			m.tag(cSubAny)
		}
		iq := g.innerQuery(m, in, in.innerExpr)
		return append([]any{in.outerExpr + op + kw}, iq.sub()...)
	case k < 46:
		m.tag(cSubScalar2, cSubInnerMerge)
		agg := pick(g.r, []string{"MIN", "MAX"})
		if t := in.innerCol.typ; (t == ctInt || t == ctDec) && g.r.IntN(2) == 0 {
			agg = "AVG"
		}
		iq := g.innerQuery(m, in, agg+"("+in.innerExpr+")")
		return append([]any{in.outerExpr + pick(g.r, []string{" < ", " >= ", " = ", " <> "})}, iq.sub()...)
	}
	m.tag(cSubScalar2, cSubCorrelated)
	iq := g.innerQuery(m, in, "COUNT(*)")
	iq.cond(in.innerExpr + " = " + in.outerExpr)
	return append(iq.sub(), pick(g.r, []string{" > ", " = ", " < "}), intLit(g.r.IntN(3)))
}

// inPredicate is [NOT] IN a subquery of a table along an edge from o:
// of the inner column as it is, of its values some rows share (GROUP BY
// … HAVING), or of the first rows in a total order (a derived table's
// LIMIT: MariaDB takes no LIMIT in an IN subquery itself). NOT IN over a
// NULL is never true: NOT IN prefers an inner column with NULLs, and
// keeps them four times in five.
func (g *Generator) inPredicate(m *mstmt, o side) []any {
	not := g.r.IntN(5) < 3
	in := g.innerAlong(m, o)
	for range 3 {
		if !not || in.nullInside {
			break
		}
		in = g.innerAlong(m, o)
	}
	op := " IN "
	if not {
		op = " NOT IN "
		m.tag(cSubNotIn)
	} else {
		m.tag(cSubIn2)
	}
	iq := g.innerQuery(m, in, in.innerExpr)
	if not && in.nullInside {
		if g.r.IntN(5) == 0 {
			iq.cond(in.innerExpr + " IS NOT NULL")
		} else {
			m.tag(cSubNotInNull)
		}
	}
	switch g.r.IntN(4) {
	case 0:
		m.tag(cSubInnerMerge, cGroupBy, cHaving)
		iq.group = []string{in.innerExpr}
		iq.having = []any{"COUNT(*) > ", intLit(g.r.IntN(3))}
	case 1:
		if in.extra == "" { // (a derived table cannot see the outer row)
			m.tag(cSubInnerMerge, cDerivedLimit)
			iq.items[0] = []any{in.innerExpr + " AS x"}
			iq.order = in.s.keys()
			if g.r.IntN(2) == 0 {
				iq.order = append([]string{in.innerExpr + pick(g.r, []string{"", " DESC"})}, iq.order...)
			}
			iq.limit = []any{" LIMIT ", intLit(1 + g.r.IntN(20))}
			d := &query{items: [][]any{{"d.x"}}, from: append(iq.sub(), " AS d")}
			return append([]any{in.outerExpr + op}, d.sub()...)
		}
	}
	return append([]any{in.outerExpr + op}, iq.sub()...)
}

// subItem adds a scalar subquery as a select item, correlated with o's
// row: a count, a sum, a MIN or MAX (whose _ci spelling is any of its
// ties: folded), or one row's value in a total order (LIMIT 1).
func (g *Generator) subItem(m *mstmt, q *query, o side) {
	m.tag(cSubItem, cSubScalar2, cSubCorrelated)
	in := g.innerAlong(m, o)
	var nums []column
	for _, c := range in.s.t.cols {
		if c.typ == ctInt || c.typ == ctDec {
			nums = append(nums, c)
		}
	}
	c := pick(g.r, in.s.t.cols)
	var expr, coll string
	switch g.r.IntN(4) {
	case 0:
		expr = "COUNT(*)"
	case 1:
		expr = "SUM(" + in.s.p() + pick(g.r, nums).name + ")"
	case 2:
		expr, coll = pick(g.r, []string{"MIN(", "MAX("})+in.s.p()+c.name+")", c.collation()
	}
	iq := g.innerQuery(m, in)
	iq.cond(in.innerExpr + " = " + in.outerExpr)
	if expr == "" {
		m.value(in.s.t, c)
		iq.item(in.s.p() + c.name)
		iq.order = in.s.keys()
		iq.limit = []any{" LIMIT 1"}
	} else {
		iq.item(expr)
	}
	pos := q.item(iq.sub()...)
	q.items[pos] = append(q.items[pos], fmt.Sprintf(" AS s%d", pos+1))
	m.foldAt(pos, coll)
}

// outerTable is the table whose rows a subquery statement reads: a
// quarter of the time the reference or the unsharded table, which
// shardgate would otherwise read on one shard or the default cluster.
func (g *Generator) outerTable(m *mstmt) *mtable {
	if g.r.IntN(4) == 0 {
		m.tag(cSubOuterLocal)
		return pick(g.r, []*mtable{cityTable, noteTable})
	}
	return pick(g.r, mergeTables)
}

// evalSubquery reads one table's rows under subqueries of another (one
// or two conditions, ANDed or ORed, and now and then a scalar subquery
// as a select item), in its key's order (total) or as a multiset; or
// groups them under a HAVING with a subquery.
func (g *Generator) evalSubquery() Statement {
	m := newMstmt()
	q := &query{}
	f := g.singleFrom(g.outerTable(m))
	o := f.sides[0]
	q.from = f.parts
	if g.r.IntN(6) == 0 {
		g.subqueryHaving(m, q, o)
		return g.evalDone(m, q)
	}
	for _, k := range o.keys() {
		q.item(k)
	}
	for range 1 + g.r.IntN(2) {
		c := pick(g.r, o.t.cols)
		m.value(o.t, c)
		q.item(o.p() + c.name)
	}
	conds := 1 + g.r.IntN(2)
	if g.r.IntN(4) == 0 {
		g.subItem(m, q, o)
		conds = g.r.IntN(2)
	}
	var pred []any
	for i := range conds {
		if i > 0 {
			pred = append(pred, pick(g.r, []string{" AND ", " OR "}))
		}
		pred = append(pred, g.subPredicate(m, o)...)
	}
	if len(pred) > 0 {
		q.cond(pred...)
	}
	if g.r.IntN(3) == 0 {
		parts, zero := o.t.filter(g, o.p())
		q.cond(parts...)
		if zero {
			m.tag(cZeroRows)
		}
	}
	if g.r.IntN(2) == 0 {
		m.order = true
		m.tag(cOrderBy)
		q.order = g.totalOrder(m, f)
		if g.r.IntN(2) == 0 {
			q.limit = g.limitParts(m, true)
		}
	}
	return g.evalDone(m, q)
}

// subqueryHaving groups o's rows and keeps the groups that a scalar
// subquery over another table's rows (all shards' of them) lets pass.
func (g *Generator) subqueryHaving(m *mstmt, q *query, o side) {
	m.tag(cGroupBy, cHaving, cSubScalar2, cSubInnerMerge)
	keys := g.groupKeys(o.t, o.p())
	for _, k := range keys {
		pos := q.item(k.expr)
		q.group = append(q.group, k.expr)
		m.foldAt(pos, k.coll)
	}
	q.item("COUNT(*)")
	in := g.innerAlong(m, o)
	in.extra = "" // (a group is not a row of the outer table: not correlated)
	iq := g.innerQuery(m, in, "COUNT(*)")
	q.having = append([]any{"COUNT(*) * " + strconv.Itoa(10+g.r.IntN(40)) + " > "}, iq.sub()...)
	if g.r.IntN(2) == 0 {
		m.order = true
		q.order = g.keysOrderList(m, q.group)
	}
}

// ---- derived tables and WITH queries ----

// dcol is a column of a derived table: its name, whether it is a number,
// the collation it is folded under when its spelling is any of a group's
// ("": none), its collation when it is a string (a MIN or MAX of it is
// folded), and the table column it is, for joins along edges.
type dcol struct {
	name    string
	num     bool
	fold    string
	strColl string
	src     *mtable
	col     string
}

// derived is a derived table's query and what its rows are.
type derived struct {
	q      *query
	cols   []dcol
	unique []string // columns no two rows share: a total order's end; nil: none
	// keep is the condition the outer query reads it under ("": its
	// own choice): a window's top-N per group.
	keep string
}

// colItem selects column c of s into d under a name no other column of d
// has (its own when free, so that edges still name it).
func (d *derived) colItem(s side, c column, fold string) {
	name := c.name
	src := s.t
	for d.has(name) {
		name += "_2"
		src = nil
	}
	d.q.item(s.p() + c.name + " AS " + name)
	d.cols = append(d.cols, dcol{name: name, num: c.typ == ctInt || c.typ == ctDec, fold: fold, strColl: c.collation(), src: src, col: c.name})
}

func (d *derived) has(name string) bool {
	return slices.ContainsFunc(d.cols, func(c dcol) bool { return c.name == name })
}

// derivedQuery is the inner query of a derived table or WITH query over
// a sharded table (or a join): grouped, its first rows in a total order,
// DISTINCT, numbered within partitions by a window function, or joined.
func (g *Generator) derivedQuery(m *mstmt) *derived {
	t := pick(g.r, mergeTables)
	switch k := g.r.IntN(20); {
	case k < 6:
		return g.derivedGrouped(m, t)
	case k < 9:
		return g.derivedTop(m, t)
	case k < 12:
		return g.derivedDistinct(m, t)
	case k < 16:
		return g.derivedWindow(m, t)
	}
	return g.derivedJoin(m)
}

// derivedGrouped groups t: its keys (plain columns keep their names),
// COUNT(*) AS n and an aggregate; maybe HAVING, maybe its top groups.
func (g *Generator) derivedGrouped(m *mstmt, t *mtable) *derived {
	m.tag(cDerivedGroup, cGroupBy)
	f := g.singleFrom(t)
	s := f.sides[0]
	d := &derived{q: &query{from: f.parts}}
	for i, k := range g.groupKeys(t, s.p()) {
		d.q.group = append(d.q.group, k.expr)
		if c, ok := plainColumn(s, k.expr); ok {
			d.colItem(s, c, k.coll)
		} else {
			name := fmt.Sprintf("k%d", i+1)
			d.q.item(k.expr + " AS " + name)
			d.cols = append(d.cols, dcol{name: name, num: k.coll == "", fold: k.coll, strColl: k.coll})
		}
		d.unique = append(d.unique, d.cols[len(d.cols)-1].name)
	}
	d.q.item("COUNT(*) AS n")
	d.cols = append(d.cols, dcol{name: "n", num: true})
	a := g.evalAggregate(s)
	m.tag(a.tags...)
	d.q.item(a.expr + " AS agg")
	d.cols = append(d.cols, dcol{name: "agg", fold: a.coll, strColl: a.coll})
	g.derivedWhere(m, d.q, s)
	if g.r.IntN(3) == 0 {
		m.tag(cHaving)
		d.q.having = g.having(t, s.p(), nil)
	}
	if g.r.IntN(3) == 0 {
		m.tag(cDerivedLimit, cTopN)
		d.q.order = append([]string{"COUNT(*)" + pick(g.r, []string{" DESC", ""})}, g.keysOrderList(m, d.q.group)...)
		d.q.limit = []any{" LIMIT ", intLit(1 + g.r.IntN(8))}
	}
	return d
}

// plainColumn reports whether expr is a column of s as it is.
func plainColumn(s side, expr string) (column, bool) {
	for _, c := range s.t.cols {
		if s.p()+c.name == expr {
			return c, true
		}
	}
	return column{}, false
}

func (g *Generator) derivedWhere(m *mstmt, q *query, s side) {
	if g.r.IntN(2) == 0 {
		parts, zero := s.t.filter(g, s.p())
		q.cond(parts...)
		if zero {
			m.tag(cZeroRows)
		}
	}
}

// derivedTop is t's first rows in a total order (its key last), with
// LIMIT and maybe OFFSET: the order and the LIMIT over all shards' rows.
func (g *Generator) derivedTop(m *mstmt, t *mtable) *derived {
	m.tag(cDerivedLimit)
	f := g.singleFrom(t)
	s := f.sides[0]
	d := &derived{q: &query{from: f.parts}}
	for _, k := range t.key {
		d.colItem(s, t.col(k), "")
		d.unique = append(d.unique, k)
	}
	for range 1 + g.r.IntN(2) {
		if c := pick(g.r, t.cols); !d.has(c.name) {
			m.value(t, c)
			d.colItem(s, c, "")
		}
	}
	g.derivedWhere(m, d.q, s)
	lead := pick(g.r, t.cols)
	d.q.order = append([]string{s.p() + lead.name + pick(g.r, []string{"", " DESC"})}, g.totalOrder(m, f)...)
	d.q.limit = []any{" LIMIT ", intLit(1 + g.r.IntN(15))}
	if g.r.IntN(3) == 0 {
		d.q.limit = append(d.q.limit, " OFFSET ", intLit(g.r.IntN(30)))
	}
	return d
}

// derivedDistinct is the distinct values of one or two columns of t
// (a _ci one folded: any spelling of it), maybe the first of them.
func (g *Generator) derivedDistinct(m *mstmt, t *mtable) *derived {
	m.tag(cDistinct)
	f := g.singleFrom(t)
	s := f.sides[0]
	d := &derived{q: &query{from: f.parts, distinct: true}}
	for _, i := range g.r.Perm(len(t.cols))[:1+g.r.IntN(2)] {
		c := t.cols[i]
		m.value(t, c)
		d.colItem(s, c, c.collation())
		d.unique = append(d.unique, d.cols[len(d.cols)-1].name)
	}
	g.derivedWhere(m, d.q, s)
	if g.r.IntN(3) == 0 {
		m.tag(cDerivedLimit)
		for _, c := range d.cols {
			d.q.order = append(d.q.order, c.name+pick(g.r, []string{"", " DESC"}))
		}
		d.q.limit = []any{" LIMIT ", intLit(1 + g.r.IntN(10))}
	}
	return d
}

// derivedWindow numbers t's rows within partitions of a column, in a
// total order: the outer query keeps the first of each (top-N per
// group).
func (g *Generator) derivedWindow(m *mstmt, t *mtable) *derived {
	m.tag(cDerivedWindow, cWinPartition, cWinOrder, cWinOffset)
	f := g.singleFrom(t)
	s := f.sides[0]
	d := &derived{q: &query{from: f.parts}}
	for _, k := range t.key {
		d.colItem(s, t.col(k), "")
		d.unique = append(d.unique, k)
	}
	part := pick(g.r, t.cols)
	if !d.has(part.name) {
		m.value(t, part)
		d.colItem(s, part, "")
	}
	lead := pick(g.r, t.cols)
	order := append([]string{s.p() + lead.name + pick(g.r, []string{"", " DESC"})}, g.totalOrder(m, f)...)
	fn := pick(g.r, []string{"ROW_NUMBER()", "RANK()", "DENSE_RANK()"})
	d.q.item(fn + " OVER (PARTITION BY " + s.p() + part.name + " ORDER BY " + joinList(order) + ") AS rn")
	d.cols = append(d.cols, dcol{name: "rn", num: true})
	d.keep = "d.rn <= " + strconv.Itoa(1+g.r.IntN(3))
	g.derivedWhere(m, d.q, s)
	return d
}

// derivedJoin is the rows of a join, its columns renamed apart.
func (g *Generator) derivedJoin(m *mstmt) *derived {
	m.tag(cDerivedJoined)
	f := g.joinFrom(m, 2+g.r.IntN(2), nil)
	d := &derived{q: &query{from: f.parts}}
	g.joinWhere(m, d.q, f)
	for range 2 + g.r.IntN(3) {
		s, c := g.pickCol(m, f)
		d.colItem(s, c, "")
	}
	return d
}

func joinList(xs []string) string {
	out := ""
	for i, x := range xs {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

// evalDerived reads a derived table or a WITH query (one, or two the
// second reading the first): its rows filtered, in a total order (maybe
// with LIMIT), joined with a table along an edge, aggregated, or as an
// IN list; a WITH query is also read twice, by a scalar subquery.
func (g *Generator) evalDerived() Statement {
	m := newMstmt()
	q := &query{}
	d := g.derivedQuery(m)
	cte := g.r.IntN(2) == 0
	if cte {
		m.tag(cCTE)
		q.with = append(append([]any{"WITH d AS "}, d.q.sub()...), " ")
		q.from = []any{"d"}
		if g.r.IntN(3) == 0 {
			d = g.secondCTE(m, q, d)
		}
	} else {
		m.tag(cDerived)
		q.from = append(d.q.sub(), " AS d")
	}
	switch g.r.IntN(5) {
	case 0:
		g.derivedJoined(m, q, d)
	case 1:
		m.order = true // one row
		m.tag(cAggNoGroup)
		q.item("COUNT(*)")
		for _, c := range d.cols {
			if g.r.IntN(2) == 0 {
				pos := q.item(pick(g.r, []string{"MIN(", "MAX("}) + "d." + c.name + ")")
				m.foldAt(pos, c.strColl)
			}
		}
	case 2:
		if g.derivedIn(m, q, d) {
			break
		}
		fallthrough
	default:
		g.derivedRows(m, q, d, cte)
	}
	return g.evalDone(m, q)
}

// secondCTE adds a WITH query e that reads d's rows under a condition,
// and returns e, which the statement reads.
func (g *Generator) secondCTE(m *mstmt, q *query, d *derived) *derived {
	m.tag(cCTESeveral)
	e := &derived{q: &query{from: []any{"d"}}, unique: d.unique}
	for _, c := range d.cols {
		e.q.item("d." + c.name)
		e.cols = append(e.cols, c)
	}
	if c, ok := numCol(d); ok {
		e.q.cond("d."+c.name+" >= ", intLit(g.r.IntN(3)))
	}
	q.with = append(append(q.with[:len(q.with)-1:len(q.with)-1], ", e AS "), e.q.sub()...)
	q.with = append(q.with, " ")
	q.from = []any{"e AS d"}
	return e
}

// numCol is a numeric column of d, if it has one.
func numCol(d *derived) (dcol, bool) {
	for _, c := range d.cols {
		if c.num {
			return c, true
		}
	}
	return dcol{}, false
}

// derivedRows selects d's columns (those whose spelling is a group's
// folded), maybe under a condition on a number (or, for a WITH query,
// against its own average: read twice), in a total order when d has
// one, with LIMIT; else a multiset, or a LIMIT checked against the rows
// without it.
func (g *Generator) derivedRows(m *mstmt, q *query, d *derived, cte bool) {
	for _, c := range d.cols {
		pos := q.item("d." + c.name)
		m.foldAt(pos, c.fold)
	}
	if d.keep != "" {
		q.cond(d.keep)
	} else if c, ok := numCol(d); ok && g.r.IntN(2) == 0 {
		if cte && g.r.IntN(2) == 0 {
			m.tag(cCTESeveral, cSubScalar2)
			q.cond("d." + c.name + " >= (SELECT AVG(d2." + c.name + ") FROM d AS d2)")
		} else {
			q.cond("d."+c.name+" > ", intLit(g.r.IntN(4)))
		}
	}
	switch {
	case d.unique != nil && g.r.IntN(2) == 0:
		m.order = true
		m.tag(cOrderBy)
		for _, u := range d.unique {
			q.order = append(q.order, "d."+u+pick(g.r, []string{"", " DESC"}))
		}
		if g.r.IntN(2) == 0 {
			q.limit = g.limitParts(m, false)
		}
	case g.r.IntN(4) == 0:
		q.limit = g.limitParts(m, false)
	}
}

// derivedJoined joins d with a table along an edge from one of d's
// columns that is a table's column; with none, d's rows as they are.
func (g *Generator) derivedJoined(m *mstmt, q *query, d *derived) {
	type way struct {
		e     *edge
		c     dcol
		other string
		isA   bool // d's column is the edge's a
	}
	var ways []way
	for i := range edges {
		e := &edges[i]
		for _, c := range d.cols {
			if c.src == nil || e.extra != "" { // (extra names other columns)
				continue
			}
			if c.src.name == e.a && c.col == e.ca {
				ways = append(ways, way{e, c, e.b, true})
			}
			if c.src.name == e.b && c.col == e.cb {
				ways = append(ways, way{e, c, e.a, false})
			}
		}
	}
	if len(ways) == 0 {
		g.derivedRows(m, q, d, false)
		return
	}
	w := pick(g.r, ways)
	m.tag(cDerivedJoined)
	m.tag(edgeTags(w.e)...)
	f := &fromClause{sides: []side{{&mtable{name: "d"}, "d"}}}
	t := f.newSide(evalTable(w.other))
	var on string
	if w.isA {
		on = w.e.exprA("d.") + " = " + w.e.exprB(t.p())
	} else {
		on = w.e.exprA(t.p()) + " = " + w.e.exprB("d.")
	}
	join := pick(g.r, []string{" JOIN ", " LEFT JOIN ", " RIGHT JOIN "})
	switch join {
	case " JOIN ":
		m.tag(cJoinInner)
	case " LEFT JOIN ":
		m.tag(cJoinLeft)
	default:
		m.tag(cJoinRight)
	}
	q.from = append(q.from, join+t.t.name+" "+t.alias+" ON "+on)
	if w.e.big {
		q.from = append(q.from, " AND ")
		q.from = append(q.from, g.narrowCond(t.t, t.p())...)
	}
	for _, c := range d.cols {
		pos := q.item("d." + c.name)
		m.foldAt(pos, c.fold)
	}
	for range 1 + g.r.IntN(2) {
		c := pick(g.r, t.t.cols)
		m.value(t.t, c)
		q.item(t.p() + c.name)
	}
	if d.unique != nil && g.r.IntN(2) == 0 {
		m.order = true
		m.tag(cOrderBy)
		for _, u := range d.unique {
			q.order = append(q.order, "d."+u)
		}
		q.order = append(q.order, t.keys()...)
		if g.r.IntN(2) == 0 {
			q.limit = g.limitParts(m, false)
		}
	}
}

// derivedIn reads a table's rows whose column is among d's values (IN or
// NOT IN the derived table's or the WITH query's column), in the table's
// key order; false when no edge leaves any of d's columns.
func (g *Generator) derivedIn(m *mstmt, q *query, d *derived) bool {
	for _, i := range g.r.Perm(len(edges)) {
		e := &edges[i]
		for _, c := range d.cols {
			if c.src == nil || e.extra != "" {
				continue
			}
			var other side
			var inner, outer string
			switch {
			case !subquerySafe(attachment{e: e, newIsA: c.src.name == e.a && c.col == e.ca}):
				continue // (the outer table is the edge's other end)
			case c.src.name == e.a && c.col == e.ca:
				other = side{evalTable(e.b), "x"}
				inner, outer = e.exprA("d."), e.exprB("x.")
			case c.src.name == e.b && c.col == e.cb:
				other = side{evalTable(e.a), "x"}
				inner, outer = e.exprB("d."), e.exprA("x.")
			default:
				continue
			}
			m.tag(cSubIn2, cSubInnerMerge)
			m.tag(edgeTags(e)...)
			sub := &query{items: [][]any{{inner}}, from: q.from} // the derived table or WITH query, read in the subquery
			q.from = []any{other.t.name + " x"}
			for _, k := range other.keys() {
				q.item(k)
			}
			c2 := pick(g.r, other.t.cols)
			m.value(other.t, c2)
			q.item(other.p() + c2.name)
			op := " IN "
			if g.r.IntN(3) == 0 {
				op = " NOT IN "
				m.tag(cSubNotIn)
				if c.src != nil && nullable(c.src.name, c.col) {
					m.tag(cSubNotInNull)
				}
			}
			q.cond(append([]any{outer + op}, sub.sub()...)...)
			m.order = true
			m.tag(cOrderBy)
			q.order = other.keys()
			return true
		}
	}
	return false
}
