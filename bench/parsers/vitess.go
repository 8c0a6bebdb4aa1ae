package parsers

import (
	querypb "vitess.io/vitess/go/vt/proto/query"
	"vitess.io/vitess/go/vt/sqlparser"
)

// Vitess adapts vitess.io/vitess/go/vt/sqlparser. A *sqlparser.Parser is
// immutable and safe for concurrent use.
type Vitess struct{ p *sqlparser.Parser }

// mariaDBAsMySQL is the server version Vitess compares `/*!NNNNN */`
// comments against. Vitess only knows MySQL versions; 8.0 is the closest
// to the syntax MariaDB 10.6+ accepts.
const mariaDBAsMySQL = "8.0.40"

func NewVitess() *Vitess {
	p, err := sqlparser.New(sqlparser.Options{MySQLServerVersion: mariaDBAsMySQL})
	if err != nil {
		panic(err) // a constant version string; cannot fail at run time
	}
	return &Vitess{p: p}
}

func (v *Vitess) Name() string { return "vitess" }

// Parse uses ParseStrictDDL: plain Parse returns a truncated DDL statement
// (only its table name) when the rest does not parse, logging a warning;
// fanned out to sub-tables that would silently run the wrong DDL.
func (v *Vitess) Parse(sql string) (any, error) { return v.p.ParseStrictDDL(sql) }

func (v *Vitess) Facts(stmt any) Facts {
	var f Facts
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		switch n := n.(type) {
		case *sqlparser.AliasedTableExpr:
			if tn, ok := n.Expr.(sqlparser.TableName); ok {
				f.Tables = append(f.Tables, Ref{Schema: tn.Qualifier.String(), Table: tn.Name.String(), Alias: n.As.String()})
				return false, nil
			}
		case sqlparser.TableName: // DDL, SHOW
			if !n.IsEmpty() {
				f.Tables = append(f.Tables, Ref{Schema: n.Qualifier.String(), Table: n.Name.String()})
			}
			return false, nil
		case *sqlparser.ColName:
			return false, nil // its Qualifier is a TableName, not a reference
		case *sqlparser.ComparisonExpr:
			if isVitessColumn(n.Left) && (n.Operator == sqlparser.EqualOp && isVitessValue(n.Right) || n.Operator == sqlparser.InOp) {
				f.Preds++
			}
		case *sqlparser.BetweenExpr:
			if isVitessColumn(n.Left) {
				f.Preds++
			}
		}
		return true, nil
	}, stmt.(sqlparser.SQLNode))
	return f
}

func isVitessColumn(e sqlparser.Expr) bool { _, ok := e.(*sqlparser.ColName); return ok }
func isVitessValue(e sqlparser.Expr) bool  { _, ok := e.(*sqlparser.Literal); return ok }

// Rename points logical tables at their sub-table. TableName is a value in
// Vitess's AST, so it is replaced through the rewriter's cursor; that one
// rule covers table references, DDL targets and column qualifiers alike.
func (v *Vitess) Rename(stmt any) {
	sqlparser.Rewrite(stmt.(sqlparser.SQLNode), func(c *sqlparser.Cursor) bool {
		if tn, ok := c.Node().(sqlparser.TableName); ok && Logical[tn.Name.String()] {
			tn.Name = sqlparser.NewIdentifierCS(SubTable(tn.Name.String()))
			c.Replace(tn)
		}
		return true
	}, nil)
}

func (v *Vitess) Format(stmt any) (string, error) {
	return sqlparser.String(stmt.(sqlparser.SQLNode)), nil
}

// Digest is what vtgate does for its plan cache: parse, replace literals
// by bind variables, print. Vitess has no lexer-only normaliser.
func (v *Vitess) Digest(sql string) (string, error) {
	stmt, reserved, err := v.p.Parse2(sql)
	if err != nil {
		return "", err
	}
	bv := map[string]*querypb.BindVariable{}
	out, err := sqlparser.Normalize(stmt, sqlparser.NewReservedVars("v", reserved), bv, true, "", 0, "", nil, nil, nil)
	if err != nil {
		return "", err
	}
	return sqlparser.String(out.AST), nil
}

// Lex runs only Vitess's tokenizer over sql: the floor for any digest built
// on it, to compare with TiDB's lexer-only NormalizeDigest.
func (v *Vitess) Lex(sql string) int {
	tkn := v.p.NewStringTokenizer(sql)
	n := 0
	for {
		typ, _ := tkn.Scan()
		if typ == 0 {
			return n
		}
		n++
	}
}
