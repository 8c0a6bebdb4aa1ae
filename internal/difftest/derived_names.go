package difftest

import (
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"
)

// derivedNames are the tables a statement of database db reads through:
// the aliases of its derived tables, the names of its WITH queries and the
// aliases they are read under (derived), and the other tables it names
// (base). A column of a derived table or WITH query, merged into the outer
// query or materialized, is named by MariaDB after its plan: by the
// derived table (no schema, its alias), or by the base table it reads,
// with db as its schema or none. On the same rows, seed
// 1795872261100561973 statement #561's column (a WITH query read by a
// merged one) gave ("", "d") when the plan read it by a key after another
// table, ("shop", "sf_order") under the STRAIGHT_JOIN reading it first and
// sorting through a temporary table, and ("", "sf_order") without the
// merged WITH query between. The evaluator's copies hold fewer rows than
// the reference's tables, so it reads them first more often. A column the
// derived table computes names it, or no table.
type derivedNames struct {
	db            string
	derived, base map[string]bool // lower-cased
}

// derivedNamesOf parses sql for its derived tables and tables; none when
// it has no derived table or WITH query, or does not parse.
func derivedNamesOf(sql, db string) derivedNames {
	if !strings.Contains(sql, "(SELECT") && !strings.HasPrefix(sql, "WITH") {
		return derivedNames{} // (no parse for most statements)
	}
	stmt, err := namesParser.Parse(sql)
	if err != nil {
		return derivedNames{}
	}
	n := derivedNames{db: db, derived: map[string]bool{}, base: map[string]bool{}}
	_ = sqlparser.Walk(func(node sqlparser.SQLNode) (bool, error) {
		if cte, ok := node.(*sqlparser.CommonTableExpr); ok {
			n.derived[strings.ToLower(cte.ID.String())] = true
		}
		return true, nil
	}, stmt)
	_ = sqlparser.Walk(func(node sqlparser.SQLNode) (bool, error) {
		t, ok := node.(*sqlparser.AliasedTableExpr)
		if !ok {
			return true, nil
		}
		alias := strings.ToLower(t.As.String())
		switch e := t.Expr.(type) {
		case *sqlparser.DerivedTable:
			n.derived[alias] = true
		case sqlparser.TableName:
			name := strings.ToLower(e.Name.String())
			into := n.base
			if e.Qualifier.IsEmpty() && n.derived[name] {
				into = n.derived // (a WITH query)
			}
			into[name] = true
			if alias != "" {
				into[alias] = true
			}
		}
		return true, nil
	}, stmt)
	if len(n.derived) == 0 {
		return derivedNames{}
	}
	return n
}

var namesParser = sqlparser.NewTestParser()

// planVariant reports whether r and g are one column of a derived table
// or WITH query as two plans name it (see derivedNames): one of them names
// a derived table, the other a derived table, a table the statement names
// or none (a column the derived table computes, read by the plan from a
// temporary table's field: seed 4242 #1511, COUNT(*) AS n in a WITH query
// read first under STRAIGHT_JOIN), and their schemas are equal, or one is
// empty and the other the statement's database.
func (n derivedNames) planVariant(r, g *Column) bool {
	if n.derived == nil {
		return false
	}
	rt, gt := strings.ToLower(r.OrgTable), strings.ToLower(g.OrgTable)
	if !n.derived[rt] && !n.derived[gt] {
		return false
	}
	named := func(t string) bool { return t == "" || n.derived[t] || n.base[t] }
	schemaOK := r.Schema == g.Schema || r.Schema == "" && g.Schema == n.db || g.Schema == "" && r.Schema == n.db
	return named(rt) && named(gt) && schemaOK
}
