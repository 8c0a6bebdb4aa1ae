package telemetry

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/shardgate/shardgate/internal/router"
)

func newTestRecorder(t *testing.T, cfg Config) (*Recorder, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	r, err := New(cfg, reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r, reg
}

func stmt(sql string, d time.Duration) *Statement {
	st := router.Classify([]byte(sql))
	return &Statement{Digest: st.Digest, Kind: st.Kind, User: "app", DB: "db", SQL: []byte(sql), Start: time.Now(), Duration: d}
}

// TestHistogramPrecision: every value is within 3.2% of its bucket's
// midpoint from 1µs to 100s, and the buckets are in order.
func TestHistogramPrecision(t *testing.T) {
	prev := -1
	for ns := int64(1000); ns < 100e9; ns = ns*1013/1000 + 1 {
		b := bucketOf(ns)
		if b < prev {
			t.Fatalf("bucket of %d is %d, before %d", ns, b, prev)
		}
		prev = b
		mid := bucketMid(b)
		if err := float64(mid-ns) / float64(ns); err > 0.032 || err < -0.032 {
			t.Fatalf("%dns: bucket %d's midpoint %d is %.1f%% off", ns, b, mid, 100*err)
		}
	}
	if b := bucketOf(1 << 50); b != histBuckets-1 {
		t.Errorf("a huge value goes to bucket %d, want the last", b)
	}
	if b := bucketOf(-5); b != 0 {
		t.Errorf("a negative value goes to bucket %d", b)
	}
}

// TestHistogramQuantiles checks p50 and p99 against known distributions.
func TestHistogramQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name string
		gen  func() time.Duration
	}{
		{"uniform 1-100ms", func() time.Duration { return time.Millisecond + time.Duration(rng.Int64N(int64(99*time.Millisecond))) }},
		{"exponential mean 2ms", func() time.Duration { return time.Duration(rng.ExpFloat64() * float64(2*time.Millisecond)) }},
		{"bimodal 50µs/40ms", func() time.Duration {
			if rng.IntN(100) < 97 {
				return 50*time.Microsecond + time.Duration(rng.Int64N(5000))
			}
			return 40 * time.Millisecond
		}},
	} {
		var h Histogram
		vals := make([]time.Duration, 200000)
		for i := range vals {
			vals[i] = tc.gen()
			h.Record(vals[i])
		}
		slices.Sort(vals)
		got := h.Quantiles(0.5, 0.99)
		for i, q := range []float64{0.5, 0.99} {
			want := vals[int(q*float64(len(vals)))-1]
			if err := float64(got[i]-want) / float64(want); err > 0.035 || err < -0.035 {
				t.Errorf("%s: p%v = %v, want %v (%.1f%% off)", tc.name, q*100, got[i], want, 100*err)
			}
		}
	}
	var empty Histogram
	if q := empty.Quantiles(0.5); q[0] != 0 {
		t.Errorf("empty histogram: p50 %v", q[0])
	}
}

// TestDigestTableConcurrent: sessions recording the same and different
// digests at once (run it with -race) count every statement.
func TestDigestTableConcurrent(t *testing.T) {
	r, reg := newTestRecorder(t, Config{Enabled: true, Digests: true, MaxDigests: 100, SlowLog: SlowLogConfig{Threshold: time.Hour}})
	cs := r.Cluster("main")
	const sessions, per = 8, 2000
	var wg sync.WaitGroup
	for g := 0; g < sessions; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sess Session
			for i := 0; i < per; i++ {
				st := stmt(fmt.Sprintf("SELECT c FROM t%d WHERE id = %d", i%3, i), time.Duration(i)*time.Microsecond)
				st.RowsSent, st.Affected, st.Shards, st.Cluster = 1, 2, 3, cs
				if i%10 == 0 {
					st.ErrCode = 1064
				}
				r.Record(&sess, st)
				cs.Ran()
			}
		}()
	}
	wg.Wait()
	ds := r.Digests()
	if len(ds) != 3 {
		t.Fatalf("%d digests, want 3: %+v", len(ds), ds)
	}
	var count, errs uint64
	for _, d := range ds {
		count += d.Count
		errs += d.Errors
		if d.RowsSent != d.Count || d.RowsAffected != 2*d.Count || d.ShardsTouched != 3*d.Count {
			t.Errorf("%s: rows %d, affected %d, shards %d for %d statements", d.Text, d.RowsSent, d.RowsAffected, d.ShardsTouched, d.Count)
		}
		if d.Max != time.Duration(per-1)*time.Microsecond && d.Max != time.Duration(per-2)*time.Microsecond && d.Max != time.Duration(per-3)*time.Microsecond {
			t.Errorf("%s: max %v", d.Text, d.Max)
		}
		if d.P50 <= 0 || d.P50 > d.P99 || d.P99 > d.Max || d.Mean <= 0 {
			t.Errorf("%s: p50 %v, p99 %v, max %v, mean %v", d.Text, d.P50, d.P99, d.Max, d.Mean)
		}
		if d.FirstSeen.IsZero() || d.LastSeen.Before(d.FirstSeen) || d.User != "app" || d.DB != "db" {
			t.Errorf("%+v", d)
		}
	}
	if count != sessions*per || errs != sessions*per/10 {
		t.Errorf("count %d, errors %d; want %d, %d", count, errs, sessions*per, sessions*per/10)
	}
	if n := counterValue(r.m.Errors.WithLabelValues("1064")); n != sessions*per/10 {
		t.Errorf("errors metric %v", n)
	}
	if n := counterValue(r.m.Backend.WithLabelValues("main")); n != sessions*per {
		t.Errorf("backend statements metric %v", n)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "shardgate_statement_duration_seconds" {
			if len(mf.Metric) != 1 || mf.Metric[0].Histogram.GetSampleCount() != sessions*per {
				t.Errorf("duration series: %v", mf)
			}
		}
	}
}

