package backend

import "github.com/prometheus/client_golang/prometheus"

// PoolCollector exports a pool's gauges and counters, read at scrape time
// so the hot path pays nothing for them.
type PoolCollector struct {
	pool                                       *Pool
	open, idle, waiting                        *prometheus.Desc
	dials, dialErrors, waitTimeouts, discarded *prometheus.Desc
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
		dials:        d("dials_total", "Backend connections dialed."),
		dialErrors:   d("dial_errors_total", "Backend connection attempts that failed."),
		waitTimeouts: d("wait_timeouts_total", "Statements that timed out waiting for a connection."),
		discarded:    d("discarded_total", "Backend connections discarded as broken."),
	}
}

// Describe implements prometheus.Collector.
func (c *PoolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.open, c.idle, c.waiting, c.dials, c.dialErrors, c.waitTimeouts, c.discarded} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *PoolCollector) Collect(ch chan<- prometheus.Metric) {
	open, idle, waiting := c.pool.Open()
	st := &c.pool.Stats
	ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(open))
	ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, float64(idle))
	ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(waiting))
	ch <- prometheus.MustNewConstMetric(c.dials, prometheus.CounterValue, float64(st.Dials.Load()))
	ch <- prometheus.MustNewConstMetric(c.dialErrors, prometheus.CounterValue, float64(st.DialErrors.Load()))
	ch <- prometheus.MustNewConstMetric(c.waitTimeouts, prometheus.CounterValue, float64(st.Timeouts.Load()))
	ch <- prometheus.MustNewConstMetric(c.discarded, prometheus.CounterValue, float64(st.Discarded.Load()))
}
