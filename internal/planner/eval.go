package planner

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sharding"
)

// A read that no route or merge answers exactly (a join off the shard
// key, a derived table, a CTE or a subquery whose inner query needs
// rows of several sub-tables, a window function, ROLLUP, COUNT(DISTINCT
// a, b), a UNION of a sharded and a reference table…) is evaluated:
// each sharded table it names is copied, from its sub-tables, into a
// temporary table of the same name on a connection to the schema's
// default cluster, which holds the unsharded tables and a copy of each
// reference table, and the client's statement runs there as written
// (engine.Evaluate). The answer is then one server's by construction:
// its types, collations, NULLs, conversions, warnings and column
// definitions are MariaDB's, where an evaluator of the proxy's own
// (Vitess's evalengine) differs from MariaDB in places the differential
// test found (PAD SPACE under utf8mb4_unicode_ci, DATETIME against an
// integer). The proxy's memory stays bounded: rows stream from each
// shard into batched INSERTs, and the answer streams back as a Route's.

// EvalPlan is how the proxy evaluates a read it cannot route or merge:
// the sharded tables to copy, the rest being on the default cluster.
// Immutable, shared by every session.
type EvalPlan struct {
	Tables []EvalTable
	// Into: an INSERT … SELECT into a sharded table (eval_insert.go);
	// Tables are those its SELECT reads.
	Into *EvalInto
	// OnSession: the statement writes unsharded tables of the default
	// cluster (INSERT … SELECT, UPDATE or DELETE reading sharded tables):
	// it runs on the session's own connection there, inside its
	// transaction, where the unsharded tables are as the session sees
	// them (they are not copied) and its answer is the session's as a
	// routed statement's is.
	OnSession bool
}

// EvalTable is one sharded table an evaluated statement names, copied
// into a temporary table of its name.
type EvalTable struct {
	Table *sharding.SchemaTable // nil for an unlisted (unsharded) table
	// Local: an unsharded or reference table, on the default cluster,
	// copied from the transaction's connection inside a transaction only.
	Local bool
	// Temp is the temporary table's name, quoted and qualified with the
	// schema: the name the statement resolves to on the default cluster.
	Temp string
	// Like is a sub-table of it on the default cluster, which the
	// temporary table is created like; "": none is there, and the first
	// fetch's shard shows Describe's definition.
	Like, Describe string
	// Fetches read every row: one statement per shard, a UNION ALL of
	// its sub-tables, the shard holding Describe first.
	Fetches []EvalFetch
	// Filtered, when the statement's conditions say which rows matter,
	// reads only those, from the sub-tables that can hold them.
	Filtered *filteredFetch
	// Reduce, when the table is joined on its shard key with a column of
	// another, reads only the rows whose key is among that column's
	// values on the evaluator (a semi-join), in batches.
	Reduce *EvalReduce
}

// EvalReduce is a semi-join: the values of Column in Source (quoted,
// qualified: a temporary table or a local table) on the evaluator, or
// those an IN subquery gives there (Subquery, rendered per execution).
type EvalReduce struct {
	Source, Column string
	Subquery       *Template
	// Batch describes the fetch of a batch of values, for Explain.
	Batch string
}

// valuesSQL is the statement giving r's values on the evaluator.
func (r *EvalReduce) valuesSQL(sql []byte, sh *router.Shape) string {
	if r.Subquery != nil {
		return string(r.Subquery.Append(nil, sql, sh, nil))
	}
	return "SELECT DISTINCT " + r.Column + " FROM " + r.Source + " WHERE " + r.Column + " IS NOT NULL LIMIT " + strconv.Itoa(engine.MaxReduce+1)
}

