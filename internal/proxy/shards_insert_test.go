package proxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/testenv"
)

// autoShards is a schema db over two shards: table t hash-sharded on its
// AUTO_INCREMENT key id, 2 sub-tables per shard (t_0000, t_0001 on s0;
// t_0002, t_0003 on s1), and a reference database db_ref on s0 holding
// one table t of the same definition, to run the same statements on.
type autoShards struct {
	db         string
	s0, s1     *testenv.Server
	direct     []*sql.DB // by sub-table
	yaml       string
	proxy      *proxy.Proxy
	ref, sharp *difftest.Client
}

const autoTable = "(id INT AUTO_INCREMENT PRIMARY KEY, v INT, note VARCHAR(20))"

func startAutoShards(t *testing.T, db string) *autoShards {
	t.Helper()
	a := &autoShards{db: db, s0: testenv.Shared(t), s1: testenv.Start(t, testenv.Options{})}
	for _, s := range []*testenv.Server{a.s0, a.s1} {
		s.Exec(t, "DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db)
	}
	a.s0.Exec(t, "DROP DATABASE IF EXISTS "+db+"_ref", "CREATE DATABASE "+db+"_ref", "CREATE TABLE "+db+"_ref.t "+autoTable,
		"CREATE TABLE "+db+".t_0000 "+autoTable, "CREATE TABLE "+db+".t_0001 "+autoTable)
	a.s1.Exec(t, "CREATE TABLE "+db+".t_0002 "+autoTable, "CREATE TABLE "+db+".t_0003 "+autoTable)
	d0, d1 := openDB(t, a.s0.DSN(db)), openDB(t, a.s1.DSN(db))
	a.direct = []*sql.DB{d0, d0, d1, d1}
	a.yaml = twoShardYAML(db, a.s0.Addr, a.s1.Addr, 16, `    tables:
      - {name: t, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: 2}
`, "")
	a.proxy = a.startProxy(t)
	a.ref = dialDiff(t, difftest.Target{Name: "reference", Addr: a.s0.Addr, User: testenv.User, Password: testenv.Password, Database: db + "_ref"})
	a.sharp = dialDiff(t, difftest.Target{Name: "shardgate", Addr: a.proxy.Addrs()[0], User: appUser, Password: appPass, Database: db})
	return a
}

func (a *autoShards) startProxy(t *testing.T) *proxy.Proxy {
	t.Helper()
	cfg, err := config.Parse([]byte(a.yaml), "sharded.yaml")
	if err != nil {
		t.Fatalf("config: %v\n%s", err, a.yaml)
	}
	return startProxy(t, cfg)
}

func dialDiff(t *testing.T, target difftest.Target) *difftest.Client {
	t.Helper()
	c, err := difftest.Dial(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// keyOn returns n distinct keys from `from` up whose rows the hash rule
// puts on sub-table sub.
func keyOn(t *testing.T, sub int, from int64, n int) []int64 {
	var out []int64
	for id := from; len(out) < n; id++ {
		if subTableOf(t, id, 4) == sub {
			out = append(out, id)
		}
	}
	return out
}

// rows returns t's rows, sorted, as "id:v:note": through the reference,
// or read from every sub-table directly.
func (a *autoShards) rows(t *testing.T, ref bool) []string {
	t.Helper()
	var out []string
	read := func(db *sql.DB, table string) {
		rs, err := db.Query("SELECT id, COALESCE(v, -1), COALESCE(note, '') FROM " + table)
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		for rs.Next() {
			var id, v int64
			var note string
			if err := rs.Scan(&id, &v, &note); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%d:%d:%s", id, v, note))
		}
		if err := rs.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if ref {
		read(a.direct[0], a.db+"_ref.t")
	} else {
		for i, d := range a.direct {
			read(d, fmt.Sprintf("%s.t_%04d", a.db, i))
		}
	}
	slices.Sort(out)
	return out
}

// same runs sql on the reference and through shardgate and compares the
// answers (error code, affected rows, insert id, warning count, info),
// then LAST_INSERT_ID() on both.
func (a *autoShards) same(t *testing.T, sql string) {
	t.Helper()
	ref, err := a.ref.Query(sql)
	if err != nil {
		t.Fatalf("reference: %s: %v", sql, err)
	}
	got, err := a.sharp.Query(sql)
	if err != nil {
		t.Fatalf("shardgate: %s: %v", sql, err)
	}
	if d := describe(got); d != describe(ref) {
		t.Errorf("%s\n shardgate: %s\n reference: %s", sql, d, describe(ref))
	}
	lastRef, _ := a.ref.Query("SELECT LAST_INSERT_ID()")
	lastGot, _ := a.sharp.Query("SELECT LAST_INSERT_ID()")
	if r, g := describe(lastRef), describe(lastGot); r != g {
		t.Errorf("%s: then LAST_INSERT_ID(): shardgate %s, reference %s", sql, g, r)
	}
}

func describe(an difftest.Answer) string {
	if an.Err != nil {
		return fmt.Sprintf("ERR %d (%s) %s", an.Err.Code, an.Err.State, an.Err.Message)
	}
	var b strings.Builder
	for _, r := range an.Results {
		if r.Columns != nil {
			for _, row := range r.Rows {
				for _, v := range row {
					fmt.Fprintf(&b, "[%s]", v.Bytes)
				}
			}
			continue
		}
		fmt.Fprintf(&b, "OK affected=%d id=%d warnings=%d info=%q", r.AffectedRows, r.LastInsertID, r.Warnings, r.Info)
	}
	return b.String()
}

// TestShardedInsertAnswersAsOneServer runs multi-row INSERT, INSERT
// IGNORE, ON DUPLICATE KEY UPDATE and REPLACE whose rows land on every
// sub-table, with explicit and generated keys, through shardgate and on
// one reference server: the same OK (affected rows, the Records/
// Duplicates/Warnings info, insert id, warning count), the same
// LAST_INSERT_ID() after, the same rows in the end.
func TestShardedInsertAnswersAsOneServer(t *testing.T) {
	a := startAutoShards(t, "sins")
	// Two keys on each sub-table.
	var k [4][]int64
	for i := range k {
		k[i] = keyOn(t, i, 1, 2)
	}
	vals := func(rows ...string) string { return strings.Join(rows, ", ") }
	row := func(id int64, v int) string { return fmt.Sprintf("(%d, %d)", id, v) }
	for _, sql := range []string{
		// keys on every shard and sub-table, in an order that interleaves them
		"INSERT INTO t (id, v) VALUES " + vals(row(k[3][0], 1), row(k[0][0], 2), row(k[2][0], 3), row(k[1][0], 4), row(k[0][1], 5)),
		"INSERT INTO t (id, v) VALUES " + row(k[2][1], 6),
		// duplicates on two shards, skipped with a warning each
		"INSERT IGNORE INTO t (id, v) VALUES " + vals(row(k[0][0], 7), row(k[1][1], 8), row(k[3][0], 9)),
		"INSERT IGNORE INTO t (id, v) VALUES " + vals(row(k[0][0], 7), row(k[3][0], 9)),
		// updates and inserts mixed; then an update that changes nothing
		"INSERT INTO t (id, v) VALUES " + vals(row(k[1][0], 10), row(k[3][1], 11), row(k[2][0], 12)) + " ON DUPLICATE KEY UPDATE v = v + 100",
		"INSERT INTO t (id, v) VALUES " + vals(row(k[1][0], 10), row(k[2][0], 12)) + " ON DUPLICATE KEY UPDATE v = v",
		"INSERT INTO t (id, v) VALUES " + vals(row(k[1][0], 10), row(k[2][0], 12)) + " ON DUPLICATE KEY UPDATE v = VALUES(v)",
		// REPLACE: deletes and inserts
		"REPLACE INTO t (id, v) VALUES " + vals(row(k[0][1], 13), row(100, 14), row(k[2][1], 15)),
		// values converted with a warning, on several parts
		"INSERT IGNORE INTO t (id, v) VALUES (101, '1x'), (102, 2), (103, '3y'), (104, 4)",
		// generated keys: omitted, NULL, 0, DEFAULT; mixed with an explicit key below the counter
		"INSERT INTO t (v, note) VALUES (20, 'a'), (21, 'b'), (22, 'c'), (23, 'd'), (24, 'e')",
		"INSERT INTO t (v) VALUES (25)",
		"INSERT INTO t (id, v) VALUES (NULL, 26), (0, 27), (DEFAULT, 28)",
		"INSERT INTO t (id, v, note) VALUES (NULL, 29, 'x'), (60, 30, 'below'), (NULL, 31, 'y')",
		"INSERT INTO t SET v = 32",
		"REPLACE INTO t (v) VALUES (33), (34)",
		// explicit keys after generated ones: LAST_INSERT_ID() stays
		"INSERT INTO t (id, v) VALUES " + vals(row(5000, 35), row(5001, 36)),
		// an explicit 0 under NO_AUTO_VALUE_ON_ZERO is a key like any other
		"SET sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO')",
		"INSERT INTO t (id, v) VALUES (0, 37), (6000, 38)",
		"SET sql_mode = REPLACE(@@sql_mode, 'NO_AUTO_VALUE_ON_ZERO', '')",
		// errors before any row is written
		"INSERT INTO t (id, v) VALUES (7000, 1), (7001)",
		// INSERT … SELECT (evaluated, issue 22): keys omitted, NULL and 0
		// generated from the sequence, mixed with explicit ones
		"INSERT INTO t (v, note) VALUES (39, 'val')",
		"INSERT INTO t (v, note) SELECT 40, 'sel' UNION ALL SELECT 41, 'sel'",
		"SELECT LAST_INSERT_ID()",
		"INSERT INTO t (id, v) VALUES (NULL, 42), (0, 43), (8000, 44), (NULL, 45)",
		"SELECT LAST_INSERT_ID()",
		"INSERT INTO t (id, v) SELECT NULL, 48 UNION ALL SELECT 9000, 49 UNION ALL SELECT NULL, 50",
		"INSERT INTO t (id, v) VALUES (9500, 51), (NULL, 52)",
		"SELECT LAST_INSERT_ID()",
		"INSERT INTO t (id, v) SELECT 8100, 46",
		"SELECT LAST_INSERT_ID()",
		"INSERT INTO t (id, v) SELECT 8000, 47",
	} {
		a.same(t, sql)
	}
	if ref, got := a.rows(t, true), a.rows(t, false); !slices.Equal(ref, got) {
		t.Errorf("rows differ:\n shardgate: %v\n reference: %v", got, ref)
	}
}

// TestShardedInsertPartialFailure: outside a transaction a part that fails
// after others were applied reports the shards they were applied to;
// inside one, the statement is undone whole, as on one server, and the
// transaction goes on.
func TestShardedInsertPartialFailure(t *testing.T) {
	a := startAutoShards(t, "sinsfail")
	on0, on1, on2 := keyOn(t, 0, 1, 3), keyOn(t, 1, 1, 3), keyOn(t, 2, 1, 3)
	a.same(t, fmt.Sprintf("INSERT INTO t (id, v) VALUES (%d, 1), (%d, 2)", on1[0], on2[0]))

	// Outside a transaction: the part on sub-table 0 is applied, the one
	// on sub-table 2 (shard s1) fails.
	got, err := a.sharp.Query(fmt.Sprintf("INSERT INTO t (id, v) VALUES (%d, 3), (%d, 4)", on0[0], on2[0]))
	if err != nil {
		t.Fatal(err)
	}
	if got.Err == nil || got.Err.Code != 1062 || !strings.Contains(got.Err.Message, "applied to 1 sub-table(s) on shard(s) s0") {
		t.Fatalf("partial failure: %s; want 1062 naming shard s0 as applied", describe(got))
	}

	// Inside a transaction, on two sub-tables of shard s0: the failing
	// second part takes the first with it, and only the statement.
	for _, c := range []*difftest.Client{a.ref, a.sharp} {
		for _, sql := range []string{"BEGIN", fmt.Sprintf("INSERT INTO t (id, v) VALUES (%d, 5)", on0[2])} {
			if an, err := c.Query(sql); err != nil || an.Err != nil {
				t.Fatalf("%s: %v %v", sql, err, an.Err)
			}
		}
	}
	a.same(t, fmt.Sprintf("INSERT INTO t (id, v) VALUES (%d, 6), (%d, 7)", on0[1], on1[0]))
	a.same(t, "COMMIT")
	rows := a.rows(t, false)
	for _, id := range []int64{on0[1]} {
		for _, r := range rows {
			if strings.HasPrefix(r, fmt.Sprintf("%d:", id)) {
				t.Errorf("row %d of the failed statement was committed: %v", id, rows)
			}
		}
	}
	if !slices.ContainsFunc(rows, func(r string) bool { return strings.HasPrefix(r, fmt.Sprintf("%d:5:", on0[2])) }) {
		t.Errorf("the transaction's earlier INSERT was lost: %v", rows)
	}
	// A transaction may not write to two shards: refused before either part runs.
	for _, sql := range []string{"BEGIN", fmt.Sprintf("INSERT INTO t (id, v) VALUES (%d, 8), (%d, 9)", on0[1], on2[1])} {
		an, err := a.sharp.Query(sql)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(sql, "INSERT") && (an.Err == nil || an.Err.Code != 1235 || !strings.Contains(an.Err.Message, "cross_shard_writes")) {
			t.Fatalf("a split INSERT over two shards in a transaction: %s; want 1235 naming cross_shard_writes", describe(an))
		}
	}
	if an, err := a.sharp.Query("ROLLBACK"); err != nil || an.Err != nil {
		t.Fatalf("ROLLBACK: %v %v", err, an.Err)
	}
	checkSplitUndoneOnEveryShard(t, a, on0, on2)
}

// checkSplitUndoneOnEveryShard: with cross_shard_writes: allow, a split
// INSERT inside a transaction may reach both shards; its part failing on
// the second shard undoes the part the first shard applied too (a
// savepoint on each shard it writes), and the transaction goes on.
func checkSplitUndoneOnEveryShard(t *testing.T, a *autoShards, on0, on2 []int64) {
	t.Helper()
	a.yaml = strings.Replace(a.yaml, "    default_cluster: s0\n", "    default_cluster: s0\n    cross_shard_writes: allow\n", 1)
	p := a.startProxy(t)
	c := dialDiff(t, difftest.Target{Name: "allow", Addr: p.Addrs()[0], User: appUser, Password: appPass, Database: a.db})
	must := func(sql string) {
		if an, err := c.Query(sql); err != nil || an.Err != nil {
			t.Fatalf("%s: %v %v", sql, err, an.Err)
		}
	}
	must("BEGIN")
	must(fmt.Sprintf("INSERT INTO t (id, v) VALUES (%d, 10)", on2[2]))
	// on2[0] is taken (the test's first INSERT): the s1 part fails.
	an, err := c.Query(fmt.Sprintf("INSERT INTO t (id, v) VALUES (%d, 11), (%d, 12)", on0[1], on2[0]))
	if err != nil {
		t.Fatal(err)
	}
	if an.Err == nil || an.Err.Code != 1062 {
		t.Fatalf("a split INSERT whose s1 part meets a duplicate: %s, want 1062", describe(an))
	}
	must("COMMIT")
	rows := a.rows(t, false)
	if slices.ContainsFunc(rows, func(r string) bool { return strings.HasPrefix(r, fmt.Sprintf("%d:11:", on0[1])) }) {
		t.Errorf("the failed statement's row on s0 was committed: %v", rows)
	}
	if !slices.ContainsFunc(rows, func(r string) bool { return strings.HasPrefix(r, fmt.Sprintf("%d:10:", on2[2])) }) {
		t.Errorf("the transaction's earlier INSERT was lost: %v", rows)
	}
}

// TestShardedInsertConcurrentSequence: 64 clients over two proxies on the
// same backends insert rows without keys at once: every row gets its own
// id, each statement's ids are consecutive from its LAST_INSERT_ID().
func TestShardedInsertConcurrentSequence(t *testing.T) {
	a := startAutoShards(t, "sinsconc")
	second := a.startProxy(t)
	dbs := []*sql.DB{
		openDB(t, proxyDSN(a.proxy, appUser, appPass, a.db, "")),
		openDB(t, proxyDSN(second, appUser, appPass, a.db, "")),
	}
	const clients, stmts, perStmt = 64, 5, 3
	var wg sync.WaitGroup
	var mu sync.Mutex
	firsts := map[int64]bool{}
	errs := make(chan error, clients)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			db := dbs[c%2]
			for s := 0; s < stmts; s++ {
				res, err := db.Exec(fmt.Sprintf("INSERT INTO t (v, note) VALUES (%d, 'a'), (%d, 'b'), (%d, 'c')", c, c, c))
				if err != nil {
					errs <- err
					return
				}
				id, _ := res.LastInsertId()
				mu.Lock()
				firsts[id] = true
				mu.Unlock()
			}
		}(c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rows := a.rows(t, false)
	if len(rows) != clients*stmts*perStmt {
		t.Fatalf("%d rows, want %d", len(rows), clients*stmts*perStmt)
	}
	ids := map[int64]string{}
	for _, r := range rows {
		var id int64
		fmt.Sscanf(r, "%d:", &id)
		if prev, dup := ids[id]; dup {
			t.Fatalf("id %d given twice: %s and %s", id, prev, r)
		}
		ids[id] = r
	}
	for first := range firsts {
		for i, note := range []string{"a", "b", "c"} {
			if r := ids[first+int64(i)]; !strings.HasSuffix(r, ":"+note) {
				t.Fatalf("statement with LAST_INSERT_ID %d: row %d is %q, want its row %q", first, first+int64(i), r, note)
			}
		}
	}
}

// TestShardedInsertSysbenchShape: the bulk INSERT of sysbench's prepare
// with --auto_inc=on (no id column, many rows, text protocol) works
// through shardgate, spreading the rows over every sub-table.
func TestShardedInsertSysbenchShape(t *testing.T) {
	a := startAutoShards(t, "sinssb")
	db := openDB(t, proxyDSN(a.proxy, appUser, appPass, a.db, ""))
	const batches, perBatch = 4, 250
	for b := 0; b < batches; b++ {
		var sb strings.Builder
		sb.WriteString("INSERT INTO t(v, note) VALUES")
		for i := 0; i < perBatch; i++ {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, "(%d, '%05d-%05d')", b*perBatch+i, b, i)
		}
		res, err := db.Exec(sb.String())
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := res.RowsAffected(); n != perBatch {
			t.Fatalf("batch %d: %d rows affected, want %d", b, n, perBatch)
		}
	}
	for i, d := range a.direct {
		n := queryString(t, d, fmt.Sprintf("SELECT COUNT(*) FROM t_%04d", i))
		if n == "0" {
			t.Errorf("sub-table %d got no rows", i)
		}
	}
	if got := len(a.rows(t, false)); got != batches*perBatch {
		t.Fatalf("%d rows, want %d", got, batches*perBatch)
	}
}

// TestShardedInsertRefusals: what the sequence cannot do is refused with
// error 1235 naming it, before any row is written.
func TestShardedInsertRefusals(t *testing.T) {
	a := startAutoShards(t, "sinsref")
	for _, sql := range []string{"SET auto_increment_increment = 2", "INSERT INTO t (v) VALUES (1), (2)"} {
		an, err := a.sharp.Query(sql)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(sql, "INSERT") && (an.Err == nil || an.Err.Code != 1235 || !strings.Contains(an.Err.Message, "auto_increment_increment = 2")) {
			t.Fatalf("%s with auto_increment_increment = 2: %s; want 1235 naming it", sql, describe(an))
		}
	}
	// A shard key that is not AUTO_INCREMENT must be given.
	_, _, _, _, proxyDB := shardedPair(t, "sinsref2")
	_, err := proxyDB("").Exec("INSERT INTO t (v) VALUES (1), (2)")
	if mysqlErrCode(err) != 1235 || !contains(err.Error(), "which is not AUTO_INCREMENT") {
		t.Fatalf("INSERT omitting a key that is not AUTO_INCREMENT: %v; want 1235", err)
	}
	if got := len(a.rows(t, false)); got != 0 {
		t.Fatalf("%d rows written by refused statements", got)
	}
}
