package telemetry

import (
	"math"
	"testing"
	"time"
)

// TestClusterTotals: the totals count each cluster's statements and
// errors over every kind, and the difference of two totals gives the
// interval's count and quantiles, interpolated within the histogram's
// buckets.
func TestClusterTotals(t *testing.T) {
	r, _ := newTestRecorder(t, Config{Enabled: true})
	var sess Session
	run := func(cluster, sql string, d time.Duration, errCode uint16) {
		st := stmt(sql, d)
		st.Cluster, st.ErrCode = r.Cluster(cluster), errCode
		r.Record(&sess, st)
	}
	for range 90 {
		run("s0", "SELECT 1", 300*time.Microsecond, 0) // (250µs, 500µs]
	}
	for range 10 {
		run("s0", "UPDATE t SET a = 1", 20*time.Millisecond, 1062) // (10ms, 25ms]
	}
	run("s1", "SELECT 2", 30*time.Second, 0) // beyond the last bound
	before := r.ClusterTotals()
	if len(before) != 2 || before[0].Name != "s0" || before[1].Name != "s1" {
		t.Fatalf("totals %+v, want s0 and s1", before)
	}
	s0 := before[0]
	if s0.Count != 100 || s0.Errors != 10 {
		t.Errorf("s0: %d statements, %d errors; want 100, 10", s0.Count, s0.Errors)
	}
	p50, p99 := s0.Quantile(0.5), s0.Quantile(0.99)
	if p50 <= 0.00025 || p50 > 0.0005 {
		t.Errorf("p50 %gs, want within (250µs, 500µs]", p50)
	}
	if p99 <= 0.01 || p99 > 0.025 {
		t.Errorf("p99 %gs, want within (10ms, 25ms]", p99)
	}
	if got := before[1].Quantile(0.5); got != DurationBuckets[len(DurationBuckets)-1] {
		t.Errorf("a statement beyond the last bound: p50 %gs, want the last bound", got)
	}

	for range 5 {
		run("s0", "SELECT 1", 3*time.Millisecond, 0) // (2.5ms, 5ms]
	}
	after := r.ClusterTotals()
	d := after[0].Since(s0)
	if d.Count != 5 || d.Errors != 0 {
		t.Errorf("interval: %d statements, %d errors; want 5, 0", d.Count, d.Errors)
	}
	if q := d.Quantile(0.5); q <= 0.0025 || q > 0.005 {
		t.Errorf("interval p50 %gs, want within (2.5ms, 5ms]", q)
	}
	if q := after[1].Since(before[1]).Quantile(0.5); !math.IsNaN(q) {
		t.Errorf("an interval without statements has p50 %g, want NaN", q)
	}
	// A total that went back (the cluster made again) counts from zero.
	if d := s0.Since(after[0]); d.Count != s0.Count {
		t.Errorf("a total that went back: %d statements, want %d", d.Count, s0.Count)
	}
}
