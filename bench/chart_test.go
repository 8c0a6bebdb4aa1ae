package bench

import (
	"bytes"
	"os"
	"testing"
	"time"
)

// syntheticResults fakes a matrix with latencies spanning four decades.
func syntheticResults() *Results {
	cfg := DefaultConfig()
	cfg.Tests, cfg.PSModes = []string{"oltp_point_select"}, []string{"auto"}
	res := &Results{Config: cfg}
	for i, threads := range cfg.Threads {
		for j, t := range AllTargets {
			c := &Cell{Test: "oltp_point_select", PSMode: "auto", Threads: threads, Target: t}
			p99 := time.Duration(100*(i*i*i+1)*(j+1)) * time.Microsecond
			c.Runs = []Run{{Round: 1, Queries: 1000, QPS: float64(10000 * (i + 1) / (j + 1)), P50: p99 / 3, P95: p99 / 2, P99: p99}}
			res.Cells = append(res.Cells, c)
		}
	}
	return res
}

func TestRenderChart(t *testing.T) {
	png, err := renderChart(syntheticResults())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatal("not a PNG")
	}
	if out := os.Getenv("SGBENCH_CHART_OUT"); out != "" {
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A matrix whose cells all failed still renders.
	res := syntheticResults()
	for _, c := range res.Cells {
		c.Runs[0].Failure = "boom"
	}
	if _, err := renderChart(res); err != nil {
		t.Fatalf("all cells failed: %v", err)
	}
}
