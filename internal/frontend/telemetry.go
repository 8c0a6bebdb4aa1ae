package frontend

import (
	"sync"
	"time"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/telemetry"
)

// Statement telemetry: every COM_QUERY and COM_STMT_EXECUTE is timed
// from its read to its answer's last byte and told to the recorder
// (Options.Telemetry) with what it did: rows, errors, the clusters it ran
// on. The session fills stmtTele as the statement goes; nothing here
// allocates per statement.

// stmtTele is the statement being timed. Its small fields are side by
// side: it is part of every Session (see Session).
type stmtTele struct {
	on   bool // a statement is being timed
	kind router.Kind
	// published: the statement's text is in the session's activity.
	published bool
	errCode   uint16
	start     time.Time
	end       time.Time // the previous statement's end, for the idle state's since
	digest    uint64
	sql       []byte
	rows      uint64
	affected  uint64
	errMsg    string
	backend   string
	// seen are the different clusters it ran on, the first one first:
	// in seenBuf, or in a slice the session grew for a statement over
	// more (and keeps).
	seen    []*backend.Cluster
	seenBuf [4]*backend.Cluster
	trace   traceState

	// busy is what recording takes: taken at the first statement, given
	// back when the session parks (shed.go).
	busy *teleBusy
	// Metrics children of the clusters the session ran on last, of
	// several clusters (*) and of none (-).
	cs           [2]clusterStats
	csNext       int
	multi, local *telemetry.ClusterStats
}

// teleBusy is a session's recording state (its cache of digest entries,
// keyed by digest, user and database, so valid for any session) and the
// record of its statement, which only a busy session needs.
type teleBusy struct {
	sess telemetry.Session
	rec  telemetry.Statement
}

// teleBusyPool holds the recording states of sessions that parked.
var teleBusyPool = sync.Pool{New: func() any { return new(teleBusy) }}

// recording returns the session's recording state, taking one from the
// pool when it has none.
func (t *stmtTele) recording() *teleBusy {
	if t.busy == nil {
		t.busy = teleBusyPool.Get().(*teleBusy)
	}
	return t.busy
}

// shed gives the recording state back to the pool.
func (t *stmtTele) shed() {
	if t.busy != nil {
		teleBusyPool.Put(t.busy)
		t.busy = nil
	}
}

type clusterStats struct {
	cl *backend.Cluster
	cs *telemetry.ClusterStats
}

// Label values of shardgate_statement_duration_seconds's cluster for a
// statement that ran on several clusters and for one the proxy answered
// itself.
const (
	clusterMany = "*"
	clusterNone = "-"
)

// teleBegin starts timing a statement command just read. Until teleNote
// names its statement, it is none (digest 0): a COM_STMT_EXECUTE of an
// unknown statement id is recorded so, not as the previous statement.
func (s *Session) teleBegin() {
	t := &s.tele
	t.digest, t.kind, t.sql, t.published = 0, router.KindOther, nil, false
	if !s.srv.opt.Telemetry.Enabled() {
		return
	}
	t.on, t.start = true, time.Now()
	t.rows, t.affected, t.errCode, t.errMsg, t.backend = 0, 0, 0, "", ""
	if t.seen == nil {
		t.seen = t.seenBuf[:0]
	}
	t.seen = t.seen[:0]
}

// teleNote records the classification of the statement being timed and
// its text (a prepared statement's: the text it was prepared from).
func (s *Session) teleNote(st router.Stmt, sql []byte) {
	s.tele.digest, s.tele.kind, s.tele.sql = st.Digest, st.Kind, sql
	s.tele.published = false
	if s.tele.on {
		s.traceBegin()
	}
}

// teleRan notes that cluster cl ran the statement or a part of it, on c,
// or (c nil) was to run it but had no connection for it. A statement
// over hundreds of shards scans the clusters it saw for each: negligible
// next to the round trip of each part.
func (s *Session) teleRan(cl *backend.Cluster, c *backend.Conn) {
	t := &s.tele
	if !t.on || cl == nil {
		return
	}
	if c != nil {
		t.backend = c.Pool().Addr()
		s.clusterStats(cl).Ran()
	}
	for _, seen := range t.seen {
		if seen == cl {
			return
		}
	}
	t.seen = append(t.seen, cl)
}

// teleResult adds a backend answer's rows and error.
func (s *Session) teleResult(info *mysql.ResponseInfo) {
	t := &s.tele
	if !t.on {
		return
	}
	if info.ResultSet {
		t.rows += info.Rows
	} else {
		t.affected += info.AffectedRows
	}
	if info.Err != nil {
		t.errCode, t.errMsg = info.Err.Code, info.Err.Message
	}
}

// teleMerged replaces the rows the parts of a merge read with the rows
// the client got.
func (s *Session) teleMerged(info *mysql.ResponseInfo) {
	if s.tele.on {
		s.tele.rows = info.Rows
	}
}

// teleError notes the error the client is answered with.
func (s *Session) teleError(e *mysql.SQLError) {
	if s.tele.on {
		s.tele.errCode, s.tele.errMsg = e.Code, e.Message
	}
}

// teleEnd records the statement once its answer is written.
func (s *Session) teleEnd() {
	t := &s.tele
	if !t.on {
		return
	}
	t.on = false
	r := s.srv.opt.Telemetry
	t.end = time.Now()
	s.traceEnd()
	b := t.recording()
	rec := &b.rec
	*rec = telemetry.Statement{
		Digest: t.digest, Kind: t.kind, User: s.user.Name, DB: s.db, SQL: t.sql,
		Start: t.start, Duration: t.end.Sub(t.start), RowsSent: t.rows, Affected: t.affected,
		ErrCode: t.errCode, ErrMsg: t.errMsg, Shards: len(t.seen), Backend: t.backend,
	}
	switch {
	case len(t.seen) == 1:
		rec.Cluster, rec.ClusterName = s.clusterStats(t.seen[0]), t.seen[0].Name
	case len(t.seen) > 1:
		if t.multi == nil {
			t.multi = r.Cluster(clusterMany)
		}
		rec.Cluster, rec.ClusterName = t.multi, clusterMany
	default:
		if t.local == nil {
			t.local = r.Cluster(clusterNone)
		}
		rec.Cluster = t.local
	}
	r.Record(&b.sess, rec)
	rec.SQL = nil // the session's buffer: not kept past the statement (t.sql is, until publishIdle)
}

// teleFetched adds the rows a COM_STMT_FETCH of ps's cursor sent to the
// digest row of ps's statement, as a cursor the proxy holds (over several
// shards) counted them at its execution.
func (s *Session) teleFetched(ps *pstmt, rows uint64) {
	r := s.srv.opt.Telemetry
	if !r.Enabled() || rows == 0 {
		return
	}
	b := s.tele.recording()
	b.rec = telemetry.Statement{Digest: ps.stmt.Digest, Kind: ps.stmt.Kind, User: s.user.Name, DB: s.db, SQL: ps.text}
	r.Fetched(&b.sess, &b.rec, rows)
	b.rec.SQL = nil
}

// clusterStats returns the metric children of cl, kept for the clusters
// the session used last; the others' the recorder finds without a lock.
func (s *Session) clusterStats(cl *backend.Cluster) *telemetry.ClusterStats {
	t := &s.tele
	for i := range t.cs {
		if t.cs[i].cl == cl {
			return t.cs[i].cs
		}
	}
	cs := s.srv.opt.Telemetry.Cluster(cl.Name)
	t.cs[t.csNext] = clusterStats{cl: cl, cs: cs}
	t.csNext = (t.csNext + 1) % len(t.cs)
	return cs
}
