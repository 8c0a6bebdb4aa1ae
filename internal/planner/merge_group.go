package planner

import (
	"fmt"
	"strings"

	"vitess.io/vitess/go/mysql/collations"
	"vitess.io/vitess/go/vt/sqlparser"
	"vitess.io/vitess/go/vt/vtgate/evalengine"

	"github.com/shardgate/shardgate/internal/engine"
)

// GROUP BY and aggregates across shards: the group key, the aggregates
// the shards compute and the merge combines (COUNT, SUM, AVG's parts,
// GROUP_CONCAT, DISTINCT arguments), and the expressions over them the
// merge evaluates (select items, HAVING, ORDER BY).

// groupMerge merges groups (GROUP BY, or aggregates over all rows): the
// shards group and sort by the group keys (and the DISTINCT aggregates'
// argument), the merge combines equal keys' rows, computes what it must,
// filters by HAVING and orders the groups.
func (b *mergeBuilder) groupMerge(grouped bool) error {
	b.aggCols = map[string]int{}
	if grouped {
		for _, g := range b.client.GroupBy.Exprs {
			col, err := b.groupKeyColumn(g)
			if err != nil {
				return err
			}
			b.groupExprs = append(b.groupExprs, g)
			b.groupCols = append(b.groupCols, col)
			b.spec.Order = append(b.spec.Order, engine.SortKey{Col: col})
		}
		b.spec.Groups = len(b.groupCols)
	} else {
		b.spec.Groups = -1
	}
	if err := b.findDistinctArgs(); err != nil {
		return err
	}
	if err := b.planConcat(); err != nil {
		return err
	}
	for _, arg := range b.distinctArgs {
		col := b.hiddenColumn(arg)
		b.distinctCols = append(b.distinctCols, col)
		b.spec.Order = append(b.spec.Order, engine.SortKey{Col: col})
		if b.push.GroupBy == nil {
			b.push.GroupBy = &sqlparser.GroupBy{}
		}
		b.push.GroupBy.Exprs = append(b.push.GroupBy.Exprs, sqlparser.Clone(arg))
	}
	for i, se := range b.push.SelectExprs.Exprs[:b.visible] {
		ae := se.(*sqlparser.AliasedExpr) // stars are written out
		if err := b.item(i, ae.Expr); err != nil {
			return err
		}
	}
	if h := b.client.Having; h != nil {
		e, err := b.lift(b.expandAliases(h.Expr))
		if err != nil {
			return err
		}
		if b.spec.Having, err = translate(e); err != nil {
			return err
		}
		b.spec.HavingOperands = b.operands(e)
		b.push.Having = nil
	}
	if grouped {
		if err := b.finalOrder(); err != nil {
			return err
		}
	}
	b.pushOrder()
	if !grouped && (b.distinctArgs != nil || b.concats != nil) && b.liftedValues {
		// Over zero rows the shards send no row (they group by the
		// DISTINCT argument), and the merge would not know the values.
		return notSupported("HAVING or expressions of constants with DISTINCT aggregates or GROUP_CONCAT without GROUP BY, across shards")
	}
	if grouped && b.spec.Final == nil && b.spec.Having == nil && b.distinctArgs == nil && b.concats == nil {
		// The first groups of the answer are among every shard's first.
		b.pushLimit()
	}
	return nil
}

// groupKeyColumn is the column of a GROUP BY key: a position, an item
// equal to it, an alias (GROUP BY looks at the tables' columns first:
// only a name no table has), or a hidden column.
func (b *mergeBuilder) groupKeyColumn(g sqlparser.Expr) (int, error) {
	if position(g) {
		return b.positionItem(g, "GROUP BY")
	}
	if i := b.itemByAlias(g); i >= 0 {
		ae := b.push.SelectExprs.Exprs[i].(*sqlparser.AliasedExpr)
		if sqlparser.Equals.Expr(ae.Expr, g) {
			return i, nil
		}
		name := g.(*sqlparser.ColName).Name.String()
		switch b.tableHasColumn(name) {
		case 1: // GROUP BY names the table's column first
			return b.column(g), nil
		case 0:
			return 0, notSupported("GROUP BY " + name + ", an alias and maybe a column, across shards")
		}
		return i, nil
	}
	return b.column(g), nil
}

