package planner

import (
	"fmt"
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/shardgate/shardgate/internal/sharding"
)

// refKind says where one table reference's rows live.
type refKind uint8

const (
	refUnsharded refKind = iota + 1 // a table of the schema that is not listed: the default cluster
	refReference                    // a listed reference table: a copy on every shard
	refSharded                      // a listed sharded table
	refOther                        // a table of another database
	refDerived                      // a derived table or a WITH table: not a table of its own
)

// tableRef is one occurrence of a table in the statement.
type tableRef struct {
	kind     refKind
	st       *sharding.SchemaTable // listed tables
	name     string                // as written
	db       string                // the database it resolves in
	alias    string                // the AS alias, if any
	nullable bool                  // on the NULL-supplying side of an outer join
	written  bool
	// rowsSharded: a derived table whose rows are a sharded table's (see
	// ownsShardedRows).
	rowsSharded bool
	// keyName, keyRef: a derived table whose rows lie on the sub-tables
	// of keyRef's (its GROUP BY lists keyRef's shard key: colocatedDerived)
	// shows that key as its column keyName, which is then keyRef's key.
	keyName string
	keyRef  *tableRef
	scope   *scope
	node    int // union-find node (sharded tables)
	class   int // key class, set by finish (sharded tables)
}

// display names a reference in error messages.
func (r *tableRef) display() string {
	if r.kind == refOther && r.db != "" {
		return r.db + "." + r.name
	}
	return r.name
}

// matches reports whether the qualifier of a column names r: its alias if
// it has one (then only that), else its name, optionally with its database.
func (r *tableRef) matches(q sqlparser.TableName) bool {
	name := q.Name.String()
	if r.alias != "" {
		return q.Qualifier.IsEmpty() && strings.EqualFold(name, r.alias)
	}
	if !strings.EqualFold(name, r.name) {
		return false
	}
	return q.Qualifier.IsEmpty() || strings.EqualFold(q.Qualifier.String(), r.db)
}

// scope is one SELECT (or UPDATE, DELETE, INSERT) level: the tables its
// FROM clause names and the key predicate of its WHERE and inner joins.
type scope struct {
	parent  *scope
	depth   int // 0 for the statement's row sources, +1 per expression subquery
	refs    []*tableRef
	ctes    map[string]bool
	pred    *pnode
	sharded bool // it or a scope below it reads a sharded table

	// sel is a SELECT's own statement; constructs what in it needs a
	// merge across sub-tables (not the statement's own SELECT, whose are
	// Analysis.TopMerge), unless its rows are co-located (colocated):
	// added to Analysis.Merge by finish.
	sel        *sqlparser.Select
	constructs Constructs
	// keyEq are the equalities of the shard keys of its own tables that
	// filter its rows (WHERE, inner joins), linked its tables whose key
	// such a filter equates with a table's of an enclosing scope.
	keyEq  [][2]*tableRef
	linked []*tableRef
}

// cte reports whether name is a WITH table visible from s.
func (s *scope) cte(name string) bool {
	for ; s != nil; s = s.parent {
		if s.ctes[strings.ToLower(name)] {
			return true
		}
	}
	return false
}

// keyColumn resolves a column to the sharded table reference whose shard
// key it is, or nil. own reports whether that reference is in s itself
// (an outer reference is a correlated column). An unqualified name is
// looked up in s only: a table of s whose columns are unknown to us may
// have a column of that name, so looking further out would be a guess.
func (s *scope) keyColumn(c *sqlparser.ColName) (ref *tableRef, own bool) {
	if c.Qualifier.IsEmpty() {
		var found *tableRef
		for _, r := range s.refs {
			if k := r.keyOf(c.Name.String()); k != nil {
				if found != nil {
					return nil, false // ambiguous: the server refuses it
				}
				found = k
			}
		}
		return found, found != nil
	}
	for sc := s; sc != nil; sc = sc.parent {
		for _, r := range sc.refs {
			if r.matches(c.Qualifier) {
				k := r.keyOf(c.Name.String())
				return k, k != nil && sc == s
			}
		}
	}
	return nil, false
}

