package parsers

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	// The parser needs a ValueExpr implementation; test_driver is the one
	// inside the parser module (TiDB's own pulls in the whole of TiDB).
	_ "github.com/pingcap/tidb/pkg/parser/test_driver"
)

// TiDB adapts github.com/pingcap/tidb/pkg/parser. A *parser.Parser is not
// safe for concurrent use; shardgate would keep one per goroutine or a pool.
type TiDB struct{ p *parser.Parser }

func NewTiDB() *TiDB { return &TiDB{p: parser.New()} }

func (t *TiDB) Name() string { return "tidb" }

func (t *TiDB) Parse(sql string) (any, error) { return t.p.ParseOneStmt(sql, "", "") }

func (t *TiDB) Facts(stmt any) Facts {
	v := &tidbFacts{}
	stmt.(ast.Node).Accept(v)
	return v.f
}

type tidbFacts struct{ f Facts }

func (v *tidbFacts) Enter(n ast.Node) (ast.Node, bool) {
	switch n := n.(type) {
	case *ast.TableSource:
		if tn, ok := n.Source.(*ast.TableName); ok {
			v.f.Tables = append(v.f.Tables, Ref{Schema: tn.Schema.O, Table: tn.Name.O, Alias: n.AsName.O})
			return n, true
		}
	case *ast.TableName: // DDL, SHOW: no TableSource around it
		v.f.Tables = append(v.f.Tables, Ref{Schema: n.Schema.O, Table: n.Name.O})
	case *ast.BinaryOperationExpr:
		if n.Op == opcode.EQ && isTiDBColumn(n.L) && isTiDBValue(n.R) {
			v.f.Preds++
		}
	case *ast.PatternInExpr:
		if isTiDBColumn(n.Expr) && n.Sel == nil {
			v.f.Preds++
		}
	case *ast.BetweenExpr:
		if isTiDBColumn(n.Expr) {
			v.f.Preds++
		}
	}
	return n, false
}

func (v *tidbFacts) Leave(n ast.Node) (ast.Node, bool) { return n, true }

func isTiDBColumn(e ast.ExprNode) bool { _, ok := e.(*ast.ColumnNameExpr); return ok }
func isTiDBValue(e ast.ExprNode) bool  { _, ok := e.(ast.ValueExpr); return ok }

func (t *TiDB) Rename(stmt any) { stmt.(ast.Node).Accept(tidbRename{}) }

// tidbRename points logical tables at their sub-table, in table references
// and in qualified column names (`orders.id`); aliases stay as they are.
type tidbRename struct{}

func (tidbRename) Enter(n ast.Node) (ast.Node, bool) {
	switch n := n.(type) {
	case *ast.TableName:
		if Logical[n.Name.L] {
			n.Name = ast.NewCIStr(SubTable(n.Name.O))
		}
	case *ast.ColumnName:
		if Logical[n.Table.L] {
			n.Table = ast.NewCIStr(SubTable(n.Table.O))
		}
	}
	return n, false
}

func (tidbRename) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// tidbRestoreFlags: without RestoreStringWithoutDefaultCharset every string
// literal comes back as _UTF8MB4'...', which reinterprets the bytes of a
// client whose connection charset is not utf8mb4.
const tidbRestoreFlags = format.DefaultRestoreFlags | format.RestoreStringWithoutDefaultCharset

func (t *TiDB) Format(stmt any) (string, error) {
	var b strings.Builder
	err := stmt.(ast.Node).Restore(format.NewRestoreCtx(tidbRestoreFlags, &b))
	return b.String(), err
}

// Digest is TiDB's lexer-only normaliser: no parse, literals become `?`.
func (t *TiDB) Digest(sql string) (string, error) {
	norm, _ := parser.NormalizeDigest(sql)
	return norm, nil
}
