package planner

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sequence"
	"github.com/shardgate/shardgate/internal/sharding"
	"github.com/shardgate/shardgate/internal/xa"
)

// infoTable is an information_schema table InfoSchema rewrites: the
// column holding its rows' schema, and for a table with a
// REFERENCED_TABLE_NAME, the column holding the referenced table's.
type infoTable struct {
	schema, referenced string
}

var infoTables = map[string]infoTable{
	"TABLES":                  {schema: "TABLE_SCHEMA"},
	"COLUMNS":                 {schema: "TABLE_SCHEMA"},
	"STATISTICS":              {schema: "TABLE_SCHEMA"},
	"KEY_COLUMN_USAGE":        {schema: "TABLE_SCHEMA", referenced: "REFERENCED_TABLE_SCHEMA"},
	"TABLE_CONSTRAINTS":       {schema: "TABLE_SCHEMA"},
	"REFERENTIAL_CONSTRAINTS": {schema: "CONSTRAINT_SCHEMA", referenced: "UNIQUE_CONSTRAINT_SCHEMA"},
}

// nameColumns are the columns whose values name tables or derive from
// their names: where a query uses them in a way the rewriting cannot
// follow, it is refused.
var nameColumns = map[string]bool{"TABLE_NAME": true, "REFERENCED_TABLE_NAME": true,
	"CONSTRAINT_NAME": true, "INDEX_NAME": true, "UNIQUE_CONSTRAINT_NAME": true}

// predicateNames are the columns ScanClauses finds in join conditions
// and WHERE: the names rewritten there, then the schema columns that say
// whether a query looks the schema up.
var predicateNames = []string{"TABLE_NAME", "REFERENCED_TABLE_NAME", "TABLE_SCHEMA", "CONSTRAINT_SCHEMA"}

const (
	predTable = iota
	predReferenced
)

// infoRef is an information_schema table a query reads.
type infoRef struct {
	table infoTable
	info  string // the information_schema table, upper-case
	name  string // as the query names it: its alias, else its name
	qual  string // the qualifier of its columns in the added SQL
}

// infoQuery is a query on information_schema being planned.
type infoQuery struct {
	k       *Keyspace
	sql     string
	sel     *sqlparser.Select
	refs    []infoRef
	grouped bool
	cl      router.Clauses
	// sortColumns are the ORDER BY columns added after the select list.
	sortColumns []string
	// inInfo: the session's database is information_schema.
	inInfo bool
}

// InfoSchema plans a SELECT on the information_schema tables that list
// the schema's tables (TABLES, COLUMNS, STATISTICS, KEY_COLUMN_USAGE,
// TABLE_CONSTRAINTS, REFERENTIAL_CONSTRAINTS, joined with one another) so
// that it answers as one server holding the logical tables would (see
// engine.InfoSchemaQuery). The query runs as written, with text added:
// on the default cluster without the sharded tables' sub-tables, and on
// each shard holding some table's sub-table 0 for those sub-tables 0
// alone; in join conditions and WHERE, TABLE_NAME (and
// REFERENCED_TABLE_NAME) of a sub-table 0 reads as its logical name. The
// select list is sent as the client wrote it, so result columns keep the
// server's definitions. Shapes whose answer would need more than this
// are refused. db is the session's database: in information_schema, the
// query may name its tables unqualified.
func (k *Keyspace) InfoSchema(sql []byte, db string) (engine.Primitive, error) {
	stmt, err := k.parser.p.ParseStrictDDL(string(sql))
	if err != nil {
		return nil, parseRefusal(err)
	}
	sel, ok := stmt.(*sqlparser.Select)
	if !ok {
		return nil, k.infoRefusal("this statement shape (only a single SELECT is supported)")
	}
	q := &infoQuery{k: k, sql: string(sql), sel: sel, inInfo: strings.EqualFold(db, "information_schema")}
	if err := q.check(); err != nil {
		return nil, err
	}
	q.cl = router.ScanClauses(sql, predicateNames)
	if q.cl.From < 0 || q.cl.ItemsEnd < 0 {
		return nil, k.infoRefusal("this statement shape")
	}
	homes := k.subTableZeroHomes()
	if q.grouped && len(homes) > 1 {
		return nil, k.infoRefusal("DISTINCT, GROUP BY, aggregates or window functions while sharded tables' sub-tables 0 live on several shards")
	}
	spec := &engine.InfoSchemaQuery{Schema: k.Schema, Rows: len(homes), Count: -1}
	if err := q.orderAndLimit(spec); err != nil {
		return nil, err
	}
	hidden := q.hiddenColumns(spec)
	m := &engine.Metadata{Build: spec.Build}
	for _, h := range homes {
		edits, err := q.predicates(h)
		if err != nil {
			return nil, err
		}
		m.Parts = append(m.Parts, engine.Part{Cluster: k.Shard(h.shard), Query: comQuery(q.render(hidden, edits, h))})
	}
	if !q.grouped && q.readsTables() {
		m.Parts = append(m.Parts, k.sizeParts()...)
	}
	return m, nil
}

