// Package telemetry records what each client statement cost: per-digest
// counters and latency histograms, the slow query log and the statement
// metrics Prometheus scrapes. The frontend records; the admin views read.
//
// Recording is built for the hot path: a session keeps a small cache of
// the digest entries it used (Session), so that a statement whose shape it
// ran before costs a few atomic adds and no lock; a miss takes the lock of
// one stripe of the table. Nothing is allocated per statement except for
// a digest seen for the first time or a statement the slow log writes.
package telemetry

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shardgate/shardgate/internal/router"
)

// DigestStat is one row of SHOW QUERY DIGESTS: the statements of one
// normalized shape run by one user in one database.
type DigestStat struct {
	Digest        uint64 // router.Stmt.Digest
	Text          string // the normalized statement, literals replaced by ?
	User, DB      string
	Count         uint64
	Errors        uint64
	RowsSent      uint64
	RowsAffected  uint64
	ShardsTouched uint64 // summed over the statements (a sharded statement's parts' shards)
	Total, Max    time.Duration
	Mean          time.Duration
	P50, P99      time.Duration
	FirstSeen     time.Time
	LastSeen      time.Time
}

// Config configures a Recorder (config.Telemetry).
type Config struct {
	// Enabled: record statements at all. Off, the frontend does not even
	// read the clock (for measuring what telemetry costs).
	Enabled bool
	// Digests: keep the per-digest table; MaxDigests bounds it.
	Digests    bool
	MaxDigests int
	SlowLog    SlowLogConfig
}

// SlowLogConfig configures the slow query log.
type SlowLogConfig struct {
	File         string // "": no slow log
	Threshold    time.Duration
	SampleRate   float64 // 0..1: the fraction of all statements logged too
	MaskLiterals bool
}

// OverflowText is the Text of the row that counts the statements of the
// digests beyond telemetry.max_digests.
const OverflowText = "(other statements: the digest table is full, see telemetry.max_digests)"

// NoStatementText is the Text of the row (digest 0) of the commands that
// failed before they named a statement: a COM_STMT_EXECUTE of a statement
// id the session does not have.
const NoStatementText = "(no statement: unknown prepared statement id)"

// EmptyStatementText is the Text of the digest of statements with no
// token: empty, or only comments (the mariadb CLI sends a file's comments
// that way with --comments; the server answers 1065, which the CLI
// ignores).
const EmptyStatementText = "(empty statement: only comments or nothing)"

// MaxDigestText bounds the text a digest row keeps (as ProxySQL's
// mysql-query_digests_max_digest_length).
const MaxDigestText = 2 << 10

// Recorder holds the digests, the slow log and the statement metrics.
type Recorder struct {
	enabled    bool
	digests    atomic.Bool
	maxDigests atomic.Int64
	tab        atomic.Pointer[table]

	slow        *slowLog
	threshold   atomic.Int64  // ns; statements over it are slow
	sampleBelow atomic.Uint64 // a statement whose random draw is below it is logged
	mask        atomic.Bool

	m   *Metrics
	log *slog.Logger
	// clusters maps cluster names to their metrics: copied on write
	// (under mu, at a cluster's first statement), read with an atomic load.
	mu       sync.Mutex
	clusters atomic.Pointer[map[string]*ClusterStats]
}

// New makes a Recorder and registers its metrics with reg (if not nil).
// It opens the slow log file when one is configured.
func New(cfg Config, reg prometheus.Registerer, log *slog.Logger) (*Recorder, error) {
	r := &Recorder{enabled: cfg.Enabled, m: newMetrics(reg), log: log}
	r.clusters.Store(&map[string]*ClusterStats{})
	r.tab.Store(newTable(tableGens.Add(1)))
	r.Configure(cfg)
	if cfg.Enabled && cfg.SlowLog.File != "" {
		sl, err := openSlowLog(cfg.SlowLog.File, r.m.SlowDropped, log)
		if err != nil {
			return nil, err
		}
		r.slow = sl
	}
	return r, nil
}

// Configure applies the settings a running proxy can change: the digest
// switch and bound, the slow log's threshold, sample rate and masking.
// Enabled and the slow log's file are fixed at New; Configure (a reload)
// reopens that file if it was renamed away or removed (logrotate), before
// the next record.
func (r *Recorder) Configure(cfg Config) {
	r.digests.Store(cfg.Digests)
	r.maxDigests.Store(int64(cfg.MaxDigests))
	r.threshold.Store(int64(cfg.SlowLog.Threshold))
	r.sampleBelow.Store(sampleBound(cfg.SlowLog.SampleRate))
	r.mask.Store(cfg.SlowLog.MaskLiterals)
	if r.slow != nil {
		r.slow.reopen()
	}
}

// MaskLiterals reports whether statement text is shown only as its digest
// text (telemetry.slow_log.mask_literals): in the slow log, the sessions'
// activity and trace spans.
func (r *Recorder) MaskLiterals() bool { return r != nil && r.mask.Load() }

// sampleBound turns a rate into the bound a uniform uint64 draw must be
// under.
func sampleBound(rate float64) uint64 {
	switch {
	case rate <= 0:
		return 0
	case rate >= 1:
		return ^uint64(0)
	}
	return uint64(rate * (1 << 63) * 2)
}

// Enabled reports whether statements are recorded at all.
func (r *Recorder) Enabled() bool { return r != nil && r.enabled }

// Close stops the slow log writer once it has written what it holds.
func (r *Recorder) Close() error {
	if r.slow == nil {
		return nil
	}
	return r.slow.close()
}

