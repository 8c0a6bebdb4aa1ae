package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"time"
)

// Config is the benchmark matrix.
type Config struct {
	Threads   []int         // sysbench --threads, one cell each
	Rounds    int           // runs per cell and target; the cell reports medians
	Time      time.Duration // per run (whole seconds: sysbench --time)
	Warmup    time.Duration // per test and ps-mode, each target, before the cells; 0: none
	TableSize int           // rows per table
	Tables    int
	Tests     []string // sysbench tests, see SupportedTests
	PSModes   []string // sysbench --db-ps-mode values
	Targets   []Target // default AllTargets; the order of round 1
	Log       io.Writer
}

// DefaultConfig is the full matrix `make bench` runs.
func DefaultConfig() Config {
	return Config{
		Threads:   []int{1, 16, 64, 256, 1024},
		Rounds:    3,
		Time:      10 * time.Second,
		Warmup:    2 * time.Second,
		TableSize: 100000,
		Tables:    4,
		Tests:     []string{"oltp_point_select", "oltp_read_only", "oltp_read_write"},
		PSModes:   []string{"disable", "auto"},
		Targets:   MatrixTargets,
	}
}

// ShardedTests are the tests the Sharded target runs: point selects, and
// oltp_read_only, whose range reads (ORDER BY, DISTINCT, SUM over an id
// range) are merged across shards. The write tests are left out: their
// transactions write rows of several shards, which a sharded transaction
// refuses (writes stay on one shard).
var ShardedTests = []string{"oltp_point_select", "oltp_read_only"}

// targetsFor are the targets of test, in round-1 order.
func (c Config) targetsFor(test string) []Target {
	if slices.Contains(ShardedTests, test) {
		return c.targets()
	}
	return slices.DeleteFunc(slices.Clone(c.targets()), Target.IsSharded)
}

// Validate reports every problem of the configuration.
func (c Config) Validate() error {
	var errs []error
	if len(c.Threads) == 0 {
		errs = append(errs, errors.New("threads: need at least one thread count"))
	}
	for _, t := range c.Threads {
		if t < 1 || t > 4000 {
			errs = append(errs, fmt.Errorf("threads: %d is not in 1..4000", t))
		}
	}
	if c.Rounds < 1 {
		errs = append(errs, fmt.Errorf("rounds: %d, need at least 1", c.Rounds))
	}
	errs = append(errs, checkSeconds("time", c.Time, 1), checkSeconds("warmup", c.Warmup, 0))
	if c.TableSize < 1 {
		errs = append(errs, fmt.Errorf("table-size: %d, need at least 1", c.TableSize))
	}
	if c.Tables < 1 {
		errs = append(errs, fmt.Errorf("tables: %d, need at least 1", c.Tables))
	}
	if len(c.Tests) == 0 {
		errs = append(errs, errors.New("tests: need at least one test"))
	}
	for _, t := range c.Tests {
		if !slices.Contains(SupportedTests, t) {
			errs = append(errs, fmt.Errorf("tests: unknown test %q (supported: %v)", t, SupportedTests))
		}
	}
	if len(c.PSModes) == 0 {
		errs = append(errs, errors.New("ps-modes: need at least one mode"))
	}
	for _, m := range c.PSModes {
		if !slices.Contains(PSModes, m) {
			errs = append(errs, fmt.Errorf("ps-modes: unknown mode %q (want disable or auto)", m))
		}
	}
	for _, t := range c.Targets {
		if _, err := ParseTarget(string(t)); err != nil {
			errs = append(errs, fmt.Errorf("targets: %w", err))
		}
	}
	return errors.Join(errs...)
}

// checkSeconds accepts whole seconds of at least min.
func checkSeconds(name string, d time.Duration, min int) error {
	if d%time.Second != 0 {
		return fmt.Errorf("%s: %v is not a whole number of seconds (sysbench's --time resolution)", name, d)
	}
	if int(d/time.Second) < min {
		return fmt.Errorf("%s: %v, need at least %ds", name, d, min)
	}
	return nil
}

func (c Config) targets() []Target {
	if len(c.Targets) == 0 {
		return AllTargets
	}
	return c.Targets
}

