package proxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/testenv"
)

// sessionStep is a statement one of two client sessions (a or b) runs.
// A query's answer is its rows; anything else is run as an exec, whose
// answer is the OK packet's affected rows and insert id. prepared runs it
// as a server-side prepared statement (the binary protocol).
type sessionStep struct {
	who      byte // 'a' or 'b'
	sql      string
	query    bool
	prepared bool
}

func qa(sql string) sessionStep { return sessionStep{who: 'a', sql: sql, query: true} }
func xa(sql string) sessionStep { return sessionStep{who: 'a', sql: sql} }
func xb(sql string) sessionStep { return sessionStep{who: 'b', sql: sql} }

// stepAnswer runs step on c and renders its answer.
func stepAnswer(c *sql.Conn, step sessionStep) string {
	ctx := context.Background()
	if step.prepared {
		st, err := c.PrepareContext(ctx, step.sql)
		if err != nil {
			return fmt.Sprintf("prepare error %d", mysqlErrCode(err))
		}
		defer st.Close()
		return renderRows(st.QueryContext(ctx))
	}
	if step.query {
		return renderRows(c.QueryContext(ctx, step.sql))
	}
	res, err := c.ExecContext(ctx, step.sql)
	if err != nil {
		return fmt.Sprintf("error %d", mysqlErrCode(err))
	}
	affected, _ := res.RowsAffected()
	id, _ := res.LastInsertId()
	return fmt.Sprintf("ok affected=%d insert_id=%d", affected, id)
}