// analyzer collects the references and key predicates of one statement.
type analyzer struct {
	schema *sharding.Schema
	db     string
	refs   []*tableRef
	uf     []int // union-find over sharded references: equal keys
	scopes []*scope
	merge  Constructs
	// top are the merges of the statement's own SELECT (Analysis.TopMerge).
	top         Constructs
	groupsOnKey bool
	// union is the scope of the statement's own UNION, or of a UNION it
	// chains.
	unionScope *scope
	write      bool
	insert     *InsertRoute
	// inLinks are the subqueries of top-level `key IN (SELECT key …)`
	// conjuncts, with the outer key's table: a semi-join on the key.
	inLinks map[*sqlparser.Subquery]*tableRef
}

func (a *analyzer) statement(stmt sqlparser.Statement) error {
	switch s := stmt.(type) {
	case *sqlparser.Select, *sqlparser.Union:
		_, err := a.tableStatement(s.(sqlparser.TableStatement), nil, 0)
		return err
	case *sqlparser.Insert:
		return a.insertStmt(s)
	case *sqlparser.Update:
		return a.updateStmt(s)
	case *sqlparser.Delete:
		return a.deleteStmt(s)
	case *sqlparser.CommentOnly:
		// Nothing to run: the default cluster answers as one server does
		// (OK for a comment, 1065 for an empty query). Clients send these:
		// the mariadb CLI with --comments sends a file's comment blocks.
		return nil
	}
	return notSupported(fmt.Sprintf("%s statements on sharded schema %s", kindOf(stmt), a.schema.Name))
}

func kindOf(node any) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", node), "*sqlparser.")
}

func (a *analyzer) newScope(parent *scope, depth int) *scope {
	s := &scope{parent: parent, depth: depth}
	a.scopes = append(a.scopes, s)
	return s
}

// tableStatement analyzes a SELECT or UNION whose rows are a row source at
// depth; it reports whether it reads a sharded table.
func (a *analyzer) tableStatement(ts sqlparser.TableStatement, parent *scope, depth int) (bool, error) {
	switch s := ts.(type) {
	case *sqlparser.Select:
		return a.selectStmt(s, parent, depth)
	case *sqlparser.Union:
		// The statement's own UNION (and the UNIONs it chains, written
		// without their own ORDER BY or LIMIT) merges across sub-tables
		// when each of its SELECTs reads a sharded table: every sub-table
		// then runs the whole UNION, and their rows together are its rows.
		top := parent == nil || parent == a.unionScope && len(s.OrderBy) == 0 && s.Limit == nil && s.With == nil
		sc := a.newScope(parent, depth)
		if top {
			a.unionScope = sc
		}
		if err := a.with(sc, s.With); err != nil {
			return false, err
		}
		l, err := a.tableStatement(s.Left, sc, depth)
		if err != nil {
			return false, err
		}
		r, err := a.tableStatement(s.Right, sc, depth)
		if err != nil {
			return false, err
		}
		if err := a.subqueries(sc, s.OrderBy, s.Limit); err != nil {
			return false, err
		}
		if l || r || sc.sharded {
			sc.sharded = true
			c := MergeUnion | orderLimit(s.OrderBy, s.Limit)
			switch {
			case top && l && r && parent == nil:
				a.top |= c
			case top && l && r:
			default:
				a.merge |= c
			}
			if s.Into != nil {
				a.merge |= MergeInto
			}
		}
		return sc.sharded, nil
	case *sqlparser.ValuesStatement:
		return false, a.subqueries(a.newScope(parent, depth), s)
	}
	return false, notSupported(fmt.Sprintf("%s on sharded schema %s", kindOf(ts), a.schema.Name))
}

func orderLimit(o sqlparser.OrderBy, l *sqlparser.Limit) Constructs {
	var c Constructs
	if len(o) > 0 {
		c |= MergeOrderBy
	}
	if l != nil {
		c |= MergeLimit
	}
	return c
}

