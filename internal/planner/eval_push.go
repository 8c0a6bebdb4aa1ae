package planner

import (
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sharding"
)

// An evaluated statement copies only the rows of a sharded table that
// can matter to it: the conditions of its WHERE (or of a join's ON) that
// read that table alone are pushed to the table's fetch, which is then
// planned as any statement on it, routed by its shard key to the
// sub-tables that can hold the rows. A condition is pushed only when the
// shard computes it as the evaluator would and without a warning of its
// own: a column of the table compared with a literal of its kind (a
// string column with a quoted string, a numeric column with a number),
// IN, BETWEEN, LIKE, IS [NOT] NULL, and AND, OR, NOT of those. A reference on the NULL side of an outer join takes its ON's
// conditions only (its WHERE's would keep rows the join extends with
// NULLs); a table named several times gets the OR of each reference's
// conditions, or every row when one reference has none.

// fromRef is a table's reference in one SELECT's FROM: a sharded table
// (table), or an unsharded or reference table of the schema (local, its
// qualified name on the evaluator).
type fromRef struct {
	table *sharding.SchemaTable
	local string
	qual  string // the name its columns are qualified with: the alias, else the table's
	// nullable: on the NULL side of an outer join, whose WHERE conditions
	// may hold for the rows it extends with NULLs.
	nullable bool
	// on are the conditions of the joins' ON that filter this
	// reference's rows (those of an inner join, or of an outer join whose
	// NULL side it is on).
	on []sqlparser.Expr
}

// pushdown gives each sharded table stmt names the condition its rows
// must meet to matter, nil for every row.
type pushdown struct {
	k      *Keyspace
	db     string
	ctes   map[string]bool
	sh     *router.Shape
	exact  bool // the AST holds the literals as written (Parsed.Exact)
	conds  map[*sharding.SchemaTable][]sqlparser.Expr
	allRow map[*sharding.SchemaTable]bool
	// refs counts each sharded table's references; reductions lists the
	// join equalities that tie its shard key to another table's column.
	refs       map[*sharding.SchemaTable]int
	reductions map[*sharding.SchemaTable][]reduction
}

// reduction is a join equality r.key = src.col: the rows of r that can
// join are those whose key is among src's values of col.
type reduction struct {
	src    *sharding.SchemaTable // nil for a local table
	local  string                // the local table's qualified name
	column string
	// subquery: r.key IN (subquery), an uncorrelated SELECT of one
	// column of one table (subTables: the sharded ones it reads).
	subquery  *sqlparser.Select
	subTables []*sharding.SchemaTable
}

// pushdowns walks every SELECT of stmt.
func (k *Keyspace) pushdowns(stmt sqlparser.Statement, db string, ctes map[string]bool, sh *router.Shape, exact bool) *pushdown {
	p := &pushdown{k: k, db: db, ctes: ctes, sh: sh, exact: exact,
		conds: map[*sharding.SchemaTable][]sqlparser.Expr{}, allRow: map[*sharding.SchemaTable]bool{},
		refs: map[*sharding.SchemaTable]int{}, reductions: map[*sharding.SchemaTable][]reduction{}}
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		if s, ok := n.(*sqlparser.Select); ok {
			p.selectStmt(s)
		}
		return true, nil
	}, stmt)
	return p
}

// condition is the condition table t's rows must meet, nil for none.
func (p *pushdown) condition(t *sharding.SchemaTable) sqlparser.Expr {
	if p.allRow[t] || len(p.conds[t]) == 0 {
		return nil
	}
	var or sqlparser.Expr
	for _, c := range p.conds[t] {
		if or == nil {
			or = c
			continue
		}
		or = &sqlparser.OrExpr{Left: or, Right: c}
	}
	return or
}

// selectStmt records the conditions of each sharded reference of s.
func (p *pushdown) selectStmt(s *sqlparser.Select) {
	var refs []*fromRef
	single := len(s.From) == 1
	for _, te := range s.From {
		refs = append(refs, p.tableExpr(te, false, &single)...)
	}
	var where []sqlparser.Expr
	if s.Where != nil {
		where = splitAnd(s.Where.Expr, nil)
	}
	for _, r := range refs {
		if r.table == nil {
			continue
		}
		p.refs[r.table]++
		var conds []sqlparser.Expr
		candidates := r.on
		if !r.nullable {
			candidates = append(append([]sqlparser.Expr(nil), where...), r.on...)
		}
		for _, c := range candidates {
			if p.pushable(c, r, single) {
				conds = append(conds, p.requalify(c, r))
			}
			if red, ok := p.reduction(c, r, refs, single); ok {
				p.reductions[r.table] = append(p.reductions[r.table], red)
			}
		}
		if len(conds) == 0 {
			p.allRow[r.table] = true
			continue
		}
		and := conds[0]
		for _, c := range conds[1:] {
			and = &sqlparser.AndExpr{Left: and, Right: c}
		}
		p.conds[r.table] = append(p.conds[r.table], and)
	}
}