// reduceFrom is the reduction red of a table, its source named as the
// evaluator sees it (nil: the source is not among the tables).
func (p *EvalPlan) reduceFrom(red reduction, schema *sharding.Schema, parsed Parsed, sh *router.Shape) *EvalReduce {
	if red.subquery != nil {
		for _, t := range red.subTables {
			if !slices.ContainsFunc(p.Tables, func(e EvalTable) bool { return e.Table == t && !e.Local }) {
				return nil
			}
		}
		tmpl, err := subqueryValues(parsed, sh, red.subquery)
		if err != nil {
			return nil
		}
		return &EvalReduce{Subquery: tmpl}
	}
	src := red.local
	if red.src != nil {
		for _, t := range p.Tables {
			if t.Table == red.src && !t.Local {
				src = t.Temp
			}
		}
		if src == "" {
			return nil
		}
	}
	return &EvalReduce{Source: src, Column: sqlparser.String(sqlparser.NewIdentifierCI(red.column))}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// filteredFetch is a sharded table's fetch planned as a statement of its
// own: SELECT * FROM t WHERE <the conditions pushed to it>.
type filteredFetch struct {
	an   *Analysis
	tmpl *Template
}

// filteredFetch plans the fetch of t's rows that meet cond (nil: none,
// or a fetch the planner cannot plan: every row is read).
func (k *Keyspace) filteredFetch(parsed Parsed, sh *router.Shape, db string, t *sharding.SchemaTable, cond sqlparser.Expr) *filteredFetch {
	if cond == nil {
		return nil
	}
	tn := sqlparser.TableName{Name: sqlparser.NewIdentifierCS(t.Name)}
	if db != k.Schema.Name {
		tn.Qualifier = sqlparser.NewIdentifierCS(k.Schema.Name)
	}
	sel := &sqlparser.Select{
		SelectExprs: &sqlparser.SelectExprs{Exprs: []sqlparser.SelectExpr{&sqlparser.StarExpr{}}},
		From:        []sqlparser.TableExpr{&sqlparser.AliasedTableExpr{Expr: tn}},
		Where:       sqlparser.NewWhere(sqlparser.WhereClause, cond),
	}
	an, err := Analyze(sel, k.Schema, db)
	if err != nil || an.Placement != Sharded {
		return nil
	}
	tmpl, err := ownTemplate(parsed, sh, k.renamer(db), sel)
	if err != nil {
		return nil
	}
	return &filteredFetch{an: an, tmpl: tmpl}
}

// EvalFetch is the statement reading a table's rows on one shard.
type EvalFetch struct {
	Shard string
	Query []byte // a COM_QUERY packet
}

// evalPlan decides whether stmt, a statement of the schema read with db
// as the current database, can be evaluated (see EvalPlan), and lists
// the sharded tables it reads. A nil plan with a nil error: stmt names
// no sharded table.
func (k *Keyspace) evalPlan(parsed Parsed, sh *router.Shape, db string) (*EvalPlan, error) {
	stmt := parsed.Stmt
	switch s := stmt.(type) {
	case *sqlparser.Select:
		if s.Into != nil {
			return nil, notSupported("SELECT … INTO across shards")
		}
	case *sqlparser.Union:
		if s.Into != nil {
			return nil, notSupported("SELECT … INTO across shards")
		}
	case *sqlparser.CreateTable:
		if s.Select == nil || s.Temp || !k.writesLocal(stmt, db) {
			return nil, nil // (routed as written, or refused as DDL)
		}
	case *sqlparser.Insert:
		if k.writesLocal(stmt, db) {
			break
		}
		into, err := k.insertInto(s, db)
		if into == nil || err != nil {
			return nil, err
		}
		sel, ok := s.Rows.(sqlparser.Statement)
		if !ok {
			return nil, nil
		}
		p, err := k.evalPlanOf(parsed, sh, db, sel, true)
		if p == nil || err != nil {
			return p, err
		}
		p.Into = into
		return p, nil
	case *sqlparser.Update, *sqlparser.Delete:
		if !k.writesLocal(stmt, db) {
			return nil, nil // a write to a sharded or reference table: its own refusal says why
		}
	default:
		return nil, nil
	}
	p, err := k.evalPlanOf(parsed, sh, db, stmt, false)
	if p != nil {
		switch stmt.(type) {
		case *sqlparser.Insert, *sqlparser.Update, *sqlparser.Delete, *sqlparser.CreateTable:
			p.OnSession = true
		}
	}
	return p, err
}

// evalPlanOf plans the evaluation of stmt, the client's statement parsed
// or a part of it (an INSERT's SELECT): the tables it names.
//
// A statement that reads no sharded table is not evaluated (nil), but
// with anyRows (an INSERT … SELECT into a sharded table, whatever its
// SELECT reads).
func (k *Keyspace) evalPlanOf(parsed Parsed, sh *router.Shape, db string, stmt sqlparser.Statement, anyRows bool) (*EvalPlan, error) {
	if evalEffects(stmt) {
		return nil, notSupported("a function with effects (SLEEP, GET_LOCK, NEXTVAL, LAST_INSERT_ID(x)…) in a statement the proxy evaluates across shards")
	}
	ctes := cteNames(stmt)
	p := &EvalPlan{}
	err := sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		var err error
		switch n := n.(type) {
		case *sqlparser.Select:
			if n.Lock != sqlparser.NoLock {
				err = notSupported("a locking read (FOR UPDATE, LOCK IN SHARE MODE) across shards that no route or merge answers")
			}
		case *sqlparser.Union:
			if n.Lock != sqlparser.NoLock {
				err = notSupported("a locking read (FOR UPDATE, LOCK IN SHARE MODE) across shards that no route or merge answers")
			}
		case *sqlparser.Variable:
			if n.Scope == sqlparser.VariableScope {
				err = notSupported("user variables in a statement on sharded or reference tables")
			}
		case *sqlparser.AliasedTableExpr:
			if tn, ok := n.Expr.(sqlparser.TableName); ok {
				err = p.addTable(k.Schema, tn, db, ctes)
			}
		}
		return err == nil, err
	}, stmt)
	if errors.Is(err, errNotHere) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sharded := false
	for _, t := range p.Tables {
		sharded = sharded || !t.Local
	}
	if !sharded && !anyRows {
		return nil, nil
	}
	push := k.pushdowns(stmt, db, ctes, sh, parsed.Exact)
	for i := range p.Tables {
		t := &p.Tables[i]
		if t.Local {
			continue
		}
		t.Filtered = k.filteredFetch(parsed, sh, db, t.Table, push.condition(t.Table))
		if red, ok := push.reduced(t.Table); ok {
			if t.Reduce = p.reduceFrom(red, k.Schema, parsed, sh); t.Reduce != nil {
				t.Reduce.Batch = k.semiJoinBatch(t.Table)
			}
		}
	}
	// A reduced table is copied once its source's values are there.
	slices.SortStableFunc(p.Tables, func(a, b EvalTable) int {
		return cmp.Compare(boolInt(a.Reduce != nil), boolInt(b.Reduce != nil))
	})
	return p, nil
}

