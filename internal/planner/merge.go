package planner

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"vitess.io/vitess/go/mysql/collations"
	"vitess.io/vitess/go/vt/sqlparser"
	"vitess.io/vitess/go/vt/vtenv"
	"vitess.io/vitess/go/vt/vtgate/evalengine"

	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sharding"
)

// A SELECT whose rows are on several sub-tables is answered by a merge
// (engine.Merge): every shard runs a pushed-down SELECT whose rows come
// sorted the way the merge needs them, with the values it needs in hidden
// columns after the client's, and the proxy combines the shards' streams.
// The shards compute every value and type every column, so the client
// sees a server's column definitions; the merge computes only what
// combines rows of several shards (sums, counts, the extremes, AVG's
// division, expressions over aggregates, HAVING).
//
//	SELECT a, SUM(b) * 2 FROM t GROUP BY a HAVING COUNT(*) > 1 ORDER BY 2 DESC LIMIT 3
//
// is pushed as
//
//	SELECT a, SUM(b) * 2, SUM(b), COUNT(*), 1 FROM t_0007 GROUP BY a ORDER BY 1
//
// merged by a (the group key, first of Order), SUM(b) and COUNT(*)
// combined, column 2 computed as hidden SUM(b) * 2, HAVING evaluated over
// the hidden COUNT(*) and the hidden constant 1, and the groups sorted
// again by column 2 (Final) in a heap of 3 rows.

// MergePlan is how a statement shape's SELECT is merged across shards.
// Immutable once built, shared by every session.
type MergePlan struct {
	// Tmpl is the pushed-down statement for one sub-table.
	Tmpl *Template
	Spec *engine.MergeSpec
	// ShardOrder ends a shard's UNION ALL of several sub-tables' SELECTs
	// so that its rows arrive in Spec.Order: " order by 1 asc, 3 desc",
	// or "" when the order does not matter.
	ShardOrder string
	Limit      LimitPlan
	// Probe is the client's own statement for one sub-table: the column
	// probe (engine.Merge.Probe), whose definitions the client gets,
	// learnt once per shape into Columns.
	Probe   *Template
	Columns engine.ColumnCache
}

// LimitPlan is where an execution's LIMIT comes from.
type LimitPlan struct {
	Has                 bool
	hasOffset           bool
	offsetRef, countRef valRef
	// Push: the shards get LIMIT offset+count (Template.AppendLimit), so
	// none sends more rows than the answer can use. Otherwise they send
	// every row, read only until the merge has its rows.
	Push bool
}

// Values returns an execution's LIMIT offset and count.
func (l *LimitPlan) Values(v Values) (offset, count uint64, err error) {
	if !l.Has {
		return 0, 0, nil
	}
	if count, err = limitValue(l.countRef, v); err != nil {
		return 0, 0, err
	}
	if l.hasOffset {
		if offset, err = limitValue(l.offsetRef, v); err != nil {
			return 0, 0, err
		}
	}
	return offset, count, nil
}

var limitType = sharding.ColumnType{Class: sharding.ClassUint}

func limitValue(r valRef, v Values) (uint64, error) {
	val, err := r.convert(limitType, v)
	if err != nil || val.IsNull() {
		return 0, notSupported("a LIMIT value that is not a non-negative integer, across shards")
	}
	switch val.Kind() {
	case sharding.KindInt:
		if val.Int() < 0 {
			return 0, notSupported("a negative LIMIT value")
		}
		return uint64(val.Int()), nil
	case sharding.KindUint:
		return val.Uint(), nil
	}
	return 0, notSupported("a LIMIT value that is not an integer, across shards")
}

// errPositional: the SELECT orders or groups by a select-list position,
// which the shape's plan cannot know (every number is a literal of the
// shape): plan the statement's own text (Keyspace.build).
var errPositional = errors.New("planner: ORDER BY or GROUP BY position")

// evalEnv is the environment Vitess's evalengine compiles the merge's
// expressions in.
var evalEnv = sync.OnceValue(func() *vtenv.Environment {
	env, err := vtenv.New(vtenv.Options{MySQLServerVersion: "8.0.40"})
	if err != nil {
		panic(fmt.Sprintf("planner: vitess environment: %v", err)) // constant options: a programming error
	}
	return env
})

