package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Report is everything WriteReport renders.
type Report struct {
	Results       *Results
	System        SystemInfo
	Commands      []string // how mariadbd, haproxy and shardgate were started
	HAProxyConfig string
}

// NewReport gathers the machine, versions and commands of env for res.
func NewReport(ctx context.Context, env *Env, res *Results) *Report {
	return &Report{
		Results:       res,
		System:        CollectSystemInfo(ctx, env),
		Commands:      env.Commands,
		HAProxyConfig: env.HAProxyConfig,
	}
}

// ReportFiles are the paths WriteReport wrote; the latest ones are empty for
// an interrupted run.
type ReportFiles struct {
	Markdown, LatestMarkdown, Chart, LatestChart string
}

// Paths lists the files written.
func (f ReportFiles) Paths() []string {
	var ps []string
	for _, p := range []string{f.Markdown, f.LatestMarkdown, f.Chart, f.LatestChart} {
		if p != "" {
			ps = append(ps, p)
		}
	}
	return ps
}

// WriteReport writes <timestamp>.md and <timestamp>.png into dir (created if
// needed), and copies them to latest.md and latest.png unless the run was
// interrupted: latest is the latest complete run. Each file is written to a
// .tmp file first and renamed, so a reader never sees half a report.
func WriteReport(r *Report, dir string) (ReportFiles, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ReportFiles{}, fmt.Errorf("create results directory: %w", err)
	}
	stamp := r.Results.Start.UTC().Format("20060102-150405")
	f := ReportFiles{Markdown: filepath.Join(dir, stamp+".md"), Chart: filepath.Join(dir, stamp+".png")}
	if !r.Results.Interrupted {
		f.LatestMarkdown, f.LatestChart = filepath.Join(dir, "latest.md"), filepath.Join(dir, "latest.png")
	}
	md := []byte(r.Markdown())
	png, err := renderChart(r.Results)
	if err != nil {
		return f, err
	}
	for _, w := range []struct {
		path string
		data []byte
	}{{f.Markdown, md}, {f.LatestMarkdown, md}, {f.Chart, png}, {f.LatestChart, png}} {
		if w.path == "" {
			continue
		}
		if err := writeAtomic(w.path, w.data); err != nil {
			return f, err
		}
	}
	return f, nil
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Markdown renders the whole report.
func (r *Report) Markdown() string {
	var b strings.Builder
	res := r.Results
	fmt.Fprintf(&b, "# shardgate benchmark, %s\n\n", res.Start.UTC().Format("2006-01-02 15:04 UTC"))
	if res.Interrupted {
		b.WriteString("**Interrupted: the matrix did not finish; cells below are what completed.**\n\n")
	}
	fmt.Fprintf(&b, "Duration %v. Every number is the median over the successful rounds of its cell.\n\n",
		res.End.Sub(res.Start).Round(time.Second))
	r.writeMachine(&b)
	r.writeSettings(&b)
	b.WriteString("## Results\n\n")
	b.WriteString(r.Tables())
	r.writeSharded(&b)
	r.writeTelemetry(&b)
	r.writeFailures(&b)
	r.writeCommands(&b)
	b.WriteString(columnsLegend)
	return b.String()
}

func (r *Report) writeMachine(b *strings.Builder) { writeMachineInfo(b, r.System, "sysbench") }

// writeMachineInfo renders the machine and versions section; client names the
// load generator that shares the CPUs with the proxy and the server.
func writeMachineInfo(b *strings.Builder, s SystemInfo, client string) {
	b.WriteString("## Machine and versions\n\n")
	fmt.Fprintf(b, "- CPU: %s, %d logical CPUs\n", s.CPUModel, s.CPUs)
	fmt.Fprintf(b, "- Memory: %s\n", s.Memory)
	fmt.Fprintf(b, "- Kernel: %s (%s)\n", s.Kernel, s.OS)
	for _, v := range s.Versions {
		fmt.Fprintf(b, "- %s\n", v)
	}
	fmt.Fprintf(b, "\n%s, the proxy and mariadbd share these CPUs: the ratios matter more than the absolute numbers.\n\n", client)
}