// errNotHere: the statement names a table of another database, which
// the evaluator may not have.
var errNotHere = errors.New("a table of another database")

// evalEffects is hasEffects for an evaluated statement, which runs once,
// on a connection of the proxy's own in step with the session's
// LAST_INSERT_ID(): reading it is no effect, setting it (an argument)
// would set the evaluator's.
func evalEffects(stmt sqlparser.SQLNode) bool {
	found := false
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		switch f := n.(type) {
		case *sqlparser.FuncExpr:
			name := f.Name.Lowered()
			found = found || effectFuncs[name] && !(name == "last_insert_id" && len(f.Exprs) == 0) || !f.Qualifier.IsEmpty()
		case *sqlparser.Nextval, *sqlparser.LockingFunc:
			found = true
		}
		return !found, nil
	}, stmt)
	return found
}

// addTable notes a table the statement names: a sharded table of the
// schema is copied; unsharded and reference tables, and the statement's
// own CTEs, are on the default cluster already.
func (p *EvalPlan) addTable(schema *sharding.Schema, n sqlparser.TableName, db string, ctes map[string]bool) error {
	if n.Name.IsEmpty() {
		return nil
	}
	name, qualifier := n.Name.String(), n.Qualifier.String()
	if qualifier == "" && (ctes[strings.ToLower(name)] || strings.EqualFold(name, "dual")) {
		return nil
	}
	if !resolvesIn(schema, qualifier, db) {
		return errNotHere // (the route's refusal names both tables)
	}
	t := schema.Table(name)
	temp := quoteQualified(schema.Name, name)
	if t == nil || t.Type != sharding.TableSharded {
		for _, e := range p.Tables {
			if e.Local && e.Temp == temp {
				return nil
			}
		}
		p.Tables = append(p.Tables, localTable(schema, t, temp))
		return nil
	}
	if t.Invisible() {
		// Its copy (SELECT *) would leave those columns out.
		return notSupported(fmt.Sprintf("table %s, which has INVISIBLE columns, in a statement the proxy evaluates across shards", t.Name))
	}
	for _, e := range p.Tables {
		if e.Table != t {
			continue
		}
		if e.Temp != quoteQualified(schema.Name, name) {
			return notSupported(fmt.Sprintf("table %s spelt two ways in a statement the proxy evaluates across shards", t.Name))
		}
		return nil
	}
	p.Tables = append(p.Tables, evalTable(schema, t, quoteQualified(schema.Name, name)))
	return nil
}

