package difftest

import "slices"

// Issue 22's groupings no merge answers (see gen_eval.go): GROUP BY …
// WITH ROLLUP, COUNT(DISTINCT a, b), and HAVING comparing strings or
// dates of several aggregates (which a merge refuses once it knows the
// columns' types, and shardgate then evaluates), over one sharded
// table's rows or a join's.

// evalGroup groups one table's rows or a join's WITH ROLLUP, by COUNT
// (DISTINCT a, b), or under a HAVING comparing aggregates of strings or
// dates.
func (g *Generator) evalGroup() Statement {
	m := newMstmt()
	q := &query{}
	var f *fromClause
	if g.r.IntN(4) == 0 {
		f = g.joinFrom(m, 2, nil)
		q.from = f.parts
		g.joinWhere(m, q, f)
	} else {
		f = g.singleFrom(pick(g.r, mergeTables))
		q.from = f.parts
		g.derivedWhere(m, q, f.sides[0])
	}
	switch k := g.r.IntN(10); {
	case k < 4:
		g.rollup(m, q, f)
	case k < 7:
		g.countDistinct(m, q, f)
	default:
		g.aggregatesCompared(m, q, f)
	}
	return g.evalDone(m, q)
}

// groupBy adds one or two group keys of f's sides as items (a _ci key
// folded), two when two asks for it and the tables have them.
func (g *Generator) groupBy(m *mstmt, q *query, f *fromClause, two bool) {
	m.tag(cGroupBy)
	s := pick(g.r, f.sides)
	for _, k := range g.groupKeys(s.t, s.p()) {
		pos := q.item(k.expr)
		q.group = append(q.group, k.expr)
		if k.coll != "" {
			m.foldAt(pos, k.coll)
			m.tag(cGroupCI)
		}
	}
	if len(q.group) == 1 && (two || len(f.sides) > 1 && g.r.IntN(2) == 0) {
		o := pick(g.r, f.sides)
		for _, k := range g.groupKeys(o.t, o.p()) {
			if !slices.Contains(q.group, k.expr) {
				pos := q.item(k.expr)
				q.group = append(q.group, k.expr)
				m.foldAt(pos, k.coll)
				break
			}
		}
	}
}

// rollup is GROUP BY … WITH ROLLUP: the groups, then a row per key
// prefix with NULL for the rest (as a NULL group key shows too). MariaDB
// takes no ORDER BY with it; a LIMIT takes the rows in the order it
// writes them, which is not promised: checked against the rows without
// it.
func (g *Generator) rollup(m *mstmt, q *query, f *fromClause) {
	m.tag(cRollup)
	g.groupBy(m, q, f, g.r.IntN(3) > 0)
	if len(q.group) > 1 {
		m.tag(cRollupTwo)
	}
	q.rollup = true
	aliases := g.aggregates(m, q, f, 1+g.r.IntN(3))
	if g.r.IntN(3) == 0 {
		m.tag(cHaving)
		s := pick(g.r, f.sides)
		q.having = g.having(s.t, s.p(), aliases)
	}
	if g.r.IntN(4) == 0 {
		q.limit = g.limitParts(m, false)
	}
}

// countDistinct counts the distinct combinations of two or three
// columns (a NULL in any leaves a row out, _ci strings count once per
// value of their collation), per group or over every row.
func (g *Generator) countDistinct(m *mstmt, q *query, f *fromClause) {
	grouped := g.r.IntN(3) > 0
	if grouped {
		g.groupBy(m, q, f, false)
	}
	q.item(g.countDistinctSeveral(m, f))
	if g.r.IntN(2) == 0 {
		g.aggregates(m, q, f, 1)
	}
	if !grouped {
		m.order = true // one row
		m.tag(cAggNoGroup)
		return
	}
	if g.r.IntN(4) == 0 {
		m.tag(cHaving)
		q.having = []any{"COUNT(*) > ", intLit(g.r.IntN(3))}
	}
	if g.r.IntN(2) == 0 {
		m.order = true
		m.tag(cOrderBy)
		q.order = g.keysOrderList(m, q.group)
		if g.r.IntN(2) == 0 {
			q.limit = g.limitParts(m, false)
		}
	}
}

// aggregatesCompared selects the MIN and MAX of a string or date column
// (folded: any spelling of the extreme) and keeps the groups where
// aggregates of strings or dates compare so: equal under the collation,
// before another column's, dates apart by more than some days.
func (g *Generator) aggregatesCompared(m *mstmt, q *query, f *fromClause) {
	m.tag(cAggCompared)
	g.groupBy(m, q, f, false)
	a, b, ok := g.comparablePair(f)
	if !ok {
		q.item("COUNT(*)")
		return
	}
	m.value(a.t, a.c)
	m.value(b.t, b.c)
	pos := q.item("MIN(" + a.expr + ")")
	m.foldAt(pos, a.c.collation())
	pos = q.item("MAX(" + b.expr + ")")
	m.foldAt(pos, b.c.collation())
	op := pick(g.r, []string{" = ", " <> ", " < ", " >= "})
	switch {
	case a.c.typ == ctStr || g.r.IntN(2) == 0:
		q.having = []any{pick(g.r, []string{"MIN(", "MAX("}) + a.expr + ")" + op + pick(g.r, []string{"MIN(", "MAX("}) + b.expr + ")"}
	default:
		q.having = []any{"DATEDIFF(MAX(" + b.expr + "), MIN(" + a.expr + ")) > ", intLit(g.r.IntN(400))}
	}
	if g.r.IntN(2) == 0 {
		m.order = true
		m.tag(cOrderBy)
		q.order = g.keysOrderList(m, q.group)
	}
}

// colRef is a column of a side, as written.
type colRef struct {
	t    *mtable
	c    column
	expr string
}

// comparablePair is two columns of f (maybe the same) that compare
// without a conversion and without a mix of collations: strings of one
// collation, or dates and datetimes.
func (g *Generator) comparablePair(f *fromClause) (a, b colRef, ok bool) {
	var refs []colRef
	for _, s := range f.sides {
		for _, c := range s.t.cols {
			if c.typ == ctStr || c.typ == ctDate || c.typ == ctDatetime {
				refs = append(refs, colRef{s.t, c, s.p() + c.name})
			}
		}
	}
	for _, i := range g.r.Perm(len(refs)) {
		a = refs[i]
		for _, j := range g.r.Perm(len(refs)) {
			if b = refs[j]; colClass(a.c) == colClass(b.c) {
				return a, b, true
			}
		}
	}
	return a, b, false
}
