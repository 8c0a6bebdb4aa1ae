package planner

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// TestTemplateOnServer runs each statement on a real MariaDB twice, on two
// databases holding the same rows: as its Template renders it for t ->
// t_0001 and u -> u_0000, and as renamed by hand. Answers (rows, affected
// rows, errors) and the tables' contents afterwards must be equal.
func TestTemplateOnServer(t *testing.T) {
	srv := testenv.Shared(t)
	db := srv.RootDB(t)
	ctx := context.Background()
	setup := []string{}
	for _, d := range []string{"tpl_a", "tpl_b"} {
		setup = append(setup, "DROP DATABASE IF EXISTS "+d, "CREATE DATABASE "+d, "USE "+d)
		for _, tbl := range []string{"t_0000", "t_0001", "u_0000", "u_0001", "r"} {
			setup = append(setup,
				"CREATE TABLE "+tbl+" (id INT PRIMARY KEY, a VARCHAR(20), b DECIMAL(10,2), c INT)",
				"INSERT INTO "+tbl+" VALUES (1,'x',1.5,10),(2,'it''s',2.25,20),(3,'Y',NULL,30),(42,'z',0,42)")
		}
	}
	srv.Exec(t, setup...)
	t.Cleanup(func() { srv.Exec(t, "DROP DATABASE tpl_a", "DROP DATABASE tpl_b") })

	for _, tc := range []struct{ sql, byHand string }{
		{"SELECT a, b FROM t WHERE id = 2", "SELECT a, b FROM t_0001 WHERE id = 2"},
		{"SELECT t.a, x.c FROM t JOIN u AS x ON t.id = x.id JOIN r ON r.id = t.id WHERE t.id IN (1, 0x2A, '3') ORDER BY t.id DESC",
			"SELECT t_0001.a, x.c FROM t_0001 JOIN u_0000 AS x ON t_0001.id = x.id JOIN r ON r.id = t_0001.id WHERE t_0001.id IN (1, 0x2A, '3') ORDER BY t_0001.id DESC"},
		{"SELECT * FROM t WHERE t.c > (SELECT MIN(u.c) FROM u WHERE u.id = t.id - 1) ORDER BY t.a",
			"SELECT * FROM t_0001 WHERE t_0001.c > (SELECT MIN(u_0000.c) FROM u_0000 WHERE u_0000.id = t_0001.id - 1) ORDER BY t_0001.a"},
		{"SELECT tpl_X.t.a FROM tpl_X.t WHERE tpl_X.t.b = 2.25", "SELECT tpl_X.t_0001.a FROM tpl_X.t_0001 WHERE tpl_X.t_0001.b = 2.25"},
		{"SELECT id, a FROM t WHERE a = _utf8mb4'IT''S' COLLATE utf8mb4_general_ci OR a LIKE 'y%' ORDER BY 1 LIMIT 1, 1",
			"SELECT id, a FROM t_0001 WHERE a = _utf8mb4'IT''S' COLLATE utf8mb4_general_ci OR a LIKE 'y%' ORDER BY 1 LIMIT 1, 1"},
		{"SELECT CAST(b AS DECIMAL(10,1)), -c, c - -1 FROM t ORDER BY id", "SELECT CAST(b AS DECIMAL(10,1)), -c, c - -1 FROM t_0001 ORDER BY id"},
		{"UPDATE t SET t.a = 'new\\'s', b = b * 2 WHERE id IN (1, 3)", "UPDATE t_0001 SET t_0001.a = 'new\\'s', b = b * 2 WHERE id IN (1, 3)"},
		{"UPDATE t JOIN u ON t.id = u.id SET t.c = u.c + 1, u.a = 'j' WHERE u.id = 42",
			"UPDATE t_0001 JOIN u_0000 ON t_0001.id = u_0000.id SET t_0001.c = u_0000.c + 1, u_0000.a = 'j' WHERE u_0000.id = 42"},
		{"DELETE FROM t WHERE a = \"Y\"", "DELETE FROM t_0001 WHERE a = \"Y\""},
		{"DELETE t FROM t JOIN u ON t.id = u.id WHERE u.c = 20", "DELETE t_0001 FROM t_0001 JOIN u_0000 ON t_0001.id = u_0000.id WHERE u_0000.c = 20"},
		{"INSERT INTO t (id, a, b) VALUES (100, 'a', 1e1), (101, X'6263', .5), (102, N'ü', -3)",
			"INSERT INTO t_0001 (id, a, b) VALUES (100, 'a', 1e1), (101, X'6263', .5), (102, N'ü', -3)"},
		{"INSERT INTO t (id, a) VALUES (100, 'dup'), (103, 'new') ON DUPLICATE KEY UPDATE a = CONCAT(VALUES(a), t.id)",
			"INSERT INTO t_0001 (id, a) VALUES (100, 'dup'), (103, 'new') ON DUPLICATE KEY UPDATE a = CONCAT(VALUES(a), t_0001.id)"},
		{"INSERT INTO u SELECT id + 1000, a, b, c FROM t WHERE id < 3", "INSERT INTO u_0000 SELECT id + 1000, a, b, c FROM t_0001 WHERE id < 3"},
		{"REPLACE INTO t SET id = 1, a = 'rep'", "REPLACE INTO t_0001 SET id = 1, a = 'rep'"},
	} {
		// a database-qualified statement names its own database
		tc.sql, tc.byHand = strings.ReplaceAll(tc.sql, "tpl_X", "tpl_a"), strings.ReplaceAll(tc.byHand, "tpl_X", "tpl_b")
		rename := func(q, name string) int {
			if q != "" && q != "tpl_a" {
				return -1
			}
			return shardedTest("", name)
		}
		sh := new(router.Shape)
		router.ScanShape([]byte(tc.sql), sh)
		p, err := testParser.Parse([]byte(tc.sql), sh)
		if err != nil {
			t.Errorf("%q: %v", tc.sql, err)
			continue
		}
		tpl, err := NewTemplate(p, sh, rename)
		if err != nil {
			t.Errorf("%q: %v", tc.sql, err)
			continue
		}
		rendered := string(tpl.Append(nil, []byte(tc.sql), sh, []int{1, 0}))
		got := runOn(ctx, t, db, "tpl_a", rendered)
		want := runOn(ctx, t, db, "tpl_b", tc.byHand)
		if got != want {
			t.Errorf("%q\nrendered %q: %s\nby hand  %q: %s", tc.sql, rendered, got, tc.byHand, want)
		}
		if strings.HasPrefix(got, "error") {
			t.Errorf("%q: the server refused both: %s", tc.sql, got)
		}
	}
}