// evalTable plans the copy of sharded table t into temporary table temp.
func evalTable(schema *sharding.Schema, t *sharding.SchemaTable, temp string) EvalTable {
	layout := t.Group.Layout
	et := EvalTable{Table: t, Temp: temp, Describe: quoteQualified(schema.Name, sharding.SubTableName(t.Name, 0))}
	for i := 0; i < layout.SubTables(); i++ {
		if layout.Shard(i) == schema.DefaultCluster {
			et.Like = quoteQualified(schema.Name, sharding.SubTableName(t.Name, i))
			break
		}
	}
	// The shard holding Describe first, then the others.
	shards := []string{layout.Shard(0)}
	for _, shard := range schema.Shards {
		if shard != shards[0] {
			shards = append(shards, shard)
		}
	}
	unionPerShard(shards, layout, func(int) bool { return true }, func(q []byte, i int) []byte {
		return append(q, "SELECT * FROM "+quoteQualified(schema.Name, sharding.SubTableName(t.Name, i))...)
	}, func(shard string, q []byte, _ int) {
		et.Fetches = append(et.Fetches, EvalFetch{Shard: shard, Query: q})
	})
	return et
}

// localTable plans the copy of an unsharded or reference table (t, nil
// when unlisted) inside a transaction: its rows as the transaction's
// connection to the default cluster sees them.
func localTable(schema *sharding.Schema, t *sharding.SchemaTable, temp string) EvalTable {
	q := append([]byte{mysql.ComQuery}, engine.FetchPrefix+"SELECT * FROM "+temp...)
	return EvalTable{Table: t, Local: true, Temp: temp, Describe: temp,
		Fetches: []EvalFetch{{Shard: schema.DefaultCluster, Query: q}}}
}

// cteNames are the lower-cased names of the common table expressions
// stmt defines, at any depth: a table reference of such a name is one.
func cteNames(stmt sqlparser.SQLNode) map[string]bool {
	names := map[string]bool{}
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		if w, ok := n.(*sqlparser.With); ok {
			for _, cte := range w.CTEs {
				names[strings.ToLower(cte.ID.String())] = true
			}
		}
		return true, nil
	}, stmt)
	return names
}

// quoteQualified is `db`.`name`.
func quoteQualified(db, name string) string {
	return sqlparser.String(sqlparser.NewIdentifierCS(db)) + "." + sqlparser.String(sqlparser.NewIdentifierCS(name))
}

