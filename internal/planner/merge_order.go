package planner

import (
	"strconv"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/shardgate/shardgate/internal/engine"
)

// ORDER BY and DISTINCT across shards: the sort keys the shards order by
// and the merge merges by, the final order when it differs, and DISTINCT
// as a merge on every column.

// orderKey resolves one ORDER BY key to a column: a position, an alias
// (ORDER BY prefers the select list's names), an item, or a hidden column.
func (b *mergeBuilder) orderKey(o *sqlparser.Order) (engine.SortKey, error) {
	k := engine.SortKey{Desc: o.Direction == sqlparser.DescOrder}
	switch {
	case position(o.Expr):
		i, err := b.positionItem(o.Expr, "ORDER BY")
		if err != nil {
			return k, err
		}
		k.Col = i
	case b.itemByAlias(o.Expr) >= 0:
		k.Col = b.itemByAlias(o.Expr)
	case b.namesAlias(o.Expr):
		return k, notSupported("ORDER BY an expression of a select-list alias across shards; order by the alias or the expression it names")
	default:
		k.Col = b.column(o.Expr)
	}
	return k, nil
}

// namesAlias reports a column name in e that may be an alias of the
// select list: a hidden column holding e could not name it.
func (b *mergeBuilder) namesAlias(e sqlparser.Expr) bool {
	found := false
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		switch n := n.(type) {
		case *sqlparser.Subquery:
			return false, nil
		case *sqlparser.ColName:
			if b.itemByAlias(n) >= 0 && b.tableHasColumn(n.Name.String()) != 1 {
				found = true
			}
		}
		return !found, nil
	}, e)
	return found
}

// orderMerge merges rows sorted by the ORDER BY, as they are (no groups,
// or groups that are whole on their sub-table: GROUP BY the shard key).
func (b *mergeBuilder) orderMerge(grouped bool) error {
	keys := b.client.OrderBy
	if len(keys) == 0 && grouped {
		// One server gives the groups in the order of their keys.
		for _, g := range b.client.GroupBy.Exprs {
			keys = append(keys, &sqlparser.Order{Expr: g, Direction: sqlparser.AscOrder})
		}
	}
	for _, o := range keys {
		if grouped && len(b.client.OrderBy) == 0 {
			k, err := b.groupKeyColumn(o.Expr)
			if err != nil {
				return err
			}
			b.spec.Order = append(b.spec.Order, engine.SortKey{Col: k})
			continue
		}
		k, err := b.orderKey(o)
		if err != nil {
			return err
		}
		b.spec.Order = append(b.spec.Order, k)
	}
	b.pushOrder()
	b.pushLimit()
	return nil
}

// pushOrder orders the shards' rows by Spec.Order, by position.
func (b *mergeBuilder) pushOrder() { b.push.OrderBy = orderByPositions(b.spec.Order) }

// distinctMerge merges SELECT DISTINCT without aggregates: the shards'
// distinct rows, sorted by every column, are grouped again (a row on two
// shards is one), then ordered by the ORDER BY.
func (b *mergeBuilder) distinctMerge() error {
	var keys []engine.SortKey
	for _, o := range b.client.OrderBy {
		k, err := b.orderKey(o)
		if err != nil {
			return err
		}
		if k.Col >= b.visible {
			return notSupported("ORDER BY an expression outside the select list of a SELECT DISTINCT, across shards")
		}
		keys = append(keys, k)
	}
	b.spec.Order = everyColumn(keys, b.visible)
	b.spec.Groups = len(b.spec.Order)
	b.pushOrder()
	b.pushLimit()
	return nil
}

// everyColumn is the order of DISTINCT rows: the ORDER BY's keys, then
// every other column: equal rows are then next to each other, and the
// rows come in the ORDER BY's order.
func everyColumn(keys []engine.SortKey, n int) []engine.SortKey {
	var order []engine.SortKey
	seen := make([]bool, n)
	for _, k := range keys {
		if !seen[k.Col] {
			seen[k.Col] = true
			order = append(order, k)
		}
	}
	for i := 0; i < n; i++ {
		if !seen[i] {
			order = append(order, engine.SortKey{Col: i})
		}
	}
	return order
}

// finalOrder sorts the groups by the client's ORDER BY when it is not the
// order they are merged in. A GROUP_CONCAT the merge joined has no
// weight from a shard, and its collation is not known here: ordering by
// one is refused.
func (b *mergeBuilder) finalOrder() error {
	var final []engine.SortKey
	for _, o := range b.client.OrderBy {
		e := o.Expr
		if i := b.itemByAlias(e); i >= 0 {
			e = b.columnExpr(i)
		}
		if containsConcat(e) {
			return notSupported("ORDER BY GROUP_CONCAT() across shards")
		}
		k, err := b.groupedOrderKey(o)
		if err != nil {
			return err
		}
		final = append(final, k)
	}
	if len(final) == 0 || prefixOf(final, b.spec.Order) {
		return nil
	}
	b.spec.Final = final
	return nil
}

// prefixOf reports whether keys are the first keys of order, same
// directions: rows merged in order are then in keys' order too.
func prefixOf(keys, order []engine.SortKey) bool {
	if len(keys) > len(order) {
		return false
	}
	for i, k := range keys {
		if order[i] != k {
			return false
		}
	}
	return true
}

// orderByPositions is an ORDER BY of the columns of keys, by position.
func orderByPositions(keys []engine.SortKey) sqlparser.OrderBy {
	var o sqlparser.OrderBy
	for _, k := range keys {
		dir := sqlparser.AscOrder
		if k.Desc {
			dir = sqlparser.DescOrder
		}
		o = append(o, &sqlparser.Order{Expr: sqlparser.NewIntLiteral(strconv.Itoa(k.Col + 1)), Direction: dir})
	}
	return o
}