// runOn runs stmt in database d and returns its answer and then every
// table's contents, as text.
func runOn(ctx context.Context, t *testing.T, db *sql.DB, d, stmt string) string {
	t.Helper()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "USE "+d); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if strings.HasPrefix(strings.ToUpper(stmt), "SELECT") {
		out.WriteString(query(ctx, conn, stmt))
	} else if res, err := conn.ExecContext(ctx, stmt); err != nil {
		fmt.Fprintf(&out, "error %v", err)
	} else {
		n, _ := res.RowsAffected()
		fmt.Fprintf(&out, "affected %d", n)
	}
	for _, tbl := range []string{"t_0000", "t_0001", "u_0000", "u_0001", "r"} {
		fmt.Fprintf(&out, "\n%s: %s", tbl, query(ctx, conn, "SELECT * FROM "+tbl+" ORDER BY id"))
	}
	return out.String()
}

func query(ctx context.Context, conn *sql.Conn, q string) string {
	rows, err := conn.QueryContext(ctx, q)
	if err != nil {
		return "error " + err.Error()
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var b strings.Builder
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return "error " + err.Error()
		}
		fmt.Fprintf(&b, "%v;", vals)
	}
	if err := rows.Err(); err != nil {
		return "error " + err.Error()
	}
	return b.String()
}