// newMergePlan plans the merge of the statement's own SELECT (an.TopMerge
// lists what it has) over several sub-tables. Its errors are the 1235
// refusals of what a merge cannot answer exactly, or errPositional.
func newMergePlan(p Parsed, an *Analysis, sh *router.Shape, rename Rename, k *Keyspace, budget int64) (*MergePlan, error) {
	if u, ok := p.Stmt.(*sqlparser.Union); ok {
		return newUnionMerge(p, u, sh, rename)
	}
	sel, ok := p.Stmt.(*sqlparser.Select)
	if !ok {
		return nil, notSupported("this statement across shards")
	}
	b := &mergeBuilder{client: sel, push: sqlparser.CloneRefOfSelect(sel), columns: k.tableColumns, collated: k.columnCollated, items: map[*sqlparser.AliasedExpr]int{}}
	b.spec.Budget = budget // 0: engine.DefaultMergeBudget
	b.spec.Spill = !k.Schema.MergeRefuse
	if err := b.build(an); err != nil {
		return nil, err
	}
	if err := b.addWeights(); err != nil {
		return nil, err
	}
	for _, e := range b.hidden {
		b.push.SelectExprs.Exprs = append(b.push.SelectExprs.Exprs, &sqlparser.AliasedExpr{Expr: e})
	}
	b.spec.Hidden = len(b.hidden)
	lits, params := droppedIn(sh, sel.Limit, sel.OrderBy, sel.Having)
	b.push.Limit = &sqlparser.Limit{Rowcount: sqlparser.NewArgument(mergeLimitArg)} // the limit slot
	tmpl, err := newTemplateWith(p, sh, rename, templateOptions{items: b.items, itemCount: len(sel.SelectExprs.Exprs), limit: b.push.Limit, dropped: lits, droppedParams: params}, b.push)
	if err != nil {
		return nil, err
	}
	probe, err := probeTemplate(p, sh, rename, sel)
	if err != nil {
		return nil, err
	}
	mp := &MergePlan{Tmpl: tmpl, Spec: &b.spec, Limit: b.limit, Probe: probe}
	mp.ShardOrder = shardOrder(b.spec.Order)
	return mp, nil
}

// probeTemplate is the column probe of a merge: the client's statement
// as written, for one sub-table. MariaDB types some columns by its plan
// (a temporary table's fields lose their key flags, LIMIT 0 or an answer
// without rows others again), so only the client's own statement,
// LIMIT included, gives the definitions one server would.
func probeTemplate(p Parsed, sh *router.Shape, rename Rename, stmt sqlparser.TableStatement) (*Template, error) {
	if hasEffects(stmt) {
		return nil, nil // not run twice: the parts' definitions serve
	}
	return newTemplateWith(p, sh, rename, templateOptions{}, stmt)
}

// effectFuncs are functions whose call does something beyond its value:
// a statement calling one is not probed (run once more).
var effectFuncs = map[string]bool{
	"sleep": true, "benchmark": true, "get_lock": true, "release_lock": true, "release_all_locks": true,
	"last_insert_id": true, "nextval": true, "setval": true, "lastval": true, "master_pos_wait": true,
	"master_gtid_wait": true, "load_file": true,
}

// hasEffects reports a call of an effectFuncs function, or of a stored
// function named with its database, in stmt.
func hasEffects(stmt sqlparser.SQLNode) bool {
	found := false
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		switch f := n.(type) {
		case *sqlparser.FuncExpr:
			found = found || effectFuncs[f.Name.Lowered()] || !f.Qualifier.IsEmpty()
		case *sqlparser.Nextval, *sqlparser.LockingFunc:
			found = true
		}
		return !found, nil
	}, stmt)
	return found
}

func shardOrder(keys []engine.SortKey) string {
	if len(keys) == 0 {
		return ""
	}
	var s strings.Builder
	s.WriteString(" order by ")
	for i, k := range keys {
		if i > 0 {
			s.WriteString(", ")
		}
		s.WriteString(strconv.Itoa(k.Col + 1))
		if k.Desc {
			s.WriteString(" desc")
		} else {
			s.WriteString(" asc")
		}
	}
	return s.String()
}

