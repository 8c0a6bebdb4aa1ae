package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// partsCursor is a cursor for primitives that run in parts: each cluster
// stands for a database of one real server, the client is a buffer.
type partsCursor struct {
	t       *testing.T
	dbs     map[*backend.Cluster]string
	srv     *testenv.Server
	client  *mysql.Conn
	out     *bytes.Buffer
	done    int
	failed  []error
	dropped []error
	refused []*mysql.SQLError
	answer  *mysql.OKPacket
	unlocks int // UnlockTables calls
}

const clientCaps = mysql.ClientProtocol41 | mysql.ClientDeprecateEOF | mysql.ClientSecureConnection | mysql.ClientTransactions

func newPartsCursor(t *testing.T, srv *testenv.Server, dbs map[*backend.Cluster]string) *partsCursor {
	out := &bytes.Buffer{}
	return &partsCursor{t: t, srv: srv, dbs: dbs, out: out, client: mysql.NewConn(&bufConn{w: out})}
}

// AcquireToSend implements engine.Cursor.
func (f *partsCursor) AcquireToSend(cl *backend.Cluster, replicaOK bool) (*backend.Conn, bool) {
	return f.Acquire(cl, replicaOK)
}

func (f *partsCursor) Acquire(cl *backend.Cluster, _ bool) (*backend.Conn, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := backend.Dial(ctx, &backend.DialConfig{Addr: f.srv.Addr, User: testenv.User, Password: testenv.Password,
		Database: f.dbs[cl], ConnectTimeout: 3 * time.Second, Charset: mysql.CollationUTF8MB4GeneralCI}, false)
	if err != nil {
		f.t.Fatalf("dial: %v", err)
	}
	f.t.Cleanup(func() { _ = c.Close() })
	return c, true
}
func (f *partsCursor) Send(c *backend.Conn, p *Part, q []byte) error {
	if p.Query != nil {
		q = p.Query
	}
	return c.WriteCommand(q)
}
func (f *partsCursor) Relay(c *backend.Conn) *mysql.Relay              { return c.Relay(f.client, clientCaps) }
func (f *partsCursor) SkipWarnings()                                   {}
func (f *partsCursor) TakeWarnings(*backend.Conn, *mysql.ResponseInfo) {}
func (f *partsCursor) Held(*backend.Cluster) *backend.Conn             { return nil }
func (f *partsCursor) Aside(*backend.Cluster) (*backend.Conn, error) {
	return nil, errors.New("no aside")
}
func (f *partsCursor) ReleaseAside(*backend.Conn, bool)        {}
func (f *partsCursor) RenameWarnings(func(string) string)      {}
func (f *partsCursor) Done(*backend.Conn, *mysql.ResponseInfo) { f.done++ }
func (f *partsCursor) Failed(_ *backend.Conn, err error, _ bool) bool {
	f.failed = append(f.failed, err)
	return false
}
func (f *partsCursor) Drop(c *backend.Conn, err error) bool {
	f.dropped = append(f.dropped, err)
	_ = c.Close()
	return true
}

func (f *partsCursor) KeepCursor(*mysql.RowHold)          {}
func (f *partsCursor) Merged(*mysql.ResponseInfo)         {}
func (f *partsCursor) Status() uint16                     { return mysql.StatusAutocommit }
func (f *partsCursor) Answer(ok *mysql.OKPacket) bool     { f.answer = ok; return true }
func (f *partsCursor) AnswerResult(*mysql.ResultSet) bool { f.t.Fatal("AnswerResult"); return false }
func (f *partsCursor) AnswerInsert(*mysql.OKPacket, uint64) bool {
	f.t.Fatal("AnswerInsert")
	return false
}
func (f *partsCursor) AnnotateErrors(func(*mysql.SQLError) *mysql.SQLError) {}
func (f *partsCursor) UnlockTables() bool                                   { f.unlocks++; return true }
func (f *partsCursor) Killed() bool                                         { return false }
func (f *partsCursor) WatchClient() func()                                  { return func() {} }
func (f *partsCursor) Fail(e *mysql.SQLError) bool                          { f.refused = append(f.refused, e); return true }
func (f *partsCursor) Run(*Route, []byte) bool                              { f.t.Fatal("Run"); return false }
func (f *partsCursor) Savepoint([]byte) bool                                { f.t.Fatal("Savepoint"); return false }
func (f *partsCursor) EndTransaction([]byte) bool                           { f.t.Fatal("EndTransaction"); return false }

