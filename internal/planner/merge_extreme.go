package planner

import (
	"fmt"
	"slices"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/shardgate/shardgate/internal/engine"
)

// A value the merge would compute from one MIN or MAX alone, such as
// MAX(name) > 'walter', UPPER(MIN(x)), MAX(created) < 20210601 or
// MIN(city) NOT LIKE '%ö%', is computed by the shards instead: each part
// row computes it from its own MIN or MAX, and the merge takes it from the
// row whose value wins (engine.Aggregate.With). The merged MIN or MAX is
// one of the parts' values, so the value is exactly one server's, with the
// server's collation and coercibility, PAD SPACE, conversions between
// strings, numbers and dates, and functions. The proxy evaluating it
// instead compared the strings in bytes, and Vitess's evalengine, given
// the collation, compares utf8mb4_unicode_ci NO PAD ('a ' <> 'a') and a
// DATETIME with an integer otherwise than MariaDB does.

// extremeOf returns the one MIN or MAX aggregate e depends on: e has
// aggregates, is not one itself, and every aggregate in it is that one.
// The rest of e is the group's constants, keys or any row's values.
func (b *mergeBuilder) extremeOf(e sqlparser.Expr) (sqlparser.AggrFunc, bool) {
	if isAggregate(e) || b.namesAlias(e) {
		return nil, false
	}
	var agg sqlparser.AggrFunc
	ok := true
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		switch n := n.(type) {
		case *sqlparser.Subquery:
			ok = false
		case *sqlparser.Min, *sqlparser.Max:
			f := n.(sqlparser.AggrFunc)
			switch {
			case agg == nil:
				agg = f
			case !sqlparser.Equals.Expr(agg, f):
				ok = false
			}
			return false, nil
		case sqlparser.AggrFunc:
			ok = false
		}
		return ok, nil
	}, e)
	return agg, ok && agg != nil
}

// takeWith makes column col, which the shards compute from agg, a
// column the merge takes from the part row whose agg wins.
func (b *mergeBuilder) takeWith(agg sqlparser.AggrFunc, col int) error {
	aggCol, err := b.aggColumn(agg)
	if err != nil {
		return err
	}
	a := b.extremeAt(aggCol)
	if a == nil {
		return fmt.Errorf("planner: no MIN or MAX in column %d", aggCol)
	}
	if !slices.Contains(a.With, col) {
		a.With = append(a.With, col)
	}
	// Like a lifted value, a shard computes it in a part row: over no
	// rows at all, a part grouped by a DISTINCT argument sends none.
	b.liftedValues = true
	return nil
}

// extremeAt is the MIN or MAX aggregate combined in column col, or nil.
func (b *mergeBuilder) extremeAt(col int) *engine.Aggregate {
	for i := range b.spec.Aggregates {
		a := &b.spec.Aggregates[i]
		if a.Col == col && (a.Kind == engine.AggMin || a.Kind == engine.AggMax) {
			return a
		}
	}
	return nil
}

// takenWith is the MIN or MAX whose winning row column col is taken
// from, or nil.
func (b *mergeBuilder) takenWith(col int) *engine.Aggregate {
	for i := range b.spec.Aggregates {
		if slices.Contains(b.spec.Aggregates[i].With, col) {
			return &b.spec.Aggregates[i]
		}
	}
	return nil
}

// expandAliases writes the select-list aliases of items over aggregates
// in a HAVING as the items' expressions (HAVING m > 'x' with MAX(name) AS
// m is HAVING MAX(name) > 'x'), so that a comparison of one MIN or MAX is
// computed by the shards. A name that may also be a table's column is
// left to liftValue.
func (b *mergeBuilder) expandAliases(e sqlparser.Expr) sqlparser.Expr {
	out := sqlparser.CopyOnRewrite(e, func(n, _ sqlparser.SQLNode) bool {
		_, sub := n.(*sqlparser.Subquery)
		return !sub
	}, func(c *sqlparser.CopyOnWriteCursor) {
		col, ok := c.Node().(*sqlparser.ColName)
		if !ok {
			return
		}
		i := b.itemByAlias(col)
		if i < 0 || b.tableHasColumn(col.Name.String()) != -1 {
			return
		}
		if item := b.columnExpr(i); item != nil && containsAggregate(item) {
			c.Replace(sqlparser.Clone(item))
		}
	}, nil)
	return out.(sqlparser.Expr)
}

// operands lists the columns a lifted expression reads, for the merge's
// check of their types (engine.Operands): a constant is loose where an
// arithmetic or comparison operator reads it as a number.
func (b *mergeBuilder) operands(lifted sqlparser.Expr) engine.Operands {
	loose := map[int]bool{}
	var mark func(es ...sqlparser.Expr)
	mark = func(es ...sqlparser.Expr) {
		for _, e := range es {
			switch e := e.(type) {
			case *sqlparser.Offset:
				if _, seen := loose[e.V]; !seen && b.constant(e.V) {
					loose[e.V] = true
				}
			case sqlparser.ValTuple:
				mark(e...)
			}
		}
	}
	var cols []int
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		switch n := n.(type) {
		case *sqlparser.BinaryExpr:
			mark(n.Left, n.Right)
		case *sqlparser.UnaryExpr:
			if n.Operator == sqlparser.UMinusOp {
				mark(n.Expr)
			}
		case *sqlparser.ComparisonExpr:
			if numericComparison[n.Operator] {
				mark(n.Left, n.Right)
			}
		case *sqlparser.BetweenExpr:
			mark(n.Left, n.From, n.To)
		case *sqlparser.Offset:
			if !slices.Contains(cols, n.V) {
				cols = append(cols, n.V)
			}
			if _, marked := loose[n.V]; !marked {
				loose[n.V] = false // read elsewhere than as a number
			}
		}
		return true, nil
	}, lifted)
	var ops engine.Operands
	for _, c := range cols {
		text := "a constant"
		if !b.constant(c) {
			text = sqlparser.String(b.columnExpr(c))
		}
		ops.Cols = append(ops.Cols, engine.Operand{Col: c, Text: text, Loose: loose[c]})
	}
	return ops
}

// numericComparison are the comparisons that read a string compared with
// a number as a number (the other operators read strings as strings).
var numericComparison = map[sqlparser.ComparisonExprOperator]bool{
	sqlparser.EqualOp: true, sqlparser.LessThanOp: true, sqlparser.GreaterThanOp: true,
	sqlparser.LessEqualOp: true, sqlparser.GreaterEqualOp: true, sqlparser.NotEqualOp: true,
	sqlparser.NullSafeEqualOp: true, sqlparser.InOp: true, sqlparser.NotInOp: true,
}

// constant reports a column the shards compute from no column and no
// aggregate: a literal, a parameter, an expression of them.
func (b *mergeBuilder) constant(col int) bool {
	e := b.columnExpr(col)
	if e == nil {
		return false
	}
	found := false
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		switch n.(type) {
		case *sqlparser.ColName, *sqlparser.Subquery, sqlparser.AggrFunc, *sqlparser.Offset:
			found = true
		}
		return !found, nil
	}, e)
	return !found
}
