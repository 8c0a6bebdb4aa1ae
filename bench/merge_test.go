package bench

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMergeSmoke runs issue 14's benchmarks at the smallest scale on one
// environment: sysbench oltp_read_only through the sharded target (its
// range reads merged), `sgbench scatter` with every query and both
// ps-modes, and `sgbench memory` over a few thousand rows. It checks
// that everything completes with numbers and right answers (each run
// compares its answer with the server's; the memory runs check every
// row), never how fast anything is.
func TestMergeSmoke(t *testing.T) {
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env, err := StartEnv(ctx, EnvOptions{
		Targets: []Target{Direct, Shardgate, Sharded}, BufferPool: "128M",
		ServerArgs: MemoryServerArgs(), Log: testLog{t},
	})
	if err != nil {
		if errors.Is(err, ErrMissingTool) {
			t.Fatalf("benchmark tools missing (run scripts/install-deps.sh): %v", err)
		}
		t.Fatalf("start the benchmark environment: %v", err)
	}
	defer func() {
		if err := env.Close(); err != nil {
			t.Errorf("stop the benchmark environment: %v", err)
		}
	}()
	checkShardedReadOnly(t, ctx, env)
	checkScatter(t, ctx, env)
	checkMemory(t, ctx, env)
	t.Logf("merge smoke test took %v", time.Since(began).Round(time.Millisecond))
}

// checkShardedReadOnly prepares one sysbench table, starts the sharded
// target over it and runs oltp_read_only in both ps-modes, as the
// matrix does.
func checkShardedReadOnly(t *testing.T, ctx context.Context, env *Env) {
	t.Helper()
	if _, err := Prepare(ctx, env, "oltp_read_only", 1, 1000); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if err := env.StartSharded(ctx, 1); err != nil {
		t.Fatalf("StartSharded: %v", err)
	}
	for _, ps := range PSModes {
		r := sysbenchRun{bin: env.Tools.Sysbench, test: "oltp_read_only", addr: env.Addr(Sharded),
			tables: 1, tableSize: 1000, threads: 2, seconds: 2, psMode: ps}
		run := measure(ctx, env, r, Sharded)
		if run.Failure != "" || run.Queries == 0 || run.Ignored != 0 || run.Reconnects != 0 {
			t.Errorf("sharded oltp_read_only ps=%s: %+v", ps, run)
			continue
		}
		t.Logf("sharded oltp_read_only ps=%s: %.0f qps, p99 %v", ps, run.QPS, run.P99)
	}
}

func checkScatter(t *testing.T, ctx context.Context, env *Env) {
	t.Helper()
	cfg := ScatterConfig{
		Rows: 2000, Groups: 50, Threads: 2, Rounds: 1, Time: time.Second,
		Queries: []string{"order-limit", "group-by", "scatter", "join", "derived", "in-subquery"}, PSModes: PSModes,
		Targets: []Target{Direct, Shardgate, Sharded},
	}
	res, err := RunScatter(ctx, env, cfg)
	if err != nil {
		t.Fatalf("RunScatter: %v", err)
	}
	if want := len(cfg.Queries) * len(cfg.PSModes) * len(cfg.Targets); len(res.Cells) != want {
		t.Fatalf("%d scatter cells, want %d", len(res.Cells), want)
	}
	for _, c := range res.Cells {
		if len(c.Runs) != 1 {
			t.Fatalf("%s %s %s: %d runs, want 1", c.Query, c.PSMode, c.Target, len(c.Runs))
		}
		r := c.Runs[0]
		if r.Failure != "" {
			t.Errorf("%s ps=%s %s failed: %s", c.Query, c.PSMode, c.Target, r.Failure)
			continue
		}
		if r.QPS <= 0 || r.Rows <= 0 || r.P50 <= 0 || r.P50 > r.P99 {
			t.Errorf("%s ps=%s %s: %+v, want QPS, rows and ordered percentiles > 0", c.Query, c.PSMode, c.Target, r)
		}
	}
	if res.ShardRows["order-limit"] != ShardedShards*scatterLimit {
		t.Errorf("order-limit: the shards answer %d rows, want %d", res.ShardRows["order-limit"], ShardedShards*scatterLimit)
	}
	path, err := WriteScatterReport(NewScatterReport(ctx, env, res), t.TempDir())
	if err != nil {
		t.Fatalf("WriteScatterReport: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"### order-limit, ps-mode auto", "| sharded | ", "### Merge (sharded) against one server", "| group-by | disable | "} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s does not contain %q", path, want)
		}
	}
	t.Logf("scatter run:\n%s%s", res.Tables(), res.MergeTable())
}