// tableHasColumn says whether a table of the FROM has a column name: 1
// yes, -1 no, 0 not known.
func (b *mergeBuilder) tableHasColumn(name string) int {
	tables, ok := b.fromTables()
	if !ok {
		return 0
	}
	for _, t := range tables {
		cols, ok := b.columns(t.name)
		if !ok {
			return 0
		}
		for _, c := range cols {
			if strings.EqualFold(c, name) {
				return 1
			}
		}
	}
	return -1
}

// findDistinctArgs finds the arguments of the DISTINCT aggregates, which
// the shards group by too: the rows of a group then come sorted by the
// first, and hold each distinct combination of them once.
func (b *mergeBuilder) findDistinctArgs() error {
	var err error
	visit := func(n sqlparser.SQLNode) (bool, error) {
		var arg sqlparser.Expr
		switch f := n.(type) {
		case *sqlparser.Count:
			if f.Distinct {
				if len(f.Args) != 1 {
					err = notSupported("COUNT(DISTINCT) of several expressions across shards")
					return false, nil
				}
				arg = f.Args[0]
			}
		case *sqlparser.Sum:
			if f.Distinct {
				arg = f.Arg
			}
		case *sqlparser.Avg:
			if f.Distinct {
				arg = f.Arg
			}
		case *sqlparser.Subquery:
			return false, nil
		}
		if arg == nil {
			return true, nil
		}
		if b.distinctIndex(arg) < 0 {
			b.distinctArgs = append(b.distinctArgs, arg)
		}
		return false, nil
	}
	for _, n := range []sqlparser.SQLNode{b.client.SelectExprs, b.client.Having, b.client.OrderBy} {
		_ = sqlparser.Walk(visit, n)
	}
	return err
}

// planConcat plans the statement's GROUP_CONCATs: the shards group by
// their ORDER BY keys and values too, each row standing for COUNT(*) of
// the group's rows; the rows of a group come in the first one's order,
// which it joins as they stream, the others sort theirs at the group's
// end (within merge_memory). The DISTINCT aggregates' arguments, grouped
// by after them, are then counted by set.
func (b *mergeBuilder) planConcat() error {
	var err error
	for _, n := range []sqlparser.SQLNode{b.client.SelectExprs, b.client.Having, b.client.OrderBy} {
		_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
			switch f := n.(type) {
			case *sqlparser.Subquery:
				return false, nil
			case *sqlparser.GroupConcatExpr:
				switch {
				case f.Limit != nil:
					err = notSupported("GROUP_CONCAT() … LIMIT across shards")
				case f.Distinct && len(f.OrderBy) > 0 && !orderedByItself(f):
					err = notSupported("GROUP_CONCAT(DISTINCT …) ordered by other expressions across shards")
				case b.concatIndex(f) < 0:
					b.concats = append(b.concats, concatPlan{expr: f})
				}
				return false, nil
			}
			return true, nil
		}, n)
	}
	if err != nil || len(b.concats) == 0 {
		return err
	}
	if b.push.GroupBy == nil {
		b.push.GroupBy = &sqlparser.GroupBy{}
	}
	for k := range b.concats {
		c := &b.concats[k]
		for _, o := range c.expr.OrderBy {
			c.keys = append(c.keys, engine.SortKey{Col: b.hiddenColumn(o.Expr), Desc: o.Direction == sqlparser.DescOrder})
			b.push.GroupBy.Exprs = append(b.push.GroupBy.Exprs, sqlparser.Clone(o.Expr))
		}
		value := &sqlparser.FuncExpr{Name: sqlparser.NewIdentifierCI("concat")}
		for _, e := range c.expr.Exprs {
			value.Exprs = append(value.Exprs, sqlparser.Clone(e))
		}
		c.value = b.hiddenColumn(value)
		c.keys = append(c.keys, engine.SortKey{Col: c.value})
		b.push.GroupBy.Exprs = append(b.push.GroupBy.Exprs, sqlparser.Clone(sqlparser.Expr(value)))
		if c.sep, err = separator(c.expr); err != nil {
			return err
		}
	}
	b.spec.Order = append(b.spec.Order, b.concats[0].keys...)
	b.countCol = b.addHidden(&sqlparser.CountStar{})
	maxLen, perr := weightParser().ParseExpr("@@group_concat_max_len")
	if perr != nil {
		return fmt.Errorf("planner: %w", perr)
	}
	b.maxLenCol = b.addHidden(maxLen)
	return nil
}

