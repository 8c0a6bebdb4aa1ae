package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/testenv"
)

// mergeCursor is a cursor over real servers for a Merge: a pool per
// cluster (a database of a server), the client a net.Conn the test
// chooses. Done releases to the pool; Failed and Drop discard.
type mergeCursor struct {
	t       *testing.T
	pools   map[*backend.Cluster]*backend.Pool
	client  *mysql.Conn
	caps    uint32
	done    int
	failed  []string // the errors Failed answered, annotated
	dropped int
	// diagnosed counts the parts done with an error or warnings.
	diagnosed int
	refused   []*mysql.SQLError
	annotate  func(*mysql.SQLError) *mysql.SQLError
	mu        sync.Mutex
	// killed stands for a KILL QUERY of the client's statement whose
	// KILL QUERY to the shards was lost (Killed).
	killed atomic.Bool
}

type shardDB struct {
	srv *testenv.Server
	db  string
}

func newMergeCursor(t *testing.T, shards map[*backend.Cluster]shardDB, client net.Conn, caps uint32) *mergeCursor {
	f := &mergeCursor{t: t, pools: map[*backend.Cluster]*backend.Pool{}, client: mysql.NewConn(client), caps: caps}
	for cl, s := range shards {
		p := backend.NewPool(cl.Name, &backend.DialConfig{Addr: s.srv.Addr, User: testenv.User, Password: testenv.Password,
			Database: s.db, ConnectTimeout: 3 * time.Second, Charset: mysql.CollationUTF8MB4GeneralCI},
			backend.PoolConfig{MaxOpen: 4, WaitTimeout: 5 * time.Second}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		t.Cleanup(p.Close)
		f.pools[cl] = p
	}
	return f
}

// AcquireToSend implements engine.Cursor.
func (f *mergeCursor) AcquireToSend(cl *backend.Cluster, replicaOK bool) (*backend.Conn, bool) {
	return f.Acquire(cl, replicaOK)
}

func (f *mergeCursor) Acquire(cl *backend.Cluster, _ bool) (*backend.Conn, bool) {
	c, err := f.pools[cl].Acquire(context.Background(), false)
	if err != nil {
		f.t.Fatalf("acquire %s: %v", cl.Name, err)
	}
	return c, true
}

// Send sends the part's query, or for a client's COM_STMT_EXECUTE the
// execution of the part's statement prepared on c.
func (f *mergeCursor) Send(c *backend.Conn, p *Part, q []byte) error {
	if q != nil && q[0] == mysql.ComStmtExecute {
		st := c.LookupStmt(p.Stmt, "")
		if st == nil {
			var err error
			if st, err = c.Prepare(string(p.Stmt), ""); err != nil {
				return mysql.BackendError(err)
			}
		}
		x := append([]byte{mysql.ComStmtExecute}, byte(st.ID), byte(st.ID>>8), byte(st.ID>>16), byte(st.ID>>24))
		return c.WriteCommand(append(x, q[5:]...))
	}
	if p.Query != nil {
		q = p.Query
	}
	return c.WriteCommand(q)
}
func (f *mergeCursor) Relay(c *backend.Conn) *mysql.Relay              { return c.Relay(f.client, f.caps) }
func (f *mergeCursor) SkipWarnings()                                   {}
func (f *mergeCursor) TakeWarnings(*backend.Conn, *mysql.ResponseInfo) {}
func (f *mergeCursor) Held(*backend.Cluster) *backend.Conn             { return nil }
func (f *mergeCursor) Aside(*backend.Cluster) (*backend.Conn, error) {
	return nil, errors.New("no aside")
}
func (f *mergeCursor) ReleaseAside(*backend.Conn, bool)   {}
func (f *mergeCursor) RenameWarnings(func(string) string) {}
func (f *mergeCursor) Status() uint16                     { return mysql.StatusAutocommit }
func (f *mergeCursor) Answer(*mysql.OKPacket) bool        { f.t.Fatal("Answer"); return false }
func (f *mergeCursor) AnswerResult(*mysql.ResultSet) bool { f.t.Fatal("AnswerResult"); return false }
func (f *mergeCursor) Run(*Route, []byte) bool            { f.t.Fatal("Run"); return false }
func (f *mergeCursor) Savepoint([]byte) bool              { f.t.Fatal("Savepoint"); return false }
func (f *mergeCursor) EndTransaction([]byte) bool         { f.t.Fatal("EndTransaction"); return false }
func (f *mergeCursor) AnswerInsert(*mysql.OKPacket, uint64) bool {
	f.t.Fatal("AnswerInsert")
	return false
}
func (f *mergeCursor) AnnotateErrors(a func(*mysql.SQLError) *mysql.SQLError) { f.annotate = a }
func (f *mergeCursor) UnlockTables() bool                                     { return true }
func (f *mergeCursor) Killed() bool                                           { return f.killed.Load() }
func (f *mergeCursor) WatchClient() func()                                    { return func() {} }
func (f *mergeCursor) Fail(e *mysql.SQLError) bool {
	f.refused = append(f.refused, e)
	_ = f.client.WriteErr(e)
	return f.client.Flush() == nil
}
func (f *mergeCursor) Done(c *backend.Conn, info *mysql.ResponseInfo) {
	f.mu.Lock()
	f.done++
	if info != nil && (info.Err != nil || info.Warnings > 0) {
		f.diagnosed++
	}
	f.mu.Unlock()
	c.Pool().Release(c)
}
func (f *mergeCursor) Failed(c *backend.Conn, err error, sent bool) bool {
	e := mysql.NewError(mysql.ERConnectionKilled, mysql.StateConnFailure, "Lost connection to backend server during query")
	if f.annotate != nil {
		e = f.annotate(e)
	}
	f.failed = append(f.failed, e.Message)
	c.Pool().Discard(c, false)
	if !mysql.IsBackendError(err) {
		return false
	}
	_ = f.client.WriteErr(e)
	return f.client.Flush() == nil
}
func (f *mergeCursor) Drop(c *backend.Conn, err error) bool {
	f.dropped++
	c.Pool().Discard(c, false)
	return true
}

func (f *mergeCursor) KeepCursor(*mysql.RowHold)  {}
func (f *mergeCursor) Merged(*mysql.ResponseInfo) {}

// inUse is how many connections of the pools are checked out.
func (f *mergeCursor) inUse() int {
	n := 0
	for _, p := range f.pools {
		open, idle, _ := p.Open()
		n += open - idle
	}
	return n
}

// mergeShards starts the shards of the merge tests: a and c are
// databases of the shared server, b another server; each holds part of
// table t, and gold (on the shared server) all of it.
func mergeShards(t *testing.T) (a, b, c *backend.Cluster, shards map[*backend.Cluster]shardDB, gold shardDB) {
	shared := testenv.Shared(t)
	other := testenv.Start(t, testenv.Options{})
	def := "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, v INT NULL, d DOUBLE, ts DATETIME(3), pad VARCHAR(200))"
	rows := map[string][]string{}
	names := []string{"abc", "ABC", "Abd", "äbc", "b", "B", "", "zz", "Zy", "Abc"}
	for i := 1; i <= 60; i++ {
		v := fmt.Sprint(i % 7)
		if i%5 == 0 {
			v = "NULL"
		}
		r := fmt.Sprintf("(%d, '%s', %s, %d.25e%d, '2024-01-%02d 10:00:%02d.%03d', REPEAT('x', %d))", i, names[i%len(names)], v, i, i%20-10, i%28+1, i%60, i*7%1000, i%50)
		shard := []string{"a", "b", "c"}[i*7%3]
		rows[shard] = append(rows[shard], r)
		rows["gold"] = append(rows["gold"], r)
	}
	for _, s := range []struct {
		srv  *testenv.Server
		db   string
		rows string
	}{{shared, "merge_a", "a"}, {other, "merge_b", "b"}, {shared, "merge_c", "c"}, {shared, "merge_gold", "gold"}} {
		s.srv.Exec(t, "DROP DATABASE IF EXISTS "+s.db, "CREATE DATABASE "+s.db, "USE "+s.db)
		s.srv.Exec(t, strings.Replace(def, "TABLE t", "TABLE "+s.db+".t", 1),
			"INSERT INTO "+s.db+".t VALUES "+strings.Join(rows[s.rows], ","))
	}
	a, b, c = &backend.Cluster{Name: "sa"}, &backend.Cluster{Name: "sb"}, &backend.Cluster{Name: "sc"}
	shards = map[*backend.Cluster]shardDB{a: {shared, "merge_a"}, b: {other, "merge_b"}, c: {shared, "merge_c"}}
	return a, b, c, shards, shardDB{shared, "merge_gold"}
}

// execMerge runs m with the client's command q and returns the packets
// the client got.
func execMerge(t *testing.T, f *mergeCursor, out *bytes.Buffer, m *Merge, q []byte) [][]byte {
	t.Helper()
	out.Reset()
	if !m.Execute(f, q) {
		t.Fatalf("Execute ended the session; failed %v refused %v", f.failed, f.refused)
	}
	var ps [][]byte
	b := out.Bytes()
	for len(b) >= 4 {
		n := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
		ps = append(ps, append([]byte(nil), b[4:4+n]...))
		b = b[4+n:]
	}
	return ps
}

// rowsOf returns the rows of a result set's packets (after the column
// count and definitions, before the terminator) and the column count.
func rowsOf(t *testing.T, ps [][]byte) (int, [][]byte) {
	t.Helper()
	if len(ps) == 0 || ps[0][0] == mysql.HeaderErr {
		t.Fatalf("not a result set: %q", ps)
	}
	n := int(ps[0][0])
	last := ps[len(ps)-1]
	if last[0] != mysql.HeaderEOF {
		t.Fatalf("result ends with %q, want the terminator", last)
	}
	return n, ps[1+n : len(ps)-1]
}

func TestMergeOrdersAcrossShards(t *testing.T) {
	a, b, c, shards, gold := mergeShards(t)
	out := &bytes.Buffer{}
	f := newMergeCursor(t, shards, &bufConn{w: out}, clientCaps)
	g := newMergeCursor(t, map[*backend.Cluster]shardDB{a: gold}, &bufConn{w: out}, clientCaps)
	for _, tc := range []struct {
		name    string
		sql     string // the parts' statement, sorted as the merge keeps it
		order   []SortKey
		hidden  int
		gold    string // one server's statement, when the parts' has hidden columns
		weights []int
	}{
		{"int", "SELECT id, name, v FROM t ORDER BY id", []SortKey{{Col: 0}}, 0, "", nil},
		// Strings compare by the weights the shards compute (planner's addWeights).
		{"collation ties and case", "SELECT name, id, " + weighs("name") + " FROM t ORDER BY name, id", []SortKey{{Col: 0}, {Col: 1}}, 2, "SELECT name, id FROM t ORDER BY name, id", weights(4, 0, 2)},
		{"NULLs first", "SELECT v, id, d, ts FROM t ORDER BY v, id", []SortKey{{Col: 0}, {Col: 1}}, 0, "", nil},
		{"DESC", "SELECT v, name, id, " + weighs("name") + " FROM t ORDER BY v DESC, name DESC, id DESC", []SortKey{{Col: 0, Desc: true}, {Col: 1, Desc: true}, {Col: 2, Desc: true}}, 2,
			"SELECT v, name, id FROM t ORDER BY v DESC, name DESC, id DESC", weights(5, 1, 3)},
		{"hidden sort columns", "SELECT name, pad, d, id FROM t ORDER BY d, id", []SortKey{{Col: 2}, {Col: 3}}, 2, "SELECT name, pad FROM t ORDER BY d, id", nil},
		{"datetime and double", "SELECT ts, d, id FROM t ORDER BY ts DESC, id", []SortKey{{Col: 0, Desc: true}, {Col: 2}}, 0, "", nil},
	} {
		for _, prepared := range []bool{false, true} {
			spec := &MergeSpec{Order: tc.order, Hidden: tc.hidden, Weights: tc.weights}
			part := func(cl *backend.Cluster) Part {
				return Part{Cluster: cl, Query: query(tc.sql), Stmt: []byte(tc.sql)}
			}
			var q []byte
			if prepared {
				q = []byte{mysql.ComStmtExecute, 0, 0, 0, 0, 0, 1, 0, 0, 0}
			}
			m := &Merge{Parts: []Part{part(a), part(b), part(c)}, Spec: spec}
			got := execMerge(t, f, out, m, q)
			one := &Merge{Parts: []Part{part(a)}, Spec: spec}
			if tc.gold != "" {
				one = &Merge{Parts: []Part{{Cluster: a, Query: query(tc.gold), Stmt: []byte(tc.gold)}}, Spec: &MergeSpec{}} // one part: as it comes
			}
			want := execMerge(t, g, out, one, q)
			gn, grows := rowsOf(t, got)
			wn, wrows := rowsOf(t, want)
			if visible := len(strings.Split(strings.Split(tc.gold+tc.sql, " FROM")[0], ",")); gn != wn || gn != visible {
				t.Fatalf("%s prepared %v: %d columns, one server %d", tc.name, prepared, gn, wn)
			}
			if len(grows) != 60 || len(wrows) != 60 {
				t.Fatalf("%s prepared %v: %d rows, one server %d, want 60", tc.name, prepared, len(grows), len(wrows))
			}
			for i := range wrows {
				if !bytes.Equal(grows[i], wrows[i]) {
					t.Fatalf("%s prepared %v: row %d is %q, one server's is %q", tc.name, prepared, i+1, grows[i], wrows[i])
				}
			}
			if f.inUse() != 0 {
				t.Fatalf("%s: %d connections still checked out", tc.name, f.inUse())
			}
		}
	}
	if f.dropped != 0 || len(f.failed) != 0 {
		t.Fatalf("dropped %d failed %v", f.dropped, f.failed)
	}
}

// bigShards adds table big (rows of 200 bytes, n per shard, far more than
// socket buffers hold) to every shard.
func bigShards(t *testing.T, shards map[*backend.Cluster]shardDB, n int) {
	k := 0
	for _, s := range shards {
		k++ // ids 3n+k: every shard its own
		s.srv.Exec(t, "CREATE TABLE "+s.db+".big (id INT PRIMARY KEY, pad VARCHAR(200))",
			fmt.Sprintf("INSERT INTO %s.big SELECT seq * 3 + %d, REPEAT('p', 200) FROM %s.seq_0_to_%d", s.db, k, s.db, n-1))
	}
}

// running counts the statements on srv whose text starts with prefix,
// giving a statement that was just interrupted a second to end.
func running(t *testing.T, srv *testenv.Server, prefix string) string {
	var n string
	for i := 0; i < 20; i++ {
		n = srv.Scalar(t, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '"+prefix+"%'")
		if n == "0" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return n
}

// TestMergeLimitStopsTheOtherParts: once LIMIT's rows are out, the parts
// still sending are stopped (KILL QUERY, what they sent drained): their
// connections go back to the pool usable, and no shard keeps working.
func TestMergeLimitStopsTheOtherParts(t *testing.T) {
	a, b, c, shards, _ := mergeShards(t)
	bigShards(t, shards, 200000)
	out := &bytes.Buffer{}
	f := newMergeCursor(t, shards, &bufConn{w: out}, clientCaps)
	sql := "SELECT id, pad FROM big ORDER BY id"
	m := &Merge{Parts: []Part{{Cluster: a, Query: query(sql)}, {Cluster: b, Query: query(sql)}, {Cluster: c, Query: query(sql)}},
		Spec: &MergeSpec{Order: []SortKey{{Col: 0}}}, HasLimit: true, Offset: 2, Count: 3}
	kills := func() (n int) {
		for _, s := range shards {
			k, _ := strconv.Atoi(s.srv.Scalar(t, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'COM_KILL'"))
			n += k
		}
		return n
	}
	before := kills()
	_, rows := rowsOf(t, execMerge(t, f, out, m, nil))
	if len(rows) != 3 || !bytes.HasPrefix(rows[0], []byte("\x013")) || !bytes.HasPrefix(rows[2], []byte("\x015")) {
		t.Fatalf("rows %.12q, want ids 3, 4, 5", rows)
	}
	if f.done != 3 || f.dropped != 0 || f.inUse() != 0 {
		t.Fatalf("done %d dropped %d in use %d: every part must be done with and its connection back in the pool", f.done, f.dropped, f.inUse())
	}
	if kills() == before {
		t.Fatalf("no part was interrupted: parts with megabytes left must be stopped, not read to their end")
	}
	if f.diagnosed != 0 {
		// The kill's 1317 (or warning) is the proxy's doing: one server
		// that stopped at the limit reports nothing (a later SHOW
		// WARNINGS, the session's held connection, would show it).
		t.Fatalf("%d stopped part(s) were done with the kill's error or warnings", f.diagnosed)
	}
	for _, s := range shards {
		if n := running(t, s.srv, "SELECT id, pad FROM big"); n != "0" {
			t.Fatalf("%s still runs %s part(s) after the merge ended", s.db, n)
		}
	}
	for cl := range shards {
		conn, _ := f.Acquire(cl, false)
		// (The pool gives the connection back that it took last: the
		// stopped part's, whose diagnostics a SHOW WARNINGS sent to the
		// pool would read.)
		if rows, err := conn.QueryRows("SHOW WARNINGS"); err != nil || len(rows) > 0 {
			t.Fatalf("a stopped part's connection keeps diagnostics %v (%v)", rows, err)
		}
		if err := conn.Exec("DO 1"); err != nil {
			t.Fatalf("a stopped part's connection is not usable: %v", err)
		}
		f.Done(conn, nil)
	}
}

// trxCursor is a mergeCursor whose parts run inside a transaction (BEGIN
// on each connection before its part) and which counts the parts done
// with their transaction still open, as the session learns it from what
// Done reports (the status flags of the part's answer).
type trxCursor struct {
	*mergeCursor
	inTrx, ended int
}

func (f *trxCursor) Acquire(cl *backend.Cluster, replicaOK bool) (*backend.Conn, bool) {
	c, ok := f.mergeCursor.Acquire(cl, replicaOK)
	if err := c.Exec("BEGIN"); err != nil {
		f.t.Fatalf("BEGIN on %s: %v", cl.Name, err)
	}
	return c, ok
}

// AcquireToSend is Acquire: the merge takes its parts' connections so
// (mergeCursor's calls its own Acquire).
func (f *trxCursor) AcquireToSend(cl *backend.Cluster, replicaOK bool) (*backend.Conn, bool) {
	return f.Acquire(cl, replicaOK)
}

func (f *trxCursor) Done(c *backend.Conn, info *mysql.ResponseInfo) {
	if info.Status&mysql.StatusInTrans != 0 {
		f.inTrx++
	} else {
		f.ended++
	}
	if err := c.Exec("ROLLBACK"); err != nil {
		f.t.Errorf("ROLLBACK: %v", err)
	}
	f.mergeCursor.Done(c, info)
}

// TestMergeStoppedPartKeepsItsTransaction: a part stopped by KILL QUERY
// (the LIMIT's rows are out) ends in an ERR, which carries no status; it
// must be done with the transaction it ran in still open, as it is on
// the server. Done with no status, the session took the shard's part of
// the transaction for ended and let its connection go with the
// transaction (or XA branch) open: its next statement on that shard
// opened it again (XA START: 1399 XAER_RMFAIL).
func TestMergeStoppedPartKeepsItsTransaction(t *testing.T) {
	a, b, c, shards, _ := mergeShards(t)
	bigShards(t, shards, 50000)
	out := &bytes.Buffer{}
	f := &trxCursor{mergeCursor: newMergeCursor(t, shards, &bufConn{w: out}, clientCaps)}
	sql := "SELECT id, pad FROM big ORDER BY id"
	m := &Merge{Parts: []Part{{Cluster: a, Query: query(sql)}, {Cluster: b, Query: query(sql)}, {Cluster: c, Query: query(sql)}},
		Spec: &MergeSpec{Order: []SortKey{{Col: 0}}}, HasLimit: true, Offset: 2, Count: 3}
	out.Reset()
	if !m.Execute(f, nil) {
		t.Fatalf("Execute ended the session; failed %v refused %v", f.failed, f.refused)
	}
	if f.done != 3 || f.dropped != 0 {
		t.Fatalf("done %d dropped %d: every part must be done with", f.done, f.dropped)
	}
	if f.ended != 0 {
		t.Fatalf("%d of 3 parts done as if their transaction had ended: the session would let go of a transaction that is open", f.ended)
	}
}

// TestMergeKilledWhileItsPartsWentOut: a KILL QUERY that came while the
// parts were being sent, and that the shards may have let pass (a thread
// that had not read its command yet forgets it), ends the merge once the
// parts have answered: the client gets 1317 and no row, every part is
// stopped and done with, its connection back in the pool.
func TestMergeKilledWhileItsPartsWentOut(t *testing.T) {
	a, b, c, shards, _ := mergeShards(t)
	out := &bytes.Buffer{}
	f := newMergeCursor(t, shards, &bufConn{w: out}, clientCaps)
	f.killed.Store(true)
	sql := "SELECT id, v FROM t ORDER BY id"
	m := &Merge{Parts: []Part{{Cluster: a, Query: query(sql)}, {Cluster: b, Query: query(sql)}, {Cluster: c, Query: query(sql)}},
		Spec: &MergeSpec{Order: []SortKey{{Col: 0}}}}
	ps := execMerge(t, f, out, m, nil)
	if len(ps) != 1 || ps[0][0] != mysql.HeaderErr || mysql.ParseErr(ps[0]).Code != mysql.ERQueryInterrupted {
		t.Fatalf("client got %.40q, want one ERR 1317", ps)
	}
	if f.done != 3 || f.dropped != 0 || f.inUse() != 0 {
		t.Fatalf("done %d dropped %d in use %d: every part must be done with and its connection back in the pool", f.done, f.dropped, f.inUse())
	}
}

// TestMergeShardErrorMidResult: a shard's ERR among its rows ends the
// client's result with that error after the rows sent; every connection
// goes back to the pool.
func TestMergeShardErrorMidResult(t *testing.T) {
	a, b, c, shards, _ := mergeShards(t)
	out := &bytes.Buffer{}
	f := newMergeCursor(t, shards, &bufConn{w: out}, clientCaps)
	ok := "SELECT id, 0 FROM t ORDER BY id"
	bad := "SELECT id, IF(id > 40, (SELECT 1 UNION SELECT 2), 0) FROM t ORDER BY id"
	m := &Merge{Parts: []Part{{Cluster: a, Query: query(ok)}, {Cluster: b, Query: query(bad)}, {Cluster: c, Query: query(ok)}},
		Spec: &MergeSpec{Order: []SortKey{{Col: 0}}}}
	ps := execMerge(t, f, out, m, nil)
	last := ps[len(ps)-1]
	if last[0] != mysql.HeaderErr || mysql.ParseErr(last).Code != 1242 {
		t.Fatalf("result ends with %q, want shard b's ERR 1242", last)
	}
	if len(ps) < 10 {
		t.Fatalf("%d packets: the rows before the error must have been sent", len(ps))
	}
	if f.done != 3 || f.dropped != 0 || f.inUse() != 0 {
		t.Fatalf("done %d dropped %d in use %d", f.done, f.dropped, f.inUse())
	}
}

// TestMergeShardConnectionFails: a shard whose connection dies mid-merge
// ends the client's result with an error naming it; the other parts are
// stopped and done with.
func TestMergeShardConnectionFails(t *testing.T) {
	a, b, c, shards, _ := mergeShards(t)
	out := &bytes.Buffer{}
	f := newMergeCursor(t, shards, &bufConn{w: out}, clientCaps)
	ok := "SELECT id FROM t ORDER BY id"
	slow := "SELECT id FROM t WHERE SLEEP(IF(id > 30, 10, 0)) = 0 ORDER BY id"
	m := &Merge{Parts: []Part{{Cluster: a, Query: query(ok)}, {Cluster: b, Query: query(slow)}, {Cluster: c, Query: query(ok)}},
		Spec: &MergeSpec{Order: []SortKey{{Col: 0}}}}
	other := shards[b].srv
	go func() {
		for i := 0; i < 100; i++ {
			time.Sleep(50 * time.Millisecond)
			id, err := other.ScalarE("SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT id FROM t WHERE SLEEP%'")
			if err == nil && id != "" && id != "NULL" {
				// A pooled connection of the shared server may have died
				// (another test's KILL): one retry gets a live one.
				if err := other.ExecE("KILL CONNECTION " + id); err != nil {
					_ = other.ExecE("KILL CONNECTION " + id)
				}
				return
			}
		}
	}()
	start := time.Now()
	m.Execute(f, nil)
	if time.Since(start) > 8*time.Second {
		t.Fatalf("the merge waited for the dead shard")
	}
	ps := execPackets(out)
	last := ps[len(ps)-1]
	if last[0] != mysql.HeaderErr || !strings.Contains(string(last), "shard sb failed") {
		t.Fatalf("result ends with %q, want an error naming shard sb", last)
	}
	if len(f.failed) != 1 || f.done != 2 || f.inUse() != 0 {
		t.Fatalf("failed %v done %d in use %d", f.failed, f.done, f.inUse())
	}
}

// execPackets splits what the client got into packets.
func execPackets(out *bytes.Buffer) [][]byte {
	var ps [][]byte
	b := out.Bytes()
	for len(b) >= 4 {
		n := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
		ps = append(ps, b[4:4+n])
		b = b[4+n:]
	}
	return ps
}

// TestMergeColumnsDiffer: parts whose columns would decode differently
// are refused before any row, naming the shard; nothing is discarded.
func TestMergeColumnsDiffer(t *testing.T) {
	a, b, _, shards, _ := mergeShards(t)
	out := &bytes.Buffer{}
	f := newMergeCursor(t, shards, &bufConn{w: out}, clientCaps)
	m := &Merge{Parts: []Part{{Cluster: a, Query: query("SELECT id FROM t ORDER BY id")}, {Cluster: b, Query: query("SELECT name FROM t ORDER BY name")}},
		Spec: &MergeSpec{Order: []SortKey{{Col: 0}}}}
	m.Execute(f, nil)
	if len(f.refused) != 1 || !strings.Contains(f.refused[0].Message, "shard sb") {
		t.Fatalf("refused %v, want the differing columns named", f.refused)
	}
	if f.done != 2 || f.inUse() != 0 {
		t.Fatalf("done %d in use %d", f.done, f.inUse())
	}
}

// TestMergeProbeGivesPlainColumns: with Probe, the client gets the probe's
// column definitions (a plain SELECT's, naming the table), not the
// UNION ALL's the first part answers after it.
func TestMergeProbeGivesPlainColumns(t *testing.T) {
	a, b, _, shards, _ := mergeShards(t)
	out := &bytes.Buffer{}
	f := newMergeCursor(t, shards, &bufConn{w: out}, clientCaps)
	union := "(SELECT id, name FROM t WHERE id < 30) UNION ALL (SELECT id, name FROM t WHERE id >= 30) ORDER BY id"
	m := &Merge{Parts: []Part{{Cluster: a, Query: query("SELECT id, name FROM t LIMIT 0; " + union), Union: true}, {Cluster: b, Query: query(union), Union: true}},
		Spec: &MergeSpec{Order: []SortKey{{Col: 0}}}, Probe: true}
	ps := execMerge(t, f, out, m, nil)
	n, rows := rowsOf(t, ps)
	if n != 2 || len(rows) == 0 {
		t.Fatalf("%d columns %d rows", n, len(rows))
	}
	d, _ := mysql.ParseColumnDef(ps[1])
	if string(d.OrgTable) != "t" || string(d.Schema) != "merge_a" {
		t.Fatalf("column definition names table %q of %q, want the probe's t of merge_a", d.OrgTable, d.Schema)
	}
	if f.done != 2 || f.inUse() != 0 {
		t.Fatalf("done %d in use %d", f.done, f.inUse())
	}
}

// TestMergeBackpressure: a client that stops reading stops the merge:
// the proxy holds no more than its buffers, and the rows arrive whole
// once the client reads again.
func TestMergeBackpressure(t *testing.T) {
	a, b, c, shards, _ := mergeShards(t)
	bigShards(t, shards, 30000) // 18 MB of rows in all
	client, peer := net.Pipe()
	defer client.Close()
	f := newMergeCursor(t, shards, client, clientCaps)
	sql := "SELECT id, pad FROM big ORDER BY id"
	m := &Merge{Parts: []Part{{Cluster: a, Query: query(sql)}, {Cluster: b, Query: query(sql)}, {Cluster: c, Query: query(sql)}},
		Spec: &MergeSpec{Order: []SortKey{{Col: 0}}}}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	done := make(chan bool, 1)
	go func() { done <- m.Execute(f, nil) }()
	// Read a little, then stop: the merge must wait, not buffer.
	if _, err := io.ReadFull(peer, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if grown := int64(heap()) - int64(before); grown > 4<<20 {
		t.Fatalf("heap grew by %d bytes while the client did not read", grown)
	}
	select {
	case <-done:
		t.Fatal("the merge finished although the client did not read")
	default:
	}
	n, err := io.Copy(io.Discard, &untilEnd{r: peer, done: done})
	if err != nil {
		t.Fatal(err)
	}
	if n < 17<<20 {
		t.Fatalf("the client got %d bytes, want all 18 MB of rows", n+1<<20)
	}
	if f.done != 3 || f.inUse() != 0 {
		t.Fatalf("done %d in use %d", f.done, f.inUse())
	}
}

// untilEnd reads r until the merge's Execute returned and nothing more
// comes.
type untilEnd struct {
	r    net.Conn
	done chan bool
	ok   bool
}

func (u *untilEnd) Read(p []byte) (int, error) {
	for {
		_ = u.r.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, err := u.r.Read(p)
		if n > 0 {
			return n, nil
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			select {
			case u.ok = <-u.done:
				return 0, io.EOF
			default:
				continue
			}
		}
		return 0, err
	}
}

// TestMergeClientGone: a client that disconnects mid-merge ends it: every
// shard's query is interrupted and its connection discarded (its answer
// is unread), none left checked out.
func TestMergeClientGone(t *testing.T) {
	a, b, c, shards, _ := mergeShards(t)
	bigShards(t, shards, 30000)
	client, peer := net.Pipe()
	f := newMergeCursor(t, shards, client, clientCaps)
	sql := "SELECT id, pad FROM big ORDER BY id"
	m := &Merge{Parts: []Part{{Cluster: a, Query: query(sql)}, {Cluster: b, Query: query(sql)}, {Cluster: c, Query: query(sql)}},
		Spec: &MergeSpec{Order: []SortKey{{Col: 0}}}}
	done := make(chan bool, 1)
	go func() { done <- m.Execute(f, nil) }()
	if _, err := io.ReadFull(peer, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	peer.Close()
	select {
	case goOn := <-done:
		if goOn {
			t.Fatal("Execute went on after the client left")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the merge did not notice the client left")
	}
	if len(f.failed) != 3 || f.done != 0 || f.inUse() != 0 {
		t.Fatalf("failed %d done %d in use %d, want every part's connection discarded", len(f.failed), f.done, f.inUse())
	}
	for _, s := range shards {
		if n := running(t, s.srv, sql); n != "0" {
			t.Fatalf("%s still runs %s part(s) after the client left", s.db, n)
		}
	}
}
