package bench

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// TransferReport is everything WriteTransferReport renders.
type TransferReport struct {
	Results  *TransferResults
	System   SystemInfo
	Commands []string
}

// NewTransferReport gathers the machine, versions and commands of env.
func NewTransferReport(ctx context.Context, env *Env, res *TransferResults) *TransferReport {
	return &TransferReport{Results: res, System: CollectSystemInfo(ctx, env), Commands: env.Commands}
}

// WriteTransferReport writes transfer-<timestamp>.md into dir and returns
// its path.
func WriteTransferReport(r *TransferReport, dir string) (string, error) {
	return writeModeReport(dir, "transfer", r.Results.Start, r.Markdown())
}

// Markdown renders the whole report.
func (r *TransferReport) Markdown() string {
	var b strings.Builder
	res := r.Results
	fmt.Fprintf(&b, "# shardgate transfer benchmark (atomic transactions), %s\n\n", res.Start.UTC().Format("2006-01-02 15:04 UTC"))
	if res.Interrupted {
		b.WriteString("**Interrupted: not every run finished; the tables show the runs that did.**\n\n")
	}
	fmt.Fprintf(&b, "Duration %v. Every number is the median over the successful rounds of its case.\n\n", res.End.Sub(res.Start).Round(time.Second))
	writeMachineInfo(&b, r.System, "The Go client")
	b.WriteString("## Results\n\n")
	b.WriteString(res.Description() + "\n")
	b.WriteString(res.Tables())
	r.writeFailures(&b)
	b.WriteString("## Commands\n\n```\n")
	for _, c := range r.Commands {
		b.WriteString(c + "\n")
	}
	b.WriteString("```\n\n")
	b.WriteString(transferColumnsLegend)
	return b.String()
}

func (r *TransferReport) writeFailures(b *strings.Builder) {
	var lines []string
	for _, c := range r.Results.Cells {
		for _, run := range c.Runs {
			if run.Failure != "" {
				lines = append(lines, fmt.Sprintf("### %s round %d\n\n```\n%s\n```\n", c.Case, run.Round, strings.TrimSpace(run.Failure)))
			}
		}
		if c.Count.Failure != "" {
			lines = append(lines, fmt.Sprintf("### %s, counting round trips\n\n```\n%s\n```\n", c.Case, strings.TrimSpace(c.Count.Failure)))
		}
	}
	if len(lines) > 0 {
		b.WriteString("## Failed runs\n\n" + strings.Join(lines, "\n") + "\n")
	}
}

// Description says what ran.
func (r *TransferResults) Description() string {
	c := r.Config
	var cases []string
	for _, tc := range c.Cases {
		cases = append(cases, tc.String())
	}
	return fmt.Sprintf("Transfers `BEGIN; UPDATE %[1]s SET balance = balance + x WHERE id = a; UPDATE %[1]s SET balance = balance - x WHERE id = b; COMMIT` "+
		"(text protocol, a < b) through one shardgate, %[2]d accounts hash-sharded on id over %[3]d shards (every shard on the one mariadbd), "+
		"a copy per policy in a schema that differs only in `cross_shard_writes`. "+
		"**single**: both accounts on one shard (either, at random); **cross**: one on each. "+
		"The proxy answers BEGIN and opens the transaction on the shard of its first statement (under atomic, the coordinator). "+
		"Cases %[4]s: %[5]d client connections per run, each running transfers in a loop for %[6]v; %[7]d round(s), cases interleaved, order rotating every round; "+
		"after every run the balances must add up to what was loaded. Recovery runs every %[8]v (`transactions.recovery_interval`) and removes "+
		"the decision row of every two-phase commit; a run starts once the previous runs' rows are gone and recovery has stopped deleting. "+
		"Round trips: %[9]d transfers per case on one connection, counted in the server's general log.\n",
		TransferTable, c.Accounts, TransferShards, strings.Join(cases, ", "), c.Threads, c.Time, c.Rounds, c.RecoveryInterval, c.Count)
}

