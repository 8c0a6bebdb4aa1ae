package planner

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sequence"
	"github.com/shardgate/shardgate/internal/sharding"
)

// Binding against the test keyspace, without a server: schema shop over
// shards s0 and s1 (sub-tables 0–3 of sf_user and sf_order on s0, 4–7 on
// s1), its default cluster s0.

// bindKeyspace is the test keyspace, with its two shards' clusters.
func bindKeyspace(t *testing.T) (k *Keyspace, s0, s1 *backend.Cluster) {
	t.Helper()
	s0, s1 = testCluster(t, 1), testCluster(t, 1)
	s0.Name, s1.Name = "s0", "s1"
	k, err := NewKeyspace(fixture(t), map[string]*backend.Cluster{"s0": s0, "s1": s1})
	if err != nil {
		t.Fatal(err)
	}
	return k, s0, s1
}

// newBinder is a binder for keyspace k and a session on it.
func newBinder(k *Keyspace) (*Binder, *fakeSession) {
	b := &Binder{Keyspaces: Keyspaces{k.Schema.Name: k}}
	return b, &fakeSession{db: k.Schema.Name, cl: k.Default}
}

// bindText binds text statement sql as a session's COM_QUERY.
func bindText(b *Binder, k *Keyspace, s *fakeSession, sql string) engine.Primitive {
	p := append([]byte{mysql.ComQuery}, sql...)
	st := router.Classify(p[1:])
	if prim := b.SessionStatement(k, st, p, s); prim != nil {
		return prim
	}
	return b.Statement(k, st, p, s)
}

// refusal is the error of a Refuse, failing the test for another
// primitive.
func refusal(t *testing.T, prim engine.Primitive) *mysql.SQLError {
	t.Helper()
	r, ok := prim.(*engine.Refuse)
	if !ok {
		t.Fatalf("got %T, want a refusal", prim)
	}
	return r.Err
}

// queries are the parts' command packets (the command byte dropped) or
// server-side statements, with their clusters' names.
func queries(parts []engine.Part) (shards, sqls []string) {
	for _, p := range parts {
		shards = append(shards, p.Cluster.Name)
		q := p.Stmt
		if q == nil && p.Query != nil {
			q = p.Query[1:]
		}
		sqls = append(sqls, string(q))
	}
	return shards, sqls
}

func TestBindPointSelect(t *testing.T) {
	k, _, s1 := bindKeyspace(t)
	b, s := newBinder(k)
	prim := bindText(b, k, s, "SELECT name FROM sf_user WHERE id = 5")
	r, ok := prim.(*engine.Route)
	if !ok {
		t.Fatalf("got %T, want a Route", prim)
	}
	sub := h(t, 5)
	if r.Cluster != s1 || sub < 4 {
		t.Fatalf("routed to %s (sub-table %d), want s1", r.Cluster.Name, sub)
	}
	if want := "\x03select `name` from sf_user_0004 where id = 5"; string(r.Query) != want || r.Stmt != nil || r.Params != nil {
		t.Errorf("route %q %q %v, want query %q", r.Query, r.Stmt, r.Params, want)
	}
	// A write on one shard is the session's to check (and record).
	bindText(b, k, s, "UPDATE sf_user SET name = 'x' WHERE id = 5")
	if len(s.wrote) != 1 || s.wrote[0] != s1 {
		t.Errorf("CrossShardWrite saw writes on %v, want s1", s.wrote)
	}
}

// TestBindAllocatesNothing: once a shape's plan is cached and the
// binder's buffers have grown, binding a point select, a read of every
// sub-table and a merge allocates nothing.
func TestBindAllocatesNothing(t *testing.T) {
	k, _, _ := bindKeyspace(t)
	b, s := newBinder(k)
	for _, sql := range []string{
		"SELECT name FROM sf_user WHERE id = 5",
		"SELECT name FROM sf_user WHERE name = 'x'",
		"SELECT name FROM sf_user ORDER BY name LIMIT 3",
	} {
		p := append([]byte{mysql.ComQuery}, sql...)
		st := router.Classify(p[1:])
		b.Statement(k, st, p, s)
		if n := testing.AllocsPerRun(100, func() { b.Statement(k, st, p, s) }); n != 0 {
			t.Errorf("%s: %.1f allocations per bind, want 0", sql, n)
		}
	}
}