func (a *analyzer) selectStmt(s *sqlparser.Select, parent *scope, depth int) (bool, error) {
	sc := a.newScope(parent, depth)
	if err := a.with(sc, s.With); err != nil {
		return false, err
	}
	if err := a.from(sc, s.From); err != nil {
		return false, err
	}
	if s.Where != nil {
		a.condition(sc, s.Where.Expr, true)
	}
	if err := a.subqueries(sc, s.SelectExprs, s.Where, s.GroupBy, s.Having, s.OrderBy, s.Limit, s.Windows); err != nil {
		return false, err
	}
	if sc.sharded {
		c := selectConstructs(s)
		if depth == 0 && !ownsShardedRows(sc) {
			c |= MergeRowsElsewhere
		}
		if parent == nil {
			// The statement's own SELECT: its rows are the answer, which
			// a merge of the sub-tables' rows can give.
			a.top = c & Mergeable
			c &^= Mergeable
			a.groupsOnKey = groupsOnKey(sc, s.GroupBy)
			a.merge |= c
		} else {
			sc.sel, sc.constructs = s, c
			if depth > parent.depth && colocatedSubquery(sc) {
				// Each outer row's subquery reads the rows of its own
				// sub-table only: every sub-table answers it exactly.
				sc.constructs &= MergeInto
			}
		}
	}
	return sc.sharded, nil
}

// ownsShardedRows reports whether a row source's rows are a sharded
// table's: its FROM joins one on a side that gives each row of the
// answer from one sub-table (not the NULL side of an outer join). Else
// each sub-table running the statement would give the rows of its other
// tables again. (A derived table's rows count as not sharded: its scope
// is another.)
func ownsShardedRows(sc *scope) bool {
	for _, r := range sc.refs {
		if (r.kind == refSharded || r.rowsSharded) && !r.nullable {
			return true
		}
	}
	return false
}

// groupsOnKey reports whether a GROUP BY lists the shard key of a table
// of the scope, on the side of joins that gives every row its own key:
// then each group's rows are on one sub-table, and the sub-tables'
// groups are the answer's.
func groupsOnKey(sc *scope, g *sqlparser.GroupBy) bool {
	if g == nil || g.WithRollup {
		return false
	}
	for _, e := range g.Exprs {
		if c, ok := e.(*sqlparser.ColName); ok {
			if r, own := sc.keyColumn(c); r != nil && own && !r.nullable {
				return true
			}
		}
	}
	return false
}

// selectConstructs lists what in s needs a merge across sub-tables.
func selectConstructs(s *sqlparser.Select) Constructs {
	c := orderLimit(s.OrderBy, s.Limit)
	if s.Distinct {
		c |= MergeDistinct
	}
	if s.GroupBy != nil && len(s.GroupBy.Exprs) > 0 {
		c |= MergeGroupBy
	}
	if s.Having != nil {
		c |= MergeHaving
	}
	if s.SQLCalcFoundRows {
		c |= MergeCalcFoundRows
	}
	if s.Into != nil {
		c |= MergeInto
	}
	if len(s.Windows) > 0 {
		c |= MergeWindow
	}
	for _, n := range []sqlparser.SQLNode{s.SelectExprs, s.Having, s.OrderBy} {
		c |= aggregates(n)
	}
	return c
}

// aggregates finds aggregate and window functions in n, not in its
// subqueries (those are SELECTs of their own).
func aggregates(n sqlparser.SQLNode) Constructs {
	var c Constructs
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		switch n.(type) {
		case *sqlparser.Subquery:
			return false, nil
		case *sqlparser.OverClause:
			c |= MergeWindow
		case sqlparser.AggrFunc:
			c |= MergeAggregate
		}
		return true, nil
	}, n)
	return c
}

// with analyzes WITH tables as row sources of sc and makes their names
// visible to it.
func (a *analyzer) with(sc *scope, w *sqlparser.With) error {
	if w == nil {
		return nil
	}
	sc.ctes = make(map[string]bool)
	for _, cte := range w.CTEs {
		if w.Recursive {
			sc.ctes[strings.ToLower(cte.ID.String())] = true
		}
		sh, err := a.tableStatement(cte.Subquery, sc, sc.depth)
		if err != nil {
			return err
		}
		sc.sharded = sc.sharded || sh
		sc.ctes[strings.ToLower(cte.ID.String())] = true
	}
	return nil
}

// from registers the tables of a FROM clause (or UPDATE/DELETE table list)
// in sc and applies its join conditions.
func (a *analyzer) from(sc *scope, exprs []sqlparser.TableExpr) error {
	for _, te := range exprs {
		if _, err := a.tableExpr(sc, te, false); err != nil {
			return err
		}
	}
	return nil
}