// Run is one sysbench execution against one target.
type Run struct {
	Round       int // 1-based
	Slot        int // 1-based position of the target in the round's order
	Queries     int64
	QPS         float64
	P50         time.Duration
	P95         time.Duration
	P99         time.Duration
	ReportedP99 time.Duration // sysbench's own p99 line, for cross-checking
	Ignored     int64         // errors sysbench ignored (1213 deadlocks where allowed)
	Reconnects  int64
	ProxyCPU    time.Duration // CPU used by the proxy process during the run (0 for direct)
	ServerCPU   time.Duration // CPU used by mariadbd during the run
	// ProxyCS and ServerCS are the context switches of the proxy's and
	// mariadbd's threads during CSWindow, the middle of the run (0 for
	// direct's proxy; sampleSwitches).
	ProxyCS, ServerCS int64
	CSWindow          time.Duration
	ProxyRSS          int64 // proxy VmRSS after the run, bytes (0 for direct)
	// ProxyAllocs are the heap allocations of a shardgate target during
	// the run (go_memstats_mallocs_total; 0 for other targets).
	ProxyAllocs int64
	Failure     string // non-empty when the run failed; its numbers are not used
}

// Cell is one test x ps-mode x thread count x target.
type Cell struct {
	Test    string
	PSMode  string
	Threads int
	Target  Target
	Command string // the sysbench command line
	Runs    []Run
}

// Results is a finished (or interrupted) matrix run.
type Results struct {
	Config         Config
	Start, End     time.Time
	PrepareCommand string
	Cells          []*Cell
	// Interrupted is set when the run was cancelled before the end.
	Interrupted bool
}

// Cell returns the cell for the given coordinates, or nil.
func (r *Results) Cell(test, psMode string, threads int, target Target) *Cell {
	for _, c := range r.Cells {
		if c.Test == test && c.PSMode == psMode && c.Threads == threads && c.Target == target {
			return c
		}
	}
	return nil
}

// Prepare creates and fills the sysbench tables through the direct address.
func Prepare(ctx context.Context, env *Env, test string, tables, tableSize int) (string, error) {
	r := sysbenchRun{bin: env.Tools.Sysbench, test: test, addr: env.Addr(Direct), tables: tables, tableSize: tableSize}
	env.logf("preparing %d table(s) x %d rows: %s", tables, tableSize, r.commandLine("prepare"))
	if _, err := r.exec(ctx, "prepare"); err != nil {
		return "", fmt.Errorf("prepare the sysbench tables: %w", err)
	}
	return r.commandLine("prepare"), nil
}

// RunMatrix prepares the tables and runs every cell. Failed runs are recorded
// in their cell (Run.Failure) and the matrix goes on; it stops early, with an
// error and the results so far, when ctx is cancelled or a proxy process
// died.
func RunMatrix(ctx context.Context, env *Env, cfg Config) (*Results, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid benchmark configuration:\n%w", err)
	}
	for _, t := range cfg.targets() {
		if env.Addr(t) == "" && !env.startsLater(t) {
			return nil, fmt.Errorf("target %s was not started by StartEnv", t)
		}
	}
	res := &Results{Config: cfg, Start: time.Now()}
	defer func() { res.End = time.Now() }()
	var err error
	if res.PrepareCommand, err = Prepare(ctx, env, cfg.Tests[0], cfg.Tables, cfg.TableSize); err != nil {
		return res, err
	}
	if len(ShardedOf(cfg.targets())) > 0 {
		if err := env.StartSharded(ctx, cfg.Tables); err != nil {
			return res, err
		}
	}
	m := &matrix{env: env, cfg: cfg, res: res, total: totalRuns(cfg), began: time.Now()}
	for _, test := range cfg.Tests {
		for _, ps := range cfg.PSModes {
			if err := m.runGroup(ctx, test, ps); err != nil {
				res.Interrupted = true
				return res, err
			}
		}
	}
	return res, nil
}

func totalRuns(cfg Config) int {
	n := 0
	for _, test := range cfg.Tests {
		n += len(cfg.PSModes) * len(cfg.Threads) * cfg.Rounds * len(cfg.targetsFor(test))
	}
	return n
}

// matrix holds the state of a RunMatrix call.
type matrix struct {
	env   *Env
	cfg   Config
	res   *Results
	total int
	done  int
	began time.Time
}