// TestBindReadOfEverySubTable: a read of every sub-table runs as a merge
// that passes rows, one part per shard reading its sub-tables by one
// UNION ALL (the first with the client's statement on one sub-table
// ahead, for the column definitions); with tables locked, sub-table by
// sub-table (a Scatter).
func TestBindReadOfEverySubTable(t *testing.T) {
	k, s0, s1 := bindKeyspace(t)
	b, s := newBinder(k)
	const sql = "SELECT name FROM sf_user WHERE name = 'x'"
	m, ok := bindText(b, k, s, sql).(*engine.Merge)
	if !ok {
		t.Fatalf("got %T, want a Merge", bindText(b, k, s, sql))
	}
	one := func(i string) string { return "select `name` from sf_user_000" + i + " where `name` = 'x'" }
	union := func(is ...string) string {
		var u []string
		for _, i := range is {
			u = append(u, "("+one(i)+")")
		}
		return strings.Join(u, " union all ")
	}
	shards, sqls := queries(m.Parts)
	want := []string{one("0") + ";" + union("0", "1", "2", "3"), union("4", "5", "6", "7")}
	if strings.Join(shards, ",") != "s0,s1" || strings.Join(sqls, "\n") != strings.Join(want, "\n") {
		t.Errorf("parts %v\n%s\nwant s0,s1\n%s", shards, strings.Join(sqls, "\n"), strings.Join(want, "\n"))
	}
	if !m.Probe || !m.Parts[0].Union || m.HasLimit {
		t.Errorf("merge probe %v, union %v, limit %v; want a probe, a union, no limit", m.Probe, m.Parts[0].Union, m.HasLimit)
	}

	s.locked = []*backend.Cluster{s0, s1}
	sc, ok := bindText(b, k, s, sql).(*engine.Scatter)
	if !ok {
		t.Fatalf("with tables locked: got %T, want a Scatter", bindText(b, k, s, sql))
	}
	shards, sqls = queries(sc.Parts)
	if len(sqls) != 8 || sqls[5] != one("5") || shards[3] != "s0" || shards[4] != "s1" {
		t.Errorf("scatter parts %v %q", shards, sqls)
	}
}

func TestBindMergeLimit(t *testing.T) {
	k, _, _ := bindKeyspace(t)
	b, s := newBinder(k)
	prim := bindText(b, k, s, "SELECT name FROM sf_user ORDER BY name LIMIT 2, 3")
	m, ok := prim.(*engine.Merge)
	if !ok {
		t.Fatalf("got %T, want a Merge", prim)
	}
	if !m.HasLimit || m.Offset != 2 || m.Count != 3 || !m.Bounded {
		t.Errorf("limit %v offset %d count %d bounded %v, want 2, 3, bounded", m.HasLimit, m.Offset, m.Count, m.Bounded)
	}
	// Each shard reads offset+count rows, ordered as the merge needs.
	for _, q := range m.Parts {
		if !strings.HasSuffix(string(q.Query), " order by 1 asc limit 5") {
			t.Errorf("part %q does not end with the shard's order and limit", q.Query)
		}
	}
	// Should the merge refuse once it sees the parts' columns, the
	// statement is evaluated instead.
	if m.Fallback == nil {
		t.Errorf("a merge of an evaluable read has no fallback")
	}
}

