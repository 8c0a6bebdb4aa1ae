package planner

// This file decides which sharded schema plans a statement. A session's
// statements are planned by the schema that is its database; but a
// statement may name another schema's tables (oq.orders, SHOW TABLES
// FROM oq, information_schema.TABLES WHERE TABLE_SCHEMA = 'oq') from a
// session on an unsharded database, on none or on another schema, and
// one server holding every database would answer it with that schema's
// logical tables. Keyspaces.Choose finds that schema.

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/router"
)

// TableRef is a table a statement names: its database as written ("" when
// unqualified: the session's) and its name.
type TableRef struct{ DB, Name string }

func (r TableRef) String() string {
	if r.DB == "" {
		return r.Name
	}
	return r.DB + "." + r.Name
}

// TableRefs lists the tables stmt reads or writes, each once, in the
// order they first appear (WITH tables named unqualified and DUAL left
// out), and reports whether it calls DATABASE() or SCHEMA().
func TableRefs(stmt sqlparser.Statement) (refs []TableRef, readsDB bool) {
	ctes := map[string]bool{}
	var all []TableRef
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		switch x := n.(type) {
		case *sqlparser.CommonTableExpr:
			ctes[strings.ToLower(x.ID.String())] = true
		case *sqlparser.AliasedTableExpr:
			if tn, ok := x.Expr.(sqlparser.TableName); ok {
				all = append(all, TableRef{DB: tn.Qualifier.String(), Name: tn.Name.String()})
			}
		case *sqlparser.FuncExpr:
			if x.Qualifier.IsEmpty() && (x.Name.EqualString("database") || x.Name.EqualString("schema")) {
				readsDB = true
			}
		}
		return true, nil
	}, stmt)
	for _, r := range all {
		if r.DB == "" && (ctes[strings.ToLower(r.Name)] || strings.EqualFold(r.Name, "dual")) || slices.Contains(refs, r) {
			continue
		}
		refs = append(refs, r)
	}
	return refs, readsDB
}

// SchemaFilter is a database name and its bits in router.Stmt.Schemas: a
// statement whose Schemas hold all of them may name it.
type SchemaFilter struct {
	Name string
	Bits uint64
}

// Filters are the filters of the names that make a session ask Choose:
// the schemas', and information_schema's.
func (ks Keyspaces) Filters() []SchemaFilter {
	if len(ks) == 0 {
		return nil
	}
	fs := []SchemaFilter{{"information_schema", router.SchemaBits("information_schema")}}
	for name := range ks {
		fs = append(fs, SchemaFilter{name, router.SchemaBits(name)})
	}
	return fs
}

// Choice is the sharded schema that plans a statement.
type Choice struct {
	// KS plans the statement; nil: no schema (it runs on the session's
	// cluster, as written).
	KS *Keyspace
	// Outside: KS is not the schema of the session's database; the
	// statement names it.
	Outside bool
	// DB, when set, is the database the connections running the
	// statement use instead of the session's: KS's, for a statement that
	// names only KS's tables (qualified), which runs on KS's clusters,
	// where the session's database need not exist.
	DB string
	// Err refuses the statement.
	Err error
}

// choosable are the statement kinds a session may run on a schema it is
// not in: statements about tables. Session statements (BEGIN, SET, USE,
// LOCK TABLES …) stay with the session's database; DDL is planned by
// PlanDDL, which reads the schema from the table's name.
func choosable(k router.Kind) bool {
	switch k {
	case router.KindSelect, router.KindInsert, router.KindUpdate, router.KindDelete, router.KindReplace,
		router.KindShow, router.KindAnalyze, router.KindWith, router.KindValues, router.KindTable:
		return true
	}
	return false
}

var informationSchema = []byte("information_schema")

