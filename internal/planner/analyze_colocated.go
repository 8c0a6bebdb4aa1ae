package planner

import (
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"
)

// Co-located work: a subquery or derived table whose rows, for what the
// statement asks of them, all lie on one sub-table, so that each
// sub-table running the statement computes it as one server does,
// whatever it holds (aggregates, ORDER BY, LIMIT). A scope notes the key
// equalities of its filters (noteKeyEq) as the analysis reads them; its
// constructs are excused from the statement's merges when they are
// co-located (selectStmt, aliased).

// colocatedSubquery reports whether the rows an expression subquery
// reads, for one row of the enclosing query, all lie on that row's
// sub-table: each sharded table of its FROM has its key equated, by
// filters of its own (WHERE, inner joins), with the key of a table of
// an enclosing query (a correlated o.user_id = u.id) or of another such
// table of its own. Then a sub-table running the statement computes the
// subquery, aggregates, LIMIT and all, as one server does. Its derived
// tables must be whole on each sub-table too.
func colocatedSubquery(sc *scope) bool {
	if len(sc.linked) == 0 {
		return false
	}
	return sc.reaches(sc.linked)
}

// reaches reports whether every sharded table of sc's FROM is, by sc's
// own key equalities, equated with one of from; a derived table of
// sharded rows must show a key so equated.
func (sc *scope) reaches(from []*tableRef) bool {
	reached := make(map[*tableRef]bool)
	for _, r := range from {
		reached[r] = true
	}
	for grew := true; grew; {
		grew = false
		for _, e := range sc.keyEq {
			if reached[e[0]] != reached[e[1]] {
				reached[e[0]], reached[e[1]], grew = true, true, true
			}
		}
	}
	for _, r := range sc.refs {
		switch {
		case r.kind == refSharded && !reached[r]:
			return false
		case r.kind == refDerived && r.rowsSharded && (r.keyRef == nil || !reached[r.keyRef]):
			return false
		}
	}
	return true
}

// colocatedDerived reports whether a derived table's rows (its SELECT's
// scope sc) lie whole on the sub-tables of its sharded rows: it groups
// by the shard key of one of its tables (not on the NULL side of a
// join), every other sharded table of its FROM has its key equated with
// that one by its filters, and nothing in it needs the other sub-tables'
// rows (LIMIT, DISTINCT, window functions). Each sub-table then holds
// whole groups: its rows are the derived table's rows of that sub-table,
// and the statement reads them as a sharded table's. It returns the
// grouped table and the name of the column showing its key ("" for
// none).
func colocatedDerived(sc *scope) (*tableRef, string, bool) {
	s := sc.sel
	if s == nil || s.GroupBy == nil || s.GroupBy.WithRollup ||
		sc.constructs&(MergeLimit|MergeDistinct|MergeWindow|MergeInto|MergeCalcFoundRows|MergeRowsElsewhere) != 0 {
		return nil, "", false
	}
	var key *tableRef
	for _, e := range s.GroupBy.Exprs {
		if c, ok := e.(*sqlparser.ColName); ok {
			if r, own := sc.keyColumn(c); r != nil && own && !r.nullable && r.kind == refSharded {
				key = r
				break
			}
		}
	}
	if key == nil || !sc.reaches([]*tableRef{key}) {
		return nil, "", false
	}
	return key, shownKey(sc, s, key), true
}

// shownKey is the name of the column of s that is key's shard key as it
// is (the column, or its alias), "" when there is none.
func shownKey(sc *scope, s *sqlparser.Select, key *tableRef) string {
	for _, se := range s.GetColumns() {
		ae, ok := se.(*sqlparser.AliasedExpr)
		if !ok {
			continue
		}
		if c, ok := ae.Expr.(*sqlparser.ColName); ok {
			if r, own := sc.keyColumn(c); r == key && own {
				if !ae.As.IsEmpty() {
					return ae.As.String()
				}
				return c.Name.String()
			}
		}
	}
	return ""
}

// noteKeyEq records a filter equating the keys of l and r (own: a table
// of sc's FROM, else of an enclosing query's).
func (sc *scope) noteKeyEq(l *tableRef, lown bool, r *tableRef, rown bool) {
	switch {
	case lown && rown:
		sc.keyEq = append(sc.keyEq, [2]*tableRef{l, r})
	case lown:
		sc.linked = append(sc.linked, l)
	case rown:
		sc.linked = append(sc.linked, r)
	}
}

// keyOf is the sharded table reference whose shard key r's column col
// is: r itself, the table a co-located derived table shows the key of,
// or nil.
func (r *tableRef) keyOf(col string) *tableRef {
	switch {
	case r.kind == refSharded && strings.EqualFold(col, r.st.ShardKey):
		return r
	case r.keyRef != nil && strings.EqualFold(col, r.keyName):
		return r.keyRef
	}
	return nil
}
