package router

import (
	"slices"
	"strings"
	"testing"
)

// TestClassifySchemas: Stmt.Schemas holds the bits of every name that
// qualifies another one and of a SHOW statement's names, in any case,
// quoted or not, whatever the spaces and comments between; a name that
// never qualifies another is not promised (its bits may still be set by
// another name's, which Qualifiers sorts out).
func TestClassifySchemas(t *testing.T) {
	for _, tc := range []struct {
		sql   string
		names []string // the filter must hold each
	}{
		{"SELECT * FROM shop.orders WHERE id = 3", []string{"shop"}},
		{"SELECT * FROM `shop`.`orders`", []string{"shop"}},
		{"select * from SHOP . orders", []string{"shop"}},
		{"SELECT shop.orders.id FROM shop /* c */ .orders", []string{"shop", "orders"}},
		{"INSERT INTO shop.orders (id) VALUES (1)", []string{"shop"}},
		{"UPDATE a JOIN crm.b ON a.x = b.x SET a.y = 1", []string{"crm", "a"}},
		{"DELETE FROM /*!shop.*/orders WHERE id = 1", []string{"shop"}},
		{"SHOW TABLES FROM shop", []string{"shop"}},
		{"SHOW COLUMNS FROM orders IN `shop`", []string{"shop"}},
		{"SELECT 1; SELECT * FROM shop.orders", []string{"shop"}},
		{"SELECT * FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'shop'", []string{"information_schema"}},
	} {
		st := Classify([]byte(tc.sql))
		for _, n := range tc.names {
			if b := SchemaBits(n); st.Schemas&b != b {
				t.Errorf("%s: Schemas %#x misses %s (%#x)", tc.sql, st.Schemas, n, b)
			}
		}
	}
	for _, sql := range []string{"SELECT v FROM t WHERE id = 5000", "SELECT 1.5, 'shop.orders'", "SELECT * FROM shop", "SET @x = 1",
		"SELECT * FROM t -- shop.orders", "INSERT INTO t VALUES (1.25)"} {
		if st := Classify([]byte(sql)); st.Schemas != 0 {
			t.Errorf("%s: Schemas %#x, want 0", sql, st.Schemas)
		}
	}
}

func TestQualifiers(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want []string
	}{
		{"SELECT o.id, i.n FROM shop.orders o JOIN shop.items i ON i.order_id = o.id", []string{"o", "i", "shop", "shop", "i", "o"}},
		{"SELECT * FROM `my db`.t, `x``y`.u", []string{"my db", "x``y"}},
		{"SELECT 1.5, 'a.b', `c`, d . e FROM t -- f.g", []string{"d"}},
		{"SHOW TABLES FROM shop LIKE 'x.y'", []string{"shop"}},
		{"SHOW FULL COLUMNS FROM orders IN shop", []string{"orders", "shop"}},
		{"SHOW INDEX FROM shop.orders", []string{"shop", "shop"}},
		{"SELECT * FROM t WHERE a IN (1, 2)", nil},
		{"SELECT 1; SHOW TABLES IN crm", []string{"crm"}},
	} {
		var got []string
		Qualifiers([]byte(tc.sql), func(name []byte) bool {
			got = append(got, string(name))
			return true
		})
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.sql, got, tc.want)
		}
	}
	n := 0
	Qualifiers([]byte("SELECT a.x, b.y, c.z"), func([]byte) bool { n++; return n < 2 })
	if n != 2 {
		t.Errorf("Qualifiers went on after false: %d calls", n)
	}
	sql := []byte("SELECT o.id FROM shop.orders o WHERE o.id = 3")
	if a := testing.AllocsPerRun(100, func() {
		_ = Classify(sql)
		Qualifiers(sql, func(name []byte) bool { return !strings.EqualFold(string(name), "shop") })
	}); a != 0 {
		t.Errorf("%v allocations", a)
	}
}
