package backend

import "github.com/prometheus/client_golang/prometheus"

// waitBuckets span a wait from a release handed over at once (tens of µs)
// to the default wait_timeout (5 s).
var waitBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

func newWaitHistogram(pool, addr string) prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:        "shardgate_backend_pool_wait_seconds",
		Help:        "Time statements waited for a backend connection, observed only for those that had to wait (all max_open in use): granted, timed out or cancelled.",
		Buckets:     waitBuckets,
		ConstLabels: prometheus.Labels{"pool": pool, "addr": addr},
	})
}

// PoolCollector exports a pool's gauges and counters, read at scrape time
// so the hot path pays nothing for them, and its wait-time histogram.
type PoolCollector struct {
	pool                                       *Pool
	open, idle, waiting, max                   *prometheus.Desc
	dials, dialErrors, waitTimeouts, discarded *prometheus.Desc
	waits                                      *prometheus.Desc
	lanes, laneInFlight, pipelined             *prometheus.Desc
}

// NewPoolCollector returns a collector for p.
func NewPoolCollector(p *Pool) *PoolCollector {
	labels := prometheus.Labels{"pool": p.Name, "addr": p.dial.Addr}
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("shardgate_backend_pool_"+name, help, nil, labels)
	}
	return &PoolCollector{pool: p,
		open:         d("connections_open", "Backend connections open (in use and idle)."),
		idle:         d("connections_idle", "Idle backend connections."),
		waiting:      d("waiters", "Statements waiting for a backend connection."),
		max:          d("connections_max", "The pool's max_open: connections_open at this value means saturated."),
		dials:        d("dials_total", "Backend connections dialed."),
		dialErrors:   d("dial_errors_total", "Backend connection attempts that failed."),
		waits:        d("waits_total", "Statements that queued for a connection because all max_open were in use."),
		waitTimeouts: d("wait_timeouts_total", "Statements that timed out waiting for a connection."),
		discarded:    d("discarded_total", "Backend connections discarded as broken."),
		lanes:        d("pipeline_connections", "Connections carrying several sessions' reads at once (pool.pipeline_connections)."),
		laneInFlight: d("pipeline_in_flight", "Reads written to pipelining connections whose answers are not read yet."),
		pipelined:    d("pipelined_total", "Reads answered on pipelining connections."),
	}
}

// Describe implements prometheus.Collector.
func (c *PoolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.open, c.idle, c.waiting, c.max, c.dials, c.dialErrors, c.waits, c.waitTimeouts, c.discarded, c.lanes, c.laneInFlight, c.pipelined} {
		ch <- d
	}
	c.pool.waitSeconds.Describe(ch)
}

// Collect implements prometheus.Collector.
func (c *PoolCollector) Collect(ch chan<- prometheus.Metric) {
	open, idle, waiting := c.pool.Open()
	st := &c.pool.Stats
	ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(open))
	ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, float64(idle))
	ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(waiting))
	ch <- prometheus.MustNewConstMetric(c.max, prometheus.GaugeValue, float64(c.pool.config().MaxOpen))
	ch <- prometheus.MustNewConstMetric(c.dials, prometheus.CounterValue, float64(st.Dials.Load()))
	ch <- prometheus.MustNewConstMetric(c.dialErrors, prometheus.CounterValue, float64(st.DialErrors.Load()))
	ch <- prometheus.MustNewConstMetric(c.waits, prometheus.CounterValue, float64(st.Waits.Load()))
	ch <- prometheus.MustNewConstMetric(c.waitTimeouts, prometheus.CounterValue, float64(st.Timeouts.Load()))
	ch <- prometheus.MustNewConstMetric(c.discarded, prometheus.CounterValue, float64(st.Discarded.Load()))
	lanes, inFlight := c.pool.Lanes()
	ch <- prometheus.MustNewConstMetric(c.lanes, prometheus.GaugeValue, float64(lanes))
	ch <- prometheus.MustNewConstMetric(c.laneInFlight, prometheus.GaugeValue, float64(inFlight))
	ch <- prometheus.MustNewConstMetric(c.pipelined, prometheus.CounterValue, float64(st.Pipelined.Load()))
	c.pool.waitSeconds.Collect(ch)
}

// ServerCollector exports what the health checks and the router know about
// each server of a cluster, read at scrape time.
type ServerCollector struct {
	cluster                                                  *Cluster
	writer, up, readOnly, replicating, lag, breaker, offline *prometheus.Desc
	outstanding                                              *prometheus.Desc
}

// NewServerCollector returns a collector for c's servers.
func NewServerCollector(c *Cluster) *ServerCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("shardgate_backend_server_"+name, help, []string{"addr"}, prometheus.Labels{"cluster": c.Name})
	}
	return &ServerCollector{cluster: c,
		writer:      d("writer", "1 for the server that takes writes now."),
		up:          d("up", "1 when the last health check succeeded."),
		readOnly:    d("read_only", "1 when the last check found read_only ON."),
		replicating: d("replicating", "1 when both replication threads run."),
		lag:         d("replication_lag_seconds", "Seconds_Behind_Master at the last check; -1 when unknown."),
		breaker:     d("breaker_open", "1 while the circuit breaker keeps statements away."),
		offline:     d("offline", "1 while the server is drained (state: offline)."),
		outstanding: d("statements_running", "Statements running on the server now."),
	}
}

// Describe implements prometheus.Collector.
func (c *ServerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.writer, c.up, c.readOnly, c.replicating, c.lag, c.breaker, c.offline, c.outstanding} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *ServerCollector) Collect(ch chan<- prometheus.Metric) {
	w := c.cluster.Writer()
	gauge := func(d *prometheus.Desc, v float64, addr string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, addr)
	}
	for _, s := range c.cluster.Servers() {
		h, a := s.Health(), s.Addr()
		lag := -1.0
		if h.Lag >= 0 {
			lag = h.Lag.Seconds()
		}
		gauge(c.writer, b2f(s == w), a)
		gauge(c.up, b2f(h.Up), a)
		gauge(c.readOnly, b2f(h.ReadOnly), a)
		gauge(c.replicating, b2f(h.Replicating), a)
		gauge(c.lag, lag, a)
		gauge(c.breaker, b2f(s.BreakerOpen()), a)
		gauge(c.offline, b2f(s.Offline()), a)
		gauge(c.outstanding, float64(s.Outstanding()), a)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
