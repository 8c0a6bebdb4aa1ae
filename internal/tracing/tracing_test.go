package tracing

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP receiver keeping the spans it is sent.
type collector struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			c.spans = append(c.spans, ss.Spans...)
		}
	}
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Write(out)
}

func TestStatementSpansReachTheCollector(t *testing.T) {
	var col collector
	srv := httptest.NewServer(&col)
	defer srv.Close()
	tr, err := New(Options{Endpoint: srv.URL, SampleRatio: 1, ServiceName: "shardgate-test"})
	if err != nil {
		t.Fatal(err)
	}
	st := tr.Start(StatementInfo{Kind: "select", Session: 7, User: "app", DB: "shop", Digest: 0xabc, Statement: "SELECT 1"})
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
	col.mu.Lock()
	defer col.mu.Unlock()
	byName := map[string]*tracepb.Span{}
	for _, s := range col.spans {
		byName[s.Name] = s
	}
	root := byName["statement select"]
	if root == nil || len(col.spans) != 4 {
		t.Fatalf("got %d spans %v; want statement select, plan, backend s0, backend s1", len(col.spans), names(col.spans))
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
	attrs := map[string]string{}
	for _, kv := range root.Attributes {
		attrs[kv.Key] = kv.Value.String()
	}
	for _, k := range []string{"db.query.text", "db.user", "db.namespace", "shardgate.digest", "shardgate.rows_sent", "db.response.status_code"} {
		if attrs[k] == "" {
			t.Errorf("statement span lacks attribute %s (has %v)", k, attrs)
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
			st := tr.Start(StatementInfo{Kind: "select"})
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
}
