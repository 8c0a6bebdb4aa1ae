package proxy_test

// OpenTelemetry tracing (issue 15): a traced statement's span has a child
// for its planning and one per backend execution, a shard each for a
// statement across shards; its attributes say what the client got.

import (
	"fmt"
	"slices"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/internal/tracing/tracingtest"
)

func TestStatementTracing(t *testing.T) {
	const db = "traced"
	tables := []string{"{name: t, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: 2}"}
	e := startClientShards(t, db, tables...)
	col := tracingtest.Start(t)
	cfg := clientShardsConfig(t, db, e.shards, "", tables)
	cfg.Telemetry.Tracing.Endpoint = col.URL
	cfg.Telemetry.Tracing.SampleRatio = 1
	p := startProxy(t, cfg)
	pdb := openDB(t, proxyDSN(p, appUser, appPass, db, ""))
	mustExec(t, pdb, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	for id := 1; id <= 20; id++ {
		mustExec(t, pdb, fmt.Sprintf("INSERT INTO t VALUES (%d, %d)", id, id*10))
	}
	var n, v int
	if err := pdb.QueryRow("SELECT COUNT(*) FROM t").Scan(&n); err != nil || n != 20 {
		t.Fatalf("SELECT COUNT(*): %d, %v", n, err)
	}
	if err := pdb.QueryRow("SELECT v FROM t WHERE id = 3").Scan(&v); err != nil || v != 30 {
		t.Fatalf("SELECT v: %d, %v", v, err)
	}
	if _, err := pdb.Exec("SELECT * FROM no_such_table"); err == nil {
		t.Fatal("SELECT from a missing table succeeded")
	}
	texts := []string{"SELECT COUNT(*) FROM t", "SELECT v FROM t WHERE id = 3", "SELECT * FROM no_such_table"}
	var spans []*tracepb.Span
	find := func(text string) *tracepb.Span {
		for _, s := range spans {
			if s.ParentSpanId == nil && tracingtest.Attr(s, "db.query.text") == text {
				return s
			}
		}
		return nil
	}
	// The spans are exported in batches, at least once a second.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		spans = col.Spans()
		if find(texts[0]) != nil && find(texts[1]) != nil && find(texts[2]) != nil || time.Now().After(deadline) {
			break
		}
	}
	root := func(text string) *tracepb.Span {
		t.Helper()
		s := find(text)
		if s == nil {
			t.Fatalf("no statement span for %q among %d spans", text, len(spans))
		}
		return s
	}
	backends := func(s *tracepb.Span) (names []string, plans int) {
		for _, c := range tracingtest.Children(spans, s) {
			if c.Name == "plan" {
				plans++
				continue
			}
			names = append(names, c.Name)
		}
		return names, plans
	}

	count := root("SELECT COUNT(*) FROM t")
	if names, plans := backends(count); len(names) != 2 || plans != 1 || names[0] == names[1] {
		t.Errorf("SELECT COUNT(*) across both shards: children %v and %d plan spans, want backend s0 and s1 and a plan", names, plans)
	}
	if got := tracingtest.Attr(count, "shardgate.rows_sent"); got != "1" {
		t.Errorf("SELECT COUNT(*): rows_sent %q, want 1 (the merged answer's, not the shards')", got)
	}
	point := root("SELECT v FROM t WHERE id = 3")
	if names, _ := backends(point); len(names) != 1 {
		t.Errorf("a point select ran on %v, want one backend", names)
	}
	if start, end := time.Unix(0, int64(point.StartTimeUnixNano)), time.Unix(0, int64(point.EndTimeUnixNano)); !end.After(start) {
		t.Errorf("the point select's span ends %v, before it starts %v", end, start)
	}
	bad := root("SELECT * FROM no_such_table")
	if bad.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || tracingtest.Attr(bad, "db.response.status_code") != "1146" {
		t.Errorf("the failed statement's span: status %v, code %q; want an error with 1146", bad.Status, tracingtest.Attr(bad, "db.response.status_code"))
	}
}

// TestStatementTracingMasked: with telemetry.slow_log.mask_literals on, a
// span carries the statement's digest text, not its literals.
func TestStatementTracingMasked(t *testing.T) {
	col := tracingtest.Start(t)
	cfg := proxyConfig(t, testenv.Shared(t), "")
	cfg.Telemetry.Tracing.Endpoint = col.URL
	cfg.Telemetry.Tracing.SampleRatio = 1
	cfg.Telemetry.SlowLog.MaskLiterals = true
	p := startProxy(t, cfg)
	queryString(t, openDB(t, proxyDSN(p, appUser, appPass, "", "")), "SELECT 'secret' AS masked")
	var texts []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		texts = texts[:0]
		for _, s := range col.Spans() {
			if s.ParentSpanId == nil {
				texts = append(texts, tracingtest.Attr(s, "db.query.text"))
			}
		}
		if slices.Contains(texts, "SELECT ? AS masked") {
			return
		}
	}
	t.Errorf("no span with the masked text; statement spans' texts: %q", texts)
}