// runGroup warms up and then runs all thread counts of one test and ps-mode.
func (m *matrix) runGroup(ctx context.Context, test, ps string) error {
	if err := m.warmup(ctx, test, ps); err != nil {
		return err
	}
	for _, threads := range m.cfg.Threads {
		cells := map[Target]*Cell{}
		for _, t := range m.cfg.targetsFor(test) {
			c := &Cell{Test: test, PSMode: ps, Threads: threads, Target: t}
			c.Command = m.sysbench(test, ps, threads, t, m.cfg.Time).commandLine("run")
			cells[t] = c
			m.res.Cells = append(m.res.Cells, c)
		}
		for round := 1; round <= m.cfg.Rounds; round++ {
			for slot, t := range rotate(m.cfg.targetsFor(test), round-1) {
				if err := m.runOne(ctx, cells[t], round, slot+1); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// rotate returns ts shifted left by n: round 1 runs ts in order, round 2
// starts with the second target, and so on.
func rotate[T any](ts []T, n int) []T {
	out := make([]T, 0, len(ts))
	for i := range ts {
		out = append(out, ts[(i+n)%len(ts)])
	}
	return out
}

func (m *matrix) sysbench(test, ps string, threads int, t Target, d time.Duration) sysbenchRun {
	return sysbenchRun{
		bin: m.env.Tools.Sysbench, test: test, addr: m.env.Addr(t),
		tables: m.cfg.Tables, tableSize: m.cfg.TableSize,
		threads: threads, seconds: int(d / time.Second), psMode: ps,
	}
}

// warmup runs every target once at the highest thread count, unmeasured, so
// that caches, pools and prepared-statement caches are warm for all alike.
func (m *matrix) warmup(ctx context.Context, test, ps string) error {
	if m.cfg.Warmup <= 0 {
		return nil
	}
	threads := slices.Max(m.cfg.Threads)
	for _, t := range m.cfg.targetsFor(test) {
		m.env.logf("warm-up %s ps=%s threads=%d %s (%v)", test, ps, threads, t, m.cfg.Warmup)
		r := m.sysbench(test, ps, threads, t, m.cfg.Warmup)
		if _, err := r.exec(ctx, "run"); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("warm-up of %s failed: %w", t, err)
		}
	}
	return nil
}

// runOne runs sysbench once for a cell and records the result.
func (m *matrix) runOne(ctx context.Context, c *Cell, round, slot int) error {
	r := m.sysbench(c.Test, c.PSMode, c.Threads, c.Target, m.cfg.Time)
	run := measure(ctx, m.env, r, c.Target)
	run.Round, run.Slot = round, slot
	c.Runs = append(c.Runs, run)
	m.done++
	m.progress(c, run)
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", ctx.Err())
	}
	if run.Failure != "" {
		if err := m.env.checkAlive(); err != nil {
			return err
		}
	}
	return nil
}

// progress logs one finished run with an estimate of the time left.
func (m *matrix) progress(c *Cell, r Run) {
	elapsed := time.Since(m.began)
	eta := time.Duration(float64(elapsed) / float64(m.done) * float64(m.total-m.done)).Round(time.Second)
	if r.Failure != "" {
		m.env.logf("[%d/%d] %s ps=%s threads=%d round %d %s: FAILED: %s", m.done, m.total,
			c.Test, c.PSMode, c.Threads, r.Round, c.Target, firstLine(r.Failure))
		return
	}
	m.env.logf("[%d/%d] %s ps=%s threads=%d round %d %-9s %9.0f qps  p99 %-9v (left ~%v)", m.done, m.total,
		c.Test, c.PSMode, c.Threads, r.Round, c.Target, r.QPS, r.P99, eta)
}

func firstLine(s string) string {
	for i, ch := range s {
		if ch == '\n' {
			return s[:i]
		}
	}
	return s
}

// measure runs sysbench and samples the CPU time of the proxy and the server
// around it, and the proxy's RSS after it.
func measure(ctx context.Context, env *Env, r sysbenchRun, t Target) Run {
	var run Run
	proxyPid, serverPid := env.ProxyPid(t), env.Server.Pid()
	allocs0, err5 := env.mallocs(ctx, t)
	proxy0, err1 := cpuTimeOrZero(proxyPid)
	server0, err2 := cpuTime(serverPid)
	cs := sampleSwitches(ctx, proxyPid, serverPid, time.Duration(r.seconds)*time.Second)
	out, err := r.exec(ctx, "run")
	proxy1, err3 := cpuTimeOrZero(proxyPid)
	server1, err4 := cpuTime(serverPid)
	sw := <-cs
	allocs1, err6 := env.mallocs(ctx, t)
	if ctx.Err() != nil {
		run.Failure = "interrupted"
		return run
	}
	if err := errors.Join(err, err1, err2, err3, err4, err5, err6, sw.err); err != nil {
		run.Failure = err.Error()
		return run
	}
	st, err := parseSysbench(out)
	if err != nil {
		run.Failure = fmt.Sprintf("%v\n%s", err, out)
		return run
	}
	run.Queries, run.QPS = st.Queries, st.QPS
	run.P50, run.P95, run.P99, run.ReportedP99 = st.P50, st.P95, st.P99, st.ReportedP99
	run.Ignored, run.Reconnects = st.Ignored, st.Reconnects
	run.ProxyCPU, run.ServerCPU = proxy1-proxy0, server1-server0
	run.ProxyCS, run.ServerCS, run.CSWindow = sw.proxy, sw.server, sw.window
	run.ProxyAllocs = allocs1 - allocs0
	if proxyPid != 0 {
		if run.ProxyRSS, err = rssBytes(proxyPid); err != nil {
			run.Failure = err.Error()
		}
	}
	if st.Queries <= 0 {
		run.Failure = "sysbench ran no queries:\n" + out
	}
	return run
}

func cpuTimeOrZero(pid int) (time.Duration, error) {
	if pid == 0 {
		return 0, nil
	}
	return cpuTime(pid)
}

// checkAlive reports a proxy or server that is no longer running.
func (e *Env) checkAlive() error {
	for _, c := range []*child{e.relay, e.proxy, e.sharded, e.noTele, e.pipelined, e.base, e.shardedBase, e.transfer} {
		if c == nil {
			continue
		}
		if done, how := c.exited(); done {
			return fmt.Errorf("%s died during the benchmark (%s); tail of %s:\n%s", c.name, how, c.logPath, c.logTail(30))
		}
	}
	if e.Server != nil && !e.Server.Running() {
		return fmt.Errorf("mariadbd died during the benchmark; see %s", e.Server.ErrorLog)
	}
	return nil
}

// Summary is a cell reduced over its successful rounds.
type Summary struct {
	OK, Failed int
	QPS        float64 // median
	// Spread is (max-min)/median of the QPS over rounds: how noisy the cell was.
	Spread        float64
	P50, P95, P99 time.Duration // medians
	// ProxyCPUPerQuery and ServerCPUPerQuery are medians, in microseconds.
	ProxyCPUPerQuery  float64
	ServerCPUPerQuery float64
	// ProxyCSPerQuery and ServerCSPerQuery are the medians of the context
	// switches per query.
	ProxyCSPerQuery, ServerCSPerQuery float64
	ProxyRSS                          int64 // median, bytes
	// AllocsPerQuery is the median of a shardgate target's heap
	// allocations per query.
	AllocsPerQuery float64
	Ignored        int64 // sum over rounds
	Reconnects     int64 // sum over rounds
	// P99Mismatch counts runs whose histogram p99 disagrees with sysbench's
	// own p99 line by more than its rounding.
	P99Mismatch int
}

// Summary reduces the cell's runs.
func (c *Cell) Summary() Summary {
	var s Summary
	var qps, p50, p95, p99, pcpu, scpu, pcs, scs, rss, allocs []float64
	for _, r := range c.Runs {
		if r.Failure != "" {
			s.Failed++
			continue
		}
		s.OK++
		qps = append(qps, r.QPS)
		p50 = append(p50, float64(r.P50))
		p95 = append(p95, float64(r.P95))
		p99 = append(p99, float64(r.P99))
		pcpu = append(pcpu, perQueryMicros(r.ProxyCPU, r.Queries))
		scpu = append(scpu, perQueryMicros(r.ServerCPU, r.Queries))
		rss = append(rss, float64(r.ProxyRSS))
		if r.Queries > 0 {
			allocs = append(allocs, float64(r.ProxyAllocs)/float64(r.Queries))
			if q := r.QPS * r.CSWindow.Seconds(); q > 0 {
				pcs = append(pcs, float64(r.ProxyCS)/q)
				scs = append(scs, float64(r.ServerCS)/q)
			}
		}
		s.Ignored += r.Ignored
		s.Reconnects += r.Reconnects
		if p99Disagrees(r.P99, r.ReportedP99) {
			s.P99Mismatch++
		}
	}
	if s.OK == 0 {
		return s
	}
	s.QPS = median(qps)
	if s.QPS > 0 {
		s.Spread = (slices.Max(qps) - slices.Min(qps)) / s.QPS
	}
	s.P50, s.P95, s.P99 = time.Duration(median(p50)), time.Duration(median(p95)), time.Duration(median(p99))
	s.ProxyCPUPerQuery, s.ServerCPUPerQuery = median(pcpu), median(scpu)
	s.ProxyRSS = int64(median(rss))
	if len(allocs) > 0 {
		s.AllocsPerQuery = median(allocs)
	}
	if len(pcs) > 0 {
		s.ProxyCSPerQuery, s.ServerCSPerQuery = median(pcs), median(scs)
	}
	return s
}

func perQueryMicros(cpu time.Duration, queries int64) float64 {
	if queries <= 0 {
		return 0
	}
	return float64(cpu.Microseconds()) / float64(queries)
}

// p99Disagrees compares the histogram p99 with sysbench's line, which is
// printed with two decimals of a millisecond.
func p99Disagrees(hist, reported time.Duration) bool {
	if reported == 0 {
		return false
	}
	d := hist - reported
	if d < 0 {
		d = -d
	}
	return d > 5*time.Microsecond+reported/100
}

// median of xs (mean of the middle two for an even count); 0 when empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