// packets splits what the client was sent into packet payloads.
func (f *partsCursor) packets() [][]byte {
	var ps [][]byte
	b := f.out.Bytes()
	for len(b) >= 4 {
		n := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
		ps = append(ps, b[4:4+n])
		b = b[4+n:]
	}
	return ps
}

// bufConn is a net.Conn whose writes go to a buffer.
type bufConn struct{ w *bytes.Buffer }

func (c *bufConn) Read([]byte) (int, error)         { return 0, io.EOF }
func (c *bufConn) Write(p []byte) (int, error)      { return c.w.Write(p) }
func (c *bufConn) Close() error                     { return nil }
func (c *bufConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *bufConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *bufConn) SetDeadline(time.Time) error      { return nil }
func (c *bufConn) SetReadDeadline(time.Time) error  { return nil }
func (c *bufConn) SetWriteDeadline(time.Time) error { return nil }

// twoShards makes databases a and b (table t with rows 1,2 and 3) and a
// cluster standing for each.
func twoShards(t *testing.T) (*testenv.Server, *backend.Cluster, *backend.Cluster, map[*backend.Cluster]string) {
	srv := testenv.Shared(t)
	srv.Exec(t, "DROP DATABASE IF EXISTS eng_a", "DROP DATABASE IF EXISTS eng_b", "CREATE DATABASE eng_a", "CREATE DATABASE eng_b",
		"CREATE TABLE eng_a.t (id INT PRIMARY KEY, v INT)", "CREATE TABLE eng_b.t (id INT PRIMARY KEY, v INT)",
		"INSERT INTO eng_a.t VALUES (1, 10), (2, 20)", "INSERT INTO eng_b.t VALUES (3, 30)")
	a, b := &backend.Cluster{Name: "sa"}, &backend.Cluster{Name: "sb"}
	return srv, a, b, map[*backend.Cluster]string{a: "eng_a", b: "eng_b"}
}

func query(sql string) []byte { return append([]byte{mysql.ComQuery}, sql...) }

func TestScatterIsOneResultSet(t *testing.T) {
	srv, a, b, dbs := twoShards(t)
	f := newPartsCursor(t, srv, dbs)
	s := Scatter{Parts: []Part{{Cluster: a, Query: query("SELECT id FROM t")}, {Cluster: b, Query: query("SELECT id FROM t")}}}
	if !s.Execute(f, nil) {
		t.Fatal("Execute ended the session")
	}
	ps := f.packets()
	// column count, one definition, three rows, one terminator (OK, as
	// the client has DEPRECATE_EOF).
	if len(ps) != 6 || ps[0][0] != 1 || ps[5][0] != mysql.HeaderEOF {
		t.Fatalf("client got %d packets %q, want count, 1 definition, 3 rows, terminator", len(ps), ps)
	}
	var rows []string
	for _, p := range ps[2:5] {
		rows = append(rows, string(p[1:]))
	}
	if strings.Join(rows, ",") != "1,2,3" {
		t.Fatalf("rows %v, want 1,2,3 in part order", rows)
	}
	if f.done != 2 || len(f.failed) != 0 {
		t.Fatalf("done %d failed %v", f.done, f.failed)
	}
}

func TestScatterEndsWithAPartsError(t *testing.T) {
	srv, a, b, dbs := twoShards(t)
	f := newPartsCursor(t, srv, dbs)
	s := Scatter{Parts: []Part{{Cluster: a, Query: query("SELECT id FROM t")}, {Cluster: b, Query: query("SELECT id FROM missing")},
		{Cluster: a, Query: query("SELECT id FROM t")}}}
	if !s.Execute(f, nil) {
		t.Fatal("Execute ended the session")
	}
	ps := f.packets()
	last := ps[len(ps)-1]
	if last[0] != mysql.HeaderErr || binary.LittleEndian.Uint16(last[1:]) != 1146 {
		t.Fatalf("last packet %q, want the missing table's ERR 1146", last)
	}
	if f.done != 2 {
		t.Fatalf("parts done %d, want 2: the third part must not run after the error", f.done)
	}
}

