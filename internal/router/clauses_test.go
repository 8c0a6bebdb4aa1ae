package router

import (
	"fmt"
	"strings"
	"testing"
)

func TestScanClauses(t *testing.T) {
	names := []string{"TABLE_NAME", "REFERENCED_TABLE_NAME", "TABLE_SCHEMA"}
	for _, tc := range []struct {
		sql string
		// want: ItemsEnd-From-Where-Tail-Limit-End as texts, then the
		// references as "text" (qualifier) and * when exact.
		where, tail, limit string
		refs               []string
	}{
		{sql: "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()",
			where: " table_schema = DATABASE()", tail: "", limit: "", refs: []string{"table_schema*db"}},
		{sql: "SELECT TABLE_NAME, x FROM information_schema.TABLES WHERE TABLE_SCHEMA='s' AND TABLE_NAME = 'T' ORDER BY TABLE_NAME LIMIT 2;",
			where: " TABLE_SCHEMA='s' AND TABLE_NAME = 'T' ", tail: "ORDER BY TABLE_NAME LIMIT 2", limit: "LIMIT 2",
			refs: []string{"TABLE_SCHEMA*s", "TABLE_NAME*T"}},
		{sql: "SELECT * FROM information_schema.TABLES WHERE TABLE_NAME LIKE 't%' OR `table_name` = 'u'",
			where: " TABLE_NAME LIKE 't%' OR `table_name` = 'u'", refs: []string{"TABLE_NAME", "`table_name`"}},
		{sql: "SELECT 1 FROM information_schema.KEY_COLUMN_USAGE KCU JOIN information_schema.REFERENTIAL_CONSTRAINTS RC ON KCU.TABLE_NAME = RC.TABLE_NAME WHERE (KCU.REFERENCED_TABLE_NAME = 't') AND 'u' = information_schema.KCU.TABLE_NAME",
			where: " (KCU.REFERENCED_TABLE_NAME = 't') AND 'u' = information_schema.KCU.TABLE_NAME",
			refs:  []string{"KCU.TABLE_NAME(KCU.)", "RC.TABLE_NAME(RC.)", "KCU.REFERENCED_TABLE_NAME(KCU.)*t", "information_schema.KCU.TABLE_NAME(information_schema.KCU.)*u"}},
		{sql: "SELECT 1 FROM information_schema.TABLES WHERE (a OR b) AND TABLE_NAME IN ('t') AND UPPER(TABLE_NAME) = 'T' AND TABLE_NAME <=> 'x' AND TABLE_NAME = 'y' COLLATE utf8_bin GROUP BY 1 HAVING 1",
			where: " (a OR b) AND TABLE_NAME IN ('t') AND UPPER(TABLE_NAME) = 'T' AND TABLE_NAME <=> 'x' AND TABLE_NAME = 'y' COLLATE utf8_bin ", tail: "GROUP BY 1 HAVING 1",
			refs: []string{"TABLE_NAME*t", "TABLE_NAME", "TABLE_NAME*x", "TABLE_NAME"}},
		{sql: "SELECT 1 FROM information_schema.TABLES WHERE NOT TABLE_NAME = 't' AND TABLE_ROWS IS NOT NULL",
			where: " NOT TABLE_NAME = 't' AND TABLE_ROWS IS NOT NULL", refs: []string{"TABLE_NAME"}},
		{sql: "SELECT 1 FROM information_schema.TABLES WHERE TABLE_ROWS IS NOT NULL AND TABLE_NAME = 't' LIMIT 1 FOR UPDATE",
			where: " TABLE_ROWS IS NOT NULL AND TABLE_NAME = 't' ", tail: "LIMIT 1 FOR UPDATE", limit: "LIMIT 1 ", refs: []string{"TABLE_NAME*t"}},
		{sql: "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'it''s'",
			where: " TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'it''s'", refs: []string{"TABLE_SCHEMA*db", "TABLE_NAME*it's"}},
		{sql: "SELECT TABLE_NAME AS n, f(TABLE_NAME) FROM information_schema.COLUMNS ORDER BY n",
			where: "-", tail: "ORDER BY n"},
	} {
		c := ScanClauses([]byte(tc.sql), names)
		span := func(s Span) string {
			if s.Start < 0 {
				return "-"
			}
			return tc.sql[s.Start:s.End]
		}
		if tc.where == "" {
			tc.where = "-"
		}
		if tc.limit == "" {
			tc.limit = "-"
		}
		if got := span(c.Where); got != tc.where {
			t.Errorf("%s: where %q, want %q", tc.sql, got, tc.where)
		}
		if got := strings.TrimSpace(tc.sql[c.Tail:c.End]); got != tc.tail {
			t.Errorf("%s: tail %q, want %q", tc.sql, got, tc.tail)
		}
		want, _, _ := strings.Cut(tc.tail, "LIMIT")
		if got := span(c.OrderBy); strings.HasPrefix(tc.tail, "ORDER") && strings.TrimSpace(got) != strings.TrimSpace(want) {
			t.Errorf("%s: order by %q, want %q", tc.sql, got, want)
		}
		if got := span(c.Limit); got != tc.limit {
			t.Errorf("%s: limit %q, want %q", tc.sql, got, tc.limit)
		}
		if !strings.HasPrefix(tc.sql[c.From:], "FROM ") || !strings.HasPrefix(tc.sql[c.ItemsEnd:], " FROM") {
			t.Errorf("%s: items end %d, from %d", tc.sql, c.ItemsEnd, c.From)
		}
		var refs []string
		for _, r := range c.Names {
			s := span(r.Span)
			if r.Qual.Start >= 0 {
				s += "(" + span(r.Qual) + ")"
			}
			if r.Exact {
				s += "*" + r.CompareValue([]byte(tc.sql), "db")
			}
			refs = append(refs, s)
		}
		if fmt.Sprint(refs) != fmt.Sprint(tc.refs) {
			t.Errorf("%s: refs %q, want %q", tc.sql, refs, tc.refs)
		}
	}
}