func checkMemory(t *testing.T, ctx context.Context, env *Env) {
	t.Helper()
	cfg := MemoryConfig{Rows: 4000, RowBytes: 1024, Loaders: 2, PauseEvery: 1000, Pause: 20 * time.Millisecond, Queries: MemoryQueries}
	res, err := RunMemory(ctx, env, cfg)
	if err != nil {
		t.Fatalf("RunMemory: %v", err)
	}
	if len(res.Runs) != len(MemoryQueries) {
		t.Fatalf("%d memory runs, want %d", len(res.Runs), len(MemoryQueries))
	}
	for _, r := range res.Runs {
		if r.Failure != "" {
			t.Errorf("memory %s failed: %s", r.Query, r.Failure)
			continue
		}
		if r.Rows <= 0 || r.RSSSamples < 2 || r.RSSGrowth >= MemoryBudget {
			t.Errorf("memory %s: %+v, want rows, 2+ RSS samples and growth < %d", r.Query, r, MemoryBudget)
		}
	}
	if r := res.Runs[1]; r.Query != "slow-order" || r.Paused != 4*cfg.Pause {
		t.Errorf("slow-order: the client paused %v, want %v", r.Paused, 4*cfg.Pause)
	}
	path, err := WriteMemoryReport(NewMemoryReport(ctx, env, res), t.TempDir())
	if err != nil {
		t.Fatalf("WriteMemoryReport: %v", err)
	}
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), "| slow-order | ") {
		t.Errorf("%s: no slow-order row (%v)", path, err)
	}
	t.Logf("memory run:\n%s\n%s", res.Description(), res.Table())
}

// TestMemoryCheck feeds the streaming answer check right and wrong
// answers of a 40-row table.
func TestMemoryCheck(t *testing.T) {
	cfg := MemoryConfig{Rows: 40}
	rows := func(first, n int64, cols func(i int64) []string) [][]string {
		var out [][]string
		for i := first; i < first+n; i++ {
			out = append(out, cols(i))
		}
		return out
	}
	k := func(i int64) []string { return []string{strconv.FormatInt(i, 10), "7", "pad"} }
	group := func(i int64) []string { return []string{strconv.FormatInt(i, 10), "10", "45"} }
	for _, tc := range []struct {
		name, query string
		rows        [][]string
		wantErr     string
	}{
		{"offset", "offset", rows(20, 10, k), ""},
		{"offset wrong k", "offset", rows(19, 10, k), "row 1 has k = 19, want 20"},
		{"offset short", "offset", rows(20, 9, k), "9 rows, want 10"},
		{"full order", "slow-order", rows(0, 40, k), ""},
		{"full order swapped", "slow-order", append(rows(0, 38, k), k(39), k(38)), "row 39 has k = 39, want 38"},
		{"groups", "group-by", rows(0, 4, group), ""},
		{"groups miscounted", "group-by", append(rows(0, 3, group), []string{"3", "9", "1"}), "COUNT(*)s add up to 39, want 40"},
		{"groups doubled", "group-by", rows(0, 5, group), "5 rows, want 4"},
		{"distinct", "distinct", rows(0, 20, k), ""},
		{"not a number", "offset", [][]string{{"x", "1", "p"}}, `row 1 column 1: "x" is not an integer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newMemoryCheck(cfg, tc.query)
			for _, r := range tc.rows {
				cols := make([]sql.RawBytes, len(r))
				for i, v := range r {
					cols[i] = sql.RawBytes(v)
				}
				c.row(cols)
			}
			err := c.done()
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("done() = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestDiffRows(t *testing.T) {
	for _, tc := range []struct {
		got, want []string
		diff      string
	}{
		{[]string{"a", "b"}, []string{"a", "b"}, ""},
		{[]string{"a", "c"}, []string{"a", "b"}, `row 2 is "c", the server's "b"`},
		{[]string{"a"}, []string{"a", "b"}, "1 rows, the server's 2"},
		{nil, nil, ""},
	} {
		if d := diffRows(tc.got, tc.want); d != tc.diff {
			t.Errorf("diffRows(%q, %q) = %q, want %q", tc.got, tc.want, d, tc.diff)
		}
	}
}
