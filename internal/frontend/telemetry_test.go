package frontend

import (
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/telemetry"
)

// teleSession is a session with a telemetry recorder and nothing else:
// enough for the statement hooks, which a test drives by hand.
func teleSession(t *testing.T, cfg telemetry.Config) (*Session, *telemetry.Recorder) {
	t.Helper()
	r, err := telemetry.New(cfg, prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return &Session{srv: &Server{opt: Options{Telemetry: r}}, user: &User{Name: "app"}, db: "db"}, r
}

// TestShardsTouchedManyClusters: a statement counts each cluster it ran
// parts on once, however many clusters, and the session's bookkeeping
// allocates nothing once it has seen a statement that wide.
func TestShardsTouchedManyClusters(t *testing.T) {
	s, r := teleSession(t, telemetry.Config{Enabled: true, Digests: true, MaxDigests: 10})
	var cls []*backend.Cluster
	for i := range 9 {
		cls = append(cls, &backend.Cluster{Name: fmt.Sprintf("s%d", i)})
	}
	sql := []byte("SELECT COUNT(*) FROM t")
	st := router.Classify(sql)
	statement := func() {
		s.teleBegin()
		s.teleNote(st, sql)
		for range 3 { // three parts on each shard (sub-tables)
			for _, cl := range cls {
				s.teleRan(cl, nil)
			}
		}
		s.teleEnd()
	}
	statement()
	if n := testing.AllocsPerRun(10, statement); n != 0 {
		t.Errorf("a statement over %d clusters: %v allocations", len(cls), n)
	}
	ds := r.Digests()
	if len(ds) != 1 || ds[0].ShardsTouched != ds[0].Count*uint64(len(cls)) {
		t.Errorf("digests %+v: want %d shards touched per statement", ds, len(cls))
	}
}

// TestUnknownStatementNotRecordedAsPrevious: a command that fails before
// naming its statement (COM_STMT_EXECUTE of an unknown id) is recorded
// under digest 0, not under the previous statement's digest and kind.
func TestUnknownStatementNotRecordedAsPrevious(t *testing.T) {
	s, r := teleSession(t, telemetry.Config{Enabled: true, Digests: true, MaxDigests: 10})
	sql := []byte("SELECT 1")
	s.teleBegin()
	s.teleNote(router.Classify(sql), sql)
	s.teleEnd()
	s.mu.Lock()
	s.publishIdle()
	s.mu.Unlock()
	s.teleBegin() // no teleNote: the statement id was unknown
	s.teleError(&mysqlUnknownStmt)
	s.teleEnd()
	got := map[string][2]uint64{}
	for _, d := range r.Digests() {
		got[d.Text] = [2]uint64{d.Count, d.Errors}
		if d.Text == telemetry.NoStatementText && d.Digest != 0 {
			t.Errorf("no statement under digest %x", d.Digest)
		}
	}
	want := map[string][2]uint64{"SELECT ?": {1, 0}, telemetry.NoStatementText: {1, 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("digests (count, errors) %v, want %v", got, want)
	}
}

// TestActivityOfLocalAnswer: a statement the proxy answered itself (no
// backend ran it) is the session's statement in its activity once idle,
// as its digest text when literals are masked.
func TestActivityOfLocalAnswer(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		s, r := teleSession(t, telemetry.Config{Enabled: enabled})
		s.mu.Lock()
		s.publishIdle() // logged in
		s.mu.Unlock()
		login := s.Activity().Since
		sql := []byte("SELECT 'secret'; SELECT 2")
		s.teleBegin()
		s.teleNote(router.Classify(sql), sql)
		s.teleError(&mysqlUnknownStmt)
		s.teleEnd()
		s.mu.Lock()
		s.publishIdle()
		s.mu.Unlock()
		a := s.Activity()
		if a.Statement != string(sql) || a.Digest == 0 || a.State != "idle" {
			t.Errorf("telemetry %v: activity %+v", enabled, a)
		}
		switch {
		case login.IsZero():
			t.Errorf("telemetry %v: no since at login", enabled)
		case enabled && !a.Since.After(login):
			t.Errorf("telemetry on: since %v, not after the statement (login %v)", a.Since, login)
		case !enabled && !a.Since.IsZero():
			t.Errorf("telemetry off: since %v, want unknown (zero) after a statement", a.Since)
		}
		r.Configure(telemetry.Config{SlowLog: telemetry.SlowLogConfig{MaskLiterals: true}})
		if a := s.Activity(); a.Statement != "SELECT ?; SELECT ?" {
			t.Errorf("telemetry %v, literals masked: statement %q", enabled, a.Statement)
		}
	}
}

var mysqlUnknownStmt = *mysql.NewError(1243, "HY000", "Unknown prepared statement handler (7) given to mysqld_stmt_execute")