// Digests returns every digest's statistics, in no particular order.
func (r *Recorder) Digests() []DigestStat {
	return r.tab.Load().stats()
}

// ResetDigests forgets every digest (RESET QUERY DIGESTS). Sessions
// holding entries of the old table notice at their next statement and drop
// them; the old table itself is referenced by no session.
func (r *Recorder) ResetDigests() {
	r.tab.Store(newTable(tableGens.Add(1)))
}

// tableGens numbers the digest tables of the process, every Recorder's:
// a Session whose cache holds entries of one table must not take them
// for another's, also when it moves from one Recorder to another (the
// frontend pools them among sessions, and a process may run several
// Recorders).
var tableGens atomic.Uint64

// Cluster returns the statement metrics of a cluster ("*" for the
// statements that ran on several), made at first use. Once made, it is
// found without a lock, by any session.
func (r *Recorder) Cluster(name string) *ClusterStats {
	if cs := (*r.clusters.Load())[name]; cs != nil {
		return cs
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := *r.clusters.Load()
	if cs := old[name]; cs != nil {
		return cs
	}
	cs := r.m.cluster(name)
	m := make(map[string]*ClusterStats, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[name] = cs
	r.clusters.Store(&m)
	return cs
}

// Statement is what the frontend tells about one client statement. Its
// byte slices and strings are only read during Record.
type Statement struct {
	Digest   uint64
	Kind     router.Kind
	User, DB string
	// SQL is the statement's text (a prepared statement's: the PREPARE's),
	// read for a digest seen for the first time and by the slow log.
	SQL      []byte
	Start    time.Time
	Duration time.Duration
	RowsSent uint64
	Affected uint64
	ErrCode  uint16
	ErrMsg   string
	Shards   int
	Backend  string
	// Cluster is the metrics of the cluster that ran it (nil: none did,
	// the proxy answered itself), ClusterName its name for the slow log.
	Cluster     *ClusterStats
	ClusterName string
}

// Fetched adds the rows a COM_STMT_FETCH of st's cursor sent to st's
// digest row (only the rows: the fetch is not a statement of its own), so
// that a cursor's rows count as those of a statement without one do. A
// row the table no longer has (reset since) is not made again.
func (r *Recorder) Fetched(sess *Session, st *Statement, rows uint64) {
	if rows == 0 || !r.digests.Load() {
		return
	}
	if e := sess.find(r, st); e != nil {
		e.rowsSent.Add(rows)
	}
}

// Record accounts for one statement; sess is the recording session's
// cache.
func (r *Recorder) Record(sess *Session, st *Statement) {
	d := st.Duration
	if cs := st.Cluster; cs != nil {
		cs.observe(st.Kind, d.Seconds())
	}
	if st.ErrCode != 0 {
		r.m.errorCounter(st.ErrCode).Inc()
		if cs := st.Cluster; cs != nil {
			cs.errors.Add(1)
		}
	}
	if r.digests.Load() {
		e := sess.entry(r, st)
		e.add(st)
	}
	slow := int64(d) >= r.threshold.Load()
	if slow {
		r.m.Slow.Inc()
	}
	if r.slow != nil && (slow || sess.draw() < r.sampleBelow.Load()) {
		r.slow.write(st, r.mask.Load())
	}
}

// Session is a client session's recording state: a direct-mapped cache
// of the digest entries it used and a random source for sampling. Its
// zero value is ready; it is used by one goroutine at a time, and may
// serve another session, or another Recorder, afterwards: the cache is
// keyed by digest, user and database, and emptied when it finds another
// table than its entries' (tableGens).
type Session struct {
	cache [sessionCache]cached
	gen   uint64 // the generation of the table the cached entries are of
	rng   uint64
}

const sessionCache = 16 // a power of two

type cached struct {
	digest   uint64
	user, db string
	e        *entry
}

// entry returns the entry of st's digest, user and database, from the
// cache when it is there, else from the table (made if new).
func (s *Session) entry(r *Recorder, st *Statement) *entry {
	tab := s.table(r)
	c := &s.cache[st.Digest&(sessionCache-1)]
	if c.e != nil && c.digest == st.Digest && c.user == st.User && c.db == st.DB {
		return c.e
	}
	e := tab.lookup(r, st)
	*c = cached{digest: st.Digest, user: st.User, db: st.DB, e: e}
	return e
}

// find is entry without making one: nil when the table has no row of st.
func (s *Session) find(r *Recorder, st *Statement) *entry {
	tab := s.table(r)
	c := &s.cache[st.Digest&(sessionCache-1)]
	if c.e != nil && c.digest == st.Digest && c.user == st.User && c.db == st.DB {
		return c.e
	}
	return tab.find(st)
}

// table returns the current table, first emptying the cache when it holds
// entries of a table RESET QUERY DIGESTS replaced, so that the session
// keeps nothing of it alive.
func (s *Session) table(r *Recorder) *table {
	tab := r.tab.Load()
	if s.gen != tab.gen {
		s.cache = [sessionCache]cached{}
		s.gen = tab.gen
	}
	return tab
}

// draw returns a pseudo-random number (xorshift64*), for sampling.
func (s *Session) draw() uint64 {
	if s.rng == 0 {
		s.rng = uint64(time.Now().UnixNano()) | 1
	}
	s.rng ^= s.rng >> 12
	s.rng ^= s.rng << 25
	s.rng ^= s.rng >> 27
	return s.rng * 2685821657736338717
}
