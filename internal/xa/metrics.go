package xa

import "github.com/prometheus/client_golang/prometheus"

// Metrics of atomic transactions and their recovery.
type Metrics struct {
	// Commits counts the commits of transactions that reached several
	// shards of an atomic schema, by kind: one_phase (one shard wrote)
	// or two_phase.
	Commits *prometheus.CounterVec
	// Aborts counts two-phase commits that rolled back instead.
	Aborts  prometheus.Counter
	Prepare prometheus.Histogram // XA END + XA PREPARE on every participant
	Commit  prometheus.Histogram // the decision and the XA COMMITs
	// InDoubt and InDoubtOldest are what the last recovery pass left
	// prepared: how many branches, and how long the oldest has been seen.
	InDoubt       prometheus.Gauge
	InDoubtOldest prometheus.Gauge
	Recoveries    *prometheus.CounterVec // by outcome: commit, rollback, failed
}

var latencyBuckets = []float64{.0002, .0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}

// NewMetrics creates the metrics and registers them with reg (if not nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardgate_xa_commits_total",
			Help: "Commits of transactions over several shards of a cross_shard_writes: atomic schema, by kind (one_phase: one shard wrote; two_phase)."},
			[]string{"kind"}),
		Aborts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardgate_xa_commit_aborts_total",
			Help: "Two-phase commits that rolled back instead (a participant failed to prepare, or the decision failed)."}),
		Prepare: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "shardgate_xa_prepare_seconds", Help: "XA END and XA PREPARE on every participant of a two-phase commit.",
			Buckets: latencyBuckets}),
		Commit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "shardgate_xa_commit_seconds", Help: "The decision and the XA COMMITs of a two-phase commit.",
			Buckets: latencyBuckets}),
		InDoubt: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shardgate_xa_in_doubt_branches",
			Help: "Prepared XA branches of shardgate that the last recovery pass left unresolved."}),
		InDoubtOldest: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shardgate_xa_in_doubt_oldest_seconds",
			Help: "How long the oldest unresolved prepared branch has been seen by recovery."}),
		Recoveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardgate_xa_recoveries_total",
			Help: "Prepared XA branches recovery resolved, by outcome (commit, rollback) or failed to."},
			[]string{"outcome"}),
	}
	if reg != nil {
		reg.MustRegister(m.Commits, m.Aborts, m.Prepare, m.Commit, m.InDoubt, m.InDoubtOldest, m.Recoveries)
	}
	return m
}
