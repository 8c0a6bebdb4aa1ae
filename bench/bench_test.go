package bench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// TestSmoke runs the whole harness at the smallest useful scale: every
// target, both ps-modes, one round, the report files, a two-step
// constant-rate run and an 8 MiB streamed result. It checks that everything
// completes and produces numbers, never how fast anything is.
func TestSmoke(t *testing.T) {
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	env, err := StartEnv(ctx, EnvOptions{BufferPool: "128M", Log: testLog{t}})
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
	t.Logf("environment up after %v", time.Since(began).Round(time.Millisecond))

	cfg := Config{
		Threads: []int{2}, Rounds: 1, Time: 2 * time.Second, TableSize: 1000, Tables: 1,
		Tests: []string{"oltp_point_select"}, PSModes: []string{"disable", "auto"}, Targets: AllTargets,
	}
	res, err := RunMatrix(ctx, env, cfg)
	if err != nil {
		t.Fatalf("RunMatrix: %v", err)
	}
	checkCells(t, res, len(cfg.PSModes)*len(AllTargets))
	checkReport(t, env, res)
	checkRate(t, env)
	checkStream(t, env)
	checkSharded(t, ctx, env, cfg)
	t.Logf("smoke test took %v", time.Since(began).Round(time.Millisecond))
}

func checkCells(t *testing.T, res *Results, want int) {
	t.Helper()
	if len(res.Cells) != want {
		t.Fatalf("%d cells, want %d", len(res.Cells), want)
	}
	for _, c := range res.Cells {
		if len(c.Runs) != 1 {
			t.Fatalf("%s %s: %d runs, want 1", c.PSMode, c.Target, len(c.Runs))
		}
		r := c.Runs[0]
		if r.Failure != "" {
			t.Fatalf("%s %s failed: %s", c.PSMode, c.Target, r.Failure)
		}
		if r.QPS <= 0 || r.Queries <= 0 {
			t.Errorf("%s %s: QPS %v, queries %d, want > 0", c.PSMode, c.Target, r.QPS, r.Queries)
		}
		if r.Ignored != 0 || r.Reconnects != 0 {
			t.Errorf("%s %s: %d ignored errors, %d reconnects, want 0", c.PSMode, c.Target, r.Ignored, r.Reconnects)
		}
		if r.P50 <= 0 || r.P50 > r.P95 || r.P95 > r.P99 {
			t.Errorf("%s %s: percentiles p50 %v p95 %v p99 %v are not ordered positive values", c.PSMode, c.Target, r.P50, r.P95, r.P99)
		}
		if c.Target != Direct && r.ProxyRSS <= 0 {
			t.Errorf("%s %s: proxy RSS %d, want > 0", c.PSMode, c.Target, r.ProxyRSS)
		}
		t.Logf("%-7s %-9s %8.0f qps p99 %v proxy CPU %v", c.PSMode, c.Target, r.QPS, r.P99, r.ProxyCPU)
	}
}

func checkReport(t *testing.T, env *Env, res *Results) {
	t.Helper()
	dir := t.TempDir()
	files, err := WriteReport(NewReport(context.Background(), env, res), dir)
	if err != nil {
		t.Fatalf("WriteReport: %v", err)
	}
	for _, p := range []string{files.Markdown, files.LatestMarkdown} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("read report: %v", err)
		}
		for _, want := range []string{"### oltp_point_select, --db-ps-mode=auto", "| 2 | shardgate |", "sysbench oltp_point_select", "haproxy"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s does not contain %q", p, want)
			}
		}
	}
	for _, p := range []string{files.Chart, files.LatestChart} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("read chart: %v", err)
		}
		if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
			t.Errorf("%s is not a PNG file", p)
		}
	}
}

// checkSharded starts the Sharded target over the prepared tables and runs
// a text point select through it, every query routed by key, no error, and
// a small streamed result as a scatter read.
func checkSharded(t *testing.T, ctx context.Context, env *Env, cfg Config) {
	t.Helper()
	if err := env.StartSharded(ctx, cfg.Tables); err != nil {
		t.Fatalf("StartSharded: %v", err)
	}
	r := sysbenchRun{bin: env.Tools.Sysbench, test: "oltp_point_select", addr: env.Addr(Sharded),
		tables: cfg.Tables, tableSize: cfg.TableSize, threads: 2, seconds: 2, psMode: "disable"}
	run := measure(ctx, env, r, Sharded)
	if run.Failure != "" || run.Queries == 0 || run.ProxyCPU <= 0 {
		t.Fatalf("sharded point select: %+v", run)
	}
	// The streamed result as a scatter read, through the running target.
	res, err := RunStream(ctx, env, StreamConfig{Size: 8 << 20, RowBytes: 1024, Rounds: 1, Targets: []Target{Sharded}})
	if err != nil {
		t.Fatalf("RunStream through %s: %v", Sharded, err)
	}
	if s := res.Cell(Sharded).Summary(); s.OK != 1 || s.MBps <= 0 {
		t.Fatalf("stream through %s: %+v\n%s", Sharded, s, NewStreamReport(ctx, env, res).Markdown())
	}
	t.Logf("scatter stream:\n%s", res.Table())
}

func checkRate(t *testing.T, env *Env) {
	t.Helper()
	cfg := RateConfig{
		Target: Shardgate, SLOP99: 10 * time.Second, Start: 200, Step: 200, Max: 400,
		Duration: 2 * time.Second, Conns: 8, Query: "point", PSMode: "auto", TableSize: 1000,
		MinAchieved: 0.5, Log: testLog{t},
	}
	res, err := RunRate(context.Background(), env, cfg)
	if err != nil {
		t.Fatalf("RunRate: %v", err)
	}
	if len(res.Steps) != 2 {
		t.Fatalf("%d rate steps, want 2:\n%s", len(res.Steps), res.Markdown())
	}
	for _, s := range res.Steps {
		if s.Completed <= 0 || s.Errors != 0 {
			t.Errorf("rate %d: %d completed, %d errors (%s), want > 0 and 0", s.Rate, s.Completed, s.Errors, s.FirstError)
		}
	}
	t.Logf("rate run:\n%s\n%s", res.Markdown(), CapacityPlanText(10000, res.MaxPassing, DefaultHeadroom))
}

func checkStream(t *testing.T, env *Env) {
	t.Helper()
	cfg := StreamConfig{Size: 8 << 20, RowBytes: 1024, Rounds: 1, Targets: AllTargets}
	res, err := RunStream(context.Background(), env, cfg)
	if err != nil {
		t.Fatalf("RunStream: %v", err)
	}
	if len(res.Cells) != len(AllTargets) {
		t.Fatalf("%d stream cells, want %d", len(res.Cells), len(AllTargets))
	}
	for _, c := range res.Cells {
		if len(c.Runs) != 1 {
			t.Fatalf("stream %s: %d runs, want 1", c.Target, len(c.Runs))
		}
		r := c.Runs[0]
		if r.Failure != "" {
			t.Fatalf("stream %s failed: %s", c.Target, r.Failure)
		}
		if r.MBps <= 0 {
			t.Errorf("stream %s: %v MB/s, want > 0", c.Target, r.MBps)
		}
	}
	path, err := WriteStreamReport(NewStreamReport(context.Background(), env, res), t.TempDir())
	if err != nil {
		t.Fatalf("WriteStreamReport: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read stream report: %v", err)
	}
	if !strings.Contains(string(b), "| shardgate | ") {
		t.Errorf("%s has no shardgate row:\n%s", path, b)
	}
	t.Logf("stream run:\n%s\n%s", res.Description(), res.Table())
}

// testLog sends the harness's progress messages to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Helper()
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
