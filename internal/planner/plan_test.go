package planner

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sequence"
)

// fakeSession is a session view set by the test.
type fakeSession struct {
	db                  string
	pinned, allowed, ro bool
	asked               int // ReadsOwnWritesOnPrimary calls: they read the clock

	// What binding asks (bind_test.go).
	pol                 router.Policy
	cl                  *backend.Cluster
	inTrx, noAutocommit bool
	locked              []*backend.Cluster
	cursor, streaming   bool
	sqlMode             string
	refuseWrite         func(cl *backend.Cluster) *mysql.SQLError // nil: every write allowed
	wrote               []*backend.Cluster                        // clusters CrossShardWrite saw writes on
	nextID              uint64                                    // DrawKeys' first id
	drawn               []int                                     // rows DrawKeys drew, per call
	params              func(dst *ExecValues) error
	syntaxErr           *mysql.SQLError
}

func (f *fakeSession) DB() string                { return f.db }
func (f *fakeSession) Pinned() bool              { return f.pinned }
func (f *fakeSession) ReplicaReadsAllowed() bool { return f.allowed }
func (f *fakeSession) ReadsOwnWritesOnPrimary() bool {
	f.asked++
	return f.ro
}
func (f *fakeSession) Policy() *router.Policy                               { return &f.pol }
func (f *fakeSession) Cluster() *backend.Cluster                            { return f.cl }
func (f *fakeSession) InTransaction() bool                                  { return f.inTrx }
func (f *fakeSession) Autocommit() bool                                     { return !f.noAutocommit }
func (f *fakeSession) LocksTables() bool                                    { return len(f.locked) > 0 }
func (f *fakeSession) LockedClusters() []*backend.Cluster                   { return f.locked }
func (f *fakeSession) CursorRequested() bool                                { return f.cursor }
func (f *fakeSession) Streaming() bool                                      { return f.streaming }
func (f *fakeSession) SQLMode() string                                      { return f.sqlMode }
func (f *fakeSession) Logger() *slog.Logger                                 { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
func (f *fakeSession) SyntaxError(*backend.Cluster, []byte) *mysql.SQLError { return f.syntaxErr }

func (f *fakeSession) CrossShardWrite(cl *backend.Cluster, st router.Stmt) *mysql.SQLError {
	if !router.IsWrite(st) {
		return nil
	}
	if f.refuseWrite != nil {
		if e := f.refuseWrite(cl); e != nil {
			return e
		}
	}
	f.wrote = append(f.wrote, cl)
	return nil
}

func (f *fakeSession) DrawKeys(_ *sequence.Sequence, _ uint64, rows int) (uint64, error) {
	f.drawn = append(f.drawn, rows)
	if rows == 0 {
		return 0, nil
	}
	first := f.nextID
	f.nextID += uint64(rows)
	return first, nil
}

func (f *fakeSession) ExecuteParams(dst *ExecValues) error {
	if f.params == nil {
		dst.ResetParams(0)
		return nil
	}
	return f.params(dst)
}

// testCluster is a cluster of n servers at an address nothing listens on;
// planning looks at its topology only.
func testCluster(t *testing.T, n int) *backend.Cluster {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var servers []*backend.Server
	for range n {
		p := backend.NewPool("t", &backend.DialConfig{Addr: "127.0.0.1:1", ConnectTimeout: 10 * time.Millisecond}, backend.PoolConfig{MaxOpen: 1}, log)
		servers = append(servers, backend.NewServer(p, 1, backend.BreakerConfig{Failures: 3, Backoff: time.Second, MaxBackoff: time.Second}))
	}
	cl := backend.NewCluster("t", servers, backend.HealthConfig{Interval: time.Hour}, log)
	t.Cleanup(cl.Close)
	return cl
}

func TestPlanClusterRoutesReadsToReplicasOnlyWhenAllowed(t *testing.T) {
	one, two := testCluster(t, 1), testCluster(t, 2)
	read, write := router.Classify([]byte("SELECT 1")), router.Classify([]byte("UPDATE t SET a = 1"))
	pol := &router.Policy{}
	allowed := fakeSession{allowed: true}
	for _, tc := range []struct {
		name string
		cl   *backend.Cluster
		st   router.Stmt
		pol  *router.Policy
		s    fakeSession
		want bool
	}{
		{"read with replicas", two, read, pol, allowed, true},
		{"no replicas", one, read, pol, allowed, false},
		{"write", two, write, pol, allowed, false},
		{"pinned", two, read, pol, fakeSession{allowed: true, pinned: true}, false},
		{"autocommit off", two, read, pol, fakeSession{}, false},
		{"own recent write", two, read, pol, fakeSession{allowed: true, ro: true}, false},
		{"policy reads from primary", two, read, &router.Policy{ReadFromPrimary: true}, allowed, false},
		{"primary database", two, read, &router.Policy{PrimaryDatabases: map[string]bool{"d": true}}, fakeSession{db: "d", allowed: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dst engine.Route
			s := tc.s
			p := PlanCluster(&dst, tc.cl, tc.pol, tc.st, &s)
			if p != engine.Primitive(&dst) {
				t.Fatal("PlanCluster did not return the route it filled")
			}
			if dst.Cluster != tc.cl || dst.ReplicaOK != tc.want || dst.Query != nil {
				t.Fatalf("route = {%v %v %q}, want {%v %v nil}", dst.Cluster.Name, dst.ReplicaOK, dst.Query, tc.cl.Name, tc.want)
			}
		})
	}
}

func TestPlanClusterReadsTheClockOnlyForReplicaReads(t *testing.T) {
	one := testCluster(t, 1)
	var dst engine.Route
	s := fakeSession{allowed: true}
	PlanCluster(&dst, one, &router.Policy{}, router.Classify([]byte("SELECT 1")), &s)
	PlanCluster(&dst, testCluster(t, 2), &router.Policy{}, router.Classify([]byte("UPDATE t SET a = 1")), &s)
	if s.asked != 0 {
		t.Fatalf("read-your-writes was asked %d times for statements no replica could serve", s.asked)
	}
}

func BenchmarkPlanCluster(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := backend.NewPool("t", &backend.DialConfig{Addr: "127.0.0.1:1", ConnectTimeout: 10 * time.Millisecond}, backend.PoolConfig{MaxOpen: 1}, log)
	cl := backend.NewCluster("t", []*backend.Server{backend.NewServer(p, 1, backend.BreakerConfig{Failures: 3, Backoff: time.Second, MaxBackoff: time.Second})}, backend.HealthConfig{Interval: time.Hour}, log)
	defer cl.Close()
	st := router.Classify([]byte("SELECT c FROM sbtest1 WHERE id = 1"))
	s := &fakeSession{allowed: true}
	pol := &router.Policy{}
	var dst engine.Route
	b.ReportAllocs()
	for b.Loop() {
		PlanCluster(&dst, cl, pol, st, s)
	}
}
