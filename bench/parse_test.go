package bench

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseSysbench(t *testing.T) {
	for _, tc := range []struct {
		file             string
		queries, ignored int64
		qps              float64
	}{
		{"testdata/sysbench-oltp_point_select.txt", 215955, 0, 107842.47},
		{"testdata/sysbench-oltp_read_write.txt", 51155, 18, 25508.60},
	} {
		b, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		st, err := parseSysbench(string(b))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if st.Queries != tc.queries || st.Ignored != tc.ignored || st.QPS != tc.qps {
			t.Errorf("%s: queries %d ignored %d qps %v, want %d %d %v", tc.file, st.Queries, st.Ignored, st.QPS, tc.queries, tc.ignored, tc.qps)
		}
		if !(st.P50 > 0 && st.P50 <= st.P95 && st.P95 <= st.P99) {
			t.Errorf("%s: percentiles not ordered: %v %v %v", tc.file, st.P50, st.P95, st.P99)
		}
		if p99Disagrees(st.P99, st.ReportedP99) {
			t.Errorf("%s: histogram p99 %v, sysbench says %v", tc.file, st.P99, st.ReportedP99)
		}
	}
}

func TestParseSysbenchErrors(t *testing.T) {
	for name, out := range map[string]string{
		"empty":        "",
		"no histogram": "    transactions: 1 (1 per sec.)\n    queries: 1 (1.00 per sec.)\n    ignored errors: 0 (0 per sec.)\n    reconnects: 0 (0 per sec.)\n",
		"empty histogram": "Latency histogram (values are in milliseconds)\n       value  ------------- distribution ------------- count\n \n" +
			"    transactions: 1 (1 per sec.)\n    queries: 1 (1.00 per sec.)\n    ignored errors: 0 (0 per sec.)\n    reconnects: 0 (0 per sec.)\n",
	} {
		if _, err := parseSysbench(out); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestHistogramPercentile(t *testing.T) {
	out := "Latency histogram (values are in milliseconds)\n" +
		"       value  ------------- distribution ------------- count\n" +
		"       1.000 |****************************************  50\n" +
		"       2.000 |******************************           45\n" +
		"       3.000 |****                                     4\n" +
		"      10.000 |                                         1\n" +
		" \nSQL statistics:\n"
	h, err := parseHistogram(out)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[float64]time.Duration{50: time.Millisecond, 95: 2 * time.Millisecond, 99: 3 * time.Millisecond, 100: 10 * time.Millisecond} {
		if got := h.percentile(p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
}

func TestParseProcStat(t *testing.T) {
	// The command name contains a space and a ')'.
	stat := "1234 (we ird)) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 130 0 0 20 0 4 0 100 1000 200\n"
	got, err := parseProcStat([]byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	if want := 3800 * time.Millisecond; got != want {
		t.Errorf("cpu %v, want %v", got, want)
	}
	if _, err := parseProcStat([]byte("1234 (x S 1")); err == nil {
		t.Error("no error for a truncated stat line")
	}
}

func TestParseVmRSS(t *testing.T) {
	got, err := parseVmRSS([]byte("Name:\tshardgate\nVmRSS:\t   20480 kB\nThreads: 5\n"))
	if err != nil || got != 20480*1024 {
		t.Errorf("got %d, %v", got, err)
	}
	if _, err := parseVmRSS([]byte("Name:\tx\n")); err == nil {
		t.Error("no error without VmRSS")
	}
}

func TestRotate(t *testing.T) {
	want := [][]Target{{Direct, Relay, Shardgate}, {Relay, Shardgate, Direct}, {Shardgate, Direct, Relay}, {Direct, Relay, Shardgate}}
	for n, w := range want {
		if got := rotate(AllTargets, n); !slices.Equal(got, w) {
			t.Errorf("rotate %d = %v, want %v", n, got, w)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(tc.xs); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
}

func TestCapacityPlan(t *testing.T) {
	for _, tc := range []struct {
		target, capacity int
		headroom         float64
		want             int
	}{
		{100000, 25000, 0.8, 6}, // ceil(100000/20000)+1
		{100000, 25000, 0.7, 7}, // ceil(100000/17500)+1
		{1000, 25000, 0.7, 2},
		{17500, 25000, 0.7, 2}, // exactly one instance's share: no rounding up
	} {
		if n, err := CapacityPlan(tc.target, tc.capacity, tc.headroom); err != nil || n != tc.want {
			t.Errorf("CapacityPlan(%d, %d, %g) = %d, %v; want %d", tc.target, tc.capacity, tc.headroom, n, err, tc.want)
		}
	}
	if _, err := CapacityPlan(1000, 0, 0.7); err == nil {
		t.Error("no error without a passing rate")
	}
	if _, err := CapacityPlan(1000, 1000, 1.5); err == nil {
		t.Error("no error for a headroom over 1")
	}
	if s := CapacityPlanText(100000, 25000, 0.7); !strings.Contains(s, "ceil(100000 / (0.7*25000)) + 1 = 7 proxy instances") || !strings.Contains(s, "70% headroom") {
		t.Errorf("CapacityPlanText: %q", s)
	}
}

func TestRateSteps(t *testing.T) {
	c := DefaultRateConfig()
	c.Start, c.Step, c.Max = 1000, 500, 2600
	if got := c.steps(); !slices.Equal(got, []int{1000, 1500, 2000, 2500}) {
		t.Errorf("start/step/max steps = %v", got)
	}
	c.Rates = []int{2000, 8000, 9000}
	if got := c.steps(); !slices.Equal(got, c.Rates) || c.Validate() != nil {
		t.Errorf("--rates steps = %v (validate: %v)", got, c.Validate())
	}
	c.Start, c.Max = 0, 0 // ignored with Rates
	if err := c.Validate(); err != nil {
		t.Errorf("start/max are not used with rates: %v", err)
	}
	for _, bad := range [][]int{{1000, 1000}, {2000, 1000}, {0, 1000}} {
		c.Rates = bad
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "rates") {
			t.Errorf("rates %v: error %v", bad, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	bad := DefaultConfig()
	bad.Threads = []int{0}
	bad.Time = 1500 * time.Millisecond
	bad.Tests = []string{"oltp_nope"}
	bad.PSModes = []string{"sometimes"}
	err := bad.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"threads: 0", "whole number of seconds", "oltp_nope", "sometimes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if err := DefaultRateConfig().Validate(); err != nil {
		t.Fatalf("default rate config: %v", err)
	}
	r := DefaultRateConfig()
	r.Query, r.Max = "range", 10
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "range") || !strings.Contains(err.Error(), "max") {
		t.Errorf("rate config error %v", err)
	}
}

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]int64{
		"1GiB": 1 << 30, "256MiB": 256 << 20, "8mib": 8 << 20, "4KiB": 4096,
		"1048576": 1 << 20, "100B": 100, " 2 GiB ": 2 << 30, "0": 0,
	} {
		got, err := ParseByteSize(in)
		if err != nil || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "1GB", "GiB", "-1MiB", "1.5GiB", "x", "9999999TiB"} {
		if n, err := ParseByteSize(in); err == nil {
			t.Errorf("ParseByteSize(%q) = %d, want an error", in, n)
		}
	}
	for n, want := range map[int64]string{1 << 30: "1GiB", 256 << 20: "256MiB", 1536: "1536B", 3 << 10: "3KiB"} {
		if got := FormatByteSize(n); got != want {
			t.Errorf("FormatByteSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestStreamConfigValidate(t *testing.T) {
	if err := DefaultStreamConfig().Validate(); err != nil {
		t.Errorf("default stream configuration: %v", err)
	}
	c := DefaultStreamConfig()
	if got, want := c.Query(), "SELECT REPEAT('x', 1024) FROM seq_1_to_1048576"; got != want {
		t.Errorf("query %q, want %q", got, want)
	}
	if got := c.QueryFor(Sharded); got != "SELECT v FROM sgstream" {
		t.Errorf("query through %s %q", Sharded, got)
	}
	if got, want := streamViews(StreamConfig{Size: 10 << 10, RowBytes: 1024})[3],
		"CREATE OR REPLACE VIEW sbtest.sgstream_0003 AS SELECT seq AS id, REPEAT('x', 1024) AS v FROM sbtest.seq_3_to_9_step_4"; got != want {
		t.Errorf("the last sub-table of 10 rows:\n%s\nwant\n%s", got, want)
	}
	for _, bad := range []StreamConfig{
		{Size: 100, RowBytes: 1024, Rounds: 1},
		{Size: 3 << 10, RowBytes: 1024, Rounds: 1, Targets: []Target{Sharded}}, // fewer rows than sub-tables
		{Size: 1 << 20, RowBytes: 0, Rounds: 1},
		{Size: 1 << 20, RowBytes: 1024, Rounds: 0},
		{Size: 1 << 20, RowBytes: 1024, Rounds: 1, Targets: []Target{"nope"}},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

func TestStreamTable(t *testing.T) {
	res := &StreamResults{Config: StreamConfig{Size: 1 << 30, RowBytes: 1024, Rounds: 2}, Cells: []*StreamCell{
		{Target: Direct, Runs: []StreamRun{{MBps: 400, Bytes: 1e9}, {MBps: 600, Bytes: 1e9}}},
		{Target: Relay, Runs: []StreamRun{{MBps: 200, Bytes: 1e9, ProxyCPU: time.Second, RSSGrowth: 1 << 20}, {Failure: "boom"}}},
		{Target: Shardgate, Runs: []StreamRun{{MBps: 180, Bytes: 5e8, ProxyCPU: time.Second, RSSGrowth: 3 << 20}, {MBps: 220, Bytes: 5e8, ProxyCPU: time.Second, RSSGrowth: 2 << 20}}},
	}}
	table := res.Table()
	for _, want := range []string{
		"| direct | 500.0 | 40% |  | — | — | 0 |",
		"| relay | 200.0 | 0% | 1.00 | 1.00 | 1.0 | 1 failed run(s) |",
		"| shardgate | 200.0 | 20% | 1.00 | 2.00 | 3.0 | 0 |",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if res.Failed() != 1 {
		t.Errorf("Failed() = %d, want 1", res.Failed())
	}
}

// TestMergeTableWithBase: the base build's sharded target gets its row
// beside the head's, each against its own build's unsharded target, with
// the proxy CPU the merge adds per shard.
func TestMergeTableWithBase(t *testing.T) {
	run := func(qps float64, proxyCPU time.Duration) []ScatterRun {
		return []ScatterRun{{Queries: 1000, Rows: 10000, QPS: qps, P50: time.Millisecond, P99: 2 * time.Millisecond, ProxyCPU: proxyCPU}}
	}
	targets := []Target{Shardgate, Sharded, ShardgateBase, ShardedBase}
	res := &ScatterResults{
		Config: ScatterConfig{Queries: []string{"order-limit"}, PSModes: []string{"disable"}, Targets: targets},
		Cells: []*ScatterCell{
			{Query: "order-limit", PSMode: "disable", Target: Shardgate, Runs: run(10000, 20*time.Millisecond)},
			{Query: "order-limit", PSMode: "disable", Target: Sharded, Runs: run(5000, 40*time.Millisecond)},
			{Query: "order-limit", PSMode: "disable", Target: ShardgateBase, Runs: run(10000, 20*time.Millisecond)},
			{Query: "order-limit", PSMode: "disable", Target: ShardedBase, Runs: run(2500, 80*time.Millisecond)},
		},
		ShardRows: map[string]int64{"order-limit": 40},
	}
	table := res.MergeTable()
	for _, want := range []string{
		"| order-limit | disable | 5000 | 0.50 |  | 1.00 |  | 40.0 | 20.0 | 2.00 | 1.00 | 2.00 | 5.0 |",
		"| order-limit (base) | disable | 2500 | 0.25 |  | 1.00 |  | 80.0 | 20.0 | 4.00 | 2.00 | 2.00 | 15.0 |",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("merge table lacks %q:\n%s", want, table)
		}
	}
	for _, name := range []string{"shardgate-base", "sharded-base"} {
		if tg, err := ParseTarget(name); err != nil || string(tg) != name {
			t.Errorf("ParseTarget(%q) = %q, %v", name, tg, err)
		}
	}
	if !ShardedBase.IsSharded() || ShardedBase.Unsharded() != ShardgateBase || Sharded.Unsharded() != Shardgate {
		t.Error("the base targets' pairing is wrong")
	}
}

func TestParseCtxSwitches(t *testing.T) {
	status := "Name:\tshardgate\nvoluntary_ctxt_switches:\t120\nnonvoluntary_ctxt_switches:\t7\nVmRSS:\t 100 kB\n"
	if got := parseCtxSwitches([]byte(status)); got != 127 {
		t.Fatalf("parseCtxSwitches = %d, want 127", got)
	}
	n, err := ctxSwitches(os.Getpid())
	if err != nil || n <= 0 {
		t.Fatalf("ctxSwitches of the test process = %d, %v", n, err)
	}
}