// tableExpr lists the sharded references of te; single is cleared when
// te is more than one table (an unqualified column could be another's).
func (p *pushdown) tableExpr(te sqlparser.TableExpr, nullable bool, single *bool) []*fromRef {
	switch te := te.(type) {
	case *sqlparser.AliasedTableExpr:
		tn, ok := te.Expr.(sqlparser.TableName)
		if !ok {
			*single = false // a derived table
			return nil
		}
		qual := tn.Name.String()
		if !te.As.IsEmpty() {
			qual = te.As.String()
		}
		t, local := p.sharded(tn)
		if t == nil && local == "" {
			return nil
		}
		return []*fromRef{{table: t, local: local, qual: qual, nullable: nullable}}
	case *sqlparser.JoinTableExpr:
		*single = false
		left := p.tableExpr(te.LeftExpr, nullable || te.Join == sqlparser.RightJoinType, single)
		right := p.tableExpr(te.RightExpr, nullable || te.Join == sqlparser.LeftJoinType, single)
		if te.Condition == nil || te.Condition.On == nil {
			return append(left, right...)
		}
		on := splitAnd(te.Condition.On, nil)
		switch te.Join {
		case sqlparser.LeftJoinType:
			addOn(right, on)
		case sqlparser.RightJoinType:
			addOn(left, on)
		case sqlparser.NormalJoinType, sqlparser.StraightJoinType:
			addOn(left, on)
			addOn(right, on)
		}
		return append(left, right...)
	case *sqlparser.ParenTableExpr:
		var out []*fromRef
		if len(te.Exprs) > 1 {
			*single = false
		}
		for _, e := range te.Exprs {
			out = append(out, p.tableExpr(e, nullable, single)...)
		}
		return out
	}
	*single = false
	return nil
}

func addOn(refs []*fromRef, on []sqlparser.Expr) {
	for _, r := range refs {
		r.on = append(r.on, on...)
	}
}

// sharded is the sharded table tn names, or, for an unsharded or
// reference table of the schema, its qualified name; neither for a CTE
// or another database's table.
func (p *pushdown) sharded(tn sqlparser.TableName) (*sharding.SchemaTable, string) {
	name, qualifier := tn.Name.String(), tn.Qualifier.String()
	if qualifier == "" && (p.ctes[strings.ToLower(name)] || strings.EqualFold(name, "dual")) {
		return nil, ""
	}
	if qualifier == "" && p.db != p.k.Schema.Name || qualifier != "" && qualifier != p.k.Schema.Name {
		return nil, ""
	}
	t := p.k.Schema.Table(name)
	if t == nil || t.Type != sharding.TableSharded {
		return nil, quoteQualified(p.k.Schema.Name, name)
	}
	return t, ""
}

// reduction reports whether c is r.key = other.col, r's shard key of a
// numeric type equated with a column of another table of the FROM
// (refs): r's rows that can join are those whose key is among other's
// values, which the evaluator then has.
func (p *pushdown) reduction(c sqlparser.Expr, r *fromRef, refs []*fromRef, single bool) (reduction, bool) {
	cmp, ok := c.(*sqlparser.ComparisonExpr)
	if ok && cmp.Operator == sqlparser.InOp {
		return p.inSubquery(cmp, r, single)
	}
	if !ok || cmp.Operator != sqlparser.EqualOp {
		return reduction{}, false
	}
	for _, sides := range [][2]sqlparser.Expr{{cmp.Left, cmp.Right}, {cmp.Right, cmp.Left}} {
		col, ok := p.column(sides[0], r, single)
		if !ok || !col.num || !strings.EqualFold(col.name, r.table.ShardKey) {
			continue // (the fetches route by the key: semiJoin)
		}
		other, ok := sides[1].(*sqlparser.ColName)
		if !ok || other.Qualifier.IsEmpty() || !other.Qualifier.Qualifier.IsEmpty() {
			continue
		}
		for _, o := range refs {
			if o != r && o.qual == other.Qualifier.Name.String() && o.table != r.table {
				return reduction{src: o.table, local: o.local, column: other.Name.String()}, true
			}
		}
	}
	return reduction{}, false
}

