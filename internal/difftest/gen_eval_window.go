package difftest

import (
	"fmt"
	"strconv"
)

// Issue 22's window functions (see gen_eval.go): PARTITION BY columns
// that are not the shard key (a _ci string partitions by its collation),
// ORDER BY within the window, ROWS and RANGE frames, over one table's or
// a join's rows, or over groups.

// windowSpec is a window: its PARTITION BY, its ORDER BY, and whether
// that order is total (every table's key last), which functions whose
// value depends on the order of peers need.
type windowSpec struct {
	partition []string
	order     []string
	total     bool
	rangeKey  bool // one numeric ORDER BY key: a RANGE frame may count by it
}

func (w windowSpec) String() string {
	s := ""
	if len(w.partition) > 0 {
		s = "PARTITION BY " + joinList(w.partition)
	}
	if len(w.order) > 0 {
		if s != "" {
			s += " "
		}
		s += "ORDER BY " + joinList(w.order)
	}
	return s
}

// window draws a window over f's rows: partitioned by zero to two
// columns, ordered by nothing, by one column (peers tie), or totally;
// never empty unless allowEmpty.
//
// MariaDB 10.11 computes a PARTITION BY window wrongly when the SELECT
// also has an empty window, OVER (), and one ordered only, OVER (ORDER
// BY x) (COUNT(*) OVER (PARTITION BY note) then counts other
// partitions), and how wrongly depends on the order it reads the rows
// in: a statement with three windows has no empty one.
func (g *Generator) window(m *mstmt, f *fromClause, allowEmpty bool) windowSpec {
	var w windowSpec
	parts := g.r.IntN(3)
	if parts == 0 && !allowEmpty {
		parts = 1
	}
	for range parts {
		s, c := g.pickCol(m, f)
		m.tag(cWinPartition)
		w.partition = append(w.partition, s.p()+c.name)
	}
	switch g.r.IntN(4) {
	case 0: // the whole partition
	case 1:
		m.tag(cWinOrder)
		s, c := g.pickCol(m, f)
		w.order = []string{s.p() + c.name + pick(g.r, []string{"", " DESC"})}
		w.rangeKey = c.typ == ctInt || c.typ == ctDec
	default:
		m.tag(cWinOrder)
		if g.r.IntN(2) == 0 {
			s, c := g.pickCol(m, f)
			w.order = []string{s.p() + c.name + pick(g.r, []string{"", " DESC"})}
		}
		w.order = append(w.order, g.totalOrder(m, f)...)
		w.total = true
	}
	return w
}

// rowsFrames are ROWS frames: the rows they take depend on the order of
// peers, so only under a total order.
var rowsFrames = []string{"ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING", "ROWS UNBOUNDED PRECEDING",
	"ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING", "ROWS BETWEEN 2 PRECEDING AND 1 PRECEDING",
	"ROWS BETWEEN 1 FOLLOWING AND 3 FOLLOWING", "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING"}

// rangeFrames take peers together: any order.
var rangeFrames = []string{"RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING",
	"RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING", "RANGE UNBOUNDED PRECEDING"}

// windowFunc is a window function over w of f's columns, the collation
// its value is folded under ("": none), and whether it is an aggregate
// (which a frame may bound): a ranking, a value of another row (only
// under a total order), or an aggregate over the partition, its peers,
// or a frame.
func (g *Generator) windowFunc(m *mstmt, f *fromClause, w windowSpec) (expr, fold string, agg bool) {
	s, c := g.pickCol(m, f)
	x := s.p() + c.name
	num := g.numOf(f)
	switch k := g.r.IntN(10); {
	case k < 3 && len(w.order) > 0:
		m.tag(cWinRank)
		if w.total && g.r.IntN(2) == 0 {
			return pick(g.r, []string{"ROW_NUMBER()", "NTILE(" + strconv.Itoa(2+g.r.IntN(4)) + ")"}), "", false
		}
		return pick(g.r, []string{"RANK()", "DENSE_RANK()", "PERCENT_RANK()", "CUME_DIST()"}), "", false
	case k < 5 && w.total:
		m.tag(cWinOffset)
		switch g.r.IntN(5) {
		case 0:
			return pick(g.r, []string{"LAG(", "LEAD("}) + x + ")", "", false
		case 1:
			return pick(g.r, []string{"LAG(", "LEAD("}) + x + ", " + strconv.Itoa(1+g.r.IntN(3)) + ")", "", false
		case 2:
			return "NTH_VALUE(" + x + ", " + strconv.Itoa(1+g.r.IntN(3)) + ")", "", false
		}
		return pick(g.r, []string{"FIRST_VALUE(", "LAST_VALUE("}) + x + ")", "", false
	}
	m.tag(cWinAggregate)
	switch g.r.IntN(6) {
	case 0:
		return "COUNT(*)", "", true
	case 1:
		return "COUNT(" + x + ")", "", true
	case 2, 3:
		return pick(g.r, []string{"SUM(", "AVG("}) + num + ")", "", true
	}
	return pick(g.r, []string{"MIN(", "MAX("}) + x + ")", c.collation(), true
}