// concatIndex is f's place among the statement's GROUP_CONCATs, or -1.
func (b *mergeBuilder) concatIndex(f *sqlparser.GroupConcatExpr) int {
	for i, c := range b.concats {
		if sqlparser.Equals.RefOfGroupConcatExpr(c.expr, f) {
			return i
		}
	}
	return -1
}

// concatPlan is one GROUP_CONCAT of a merge: the columns of its ORDER BY
// keys and of its value (last of keys), and its separator.
type concatPlan struct {
	expr  *sqlparser.GroupConcatExpr
	keys  []engine.SortKey
	value int
	sep   string
}

// separator is a GROUP_CONCAT's SEPARATOR's value (Vitess keeps it as a
// string literal), ',' when it has none.
func separator(f *sqlparser.GroupConcatExpr) (string, error) {
	if f.Separator == "" {
		return ",", nil
	}
	e, err := weightParser().ParseExpr(f.Separator)
	if l, ok := e.(*sqlparser.Literal); err == nil && ok && l.Type == sqlparser.StrVal {
		return l.Val, nil
	}
	return "", notSupported("the GROUP_CONCAT() SEPARATOR " + f.Separator + " across shards")
}

// orderedByItself: a GROUP_CONCAT(DISTINCT x ORDER BY x) orders by its
// own expressions, in their order.
func orderedByItself(f *sqlparser.GroupConcatExpr) bool {
	if len(f.OrderBy) > len(f.Exprs) {
		return false
	}
	for i, o := range f.OrderBy {
		if !sqlparser.Equals.Expr(o.Expr, f.Exprs[i]) {
			return false
		}
	}
	return true
}

// distinctIndex is arg's place among the DISTINCT arguments, or -1.
func (b *mergeBuilder) distinctIndex(arg sqlparser.Expr) int {
	for i, a := range b.distinctArgs {
		if sqlparser.Equals.Expr(a, arg) {
			return i
		}
	}
	return -1
}

// distinctArgOf is the argument of a DISTINCT aggregate.
func distinctArgOf(f sqlparser.AggrFunc) sqlparser.Expr {
	switch f := f.(type) {
	case *sqlparser.Count:
		if len(f.Args) == 1 {
			return f.Args[0]
		}
	case *sqlparser.Sum:
		return f.Arg
	case *sqlparser.Avg:
		return f.Arg
	}
	return nil
}

// item plans visible item i: an aggregate combined in its own column, an
// expression over aggregates computed from hidden columns, or a value of
// the group (its first row's).
func (b *mergeBuilder) item(i int, e sqlparser.Expr) error {
	if !containsAggregate(e) {
		return nil
	}
	if agg, ok := b.extremeOf(e); ok {
		return b.takeWith(agg, i) // the shards compute it whole
	}
	if f, ok := e.(sqlparser.AggrFunc); ok {
		kind, err := aggKind(f)
		if err != nil {
			return err
		}
		if kind != 0 {
			b.aggregate(i, kind, f)
			b.aggCols[sqlparser.String(f)] = i
			return nil
		}
	}
	lifted, err := b.lift(e)
	if err != nil {
		return err
	}
	expr, err := translate(lifted)
	if err != nil {
		return err
	}
	b.spec.Computed = append(b.spec.Computed, engine.ComputedColumn{Col: i, Expr: expr, Operands: b.operands(lifted)})
	return nil
}

func (b *mergeBuilder) aggregate(col int, kind engine.AggKind, f sqlparser.AggrFunc) {
	a := engine.Aggregate{Kind: kind, Col: col}
	switch kind {
	case engine.AggCountDistinct, engine.AggSumDistinct:
		a.Arg = b.distinctCols[b.distinctIndex(distinctArgOf(f))]
	case engine.AggGroupConcat:
		c := &b.concats[b.concatIndex(f.(*sqlparser.GroupConcatExpr))]
		a.Arg, a.Count, a.MaxLen, a.Keys = c.value, b.countCol, b.maxLenCol, c.keys
		a.Sep, a.Distinct = c.sep, c.expr.Distinct
	}
	b.spec.Aggregates = append(b.spec.Aggregates, a)
}