// inSubquery reports whether cmp is r.key IN (SELECT col FROM one
// table WHERE …), uncorrelated (every column is that table's, qualified
// or a known column of it) and without parameters: r's rows that can
// match are those whose key is among the subquery's values, which the
// evaluator computes once its table is there.
func (p *pushdown) inSubquery(cmp *sqlparser.ComparisonExpr, r *fromRef, single bool) (reduction, bool) {
	col, ok := p.column(cmp.Left, r, single)
	sq, isSub := cmp.Right.(*sqlparser.Subquery)
	if !ok || !isSub || !col.num || !strings.EqualFold(col.name, r.table.ShardKey) {
		return reduction{}, false
	}
	sel, ok := sq.Select.(*sqlparser.Select)
	if !ok || sel.With != nil || sel.GroupBy != nil || sel.Having != nil || sel.Limit != nil || len(sel.From) != 1 ||
		len(sel.SelectExprs.Exprs) != 1 {
		return reduction{}, false
	}
	_, ok = sel.SelectExprs.Exprs[0].(*sqlparser.AliasedExpr)
	te, ok2 := sel.From[0].(*sqlparser.AliasedTableExpr)
	if !ok || !ok2 {
		return reduction{}, false
	}
	tn, ok := te.Expr.(sqlparser.TableName)
	if !ok {
		return reduction{}, false
	}
	t, local := p.sharded(tn)
	if t == nil && local == "" || t == r.table {
		return reduction{}, false
	}
	qual := tn.Name.String()
	if !te.As.IsEmpty() {
		qual = te.As.String()
	}
	own := true
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		switch n := n.(type) {
		case *sqlparser.ColName:
			switch {
			case !n.Qualifier.IsEmpty():
				own = own && n.Qualifier.Qualifier.IsEmpty() && n.Qualifier.Name.String() == qual
			case t != nil:
				_, known := t.Collated(n.Name.String())
				own = own && known
			default:
				own = false // a local table's columns are not known here
			}
		case *sqlparser.Subquery, *sqlparser.Argument:
			if a, isArg := n.(*sqlparser.Argument); !isArg || strings.HasPrefix(a.Name, "sgp") {
				own = false // a nested subquery, or a parameter
			}
		}
		return own, nil
	}, sel)
	if !own {
		return reduction{}, false
	}
	red := reduction{subquery: sel}
	if t != nil {
		red.subTables = []*sharding.SchemaTable{t}
	}
	return red, true
}

// reduced is the reduction of table t, when its only reference has one
// whose source is not reduced itself (src: sources of reductions).
func (p *pushdown) reduced(t *sharding.SchemaTable) (reduction, bool) {
	reds := p.reductions[t]
	if p.refs[t] != 1 || len(reds) == 0 {
		return reduction{}, false
	}
	red := reds[0]
	for _, src := range append([]*sharding.SchemaTable{red.src}, red.subTables...) {
		if src != nil && len(p.reductions[src]) > 0 {
			return reduction{}, false // its source would have to be reduced first
		}
	}
	return red, true
}

// splitAnd appends the conjuncts of e to out.
func splitAnd(e sqlparser.Expr, out []sqlparser.Expr) []sqlparser.Expr {
	if a, ok := e.(*sqlparser.AndExpr); ok {
		return splitAnd(a.Right, splitAnd(a.Left, out))
	}
	return append(out, e)
}