// Evaluate fills e, the session's, with the plan for one execution of
// the statement sql, of shape sh, with values vals (nil for a prepare:
// no row is fetched). stmt is the client's statement text for a prepared
// statement (the evaluator prepares it), nil for a text statement (sent
// as the client sent it).
func (k *Keyspace) Evaluate(e *engine.Evaluate, p *EvalPlan, sql []byte, sh *router.Shape, vals Values, stmt []byte, replicaOK bool) {
	e.Reset(k.Default, stmt, replicaOK && !p.OnSession)
	e.OnSession = p.OnSession
	for _, t := range p.Tables {
		if t.Local && p.OnSession {
			continue // (the session's connection reads it as it is)
		}
		e.AddTable(t.Temp, t.Like, t.Describe, t.Local)
		if t.Reduce != nil {
			e.Reduce(t.Reduce.valuesSQL(sql, sh), t.Reduce.Batch, k.semiJoin(t.Table))
		}
		if t.Filtered != nil && vals != nil && k.addFiltered(e, &t, sql, sh, vals) {
			e.Filtered()
			continue
		}
		for _, f := range t.Fetches {
			cl := k.Shard(f.Shard)
			if f.Shard == k.Schema.DefaultCluster {
				cl = k.Default // (not a shard, for a local table)
			}
			e.AddFetch(cl, f.Query)
		}
	}
}

// addFiltered adds t's filtered fetches for the statement sql (shape sh,
// values vals): one per shard holding a sub-table the conditions allow,
// a UNION ALL of them. false: the values cannot be routed (every row is
// read instead).
func (k *Keyspace) addFiltered(e *engine.Evaluate, t *EvalTable, sql []byte, sh *router.Shape, vals Values) bool {
	f := t.Filtered
	target, err := f.an.Route(vals)
	if err != nil {
		return false
	}
	layout := t.Table.Group.Layout
	var sub [1]int
	describe := -1
	unionPerShard(k.Schema.Shards, layout, target.Has, func(q []byte, i int) []byte {
		sub[0] = i
		return f.tmpl.Append(q, sql, sh, sub[:])
	}, func(shard string, q []byte, first int) {
		e.AddFetch(k.Shard(shard), q)
		if describe < 0 {
			describe = first
		}
	})
	if t.Like == "" {
		// The definition comes from the first fetch's shard: one of its
		// sub-tables.
		e.Describe(quoteQualified(k.Schema.Name, sharding.SubTableName(t.Table.Name, describe)))
	}
	return true
}

// semiJoin returns the fetches of t's rows whose shard key is one of
// values (numbers, as the evaluator wrote them): each sub-table a value
// hashes to reads its values, one UNION ALL per shard. false: a value
// is not a number the key's type takes exactly.
func (k *Keyspace) semiJoin(t *sharding.SchemaTable) func(values []string) ([]engine.Part, bool) {
	return func(values []string) ([]engine.Part, bool) {
		kt, ok := t.KeyType()
		if !ok {
			return nil, false
		}
		rule, layout := t.Group.Rule, t.Group.Layout
		bySub := map[int][]string{}
		for _, v := range values {
			if !isNumber(v) {
				return nil, false
			}
			key, err := sharding.Convert(kt, sharding.NumberLit(v))
			if errors.Is(err, sharding.ErrInexact) {
				continue // (4.5 for an INT key: no row has it)
			}
			if err != nil {
				return nil, false
			}
			i, err := rule.Index(key)
			if err != nil {
				continue // (a key no sub-table holds: no row)
			}
			bySub[i] = append(bySub[i], v)
		}
		keyCol := sqlparser.String(sqlparser.NewIdentifierCI(t.ShardKey))
		var parts []engine.Part
		unionPerShard(k.Schema.Shards, layout, func(i int) bool { return bySub[i] != nil }, func(q []byte, i int) []byte {
			return append(q, "SELECT * FROM "+quoteQualified(k.Schema.Name, sharding.SubTableName(t.Name, i))+" WHERE "+keyCol+" IN ("+strings.Join(bySub[i], ",")+")"...)
		}, func(shard string, q []byte, _ int) {
			parts = append(parts, engine.Part{Cluster: k.Shard(shard), Query: q})
		})
		return parts, true
	}
}

