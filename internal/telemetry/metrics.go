package telemetry

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shardgate/shardgate/internal/router"
)

// Metrics are the statement metrics on /metrics. Their label values are
// bounded: statement kinds, cluster names, MySQL error codes.
type Metrics struct {
	Duration    *prometheus.HistogramVec // {kind, cluster}
	Errors      *prometheus.CounterVec   // {code}
	Slow        prometheus.Counter
	Backend     *prometheus.CounterVec // {cluster}
	SlowDropped prometheus.Counter

	codes sync.Map // uint16 -> prometheus.Counter
}

// DurationBuckets are the bounds of shardgate_statement_duration_seconds:
// 100µs to 10s, dense around the milliseconds a latency SLO is about.
var DurationBuckets = []float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

func newMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "shardgate_statement_duration_seconds",
			Help:    "Client statements (COM_QUERY, COM_STMT_EXECUTE) from the command read to its answer's last byte written, by statement kind and the cluster that ran it (* for several shards).",
			Buckets: DurationBuckets,
		}, []string{"kind", "cluster"}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardgate_statement_errors_total",
			Help: "Client statements answered with an error, by MySQL error number.",
		}, []string{"code"}),
		Slow: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardgate_slow_statements_total",
			Help: "Client statements over telemetry.slow_log.threshold.",
		}),
		Backend: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardgate_backend_statements_total",
			Help: "Statements and statement parts each cluster ran (per-shard traffic).",
		}, []string{"cluster"}),
		SlowDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardgate_slow_log_dropped_total",
			Help: "Slow log records lost: the writer fell behind, or the file could not be written (a full disk, see the log).",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.Duration, m.Errors, m.Slow, m.Backend, m.SlowDropped)
	}
	return m
}

// errorCounter returns the counter of an error code, made at first use.
func (m *Metrics) errorCounter(code uint16) prometheus.Counter {
	if c, ok := m.codes.Load(code); ok {
		return c.(prometheus.Counter)
	}
	c, _ := m.codes.LoadOrStore(code, m.Errors.WithLabelValues(strconv.Itoa(int(code))))
	return c.(prometheus.Counter)
}

// kindLabels are the kind label values: router.Kind names in lower case.
var kindLabels = func() []string {
	var l []string
	for k := router.Kind(0); ; k++ {
		name := k.String()
		if strings.HasPrefix(name, "Kind(") {
			return l
		}
		l = append(l, strings.ToLower(name))
	}
}()

// KindLabel is k's name as the kind label and trace spans write it:
// select, insert, ..., in lower case.
func KindLabel(k router.Kind) string {
	if int(k) < len(kindLabels) {
		return kindLabels[k]
	}
	return kindLabels[0]
}

// ClusterStats are a cluster's metric children, resolved at their first
// use and kept, so that recording does no label look-up.
type ClusterStats struct {
	name     string
	vec      *prometheus.HistogramVec
	duration []atomic.Pointer[observer] // by router.Kind
	backend  prometheus.Counter
	// errors counts the statements answered with an error, added only on
	// the error path; the status page's history reads it.
	errors atomic.Uint64
}

type observer struct{ prometheus.Observer }

func (m *Metrics) cluster(name string) *ClusterStats {
	return &ClusterStats{name: name, vec: m.Duration, duration: make([]atomic.Pointer[observer], len(kindLabels)),
		backend: m.Backend.WithLabelValues(name)}
}

// observe records a statement's duration under its kind.
func (cs *ClusterStats) observe(k router.Kind, seconds float64) {
	i := int(k)
	if i >= len(cs.duration) {
		i = 0
	}
	o := cs.duration[i].Load()
	if o == nil {
		// Racing sessions resolve the same child.
		o = &observer{cs.vec.WithLabelValues(kindLabels[i], cs.name)}
		cs.duration[i].Store(o)
	}
	o.Observe(seconds)
}

// Ran counts one statement or statement part the cluster ran.
func (cs *ClusterStats) Ran() { cs.backend.Inc() }