func TestFanoutMergesOKs(t *testing.T) {
	srv, a, b, dbs := twoShards(t)
	f := newPartsCursor(t, srv, dbs)
	fo := Fanout{Parts: []Part{{Cluster: a, Query: query("UPDATE t SET v = v + 1")}, {Cluster: b, Query: query("UPDATE t SET v = v + 1")}}}
	if !fo.Execute(f, nil) {
		t.Fatal("Execute ended the session")
	}
	if f.answer == nil || f.answer.AffectedRows != 3 {
		t.Fatalf("answer %+v, want 3 rows affected", f.answer)
	}
	if !strings.Contains(string(f.answer.Info), "Rows matched: 3") {
		t.Fatalf("info %q, want the parts' counts summed", f.answer.Info)
	}
}

func TestFanoutOneServerAnswersAsOne(t *testing.T) {
	srv, a, b, dbs := twoShards(t)
	f := newPartsCursor(t, srv, dbs)
	fo := Fanout{OneServer: true, Parts: []Part{{Cluster: a}, {Cluster: b}}}
	if !fo.Execute(f, query("INSERT INTO t VALUES (9, 90)")) {
		t.Fatal("Execute ended the session")
	}
	if f.answer == nil || f.answer.AffectedRows != 1 {
		t.Fatalf("answer %+v, want one server's 1 row", f.answer)
	}
	for _, db := range []string{"eng_a", "eng_b"} {
		if n := srv.Scalar(t, "SELECT COUNT(*) FROM "+db+".t WHERE id = 9"); n != "1" {
			t.Fatalf("%s has %s rows with id 9, want the client's command run on every part", db, n)
		}
	}
}

// TestFanoutLocksAllOrNone: a LOCK TABLES failing on a part answers with
// the server's error as it is (nothing stays applied) and has the cursor
// let go of the locks taken.
func TestFanoutLocksAllOrNone(t *testing.T) {
	srv, a, b, dbs := twoShards(t)
	f := newPartsCursor(t, srv, dbs)
	fo := Fanout{Locks: true, OneServer: true, Parts: []Part{{Cluster: a, Query: query("LOCK TABLES t READ")}, {Cluster: b, Query: query("LOCK TABLES missing READ")}}}
	if !fo.Execute(f, nil) {
		t.Fatal("Execute ended the session")
	}
	if len(f.refused) != 1 || f.answer != nil || f.unlocks != 1 {
		t.Fatalf("answer %+v refused %v unlocks %d, want one error, no OK, one UnlockTables", f.answer, f.refused, f.unlocks)
	}
	if e := f.refused[0]; e.Code != 1146 || strings.Contains(e.Message, "shardgate") {
		t.Fatalf("error %v, want the server's 1146 as it is", e)
	}
	f.refused = nil
	fo.Parts[1].Query = query("LOCK TABLES t READ")
	if !fo.Execute(f, nil) || f.answer == nil || f.unlocks != 1 {
		t.Fatalf("a LOCK TABLES every part takes: answer %+v, unlocks %d", f.answer, f.unlocks)
	}
}

func TestFanoutNamesWhereItWasApplied(t *testing.T) {
	srv, a, b, dbs := twoShards(t)
	f := newPartsCursor(t, srv, dbs)
	fo := Fanout{Parts: []Part{{Cluster: a, Query: query("UPDATE t SET v = 0")}, {Cluster: b, Query: query("UPDATE missing SET v = 0")}}}
	if !fo.Execute(f, nil) {
		t.Fatal("Execute ended the session")
	}
	if len(f.refused) != 1 || f.answer != nil {
		t.Fatalf("answer %+v refused %v, want one error and no OK", f.answer, f.refused)
	}
	e := f.refused[0]
	if e.Code != 1146 || !strings.Contains(e.Message, "shard sb") || !strings.Contains(e.Message, "sa") {
		t.Fatalf("error %v, want 1146 naming the failed shard sb and the applied shard sa", e)
	}
}