func renderRows(rows *sql.Rows, err error) string {
	if err != nil {
		return fmt.Sprintf("error %d", mysqlErrCode(err))
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var b strings.Builder
	for rows.Next() {
		vals, err := scanNullStrings(rows, len(cols))
		if err != nil {
			return "scan: " + err.Error()
		}
		for _, v := range vals {
			if v.Valid {
				b.WriteString(v.String)
			} else {
				b.WriteString("NULL")
			}
			b.WriteByte(' ')
		}
		b.WriteByte('|')
	}
	if err := rows.Err(); err != nil {
		return fmt.Sprintf("error %d", mysqlErrCode(err))
	}
	return strings.Join(cols, ",") + ": " + b.String()
}

// sameSessionAnswers runs the steps of two sessions on the reference
// (ref[0] is a, ref[1] is b) and through shardgate (px), step by step,
// and fails at the first whose answers differ.
func sameSessionAnswers(t *testing.T, ref, px [2]*sql.Conn, steps []sessionStep) {
	t.Helper()
	for i, step := range steps {
		k := int(step.who - 'a')
		want, got := stepAnswer(ref[k], step), stepAnswer(px[k], step)
		if got != want {
			t.Fatalf("step %d (%c) %s: shardgate answered %q, the reference %q", i+1, step.who, step.sql, got, want)
		}
	}
}

// TestLastInsertIDAsOneServer: LAST_INSERT_ID() changes only when a
// statement generates an AUTO_INCREMENT value (or sets it: LAST_INSERT_ID(x),
// SET last_insert_id), while the OK packet's insert id also reports a
// value the client gave. Through shardgate each session's LAST_INSERT_ID()
// is the one server's, also when the statement reading it runs on another
// backend connection than the INSERT did, one whose own LAST_INSERT_ID()
// another session changed meanwhile. Two sessions run the same steps on the
// reference server and through shardgate (a pool of two connections: while
// b holds one in its transaction, a's statements run on the other).
func TestLastInsertIDAsOneServer(t *testing.T) {
	srv := testenv.Shared(t)
	setup := []string{
		"CREATE TABLE ai (id INT AUTO_INCREMENT PRIMARY KEY, v INT)",
		"CREATE TABLE bi (id INT AUTO_INCREMENT PRIMARY KEY, v INT)",
		"CREATE TABLE plain (id INT PRIMARY KEY, v INT)",
		"CREATE TABLE counter (n BIGINT NOT NULL)",
	}
	for _, db := range []string{"lid_ref", "lid_px"} {
		srv.Exec(t, "DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db)
		for _, s := range setup {
			srv.Exec(t, strings.Replace(s, "TABLE ", "TABLE "+db+".", 1))
		}
		srv.Exec(t, "INSERT INTO "+db+".counter VALUES (40)")
	}
	srv.Exec(t, "DROP PROCEDURE IF EXISTS lid_ref.add_row", "DROP PROCEDURE IF EXISTS lid_px.add_row",
		"CREATE PROCEDURE lid_ref.add_row() BEGIN INSERT INTO lid_ref.ai (v) VALUES (-1); END",
		"CREATE PROCEDURE lid_px.add_row() BEGIN INSERT INTO lid_px.ai (v) VALUES (-1); END")
	cfg := proxyConfig(t, srv, "")
	cfg.Clusters[0].Pool.MaxOpen, cfg.Clusters[0].Pool.MaxIdle = 2, 2
	p := startProxy(t, cfg)
	pxDB := openDB(t, proxyDSN(p, testenv.User, testenv.Password, "lid_px", ""))
	refDB := openDB(t, srv.DSN("lid_ref"))
	px := [2]*sql.Conn{oneConn(t, pxDB), oneConn(t, pxDB)}
	ref := [2]*sql.Conn{oneConn(t, refDB), oneConn(t, refDB)}
	lid := qa("SELECT LAST_INSERT_ID()")
	lidPrepared := sessionStep{who: 'a', sql: "SELECT LAST_INSERT_ID()", query: true, prepared: true}
	steps := []sessionStep{
		xa("INSERT INTO ai (v) VALUES (1)"), lid, // generated: 1
		xa("INSERT INTO ai (id, v) VALUES (100, 2)"), lid, // explicit: OK says 100, LAST_INSERT_ID() stays 1
		// b takes a connection and changes its LAST_INSERT_ID(), inside a
		// transaction, so that a's next statements run on the other one.
		xb("BEGIN"), xb("INSERT INTO bi (v) VALUES (7)"), xb("INSERT INTO bi (v) VALUES (8)"),
		lid, lidPrepared,
		xa("INSERT INTO ai (id, v) VALUES (200, 3), (NULL, 4)"), lid, // the first generated: 201
		xa("INSERT INTO plain VALUES (1, 1)"), lid, // no AUTO_INCREMENT: unchanged
		xa("INSERT IGNORE INTO ai (id, v) VALUES (200, 9)"), lid,
		xa("INSERT INTO ai (id, v) VALUES (300, 1) ON DUPLICATE KEY UPDATE v = v + 1"), lid,
		xa("INSERT INTO ai (id, v) VALUES (300, 1) ON DUPLICATE KEY UPDATE v = v + 1"), lid,
		xa("REPLACE INTO ai (id, v) VALUES (300, 5)"), lid,
		xa("INSERT INTO ai (id, v) VALUES (NULL, 6), (1, 6)"), lid, // duplicate key after a generated row
		xa("INSERT INTO ai (id, v) VALUES (400, 7)"), lidPrepared,
		xa("CALL add_row()"), lid, // the procedure's generated id, though its OK says 0
		xa("INSERT INTO ai (id, v) VALUES (500, 8)"), lid,
		qa("SELECT LAST_INSERT_ID(77)"), lid,
		xa("SET @@session.last_insert_id = 9"), lid,
		xa("UPDATE counter SET n = LAST_INSERT_ID(n + 1)"), lid, lidPrepared,
		xa("UPDATE counter SET n = LAST_INSERT_ID(n + 1) WHERE n < 0"), lid, // no row: not evaluated
		xa("INSERT INTO ai (id, v) VALUES (600, 9)"),
		qa("SELECT LAST_INSERT_ID() + 0, LAST_INSERT_ID() AS x"),
		xa("INSERT INTO plain VALUES (LAST_INSERT_ID(), 2)"), qa("SELECT id, v FROM plain ORDER BY id"),
		// In a transaction of a's own.
		xa("BEGIN"), xa("INSERT INTO ai (id, v) VALUES (700, 1)"), lid,
		xa("INSERT INTO ai (v) VALUES (10)"), lid, xa("INSERT INTO ai (id, v) VALUES (800, 1)"), lid,
		xa("COMMIT"), lid,
		xb("COMMIT"), xb("INSERT INTO bi (id, v) VALUES (50, 1)"),
		xa("INSERT INTO ai (id, v) VALUES (900, 1)"), lid, lidPrepared,
		// Transactions whose INSERTs are not followed by a read of the
		// value: it is read once, when needed or at the end.
		xa("BEGIN"), xa("INSERT INTO ai (id, v) VALUES (1000, 1)"), xa("INSERT INTO ai (v) VALUES (11)"),
		xa("INSERT INTO ai (id, v) VALUES (1001, 1)"), xa("INSERT INTO plain VALUES (5, 5)"),
		qa("SELECT ROW_COUNT()"), xa("COMMIT"), lid, lidPrepared,
		xa("BEGIN"), xa("INSERT INTO ai (v) VALUES (12)"), xa("INSERT INTO ai (id, v) VALUES (1100, 1)"),
		qa("SELECT LAST_INSERT_ID(), ROW_COUNT()"), xa("INSERT INTO ai (v) VALUES (13)"), xa("INSERT INTO ai (id, v) VALUES (1101, 1)"),
		lidPrepared, xa("INSERT INTO ai (id, v) VALUES (1102, 1)"), xa("ROLLBACK"), lid,
		xa("BEGIN"), xa("INSERT INTO ai (id, v) VALUES (1200, 1)"), xa("INSERT INTO ai (id, v) VALUES (1201, 1)"), xa("COMMIT"), lid,
		xa("START TRANSACTION"), xa("INSERT INTO ai (v) VALUES (14)"), xb("INSERT INTO bi (v) VALUES (9)"),
		xa("UPDATE counter SET n = LAST_INSERT_ID(n + 1)"), xa("INSERT INTO ai (id, v) VALUES (1300, 1)"), xa("COMMIT"), lid,
		// A session pinned by a user variable for good.
		xa("SET @u = 1"), xa("INSERT INTO ai (v) VALUES (15)"), xa("INSERT INTO ai (id, v) VALUES (1400, 1)"),
		xb("INSERT INTO bi (v) VALUES (10)"), lid, xa("INSERT INTO ai (id, v) VALUES (1401, 1)"), lidPrepared,
	}
	sameSessionAnswers(t, ref, px, steps)
}

// TestShardedLastInsertIDOfSubTables: on a sharded table whose
// AUTO_INCREMENT column is not the shard key, each sub-table generates its
// own ids. An INSERT that gives that column's value (on one sub-table, or
// split over several) leaves LAST_INSERT_ID() alone, though its OK says
// the value; one that generates an id on some part makes that id the
// session's, as the part's OK says.
func TestShardedLastInsertIDOfSubTables(t *testing.T) {
	const db = "lid_sharded"
	s0, s1 := testenv.Shared(t), testenv.Start(t, testenv.Options{})
	const def = " (id INT AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL, v INT)"
	for _, s := range []*testenv.Server{s0, s1} {
		s.Exec(t, "DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db)
	}
	s0.Exec(t, "CREATE TABLE "+db+".u_0000"+def, "CREATE TABLE "+db+".u_0001"+def)
	s1.Exec(t, "CREATE TABLE "+db+".u_0002"+def, "CREATE TABLE "+db+".u_0003"+def)
	cfg := parseConfig(t, twoShardYAML(db, s0.Addr, s1.Addr, 4, `    tables:
      - {name: u, shard_key: k, rule: hash, shards: [s0, s1], sub_tables: 2}
`, ""), "lid-sharded.yaml")
	p := startProxy(t, cfg)
	c := oneConn(t, openDB(t, proxyDSN(p, appUser, appPass, db, "")))
	// Keys on s0 (sub-tables 0, 1) and on s1 (2, 3).
	var on0, on1 []int64
	for k := int64(1); len(on0) < 2 || len(on1) < 2; k++ {
		if subTableOf(t, k, 4) < 2 {
			on0 = append(on0, k)
		} else {
			on1 = append(on1, k)
		}
	}
	lid := func() int64 {
		t.Helper()
		v, err := strconv.ParseInt(queryString(t, c, "SELECT LAST_INSERT_ID()"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	insert := func(sqlText string) int64 {
		t.Helper()
		res, err := c.ExecContext(context.Background(), sqlText)
		if err != nil {
			t.Fatalf("%s: %v", sqlText, err)
		}
		id, _ := res.LastInsertId()
		return id
	}
	gen := insert(fmt.Sprintf("INSERT INTO u (k, v) VALUES (%d, 1)", on1[0]))
	if gen == 0 || lid() != gen {
		t.Fatalf("after a generated id %d, LAST_INSERT_ID() is %d", gen, lid())
	}
	steps := []struct {
		sql  string
		okID int64 // the OK's insert id
	}{
		{fmt.Sprintf("INSERT INTO u (id, k, v) VALUES (1000, %d, 2)", on0[0]), 1000},
		{fmt.Sprintf("INSERT INTO u (id, k, v) VALUES (2000, %d, 3), (2001, %d, 4)", on0[1], on1[1]), 2000},
	}
	for _, st := range steps {
		if got := insert(st.sql); got != st.okID {
			t.Fatalf("%s: OK's insert id %d, want %d", st.sql, got, st.okID)
		}
		if got := lid(); got != gen {
			t.Fatalf("%s: LAST_INSERT_ID() %d, want %d as before", st.sql, got, gen)
		}
	}
	// A split INSERT whose second part generates: its id, which one server
	// would report first too, since the first part generated none.
	res, err := c.ExecContext(context.Background(), fmt.Sprintf("INSERT INTO u (id, k, v) VALUES (4000, %d, 7), (NULL, %d, 8)", on1[0], on0[0]))
	if err != nil {
		t.Fatal(err)
	}
	okID, _ := res.LastInsertId()
	var generated int64
	if err := c.QueryRowContext(context.Background(), fmt.Sprintf("SELECT id FROM u WHERE k = %d AND v = 8", on0[0])).Scan(&generated); err != nil {
		t.Fatal(err)
	}
	if got := lid(); got != generated {
		t.Fatalf("split INSERT, second part generated %d (OK says %d): LAST_INSERT_ID() %d", generated, okID, got)
	}
}
