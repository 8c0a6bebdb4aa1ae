package telemetry

import (
	"math"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// ClusterTotal is what a cluster's statements cost since start, summed
// over statement kinds: the counters behind the status page's charts.
// Two totals taken a few seconds apart give the rate and the latency
// quantiles of the statements in between (Since).
type ClusterTotal struct {
	Name   string // a cluster, "*" for statements over several, "-" for none
	Count  uint64 // statements
	Errors uint64 // of them, answered with an error
	// Buckets are the cumulative counts at DurationBuckets' bounds: how
	// many statements took at most each bound, as Prometheus keeps them.
	Buckets []uint64
}

// ClusterTotals reads every cluster's counters, by name. It reads the
// metrics the statements already update (atomics, and the histograms as
// a scrape does), so that taking it costs the statement path nothing;
// call it from a sampler, not per statement.
func (r *Recorder) ClusterTotals() []ClusterTotal {
	m := *r.clusters.Load()
	out := make([]ClusterTotal, 0, len(m))
	for _, cs := range m {
		out = append(out, cs.total())
	}
	slices.SortFunc(out, func(a, b ClusterTotal) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (cs *ClusterStats) total() ClusterTotal {
	t := ClusterTotal{Name: cs.name, Errors: cs.errors.Load(), Buckets: make([]uint64, len(DurationBuckets))}
	var m dto.Metric
	for i := range cs.duration {
		o := cs.duration[i].Load()
		if o == nil {
			continue
		}
		h, ok := o.Observer.(prometheus.Metric)
		if !ok {
			continue
		}
		m.Reset()
		if err := h.Write(&m); err != nil || m.Histogram == nil {
			continue
		}
		t.Count += m.Histogram.GetSampleCount()
		for _, b := range m.Histogram.GetBucket() {
			if j := slices.Index(DurationBuckets, b.GetUpperBound()); j >= 0 {
				t.Buckets[j] += b.GetCumulativeCount()
			}
		}
	}
	return t
}

// Since is what happened between prev (an earlier total of the same
// cluster; the zero total for a cluster seen for the first time) and t:
// the statements, errors and bucket counts in between. Counters never go
// back, but should one seem to (a cluster removed and added again), the
// interval counts from zero.
func (t ClusterTotal) Since(prev ClusterTotal) ClusterTotal {
	if prev.Count > t.Count || prev.Errors > t.Errors || len(prev.Buckets) != len(t.Buckets) {
		prev = ClusterTotal{Buckets: make([]uint64, len(t.Buckets))}
	}
	d := ClusterTotal{Name: t.Name, Count: t.Count - prev.Count, Errors: t.Errors - prev.Errors,
		Buckets: make([]uint64, len(t.Buckets))}
	for i := range t.Buckets {
		if t.Buckets[i] >= prev.Buckets[i] {
			d.Buckets[i] = t.Buckets[i] - prev.Buckets[i]
		}
	}
	return d
}

// Quantile estimates the duration, in seconds, under which the fraction
// q (0..1) of the total's statements fall, interpolating linearly within
// the bucket the rank falls in as Prometheus's histogram_quantile does.
// Statements beyond the last bound count at that bound. NaN when there
// are no statements.
func (t ClusterTotal) Quantile(q float64) float64 {
	if t.Count == 0 || math.IsNaN(q) {
		return math.NaN()
	}
	q = min(max(q, 0), 1)
	rank := q * float64(t.Count)
	lower, below := 0.0, uint64(0)
	for i, bound := range DurationBuckets {
		c := t.Buckets[i]
		if float64(c) >= rank && c > below {
			return lower + (bound-lower)*(rank-float64(below))/float64(c-below)
		}
		lower, below = bound, c
	}
	return DurationBuckets[len(DurationBuckets)-1]
}