// numOf is an INT or DECIMAL column of one of f's sides: what SUM and AVG
// add exactly (a DOUBLE's sum depends on the order of addition).
func (g *Generator) numOf(f *fromClause) string {
	for {
		s := pick(g.r, f.sides)
		c := pick(g.r, s.t.cols)
		if c.typ == ctInt || c.typ == ctDec {
			return s.p() + c.name
		}
	}
}

// frame is a frame for an aggregate over w, or "" for the default (the
// partition, or up to the current row's last peer).
func (g *Generator) frame(m *mstmt, w windowSpec) string {
	switch {
	case len(w.order) == 0 || g.r.IntN(4) == 0:
		return ""
	case w.total && g.r.IntN(3) > 0:
		m.tag(cWinRows)
		return pick(g.r, rowsFrames)
	case w.rangeKey && g.r.IntN(2) == 0:
		m.tag(cWinRange)
		n := strconv.Itoa(1 + g.r.IntN(5))
		return pick(g.r, []string{"RANGE BETWEEN " + n + " PRECEDING AND CURRENT ROW",
			"RANGE BETWEEN " + n + " PRECEDING AND " + n + " FOLLOWING", "RANGE BETWEEN CURRENT ROW AND " + n + " FOLLOWING"})
	}
	m.tag(cWinRange)
	return pick(g.r, rangeFrames)
}

// evalWindow selects window functions over one sharded table's rows or
// a join's (one to three, inline or through a named WINDOW), or over
// groups; the rows in a total order (maybe with LIMIT) or as a multiset.
func (g *Generator) evalWindow() Statement {
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
	if g.r.IntN(7) < 2 {
		g.windowOverGroups(m, q, f)
		return g.evalDone(m, q)
	}
	for _, k := range f.sides[0].keys() {
		q.item(k)
	}
	s, c := g.pickCol(m, f)
	q.item(s.p() + c.name)
	n := 1 + g.r.IntN(3)
	var named *windowSpec
	if g.r.IntN(3) == 0 {
		m.tag(cWinNamed)
		w := g.window(m, f, n < 3)
		named = &w
		q.window = "w AS (" + w.String() + ")"
	}
	for i := range n {
		w := g.window(m, f, n < 3)
		over := "(" + w.String() + ")"
		if named != nil && g.r.IntN(2) == 0 {
			w, over = *named, "w"
		}
		expr, fold, agg := g.windowFunc(m, f, w)
		if over != "w" && agg {
			if fr := g.frame(m, w); fr != "" {
				over = "(" + spaced(w.String()) + fr + ")"
			}
		}
		pos := q.item(expr + " OVER " + over + fmt.Sprintf(" AS w%d", i+1))
		m.foldAt(pos, fold)
	}
	if g.r.IntN(2) == 0 {
		m.order = true
		m.tag(cOrderBy)
		q.order = g.totalOrder(m, f)
		if g.r.IntN(3) == 0 {
			q.limit = g.limitParts(m, true)
		}
	}
	return g.evalDone(m, q)
}

func spaced(s string) string {
	if s == "" {
		return ""
	}
	return s + " "
}

// windowOverGroups groups f's rows by a key and ranks the groups, sums
// their counts, numbers them in a total order (by an aggregate, then
// the keys, which no two groups share). Its rows are compared as a
// multiset even under an ORDER BY of the keys: MariaDB 10.11 does not
// always sort a grouped SELECT with window functions by its ORDER BY
// (GROUP BY o.user_id, o.order_no … SUM(COUNT(*)) OVER () … ORDER BY
// o.user_id, o.order_no comes in no order; … DENSE_RANK() OVER (ORDER BY
// COUNT(*) DESC) … ORDER BY u.name DESC comes in the window's order),
// and what order it leaves depends on the order it read the rows in.
func (g *Generator) windowOverGroups(m *mstmt, q *query, f *fromClause) {
	m.tag(cWinGrouped, cGroupBy, cWinOrder)
	s := pick(g.r, f.sides)
	for _, k := range g.groupKeys(s.t, s.p()) {
		pos := q.item(k.expr)
		q.group = append(q.group, k.expr)
		m.foldAt(pos, k.coll)
	}
	q.item("COUNT(*) AS n")
	agg := "COUNT(*)"
	if g.r.IntN(2) == 0 {
		agg = "SUM(" + g.numOf(f) + ")"
		q.item(agg + " AS total")
	}
	order := agg + pick(g.r, []string{" DESC", ""})
	switch g.r.IntN(4) {
	case 0:
		m.tag(cWinRank)
		q.item(pick(g.r, []string{"RANK()", "DENSE_RANK()", "CUME_DIST()"}) + " OVER (ORDER BY " + order + ") AS r")
	case 1:
		m.tag(cWinRank)
		q.item("ROW_NUMBER() OVER (ORDER BY " + order + ", " + joinList(q.group) + ") AS r")
	case 2:
		m.tag(cWinAggregate)
		q.item("SUM(" + agg + ") OVER () AS s")
	default:
		m.tag(cWinAggregate, cWinRows)
		q.item("SUM(" + agg + ") OVER (ORDER BY " + joinList(q.group) + " ROWS UNBOUNDED PRECEDING) AS s")
	}
	if g.r.IntN(2) == 0 {
		m.tag(cOrderBy)
		q.order = g.keysOrderList(m, q.group)
	}
}
