package planner

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"vitess.io/vitess/go/vt/sqlparser"
	"vitess.io/vitess/go/vt/vtenv"

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
//
// One concern per file: this one builds the plan (the select list, the
// hidden columns, LIMIT); merge_order.go plans ORDER BY and DISTINCT,
// merge_group.go GROUP BY, aggregates and HAVING, merge_extreme.go what
// depends on one MIN or MAX alone, merge_union.go UNION, and
// merge_weight.go the weights strings are compared by.

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
	b := &mergeBuilder{client: sel, push: sqlparser.CloneRefOfSelect(sel), columns: k.tableColumns, collation: k.columnCollation, items: map[*sqlparser.AliasedExpr]int{}}
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
	// collation says whether a column of a sharded table holds character
	// strings, under which collation ("": not known), and whether that is
	// known.
	collation func(table, column string) (coll string, collated, known bool)
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