func (k *Keyspace) infoRefusal(what string) error {
	return notSupported(fmt.Sprintf("%s in an information_schema query on sharded schema %s", what, k.Schema.Name))
}

// check reads the query's tables and refuses what the rewriting cannot
// answer exactly.
func (q *infoQuery) check() error {
	s, k := q.sel, q.k
	switch {
	case s.With != nil:
		return k.infoRefusal("WITH")
	case s.Into != nil:
		return k.infoRefusal("SELECT … INTO")
	case s.Lock != sqlparser.NoLock:
		return k.infoRefusal("a locking read")
	case s.SQLCalcFoundRows:
		return k.infoRefusal("SQL_CALC_FOUND_ROWS")
	}
	if err := q.tables(s.From); err != nil {
		return err
	}
	var nested bool
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		switch n.(type) {
		case *sqlparser.Subquery, *sqlparser.DerivedTable:
			nested = true
		case *sqlparser.OverClause:
			q.grouped = true
		}
		return !nested, nil
	}, s)
	if nested {
		return k.infoRefusal("a subquery")
	}
	q.grouped = q.grouped || s.Distinct || s.GroupBy != nil || len(s.Windows) > 0 ||
		sqlparser.ContainsAggregation(s.SelectExprs) || s.Having != nil && sqlparser.ContainsAggregation(s.Having) ||
		sqlparser.ContainsAggregation(s.OrderBy)
	for _, e := range s.SelectExprs.Exprs {
		if ae, ok := e.(*sqlparser.AliasedExpr); ok {
			if _, bare := ae.Expr.(*sqlparser.ColName); !bare && namesTable(ae.Expr) {
				return k.infoRefusal("an expression on a table, constraint or index name in the select list (select the column itself)")
			}
		}
	}
	if s.Having != nil && namesTable(s.Having) {
		return k.infoRefusal("HAVING on a table, constraint or index name")
	}
	return nil
}

// tables reads the FROM clause: information_schema tables InfoSchema
// rewrites, joined in any way.
func (q *infoQuery) tables(from []sqlparser.TableExpr) error {
	for _, te := range from {
		switch t := te.(type) {
		case *sqlparser.JoinTableExpr:
			if err := q.tables([]sqlparser.TableExpr{t.LeftExpr, t.RightExpr}); err != nil {
				return err
			}
		case *sqlparser.ParenTableExpr:
			if err := q.tables(t.Exprs); err != nil {
				return err
			}
		case *sqlparser.AliasedTableExpr:
			tn, ok := t.Expr.(sqlparser.TableName)
			if !ok {
				return q.k.infoRefusal("a derived table")
			}
			it, ok := infoTables[strings.ToUpper(tn.Name.String())]
			if !(strings.EqualFold(tn.Qualifier.String(), "information_schema") || tn.Qualifier.IsEmpty() && q.inInfo) || !ok {
				return q.k.infoRefusal(fmt.Sprintf("reading %s", sqlparser.String(tn)))
			}
			r := infoRef{table: it, info: strings.ToUpper(tn.Name.String()), name: tn.Name.String(), qual: quoteIdent("information_schema") + "." + quoteIdent(tn.Name.String()) + "."}
			if !t.As.IsEmpty() {
				r.name, r.qual = t.As.String(), quoteIdent(t.As.String())+"."
			}
			q.refs = append(q.refs, r)
		default:
			return q.k.infoRefusal("this FROM clause")
		}
	}
	return nil
}