// tableExpr registers the references of te in sc and returns them.
func (a *analyzer) tableExpr(sc *scope, te sqlparser.TableExpr, nullable bool) ([]*tableRef, error) {
	switch t := te.(type) {
	case *sqlparser.AliasedTableExpr:
		r, err := a.aliased(sc, t, nullable)
		if err != nil || r == nil {
			return nil, err
		}
		return []*tableRef{r}, nil
	case *sqlparser.ParenTableExpr:
		var out []*tableRef
		for _, e := range t.Exprs {
			refs, err := a.tableExpr(sc, e, nullable)
			if err != nil {
				return nil, err
			}
			out = append(out, refs...)
		}
		return out, nil
	case *sqlparser.JoinTableExpr:
		return a.join(sc, t, nullable)
	}
	return nil, notSupported(fmt.Sprintf("%s in FROM on sharded schema %s", kindOf(te), a.schema.Name))
}

func (a *analyzer) join(sc *scope, j *sqlparser.JoinTableExpr, nullable bool) ([]*tableRef, error) {
	outer := j.Join == sqlparser.LeftJoinType || j.Join == sqlparser.RightJoinType ||
		j.Join == sqlparser.NaturalLeftJoinType || j.Join == sqlparser.NaturalRightJoinType
	leftNull := j.Join == sqlparser.RightJoinType || j.Join == sqlparser.NaturalRightJoinType
	left, err := a.tableExpr(sc, j.LeftExpr, nullable || leftNull)
	if err != nil {
		return nil, err
	}
	right, err := a.tableExpr(sc, j.RightExpr, nullable || outer && !leftNull)
	if err != nil {
		return nil, err
	}
	if c := j.Condition; c != nil {
		if c.On != nil {
			a.condition(sc, c.On, !outer)
			if err := a.subqueries(sc, c.On); err != nil {
				return nil, err
			}
		}
		for _, col := range c.Using {
			a.usingColumn(col.String(), left, right)
		}
	}
	return append(left, right...), nil
}

// usingColumn merges the key classes of JOIN … USING (key) when the column
// is the shard key of exactly one table on each side.
func (a *analyzer) usingColumn(col string, left, right []*tableRef) {
	pick := func(refs []*tableRef) *tableRef {
		var found *tableRef
		for _, r := range refs {
			if r.kind == refSharded && strings.EqualFold(col, r.st.ShardKey) {
				if found != nil {
					return nil
				}
				found = r
			}
		}
		return found
	}
	if l, r := pick(left), pick(right); l != nil && r != nil {
		a.union(l, r)
	}
}

// aliased registers one table, derived table or WITH table.
func (a *analyzer) aliased(sc *scope, t *sqlparser.AliasedTableExpr, nullable bool) (*tableRef, error) {
	switch e := t.Expr.(type) {
	case *sqlparser.DerivedTable:
		first := len(a.scopes) // the derived SELECT's scope, once made
		sh, err := a.tableStatement(e.Select, sc, sc.depth)
		if err != nil {
			return nil, err
		}
		sc.sharded = sc.sharded || sh
		_, plain := e.Select.(*sqlparser.Select)
		inner := a.scopes[first]
		r := &tableRef{kind: refDerived, alias: t.As.String(), scope: sc, nullable: nullable,
			rowsSharded: plain && ownsShardedRows(inner)}
		if plain && len(t.Columns) == 0 {
			if key, name, ok := colocatedDerived(inner); ok {
				inner.constructs &^= MergeGroupBy | MergeAggregate | MergeHaving | MergeOrderBy
				if !nullable && name != "" {
					r.keyName, r.keyRef = name, key
				}
			}
		}
		sc.refs = append(sc.refs, r)
		return r, nil
	case sqlparser.TableName:
		if e.Qualifier.IsEmpty() && strings.EqualFold(e.Name.String(), "dual") {
			return nil, nil
		}
		r := a.tableName(sc, e)
		r.alias, r.nullable = t.As.String(), nullable
		sc.refs = append(sc.refs, r)
		return r, nil
	}
	return nil, notSupported(fmt.Sprintf("%s in FROM on sharded schema %s", kindOf(t.Expr), a.schema.Name))
}