// mergeBuilder turns the client's SELECT into the shards' (push) and the
// merge's spec.
type mergeBuilder struct {
	client  *sqlparser.Select
	push    *sqlparser.Select
	columns func(table string) ([]string, bool)
	// collated says whether a column of a sharded table holds character
	// strings, and whether that is known.
	collated func(table, column string) (collated, known bool)
	// visible is the number of columns the client sees (its select list
	// with stars written out).
	visible int
	hidden  []sqlparser.Expr
	spec    engine.MergeSpec
	limit   LimitPlan
	// items maps the pushed list's items the server names by their text
	// to the client's item (for the template's aliases).
	items map[*sqlparser.AliasedExpr]int
	// aggCols are the columns holding each aggregate (by its text).
	aggCols map[string]int
	// distinctArgs are the arguments of the statement's DISTINCT
	// aggregates, each once, and distinctCols their columns.
	distinctArgs []sqlparser.Expr
	distinctCols []int
	// concats are the statement's GROUP_CONCATs; countCol holds the
	// rows each part row stands for, maxLenCol group_concat_max_len.
	concats             []concatPlan
	countCol, maxLenCol int
	// liftedValues: an expression over aggregates reads a hidden
	// column that is no aggregate (a constant, a group key).
	liftedValues bool
	// groupExprs are the GROUP BY's expressions, with their columns.
	groupExprs []sqlparser.Expr
	groupCols  []int
}

func (b *mergeBuilder) build(an *Analysis) error {
	s := b.client
	if s.GroupBy != nil && s.GroupBy.WithRollup {
		return notSupported("GROUP BY … WITH ROLLUP across shards")
	}
	if err := b.expandStars(); err != nil {
		return err
	}
	b.visible = len(b.push.SelectExprs.Exprs)
	if err := b.planLimit(); err != nil {
		return err
	}
	grouped := s.GroupBy != nil && len(s.GroupBy.Exprs) > 0
	aggregated := grouped || containsAggregate(s.SelectExprs) || containsAggregate(s.Having) || containsAggregate(s.OrderBy)
	switch {
	case !aggregated && !s.Distinct, grouped && an.GroupsOnKey && !s.Distinct:
		return b.orderMerge(grouped)
	case !aggregated:
		return b.distinctMerge()
	case s.Distinct:
		return notSupported("SELECT DISTINCT with GROUP BY or aggregates, across shards")
	}
	return b.groupMerge(grouped)
}

// expandStars writes out `*` and `t.*` in the pushed select list, from
// the columns learnt from the shards, so that every column's position is
// known: the merge addresses the hidden columns after them. It records
// the items the server names by their text, with their place in the
// client's list, for the template's aliases.
func (b *mergeBuilder) expandStars() error {
	var out []sqlparser.SelectExpr
	for i, e := range b.push.SelectExprs.Exprs {
		star, ok := e.(*sqlparser.StarExpr)
		if !ok {
			if ae, ok := e.(*sqlparser.AliasedExpr); ok && ae.As.IsEmpty() && needsName(ae.Expr) {
				b.items[ae] = i // named by the client's text (Template.SelectItems)
			}
			out = append(out, e)
			continue
		}
		name, qual, err := b.starTable(star)
		if err != nil {
			return err
		}
		cols, ok := b.columns(name)
		if !ok {
			return notSupported("SELECT * across shards before the columns of " + name + " are known; list the columns")
		}
		for _, c := range cols {
			col := &sqlparser.ColName{Name: sqlparser.NewIdentifierCI(c), Qualifier: qual}
			out = append(out, &sqlparser.AliasedExpr{Expr: col})
		}
	}
	b.push.SelectExprs.Exprs = out
	return nil
}

// starTable is the table a star of the statement reads: it must be the
// only table of its FROM, or name one by its name or alias.
func (b *mergeBuilder) starTable(star *sqlparser.StarExpr) (name string, qual sqlparser.TableName, err error) {
	refuse := notSupported("SELECT * over several tables across shards; list the columns")
	tables, ok := b.fromTables()
	if !ok {
		return "", qual, refuse
	}
	for _, t := range tables {
		if star.TableName.IsEmpty() {
			if len(tables) != 1 {
				return "", qual, refuse
			}
			return t.name, star.TableName, nil
		}
		if strings.EqualFold(star.TableName.Name.String(), t.exposed) {
			return t.name, star.TableName, nil
		}
	}
	return "", qual, refuse
}

