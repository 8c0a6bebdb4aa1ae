// Package tracing exports OpenTelemetry spans of client statements over
// OTLP/HTTP: a span per sampled statement, with children for its planning
// and for each backend execution (one per shard of a statement across
// shards). It is off unless an endpoint is configured, and a nil *Tracer
// costs a nil check per statement.
package tracing

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Options configure the exporter.
type Options struct {
	// Endpoint is the OTLP/HTTP collector's base URL, e.g.
	// http://otel-collector:4318 ("" turns tracing off).
	Endpoint string
	// SampleRatio is the fraction of statements traced, 0 < r <= 1.
	SampleRatio float64
	// ServiceName is the service.name resource attribute.
	ServiceName string
	// Version is the service.version resource attribute.
	Version string
}

// Tracer starts statement traces. The nil *Tracer is tracing off.
type Tracer struct {
	tp    *sdktrace.TracerProvider
	tr    trace.Tracer
	ratio float64
}

// New returns a tracer exporting to opt.Endpoint, or nil when the
// endpoint is empty.
func New(opt Options) (*Tracer, error) {
	if opt.Endpoint == "" {
		return nil, nil
	}
	u, err := url.Parse(opt.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("tracing endpoint %q: want http://host:port or https://host:port", opt.Endpoint)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		// Only the host and path are used: refuse what would be dropped
		// (and do not echo credentials).
		return nil, fmt.Errorf("tracing endpoint %s://%s: credentials, a query or a fragment would not be sent; "+
			"authenticating to the collector is not supported", u.Scheme, u.Host)
	}
	eopts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(u.Host)}
	if u.Scheme == "http" {
		eopts = append(eopts, otlptracehttp.WithInsecure())
	}
	if u.Path != "" && u.Path != "/" {
		eopts = append(eopts, otlptracehttp.WithURLPath(u.Path))
	}
	exp, err := otlptracehttp.New(context.Background(), eopts...)
	if err != nil {
		return nil, fmt.Errorf("tracing exporter for %s: %w", opt.Endpoint, err)
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", opt.ServiceName)}
	if opt.Version != "" {
		attrs = append(attrs, attribute.String("service.version", opt.Version))
	}
	res := resource.NewSchemaless(attrs...)
	// Statements are sampled before a span exists (Start), so the
	// provider keeps every span it is given.
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Second)),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.AlwaysSample()))
	return &Tracer{tp: tp, tr: tp.Tracer("github.com/shardgate/shardgate"), ratio: opt.SampleRatio}, nil
}

// Shutdown flushes the spans not exported yet and stops the exporter.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// StatementInfo describes a statement for its span.
type StatementInfo struct {
	Kind      string // select, insert, ...
	Session   uint32
	User, DB  string
	Digest    uint64
	Statement string // the text, cut by the caller
}

// Sampled decides whether the next statement is traced: false when
// tracing is off, else true for a SampleRatio fraction of the calls.
func (t *Tracer) Sampled() bool {
	return t != nil && (t.ratio >= 1 || rand.Float64() < t.ratio)
}

// Start begins the trace of a statement that Sampled chose, which began
// at start.
func (t *Tracer) Start(info StatementInfo, start time.Time) *Statement {
	ctx, span := t.tr.Start(context.Background(), "statement "+info.Kind,
		trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start),
		trace.WithAttributes(
			attribute.String("db.system", "mysql"),
			attribute.String("db.operation.name", info.Kind),
			attribute.String("db.query.text", info.Statement),
			attribute.String("db.namespace", info.DB),
			attribute.String("db.user", info.User),
			attribute.Int64("shardgate.session", int64(info.Session)),
			attribute.String("shardgate.digest", fmt.Sprintf("%016x", info.Digest))))
	return &Statement{tr: t.tr, ctx: ctx, span: span}
}

// Statement is a sampled statement's trace. Its methods do nothing on a
// nil *Statement, so callers need no check.
type Statement struct {
	tr   trace.Tracer
	ctx  context.Context
	span trace.Span
	plan trace.Span
}

// StartPlan begins the planning span.
func (s *Statement) StartPlan() {
	if s == nil {
		return
	}
	_, s.plan = s.tr.Start(s.ctx, "plan")
}

// EndPlan ends the planning span.
func (s *Statement) EndPlan() {
	if s == nil || s.plan == nil {
		return
	}
	s.plan.End()
	s.plan = nil
}

// Backend is the span of one backend execution of a statement.
type Backend struct{ span trace.Span }

// StartBackend begins the span of the statement's execution on addr, a
// server of cluster (a shard of a statement across shards).
func (s *Statement) StartBackend(cluster, addr string) Backend {
	if s == nil {
		return Backend{}
	}
	_, span := s.tr.Start(s.ctx, "backend "+cluster,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("shardgate.cluster", cluster),
			attribute.String("server.address", addr)))
	return Backend{span}
}

// End ends the backend span; err is its failure, if any.
func (b Backend) End(err error) {
	if b.span == nil {
		return
	}
	if err != nil {
		b.span.SetStatus(codes.Error, err.Error())
	}
	b.span.End()
}

// End ends the statement's trace with what it returned: rows sent, rows
// affected and, when it failed, the MySQL error code and message.
func (s *Statement) End(rows, affected uint64, errCode uint16, errMsg string) {
	if s == nil {
		return
	}
	s.EndPlan()
	s.span.SetAttributes(attribute.Int64("shardgate.rows_sent", int64(rows)),
		attribute.Int64("shardgate.rows_affected", int64(affected)))
	if errCode != 0 {
		s.span.SetAttributes(attribute.Int("db.response.status_code", int(errCode)))
		s.span.SetStatus(codes.Error, errMsg)
	}
	s.span.End()
}
