// Package tracingtest is an OTLP/HTTP trace collector for tests: it keeps
// the spans exporters send it.
package tracingtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Collector receives OTLP/HTTP trace exports at URL.
type Collector struct {
	URL   string
	mu    sync.Mutex
	spans []*tracepb.Span
}

// Start starts a collector that stops with the test.
func Start(tb testing.TB) *Collector {
	c := &Collector{}
	srv := httptest.NewServer(c)
	tb.Cleanup(srv.Close)
	c.URL = srv.URL
	return c
}

// ServeHTTP implements http.Handler: POST /v1/traces with a protobuf
// ExportTraceServiceRequest.
func (c *Collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	_, _ = w.Write(out)
}

// Spans returns the spans received so far.
func (c *Collector) Spans() []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*tracepb.Span(nil), c.spans...)
}

// Attr returns the string form of span's attribute key ("" if absent).
func Attr(span *tracepb.Span, key string) string {
	for _, kv := range span.Attributes {
		if kv.Key != key {
			continue
		}
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			return v.StringValue
		case *commonpb.AnyValue_IntValue:
			return strconv.FormatInt(v.IntValue, 10)
		}
		return kv.Value.String()
	}
	return ""
}

// Children returns the spans whose parent is parent.
func Children(spans []*tracepb.Span, parent *tracepb.Span) []*tracepb.Span {
	var out []*tracepb.Span
	for _, s := range spans {
		if string(s.ParentSpanId) == string(parent.SpanId) && string(s.TraceId) == string(parent.TraceId) {
			out = append(out, s)
		}
	}
	return out
}