// namesTable reports whether e reads a name column (nameColumns).
func namesTable(e sqlparser.SQLNode) bool {
	found := false
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		if c, ok := n.(*sqlparser.ColName); ok && nameColumns[strings.ToUpper(c.Name.String())] {
			found = true
		}
		return !found, nil
	}, e)
	return found
}

// orderAndLimit reads ORDER BY and LIMIT into spec: the proxy sorts and
// cuts the rows put together (the parts run without them). An ORDER BY
// column that is not a result column is added after the select list, as
// the server would read it (sortColumns).
func (q *infoQuery) orderAndLimit(spec *engine.InfoSchemaQuery) error {
	shown := map[string]bool{} // the result columns' names the select list gives
	for _, e := range q.sel.SelectExprs.Exprs {
		if ae, ok := e.(*sqlparser.AliasedExpr); ok {
			if !ae.As.IsEmpty() {
				shown[strings.ToUpper(ae.As.String())] = true
			} else if c, ok := ae.Expr.(*sqlparser.ColName); ok {
				shown[strings.ToUpper(c.Name.String())] = true
			}
		}
	}
	for _, o := range q.sel.OrderBy {
		key := engine.OrderKey{Desc: o.Direction == sqlparser.DescOrder}
		switch e := o.Expr.(type) {
		case *sqlparser.Literal:
			n, err := strconv.Atoi(e.Val)
			if e.Type != sqlparser.IntVal || err != nil {
				return q.k.infoRefusal("ORDER BY " + sqlparser.String(e))
			}
			key.Pos = n
		case *sqlparser.ColName:
			if e.Qualifier.IsEmpty() && shown[strings.ToUpper(e.Name.String())] {
				key.Name = e.Name.String()
				break
			}
			if q.sel.Distinct {
				return q.k.infoRefusal("DISTINCT with ORDER BY a column that is not selected")
			}
			key.Hidden = true
			q.sortColumns = append(q.sortColumns, sqlparser.String(e))
		default:
			return q.k.infoRefusal("ORDER BY an expression (order by a result column)")
		}
		spec.Order = append(spec.Order, key)
	}
	if l := q.sel.Limit; l != nil {
		var err error
		if spec.Count, err = q.limitValue(l.Rowcount); err != nil {
			return err
		}
		if l.Offset != nil {
			if spec.Offset, err = q.limitValue(l.Offset); err != nil {
				return err
			}
		}
	}
	if q.sel.Limit != nil && q.cl.Limit.Start < 0 || len(q.sel.OrderBy) > 0 && q.cl.OrderBy.Start < 0 {
		return q.k.infoRefusal("this ORDER BY or LIMIT")
	}
	return nil
}

func (q *infoQuery) limitValue(e sqlparser.Expr) (int64, error) {
	if l, ok := e.(*sqlparser.Literal); ok && l.Type == sqlparser.IntVal {
		if n, err := strconv.ParseInt(l.Val, 10, 64); err == nil {
			return n, nil
		}
	}
	return 0, q.k.infoRefusal("LIMIT " + sqlparser.String(e))
}

// hiddenColumns are the columns added after the select list: the
// ORDER BY columns that are not result columns, then (unless the query
// groups rows) those that tell whose each row is (engine.InfoRef), all
// aliased so that they clash with no name the query uses.
func (q *infoQuery) hiddenColumns(spec *engine.InfoSchemaQuery) string {
	var b strings.Builder
	n := 0
	add := func(col string) {
		fmt.Fprintf(&b, ", %s AS `shardgate_%d`", col, n)
		n++
	}
	for _, c := range q.sortColumns {
		add(c)
	}
	if q.grouped {
		return b.String()
	}
	for _, r := range q.refs {
		add(r.qual + quoteIdent(r.table.schema))
		add(r.qual + "TABLE_NAME")
		if r.table.referenced != "" {
			add(r.qual + quoteIdent(r.table.referenced))
		}
		spec.Refs = append(spec.Refs, engine.InfoRef{Referenced: r.table.referenced != ""})
	}
	return b.String()
}

