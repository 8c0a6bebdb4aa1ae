package planner

import (
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
)

// TestInfoSchemaParts checks the text sent for information_schema
// queries on the fixture, whose sub-tables 0 all live on the default
// cluster s0: one part (and the size parts of TABLES).
func TestInfoSchemaParts(t *testing.T) {
	k, err := NewKeyspace(fixture(t), map[string]*backend.Cluster{"s0": testCluster(t, 1), "s1": testCluster(t, 1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sql   string
		parts int
		has   []string // pieces of the first part's text
		not   []string
	}{
		{sql: "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'shop' AND TABLE_NAME = 'sf_user' ORDER BY TABLE_NAME LIMIT 1",
			parts: 3, // the rows, the sizes of s0's and s1's sub-tables
			has: []string{"SELECT TABLE_NAME, `information_schema`.`TABLES`.`TABLE_SCHEMA` AS `shardgate_0`, `information_schema`.`TABLES`.TABLE_NAME AS `shardgate_1` FROM",
				"WHERE ( TABLE_SCHEMA = 'shop' AND TABLE_NAME = 'sf_user_0000' ) AND NOT (", "'sf_user_0001'", "ORDER BY TABLE_NAME"},
			not: []string{"LIMIT", "'sf_user_0000', "}},
		{sql: "select c.column_name from information_schema.columns c where c.table_name like 'sf%'",
			parts: 1,
			has: []string{"where ( IF(BINARY c.`TABLE_SCHEMA` = 'shop' AND BINARY c.table_name IN ('sf_log_0000', 'sf_name_0000', 'sf_nokey_0000', 'sf_order_0000', 'sf_range_0000', 'sf_uname_0000', 'sf_user_0000'), " +
				"SUBSTRING(c.table_name, 1, CHAR_LENGTH(c.table_name) - 5), c.table_name) like 'sf%') AND NOT (BINARY `c`.`TABLE_SCHEMA` = 'shop' AND BINARY `c`.TABLE_NAME IN ('shardgate_sequences', 'shardgate_xa_decisions', 'sf_log_0001'"}},
		{sql: "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_NAME = 'sf_user_0003'",
			parts: 3, has: []string{"WHERE ( BINARY IF("}},
		{sql: "SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() GROUP BY TABLE_NAME",
			parts: 1, has: []string{"SELECT COUNT(*) FROM information_schema.STATISTICS WHERE ( TABLE_SCHEMA = DATABASE() ) AND NOT ("}, not: []string{"AS `shardgate_"}},
	} {
		prim, err := k.InfoSchema([]byte(tc.sql), "shop")
		if err != nil {
			t.Errorf("%s: %v", tc.sql, err)
			continue
		}
		m := prim.(*engine.Metadata)
		if len(m.Parts) != tc.parts {
			t.Errorf("%s: %d parts, want %d", tc.sql, len(m.Parts), tc.parts)
		}
		q := string(m.Parts[0].Query[1:])
		for _, h := range tc.has {
			if !strings.Contains(q, h) {
				t.Errorf("%s:\n%s\nlacks %s", tc.sql, q, h)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(q, n) {
				t.Errorf("%s:\n%s\nhas %s", tc.sql, q, n)
			}
		}
	}
}
