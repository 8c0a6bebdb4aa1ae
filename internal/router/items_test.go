package router

import (
	"reflect"
	"testing"
)

func TestSelectItems(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want []string
	}{
		{"SELECT u.id, COUNT(o.order_no), SUM(o.amount) FROM t", []string{"u.id", "COUNT(o.order_no)", "SUM(o.amount)"}},
		{"select  a +  1 ,b from t where x", []string{"a +  1", "b"}},
		{"SELECT DISTINCT SQL_CALC_FOUND_ROWS a, f(b, c) AS x FROM t", []string{"a", "f(b, c) AS x"}},
		{"SELECT 1", []string{"1"}},
		{"SELECT 'a,b', `x,y` FROM t", []string{"'a,b'", "`x,y`"}},
		{"SELECT a /* , */ , b -- c\nFROM t", []string{"a", "b"}},
		{"(SELECT a, b FROM t) UNION (SELECT c, d FROM u)", []string{"a", "b"}},
		{"WITH c AS (SELECT x, y FROM t) SELECT COUNT(*) FROM c", []string{"COUNT(*)"}},
		{"SELECT (SELECT MAX(a) FROM t), b FROM u", []string{"(SELECT MAX(a) FROM t)", "b"}},
		{"SELECT a FROM t FOR UPDATE", []string{"a"}},
		{"UPDATE t SET a = 1", nil},
	} {
		var got []string
		for _, s := range SelectItems([]byte(tc.sql), nil) {
			got = append(got, tc.sql[s.Start:s.End])
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("SelectItems(%q) = %q, want %q", tc.sql, got, tc.want)
		}
	}
}

func TestBlankUnionFirstOnly(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"SELECT SQL_NO_CACHE id FROM t", "SELECT              id FROM t"},
		{"select /*!40001 sql_no_cache */ * from t", "select /*!40001              */ * from t"},
		{"SELECT DISTINCT HIGH_PRIORITY STRAIGHT_JOIN SQL_BUFFER_RESULT SQL_CACHE a FROM t", "SELECT DISTINCT               STRAIGHT_JOIN                             a FROM t"},
		// Only the SELECT's own options: a column or a subquery's are left.
		{"SELECT sql_cache_hits, (SELECT SQL_NO_CACHE 1) FROM t", "SELECT sql_cache_hits, (SELECT SQL_NO_CACHE 1) FROM t"},
		{"SELECT `SQL_NO_CACHE` FROM t", "SELECT `SQL_NO_CACHE` FROM t"},
		{"WITH x AS (SELECT SQL_NO_CACHE 1) SELECT * FROM x", "WITH x AS (SELECT SQL_NO_CACHE 1) SELECT * FROM x"},
	} {
		b := []byte(c.in)
		BlankUnionFirstOnly(b)
		if string(b) != c.want {
			t.Errorf("BlankUnionFirstOnly(%q) = %q, want %q", c.in, b, c.want)
		}
	}
}
