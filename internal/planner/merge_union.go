package planner

import (
	"strconv"
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/router"
)

// UNION across shards: each SELECT of the union pushed to every shard,
// the rows merged (and, for UNION DISTINCT, made distinct) over the
// union's columns.

// newUnionMerge plans the merge of the statement's own UNION: every
// sub-table runs it whole; UNION ALL merges the rows by the ORDER BY,
// UNION (DISTINCT) removes the duplicates of rows from several
// sub-tables (the shards sort by every column) and then orders them.
func newUnionMerge(p Parsed, u *sqlparser.Union, sh *router.Shape, rename Rename) (*MergePlan, error) {
	distinct, err := unionDistinct(u)
	if err != nil {
		return nil, err
	}
	first := firstSelect(u)
	if first == nil {
		return nil, notSupported("this UNION across shards")
	}
	items := first.SelectExprs.Exprs
	for _, e := range items {
		if _, star := e.(*sqlparser.StarExpr); star && (distinct || len(u.OrderBy) > 0) {
			return nil, notSupported("SELECT * in a UNION with ORDER BY or DISTINCT across shards; list the columns")
		}
	}
	push := sqlparser.Clone(u)
	b := &mergeBuilder{visible: len(items)}
	var keys []engine.SortKey
	for _, o := range u.OrderBy {
		col, err := unionColumn(o.Expr, items)
		if err != nil {
			return nil, err
		}
		keys = append(keys, engine.SortKey{Col: col, Desc: o.Direction == sqlparser.DescOrder})
	}
	if err := b.limitOf(u.Limit); err != nil {
		return nil, err
	}
	spec := &b.spec
	spec.Order = keys
	if distinct {
		spec.Order = everyColumn(keys, len(items))
		spec.Groups = len(spec.Order)
	}
	b.pushLimit()
	if err := unionWeights(push, spec, len(items)); err != nil {
		return nil, err
	}
	push.OrderBy = orderByPositions(spec.Order)
	lits, params := droppedIn(sh, u.OrderBy, u.Limit)
	push.Limit = &sqlparser.Limit{Rowcount: sqlparser.NewArgument(mergeLimitArg)}
	named := map[*sqlparser.AliasedExpr]int{}
	for i, e := range firstSelect(push).SelectExprs.Exprs[:len(items)] {
		if ae, ok := e.(*sqlparser.AliasedExpr); ok && ae.As.IsEmpty() && needsName(ae.Expr) {
			named[ae] = i // named by the client's text; the hidden ones are not
		}
	}
	tmpl, err := newTemplateWith(p, sh, rename, templateOptions{items: named, itemCount: len(items), limit: push.Limit, dropped: lits, droppedParams: params}, push)
	if err != nil {
		return nil, err
	}
	probe, err := probeTemplate(p, sh, rename, u)
	if err != nil {
		return nil, err
	}
	return &MergePlan{Tmpl: tmpl, Spec: spec, Limit: b.limit, ShardOrder: shardOrder(spec.Order), Probe: probe}, nil
}

// unionWeights adds to every SELECT of the pushed UNION the weights of
// its columns the merge compares (see addWeights), as hidden columns
// after the n visible ones. Each SELECT weighs its own column: the
// UNION's column has their collation when they share one.
func unionWeights(u *sqlparser.Union, spec *engine.MergeSpec, n int) error {
	var cols []int
	for _, k := range spec.Order {
		cols = append(cols, k.Col)
	}
	if len(cols) == 0 {
		return nil
	}
	spec.Weights = make([]int, n+2*len(cols))
	for i := range spec.Weights {
		spec.Weights[i] = -1
	}
	for j, c := range cols {
		spec.Weights[c] = n + 2*j
	}
	spec.Hidden = 2 * len(cols)
	var err error
	eachSelect(u, func(s *sqlparser.Select) {
		for _, c := range cols {
			ae, ok := s.SelectExprs.Exprs[c].(*sqlparser.AliasedExpr)
			if !ok {
				err = notSupported("SELECT * in a UNION with ORDER BY or DISTINCT across shards; list the columns")
				return
			}
			w, space, werr := weightExprs(ae.Expr, "") // (the collation of the UNION's column, not the branch's)
			if werr != nil {
				err = werr
				return
			}
			s.SelectExprs.Exprs = append(s.SelectExprs.Exprs, &sqlparser.AliasedExpr{Expr: w}, &sqlparser.AliasedExpr{Expr: space})
		}
	})
	return err
}

// eachSelect calls f with every SELECT of a UNION.
func eachSelect(ts sqlparser.TableStatement, f func(*sqlparser.Select)) {
	switch s := ts.(type) {
	case *sqlparser.Select:
		f(s)
	case *sqlparser.Union:
		eachSelect(s.Left, f)
		eachSelect(s.Right, f)
	}
}

// unionDistinct reports whether a UNION chain removes duplicates from
// all its rows (its last UNION is DISTINCT). A DISTINCT before an ALL
// removes them from some rows only, which the merge cannot tell apart.
func unionDistinct(u *sqlparser.Union) (bool, error) {
	if left, ok := u.Left.(*sqlparser.Union); ok {
		if _, err := unionDistinct(left); err != nil {
			return false, err
		}
		if left.Distinct && !u.Distinct {
			return false, notSupported("UNION DISTINCT followed by UNION ALL across shards")
		}
	}
	if right, ok := u.Right.(*sqlparser.Union); ok && (right.Distinct != u.Distinct) {
		return false, notSupported("UNION DISTINCT and UNION ALL nested across shards")
	}
	return u.Distinct, nil
}

// unionColumn resolves a UNION's ORDER BY key to a column of its first
// SELECT: a position, or the name of an item (its alias or column).
func unionColumn(e sqlparser.Expr, items []sqlparser.SelectExpr) (int, error) {
	if l, ok := e.(*sqlparser.Literal); ok && l.Type == sqlparser.IntVal {
		n, err := strconv.Atoi(l.Val)
		if err != nil || n < 1 || n > len(items) {
			return 0, notSupported("ORDER BY position " + l.Val + " of a UNION across shards")
		}
		return n - 1, nil
	}
	if position(e) {
		return 0, errPositional
	}
	c, ok := e.(*sqlparser.ColName)
	if !ok || !c.Qualifier.IsEmpty() {
		return 0, notSupported("ORDER BY an expression of a UNION across shards; order by a column's name or position")
	}
	found := -1
	for i, it := range items {
		ae, ok := it.(*sqlparser.AliasedExpr)
		if !ok {
			continue
		}
		name := ae.As.String()
		if name == "" {
			if col, ok := ae.Expr.(*sqlparser.ColName); ok {
				name = col.Name.String()
			}
		}
		if strings.EqualFold(name, c.Name.String()) {
			if found >= 0 {
				return 0, notSupported("ORDER BY " + name + ", a name of several columns of a UNION, across shards")
			}
			found = i
		}
	}
	if found < 0 {
		return 0, notSupported("ORDER BY " + c.Name.String() + " of a UNION across shards; order by a column's name or position")
	}
	return found, nil
}
