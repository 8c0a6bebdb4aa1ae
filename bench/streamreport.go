package bench

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// StreamReport is everything WriteStreamReport renders.
type StreamReport struct {
	Results       *StreamResults
	System        SystemInfo
	Commands      []string // how mariadbd, haproxy and shardgate were started
	HAProxyConfig string
}

// NewStreamReport gathers the machine, versions and commands of env for res.
func NewStreamReport(ctx context.Context, env *Env, res *StreamResults) *StreamReport {
	return &StreamReport{
		Results:       res,
		System:        CollectSystemInfo(ctx, env),
		Commands:      env.Commands,
		HAProxyConfig: env.HAProxyConfig,
	}
}

// WriteStreamReport writes stream-<timestamp>.md into dir (created if
// needed) and returns its path. There is no "latest" copy: streaming runs
// are occasional checks, not the tracked matrix.
func WriteStreamReport(r *StreamReport, dir string) (string, error) {
	return writeModeReport(dir, "stream", r.Results.Start, r.Markdown())
}

// Markdown renders the whole report.
func (r *StreamReport) Markdown() string {
	var b strings.Builder
	res := r.Results
	fmt.Fprintf(&b, "# shardgate streaming benchmark, %s\n\n", res.Start.UTC().Format("2006-01-02 15:04 UTC"))
	if res.Interrupted {
		b.WriteString("**Interrupted: not every round finished; the table shows the runs that did.**\n\n")
	}
	fmt.Fprintf(&b, "Duration %v.\n\n", res.End.Sub(res.Start).Round(time.Second))
	writeMachineInfo(&b, r.System, "The Go client")
	b.WriteString("## Results\n\n")
	b.WriteString(res.Description() + "\n")
	b.WriteString(res.Table() + "\n")
	r.writeFailures(&b)
	r.writeCommands(&b)
	b.WriteString(streamColumnsLegend)
	return b.String()
}

func (r *StreamReport) writeFailures(b *strings.Builder) {
	var lines []string
	for _, c := range r.Results.Cells {
		for _, run := range c.Runs {
			if run.Failure != "" {
				lines = append(lines, fmt.Sprintf("### %s round %d\n\n```\n%s\n```\n",
					c.Target, run.Round, strings.TrimSpace(run.Failure)))
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

func (r *StreamReport) writeCommands(b *strings.Builder) {
	b.WriteString("## Commands\n\n```\n")
	for _, c := range r.Commands {
		b.WriteString(c + "\n")
	}
	b.WriteString("query: " + r.Results.Config.Query() + "\n")
	if r.Results.Cell(Sharded) != nil {
		b.WriteString("query through sharded: " + r.Results.Config.ShardedQuery() + "\n")
		for _, v := range streamViews(r.Results.Config) {
			b.WriteString(v + "\n")
		}
	}
	b.WriteString("```\n\n")
	if r.HAProxyConfig != "" {
		b.WriteString("HAProxy configuration (relay):\n\n```\n" + r.HAProxyConfig + "```\n\n")
	}
}

const streamColumnsLegend = `## Columns

- **MB/s (median)**: bytes of row data received divided by the time from
  sending the query to reading the last row (MB = 10^6 bytes); median over
  the rounds.
- **spread**: (max − min) / median of MB/s over the rounds.
- **×relay**: MB/s of this target divided by that of the HAProxy relay.
- **proxy CPU s per GB**: user+system CPU time of the proxy process (haproxy
  for relay, shardgate for shardgate) during the query, from /proc/PID/stat
  (10 ms ticks), per 10^9 bytes of row data; median over the rounds.
- **proxy peak RSS growth MiB (max)**: the highest VmRSS of the proxy
  process sampled every 20 ms during the query, minus its VmRSS just before
  the query; the largest over the rounds.
- **errors**: failed runs (query errors, or fewer rows or bytes than asked
  for).
`
