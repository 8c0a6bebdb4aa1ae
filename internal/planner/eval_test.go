package planner

import (
	"regexp"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/router"
)

// TestEvalFetches: an evaluated statement reads, of each sharded table,
// the rows its conditions on that table alone allow, from the sub-tables
// that can hold them; a condition that reads another table, a column of
// unknown kind, a literal of another kind, or sits in a WHERE over an
// outer join's NULL side, is not pushed (every row is read); and the
// statement's own template is left as it was.
func TestEvalFetches(t *testing.T) {
	s := fixture(t)
	for _, name := range []string{"sf_user", "sf_order"} {
		tb := s.Table(name)
		tb.SetColumns([]string{"id", "user_id", "name", "city_id", "born"})
		tb.SetCollations(map[string]string{"name": "utf8mb4_general_ci"})
		tb.SetNumeric(map[string]bool{"id": true, "user_id": true, "city_id": true})
	}
	k, err := NewKeyspace(s, map[string]*backend.Cluster{"s0": testCluster(t, 1), "s1": testCluster(t, 1)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		sql string
		// want: a substring of each sharded table's fetch, in the order
		// of the tables, sub-table numbers as N; "" for every row; subs:
		// the sub-tables the fetches read in all.
		want []string
		subs int
	}{
		{"SELECT u.id, ROW_NUMBER() OVER (ORDER BY u.id) FROM sf_user u WHERE u.id = 5", []string{"where sf_user_N.id = 5"}, 1},
		{"SELECT u.id, o.id FROM sf_user u JOIN sf_order o ON o.city_id = u.city_id AND o.name = 'x' WHERE u.id IN (1, 2) AND u.born > 3",
			[]string{"where sf_user_N.id in (1, 2)", "where sf_order_N.`name` = 'x'"}, 2 + 8},
		{"SELECT u.id FROM sf_city c LEFT JOIN sf_user u ON u.city_id = c.id AND u.name LIKE 'a%' WHERE u.id = 3",
			[]string{"where sf_user_N.`name` like 'a%'"}, 8},
		{"SELECT id FROM sf_user WHERE name = 5 OR city_id = 'a'", []string{""}, 8},
		{"SELECT id FROM sf_user WHERE city_id BETWEEN 3 AND 5.5 AND born > 20200101 ORDER BY id LIMIT 1 OFFSET 2", []string{"where sf_user_N.city_id between 3 and 5.5"}, 8},
		{"SELECT a.id FROM sf_user a JOIN sf_user b ON b.city_id = a.city_id WHERE a.id = 1 AND b.id = 2",
			[]string{"where sf_user_N.id = 1 or sf_user_N.id = 2"}, 2},
		{"SELECT a.id FROM sf_user a JOIN sf_user b ON b.city_id = a.city_id WHERE a.id = 1", []string{""}, 8},
		{"SELECT id FROM sf_city WHERE id IN (SELECT city_id FROM sf_user WHERE name IS NULL)", []string{"where sf_user_N.`name` is null"}, 8},
		{"SELECT id FROM sf_city WHERE EXISTS (SELECT 1 FROM sf_user u WHERE u.city_id = sf_city.id AND u.id > 50)", []string{"where sf_user_N.id > 50"}, 8},
	}
	for _, tt := range tests {
		var sh router.Shape
		router.ScanShape([]byte(tt.sql), &sh)
		plan := k.Plan([]byte(tt.sql), &sh, "shop")
		if plan.Eval == nil {
			t.Errorf("%s: not evaluable", tt.sql)
			continue
		}
		if plan.Tmpl != nil {
			var sub [1]int
			if q := string(plan.Tmpl.Append(nil, []byte(tt.sql), &sh, sub[:])); strings.Contains(q, "sf_user_0000.id") || strings.Contains(q, "sf_user_0000.city_id") {
				t.Errorf("%s: the statement's own template was changed: %s", tt.sql, q)
			}
		}
		var vals TextValues
		vals.Reset([]byte(tt.sql), &sh)
		var e engine.Evaluate
		k.Evaluate(&e, plan.Eval, []byte(tt.sql), &sh, &vals, nil, false)
		subs, i := 0, -1
		for _, tb := range e.Tables {
			if tb.InTrx {
				continue // a reference table, copied inside a transaction only
			}
			i++
			if i >= len(tt.want) {
				t.Errorf("%s: table %d (%s) not expected", tt.sql, i, tb.Temp)
				continue
			}
			for _, f := range tb.Fetches {
				q := subTableNumber.ReplaceAllString(string(f.Query[1:]), "_N")
				subs += strings.Count(strings.ToLower(q), "select * from")
				if tt.want[i] == "" && strings.Contains(q, "where") || tt.want[i] != "" && !strings.Contains(q, tt.want[i]) {
					t.Errorf("%s: fetch of %s on %s: %s, want %q", tt.sql, tb.Temp, f.Cluster.Name, q, tt.want[i])
				}
			}
		}
		if subs != tt.subs {
			t.Errorf("%s: the fetches read %d sub-tables, want %d", tt.sql, subs, tt.subs)
		}
	}
}

var subTableNumber = regexp.MustCompile(`_[0-9]{4}`)

// TestEvalSemiJoin: a table joined on its numeric shard key with another
// table's column is read by the values of that column (a semi-join),
// each batch routed to the sub-tables its keys hash to; not when it is
// named twice, when its source is reduced too, or when the key is not a
// number.
func TestEvalSemiJoin(t *testing.T) {
	s := fixture(t)
	for _, name := range []string{"sf_user", "sf_order", "sf_name"} {
		tb := s.Table(name)
		tb.SetColumns([]string{"id", "user_id", "name", "city_id"})
		tb.SetCollations(map[string]string{"name": "utf8mb4_general_ci"})
		tb.SetNumeric(map[string]bool{"id": true, "user_id": true, "city_id": true})
	}
	k, err := NewKeyspace(s, map[string]*backend.Cluster{"s0": testCluster(t, 1), "s1": testCluster(t, 1)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ sql, want string }{
		{"SELECT u.id, o.id FROM sf_user u JOIN sf_order o ON o.user_id = u.city_id WHERE u.name = 'x'", "shop.sf_order: city_id of shop.sf_user"},
		{"SELECT c.id, u.name FROM sf_city c LEFT JOIN sf_user u ON u.id = c.id", "shop.sf_user: id of shop.sf_city"},
		{"SELECT u.id FROM sf_user u JOIN sf_order o ON o.user_id = u.city_id JOIN sf_order p ON p.id = u.id", ""},
		{"SELECT n.name FROM sf_user u JOIN sf_name n ON n.name = u.name", ""},
		{"SELECT u.id FROM sf_user u JOIN sf_order o ON o.city_id = u.city_id", ""}, // (numeric columns, not keys)
		{"SELECT id, name FROM sf_user WHERE id IN (SELECT o.city_id FROM sf_order o WHERE o.name = 'x')", "shop.sf_user: select distinct o.city_id from sf_order as o where o.`name` = 'x' and o.city_id is not null limit 20001"},
		{"SELECT id FROM sf_user WHERE id IN (SELECT city_id FROM sf_city)", ""},                          // (a local table's columns are not known)
		{"SELECT id FROM sf_user u WHERE id IN (SELECT o.city_id FROM sf_order o WHERE o.id = u.id)", ""}, // (correlated)
		{"SELECT id FROM sf_user WHERE id NOT IN (SELECT city_id FROM sf_order)", ""},
	}
	for _, tt := range tests {
		var sh router.Shape
		router.ScanShape([]byte(tt.sql), &sh)
		plan := k.Plan([]byte(tt.sql), &sh, "shop")
		if plan.Eval == nil {
			t.Fatalf("%s: not evaluable", tt.sql)
		}
		got := ""
		for _, tb := range plan.Eval.Tables {
			if r := tb.Reduce; r != nil {
				got = tb.Temp + ": " + r.Column + " of " + r.Source
				if r.Subquery != nil {
					got = tb.Temp + ": " + r.valuesSQL([]byte(tt.sql), &sh)
				}
			}
		}
		if got != tt.want {
			t.Errorf("%s: reduced %q, want %q", tt.sql, got, tt.want)
		}
	}
	parts, ok := k.semiJoin(s.Table("sf_user"))([]string{"1", "2", "9", "4.5", "17"})
	if !ok {
		t.Fatal("integers not routed")
	}
	var qs []string
	for _, p := range parts {
		qs = append(qs, string(p.Query[1:]))
	}
	joined := strings.Join(qs, " | ")
	n := strings.Count(joined, "SELECT * FROM")
	if n == 0 || n > 4 || strings.Contains(joined, "4.5") || !regexp.MustCompile(`IN \([0-9,]*\b1\b`).MatchString(joined) ||
		!strings.Contains(joined, "17") || !strings.Contains(joined, "9") || !strings.Contains(joined, "2") {
		t.Errorf("semi-join fetches of 1, 2, 9, 4.5, 17 over 8 sub-tables: %s", joined)
	}
	if _, ok := k.semiJoin(s.Table("sf_user"))([]string{"1", "2abc"}); ok {
		t.Error("a value that is not a number was routed")
	}
}
