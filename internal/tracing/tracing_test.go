package tracing

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/shardgate/shardgate/internal/tracing/tracingtest"
)

func TestStatementSpansReachTheCollector(t *testing.T) {
	col := tracingtest.Start(t)
	tr, err := New(Options{Endpoint: col.URL, SampleRatio: 1, ServiceName: "shardgate-test"})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Sampled() {
		t.Fatal("a tracer with sample ratio 1 did not sample a statement")
	}
	st := tr.Start(StatementInfo{Kind: "select", Session: 7, User: "app", DB: "shop", Digest: 0xabc, Statement: "SELECT 1"}, time.Now())
	st.StartPlan()
	st.EndPlan()
	b0 := st.StartBackend("s0", "10.0.0.1:3306")
	b1 := st.StartBackend("s1", "10.0.0.2:3306")
	b0.End(nil)
	b1.End(errors.New("lost connection"))
	st.End(3, 0, 1927, "Connection was killed")
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := col.Spans()
	byName := map[string]*tracepb.Span{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	root := byName["statement select"]
	if root == nil || len(spans) != 4 {
		t.Fatalf("got %d spans %v; want statement select, plan, backend s0, backend s1", len(spans), names(spans))
	}
	for _, n := range []string{"plan", "backend s0", "backend s1"} {
		s := byName[n]
		if s == nil || string(s.ParentSpanId) != string(root.SpanId) || string(s.TraceId) != string(root.TraceId) {
			t.Errorf("span %q is not a child of the statement's span", n)
		}
	}
	if root.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || byName["backend s1"].Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("failed statement and backend spans should have error status: %v, %v", root.Status, byName["backend s1"].Status)
	}
	for _, k := range []string{"db.query.text", "db.user", "db.namespace", "shardgate.digest", "shardgate.rows_sent", "db.response.status_code"} {
		if tracingtest.Attr(root, k) == "" {
			t.Errorf("statement span lacks attribute %s", k)
		}
	}
}

func names(spans []*tracepb.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// TestOffCostsNothing: with tracing off (nil Tracer) and for statements
// not sampled, a statement's calls allocate nothing.
func TestOffCostsNothing(t *testing.T) {
	var off *Tracer
	unsampled, err := New(Options{Endpoint: "http://127.0.0.1:1", SampleRatio: 1e-12})
	if err != nil {
		t.Fatal(err)
	}
	defer unsampled.Shutdown(context.Background())
	for _, tr := range []*Tracer{off, unsampled} {
		allocs := testing.AllocsPerRun(1000, func() {
			var st *Statement
			if tr.Sampled() {
				st = tr.Start(StatementInfo{Kind: "select"}, time.Time{})
			}
			st.StartPlan()
			st.EndPlan()
			st.StartBackend("c", "a").End(nil)
			st.End(1, 0, 0, "")
		})
		if allocs != 0 {
			t.Errorf("%v allocations per untraced statement, want 0", allocs)
		}
	}
}

func TestBadEndpoint(t *testing.T) {
	for _, ep := range []string{"otel:4318", "ftp://x:1", "http://"} {
		if _, err := New(Options{Endpoint: ep, SampleRatio: 1}); err == nil {
			t.Errorf("New(%q) succeeded", ep)
		}
	}
	// What New would drop is refused, the credentials not echoed.
	for _, ep := range []string{"https://user:s3cret@otel:4318", "https://s3cret@otel:4318/v1/traces", "http://otel:4318/?token=s3cret", "http://otel:4318/#s3cret"} {
		_, err := New(Options{Endpoint: ep, SampleRatio: 1})
		if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "otel:4318") {
			t.Errorf("New(%q) = %v, want an error naming the host, not the secret", ep, err)
		}
	}
}
