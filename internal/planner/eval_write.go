package planner

import (
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"
)

// A write to unsharded tables that reads sharded ones (INSERT … SELECT
// from a sharded table into an unsharded one, CREATE TABLE … SELECT of
// a new unsharded table, an UPDATE or DELETE whose subquery or join
// reads sharded rows) is evaluated where it writes: on
// the session's own connection to the default cluster, inside its
// transaction, the sharded tables it reads copied into temporary tables
// there (EvalPlan.OnSession). It is then one server's statement: atomic,
// with that server's affected rows, insert id, warnings and errors.

// writesLocal reports whether every table stmt (an INSERT, UPDATE or
// DELETE read with db as the current database) writes is an unsharded
// table of the schema: a table of the default cluster that the schema
// does not list. false when a written table cannot be told (an UPDATE of
// several tables assigning an unqualified column).
func (k *Keyspace) writesLocal(stmt sqlparser.Statement, db string) bool {
	written, ok := writtenTables(stmt)
	if !ok || len(written) == 0 {
		return false
	}
	for _, n := range written {
		if !resolvesIn(k.Schema, n.Qualifier.String(), db) {
			return false
		}
		if k.Schema.Table(n.Name.String()) != nil {
			return false // sharded or reference
		}
	}
	return true
}

// writtenTables are the tables stmt writes, aliases resolved. false: a
// written table cannot be told from the statement alone.
func writtenTables(stmt sqlparser.Statement) ([]sqlparser.TableName, bool) {
	switch s := stmt.(type) {
	case *sqlparser.CreateTable:
		return []sqlparser.TableName{s.Table}, true
	case *sqlparser.Insert:
		tn, ok := s.Table.Expr.(sqlparser.TableName)
		return []sqlparser.TableName{tn}, ok
	case *sqlparser.Update:
		tables := aliasedTables(s.TableExprs)
		var out []sqlparser.TableName
		for _, ue := range s.Exprs {
			q := ue.Name.Qualifier
			if q.IsEmpty() {
				if len(tables) != 1 {
					return nil, false
				}
				out = append(out, tables[0].name)
				continue
			}
			tn, ok := resolveAlias(tables, q)
			if !ok {
				return nil, false
			}
			out = append(out, tn)
		}
		return out, true
	case *sqlparser.Delete:
		tables := aliasedTables(s.TableExprs)
		if len(s.Targets) == 0 {
			if len(tables) != 1 {
				return nil, false
			}
			return []sqlparser.TableName{tables[0].name}, true
		}
		var out []sqlparser.TableName
		for _, t := range s.Targets {
			tn, ok := resolveAlias(tables, t)
			if !ok {
				return nil, false
			}
			out = append(out, tn)
		}
		return out, true
	}
	return nil, false
}

// namedTable is a table reference of a FROM list: its name and alias.
type namedTable struct {
	name  sqlparser.TableName
	alias string
}

// aliasedTables lists the tables of exprs, joins included, not those of
// derived tables.
func aliasedTables(exprs []sqlparser.TableExpr) []namedTable {
	var out []namedTable
	for _, e := range exprs {
		_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
			switch n := n.(type) {
			case *sqlparser.AliasedTableExpr:
				if tn, ok := n.Expr.(sqlparser.TableName); ok {
					out = append(out, namedTable{name: tn, alias: n.As.String()})
				}
				return false, nil
			case *sqlparser.DerivedTable:
				return false, nil
			}
			return true, nil
		}, e)
	}
	return out
}

// resolveAlias finds the table a qualifier (an alias, a table name or
// db.table) names among tables.
func resolveAlias(tables []namedTable, q sqlparser.TableName) (sqlparser.TableName, bool) {
	for _, t := range tables {
		if q.Qualifier.IsEmpty() && t.alias != "" && t.alias == q.Name.String() {
			return t.name, true
		}
	}
	for _, t := range tables {
		if t.alias == "" && strings.EqualFold(t.name.Name.String(), q.Name.String()) &&
			(q.Qualifier.IsEmpty() || q.Qualifier.String() == t.name.Qualifier.String()) {
			return t.name, true
		}
	}
	return sqlparser.TableName{}, false
}
