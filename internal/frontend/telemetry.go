package frontend

import (
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

// stmtTele is the statement being timed.
type stmtTele struct {
	on       bool // a statement is being timed
	start    time.Time
	end      time.Time // the previous statement's end, for the idle state's since
	digest   uint64
	kind     router.Kind
	sql      []byte
	rows     uint64
	affected uint64
	errCode  uint16
	errMsg   string
	backend  string
	// The clusters it ran on: the first one and how many different.
	cl       *backend.Cluster
	clusters int
	seen     [4]*backend.Cluster
	// published: the statement's text is in the session's activity.
	published bool
	trace     traceState

	rec  telemetry.Statement
	sess *telemetry.Session // made at the first statement: idle sessions stay small
	// Metrics children of the clusters the session ran on last, of
	// several clusters (*) and of none (-).
	cs           [2]clusterStats
	csNext       int
	multi, local *telemetry.ClusterStats
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

// teleBegin starts timing a statement command just read.
func (s *Session) teleBegin() {
	if !s.srv.opt.Telemetry.Enabled() {
		return
	}
	t := &s.tele
	t.on, t.start = true, time.Now()
	t.rows, t.affected, t.errCode, t.errMsg, t.backend = 0, 0, 0, "", ""
	t.cl, t.clusters = nil, 0
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

// teleRan notes that cluster cl ran the statement or a part of it, on c.
func (s *Session) teleRan(cl *backend.Cluster, c *backend.Conn) {
	t := &s.tele
	if !t.on || cl == nil {
		return
	}
	t.backend = c.Pool().Addr()
	s.clusterStats(cl).Ran()
	for i := 0; i < t.clusters && i < len(t.seen); i++ {
		if t.seen[i] == cl {
			return
		}
	}
	if t.clusters < len(t.seen) {
		t.seen[t.clusters] = cl
	}
	if t.clusters == 0 {
		t.cl = cl
	}
	t.clusters++
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
	if t.sess == nil {
		t.sess = new(telemetry.Session)
	}
	rec := &t.rec
	*rec = telemetry.Statement{
		Digest: t.digest, Kind: t.kind, User: s.user.Name, DB: s.db, SQL: t.sql,
		Start: t.start, Duration: t.end.Sub(t.start), RowsSent: t.rows, Affected: t.affected,
		ErrCode: t.errCode, ErrMsg: t.errMsg, Shards: t.clusters, Backend: t.backend,
	}
	switch {
	case t.clusters == 1:
		rec.Cluster, rec.ClusterName = s.clusterStats(t.cl), t.cl.Name
	case t.clusters > 1:
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
	r.Record(t.sess, rec)
	rec.SQL, t.sql = nil, nil // the buffers are the session's; not kept between statements
}

// clusterStats returns the metric children of cl, kept for the clusters
// the session used last.
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