// fromTable is a table of the statement's FROM: its name, and the name
// its columns are qualified with (its alias, if it has one).
type fromTable struct{ name, exposed string }

// fromTables lists the FROM's tables; false when it has anything else (a
// JOIN clause, a derived table).
func (b *mergeBuilder) fromTables() ([]fromTable, bool) {
	var tables []fromTable
	for _, te := range b.client.From {
		at, ok := te.(*sqlparser.AliasedTableExpr)
		if !ok {
			return nil, false
		}
		tn, ok := at.Expr.(sqlparser.TableName)
		if !ok {
			return nil, false
		}
		t := fromTable{name: tn.Name.String(), exposed: tn.Name.String()}
		if !at.As.IsEmpty() {
			t.exposed = at.As.String()
		}
		tables = append(tables, t)
	}
	return tables, true
}

func needsName(e sqlparser.Expr) bool {
	switch e.(type) {
	case *sqlparser.ColName, *sqlparser.Literal, *sqlparser.Argument:
		return false
	}
	return true
}

func (b *mergeBuilder) planLimit() error {
	b.push.Limit = nil
	return b.limitOf(b.client.Limit)
}

// limitOf reads where the statement's LIMIT values come from.
func (b *mergeBuilder) limitOf(l *sqlparser.Limit) error {
	if l == nil {
		return nil
	}
	count, ok := valueOf(l.Rowcount)
	if !ok {
		return notSupported("a LIMIT that is not a number or a parameter, across shards")
	}
	b.limit = LimitPlan{Has: true, countRef: count}
	if l.Offset != nil {
		off, ok := valueOf(l.Offset)
		if !ok {
			return notSupported("a LIMIT offset that is not a number or a parameter, across shards")
		}
		b.limit.offsetRef, b.limit.hasOffset = off, true
	}
	return nil
}

// pushLimit sends the shards LIMIT offset+count when the rows the answer
// takes are among the first offset+count of every shard's, and the
// values are in the statement's text (a parameter's value would make a
// new server-side statement per value).
func (b *mergeBuilder) pushLimit() {
	if !b.limit.Has || b.limit.countRef.src == srcParam || b.limit.hasOffset && b.limit.offsetRef.src == srcParam {
		return
	}
	b.limit.Push = true
}

// mergeLimitArg marks the pushed LIMIT's slot in the template.
const mergeLimitArg = "sgmergelimit"

// column returns the column of the pushed rows that holds e: a visible
// item equal to it, else a hidden column added for it.
func (b *mergeBuilder) column(e sqlparser.Expr) int {
	for i, se := range b.push.SelectExprs.Exprs[:b.visible] {
		if ae, ok := se.(*sqlparser.AliasedExpr); ok && b.sameExpr(ae.Expr, e) {
			return i
		}
	}
	return b.hiddenColumn(e)
}

// sameExpr reports expressions that are the same, a column named with or
// without its table's qualifier alike when the FROM reads one table.
func (b *mergeBuilder) sameExpr(x, y sqlparser.Expr) bool {
	if sqlparser.Equals.Expr(x, y) {
		return true
	}
	cx, ok1 := x.(*sqlparser.ColName)
	cy, ok2 := y.(*sqlparser.ColName)
	if !ok1 || !ok2 || !cx.Name.Equal(cy.Name) || len(b.client.From) != 1 {
		return false
	}
	if _, one := b.client.From[0].(*sqlparser.AliasedTableExpr); !one {
		return false
	}
	return cx.Qualifier.IsEmpty() || cy.Qualifier.IsEmpty() || cx.Qualifier.Name.String() == cy.Qualifier.Name.String()
}

// addHidden adds a hidden column holding e, even when one does.
func (b *mergeBuilder) addHidden(e sqlparser.Expr) int {
	b.hidden = append(b.hidden, e)
	return b.visible + len(b.hidden) - 1
}