// aggKind is how an aggregate's per-shard values combine; 0 for AVG,
// which is computed from a SUM and a COUNT. Aggregates no merge combines
// exactly are refused.
func aggKind(f sqlparser.AggrFunc) (engine.AggKind, error) {
	switch f := f.(type) {
	case *sqlparser.CountStar:
		return engine.AggCount, nil
	case *sqlparser.Count:
		if f.Distinct {
			return engine.AggCountDistinct, nil
		}
		return engine.AggCount, nil
	case *sqlparser.Sum:
		if f.Distinct {
			return engine.AggSumDistinct, nil
		}
		return engine.AggSum, nil
	case *sqlparser.Min:
		return engine.AggMin, nil
	case *sqlparser.Max:
		return engine.AggMax, nil
	case *sqlparser.BitAnd:
		return engine.AggBitAnd, nil
	case *sqlparser.BitOr:
		return engine.AggBitOr, nil
	case *sqlparser.BitXor:
		return engine.AggBitXor, nil
	case *sqlparser.Avg:
		return 0, nil
	case *sqlparser.GroupConcatExpr:
		return engine.AggGroupConcat, nil
	}
	return 0, notSupported(strings.ToUpper(f.AggrName()) + "() across shards")
}

// aggColumn is the column holding aggregate f's combined value, a hidden
// one added if no visible item is f.
func (b *mergeBuilder) aggColumn(f sqlparser.AggrFunc) (int, error) {
	key := sqlparser.String(f)
	if col, ok := b.aggCols[key]; ok {
		return col, nil
	}
	kind, err := aggKind(f)
	if err != nil {
		return 0, err
	}
	if kind == 0 {
		return 0, fmt.Errorf("planner: aggColumn of AVG")
	}
	col := b.hiddenColumn(f)
	b.aggregate(col, kind, f)
	b.aggCols[key] = col
	return col, nil
}

// lift rewrites an expression over aggregates for the merge: aggregates
// become the columns holding their combined values (AVG the division of
// a SUM by a COUNT), an alias the item it names, and every other part
// without an aggregate (a group key, a constant, a parameter) a hidden
// column the shards compute: evalengine then sees only columns and
// operators, and every value is typed as the server types it.
func (b *mergeBuilder) lift(e sqlparser.Expr) (sqlparser.Expr, error) {
	var err error
	out := sqlparser.CopyOnRewrite(e, func(n, _ sqlparser.SQLNode) bool {
		switch n := n.(type) {
		case *sqlparser.Subquery:
			err = notSupported("a subquery among aggregates across shards")
			return false
		case sqlparser.ValTuple:
			return true // its elements are lifted one by one
		case sqlparser.AggrFunc:
			return false
		case sqlparser.Expr:
			if _, ok := b.extremeOf(n); ok {
				return false // the shards compute it whole (merge_extreme.go)
			}
			return containsAggregate(n) || b.namesAlias(n)
		}
		return true
	}, func(c *sqlparser.CopyOnWriteCursor) {
		expr, ok := c.Node().(sqlparser.Expr)
		if err != nil || !ok {
			return
		}
		if _, tuple := expr.(sqlparser.ValTuple); tuple {
			return
		}
		var col int
		agg, extreme := b.extremeOf(expr)
		switch {
		case isAggregate(expr):
			if avg, ok := expr.(*sqlparser.Avg); ok {
				c.Replace(b.avg(avg))
				return
			}
			col, err = b.aggColumn(expr.(sqlparser.AggrFunc))
		case extreme:
			col = b.hiddenColumn(expr)
			err = b.takeWith(agg, col)
		case b.itemByAlias(expr) >= 0:
			col, err = b.liftValue(expr)
		case containsAggregate(expr) || b.namesAlias(expr):
			return // its parts are lifted
		default:
			col, err = b.liftValue(expr)
		}
		c.Replace(sqlparser.NewOffset(col, expr))
	}, nil)
	if err != nil {
		return nil, err
	}
	return out.(sqlparser.Expr), nil
}

// liftValue is the column of a part of an expression over aggregates
// that has none: the item an alias names (HAVING c > 1), else a hidden
// column the shards compute (a group key, a constant, a parameter).
func (b *mergeBuilder) liftValue(e sqlparser.Expr) (int, error) {
	if i := b.itemByAlias(e); i >= 0 {
		switch b.tableHasColumn(e.(*sqlparser.ColName).Name.String()) {
		case -1:
			return i, nil
		case 0:
			return 0, notSupported("the name " + sqlparser.String(e) + ", an alias and maybe a column, among aggregates across shards")
		}
	}
	if b.namesAlias(e) {
		return 0, notSupported("an expression of a select-list alias among aggregates across shards; use the alias alone or the expression it names")
	}
	b.liftedValues = true
	return b.hiddenColumn(e), nil
}

