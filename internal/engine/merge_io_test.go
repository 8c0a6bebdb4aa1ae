package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
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
	t        *testing.T
	pools    map[*backend.Cluster]*backend.Pool
	client   *mysql.Conn
	caps     uint32
	done     int
	failed   []string // the errors Failed answered, annotated
	dropped  int
	refused  []*mysql.SQLError
	annotate func(*mysql.SQLError) *mysql.SQLError
	mu       sync.Mutex
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
func (f *mergeCursor) Relay(c *backend.Conn) *mysql.Relay      { return c.Relay(f.client, f.caps) }
func (f *mergeCursor) SkipWarnings()                           {}
func (f *mergeCursor) RenameWarnings(func(string) string)      {}
func (f *mergeCursor) Status() uint16                          { return mysql.StatusAutocommit }
func (f *mergeCursor) Answer(*mysql.OKPacket) bool             { f.t.Fatal("Answer"); return false }
func (f *mergeCursor) AnswerResult(*mysql.ResultSet) bool      { f.t.Fatal("AnswerResult"); return false }
func (f *mergeCursor) Run(*backend.Cluster, bool, []byte) bool { f.t.Fatal("Run"); return false }
func (f *mergeCursor) EndTransaction([]byte) bool              { f.t.Fatal("EndTransaction"); return false }
func (f *mergeCursor) AnswerInsert(*mysql.OKPacket, uint64) bool {
	f.t.Fatal("AnswerInsert")
	return false
}
func (f *mergeCursor) AnnotateErrors(a func(*mysql.SQLError) *mysql.SQLError) { f.annotate = a }
func (f *mergeCursor) Fail(e *mysql.SQLError) bool {
	f.refused = append(f.refused, e)
	_ = f.client.WriteErr(e)
	return f.client.Flush() == nil
}
func (f *mergeCursor) Done(c *backend.Conn, _ *mysql.ResponseInfo) {
	f.mu.Lock()
	f.done++
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
		name   string
		sql    string // the parts' statement, sorted as the merge keeps it
		order  []SortKey
		hidden int
		gold   string // one server's statement, when the parts' has hidden columns
	}{
		{"int", "SELECT id, name, v FROM t ORDER BY id", []SortKey{{Col: 0}}, 0, ""},
		{"collation ties and case", "SELECT name, id FROM t ORDER BY name, id", []SortKey{{Col: 0}, {Col: 1}}, 0, ""},
		{"NULLs first", "SELECT v, id, d, ts FROM t ORDER BY v, id", []SortKey{{Col: 0}, {Col: 1}}, 0, ""},
		{"DESC", "SELECT v, name, id FROM t ORDER BY v DESC, name DESC, id DESC", []SortKey{{Col: 0, Desc: true}, {Col: 1, Desc: true}, {Col: 2, Desc: true}}, 0, ""},
		{"hidden sort columns", "SELECT name, pad, d, id FROM t ORDER BY d, id", []SortKey{{Col: 2}, {Col: 3}}, 2, "SELECT name, pad FROM t ORDER BY d, id"},
		{"datetime and double", "SELECT ts, d, id FROM t ORDER BY ts DESC, id", []SortKey{{Col: 0, Desc: true}, {Col: 2}}, 0, ""},
	} {
		for _, prepared := range []bool{false, true} {
			spec := &MergeSpec{Order: tc.order, Hidden: tc.hidden}
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
				one = &Merge{Parts: []Part{{Cluster: a, Query: query(tc.gold), Stmt: []byte(tc.gold)}}, Spec: &MergeSpec{Order: tc.order}}
			}
			want := execMerge(t, g, out, one, q)
			gn, grows := rowsOf(t, got)
			wn, wrows := rowsOf(t, want)
			if visible := len(strings.Split(strings.Split(tc.sql, " FROM")[0], ",")) - tc.hidden; gn != wn || gn != visible {
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