// Tables renders the cases and, for the pairs of cases present, atomic
// against the policies it is compared with.
func (r *TransferResults) Tables() string {
	var b strings.Builder
	b.WriteString("### Transfers\n\n")
	b.WriteString("| case | transfers/s | spread | p50 ms | p99 ms | proxy CPU µs/txn | server CPU µs/txn | round trips/txn | with XA | decision cleanup/txn | errors |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, c := range r.Cells {
		b.WriteString("| " + strings.Join(transferRow(c), " | ") + " |\n")
	}
	b.WriteString("\n")
	var rows []string
	for _, p := range [][2]TransferCase{
		{{TransferSingle, "atomic"}, {TransferSingle, "refuse"}},
		{{TransferCross, "atomic"}, {TransferCross, "allow"}},
		{{TransferCross, "atomic"}, {TransferSingle, "atomic"}},
	} {
		a, o := r.Cell(p[0]), r.Cell(p[1])
		if a == nil || o == nil {
			continue
		}
		rows = append(rows, compareRow(a, o))
	}
	if len(rows) > 0 {
		b.WriteString("### Atomic against the others\n\nThe first case against the second, same run. Δ is first − second.\n\n")
		b.WriteString("| cases | transfers/s × | p50 × | p99 × | proxy CPU µs/txn | Δ µs/txn | × | server CPU Δ µs/txn | round trips/txn | Δ |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		b.WriteString(strings.Join(rows, "\n") + "\n\n")
	}
	return b.String()
}

func transferRow(c *TransferCell) []string {
	s := c.Summary()
	errs := "0"
	if s.Failed > 0 {
		errs = fmt.Sprintf("%d failed run(s)", s.Failed)
	}
	trips, withXA, cleanup := countCells(c.Count)
	if s.OK == 0 {
		return []string{c.Case.String(), "failed", "", "", "", "", "", trips, withXA, cleanup, errs}
	}
	return []string{c.Case.String(), fmt.Sprintf("%.0f", s.QPS), fmt.Sprintf("%.0f%%", s.Spread*100), ms(s.P50), ms(s.P99),
		fmt.Sprintf("%.1f", s.ProxyCPUPerQ), fmt.Sprintf("%.1f", s.ServerCPUPerQ), trips, withXA, cleanup, errs}
}

// countCells renders a case's round trips ("" when not counted, "failed").
func countCells(c TransferCount) (trips, withXA, cleanup string) {
	switch {
	case c.Failure != "":
		return "failed", "", ""
	case c.Transfers == 0:
		return "", "", ""
	}
	return fmt.Sprintf("%.2f", c.RoundTrips), fmt.Sprintf("%.2f", c.XA), fmt.Sprintf("%.2f", c.Cleanup)
}

func compareRow(a, o *TransferCell) string {
	name := a.Case.String() + " ÷ " + o.Case.String()
	sa, so := a.Summary(), o.Summary()
	if sa.OK == 0 || so.OK == 0 {
		return "| " + name + " | failed | | | | | | | | |"
	}
	trips, delta := "", ""
	if ca, co := a.Count, o.Count; ca.Transfers > 0 && co.Transfers > 0 && ca.Failure == "" && co.Failure == "" {
		trips, delta = fmt.Sprintf("%.2f / %.2f", ca.RoundTrips, co.RoundTrips), fmt.Sprintf("%+.2f", ca.RoundTrips-co.RoundTrips)
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %.1f / %.1f | %+.1f | %s | %+.1f | %s | %s |", name,
		ratio(sa.QPS, so.QPS), ratio(float64(sa.P50), float64(so.P50)), ratio(float64(sa.P99), float64(so.P99)),
		sa.ProxyCPUPerQ, so.ProxyCPUPerQ, sa.ProxyCPUPerQ-so.ProxyCPUPerQ, ratio(sa.ProxyCPUPerQ, so.ProxyCPUPerQ),
		sa.ServerCPUPerQ-so.ServerCPUPerQ, trips, delta)
}

const transferColumnsLegend = `## Columns

- **transfers/s**: transactions committed per second by all connections;
  **spread**: (max − min) / median over the rounds.
- **p50 / p99 ms**: latency of one transfer, BEGIN sent to COMMIT answered
  (HdrHistogram, µs resolution).
- **proxy CPU µs/txn**: user+system CPU time of the proxy process during
  the run (/proc/PID/stat, 10 ms ticks) per transfer, recovery's work
  included; **server CPU µs/txn**: the same for mariadbd.
- **round trips/txn**: commands the proxy's connections of the sessions
  sent to the backends per transfer (each one request and its answer; a
  batch like ` + "`XA END …;XA PREPARE …`" + ` is one), from the server's
  general log over a separate pass on one connection; **with XA**: those
  carrying an XA statement; **decision cleanup/txn**: recovery's DELETEs of
  decision rows per transfer, off the commit path.
- **errors**: failed runs (an error, or balances that no longer add up).
`