// avg is AVG(x) as the merge computes it: SUM(x) / COUNT(x) (DISTINCT
// alike) over their combined columns.
func (b *mergeBuilder) avg(f *sqlparser.Avg) sqlparser.Expr {
	sum, _ := b.aggColumn(&sqlparser.Sum{Arg: f.Arg, Distinct: f.Distinct})
	count, _ := b.aggColumn(&sqlparser.Count{Args: []sqlparser.Expr{f.Arg}, Distinct: f.Distinct})
	return &sqlparser.BinaryExpr{Operator: sqlparser.DivOp,
		Left:  sqlparser.NewOffset(sum, f),
		Right: sqlparser.NewOffset(count, f)}
}

// groupedOrderKey resolves an ORDER BY key of a grouped SELECT: a
// position, an alias, a group key, an aggregate, or an expression over
// aggregates (a hidden column computed by the merge).
func (b *mergeBuilder) groupedOrderKey(o *sqlparser.Order) (engine.SortKey, error) {
	k := engine.SortKey{Desc: o.Direction == sqlparser.DescOrder}
	switch {
	case position(o.Expr):
		i, err := b.positionItem(o.Expr, "ORDER BY")
		k.Col = i
		return k, err
	case b.itemByAlias(o.Expr) >= 0:
		k.Col = b.itemByAlias(o.Expr)
		return k, nil
	}
	for i, se := range b.push.SelectExprs.Exprs[:b.visible] {
		if ae, ok := se.(*sqlparser.AliasedExpr); ok && sqlparser.Equals.Expr(ae.Expr, o.Expr) {
			k.Col = i
			return k, nil
		}
	}
	if !containsAggregate(o.Expr) {
		if b.namesAlias(o.Expr) {
			return k, notSupported("ORDER BY an expression of a select-list alias across shards; order by the alias or the expression it names")
		}
		k.Col = b.hiddenColumn(o.Expr) // a group key's value, or any row's
		return k, nil
	}
	if agg, ok := b.extremeOf(o.Expr); ok {
		k.Col = b.hiddenColumn(o.Expr)
		return k, b.takeWith(agg, k.Col)
	}
	if f, ok := o.Expr.(sqlparser.AggrFunc); ok {
		if _, avg := f.(*sqlparser.Avg); !avg {
			col, err := b.aggColumn(f)
			k.Col = col
			return k, err
		}
	}
	lifted, err := b.lift(o.Expr)
	if err != nil {
		return k, err
	}
	expr, err := translate(lifted)
	if err != nil {
		return k, err
	}
	k.Col = b.hiddenColumn(o.Expr)
	b.spec.Computed = append(b.spec.Computed, engine.ComputedColumn{Col: k.Col, Expr: expr, Operands: b.operands(lifted)})
	return k, nil
}

// containsConcat reports a GROUP_CONCAT in e outside its subqueries.
func containsConcat(e sqlparser.Expr) bool {
	found := false
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		switch n.(type) {
		case *sqlparser.Subquery:
			return false, nil
		case *sqlparser.GroupConcatExpr:
			found = true
		}
		return !found, nil
	}, e)
	return found
}

func isAggregate(e sqlparser.Expr) bool {
	_, ok := e.(sqlparser.AggrFunc)
	return ok
}

// containsAggregate reports an aggregate in n outside its subqueries.
func containsAggregate(n sqlparser.SQLNode) bool {
	if n == nil {
		return false
	}
	found := false
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		switch n.(type) {
		case *sqlparser.Subquery:
			return false, nil
		case sqlparser.AggrFunc:
			found = true
			return false, nil
		}
		return !found, nil
	}, n)
	return found
}

// translate compiles an expression over the merged row's columns.
func translate(e sqlparser.Expr) (evalengine.Expr, error) {
	expr, err := evalengine.Translate(e, &evalengine.Config{
		Environment: evalEnv(),
		Collation:   collations.CollationUtf8mb4ID,
	})
	if err != nil {
		return nil, notSupported(fmt.Sprintf("the expression %s across shards (%v)", sqlparser.String(e), err))
	}
	return expr, nil
}
