package proxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/testenv"
)

// ddlShards is a proxy over two shards whose schema's tables do not exist
// yet: they are to be created through the proxy. t is hash-sharded on id,
// 2 sub-tables per shard (t_0000, t_0001 on s0; t_0002, t_0003 on s1); u
// is like t on uid; city is a reference table. The database exists on
// both shards; db+"_ref" on s0 is the reference server's one table
// database.
type ddlShards struct {
	db     string
	s0, s1 *testenv.Server
	d0, d1 *sql.DB
	p      *proxy.Proxy
}

func startDDLShards(t *testing.T, db string) *ddlShards {
	t.Helper()
	s0, s1 := testenv.Shared(t), testenv.Start(t, testenv.Options{})
	for _, s := range []*testenv.Server{s0, s1} {
		s.Exec(t, "DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db)
	}
	s0.Exec(t, "DROP DATABASE IF EXISTS "+db+"_ref", "CREATE DATABASE "+db+"_ref")
	cfg := parseConfig(t, twoShardYAML(db, s0.Addr, s1.Addr, 4, `    tables:
      - {name: t, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: 2}
      - {name: u, shard_key: uid, like: t}
      - {name: city, type: reference}
`, fmt.Sprintf("  - {name: ops, password_hash: \"%s\"}\n", hashOf(appPass))), "sharded.yaml")
	return &ddlShards{db: db, s0: s0, s1: s1, d0: openDB(t, s0.DSN(db)), d1: openDB(t, s1.DSN(db)), p: startProxy(t, cfg)}
}

func (e *ddlShards) proxyDB(t *testing.T) *sql.DB {
	return openDB(t, proxyDSN(e.p, appUser, appPass, e.db, ""))
}

// shardOf is the direct connection to the shard holding sub-table i.
func (e *ddlShards) shardOf(i int) *sql.DB {
	if i < 2 {
		return e.d0
	}
	return e.d1
}

// tables lists the tables of the schema's database on db, sorted.
func (e *ddlShards) tables(t *testing.T, db *sql.DB) string {
	t.Helper()
	return queryString(t, db, "SELECT COALESCE(GROUP_CONCAT(table_name ORDER BY table_name), '') FROM information_schema.tables WHERE table_schema = '"+e.db+"'")
}

// showCreate is SHOW CREATE TABLE of table on db, with its name put back
// to logical and the AUTO_INCREMENT counter left out.
func showCreate(t *testing.T, db *sql.DB, table, logical string) string {
	t.Helper()
	var name, def string
	if err := db.QueryRow("SHOW CREATE TABLE "+table).Scan(&name, &def); err != nil {
		t.Fatalf("SHOW CREATE TABLE %s: %v", table, err)
	}
	def = strings.Replace(def, "`"+table+"`", "`"+logical+"`", 1)
	return regexp.MustCompile(` AUTO_INCREMENT=\d+`).ReplaceAllString(def, "")
}

// checkSubTables checks that t's four sub-tables exist, each on its shard
// only, all defined as want (table t's SHOW CREATE TABLE).
func (e *ddlShards) checkSubTables(t *testing.T, want string) {
	t.Helper()
	if got := e.tables(t, e.d0); got != "t_0000,t_0001" {
		t.Fatalf("s0 tables = %q, want t_0000,t_0001", got)
	}
	if got := e.tables(t, e.d1); got != "t_0002,t_0003" {
		t.Fatalf("s1 tables = %q, want t_0002,t_0003", got)
	}
	for i := 0; i < 4; i++ {
		sub := fmt.Sprintf("t_%04d", i)
		if got := showCreate(t, e.shardOf(i), sub, "t"); got != want {
			t.Fatalf("%s is defined as\n%s\nwant\n%s", sub, got, want)
		}
	}
}

func TestDDLOnShardedTablesThroughTheProxy(t *testing.T) {
	e := startDDLShards(t, "sddl")
	db := e.proxyDB(t)
	ref := openDB(t, e.s0.DSN("sddl_ref"))

	def := "CREATE TABLE t (id INT NOT NULL PRIMARY KEY, v VARCHAR(10) DEFAULT 'x' COMMENT 'it''s v', w DECIMAL(6,2)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
	mustExec(t, db, def)
	mustExec(t, ref, def)
	e.checkSubTables(t, showCreate(t, ref, "t", "t"))

	// The key type is learnt: INSERTs (refused while it is unknown) go
	// to the key's sub-table.
	for _, id := range []int64{1, 2, 3, 42, 1000} {
		mustExec(t, db, fmt.Sprintf("INSERT INTO t (id, v) VALUES (%d, 'a')", id))
		i := subTableOf(t, id, 4)
		if got := queryString(t, e.shardOf(i), fmt.Sprintf("SELECT COUNT(*) FROM t_%04d WHERE id = %d", i, id)); got != "1" {
			t.Fatalf("row %d is not on sub-table %d", id, i)
		}
	}

	for _, ddl := range []string{
		"ALTER TABLE t ADD COLUMN c INT NOT NULL DEFAULT 7 AFTER v",
		"CREATE INDEX iv ON t (v)",
		"CREATE UNIQUE INDEX ic ON t (c, id)",
		"DROP INDEX iv ON t",
		"ALTER TABLE t MODIFY w DECIMAL(8,3)",
	} {
		mustExec(t, db, ddl)
		mustExec(t, ref, ddl)
		e.checkSubTables(t, showCreate(t, ref, "t", "t"))
	}
	if got := queryString(t, db, "SELECT c FROM t WHERE id = 42"); got != "7" {
		t.Fatalf("added column through the proxy: c = %q, want 7", got)
	}

	mustExec(t, db, "TRUNCATE TABLE t")
	for i := 0; i < 4; i++ {
		if got := queryString(t, e.shardOf(i), fmt.Sprintf("SELECT COUNT(*) FROM t_%04d", i)); got != "0" {
			t.Fatalf("t_%04d has %s rows after TRUNCATE", i, got)
		}
	}

	// A like: table's sub-tables are numbered alike: u_0003 references
	// t_0003, on the same shard.
	mustExec(t, db, "CREATE TABLE u (uid INT PRIMARY KEY, t_id INT, FOREIGN KEY (t_id) REFERENCES t (id))")
	if got := queryString(t, e.d1, "SELECT GROUP_CONCAT(referenced_table_name) FROM information_schema.referential_constraints WHERE constraint_schema = 'sddl' AND table_name = 'u_0003'"); got != "t_0003" {
		t.Fatalf("u_0003's foreign key references %q, want t_0003", got)
	}
	mustExec(t, db, "DROP TABLE u, t")
	if got := e.tables(t, e.d0) + "|" + e.tables(t, e.d1); got != "|" {
		t.Fatalf("tables left after DROP TABLE u, t: %s", got)
	}

	// Reference tables: as written on every shard.
	mustExec(t, db, "CREATE TABLE city (id INT PRIMARY KEY, name VARCHAR(20))")
	mustExec(t, db, "ALTER TABLE city ADD COLUMN zip CHAR(5)")
	for _, d := range []*sql.DB{e.d0, e.d1} {
		if got := queryString(t, d, "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = 'sddl' AND table_name = 'city'"); got != "3" {
			t.Fatalf("city has %s columns on a shard, want 3", got)
		}
	}
	// Unlisted tables: on the default cluster, as before.
	mustExec(t, db, "CREATE TABLE plain (id INT)")
	if e.tables(t, e.d0) != "city,plain" || e.tables(t, e.d1) != "city" {
		t.Fatalf("tables: s0 %q, s1 %q", e.tables(t, e.d0), e.tables(t, e.d1))
	}
}

func TestDDLRefusals(t *testing.T) {
	e := startDDLShards(t, "sddlno")
	db := e.proxyDB(t)
	mustExec(t, db, "CREATE TABLE t (id BIGINT PRIMARY KEY, v INT)")
	mustExec(t, db, "CREATE TABLE plain (id INT)")
	for _, tc := range []struct {
		sql  string
		code uint16
		say  string
	}{
		{"CREATE TABLE u (id INT PRIMARY KEY)", 1072, "Key column 'uid' doesn't exist in table"},
		{"CREATE TABLE u AS SELECT * FROM t", mysql.ERNotSupportedYet, "CREATE TABLE … SELECT"},
		{"CREATE TABLE u (uid INT) SELECT 1 AS uid", mysql.ERNotSupportedYet, "CREATE TABLE … SELECT"},
		{"CREATE TEMPORARY TABLE t (id INT)", mysql.ERNotSupportedYet, "TEMPORARY"},
		{"RENAME TABLE t TO t2", mysql.ERNotSupportedYet, "renaming listed table t"},
		{"RENAME TABLE plain TO city", mysql.ERNotSupportedYet, "renaming listed table city"},
		{"ALTER TABLE t RENAME TO t2", mysql.ERNotSupportedYet, "renaming listed table t"},
		{"ALTER TABLE t DROP COLUMN id", mysql.ERNotSupportedYet, "shard key column t.id"},
		{"ALTER TABLE t MODIFY id VARCHAR(20)", mysql.ERNotSupportedYet, "shard key column t.id"},
		{"ALTER TABLE t CHANGE id id2 BIGINT", mysql.ERNotSupportedYet, "shard key column t.id"},
		{"CREATE TABLE u LIKE plain", mysql.ERNotSupportedYet, "not on every shard"},
		{"CREATE TABLE plain2 LIKE t", mysql.ERNotSupportedYet, "naming sharded table t"},
	} {
		_, err := db.Exec(tc.sql)
		if mysqlErrCode(err) != tc.code || !contains(err.Error(), tc.say) {
			t.Errorf("%s: %v, want %d saying %q", tc.sql, err, tc.code, tc.say)
		}
	}
	if got := e.tables(t, e.d0) + "|" + e.tables(t, e.d1); got != "plain,t_0000,t_0001|t_0002,t_0003" {
		t.Fatalf("a refused statement changed the tables: %s", got)
	}

	// Created LIKE a table without the shard key: created, and the
	// client told at once.
	mustExec(t, db, "CREATE TABLE city (cid INT PRIMARY KEY)")
	_, err := db.Exec("CREATE TABLE u LIKE city")
	if mysqlErrCode(err) != 1072 || !contains(err.Error(), "table u was created, but its shard key uid could not be read") {
		t.Fatalf("CREATE TABLE u LIKE city: %v, want 1072 saying u was created without its key", err)
	}
	if got := e.tables(t, e.d1); got != "city,t_0002,t_0003,u_0002,u_0003" {
		t.Fatalf("s1 tables = %q", got)
	}

	// Inside a transaction DDL would commit it on some shards only.
	conn := oneConn(t, db)
	mustExec(t, conn, "BEGIN")
	mustExec(t, conn, "SELECT * FROM t WHERE id = 1")
	_, err = conn.ExecContext(context.Background(), "ALTER TABLE t ADD COLUMN x INT")
	if mysqlErrCode(err) != mysql.ERNotSupportedYet || !contains(err.Error(), "inside a transaction") {
		t.Fatalf("DDL in a transaction: %v, want 1235", err)
	}
	mustExec(t, conn, "ROLLBACK")
}

// ddlDial connects the differential client to tgt.
func ddlDial(t *testing.T, tgt difftest.Target) *difftest.Client {
	t.Helper()
	c, err := difftest.Dial(context.Background(), tgt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// subTableName matches the sub-table names of t and u in messages.
var subTableName = regexp.MustCompile(`\b(t|u)_000\d\b`)

// ddlAnswer runs sql on c and returns its answer with SHOW WARNINGS, the
// database name put back to the reference's, and in errors the sub-table
// names too (an error after some parts applied the statement names them).
// Warnings are the server's, whose messages name the logical table.
func ddlAnswer(t *testing.T, c *difftest.Client, sql, db, refDB string) difftest.Answer {
	t.Helper()
	a, err := c.Query(sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if a.Warnings, err = c.Warnings(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	dbName := regexp.MustCompile(`\b` + db + `\b`)
	norm := func(s string) string {
		return dbName.ReplaceAllString(subTableName.ReplaceAllString(s, "$1"), refDB)
	}
	for i := range a.Warnings {
		a.Warnings[i].Message = dbName.ReplaceAllString(a.Warnings[i].Message, refDB)
	}
	if a.Err != nil {
		e := *a.Err
		e.Message = norm(e.Message)
		a.Err = &e
	}
	return a
}

// TestDDLAnswersAsOneServer compares every field of the answers to DDL
// through the proxy (OK, info, warning count, SHOW WARNINGS, errors) with
// one server's running the same statements on the logical tables.
func TestDDLAnswersAsOneServer(t *testing.T) {
	e := startDDLShards(t, "sddlcmp")
	ref := ddlDial(t, difftest.Target{Name: "reference", Addr: e.s0.Addr, User: testenv.User, Password: testenv.Password, Database: "sddlcmp_ref"})
	got := ddlDial(t, difftest.Target{Name: "shardgate", Addr: e.p.Addrs()[0], User: appUser, Password: appPass, Database: "sddlcmp"})
	for _, sql := range []string{
		"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))",
		"CREATE TABLE IF NOT EXISTS t (id INT PRIMARY KEY, v VARCHAR(10))",
		"CREATE TABLE t (id INT PRIMARY KEY)",
		"INSERT INTO t (id, v) VALUES (1, 'a')",
		"INSERT INTO t (id, v) VALUES (2, 'b')",
		"INSERT INTO t (id, v) VALUES (3, 'c')",
		"INSERT INTO t (id, v) VALUES (42, 'd')",
		"INSERT INTO t (id, v) VALUES (1000, 'e')",
		"ALTER TABLE t ADD COLUMN c INT",
		"ALTER TABLE t ADD COLUMN c INT",
		"ALTER TABLE t ALGORITHM=COPY, ADD COLUMN d INT",
		"ALTER TABLE t MODIFY v VARCHAR(1)",
		"CREATE INDEX ic ON t (c)",
		"CREATE INDEX ic2 ON t (c)",
		"CREATE INDEX ic ON t (c)",
		"DROP INDEX ic2 ON t",
		"DROP INDEX nope ON t",
		"TRUNCATE TABLE t",
		"CREATE TABLE IF NOT EXISTS city (id INT PRIMARY KEY)",
		"CREATE TABLE IF NOT EXISTS city (id INT PRIMARY KEY)",
		"DROP TABLE t",
		"DROP TABLE t",
		"DROP TABLE IF EXISTS t",
		"DROP TABLE IF EXISTS city",
		"CREATE TABLE t (id INT PRIMARY KEY)",
		"CREATE TABLE city (id INT PRIMARY KEY)",
		"DROP TABLE IF EXISTS t, city",
		"DROP TABLE IF EXISTS city",
	} {
		want := ddlAnswer(t, ref, sql, "sddlcmp_ref", "sddlcmp_ref")
		have := ddlAnswer(t, got, sql, "sddlcmp", "sddlcmp_ref")
		if d := difftest.Diff(want, have, true); d != "" {
			t.Errorf("%s:\n%s", sql, d)
		}
	}
}

// TestDDLOnADownShardSaysWhereItWasApplied: a shard that is down before
// the statement refuses it whole; one that fails during it gives an error
// naming the sub-tables that applied it and those that did not.
func TestDDLOnADownShardSaysWhereItWasApplied(t *testing.T) {
	e := startDDLShards(t, "sddldown")
	db := e.proxyDB(t)
	mustExec(t, db, "CREATE TABLE t (id INT PRIMARY KEY)")
	mustExec(t, db, "DELETE FROM t") // a pooled connection on each shard

	if err := e.s1.Stop(); err != nil {
		t.Fatal(err)
	}
	_, err := db.Exec("ALTER TABLE t ADD COLUMN c INT")
	if err == nil {
		t.Fatal("ALTER TABLE with shard s1 down succeeded")
	}
	msg := err.Error()
	if contains(msg, "shard s1 has no available primary; nothing was changed") {
		// The health check saw s1 down first (a busy machine): refused
		// whole, as the second half checks.
		t.Logf("s1 was known down before the first ALTER: %v", err)
		if got := queryString(t, e.d0, "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = 'sddldown' AND column_name = 'c'"); got != "0" {
			t.Fatalf("the refused ALTER ran on s0")
		}
		return
	}
	if !contains(msg, "applied to t_0000, t_0001 (shard s0)") || !contains(msg, "failed on t_0002 (shard s1)") || !contains(msg, "t_0003 (shard s1)") {
		t.Fatalf("ALTER TABLE with s1 down: %v, want the sub-tables applied and not", err)
	}
	for _, sub := range []string{"t_0000", "t_0001"} {
		if got := queryString(t, e.d0, "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = 'sddldown' AND table_name = '"+sub+"' AND column_name = 'c'"); got != "1" {
			t.Fatalf("%s was not altered", sub)
		}
	}
	// The first statement to find the shard down may have used an idle
	// connection; once a connect failed, the shard's breaker is open and
	// DDL is refused before anything runs.
	refused := false
	for i := 0; i < 3 && !refused; i++ {
		col := fmt.Sprintf("d%d", i)
		_, err = db.Exec("ALTER TABLE t ADD COLUMN " + col + " INT")
		switch {
		case err != nil && contains(err.Error(), "shard s1 has no available primary; nothing was changed"):
			refused = true
			if got := queryString(t, e.d0, "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = 'sddldown' AND column_name = '"+col+"'"); got != "0" {
				t.Fatalf("the refused ALTER ran on s0")
			}
		case err == nil || !contains(err.Error(), "failed on t_0002 (shard s1)"):
			t.Fatalf("ALTER TABLE with s1 down: %v", err)
		}
	}
	if !refused {
		t.Fatal("DDL is not refused up front once shard s1 is known down")
	}
}

// TestDatabaseDDLOnEveryShard: CREATE and DROP DATABASE of a sharded
// schema, from a session without a database, run on every shard.
func TestDatabaseDDLOnEveryShard(t *testing.T) {
	e := startDDLShards(t, "sddldb")
	for _, s := range []*testenv.Server{e.s0, e.s1} {
		s.Exec(t, "DROP DATABASE sddldb")
	}
	db := openDB(t, proxyDSN(e.p, "ops", appPass, "", ""))
	conn := oneConn(t, db)
	mustExec(t, conn, "CREATE DATABASE sddldb")
	mustExec(t, conn, "CREATE DATABASE IF NOT EXISTS sddldb")
	if got := queryString(t, conn, "SHOW COUNT(*) WARNINGS"); got != "1" {
		t.Fatal("CREATE DATABASE IF NOT EXISTS of an existing schema left no note")
	}
	for _, s := range []*testenv.Server{e.s0, e.s1} {
		if got := s.Scalar(t, "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = 'sddldb'"); got != "1" {
			t.Fatalf("schema not created on %s", s.Addr)
		}
	}
	mustExec(t, conn, "USE sddldb")
	mustExec(t, conn, "CREATE TABLE t (id INT PRIMARY KEY)")
	if got := e.tables(t, e.d1); got != "t_0002,t_0003" {
		t.Fatalf("s1 tables = %q", got)
	}
	mustExec(t, conn, "DROP DATABASE sddldb")
	for _, s := range []*testenv.Server{e.s0, e.s1} {
		if got := s.Scalar(t, "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = 'sddldb'"); got != "0" {
			t.Fatalf("schema not dropped on %s", s.Addr)
		}
	}
}
