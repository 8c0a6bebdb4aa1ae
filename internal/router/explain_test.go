package router

import "testing"

func TestReadExplain(t *testing.T) {
	for _, c := range []struct {
		sql     string
		head    string // the text before the statement; "" for not ok
		json    bool
		format  string
		analyze bool
	}{
		{sql: "EXPLAIN SELECT 1", head: "EXPLAIN "},
		{sql: "explain extended select 1", head: "explain extended "},
		{sql: "EXPLAIN PARTITIONS SELECT * FROM t", head: "EXPLAIN PARTITIONS "},
		{sql: "DESCRIBE SELECT 1", head: "DESCRIBE "},
		{sql: "desc format=json select 1", head: "desc format=json ", json: true},
		{sql: "EXPLAIN FORMAT = 'JSON' (SELECT 1) UNION (SELECT 2)", head: "EXPLAIN FORMAT = 'JSON' ", json: true},
		{sql: "EXPLAIN FORMAT=TRADITIONAL UPDATE t SET v = 1", head: "EXPLAIN FORMAT=TRADITIONAL "},
		{sql: "EXPLAIN FORMAT=TREE SELECT 1", head: "EXPLAIN FORMAT=TREE ", format: "TREE"},
		{sql: "/* c */ EXPLAIN /* d */ WITH c AS (SELECT 1) SELECT * FROM c", head: "/* c */ EXPLAIN /* d */ "},
		{sql: "EXPLAIN INSERT INTO t VALUES (1)", head: "EXPLAIN "},
		{sql: "EXPLAIN REPLACE INTO t VALUES (1)", head: "EXPLAIN "},
		{sql: "EXPLAIN DELETE FROM t", head: "EXPLAIN "},
		{sql: "ANALYZE SELECT 1", head: "ANALYZE ", analyze: true},
		{sql: "ANALYZE FORMAT=JSON SELECT 1", head: "ANALYZE FORMAT=JSON ", analyze: true, json: true},
		{sql: "EXPLAIN ANALYZE SELECT 1", head: "EXPLAIN ANALYZE ", analyze: true},
		{sql: "EXPLAIN t"},
		{sql: "DESCRIBE t id"},
		{sql: "EXPLAIN FOR CONNECTION 5"},
		{sql: "ANALYZE TABLE t"},
		{sql: "ANALYZE NO_WRITE_TO_BINLOG TABLE t"},
		{sql: "EXPLAIN FORMAT= SELECT 1"},
		{sql: "EXPLAIN /*! SELECT 1 */"},
		{sql: "SELECT 1"},
		{sql: "EXPLAIN"},
	} {
		h, ok := ReadExplain([]byte(c.sql))
		if ok != (c.head != "") {
			t.Errorf("ReadExplain(%q): ok %v", c.sql, ok)
			continue
		}
		if !ok {
			continue
		}
		if got := c.sql[:h.Stmt]; got != c.head || h.JSON != c.json || h.Format != c.format || h.Analyze != c.analyze {
			t.Errorf("ReadExplain(%q) = head %q %+v, want head %q json %v format %q analyze %v", c.sql, got, h, c.head, c.json, c.format, c.analyze)
		}
	}
}