func TestBindInsertSplit(t *testing.T) {
	k, s0, s1 := bindKeyspace(t)
	b, s := newBinder(k)
	// Rows 1 and 3 share a sub-table: one part each sub-table, in the
	// order of its first row.
	prim := bindText(b, k, s, "INSERT INTO sf_user (id, name) VALUES (1, 'a'), (2, 'b'), (3, 'c'), (5, 'd')")
	sp, ok := prim.(*engine.InsertSplit)
	if !ok {
		t.Fatalf("got %T, want an InsertSplit", prim)
	}
	if h(t, 1) != h(t, 3) || h(t, 1) == h(t, 2) {
		t.Fatal("the fixture's hash no longer puts rows 1 and 3 together")
	}
	shards, sqls := queries(sp.Parts)
	want := []string{
		"insert into sf_user_000" + string(rune('0'+h(t, 1))) + "(id, `name`) values (1, 'a'), (3, 'c')",
		"insert into sf_user_000" + string(rune('0'+h(t, 2))) + "(id, `name`) values (2, 'b')",
		"insert into sf_user_000" + string(rune('0'+h(t, 5))) + "(id, `name`) values (5, 'd')",
	}
	if strings.Join(sqls, "\n") != strings.Join(want, "\n") || len(sp.Rows) != 3 || sp.Rows[0] != 2 {
		t.Errorf("parts %v\n%s\nrows %v, want\n%s", shards, strings.Join(sqls, "\n"), sp.Rows, strings.Join(want, "\n"))
	}
	if len(s.wrote) != 3 || s.wrote[2] != s1 || s.wrote[0] != s0 || sp.Savepoint {
		t.Errorf("writes checked on %v, savepoint %v; want each part's shard, no savepoint outside a transaction", s.wrote, sp.Savepoint)
	}
	s.noAutocommit = true
	if sp := bindText(b, k, s, "INSERT INTO sf_user (id, name) VALUES (1, 'a'), (2, 'b')").(*engine.InsertSplit); !sp.Savepoint {
		t.Errorf("an INSERT over several sub-tables with autocommit off takes no savepoint")
	}
	// All rows on one sub-table: the statement as written there.
	if r, ok := bindText(b, k, s, "INSERT INTO sf_user (id, name) VALUES (1, 'a'), (3, 'c')").(*engine.Route); !ok || !strings.HasPrefix(string(r.Query[1:]), "insert into sf_user_000") {
		t.Errorf("an INSERT on one sub-table: got %T, want a Route", bindText(b, k, s, "INSERT INTO sf_user (id, name) VALUES (1, 'a'), (3, 'c')"))
	}
}

// TestBindInsertGeneratedKeys: the keys a sequence generates come from
// the session's draw, one id per row, and are written into the rows.
func TestBindInsertGeneratedKeys(t *testing.T) {
	k, _, _ := bindKeyspace(t)
	k.Schema.Table("sf_user").SetKeyType(sharding.ColumnType{Class: sharding.ClassInt, Bits: 64, AutoIncrement: true})
	store, err := sequence.NewStore(sequence.Config{Database: "seq", Dial: func(context.Context) (*backend.Conn, error) {
		return nil, errors.New("the test draws no key from the store")
	}})
	if err != nil {
		t.Fatal(err)
	}
	k.SetSequences(store)
	b, s := newBinder(k)
	s.nextID = 101
	prim := bindText(b, k, s, "INSERT INTO sf_user (name) VALUES ('a'), ('b')")
	sp, ok := prim.(*engine.InsertSplit)
	if !ok {
		t.Fatalf("got %T (%v), want an InsertSplit", prim, prim)
	}
	if len(s.drawn) != 1 || s.drawn[0] != 2 || sp.Generated != 101 || !sp.KeysGiven {
		t.Errorf("drawn %v, generated %d, keys given %v; want 2 ids from 101", s.drawn, sp.Generated, sp.KeysGiven)
	}
	_, sqls := queries(sp.Parts)
	all := strings.Join(sqls, "\n")
	if !strings.Contains(all, "('a', 101)") || !strings.Contains(all, "('b', 102)") {
		t.Errorf("rows without their generated keys:\n%s", all)
	}
}