// Choose returns the schema that plans statement sql, classified st, in a
// session whose database is db (its own schema, if db is one, plans it by
// default) and whose statements outside sharded schemas run on home. It is
// for statements whose st.Schemas hold a Filter's bits, or any in a
// session on information_schema; sh is scratch for the statement's shape.
//
// A statement names a schema by a qualified table (oq.orders), the
// database of a SHOW or DESCRIBE (SHOW TABLES FROM oq, DESCRIBE oq.t), or
// an information_schema query that looks the schema up (TABLE_SCHEMA =
// 'oq'). Tables of two schemas in one statement are refused (1235 naming
// both) unless each schema's tables are unlisted ones on one cluster; a
// schema's tables with tables of an unsharded database only run where the
// session's statements run (home, or its schema's default cluster).
func (ks Keyspaces) Choose(db string, st router.Stmt, sql []byte, sh *router.Shape, home *backend.Cluster) Choice {
	own := ks.Lookup(db)
	if len(ks) == 0 || !choosable(st.Kind) {
		return Choice{KS: own}
	}
	var named [4]*Keyspace
	n, info := 0, strings.EqualFold(db, "information_schema")
	router.Qualifiers(sql, func(name []byte) bool {
		if k := ks[string(name)]; k != nil {
			if n < len(named) && !slices.Contains(named[:n], k) {
				named[n] = k
				n++
			}
		} else if bytes.EqualFold(name, informationSchema) {
			info = true
		}
		return true
	})
	if !info && (n == 0 || n == 1 && named[0] == own) {
		return Choice{KS: own}
	}
	// Where the session's own tables and user variables are.
	local := home
	if own != nil {
		local = own.Default
	}
	if info {
		if k := ks.lookedUp(sql, db); k != nil && k != own {
			router.ScanShape(sql, sh)
			if p := k.Plan(sql, sh, db); p.Err == nil && p.An.Placement == InfoSchema {
				return ks.outside(k, db, nil, false, st, local)
			}
		}
		if n == 0 {
			return Choice{KS: own}
		}
	}
	carrier := own
	if carrier == nil {
		carrier = named[0]
	}
	var refs []TableRef
	var readsDB bool
	if st.Kind == router.KindShow || st.Kind == router.KindAnalyze {
		stmt, err := carrier.parser.p.ParseStrictDDL(string(sql))
		if err != nil {
			return ks.unparsed(own, named[0], db, st, local)
		}
		if about, ok := showSchema(stmt); ok {
			if k := ks.Lookup(about); k != nil && k != own {
				return ks.outside(k, db, nil, false, st, local)
			}
			return Choice{KS: own}
		}
		refs, readsDB = TableRefs(stmt)
	} else {
		router.ScanShape(sql, sh)
		p := carrier.Plan(sql, sh, db)
		if !p.Parsed {
			return ks.unparsed(own, named[0], db, st, local)
		}
		refs, readsDB = p.Refs, p.ReadsDB
	}

	// The schemas whose tables the statement names, and the first table
	// of another database.
	var owners [4]*Keyspace
	var firsts [4]TableRef
	no := 0
	var plain *TableRef
	for i, r := range refs {
		k := own
		if r.DB != "" {
			k = ks.Lookup(r.DB)
		}
		switch {
		case k != nil:
			if no < len(owners) && !slices.Contains(owners[:no], k) {
				owners[no], firsts[no] = k, r
				no++
			}
		case strings.EqualFold(r.DB, "information_schema"): // on every server
		case plain == nil:
			plain = &refs[i]
			if r.DB == "" && db != "" {
				plain = &TableRef{DB: db, Name: r.Name}
			}
		}
	}
	switch {
	case no == 0 || no == 1 && owners[0] == own:
		return Choice{KS: own}
	case no == 1:
		k := owners[0]
		if plain != nil {
			if p := k.Plan(sql, sh, db); p.Err != nil {
				return Choice{KS: k, Outside: true} // the schema's own refusal
			}
		}
		return ks.outside(k, db, plain, readsDB, st, local)
	}
	// Tables of several schemas: one server's answer only when each
	// schema's tables are unlisted ones (or reference tables read),
	// living on one cluster.
	if i := slices.Index(owners[:no], own); i > 0 {
		owners[0], owners[i] = owners[i], owners[0]
		firsts[0], firsts[i] = firsts[i], firsts[0]
	}
	first := owners[0]
	for _, k := range owners[:no] {
		p := k.Plan(sql, sh, db)
		if p.Err != nil || p.An.Placement != Unsharded || k.Default != first.Default {
			return Choice{Err: notSupported(fmt.Sprintf("a statement on table %s of sharded schema %s and on table %s of sharded schema %s",
				firsts[0], first.Schema.Name, firsts[1], owners[1].Schema.Name))}
		}
	}
	if first == own {
		return Choice{KS: own}
	}
	return ks.outside(first, db, plain, readsDB, st, local)
}