// hiddenColumn returns a hidden column holding e, added if need be.
func (b *mergeBuilder) hiddenColumn(e sqlparser.Expr) int {
	for j, h := range b.hidden {
		if sqlparser.Equals.Expr(h, e) {
			return b.visible + j
		}
	}
	b.hidden = append(b.hidden, sqlparser.Clone(e))
	return b.visible + len(b.hidden) - 1
}

// itemByAlias returns the visible item an unqualified name denotes as an
// alias, or -1.
func (b *mergeBuilder) itemByAlias(e sqlparser.Expr) int {
	c, ok := e.(*sqlparser.ColName)
	if !ok || !c.Qualifier.IsEmpty() {
		return -1
	}
	for i, se := range b.push.SelectExprs.Exprs[:b.visible] {
		if ae, ok := se.(*sqlparser.AliasedExpr); ok && ae.As.EqualString(c.Name.String()) {
			return i
		}
	}
	return -1
}

// position reports whether e is a select-list position (ORDER BY 2).
func position(e sqlparser.Expr) bool {
	switch x := e.(type) {
	case *sqlparser.Literal:
		return x.Type == sqlparser.IntVal
	case *sqlparser.Argument:
		return strings.HasPrefix(x.Name, router.LitPrefix)
	}
	return false
}

// positionItem is the item a literal position names (1-based).
func (b *mergeBuilder) positionItem(e sqlparser.Expr, clause string) (int, error) {
	l, ok := e.(*sqlparser.Literal)
	if !ok {
		return 0, errPositional
	}
	n, err := strconv.Atoi(l.Val)
	if err != nil || n < 1 || n > len(b.client.SelectExprs.Exprs) {
		return 0, notSupported(clause + " position " + l.Val + " across shards")
	}
	if _, star := b.client.SelectExprs.Exprs[n-1].(*sqlparser.StarExpr); star || b.visible != len(b.client.SelectExprs.Exprs) {
		return 0, notSupported(clause + " a position of a list with * across shards")
	}
	return n - 1, nil
}

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
			w, space, werr := weightExprs(ae.Expr)
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

// droppedIn marks the literals and parameters of nodes, which the pushed
// statement does not have as the client wrote them.
func droppedIn(sh *router.Shape, nodes ...sqlparser.SQLNode) (lits, params []bool) {
	lits, params = make([]bool, len(sh.Lits)), make([]bool, len(sh.Params))
	set := func(d []bool, name, prefix string) {
		if i, err := strconv.Atoi(strings.TrimPrefix(name, prefix)); err == nil && strings.HasPrefix(name, prefix) && i >= 1 && i <= len(d) {
			d[i-1] = true
		}
	}
	for _, n := range nodes {
		_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
			if a, ok := n.(*sqlparser.Argument); ok {
				set(lits, a.Name, router.LitPrefix)
				set(params, a.Name, router.ParamPrefix)
			}
			return true, nil
		}, n)
	}
	return lits, params
}

// addWeights adds, for each column the merge compares (sort and group
// keys, DISTINCT arguments, MIN and MAX), a hidden column with its
// collation weight computed by the shard: a column definition names the
// connection's character set, not the column's collation, so the proxy
// cannot know how a string compares (a utf8mb4_bin column reads as
// utf8mb4_general_ci). The weight string of the value, with trailing
// spaces trimmed for PAD SPACE collations, compares as the collation
// does, byte by byte, for every collation the server has. Values that
// are not strings ignore it; columns the merge computes itself have none.
func (b *mergeBuilder) addWeights() error {
	var cols []int
	for _, ks := range [][]engine.SortKey{b.spec.Order, b.spec.Final} {
		for _, k := range ks {
			cols = append(cols, k.Col)
		}
	}
	for _, a := range b.spec.Aggregates {
		switch a.Kind {
		case engine.AggMin, engine.AggMax:
			cols = append(cols, a.Col)
		case engine.AggCountDistinct, engine.AggSumDistinct:
			cols = append(cols, a.Arg)
		case engine.AggGroupConcat:
			for _, k := range a.Keys {
				cols = append(cols, k.Col)
			}
		}
	}
	computed := map[int]bool{}
	for _, c := range b.spec.Computed {
		computed[c.Col] = true
	}
	weights := map[int]int{}
	for _, c := range cols {
		if _, done := weights[c]; done || computed[c] {
			continue
		}
		e := b.columnExpr(c)
		if e == nil || notString(e) || b.plainColumn(e) {
			continue
		}
		w, space, err := weightExprs(e)
		if err != nil {
			return err
		}
		weights[c] = b.addHidden(w)
		b.addHidden(space)
		if a := b.takenWith(c); a != nil {
			a.With = append(a.With, weights[c], weights[c]+1) // the winner's value's weight
		}
	}
	if len(weights) == 0 {
		return nil
	}
	b.spec.Weights = make([]int, b.visible+len(b.hidden))
	for i := range b.spec.Weights {
		b.spec.Weights[i] = -1
	}
	for c, w := range weights {
		b.spec.Weights[c] = w
	}
	return nil
}