// tableName resolves a table name (not yet registered in a scope).
func (a *analyzer) tableName(sc *scope, tn sqlparser.TableName) *tableRef {
	name := tn.Name.String()
	r := &tableRef{name: name, scope: sc, node: -1}
	if tn.Qualifier.IsEmpty() && sc.cte(name) {
		r.kind = refDerived
		return r
	}
	r.db = a.db
	if !tn.Qualifier.IsEmpty() {
		r.db = tn.Qualifier.String()
	}
	a.refs = append(a.refs, r)
	if !inSchema(a.schema, r.db) {
		r.kind = refOther
		return r
	}
	r.st = a.schema.Table(name)
	switch {
	case r.st == nil:
		r.kind = refUnsharded
	case r.st.Type == sharding.TableReference:
		r.kind = refReference
	default:
		r.kind = refSharded
		r.node = len(a.uf)
		a.uf = append(a.uf, r.node)
		for s := sc; s != nil; s = s.parent {
			s.sharded = true
		}
	}
	return r
}

// subqueries analyzes the subqueries found in nodes, one level deeper
// than sc.
func (a *analyzer) subqueries(sc *scope, nodes ...sqlparser.SQLNode) error {
	for _, n := range nodes {
		var err error
		_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
			if sq, ok := n.(*sqlparser.Subquery); ok {
				var sh bool
				first := len(a.scopes)
				sh, err = a.tableStatement(sq.Select, sc, sc.depth+1)
				if outer := a.inLinks[sq]; outer != nil && err == nil {
					a.linkIn(outer, sq, a.scopes[first])
				}
				if sh {
					for s := sc; s != nil; s = s.parent {
						s.sharded = true
					}
				}
				return false, err
			}
			return err == nil, err
		}, n)
		if err != nil {
			return err
		}
	}
	return nil
}

// condition applies a WHERE or ON condition of sc: its top-level equalities
// between shard keys make their tables one key class, and when it filters
// the rows of sc (WHERE, inner join ON) it constrains their keys.
func (a *analyzer) condition(sc *scope, e sqlparser.Expr, filters bool) {
	for _, c := range sqlparser.SplitAndExpression(nil, e) {
		cmp, ok := c.(*sqlparser.ComparisonExpr)
		if !ok || cmp.Modifier != sqlparser.Missing {
			continue
		}
		if sq, ok := cmp.Right.(*sqlparser.Subquery); ok && cmp.Operator == sqlparser.InOp {
			if l, ok := cmp.Left.(*sqlparser.ColName); ok {
				if ref, _ := sc.keyColumn(l); ref != nil {
					if a.inLinks == nil {
						a.inLinks = make(map[*sqlparser.Subquery]*tableRef)
					}
					a.inLinks[sq] = ref
				}
			}
			continue
		}
		if cmp.Operator != sqlparser.EqualOp {
			continue
		}
		l, lok := cmp.Left.(*sqlparser.ColName)
		r, rok := cmp.Right.(*sqlparser.ColName)
		if !lok || !rok {
			continue
		}
		lr, lown := sc.keyColumn(l)
		rr, rown := sc.keyColumn(r)
		if lr != nil && rr != nil && lr.st.Group == rr.st.Group {
			a.union(lr, rr)
			if filters {
				sc.noteKeyEq(lr, lown, rr, rown)
			}
		}
	}
	if filters {
		sc.pred = and(sc.pred, a.predicate(sc, e, false))
	}
}

// linkIn makes `outer IN (SELECT k FROM …)` one key class when k is the
// shard key of a table of the subquery: for an outer row, only rows with
// an equal key, on the same sub-table, can match. (NOT IN is not a
// conjunct here: it depends on NULL keys anywhere.)
func (a *analyzer) linkIn(outer *tableRef, sq *sqlparser.Subquery, inner *scope) {
	sel, ok := sq.Select.(*sqlparser.Select)
	if !ok || sel.SelectExprs == nil || len(sel.SelectExprs.Exprs) != 1 {
		return
	}
	ae, ok := sel.SelectExprs.Exprs[0].(*sqlparser.AliasedExpr)
	if !ok {
		return
	}
	if col, ok := ae.Expr.(*sqlparser.ColName); ok {
		if ref, own := inner.keyColumn(col); own && ref.st.Group == outer.st.Group {
			a.union(outer, ref)
		}
	}
}

func (a *analyzer) find(n int) int {
	for a.uf[n] != n {
		a.uf[n] = a.uf[a.uf[n]]
		n = a.uf[n]
	}
	return n
}

func (a *analyzer) union(x, y *tableRef) {
	a.uf[a.find(x.node)] = a.find(y.node)
}
