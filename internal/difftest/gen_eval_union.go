package difftest

import "strings"

// Issue 22's UNIONs (see gen_eval.go): of sharded tables with the
// reference table and the unsharded one, whose rows no shard holds
// together; UNION DISTINCT, ALL and both, branches with their own ORDER
// BY and LIMIT, columns of several types made one (INT with TINYINT and
// DECIMAL, DATE with DATETIME, NULL), in a total order or as a multiset,
// and grouped as a derived table.

// unionCols are the columns a UNION branch of a table selects: an
// integer, a utf8mb4_general_ci string (sf_member's under an explicit
// COLLATE, which wins over the others' implicit one), a date or
// datetime, and a number; "NULL" where the table has none.
var unionCols = map[string][4]string{
	tUser:   {"id", "name", "born", "balance"},
	tOrder:  {"order_no", "note", "ordered_at", "amount"},
	tEvent:  {"id", "kind", "happened", "amount"},
	tLog:    {"seq", "msg", "day", "level"},
	tTag:    {"uses", "name", "updated", "uses"},
	tMember: {"id", "name COLLATE utf8mb4_general_ci", "joined", "score"},
	tCity:   {"id", "name", "NULL", "id"},
	tNote:   {"id", "body", "created", "NULL"},
}

// unionNames name the first branch's columns: the UNION's names, which
// an ORDER BY and a derived table's outer query use.
var unionNames = [3]string{"k", "s", "v"}

// unionBranch is one SELECT of a UNION over t: its integer, string and
// third column (slot 2: a date, 3: a number), maybe filtered, maybe its
// first rows in its key's order (in parentheses).
func (g *Generator) unionBranch(m *mstmt, t *mtable, slot int, first bool) []any {
	s := side{t, t.alias}
	cols := unionCols[t.name]
	var items []string
	for i, c := range []string{cols[0], cols[1], cols[slot]} {
		if c != "NULL" {
			c = s.p() + c
		}
		if first {
			c += " AS " + unionNames[i]
		}
		items = append(items, c)
	}
	q := &query{from: []any{t.name + " " + s.alias}}
	q.item(strings.Join(items, ", "))
	if g.r.IntN(2) == 0 {
		parts, zero := t.filter(g, s.p())
		q.cond(parts...)
		if zero {
			m.tag(cZeroRows)
		}
	}
	if g.r.IntN(4) > 0 {
		return q.parts(true)
	}
	m.tag(cUnionBranch)
	q.order = s.keys()
	q.limit = []any{" LIMIT ", intLit(1 + g.r.IntN(10))}
	return q.sub()
}

// evalUnion is a UNION of two or three SELECTs, a sharded table's and
// the reference or the unsharded table's among them: as a multiset, in
// a total order (every column; the strings folded, so that rows tied
// under the collation compare equal), or grouped by its integer.
func (g *Generator) evalUnion() Statement {
	m := newMstmt()
	tables := []*mtable{pick(g.r, mergeTables), pick(g.r, []*mtable{cityTable, noteTable})}
	if g.r.IntN(2) == 0 {
		tables = append(tables, pick(g.r, evalTables))
	}
	g.r.Shuffle(len(tables), func(i, j int) { tables[i], tables[j] = tables[j], tables[i] })
	slot := 2 + g.r.IntN(2)
	for _, t := range tables {
		switch t.name {
		case tCity:
			m.tag(cUnionRef)
		case tNote:
			m.tag(cUnionPlain)
		}
	}
	m.tag(cUnionTypes)
	if slot == 2 {
		m.tag(cValDate)
	} else {
		m.tag(cValDecimal)
	}
	var u []any
	for i, t := range tables {
		if i > 0 {
			op := pick(g.r, []string{" UNION ", " UNION ALL ", " UNION DISTINCT "})
			if op == " UNION ALL " {
				m.tag(cUnionAll)
			} else {
				m.tag(cUnion)
			}
			u = append(u, op)
		}
		u = append(u, g.unionBranch(m, t, slot, i == 0)...)
	}
	m.fold = []int{1}
	if g.r.IntN(3) == 0 {
		return g.unionGrouped(m, u)
	}
	if g.r.IntN(2) == 0 {
		m.order = true
		m.tag(cOrderBy, cOrderMulti)
		u = append(u, " ORDER BY "+pick(g.r, []string{"1, 2, 3", "k DESC, s, v", "2, 1 DESC, 3", "v, k, s DESC"}))
		if g.r.IntN(2) == 0 {
			u = append(u, g.limitParts(m, false)...)
		}
	}
	m.add(u...)
	st := m.done()
	st.Refusable = false
	return st
}

// unionGrouped counts the UNION's rows per integer or per string (a
// derived table), the string folded.
func (g *Generator) unionGrouped(m *mstmt, u []any) Statement {
	m.tag(cUnionDerived, cDerived, cGroupBy)
	key := pick(g.r, []string{"d.k", "d.s"})
	m.fold = nil
	if key == "d.s" {
		m.fold = []int{0}
	}
	q := &query{from: append(append([]any{"("}, u...), ") AS d")}
	q.item(key)
	q.item("COUNT(*)")
	q.item("MAX(d.k)")
	q.group = []string{key}
	return g.evalDone(m, q)
}