// columnExpr is the expression of a column of the pushed rows.
func (b *mergeBuilder) columnExpr(c int) sqlparser.Expr {
	if c >= b.visible {
		return b.hidden[c-b.visible]
	}
	if ae, ok := b.push.SelectExprs.Exprs[c].(*sqlparser.AliasedExpr); ok {
		return ae.Expr
	}
	return nil
}

// plainColumn reports a column of a sharded table known to hold no
// character strings (numbers, dates, binary strings): the merge compares
// its values as they are, without weights.
func (b *mergeBuilder) plainColumn(e sqlparser.Expr) bool {
	c, ok := e.(*sqlparser.ColName)
	if !ok || b.collated == nil {
		return false
	}
	tables, ok := b.fromTables()
	if !ok {
		return false
	}
	found := false
	for _, t := range tables {
		if !c.Qualifier.IsEmpty() && !strings.EqualFold(c.Qualifier.Name.String(), t.exposed) {
			continue
		}
		collated, known := b.collated(t.name, c.Name.String())
		switch {
		case known && collated:
			return false
		case known:
			found = true
		case !c.Qualifier.IsEmpty() || len(tables) == 1:
			return false // the table is not known
		}
	}
	return found
}

// notString reports expressions whose value is never a string: their
// comparisons need no weight.
func notString(e sqlparser.Expr) bool {
	switch e := e.(type) {
	case *sqlparser.CountStar, *sqlparser.Count, *sqlparser.Sum, *sqlparser.Avg,
		*sqlparser.BitAnd, *sqlparser.BitOr, *sqlparser.BitXor:
		return true
	case *sqlparser.Literal:
		return e.Type == sqlparser.IntVal || e.Type == sqlparser.DecimalVal || e.Type == sqlparser.FloatVal
	case *sqlparser.BinaryExpr:
		return true // arithmetic and bit operators give numbers
	}
	return false
}

// weightTemplate is a value X's weight string, and spaceTemplate the
// weight of a space under X's collation: the shorter of two weights
// compares as if padded with it, as PAD SPACE collations compare ('a' =
// 'a ', 'a\t' < 'a'). The weight leaves out trailing spaces under a PAD
// SPACE collation, so that values the collation holds equal have equal
// weights (a SELECT DISTINCT with it keeps its rows, a set of weights
// counts each value once). Binary strings and NO PAD collations have no
// space weight and keep their spaces.
const (
	noPad          = "collation(X) = 'binary' or collation(X) like '%nopad%' or collation(X) like '%0900%'"
	weightTemplate = "weight_string(if(" + noPad + ", X, trim(trailing ' ' from X)))"
	spaceTemplate  = "if(" + noPad + ", '', weight_string(concat(left(X, 0), ' ')))"
)

// weightExprs are the weight and space columns of a value e (see
// MergeSpec.Weights).
func weightExprs(e sqlparser.Expr) (weight, space sqlparser.Expr, err error) {
	x := sqlparser.String(e)
	if weight, err = weightParser().ParseExpr(strings.ReplaceAll(weightTemplate, "X", x)); err == nil {
		space, err = weightParser().ParseExpr(strings.ReplaceAll(spaceTemplate, "X", x))
	}
	if err != nil {
		return nil, nil, notSupported(fmt.Sprintf("comparing %s across shards (%v)", x, err))
	}
	return weight, space, nil
}

var weightParser = sync.OnceValue(func() *sqlparser.Parser { return sqlparser.NewTestParser() })