// semiJoinBatch describes a semi-join's fetch of t's rows (semiJoin),
// for Explain: the values are known only as it runs.
func (k *Keyspace) semiJoinBatch(t *sharding.SchemaTable) string {
	keyCol := sqlparser.String(sqlparser.NewIdentifierCI(t.ShardKey))
	return "SELECT * FROM " + quoteQualified(k.Schema.Name, t.Name+"_NNNN") + " WHERE " + keyCol + " IN (…)"
}

// isNumber reports whether v is a plain decimal number: what a key IN
// (…) list may take as written.
func isNumber(v string) bool {
	if strings.HasPrefix(v, "-") {
		v = v[1:]
	}
	digits, dot := 0, false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !dot:
			dot = true
		default:
			return false
		}
	}
	return digits > 0
}

// subqueryValues is the statement giving the distinct values of an IN
// subquery's one column on the evaluator: SELECT DISTINCT its column
// FROM its table WHERE its condition AND the column IS NOT NULL LIMIT
// MaxReduce + 1, its literals the client's (no table is renamed: the
// evaluator has the tables by their names).
func subqueryValues(parsed Parsed, sh *router.Shape, sq *sqlparser.Select) (*Template, error) {
	ae := sq.SelectExprs.Exprs[0].(*sqlparser.AliasedExpr)
	notNull := &sqlparser.IsExpr{Left: ae.Expr, Right: sqlparser.IsNotNullOp}
	where := sqlparser.Expr(notNull)
	if sq.Where != nil {
		where = &sqlparser.AndExpr{Left: sq.Where.Expr, Right: notNull}
	}
	sel := &sqlparser.Select{
		Distinct:    true,
		SelectExprs: &sqlparser.SelectExprs{Exprs: []sqlparser.SelectExpr{&sqlparser.AliasedExpr{Expr: ae.Expr}}},
		From:        sq.From,
		Where:       sqlparser.NewWhere(sqlparser.WhereClause, where),
		Limit:       sqlparser.NewLimitWithoutOffset(engine.MaxReduce + 1),
	}
	return ownTemplate(parsed, sh, func(string, string) int { return -1 }, sel)
}

// unionPerShard calls add, for each of shards in turn that holds a
// sub-table pick accepts, with its fetch: engine.FetchPrefix, then a UNION ALL
// of appendSelect's SELECT of each such sub-table (in order), first
// being the first of them. The shard sends each string in its column's
// character set, unconverted (character_set_results=binary), which the
// copy inserts as a binary string: the bytes the shard holds.
func unionPerShard(shards []string, layout sharding.Layout, pick func(i int) bool, appendSelect func(q []byte, i int) []byte, add func(shard string, q []byte, first int)) {
	for _, shard := range shards {
		q := append([]byte{mysql.ComQuery}, engine.FetchPrefix...)
		first := -1
		for i := 0; i < layout.SubTables(); i++ {
			if layout.Shard(i) != shard || !pick(i) {
				continue
			}
			if first >= 0 {
				q = append(q, " UNION ALL "...)
			} else {
				first = i
			}
			q = appendSelect(q, i)
		}
		if first >= 0 {
			add(shard, q, first)
		}
	}
}

// ownTemplate compiles sel, a SELECT of the planner's own holding some
// of the client's literals (none of its parameters), with the names
// rename picks renamed: its other literals and parameters are dropped.
func ownTemplate(parsed Parsed, sh *router.Shape, rename Rename, sel *sqlparser.Select) (*Template, error) {
	all := func(n int) []bool {
		b := make([]bool, n)
		for i := range b {
			b[i] = true
		}
		return b
	}
	return newTemplateWith(Parsed{Stmt: sel, Exact: parsed.Exact}, sh, rename,
		templateOptions{itemCount: 1, items: map[*sqlparser.AliasedExpr]int{}, dropped: all(len(sh.Lits)), droppedParams: all(len(sh.Params))}, sel)
}