// TestDigestTableResetAndBound: RESET forgets every digest, also in a
// session's cache; past max_digests statements count in the overflow row.
func TestDigestTableResetAndBound(t *testing.T) {
	r, _ := newTestRecorder(t, Config{Enabled: true, Digests: true, MaxDigests: 2, SlowLog: SlowLogConfig{Threshold: time.Hour}})
	var sess Session
	for _, q := range []string{"SELECT 1", "SELECT a FROM t", "SELECT b FROM t", "SELECT c FROM t", "SELECT 2"} {
		r.Record(&sess, stmt(q, time.Millisecond))
	}
	byText := map[string]uint64{}
	for _, d := range r.Digests() {
		byText[d.Text] = d.Count
	}
	want := map[string]uint64{"SELECT ?": 2, "SELECT a FROM t": 1, OverflowText: 2}
	if fmt.Sprint(byText) != fmt.Sprint(want) {
		t.Errorf("digests %v, want %v", byText, want)
	}
	r.ResetDigests()
	if ds := r.Digests(); len(ds) != 0 {
		t.Fatalf("after reset: %+v", ds)
	}
	r.Record(&sess, stmt("SELECT 3", time.Millisecond)) // cached in sess before the reset
	if ds := r.Digests(); len(ds) != 1 || ds[0].Count != 1 || ds[0].Text != "SELECT ?" {
		t.Errorf("after reset and one statement: %+v", ds)
	}
	r.Configure(Config{Digests: false, SlowLog: SlowLogConfig{Threshold: time.Hour}})
	r.Record(&sess, stmt("SELECT 4", time.Millisecond))
	if ds := r.Digests(); ds[0].Count != 1 {
		t.Errorf("digests off, still counted: %+v", ds)
	}
}

// TestSlowLog: statements over the threshold, and a sample of the others,
// are written as JSON lines, masked when asked.
func TestSlowLog(t *testing.T) {
	file := filepath.Join(t.TempDir(), "slow.log")
	r, _ := newTestRecorder(t, Config{Enabled: true, Digests: true, MaxDigests: 10,
		SlowLog: SlowLogConfig{File: file, Threshold: 100 * time.Millisecond}})
	var sess Session
	fast := stmt("SELECT c FROM t WHERE id = 1", time.Millisecond)
	slow := stmt("SELECT SLEEP(0.2) FROM t WHERE name = 'secret'", 200*time.Millisecond)
	slow.ErrCode, slow.ErrMsg, slow.Backend, slow.ClusterName, slow.Shards, slow.RowsSent = 1317, "interrupted", "10.0.0.1:3306", "main", 1, 1
	r.Record(&sess, fast)
	r.Record(&sess, slow)
	r.Configure(Config{Digests: true, MaxDigests: 10, SlowLog: SlowLogConfig{Threshold: 100 * time.Millisecond, SampleRate: 1, MaskLiterals: true}})
	r.Record(&sess, fast)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []SlowRecord
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec SlowRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		recs = append(recs, rec)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2: %+v", len(recs), recs)
	}
	s := recs[0]
	if s.Text != "SELECT SLEEP(0.2) FROM t WHERE name = 'secret'" || s.DurationSec != 0.2 || s.ErrorCode != 1317 || s.Error != "interrupted" ||
		s.User != "app" || s.DB != "db" || s.Backend != "10.0.0.1:3306" || s.Cluster != "main" || s.Shards != 1 || s.RowsSent != 1 ||
		s.Kind != "select" || s.Digest != DigestHex(slow.Digest) || s.Time.IsZero() {
		t.Errorf("slow record %+v", s)
	}
	if recs[1].Text != "SELECT c FROM t WHERE id = ?" {
		t.Errorf("sampled, masked record %+v", recs[1])
	}
	if n := counterValue(r.m.Slow); n != 1 {
		t.Errorf("slow statements metric %v", n)
	}
}

// BenchmarkRecord is the cost of recording a statement whose digest the
// session's cache holds.
func BenchmarkRecord(b *testing.B) {
	r, err := New(Config{Enabled: true, Digests: true, MaxDigests: 100, SlowLog: SlowLogConfig{Threshold: time.Hour}}, prometheus.NewRegistry(), slog.Default())
	if err != nil {
		b.Fatal(err)
	}
	st := &Statement{Digest: 42, Kind: router.KindSelect, User: "app", DB: "db", SQL: []byte("SELECT 1"), Start: time.Now(), Duration: time.Millisecond, RowsSent: 1, Cluster: r.Cluster("main")}
	var sess Session
	b.ReportAllocs()
	for b.Loop() {
		r.Record(&sess, st)
	}
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.Counter.GetValue()
}
