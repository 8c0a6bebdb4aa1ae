package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ScatterReport is everything WriteScatterReport renders.
type ScatterReport struct {
	Results  *ScatterResults
	System   SystemInfo
	Commands []string
}

// NewScatterReport gathers the machine, versions and commands of env.
func NewScatterReport(ctx context.Context, env *Env, res *ScatterResults) *ScatterReport {
	return &ScatterReport{Results: res, System: CollectSystemInfo(ctx, env), Commands: env.Commands}
}

// WriteScatterReport writes scatter-<timestamp>.md into dir and returns
// its path.
func WriteScatterReport(r *ScatterReport, dir string) (string, error) {
	return writeModeReport(dir, "scatter", r.Results.Start, r.Markdown())
}

// writeModeReport writes an occasional benchmark's report,
// <mode>-<timestamp>.md, into dir (created if needed).
func writeModeReport(dir, mode string, start time.Time, md string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create results directory: %w", err)
	}
	path := filepath.Join(dir, mode+"-"+start.UTC().Format("20060102-150405")+".md")
	if err := writeAtomic(path, []byte(md)); err != nil {
		return "", err
	}
	return path, nil
}

// Markdown renders the whole report.
func (r *ScatterReport) Markdown() string {
	var b strings.Builder
	res := r.Results
	fmt.Fprintf(&b, "# shardgate merge benchmark (scatter), %s\n\n", res.Start.UTC().Format("2006-01-02 15:04 UTC"))
	if res.Interrupted {
		b.WriteString("**Interrupted: not every run finished; the tables show the runs that did.**\n\n")
	}
	fmt.Fprintf(&b, "Duration %v. Every number is the median over the successful rounds of its cell.\n\n", res.End.Sub(res.Start).Round(time.Second))
	writeMachineInfo(&b, r.System, "The Go client")
	b.WriteString("## Results\n\n")
	b.WriteString(res.Description() + "\n")
	b.WriteString(res.Tables())
	b.WriteString(res.MergeTable())
	r.writeFailures(&b)
	b.WriteString("## Commands\n\n```\n")
	for _, c := range r.Commands {
		b.WriteString(c + "\n")
	}
	b.WriteString("```\n\n")
	b.WriteString(scatterColumnsLegend)
	return b.String()
}

func (r *ScatterReport) writeFailures(b *strings.Builder) {
	var lines []string
	for _, c := range r.Results.Cells {
		for _, run := range c.Runs {
			if run.Failure != "" {
				lines = append(lines, fmt.Sprintf("### %s ps=%s %s round %d\n\n```\n%s\n```\n",
					c.Query, c.PSMode, c.Target, run.Round, strings.TrimSpace(run.Failure)))
			}
		}
	}
	if len(lines) > 0 {
		b.WriteString("## Failed runs\n\n" + strings.Join(lines, "\n") + "\n")
	}
}

// Description says what ran: the table, the layout, the statements.
func (r *ScatterResults) Description() string {
	c := r.Config
	var b strings.Builder
	fmt.Fprintf(&b, "`%s`: %d rows (id BIGINT primary key, k BIGINT distinct and indexed, g INT with %d values, x INT, c CHAR(60); index (g, x)); "+
		"unsharded for direct and shardgate, mod-sharded on id over %d shards × %d sub-tables for sharded (every shard on the one mariadbd). "+
		"%d client connections per run, each running the statement in a loop for %v; %d round(s), targets interleaved, order rotating every round; "+
		"every run first checks its answer against the server's.\n\n",
		ScatterTable, c.Rows, c.Groups, ShardedShards, ShardedSubTables, c.Threads, c.Time, c.Rounds)
	for _, name := range c.Queries {
		q, _ := scatterQuery(name)
		fmt.Fprintf(&b, "- **%s**: `%s` (the shards answer %d rows in all)\n", q.Name, q.SQL, r.ShardRows[q.Name])
	}
	return b.String()
}