func (r *Report) writeSettings(b *strings.Builder) {
	c := r.Results.Config
	b.WriteString("## Settings\n\n")
	fmt.Fprintf(b, "- threads %s; rounds %d; %v per run; warm-up %v per target, test and ps-mode\n",
		joinInts(c.Threads), c.Rounds, c.Time, c.Warmup)
	fmt.Fprintf(b, "- %d table(s) x %d rows; tests %s; ps-modes %s\n",
		c.Tables, c.TableSize, strings.Join(c.Tests, ", "), strings.Join(c.PSModes, ", "))
	b.WriteString("- Targets run interleaved, the order rotating every round:")
	for i := 0; i < c.Rounds && i < len(c.targets()); i++ {
		fmt.Fprintf(b, " round %d: %s;", i+1, joinTargets(rotate(c.targets(), i)))
	}
	b.WriteString("\n\n")
}

// Tables renders one Markdown table per test and ps-mode.
func (r *Report) Tables() string {
	var b strings.Builder
	res := r.Results
	for _, test := range res.Config.Tests {
		for _, ps := range res.Config.PSModes {
			rows := r.tableRows(test, ps)
			if len(rows) == 0 {
				continue
			}
			fmt.Fprintf(&b, "### %s, --db-ps-mode=%s\n\n", test, ps)
			b.WriteString("| threads | target | QPS | spread | ×direct | ×relay | p50 ms | p95 ms | p99 ms | p99 ×direct | proxy CPU µs/q | server CPU µs/q | proxy cs/q | server cs/q | proxy RSS MiB | errors |\n")
			b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
			for _, row := range rows {
				b.WriteString("| " + strings.Join(row, " | ") + " |\n")
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func (r *Report) tableRows(test, ps string) [][]string {
	res := r.Results
	var rows [][]string
	for _, threads := range res.Config.Threads {
		direct := summaryOf(res.Cell(test, ps, threads, Direct))
		relay := summaryOf(res.Cell(test, ps, threads, Relay))
		for _, t := range res.Config.targets() {
			c := res.Cell(test, ps, threads, t)
			if c == nil {
				continue
			}
			rows = append(rows, row(c, c.Summary(), direct, relay))
		}
	}
	return rows
}

func summaryOf(c *Cell) *Summary {
	if c == nil {
		return nil
	}
	s := c.Summary()
	if s.OK == 0 {
		return nil
	}
	return &s
}

// row renders one cell; direct and relay (possibly nil) are the baselines.
func row(c *Cell, s Summary, direct, relay *Summary) []string {
	if s.OK == 0 {
		return []string{strconv.Itoa(c.Threads), string(c.Target), "failed", "", "", "", "", "", "", "", "", "", "", "", "", errorsText(s)}
	}
	vsDirect, vsRelay, p99Direct := "", "", ""
	if direct != nil {
		vsDirect = ratio(s.QPS, direct.QPS)
		p99Direct = ratio(float64(s.P99), float64(direct.P99))
	}
	if relay != nil && c.Target != Direct {
		vsRelay = ratio(s.QPS, relay.QPS)
	}
	proxyCPU, proxyCS, rss := "—", "—", "—"
	if c.Target != Direct {
		proxyCPU = fmt.Sprintf("%.1f", s.ProxyCPUPerQuery)
		proxyCS = fmt.Sprintf("%.2f", s.ProxyCSPerQuery)
		rss = fmt.Sprintf("%.1f", float64(s.ProxyRSS)/(1<<20))
	}
	return []string{
		strconv.Itoa(c.Threads), string(c.Target),
		fmt.Sprintf("%.0f", s.QPS), fmt.Sprintf("%.0f%%", s.Spread*100),
		vsDirect, vsRelay,
		ms(s.P50), ms(s.P95), ms(s.P99), p99Direct,
		proxyCPU, fmt.Sprintf("%.1f", s.ServerCPUPerQuery), proxyCS, fmt.Sprintf("%.2f", s.ServerCSPerQuery), rss,
		errorsText(s),
	}
}

// writeSharded compares the Sharded target with the unsharded shardgate
// of the same cell: issue 13 asks QPS ≥ 0.9× and proxy CPU per query ≤ 1.2×.
func (r *Report) writeSharded(b *strings.Builder) {
	res := r.Results
	var rows []string
	for _, t := range ShardedOf(res.Config.Targets) {
		rows = append(rows, res.cellRows(t, func(test, ps string, threads int) string {
			return res.shardedRow(test, ps, threads, t)
		})...)
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "### Sharded against unsharded shardgate\n\nsbtest hash-sharded on id, %d shards × %d sub-tables (every shard on the one server), against shardgate (of the same build: \"base\" rows are the base build's) in front of the unsharded tables, same cell. Issue 13 asks, for point selects, QPS ×unsharded ≥ 0.90 and proxy CPU ×unsharded ≤ 1.20; oltp_read_only's range reads are merged across the shards (issue 14; issue 23 asks QPS ×unsharded ≥ 0.6).\n\n", ShardedShards, ShardedSubTables)
	b.WriteString("| test | ps-mode | threads | QPS sharded | QPS unsharded | QPS ×unsharded | p95 ms sharded | p95 ms unsharded | p99 ms sharded | p99 ms unsharded | proxy CPU µs/q sharded | unsharded | CPU ×unsharded |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	b.WriteString(strings.Join(rows, "\n") + "\n\n")
}

// shardedRow is writeSharded's row for sharded target t against its
// build's unsharded target in one cell.
func (res *Results) shardedRow(test, ps string, threads int, t Target) string {
	name := test
	if t == ShardedBase {
		name += " (base)"
	}
	s, u := summaryOf(res.Cell(test, ps, threads, t)), summaryOf(res.Cell(test, ps, threads, t.Unsharded()))
	if s == nil || u == nil {
		return fmt.Sprintf("| %s | %s | %d | failed | | | | | | | | | |", name, ps, threads)
	}
	return fmt.Sprintf("| %s | %s | %d | %.0f | %.0f | %s | %s | %s | %s | %s | %.1f | %.1f | %s |", name, ps, threads,
		s.QPS, u.QPS, ratio(s.QPS, u.QPS), ms(s.P95), ms(u.P95), ms(s.P99), ms(u.P99),
		s.ProxyCPUPerQuery, u.ProxyCPUPerQuery, ratio(s.ProxyCPUPerQuery, u.ProxyCPUPerQuery))
}

// cellRows returns row's line for each cell in which target ran, by test,
// ps-mode and threads.
func (res *Results) cellRows(target Target, row func(test, ps string, threads int) string) []string {
	var rows []string
	for _, test := range res.Config.Tests {
		for _, ps := range res.Config.PSModes {
			for _, threads := range res.Config.Threads {
				if res.Cell(test, ps, threads, target) != nil {
					rows = append(rows, row(test, ps, threads))
				}
			}
		}
	}
	return rows
}

// writeTelemetry compares shardgate with and without statement telemetry
// in the same cell: issue 15 asks for no measurable difference.
func (r *Report) writeTelemetry(b *strings.Builder) {
	res := r.Results
	rows := res.cellRows(ShardgateNoTele, func(test, ps string, threads int) string {
		on, o := summaryOf(res.Cell(test, ps, threads, Shardgate)), summaryOf(res.Cell(test, ps, threads, ShardgateNoTele))
		if on == nil || o == nil {
			return fmt.Sprintf("| %s | %s | %d | failed | | | | | | | | |", test, ps, threads)
		}
		vsRelayOn, vsRelayOff := "", ""
		if relay := summaryOf(res.Cell(test, ps, threads, Relay)); relay != nil {
			vsRelayOn, vsRelayOff = ratio(on.QPS, relay.QPS), ratio(o.QPS, relay.QPS)
		}
		return fmt.Sprintf("| %s | %s | %d | %.0f | %.0f | %s | %s | %s | %s | %.1f | %.1f | %.3f | %.3f |", test, ps, threads,
			on.QPS, o.QPS, ratio(on.QPS, o.QPS), vsRelayOn, vsRelayOff, ms(on.P99)+" / "+ms(o.P99),
			on.ProxyCPUPerQuery, o.ProxyCPUPerQuery, on.AllocsPerQuery, o.AllocsPerQuery)
	})
	if len(rows) == 0 {
		return
	}
	b.WriteString("### Statement telemetry on against off\n\nshardgate (telemetry on, the default) against shardgate-notele (telemetry.enabled: false), same server, interleaved in the same rounds. Allocations are the proxy's go_memstats_mallocs_total over the run per query (background work included).\n\n")
	b.WriteString("| test | ps-mode | threads | QPS on | QPS off | on ×off | ×relay on | ×relay off | p99 ms on / off | proxy CPU µs/q on | off | allocs/q on | off |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	b.WriteString(strings.Join(rows, "\n") + "\n\n")
}

func ratio(a, b float64) string {
	if b == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f", a/b)
}

// ms formats a latency in milliseconds with µs resolution.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.3f", float64(d)/float64(time.Millisecond))
}

func errorsText(s Summary) string {
	var parts []string
	if s.Ignored > 0 {
		parts = append(parts, fmt.Sprintf("%d ignored (1213)", s.Ignored))
	}
	if s.Reconnects > 0 {
		parts = append(parts, fmt.Sprintf("%d reconnects", s.Reconnects))
	}
	if s.Failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed run(s)", s.Failed))
	}
	if s.P99Mismatch > 0 {
		parts = append(parts, fmt.Sprintf("%d p99 mismatch", s.P99Mismatch))
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, ", ")
}

func (r *Report) writeFailures(b *strings.Builder) {
	var lines []string
	for _, c := range r.Results.Cells {
		for _, run := range c.Runs {
			if run.Failure != "" {
				lines = append(lines, fmt.Sprintf("### %s ps=%s threads=%d %s round %d\n\n```\n%s\n```\n",
					c.Test, c.PSMode, c.Threads, c.Target, run.Round, strings.TrimSpace(run.Failure)))
			}
		}
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("## Failed runs\n\n")
	b.WriteString(strings.Join(lines, "\n"))
	b.WriteString("\n")
}

func (r *Report) writeCommands(b *strings.Builder) {
	b.WriteString("## Commands\n\n```\n")
	for _, c := range r.Commands {
		b.WriteString(c + "\n")
	}
	b.WriteString("prepare: " + r.Results.PrepareCommand + "\n```\n\n")
	if r.HAProxyConfig != "" {
		b.WriteString("HAProxy configuration (relay):\n\n```\n" + r.HAProxyConfig + "```\n\n")
	}
	b.WriteString("<details><summary>sysbench run commands (one per cell)</summary>\n\n```\n")
	var cmds []string
	for _, c := range r.Results.Cells {
		cmds = append(cmds, c.Command)
	}
	for _, c := range slices.Compact(cmds) {
		b.WriteString(c + "\n")
	}
	b.WriteString("```\n\n</details>\n\n")
}

const columnsLegend = `## Columns

- **QPS**: sysbench "queries: N (X per sec.)", all statements including BEGIN/COMMIT.
- **spread**: (max − min) / median of QPS over the rounds, a measure of noise.
- **×direct**, **×relay**: QPS of this target divided by that of the direct
  server and of the HAProxy relay in the same cell.
- **p50/p95/p99 ms**: per-event latency computed from sysbench's histogram
  (an event is one query for oltp_point_select, 14 statements for
  oltp_read_only with --skip_trx=on, one transaction of 20 statements for
  oltp_read_write).
- **p99 ×direct**: p99 of this target divided by the direct p99.
- **proxy CPU µs/q**: user+system CPU time of the proxy process (haproxy for
  relay, shardgate for shardgate) during the run, from /proc/PID/stat
  (10 ms ticks), divided by the queries of the run.
- **server CPU µs/q**: the same for mariadbd.
- **proxy cs/q**, **server cs/q**: context switches (voluntary and not) of
  the proxy's and of mariadbd's threads from 1 s after the run's start to
  1 s before its end, summed over /proc/PID/task/*/status, per query of
  that window: how often each was put to sleep and woken for a query.
- **proxy RSS MiB**: VmRSS of the proxy process after the run.
- **pipelined**: shardgate with pool.pipeline_connections: 4 and
  pipeline_depth: 8 (4 of its 16 connections carry several sessions'
  reads at once; issue 23); compare it with **shardgate** (one statement
  at a time per connection) and **relay**. It pipelines the text
  protocol's reads only: in the auto ps-mode rows it runs as shardgate.
- **sharded**: shardgate with the sysbench tables hash-sharded on id (4 shards
  × 2 sub-tables, every shard on the same mariadbd); only oltp_point_select
  and oltp_read_only (its range reads merged across shards).
- **errors**: errors sysbench ignored (only 1213 deadlocks are allowed, in
  oltp_read_write), reconnects, failed runs, and runs whose histogram p99
  disagreed with sysbench's own p99 line.
`

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func joinTargets(ts []Target) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}
