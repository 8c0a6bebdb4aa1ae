package engine

import (
	"bytes"
	"errors"
	"testing"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
)

// fakeCursor records what primitives ask of the session.
type fakeCursor struct {
	runs   []run
	failed []*mysql.SQLError
	ended  int
	ok     bool
}

type run struct {
	cl        *backend.Cluster
	replicaOK bool
	q         []byte
}

func (f *fakeCursor) Fail(e *mysql.SQLError) bool {
	f.failed = append(f.failed, e)
	return true
}

func (f *fakeCursor) Savepoint([]byte) bool { return false }
func (f *fakeCursor) EndTransaction(q []byte) bool {
	f.ended++
	return f.ok
}

// The part steps are exercised against real servers (internal/proxy
// shards tests): a part needs a real backend connection.
func (f *fakeCursor) Acquire(*backend.Cluster, bool) (*backend.Conn, bool)       { return nil, false }
func (f *fakeCursor) AcquireToSend(*backend.Cluster, bool) (*backend.Conn, bool) { return nil, false }
func (f *fakeCursor) Send(*backend.Conn, *Part, []byte) error                    { return nil }
func (f *fakeCursor) Relay(*backend.Conn) *mysql.Relay                           { return nil }
func (f *fakeCursor) SkipWarnings()                                              {}
func (f *fakeCursor) TakeWarnings(*backend.Conn, *mysql.ResponseInfo)            {}
func (f *fakeCursor) Held(*backend.Cluster) *backend.Conn                        { return nil }
func (f *fakeCursor) Aside(*backend.Cluster) (*backend.Conn, error) {
	return nil, errors.New("no aside")
}
func (f *fakeCursor) ReleaseAside(*backend.Conn, bool)                     {}
func (f *fakeCursor) RenameWarnings(func(string) string)                   {}
func (f *fakeCursor) Done(*backend.Conn, *mysql.ResponseInfo)              {}
func (f *fakeCursor) Failed(*backend.Conn, error, bool) bool               { return false }
func (f *fakeCursor) Drop(*backend.Conn, error) bool                       { return false }
func (f *fakeCursor) Status() uint16                                       { return 0 }
func (f *fakeCursor) Answer(*mysql.OKPacket) bool                          { return false }
func (f *fakeCursor) AnswerResult(*mysql.ResultSet) bool                   { return false }
func (f *fakeCursor) AnswerInsert(*mysql.OKPacket, uint64) bool            { return false }
func (f *fakeCursor) AnnotateErrors(func(*mysql.SQLError) *mysql.SQLError) {}
func (f *fakeCursor) UnlockTables() bool                                   { return true }
func (f *fakeCursor) Killed() bool                                         { return false }
func (f *fakeCursor) WatchClient() func()                                  { return func() {} }

func (f *fakeCursor) Run(r *Route, q []byte) bool {
	f.runs = append(f.runs, run{r.Cluster, r.ReplicaOK, append([]byte(nil), q...)})
	return f.ok
}

func (f *fakeCursor) KeepCursor(*mysql.RowHold)  {}
func (f *fakeCursor) Merged(*mysql.ResponseInfo) {}

func TestRouteSendsTheClientCommandUnlessRewritten(t *testing.T) {
	cl := &backend.Cluster{Name: "s0"}
	client := []byte("\x03SELECT 1")
	for _, tc := range []struct {
		name  string
		route Route
		want  []byte
	}{
		{"as sent", Route{Cluster: cl, ReplicaOK: true}, client},
		{"rewritten", Route{Cluster: cl, Query: []byte("\x03SELECT 2")}, []byte("\x03SELECT 2")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeCursor{ok: true}
			if !tc.route.Execute(f, client) {
				t.Fatal("Execute reported the session over")
			}
			if len(f.runs) != 1 {
				t.Fatalf("runs = %d, want 1", len(f.runs))
			}
			r := f.runs[0]
			if r.cl != cl || r.replicaOK != tc.route.ReplicaOK || !bytes.Equal(r.q, tc.want) {
				t.Fatalf("run = %s %v %q, want %s %v %q", r.cl.Name, r.replicaOK, r.q, cl.Name, tc.route.ReplicaOK, tc.want)
			}
		})
	}
}

func TestRouteReportsTheSessionOver(t *testing.T) {
	f := &fakeCursor{ok: false}
	r := Route{Cluster: &backend.Cluster{}}
	if r.Execute(f, []byte("\x03SELECT 1")) {
		t.Fatal("Execute reported the session going on after the cursor ended it")
	}
}

func TestRefuseAnswersWithItsErrorAndRunsNothing(t *testing.T) {
	f := &fakeCursor{ok: true}
	e := mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax, "shardgate: no")
	r := Refuse{Err: e}
	if !r.Execute(f, []byte("\x03SELECT 1")) {
		t.Fatal("Execute reported the session over")
	}
	if len(f.runs) != 0 || len(f.failed) != 1 || f.failed[0] != e {
		t.Fatalf("runs %d, failed %v; want 0 runs and the refusal", len(f.runs), f.failed)
	}
}

// step is a Step of a statement sent to cl, sql what an EXPLAIN reads.
func step(prim string, cl *backend.Cluster, query, sql string) Step {
	return Step{Primitive: prim, Shard: cl.Name, Query: query, SQL: sql, Cluster: cl}
}

func TestExplainDescribesEachStatementSent(t *testing.T) {
	s0, s1 := &backend.Cluster{Name: "s0"}, &backend.Cluster{Name: "s1"}
	q := []byte("\x03SELECT * FROM t")
	for _, tc := range []struct {
		p    Primitive
		want []Step
	}{
		{&Route{Cluster: s1, Query: []byte("\x03SELECT * FROM t_0005")}, []Step{step("Route", s1, "SELECT * FROM t_0005", "SELECT * FROM t_0005")}},
		{&Route{Cluster: s0}, []Step{step("Route", s0, "SELECT * FROM t", "SELECT * FROM t")}},
		// (A prepared statement's text: no EXPLAIN reads it.)
		{&Route{Cluster: s0, Stmt: []byte("SELECT * FROM t_0000 WHERE id = ?")}, []Step{step("Route", s0, "SELECT * FROM t", "")}},
		{&Scatter{Parts: []Part{{Cluster: s0, Query: []byte("\x03A")}, {Cluster: s1, Query: []byte("\x03B")}}}, []Step{step("Scatter", s0, "A", "A"), step("Scatter", s1, "B", "B")}},
		{&Fanout{OneServer: true, Parts: []Part{{Cluster: s0}}}, []Step{step("Fanout (every shard, one server's answer)", s0, "SELECT * FROM t", "SELECT * FROM t")}},
		{&Metadata{Parts: []Part{{Cluster: s0, Query: []byte("\x03SHOW TABLES")}}}, []Step{step("Metadata", s0, "SHOW TABLES", "")}},
		{&Refuse{Err: mysql.NewError(1235, "42000", "no")}, []Step{{Primitive: "Refuse", Query: "1235 (42000): no"}}},
		// EXPLAIN's plan: the statement's.
		{&ExplainPlan{Plan: &Route{Cluster: s1}, Query: []byte("\x03SELECT 2")}, []Step{step("Route", s1, "SELECT 2", "SELECT 2")}},
	} {
		got := Explain(tc.p, q)
		if len(got) != len(tc.want) {
			t.Fatalf("Explain(%T) = %v, want %v", tc.p, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("Explain(%T)[%d] = %v, want %v", tc.p, i, got[i], tc.want[i])
			}
		}
	}
}