// TestBindWritesTheSessionRefuses: the session's cross-shard-write check
// refuses a write on several shards before any runs.
func TestBindWritesTheSessionRefuses(t *testing.T) {
	k, _, s1 := bindKeyspace(t)
	b, s := newBinder(k)
	refused := mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax, "refused")
	s.refuseWrite = func(cl *backend.Cluster) *mysql.SQLError {
		if cl == s1 {
			return refused
		}
		return nil
	}
	if e := refusal(t, bindText(b, k, s, "UPDATE sf_user SET name = 'x' WHERE city_id = 1")); e != refused {
		t.Errorf("got %v, want the session's refusal", e)
	}
	if f, ok := bindText(b, k, s, "UPDATE sf_user SET name = 'x' WHERE id IN (1, 2)").(*engine.Fanout); !ok || len(f.Parts) != 2 {
		t.Errorf("a write on two sub-tables of s0: got %T, want a Fanout of 2", f)
	}
	// A reference table's copy on every shard.
	if e := refusal(t, bindText(b, k, s, "UPDATE sf_city SET id = 2")); e != refused {
		t.Errorf("reference table: got %v, want the session's refusal", e)
	}
}

// TestBindEvaluated: a read no route or merge answers is evaluated,
// unless the session holds table locks or asked for a cursor, or it reads
// user variables; then the plan's refusal is the answer.
func TestBindEvaluated(t *testing.T) {
	k, s0, _ := bindKeyspace(t)
	b, s := newBinder(k)
	const sql = "SELECT u.id FROM sf_user u JOIN sf_order o ON o.city_id = u.city_id"
	e, ok := bindText(b, k, s, sql).(*engine.Evaluate)
	if !ok {
		t.Fatalf("got %T, want an Evaluate", bindText(b, k, s, sql))
	}
	if e.Evaluator != k.Default || len(e.Tables) != 2 || e.Stmt != nil {
		t.Errorf("evaluated on %v, %d tables, statement %q", e.Evaluator.Name, len(e.Tables), e.Stmt)
	}
	s.locked = []*backend.Cluster{s0}
	if e := refusal(t, bindText(b, k, s, sql)); e.Code != mysql.ERNotSupportedYet {
		t.Errorf("with tables locked: %v, want 1235", e)
	}
	s.locked = nil
	if e := refusal(t, bindText(b, k, s, sql+" WHERE u.name = @n")); e.Code != mysql.ERNotSupportedYet {
		t.Errorf("with a user variable: %v, want 1235", e)
	}
}

// TestBindPrepared: PREPARE is sent as one sub-table's text to its
// shard; an execution runs the sub-table its parameter picks, as a
// server-side statement of that sub-table's text taking the client's
// parameter, and a merge's parts take it once per sub-table.
func TestBindPrepared(t *testing.T) {
	k, _, s1 := bindKeyspace(t)
	b, s := newBinder(k)
	prepare := func(sql string) (*Prepared, PrepareAt) {
		p := append([]byte{mysql.ComStmtPrepare}, sql...)
		prep := new(Prepared)
		return prep, b.Prepare(k, router.Classify(p[1:]), p, s, prep)
	}
	execute := func(prep *Prepared, v int64) engine.Primitive {
		s.params = func(dst *ExecValues) error {
			dst.ResetParams(1)
			dst.SetParam(0, mysql.Param{Kind: mysql.ParamInt, Int: v})
			return nil
		}
		st := router.Classify(prep.Text)
		if prim := b.SessionStatement(k, st, nil, s); prim != nil {
			return prim
		}
		return b.Execute(prep, st, s)
	}

	prep, at := prepare("SELECT name FROM sf_user WHERE id = ?")
	if at.Err != nil || at.Evaluate != nil || at.Cluster != k.Shard("s0") || string(at.Query) != "\x16select `name` from sf_user_0000 where id = ?" {
		t.Fatalf("prepared at %+v", at)
	}
	r, ok := execute(prep, 5).(*engine.Route)
	if !ok {
		t.Fatalf("execution: got %T, want a Route", execute(prep, 5))
	}
	if r.Cluster != s1 || string(r.Stmt) != "select `name` from sf_user_0004 where id = ?" || r.Query != nil || r.Params != nil {
		t.Errorf("execution routed to %s: stmt %q query %q params %v", r.Cluster.Name, r.Stmt, r.Query, r.Params)
	}

	prep, _ = prepare("SELECT name FROM sf_user WHERE name = ? ORDER BY id")
	m, ok := execute(prep, 7).(*engine.Merge)
	if !ok {
		t.Fatalf("execution of a merge: got %T", execute(prep, 7))
	}
	for _, p := range m.Parts {
		if p.Query != nil || !strings.HasPrefix(string(p.Stmt), "(select") || len(p.Params) != 4 {
			t.Errorf("part %q %q takes parameters %v, want the first 4 times", p.Query, p.Stmt, p.Params)
		}
	}

	// A statement the parser cannot read: the server's syntax error.
	s.syntaxErr = mysql.NewError(mysql.ERParse, mysql.StateSyntax, "You have an error in your SQL syntax")
	if _, at := prepare("SELECT FROM WHERE sf_user"); at.Err != s.syntaxErr {
		t.Errorf("unparsable statement prepared at %+v, want the server's syntax error", at)
	}
}