// Tables renders one table per query and ps-mode.
func (r *ScatterResults) Tables() string {
	var b strings.Builder
	for _, q := range r.Config.Queries {
		for _, ps := range r.Config.PSModes {
			direct := scatterSummaryOf(r.Cell(q, ps, Direct))
			fmt.Fprintf(&b, "### %s, ps-mode %s\n\n", q, ps)
			b.WriteString("| target | QPS | spread | ×direct | p50 ms | p99 ms | rows/q | rows read/q | proxy CPU µs/q | µs/row returned | µs/row read | server CPU µs/q | errors |\n")
			b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
			for _, t := range r.Config.Targets {
				if c := r.Cell(q, ps, t); c != nil {
					b.WriteString("| " + strings.Join(r.row(c, direct), " | ") + " |\n")
				}
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func scatterSummaryOf(c *ScatterCell) *ScatterSummary {
	if c == nil {
		return nil
	}
	if s := c.Summary(); s.OK > 0 {
		return &s
	}
	return nil
}

// rowsRead is how many rows the proxy of target t reads per query of a
// cell: the shards' rows for Sharded, the rows returned otherwise.
func (r *ScatterResults) rowsRead(c *ScatterCell, s ScatterSummary) float64 {
	if c.Target.IsSharded() {
		return float64(r.ShardRows[c.Query])
	}
	return s.RowsPerQ
}

func (r *ScatterResults) row(c *ScatterCell, direct *ScatterSummary) []string {
	s := c.Summary()
	errs := "0"
	if s.Failed > 0 {
		errs = fmt.Sprintf("%d failed run(s)", s.Failed)
	}
	if s.OK == 0 {
		return []string{string(c.Target), "failed", "", "", "", "", "", "", "", "", "", "", errs}
	}
	vsDirect := ""
	if direct != nil {
		vsDirect = ratio(s.QPS, direct.QPS)
	}
	read := r.rowsRead(c, s)
	cpu, perRow, perRead := "—", "—", "—"
	if c.Target != Direct {
		cpu = fmt.Sprintf("%.1f", s.ProxyCPUPerQ)
		perRow = fmt.Sprintf("%.2f", s.ProxyCPUPerQ/s.RowsPerQ)
		perRead = fmt.Sprintf("%.2f", s.ProxyCPUPerQ/read)
	}
	return []string{string(c.Target), fmt.Sprintf("%.0f", s.QPS), fmt.Sprintf("%.0f%%", s.Spread*100), vsDirect,
		ms(s.P50), ms(s.P99), fmt.Sprintf("%.0f", s.RowsPerQ), fmt.Sprintf("%.0f", read),
		cpu, perRow, perRead, fmt.Sprintf("%.1f", s.ServerCPUPerQ), errs}
}

// MergeTable compares the Sharded target (the merge) with unsharded
// shardgate and the server, query by query: issue 14 asks that the merge
// add no more than the relay cost of the rows it reads; issue 23 reads
// the proxy CPU the merge adds per part (shard). With the base build's
// targets, its pair follows each row, named "(base)".
func (r *ScatterResults) MergeTable() string {
	var rows []string
	for _, q := range r.Config.Queries {
		for _, ps := range r.Config.PSModes {
			for _, t := range ShardedOf(r.Config.Targets) {
				if row, ok := r.mergeRow(q, ps, t); ok {
					rows = append(rows, row)
				}
			}
		}
	}
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### Merge (sharded) against one server\n\nThe same statement through the sharded target (%d shards, merged by shardgate) against unsharded shardgate (of the same build) and the server itself, same run. **CPU µs/part**: the proxy CPU the merge adds to the unsharded statement's, per shard.\n\n", ShardedShards)
	b.WriteString("| query | ps-mode | QPS sharded | ×unsharded | ×direct | p99 ×unsharded | p99 ×direct | proxy CPU µs/q sharded | unsharded | ×unsharded | sharded µs/row read | unsharded µs/row relayed | CPU µs/part |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	b.WriteString(strings.Join(rows, "\n") + "\n\n")
	return b.String()
}

// mergeRow is MergeTable's row for sharded target t (against its
// build's unsharded target); false: t did not run q.
func (r *ScatterResults) mergeRow(q, ps string, t Target) (string, bool) {
	sh := r.Cell(q, ps, t)
	if sh == nil {
		return "", false
	}
	name := q
	if t == ShardedBase {
		name += " (base)"
	}
	s, u, d := scatterSummaryOf(sh), scatterSummaryOf(r.Cell(q, ps, t.Unsharded())), scatterSummaryOf(r.Cell(q, ps, Direct))
	if s == nil || u == nil {
		return fmt.Sprintf("| %s | %s | failed | | | | | | | | | | |", name, ps), true
	}
	vsDirect, p99Direct := "", ""
	if d != nil {
		vsDirect, p99Direct = ratio(s.QPS, d.QPS), ratio(float64(s.P99), float64(d.P99))
	}
	read := r.rowsRead(sh, *s)
	return fmt.Sprintf("| %s | %s | %.0f | %s | %s | %s | %s | %.1f | %.1f | %s | %.2f | %.2f | %.1f |", name, ps,
		s.QPS, ratio(s.QPS, u.QPS), vsDirect, ratio(float64(s.P99), float64(u.P99)), p99Direct,
		s.ProxyCPUPerQ, u.ProxyCPUPerQ, ratio(s.ProxyCPUPerQ, u.ProxyCPUPerQ),
		s.ProxyCPUPerQ/read, u.ProxyCPUPerQ/u.RowsPerQ, (s.ProxyCPUPerQ-u.ProxyCPUPerQ)/ShardedShards), true
}

const scatterColumnsLegend = `## Columns

- **QPS**: statements answered per second by all connections; **spread**:
  (max − min) / median over the rounds; **×direct**: QPS over the server's.
- **p50 / p99 ms**: latency of one statement, sending it to reading its
  last row (HdrHistogram, µs resolution).
- **rows/q**: rows returned per statement; **rows read/q**: rows the proxy
  reads per statement (for sharded, what the shards answer the pushed-down
  statements with; otherwise the rows returned).
- **proxy CPU µs/q**: user+system CPU time of the proxy process during the
  run (/proc/PID/stat, 10 ms ticks) per statement; **µs/row returned** and
  **µs/row read**: the same per row.
- **server CPU µs/q**: the same for mariadbd.
- **errors**: failed runs (a query error, or an answer that differs from the
  server's).
`
