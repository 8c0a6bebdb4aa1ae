// Package parsers measures the two maintained MySQL parsers shardgate could
// use for sharded schemas (pingcap's TiDB parser and Vitess's sqlparser) on
// the statements the planner will see. It is a separate module so that
// neither parser enters the main module's go.mod while the choice is made.
package parsers

import (
	"fmt"
	"strings"
)

// Stmt is one corpus entry. MariaDB marks syntax that MySQL does not have:
// a parser refusing it is a gap shardgate must handle, not a benchmark bug.
type Stmt struct {
	Name    string
	SQL     string
	MariaDB bool
}

// Corpus holds the statements the issue-13 planner has to understand. The
// first entries are the benchmarked shapes; the rest check acceptance and
// faithful re-serialisation.
var Corpus = []Stmt{
	{Name: "point_select", SQL: "SELECT id, name, email FROM users WHERE id = 42"},
	{Name: "where_and_or", SQL: "SELECT id, c FROM orders WHERE a = 1 AND (b IN (1,2,3) OR c BETWEEN 1 AND 9)"},
	{Name: "insert_100_rows", SQL: insertRows(100)},
	{Name: "insert_on_dup", SQL: "INSERT INTO orders (id, user_id, qty, note) VALUES (7, 42, 1, 'a''b') ON DUPLICATE KEY UPDATE qty = qty + VALUES(qty), note = 'x'"},
	{Name: "update_join", SQL: "UPDATE orders o JOIN users u ON u.id = o.user_id SET o.state = 'paid', u.last_order = CURDATE() WHERE u.id = 42 AND o.id IN (1, 2)"},
	{Name: "delete_join", SQL: "DELETE o FROM orders o JOIN users u ON u.id = o.user_id WHERE u.id = 42 AND o.state = 'void'"},
	{Name: "join3_subquery", SQL: "SELECT u.id, o.id AS oid, i.sku FROM users AS u JOIN orders o ON o.user_id = u.id LEFT JOIN items i ON i.order_id = o.id WHERE u.id = 42 AND o.total > (SELECT AVG(total) FROM orders WHERE user_id = 42) AND i.sku IN (SELECT sku FROM skus s WHERE s.active = 1)"},
	{Name: "create_table", SQL: "CREATE TABLE orders (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, user_id BIGINT NOT NULL, state ENUM('new','paid','void') NOT NULL DEFAULT 'new', total DECIMAL(12,2) NOT NULL DEFAULT 0.00, note VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci, created DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), PRIMARY KEY (id), KEY idx_user (user_id, created), UNIQUE KEY uq_note (note(32)), FULLTEXT KEY ft_note (note)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"},
	{Name: "alter_table", SQL: "ALTER TABLE orders ADD COLUMN shipped DATETIME NULL AFTER created, ADD INDEX idx_state (state), DROP INDEX uq_note, MODIFY note VARCHAR(512)"},
	{Name: "show_tables", SQL: "SHOW FULL TABLES FROM shop LIKE 'ord%'"},
	{Name: "show_columns", SQL: "SHOW COLUMNS FROM orders FROM shop"},
	{Name: "show_create", SQL: "SHOW CREATE TABLE orders"},
	{Name: "show_index", SQL: "SHOW INDEX FROM orders"},
	{Name: "show_table_status", SQL: "SHOW TABLE STATUS LIKE 'orders'"},

	// Faithfulness probes: comments, hints and literal spellings that the
	// re-serialised statement must keep (the backend, not the proxy, decides
	// what they mean).
	{Name: "hint_comment", SQL: "SELECT /*+ MAX_EXECUTION_TIME(1000) */ id FROM users WHERE id = 1"},
	{Name: "plain_comment", SQL: "SELECT /* app:checkout */ id FROM users WHERE id = 1"},
	{Name: "literals", SQL: "SELECT id FROM users WHERE id IN (42, '42', 42.0, 0x2A, X'2A', b'101010', 4.2e1, -1) AND name = _utf8mb4'Abc ' COLLATE utf8mb4_general_ci AND d = DATE '2024-01-31'"},
	{Name: "unknown_hint", SQL: "SELECT /*+ SHARDGATE_SHARD(s1) */ id FROM users WHERE id = 1"},
	{Name: "leading_comment", SQL: "/* app:checkout */ SELECT id FROM users WHERE id = 1 -- trailing"},
	{Name: "backslash_escape", SQL: "SELECT id FROM users WHERE name = 'it\\'s' OR name = \"dq\""},
	{Name: "placeholders", SQL: "SELECT id FROM users WHERE id = ? AND name IN (?, ?)"},
	{Name: "order_by_qualified", SQL: "SELECT users.id FROM users WHERE users.id > 10 ORDER BY users.id LIMIT 5"},
	{Name: "cte_window", SQL: "WITH r AS (SELECT id, ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY id) AS n FROM orders) SELECT id FROM r WHERE n = 1"},
	{Name: "for_update_skip_locked", SQL: "SELECT id FROM orders WHERE user_id = 42 FOR UPDATE SKIP LOCKED"},
	{Name: "insert_select", SQL: "INSERT IGNORE INTO orders (id, user_id) SELECT id, user_id FROM orders_archive WHERE user_id = 42"},
	{Name: "update_limit", SQL: "UPDATE orders SET state = 'void' WHERE user_id = 42 ORDER BY id LIMIT 10"},
	{Name: "hex_literal", SQL: "SELECT id FROM users WHERE id = 0x2A"},
	{Name: "charset_introducer", SQL: "SELECT id FROM users WHERE name = _latin1'Abc' OR name = _utf8mb4'ab' COLLATE utf8mb4_bin"},
	{Name: "mysql_exec_comment", SQL: "SELECT /*!50000 SQL_NO_CACHE */ id FROM users WHERE id = 1"},

	// MariaDB syntax shardgate's users send.
	{Name: "insert_returning", SQL: "INSERT INTO orders (user_id, qty) VALUES (42, 1) RETURNING id, user_id", MariaDB: true},
	{Name: "delete_returning", SQL: "DELETE FROM orders WHERE user_id = 42 RETURNING id", MariaDB: true},
	{Name: "create_or_replace", SQL: "CREATE OR REPLACE TABLE t1 (id INT PRIMARY KEY)", MariaDB: true},
	{Name: "next_value_for", SQL: "SELECT NEXT VALUE FOR order_seq", MariaDB: true},
	{Name: "nextval_func", SQL: "INSERT INTO orders (id, user_id) VALUES (NEXTVAL(order_seq), 42)", MariaDB: true},
	{Name: "create_sequence", SQL: "CREATE SEQUENCE order_seq START WITH 1 INCREMENT BY 1 CACHE 1000", MariaDB: true},
	{Name: "mariadb_exec_comment", SQL: "SELECT /*M!100100 SQL_NO_CACHE */ id FROM users WHERE id = 1", MariaDB: true},
	{Name: "mariadb_exec_comment_ddl", SQL: "CREATE TABLE t2 (id INT PRIMARY KEY) /*M!100200 PAGE_CHECKSUM=1 */", MariaDB: true},
	{Name: "set_statement_for", SQL: "SET STATEMENT max_statement_time=1 FOR SELECT id FROM users WHERE id = 1", MariaDB: true},
	{Name: "alter_if_exists", SQL: "ALTER TABLE orders ADD COLUMN IF NOT EXISTS shipped DATETIME, DROP COLUMN IF EXISTS legacy", MariaDB: true},
	{Name: "system_versioning", SQL: "SELECT id FROM orders FOR SYSTEM_TIME AS OF TIMESTAMP '2024-01-01 00:00:00' WHERE id = 1", MariaDB: true},
	{Name: "except_intersect", SQL: "SELECT id FROM orders WHERE user_id = 1 EXCEPT SELECT id FROM orders WHERE state = 'void'", MariaDB: true},
	{Name: "uuid_inet6_types", SQL: "CREATE TABLE t3 (id UUID PRIMARY KEY, ip INET6)", MariaDB: true},
	{Name: "with_system_versioning", SQL: "CREATE TABLE t4 (id INT PRIMARY KEY) WITH SYSTEM VERSIONING", MariaDB: true},
	{Name: "value_func_on_dup", SQL: "INSERT INTO orders (id, qty) VALUES (1, 2) ON DUPLICATE KEY UPDATE qty = VALUE(qty)", MariaDB: true},
	{Name: "limit_rows_examined", SQL: "SELECT id FROM orders WHERE user_id = 42 LIMIT 10 ROWS EXAMINED 1000", MariaDB: true},
}

// Benched names the statements timed by the benchmarks: the shapes the
// planner meets on every cache miss. The rest of Corpus is checked, not timed.
var Benched = []string{
	"point_select", "where_and_or", "insert_100_rows", "insert_on_dup",
	"update_join", "delete_join", "join3_subquery", "create_table",
	"alter_table", "show_tables", "show_columns", "show_create",
}

// Lookup returns the corpus statement with that name.
func Lookup(name string) Stmt {
	for _, s := range Corpus {
		if s.Name == name {
			return s
		}
	}
	panic("no corpus statement " + name)
}

// Logical is the set of table names the sharding config would list; the
// rename step appends a sub-table suffix to exactly these.
var Logical = map[string]bool{"users": true, "orders": true, "items": true, "skus": true}

// SubTable is the sub-table name the planner would send for a logical table.
func SubTable(name string) string { return name + "_0003" }

func insertRows(n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO orders (id, user_id, qty, total, note) VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%d, %d, %d, %d.%02d, 'note %d')", i+1001, 1000+i*7, i%5+1, i*3, i%100, i)
	}
	return b.String()
}