func TestBindSessionStatements(t *testing.T) {
	k, s0, s1 := bindKeyspace(t)
	b, s := newBinder(k)
	here := testCluster(t, 1)
	s.cl = here
	for _, tc := range []struct {
		sql  string
		want *backend.Cluster
	}{
		{"COMMIT", here},
		{"SET NAMES utf8mb4", here},
		{"SET @a = 1", k.Default},
		{"DO SLEEP(0)", k.Default},
		{"SHOW WARNINGS", here},
		{"/* shardgate:shard=s1 */ SELECT 1", s1},
	} {
		r, ok := bindText(b, k, s, tc.sql).(*engine.Route)
		if !ok || r.Cluster != tc.want || r.Query != nil {
			t.Errorf("%s: got %+v, want a Route to %s", tc.sql, r, tc.want.Name)
		}
	}
	if e := refusal(t, bindText(b, k, s, "XA START 'x'")); e.Code != mysql.ERNotSupportedYet {
		t.Errorf("XA: %v", e)
	}
	// UNLOCK TABLES where the session holds locks.
	s.locked = []*backend.Cluster{s0, s1}
	if f, ok := bindText(b, k, s, "UNLOCK TABLES").(*engine.Fanout); !ok || len(f.Parts) != 2 || f.Parts[1].Cluster != s1 {
		t.Errorf("UNLOCK TABLES: got %+v", f)
	}
	s.locked = nil
	s.sqlMode = "STRICT_TRANS_TABLES,ansi_quotes"
	if e := refusal(t, bindText(b, k, s, "SELECT name FROM sf_user WHERE id = 5")); !strings.Contains(e.Message, "ANSI_QUOTES") {
		t.Errorf("sql_mode ANSI_QUOTES: %v", e)
	}
}

// TestFieldList: COM_FIELD_LIST of a sharded table reads its sub-table
// 0 on that sub-table's shard; of any other table, the default cluster's.
func TestFieldList(t *testing.T) {
	k, s0, _ := bindKeyspace(t)
	cl, q := k.FieldList([]byte("\x04sf_user\x00%"))
	if cl != s0 || string(q) != "\x04sf_user_0000\x00%" {
		t.Errorf("sf_user: %s %q", cl.Name, q)
	}
	p := []byte("\x04other\x00")
	if cl, q := k.FieldList(p); cl != k.Default || &q[0] != &p[0] {
		t.Errorf("other: %s %q, want the default cluster and the command as sent", cl.Name, q)
	}
	if home := (Keyspaces{"shop": k}).Home("elsewhere"); home != k.Default {
		t.Errorf("home of a user on another database: %v", home)
	}
}