// outside is the choice of schema k for a statement of a session on
// database db, not k's: it runs with k's database on its connections,
// unless it also names plain, a table of another database, when it must
// run where the session's own tables are (local) with the session's
// database.
func (ks Keyspaces) outside(k *Keyspace, db string, plain *TableRef, readsDB bool, st router.Stmt, local *backend.Cluster) Choice {
	c := Choice{KS: k, Outside: true}
	if plain != nil {
		if k.Default != local {
			c.Err = notSupported(fmt.Sprintf("a statement on tables of sharded schema %s and on table %s, which lives on another cluster", k.Schema.Name, plain))
		}
		return c
	}
	if !strings.EqualFold(db, "information_schema") {
		c.DB = k.Schema.Name
	}
	switch {
	case c.DB != "" && readsDB:
		c.Err = notSupported(fmt.Sprintf("DATABASE() in a statement on sharded schema %s from a session whose database is not %s", k.Schema.Name, k.Schema.Name))
	case st.Flags&router.FlagUserVar != 0 && k.Default != local:
		c.Err = notSupported(fmt.Sprintf("user variables in a statement on sharded schema %s from a session whose database is not %s", k.Schema.Name, k.Schema.Name))
	}
	return c
}

// unparsed chooses for a statement the parser could not read: the
// session's schema, else the first schema it names, which answers with
// the server's syntax error or refuses it, as in a session on the schema.
func (ks Keyspaces) unparsed(own, named *Keyspace, db string, st router.Stmt, local *backend.Cluster) Choice {
	if own != nil {
		return Choice{KS: own}
	}
	return ks.outside(named, db, nil, false, st, local)
}

// showSchema is the database a SHOW or DESCRIBE about tables is about, as
// written ("" for the session's); ok is false for other statements.
func showSchema(stmt sqlparser.Statement) (db string, ok bool) {
	switch s := stmt.(type) {
	case *sqlparser.Show:
		switch in := s.Internal.(type) {
		case *sqlparser.ShowBasic:
			if !in.DbName.IsEmpty() {
				return in.DbName.String(), true
			}
			return in.Tbl.Qualifier.String(), true
		case *sqlparser.ShowCreate:
			return in.Op.Qualifier.String(), true
		}
		return "", true
	case *sqlparser.ExplainTab:
		return s.Table.Qualifier.String(), true
	}
	return "", false
}

// schemaColumns are the information_schema columns whose look-up picks
// the schema whose rows a query reads.
var schemaColumns = []string{"TABLE_SCHEMA", "CONSTRAINT_SCHEMA"}

// lookedUp is the schema an information_schema query reads by looking
// its name up (TABLE_SCHEMA = 'oq', or = DATABASE() in a session on it),
// nil when it looks up none, another database, or several.
func (ks Keyspaces) lookedUp(sql []byte, db string) *Keyspace {
	var found *Keyspace
	cl := router.ScanClauses(sql, schemaColumns)
	for i := range cl.Names {
		n := &cl.Names[i]
		if !n.Exact {
			continue
		}
		k := ks.Lookup(n.CompareValue(sql, db))
		if k == nil || found != nil && found != k {
			return nil
		}
		found = k
	}
	return found
}