// pushable reports whether condition c reads only r's columns, in one of
// the forms its shard computes as the evaluator does, without a warning
// of its own (see the comment at the top).
func (p *pushdown) pushable(c sqlparser.Expr, r *fromRef, single bool) bool {
	switch c := c.(type) {
	case *sqlparser.AndExpr:
		return p.pushable(c.Left, r, single) && p.pushable(c.Right, r, single)
	case *sqlparser.OrExpr:
		return p.pushable(c.Left, r, single) && p.pushable(c.Right, r, single)
	case *sqlparser.NotExpr:
		return p.pushable(c.Expr, r, single)
	case *sqlparser.IsExpr:
		_, ok := p.column(c.Left, r, single)
		return ok && (c.Right == sqlparser.IsNullOp || c.Right == sqlparser.IsNotNullOp)
	case *sqlparser.BetweenExpr:
		col, ok := p.column(c.Left, r, single)
		return ok && p.literalFor(c.From, col) && p.literalFor(c.To, col)
	case *sqlparser.ComparisonExpr:
		if c.Escape != nil {
			return false
		}
		left, right := c.Left, c.Right
		col, ok := p.column(left, r, single)
		if !ok && c.Operator != sqlparser.InOp && c.Operator != sqlparser.NotInOp {
			left, right = right, left
			col, ok = p.column(left, r, single)
		}
		if !ok {
			return false
		}
		switch c.Operator {
		case sqlparser.InOp, sqlparser.NotInOp:
			tuple, ok := right.(sqlparser.ValTuple)
			if !ok || len(tuple) == 0 {
				return false
			}
			for _, v := range tuple {
				if !p.literalFor(v, col) {
					return false
				}
			}
			return true
		case sqlparser.EqualOp, sqlparser.NotEqualOp, sqlparser.LessThanOp, sqlparser.LessEqualOp,
			sqlparser.GreaterThanOp, sqlparser.GreaterEqualOp, sqlparser.NullSafeEqualOp:
			return p.literalFor(right, col)
		case sqlparser.LikeOp, sqlparser.NotLikeOp:
			return col.str && p.literalFor(right, col)
		}
	}
	return false
}

// pushColumn is a column of the reference a condition reads.
type pushColumn struct {
	name string
	str  bool // it holds character strings
	num  bool // it holds numbers (learnt from the shards, or the shard key's type)
}

// column resolves e to a column of r: qualified with r's name, or, when
// r is the SELECT's only table, unqualified and one of its columns.
func (p *pushdown) column(e sqlparser.Expr, r *fromRef, single bool) (pushColumn, bool) {
	c, ok := e.(*sqlparser.ColName)
	if !ok {
		return pushColumn{}, false
	}
	switch {
	case !c.Qualifier.IsEmpty():
		if !c.Qualifier.Qualifier.IsEmpty() || c.Qualifier.Name.String() != r.qual {
			return pushColumn{}, false
		}
	case !single:
		return pushColumn{}, false
	}
	name := c.Name.String()
	str, known := r.table.Collated(name)
	if !known {
		return pushColumn{}, false // not a column of r we know: maybe an outer query's
	}
	num := r.table.Numeric(name)
	if strings.EqualFold(name, r.table.ShardKey) {
		if kt, ok := r.table.KeyType(); ok {
			switch kt.Class {
			case sharding.ClassInt, sharding.ClassUint, sharding.ClassDecimal:
				num = true
			}
		}
	}
	return pushColumn{name: name, str: str, num: num}, true
}

// literalFor reports whether e is a literal the column compares with
// as the evaluator does and without a warning: a quoted string for a
// string column, a number for a numeric shard key.
func (p *pushdown) literalFor(e sqlparser.Expr, col pushColumn) bool {
	switch e := e.(type) {
	case *sqlparser.Argument:
		i, ok := litIndex(e.Name)
		if !ok || i >= len(p.sh.Lits) {
			return false // a parameter, or not a literal of the shape
		}
		switch p.sh.Lits[i].Kind {
		case router.LitString:
			return col.str
		case router.LitNumber:
			return col.num
		}
	case *sqlparser.Literal:
		if !p.exact {
			return false
		}
		switch e.Type {
		case sqlparser.StrVal:
			return col.str
		case sqlparser.IntVal, sqlparser.DecimalVal:
			return col.num
		}
	}
	return false
}

// litIndex is the 0-based literal a :sgl<n> placeholder stands for.
func litIndex(name string) (int, bool) {
	const prefix = "sgl"
	if !strings.HasPrefix(name, prefix) {
		return 0, false
	}
	n := 0
	for _, c := range name[len(prefix):] {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n - 1, n > 0
}

// requalify is c, a condition on r, with every column qualified with
// r's table name, as the fetch names it.
// (Vitess's Clone shares ColName nodes, so they are replaced: the
// statement's own AST is left alone.)
func (p *pushdown) requalify(c sqlparser.Expr, r *fromRef) sqlparser.Expr {
	return sqlparser.CopyOnRewrite(c, nil, func(cur *sqlparser.CopyOnWriteCursor) {
		if col, ok := cur.Node().(*sqlparser.ColName); ok {
			cur.Replace(&sqlparser.ColName{Name: col.Name, Qualifier: sqlparser.TableName{Name: sqlparser.NewIdentifierCS(r.table.Name)}})
		}
	}, nil).(sqlparser.Expr)
}
