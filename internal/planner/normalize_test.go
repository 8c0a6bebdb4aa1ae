package planner

import (
	"errors"
	"testing"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
)

func TestParseByShape(t *testing.T) {
	for _, tc := range []struct {
		sql   string
		exact bool
		ast   string // the AST written back
	}{
		{"SELECT a FROM t WHERE id = 1 AND b = 'x'", false, "select a from t where id = :sgl1 and b = :sgl2"},
		{"SELECT a FROM t WHERE id = ? AND b = 2", false, "select a from t where id = :sgp1 and b = :sgl1"},
		{"SELECT a FROM t", false, "select a from t"},
		// literals the grammar needs as numbers: the text as written
		{"CREATE TABLE t (a DECIMAL(10,2), b VARCHAR(20) DEFAULT 'x')", true, "create table t (\n\ta DECIMAL(10,2),\n\tb VARCHAR(20) default 'x'\n)"},
		{"SELECT CAST(a AS CHAR(3)) FROM t WHERE id = ?", true, "select cast(a as CHAR(3)) from t where id = :sgp1"},
		{"SELECT a FROM t WHERE d = DATE '2024-01-01'", true, "select a from t where d = date'2024-01-01'"},
	} {
		var sh router.Shape
		router.ScanShape([]byte(tc.sql), &sh)
		p, err := testParser.Parse([]byte(tc.sql), &sh)
		if err != nil {
			t.Errorf("%q: %v", tc.sql, err)
			continue
		}
		if p.Exact != tc.exact {
			t.Errorf("%q: Exact %v, want %v", tc.sql, p.Exact, tc.exact)
		}
		if got := sqlparser.String(p.Stmt); got != tc.ast {
			t.Errorf("%q: parsed as %q, want %q", tc.sql, got, tc.ast)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		code uint16 // 0: the parser's own error
	}{
		{"SELECT a FROM t WHERE b = 'open", mysql.ERParse},
		{"SELECT a FROM t WHERE b = :sgl1", mysql.ERParse}, // would be read as a literal's placeholder
		{"SELECT a FROM t WHERE b = 1 :x", mysql.ERParse},
		{"INSERT INTO t VALUES (1) RETURNING id", 0},
		{"SELECT 1; SELECT 2", 0},
	} {
		var sh router.Shape
		router.ScanShape([]byte(tc.sql), &sh)
		_, err := testParser.Parse([]byte(tc.sql), &sh)
		var se *mysql.SQLError
		switch {
		case err == nil:
			t.Errorf("%q: parsed", tc.sql)
		case tc.code != 0 && (!errors.As(err, &se) || se.Code != tc.code || se.State != "42000"):
			t.Errorf("%q: %v, want error %d", tc.sql, err, tc.code)
		case tc.code == 0 && errors.As(err, &se):
			t.Errorf("%q: %v, want the parser's error", tc.sql, err)
		}
	}
}

// TestCacheKeys: statements of one shape share ShapeKey; TextKey tells
// texts apart and never equals a shape's key.
func TestCacheKeys(t *testing.T) {
	var a, b router.Shape
	sqlA, sqlB := []byte("SELECT a FROM t WHERE id = 1"), []byte("select a from t where id = 2")
	router.ScanShape(sqlA, &a)
	router.ScanShape(sqlB, &b)
	ha, ka := ShapeKey(&a)
	hb, kb := ShapeKey(&b)
	if ha != hb || string(ka) != string(kb) {
		t.Fatalf("one shape, two keys: %x %q, %x %q", ha, ka, hb, kb)
	}
	ta, _ := TextKey(sqlA)
	tb, _ := TextKey(sqlB)
	if ta == tb || ta == ha {
		t.Fatalf("text keys %x %x, shape key %x", ta, tb, ha)
	}
}