// edit replaces a span of the query's text.
type edit struct {
	at   router.Span
	text string
}

// predicates returns the edits that make the join conditions and WHERE
// read TABLE_NAME and REFERENCED_TABLE_NAME on the part of home h as one
// server holding the logical tables would: a sub-table 0's name as its
// logical table's (the expression logicalName). A name the server looks
// up (compared exactly, not under the collation: router.NameRef.Exact)
// stays a look-up where it can, so that the server plans the query as
// the reference would (its column definitions and the order of rows that
// sort equal depend on the plan): a sharded table's logical name becomes
// its sub-table 0's on that sub-table's shard when the schema is looked
// up too, and other names need no rewriting.
func (q *infoQuery) predicates(h zeroHome) ([]edit, error) {
	var zero []string
	for _, t := range shardedTables(q.k.Schema) {
		zero = append(zero, quoteString(sharding.SubTableName(t.Name, 0)))
	}
	if len(zero) == 0 {
		return nil, nil
	}
	var edits []edit
	paired := q.pairedNames()
	for i, n := range q.cl.Names {
		if n.Name != predTable && n.Name != predReferenced || paired[i] {
			continue
		}
		r, err := q.refOf(n)
		if err != nil {
			return nil, err
		}
		if n.Exact && n.Name == predTable {
			if e, ok := q.lookup(n, r, h); ok {
				edits = append(edits, e...)
				continue
			}
		}
		x := q.logicalName(n, r, zero)
		if n.Exact {
			x = "BINARY " + x
		}
		edits = append(edits, edit{n.Span, x})
	}
	return edits, nil
}

// pairedNames marks the name references compared with one another (a
// join's KCU.TABLE_NAME = RC.TABLE_NAME): equal as the servers hold them
// when equal as logical names (within a schema), so left as written, for
// the server to plan the join as the reference would.
func (q *infoQuery) pairedNames() map[int]bool {
	paired := map[int]bool{}
	names := q.cl.Names
	for i := 0; i+1 < len(names); i++ {
		a, b := names[i], names[i+1]
		if a.Name <= predReferenced && b.Name <= predReferenced && strings.TrimSpace(q.sql[a.Span.End:b.Span.Start]) == "=" {
			paired[i], paired[i+1] = true, true
		}
	}
	return paired
}

// lookup rewrites an exactly compared TABLE_NAME so that the server
// still looks it up, when it can: ok is false when the reference must
// be read through logicalName.
func (q *infoQuery) lookup(n router.NameRef, r *infoRef, h zeroHome) ([]edit, bool) {
	name := n.CompareValue([]byte(q.sql), q.k.Schema.Name)
	if _, _, ok := subTable(q.k.Schema, name); ok {
		return nil, false // a sub-table's name names no logical table
	}
	t := q.k.Schema.Table(name)
	if t == nil || t.Type != sharding.TableSharded || t.Name != name {
		return nil, true // the logical name is the name on the server
	}
	if !q.schemaLookedUp(r) {
		return nil, false
	}
	if t.Group.Layout.Shard(0) != h.shard {
		return nil, true // no such table here
	}
	return []edit{{n.Value, quoteString(sharding.SubTableName(t.Name, 0))}}, true
}

// subTable reports whether name is a sub-table of a sharded table of s.
func subTable(s *sharding.Schema, name string) (*sharding.SchemaTable, int, bool) {
	logical, ok := sharding.LogicalName([]byte(name))
	if !ok {
		return nil, 0, false
	}
	t := s.Table(string(logical))
	if t == nil || t.Type != sharding.TableSharded || t.Name != string(logical) {
		return nil, 0, false
	}
	for i := 0; i < t.Group.Layout.SubTables(); i++ {
		if sharding.SubTableName(t.Name, i) == name {
			return t, i, true
		}
	}
	return nil, 0, false
}

