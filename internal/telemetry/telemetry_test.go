package telemetry

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

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

// TestClusterLookupLockFree: once a cluster's metrics exist, any session
// finds them without the recorder's lock, even while it is held (another
// cluster being added).
func TestClusterLookupLockFree(t *testing.T) {
	r, _ := newTestRecorder(t, Config{Enabled: true})
	names := []string{"s0", "s1", "s2", "s3", "s4"}
	first := map[string]*ClusterStats{}
	for _, n := range names {
		first[n] = r.Cluster(n)
	}
	r.mu.Lock()
	done := make(chan bool)
	go func() {
		same := true
		for _, n := range names {
			same = same && r.Cluster(n) == first[n]
		}
		done <- same
	}()
	select {
	case same := <-done:
		if !same {
			t.Error("a cluster's metrics were made again")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Cluster waited for the recorder's lock for a cluster it knows")
	}
	r.mu.Unlock()
	if n := testing.AllocsPerRun(100, func() { r.Cluster("s3") }); n != 0 {
		t.Errorf("Cluster of a known cluster: %v allocations", n)
	}
}

// TestResetFreesOldTable: after RESET QUERY DIGESTS a session that goes
// on recording keeps nothing of the old table alive, even if a cached
// entry is the old table's overflow row.
func TestResetFreesOldTable(t *testing.T) {
	r, _ := newTestRecorder(t, Config{Enabled: true, Digests: true, MaxDigests: 1000, SlowLog: SlowLogConfig{Threshold: time.Hour}})
	var sess Session
	for i := 0; i < 2000; i++ { // past max_digests: the overflow row gets cached too
		r.Record(&sess, stmt(fmt.Sprintf("SELECT c%d FROM t", i), time.Millisecond))
	}
	freed := make(chan struct{})
	runtime.SetFinalizer(r.tab.Load(), func(*table) { close(freed) })
	r.ResetDigests()
	r.Record(&sess, stmt("SELECT 1", time.Millisecond))
	deadline := time.After(5 * time.Second)
	for {
		runtime.GC()
		select {
		case <-freed:
			runtime.KeepAlive(&sess)
			return
		case <-deadline:
			t.Fatal("the reset table is still reachable (from the session's cache)")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestNoStatementDigest: a command that named no statement is recorded
// under digest 0 with a text that says so, in the table and the slow log.
func TestNoStatementDigest(t *testing.T) {
	file := filepath.Join(t.TempDir(), "slow.log")
	r, _ := newTestRecorder(t, Config{Enabled: true, Digests: true, MaxDigests: 10, SlowLog: SlowLogConfig{File: file, SampleRate: 1, Threshold: time.Hour}})
	var sess Session
	r.Record(&sess, &Statement{User: "app", DB: "db", Start: time.Now(), ErrCode: 1243})
	ds := r.Digests()
	if len(ds) != 1 || ds[0].Digest != 0 || ds[0].Text != NoStatementText || ds[0].Errors != 1 {
		t.Errorf("digests %+v", ds)
	}
	if recs := readSlowLog(t, r, file); len(recs) != 1 || recs[0].Text != NoStatementText {
		t.Errorf("slow log %+v", recs)
	}
}

// TestEmptyStatementDigest: statements without a token (only comments)
// share a digest whose text says so, not an empty text.
func TestEmptyStatementDigest(t *testing.T) {
	r, _ := newTestRecorder(t, Config{Enabled: true, Digests: true, MaxDigests: 10})
	var sess Session
	r.Record(&sess, stmt("-- a comment\n", time.Millisecond))
	r.Record(&sess, stmt("/* another */", time.Millisecond))
	ds := r.Digests()
	if len(ds) != 1 || ds[0].Text != EmptyStatementText || ds[0].Count != 2 {
		t.Errorf("digests %+v, want one row %q counting 2", ds, EmptyStatementText)
	}
}

// TestTextLimits: a digest row keeps at most MaxDigestText of text, a
// slow log record at most MaxSlowLogText, marked truncated, masked or not.
func TestTextLimits(t *testing.T) {
	file := filepath.Join(t.TempDir(), "slow.log")
	r, _ := newTestRecorder(t, Config{Enabled: true, Digests: true, MaxDigests: 10, SlowLog: SlowLogConfig{File: file, SampleRate: 1, Threshold: time.Hour}})
	var sess Session
	huge := "SELECT * FROM t WHERE id IN (" + strings.Repeat("1000, ", 100000) + "1) AND name = 'é" + strings.Repeat("é", 50000) + "'"
	r.Record(&sess, stmt(huge, time.Millisecond))
	r.Configure(Config{Digests: true, MaxDigests: 10, SlowLog: SlowLogConfig{SampleRate: 1, Threshold: time.Hour, MaskLiterals: true}})
	long := "SELECT a" + strings.Repeat(", a", 40000) + " FROM t"
	r.Record(&sess, stmt(long, time.Millisecond))
	cut := 0
	for _, d := range r.Digests() {
		if len(d.Text) > MaxDigestText || !utf8.ValidString(d.Text) {
			t.Errorf("digest text of %d bytes: %.80q...", len(d.Text), d.Text)
		}
		if strings.HasSuffix(d.Text, "...") && strings.HasPrefix(d.Text, "SELECT a, a, a") {
			cut++
		}
	}
	if cut != 1 {
		t.Errorf("the long statement's digest text is not cut: %+v", r.Digests())
	}
	recs := readSlowLog(t, r, file)
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	for _, rec := range recs {
		if !rec.Truncated || len(rec.Text) > MaxSlowLogText || !strings.HasSuffix(rec.Text, "...") || !utf8.ValidString(rec.Text) {
			t.Errorf("slow log text of %d bytes, truncated %v", len(rec.Text), rec.Truncated)
		}
	}
	if !strings.HasPrefix(recs[0].Text, "SELECT * FROM t WHERE id IN (1000, 1000") || !strings.HasPrefix(recs[1].Text, "SELECT a, a, a") {
		t.Errorf("texts %.60q, %.60q", recs[0].Text, recs[1].Text)
	}
}

// TestFetchedRows: the rows a cursor's fetches sent count in its
// statement's digest row, not as statements.
func TestFetchedRows(t *testing.T) {
	r, _ := newTestRecorder(t, Config{Enabled: true, Digests: true, MaxDigests: 10, SlowLog: SlowLogConfig{Threshold: time.Hour}})
	var sess Session
	st := stmt("SELECT c FROM t WHERE id > 5", time.Millisecond)
	r.Record(&sess, st)
	r.Fetched(&sess, st, 7)
	r.Fetched(&sess, st, 3)
	if ds := r.Digests(); len(ds) != 1 || ds[0].Count != 1 || ds[0].RowsSent != 10 {
		t.Errorf("digests %+v", ds)
	}
	r.ResetDigests()
	r.Fetched(&sess, st, 3)
	if ds := r.Digests(); len(ds) != 0 {
		t.Errorf("a fetch after a reset made a row: %+v", ds)
	}
}

// failingWriter fails its writes while fail is set, as a full disk does.
type failingWriter struct {
	mu   sync.Mutex
	fail bool
	buf  bytes.Buffer
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail {
		return 0, syscall.ENOSPC
	}
	return w.buf.Write(p)
}

func (w *failingWriter) set(fail bool) {
	w.mu.Lock()
	w.fail = fail
	w.mu.Unlock()
}

func (w *failingWriter) lines() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Count(w.buf.Bytes(), []byte("\n"))
}

// TestSlowLogWriteFailure: records the file refuses are counted as
// dropped, the failure is logged once, and writing resumes when the file
// takes records again.
func TestSlowLogWriteFailure(t *testing.T) {
	var logged bytes.Buffer
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logged}, nil))
	dropped := prometheus.NewCounter(prometheus.CounterOpts{Name: "dropped"})
	f, err := os.Create(filepath.Join(t.TempDir(), "slow.log"))
	if err != nil {
		t.Fatal(err)
	}
	w := &failingWriter{fail: true}
	sl := newSlowLog(f.Name(), f, w, dropped, log)
	go sl.run()
	st := stmt("SELECT SLEEP(1)", time.Second)
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s", what)
			}
		}
	}
	for i := 0; i < 10; i++ {
		sl.write(st, false)
	}
	waitFor("10 dropped records", func() bool { return counterValue(dropped) == 10 })
	w.set(false)
	for i := 0; i < 5; i++ {
		sl.write(st, false)
	}
	waitFor("5 records written", func() bool { return w.lines() == 5 })
	if err := sl.close(); err != nil {
		t.Fatal(err)
	}
	logMu.Lock()
	out := logged.String()
	logMu.Unlock()
	if n := strings.Count(out, "slow log write failed"); n != 1 {
		t.Errorf("the failure logged %d times:\n%s", n, out)
	}
	if !strings.Contains(out, "slow log writes again") || !strings.Contains(out, "lost_records=10") {
		t.Errorf("the recovery not logged:\n%s", out)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestSlowLogReopen: after logrotate renamed the file away, a reload
// (Configure) makes the next records go to a new file at the path.
func TestSlowLogReopen(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "slow.log")
	cfg := Config{Enabled: true, SlowLog: SlowLogConfig{File: file, SampleRate: 1, Threshold: time.Hour}}
	r, _ := newTestRecorder(t, cfg)
	var sess Session
	r.Record(&sess, stmt("SELECT 1", time.Millisecond))
	r.Configure(cfg) // nothing renamed: the same file
	r.Record(&sess, stmt("SELECT 2", time.Millisecond))
	waitLines(t, file, 2)
	if err := os.Rename(file, file+".1"); err != nil {
		t.Fatal(err)
	}
	r.Record(&sess, stmt("SELECT 3", time.Millisecond)) // still to the renamed file
	waitLines(t, file+".1", 3)
	r.Configure(cfg)
	waitLines(t, file, 0) // reopened without a record
	r.Record(&sess, stmt("SELECT 4", time.Millisecond))
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if n := waitLines(t, file+".1", 3); n != 3 {
		t.Errorf("the rotated file has %d lines", n)
	}
	if n := waitLines(t, file, 1); n != 1 {
		t.Errorf("the new file has %d lines", n)
	}
}

// waitLines waits until file exists with at least n lines; it returns
// how many it has.
func waitLines(t *testing.T, file string, n int) int {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile(file)
		if got := bytes.Count(b, []byte("\n")); err == nil && got >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d lines (%v), want %d", file, bytes.Count(b, []byte("\n")), err, n)
		}
	}
}

// readSlowLog closes r and reads its slow log.
func readSlowLog(t *testing.T, r *Recorder, file string) []SlowRecord {
	t.Helper()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var recs []SlowRecord
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var rec SlowRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("line %.100q: %v", line, err)
		}
		recs = append(recs, rec)
	}
	return recs
}
