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

	m       *Metrics
	log     *slog.Logger
	mu      sync.Mutex // guards clusters
	cluster map[string]*ClusterStats
}

// New makes a Recorder and registers its metrics with reg (if not nil).
// It opens the slow log file when one is configured.
func New(cfg Config, reg prometheus.Registerer, log *slog.Logger) (*Recorder, error) {
	r := &Recorder{enabled: cfg.Enabled, m: newMetrics(reg), log: log, cluster: map[string]*ClusterStats{}}
	r.tab.Store(newTable())
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
// Enabled and the slow log's file are fixed at New.
func (r *Recorder) Configure(cfg Config) {
	r.digests.Store(cfg.Digests)
	r.maxDigests.Store(int64(cfg.MaxDigests))
	r.threshold.Store(int64(cfg.SlowLog.Threshold))
	r.sampleBelow.Store(sampleBound(cfg.SlowLog.SampleRate))
	r.mask.Store(cfg.SlowLog.MaskLiterals)
}

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
// holding entries of the old table notice at their next statement.
func (r *Recorder) ResetDigests() {
	r.tab.Store(newTable())
}

// Cluster returns the statement metrics of a cluster ("*" for the
// statements that ran on several), made at first use. A session keeps
// what it gets so that recording does no label look-up.
func (r *Recorder) Cluster(name string) *ClusterStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	cs := r.cluster[name]
	if cs == nil {
		cs = r.m.cluster(name)
		r.cluster[name] = cs
	}
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

// Record accounts for one statement; sess is the recording session's
// cache.
func (r *Recorder) Record(sess *Session, st *Statement) {
	d := st.Duration
	if cs := st.Cluster; cs != nil {
		cs.observe(st.Kind, d.Seconds())
	}
	if st.ErrCode != 0 {
		r.m.errorCounter(st.ErrCode).Inc()
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
// of the digest entries it used and a random source for sampling. It
// lives in the session (its zero value is ready) and is used by its
// goroutine only.
type Session struct {
	cache [sessionCache]cached
	rng   uint64
}

const sessionCache = 16 // a power of two

type cached struct {
	digest   uint64
	user, db string
	e        *entry
	tab      *table
}

// entry returns the entry of st's digest, user and database, from the
// cache when it is there and of the current table.
func (s *Session) entry(r *Recorder, st *Statement) *entry {
	tab := r.tab.Load()
	c := &s.cache[st.Digest&(sessionCache-1)]
	if c.tab == tab && c.digest == st.Digest && c.user == st.User && c.db == st.DB {
		return c.e
	}
	e := tab.lookup(r, st)
	*c = cached{digest: st.Digest, user: st.User, db: st.DB, e: e, tab: tab}
	return e
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