// schemaLookedUp reports whether the query looks up the schema of r's
// rows: compares its schema column exactly with this schema's name.
func (q *infoQuery) schemaLookedUp(r *infoRef) bool {
	for _, n := range q.cl.Names {
		if !n.Exact || !strings.EqualFold(predicateNames[n.Name], r.table.schema) {
			continue
		}
		if o, err := q.refOf(n); err == nil && o == r && n.CompareValue([]byte(q.sql), q.k.Schema.Name) == q.k.Schema.Name {
			return true
		}
	}
	return false
}

// logicalName is the expression reading the name reference n of table r
// as one server holding the logical tables would: a sub-table 0 (zero,
// quoted) of this schema as its logical table. The name keeps the
// column's character set and collation (SUBSTRING of it).
func (q *infoQuery) logicalName(n router.NameRef, r *infoRef, zero []string) string {
	ref := q.sql[n.Span.Start:n.Span.End]
	qual := ""
	if n.Qual.Start >= 0 {
		qual = q.sql[n.Qual.Start:n.Qual.End]
	}
	schema := r.table.schema
	if n.Name == predReferenced {
		schema = r.table.referenced
	}
	return fmt.Sprintf("IF(BINARY %s%s = %s AND BINARY %s IN (%s), SUBSTRING(%s, 1, CHAR_LENGTH(%s) - 5), %s)",
		qual, quoteIdent(schema), quoteString(q.k.Schema.Name), ref, strings.Join(zero, ", "), ref, ref, ref)
}

// refOf is the table a name reference reads: by its qualifier, else the
// one table that has the column.
func (q *infoQuery) refOf(n router.NameRef) (*infoRef, error) {
	var name string
	if n.Qual.Start >= 0 {
		parts := strings.Split(strings.TrimSuffix(q.sql[n.Qual.Start:n.Qual.End], "."), ".")
		name = strings.Trim(strings.TrimSpace(parts[len(parts)-1]), "`")
	}
	col := predicateNames[n.Name]
	var found *infoRef
	for i := range q.refs {
		r := &q.refs[i]
		has := col == "TABLE_NAME" || col == "REFERENCED_TABLE_NAME" && r.table.referenced != "" ||
			col == "TABLE_SCHEMA" && r.info != "REFERENTIAL_CONSTRAINTS" || col == "CONSTRAINT_SCHEMA"
		if !has || name != "" && !strings.EqualFold(name, r.name) {
			continue
		}
		if found != nil {
			return nil, q.k.infoRefusal(fmt.Sprintf("an unqualified %s in a join", col))
		}
		found = r
	}
	if found == nil {
		return nil, q.k.infoRefusal(fmt.Sprintf("%s of no information_schema table the query names", q.sql[n.Span.Start:n.Span.End]))
	}
	return found, nil
}

// render writes the query for the part of home h: the hidden columns
// after the select list, the edits, h's rows alone (a condition added to
// WHERE), and no LIMIT. ORDER BY stays: it decides how the server plans
// the query, and so the column definitions it sends.
func (q *infoQuery) render(hidden string, edits []edit, h zeroHome) string {
	var b strings.Builder
	at := int32(0)
	copyTo := func(end int32) {
		for _, e := range edits {
			if e.at.Start >= at && e.at.End <= end {
				b.WriteString(q.sql[at:e.at.Start])
				b.WriteString(e.text)
				at = e.at.End
			}
		}
		b.WriteString(q.sql[at:end])
		at = end
	}
	copyTo(q.cl.ItemsEnd)
	b.WriteString(hidden)
	rows := q.rowsOf(h)
	if q.cl.Where.Start >= 0 {
		copyTo(q.cl.Where.Start)
		b.WriteString(" (")
		copyTo(q.cl.Where.End)
		b.WriteString(") AND " + rows + " ")
	} else {
		copyTo(q.cl.Tail)
		b.WriteString(" WHERE " + rows + " ")
	}
	if q.cl.Limit.Start >= 0 {
		copyTo(q.cl.Limit.Start)
		at = q.cl.Limit.End
	}
	copyTo(q.cl.End)
	return b.String()
}

