package frontend

import (
	"errors"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/telemetry"
	"github.com/shardgate/shardgate/internal/tracing"
)

// Statement tracing (Options.Tracer): a sampled statement gets a span
// from its read to its answer, a child for its planning and one per
// backend execution (one per shard of a statement in parts). A statement
// not sampled, and every statement when tracing is off, costs a nil
// check at each step.

// traceState is the trace of the statement being timed (stmtTele).
type traceState struct {
	st *tracing.Statement // nil: not traced
	// parts are the backend executions not ended yet: made at the first
	// traced one, since a session that is never sampled (tracing off,
	// most sessions) need not carry their 192 bytes (shed.go).
	parts *[maxTracedParts]tracedPart
	n     int
}

// maxTracedParts is how many backend executions of one statement get
// spans of their own.
const maxTracedParts = 8

type tracedPart struct {
	c *backend.Conn
	b tracing.Backend
}

// maxTracedStatement bounds the statement text a span carries.
const maxTracedStatement = 1024

// traceBegin starts the trace of the statement teleNote just noted, if
// it is sampled.
func (s *Session) traceBegin() {
	t := &s.tele
	if t.trace.st != nil || !s.srv.opt.Tracer.Sampled() {
		return // traced already (a statement classified twice), or not sampled
	}
	text := t.sql
	if len(text) > maxTracedStatement {
		text = text[:maxTracedStatement]
	}
	stmt := string(text)
	if s.srv.opt.Telemetry.MaskLiterals() {
		stmt = router.DigestText(text) // a literal the cut left open is masked too
	}
	t.trace.st = s.srv.opt.Tracer.Start(tracing.StatementInfo{
		Kind: telemetry.KindLabel(t.kind), Session: s.id, User: s.user.Name, DB: s.db,
		Digest: t.digest, Statement: stmt,
	}, t.start)
	t.trace.n = 0
}

// traceBackend starts the span of c's execution of the statement (or of
// a part of it) on cl.
func (s *Session) traceBackend(cl *backend.Cluster, c *backend.Conn) {
	tr := &s.tele.trace
	if tr.st == nil || tr.n == maxTracedParts {
		return
	}
	if tr.parts == nil {
		tr.parts = new([maxTracedParts]tracedPart)
	}
	tr.parts[tr.n] = tracedPart{c, tr.st.StartBackend(cl.Name, c.Pool().Addr())}
	tr.n++
}

// traceBackendDone ends the span of c's execution; err is its failure.
func (s *Session) traceBackendDone(c *backend.Conn, err error) {
	tr := &s.tele.trace
	for i := 0; i < tr.n; i++ {
		if tr.parts[i].c == c {
			tr.parts[i].b.End(err)
			tr.n--
			tr.parts[i] = tr.parts[tr.n]
			tr.parts[tr.n] = tracedPart{}
			return
		}
	}
}

// traceEnd ends the statement's trace with what the client got.
func (s *Session) traceEnd() {
	t := &s.tele
	tr := &t.trace
	if tr.st == nil {
		return
	}
	for i := 0; i < tr.n; i++ {
		tr.parts[i].b.End(errUnfinishedPart)
		tr.parts[i] = tracedPart{}
	}
	tr.n = 0
	tr.st.End(t.rows, t.affected, t.errCode, t.errMsg)
	tr.st = nil
}

// errUnfinishedPart marks a backend span the statement ended before its
// answer was read to the end (a merge that stopped a shard at its LIMIT,
// a failure elsewhere).
var errUnfinishedPart = errors.New("the statement ended before this part's answer was read")