// rowsOf is the condition keeping the rows home h answers for, for each
// table the query reads: on the default cluster, every table but the
// sharded tables' sub-tables (those whose sub-table 0 lives there
// excepted) and the proxy's own sequences table; on another shard, the
// sub-tables 0 living there.
func (q *infoQuery) rowsOf(h zeroHome) string {
	var conds []string
	for _, r := range q.refs {
		in := func(names []string) string {
			return fmt.Sprintf("BINARY %s%s = %s AND BINARY %sTABLE_NAME IN (%s)", r.qual, quoteIdent(r.table.schema),
				quoteString(q.k.Schema.Name), r.qual, strings.Join(names, ", "))
		}
		if h.shard != q.k.Schema.DefaultCluster {
			conds = append(conds, "("+in(h.zeros)+")")
			continue
		}
		others := []string{quoteString(sequence.DefaultTable), quoteString(xa.DecisionTable)}
		for _, t := range shardedTables(q.k.Schema) {
			for i := 0; i < t.Group.Layout.SubTables(); i++ {
				if i > 0 || t.Group.Layout.Shard(0) != h.shard {
					others = append(others, quoteString(sharding.SubTableName(t.Name, i)))
				}
			}
		}
		conds = append(conds, "NOT ("+in(others)+")")
	}
	return strings.Join(conds, " AND ")
}

// zeroHome is a shard that answers an information_schema query: the
// default cluster, or a shard holding sub-tables 0 (zeros, quoted).
type zeroHome struct {
	shard string
	zeros []string
}

// subTableZeroHomes lists the default cluster, then each other shard
// holding some sharded table's sub-table 0, in the schema's order.
func (k *Keyspace) subTableZeroHomes() []zeroHome {
	zeros := map[string][]string{}
	for _, t := range shardedTables(k.Schema) {
		s := t.Group.Layout.Shard(0)
		zeros[s] = append(zeros[s], quoteString(sharding.SubTableName(t.Name, 0)))
	}
	homes := []zeroHome{{shard: k.Schema.DefaultCluster}}
	for _, s := range k.Schema.Shards {
		if s != k.Schema.DefaultCluster && len(zeros[s]) > 0 {
			homes = append(homes, zeroHome{shard: s, zeros: zeros[s]})
		}
	}
	return homes
}

func (q *infoQuery) readsTables() bool {
	for _, r := range q.refs {
		if r.info == "TABLES" {
			return true
		}
	}
	return false
}

// sizeParts ask each shard holding sub-tables for their figures in
// information_schema.TABLES (engine.Sizes).
func (k *Keyspace) sizeParts() []engine.Part {
	var parts []engine.Part
	for _, shard := range k.shardsWithSubTables() {
		var names []string
		for _, t := range shardedTables(k.Schema) {
			for i := 0; i < t.Group.Layout.SubTables(); i++ {
				if t.Group.Layout.Shard(i) == shard {
					names = append(names, quoteString(sharding.SubTableName(t.Name, i)))
				}
			}
		}
		sql := "SELECT " + engine.Sizes + " FROM information_schema.TABLES WHERE TABLE_SCHEMA = " + quoteString(k.Schema.Name) +
			" AND TABLE_NAME IN (" + strings.Join(names, ", ") + ")"
		parts = append(parts, engine.Part{Cluster: k.Shard(shard), Query: comQuery(sql)})
	}
	return parts
}

// shardedTables lists the schema's sharded tables by name, so that the
// text sent is the same for the same query.
func shardedTables(s *sharding.Schema) []*sharding.SchemaTable {
	var out []*sharding.SchemaTable
	for _, t := range s.Tables() {
		if t.Type == sharding.TableSharded {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b *sharding.SchemaTable) int { return strings.Compare(a.Name, b.Name) })
	return out
}
