// Command sgbench benchmarks shardgate against the server it fronts and
// against a plain TCP relay (HAProxy), and finds the highest constant rate a
// target sustains within a latency SLO and how a large result streams
// through each target. See docs/benchmarks.md.
//
//	sgbench [run] [flags]   the sysbench matrix (what `make bench` runs)
//	sgbench rate [flags]    constant-rate capacity search
//	sgbench stream [flags]  a large result streamed through every target
//	sgbench scatter [flags] merges across shards against one server (QPS, latency, CPU per row)
//	sgbench memory [flags]  the proxy's memory during large merges over 4 shards
//	sgbench transfer [flags] transfers on one shard and atomic ones over two (QPS, latency, CPU and round trips per transaction)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/shardgate/shardgate/bench"
)

const usageText = `usage:
  sgbench [run] [flags]   run the sysbench matrix: direct / relay (HAProxy) / shardgate
  sgbench rate [flags]    constant-rate capacity search against one target
  sgbench stream [flags]  stream a large result (default 1 GiB) through every target
  sgbench scatter [flags] ORDER BY ... LIMIT and GROUP BY merged over 4 shards against one server
  sgbench memory [flags]  proxy RSS during large merges (default 10 million rows of 1 KiB over 4 shards)
  sgbench transfer [flags] transfers within one shard and across two: atomic against refuse and allow

"sgbench <command> -h" lists a command's flags.
See docs/benchmarks.md.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cmd := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	ctx, stop := signalContext()
	defer stop()
	switch cmd {
	case "run":
		return runMatrix(ctx, args, stdout, stderr)
	case "rate":
		return runRate(ctx, args, stdout, stderr)
	case "stream":
		return runStream(ctx, args, stdout, stderr)
	case "scatter":
		return runScatter(ctx, args, stdout, stderr)
	case "memory":
		return runMemory(ctx, args, stdout, stderr)
	case "transfer":
		return runTransfer(ctx, args, stdout, stderr)
	case "help":
		fmt.Fprint(stdout, usageText)
		return 0
	}
	fmt.Fprintf(stderr, "sgbench: unknown command %q\n%s", cmd, usageText)
	return 2
}

// signalContext is cancelled by the first SIGINT or SIGTERM, which makes the
// harness stop what it started and exit; a second signal kills it at once
// (children still die: they have Pdeathsig set).
func signalContext() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}

// exitCode maps an error to the process exit status.
func exitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, context.Canceled):
		return 130
	}
	return 1
}

// envFlags are the flags all commands share.
type envFlags struct {
	bufferPool   string
	shardgateBin string
	shardgateRef string
	adminAddr    string
	baseBin      string
	baseRef      string
	quiet        bool
}

func (f *envFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.bufferPool, "buffer-pool", bench.DefaultBufferPool, "mariadbd --innodb-buffer-pool-size (must hold the tables)")
	fs.StringVar(&f.shardgateBin, "shardgate-bin", "", "use this shardgate binary instead of building ./cmd/shardgate")
	fs.StringVar(&f.shardgateRef, "shardgate-ref", "", "build shardgate from this git revision (via git archive) instead of the working tree, e.g. HEAD")
	fs.StringVar(&f.adminAddr, "shardgate-admin", "", "shardgate --admin-http address, e.g. 127.0.0.1:6080 (default: a free port; printed at start)")
	fs.StringVar(&f.baseBin, "base-bin", "", "the shardgate binary of the targets shardgate-base and sharded-base (a change's before, beside its after)")
	fs.StringVar(&f.baseRef, "base-ref", "", "build the targets shardgate-base and sharded-base from this git revision, e.g. main")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress messages on stderr")
}

// validate rejects contradictory flags before anything is started.
func (f *envFlags) validate() error {
	if f.shardgateBin != "" && f.shardgateRef != "" {
		return errors.New("--shardgate-bin and --shardgate-ref: use one or the other")
	}
	if f.baseBin != "" && f.baseRef != "" {
		return errors.New("--base-bin and --base-ref: use one or the other")
	}
	return nil
}

func (f *envFlags) options(targets []bench.Target, stderr io.Writer) bench.EnvOptions {
	o := bench.EnvOptions{Targets: targets, BufferPool: f.bufferPool, ShardgateBin: f.shardgateBin, ShardgateRef: f.shardgateRef, AdminAddr: f.adminAddr,
		BaseBin: f.baseBin, BaseRef: f.baseRef, Log: stderr}
	if f.quiet {
		o.Log = io.Discard
	}
	return o
}

// startEnv starts the environment and tells where shardgate's admin port is.
func startEnv(ctx context.Context, opts bench.EnvOptions, stderr io.Writer) (*bench.Env, error) {
	env, err := bench.StartEnv(ctx, opts)
	if err != nil {
		return nil, err
	}
	if env.AdminAddr != "" {
		fmt.Fprintf(stderr, "sgbench: shardgate admin: http://%s/metrics and http://%s/debug/pprof/\n", env.AdminAddr, env.AdminAddr)
	}
	return env, nil
}

func closeEnv(env *bench.Env, stderr io.Writer) {
	if err := env.Close(); err != nil {
		fmt.Fprintf(stderr, "sgbench: cleanup: %v\n", err)
	}
}

// ---------------------------------------------------------------------------
// sgbench run

func runMatrix(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, out, ef, err := parseRunFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "sgbench: %v\n", err)
		return 2
	}
	cfg.Log = stderr
	if ef.quiet {
		cfg.Log = io.Discard
	}
	env, err := startEnv(ctx, ef.options(cfg.Targets, stderr), stderr)
	if err != nil {
		fmt.Fprintf(stderr, "sgbench: %v\n", err)
		return exitCode(err)
	}
	defer closeEnv(env, stderr)
	res, runErr := bench.RunMatrix(ctx, env, cfg)
	if res != nil && len(res.Cells) > 0 {
		if err := writeMatrixReport(env, res, out, stdout, stderr); err != nil {
			fmt.Fprintf(stderr, "sgbench: %v\n", err)
			return 1
		}
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "sgbench: %v\n", runErr)
		return exitCode(runErr)
	}
	if failed := failedRuns(res); failed > 0 {
		fmt.Fprintf(stderr, "sgbench: %d run(s) failed; see \"Failed runs\" in the report\n", failed)
		return 1
	}
	return 0
}

func writeMatrixReport(env *bench.Env, res *bench.Results, out string, stdout, stderr io.Writer) error {
	// The report is written even after an interrupt, so use a fresh context.
	rep := bench.NewReport(context.Background(), env, res)
	files, err := bench.WriteReport(rep, out)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, rep.Tables())
	fmt.Fprintf(stderr, "sgbench: wrote %s\n", strings.Join(files.Paths(), ", "))
	if res.Interrupted {
		fmt.Fprintln(stderr, "sgbench: the run was interrupted, so latest.md and latest.png were left alone")
	}
	return nil
}

func failedRuns(res *bench.Results) int {
	n := 0
	for _, c := range res.Cells {
		n += c.Summary().Failed
	}
	return n
}

func parseRunFlags(args []string, stderr io.Writer) (bench.Config, string, envFlags, error) {
	cfg := bench.DefaultConfig()
	var ef envFlags
	fs := flag.NewFlagSet("sgbench run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	threads := intList(cfg.Threads)
	tests := stringList(cfg.Tests)
	psModes := stringList(cfg.PSModes)
	targets := stringList(targetNames(cfg.Targets))
	fs.Var(&threads, "threads", "sysbench thread counts, comma-separated")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "rounds per cell (targets interleaved, order rotated each round); cells report medians")
	fs.DurationVar(&cfg.Time, "time", cfg.Time, "duration of each run (whole seconds)")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "unmeasured warm-up per target, test and ps-mode (0: none)")
	fs.IntVar(&cfg.TableSize, "table-size", cfg.TableSize, "rows per sysbench table")
	fs.IntVar(&cfg.Tables, "tables", cfg.Tables, "number of sysbench tables")
	fs.Var(&tests, "tests", "sysbench tests, comma-separated")
	fs.Var(&psModes, "ps-modes", "sysbench --db-ps-mode values, comma-separated (disable, auto)")
	fs.Var(&targets, "targets", "targets, comma-separated, in round-1 order (direct, relay, shardgate, sharded, shardgate-notele, shardgate-base, sharded-base)")
	out := fs.String("out", "bench/results", "directory for <timestamp>.md, latest.md and the PNG charts")
	ef.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return cfg, "", ef, err
	}
	cfg.Threads, cfg.Tests, cfg.PSModes = threads, tests, psModes
	var err error
	if cfg.Targets, err = parseTargets(targets); err != nil {
		return cfg, "", ef, err
	}
	if err := errors.Join(cfg.Validate(), ef.validate()); err != nil {
		return cfg, "", ef, err
	}
	return cfg, *out, ef, nil
}

// parseFlags parses and rejects positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags only; see -h)", fs.Arg(0))
	}
	return nil
}

func targetNames(ts []bench.Target) []string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return s
}

func parseTargets(names []string) ([]bench.Target, error) {
	var ts []bench.Target
	for _, n := range names {
		t, err := bench.ParseTarget(n)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	if len(ts) == 0 {
		return nil, errors.New("targets: need at least one")
	}
	return ts, nil
}

// ---------------------------------------------------------------------------
// sgbench rate

func runRate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, plan, ef, err := parseRateFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "sgbench rate: %v\n", err)
		return 2
	}
	cfg.Log = stderr
	env, err := startEnv(ctx, ef.options([]bench.Target{cfg.Target}, stderr), stderr)
	if err != nil {
		fmt.Fprintf(stderr, "sgbench rate: %v\n", err)
		return exitCode(err)
	}
	defer closeEnv(env, stderr)
	if _, err := bench.Prepare(ctx, env, "oltp_point_select", 1, cfg.TableSize); err != nil {
		fmt.Fprintf(stderr, "sgbench rate: %v\n", err)
		return exitCode(err)
	}
	res, runErr := bench.RunRate(ctx, env, cfg)
	if res != nil {
		fmt.Fprint(stdout, res.Markdown())
		if plan.targetQPS > 0 {
			fmt.Fprintln(stdout, "\n"+bench.CapacityPlanText(plan.targetQPS, res.MaxPassing, plan.headroom))
		}
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "sgbench rate: %v\n", runErr)
		return exitCode(runErr)
	}
	return 0
}

// capacityFlags ask `sgbench rate` for a capacity plan.
type capacityFlags struct {
	targetQPS int
	headroom  float64
}

func parseRateFlags(args []string, stderr io.Writer) (bench.RateConfig, capacityFlags, envFlags, error) {
	cfg := bench.DefaultRateConfig()
	var ef envFlags
	var plan capacityFlags
	var rates intList
	fs := flag.NewFlagSet("sgbench rate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("target", string(cfg.Target), "direct, relay or shardgate")
	fs.DurationVar(&cfg.SLOP99, "slo-p99", cfg.SLOP99, "a step passes while its p99 latency stays at or below this")
	fs.IntVar(&cfg.Start, "start", cfg.Start, "first rate, queries/s")
	fs.IntVar(&cfg.Step, "step", cfg.Step, "rate increment per step, queries/s")
	fs.IntVar(&cfg.Max, "max", cfg.Max, "highest rate to try, queries/s")
	fs.Var(&rates, "rates", "rates to try instead of --start/--step/--max, queries/s, comma-separated, ascending")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "duration of each step")
	fs.IntVar(&cfg.Conns, "conns", cfg.Conns, "client connections")
	fs.StringVar(&cfg.Query, "query", cfg.Query, "workload: point (SELECT c FROM sbtest1 WHERE id=?)")
	fs.StringVar(&cfg.PSMode, "ps-mode", cfg.PSMode, "auto (server-side prepared statement) or disable (text queries)")
	fs.IntVar(&cfg.TableSize, "table-size", cfg.TableSize, "rows in sbtest1 (ids are drawn uniformly from 1..N)")
	fs.Float64Var(&cfg.MinAchieved, "min-achieved", cfg.MinAchieved, "a step fails when it achieves less than this fraction of its rate")
	fs.IntVar(&cfg.Retries, "retries", cfg.Retries, "repeat a failing step this many times before stopping (a rate passes if any attempt does)")
	fs.IntVar(&plan.targetQPS, "target-qps", 0, "print a capacity plan for this many queries/s at peak")
	fs.Float64Var(&plan.headroom, "headroom", bench.DefaultHeadroom, "the capacity plan runs each proxy at most at this fraction of its measured capacity")
	ef.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return cfg, plan, ef, err
	}
	t, err := bench.ParseTarget(*target)
	if err != nil {
		return cfg, plan, ef, err
	}
	cfg.Target, cfg.Rates = t, rates
	var errs []error
	if plan.targetQPS < 0 {
		errs = append(errs, fmt.Errorf("target-qps: %d, must be >= 0", plan.targetQPS))
	}
	if plan.headroom <= 0 || plan.headroom > 1 {
		errs = append(errs, fmt.Errorf("headroom: %v is not in (0, 1]", plan.headroom))
	}
	if err := errors.Join(append(errs, cfg.Validate(), ef.validate())...); err != nil {
		return cfg, plan, ef, err
	}
	return cfg, plan, ef, nil
}

// ---------------------------------------------------------------------------
// sgbench stream

func runStream(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, out, ef, err := parseStreamFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "sgbench stream: %v\n", err)
		return 2
	}
	env, err := startEnv(ctx, ef.options(cfg.Targets, stderr), stderr)
	if err != nil {
		fmt.Fprintf(stderr, "sgbench stream: %v\n", err)
		return exitCode(err)
	}
	defer closeEnv(env, stderr)
	res, runErr := bench.RunStream(ctx, env, cfg)
	m := modeResult{name: "stream", runErr: runErr, what: "run(s)"}
	if res != nil && res.Runs() > 0 {
		m.tables, m.failed = res.Description()+"\n"+res.Table(), res.Failed()
		m.write = func() (string, error) {
			return bench.WriteStreamReport(bench.NewStreamReport(context.Background(), env, res), out)
		}
	}
	return m.finish(out, stdout, stderr)
}

// modeResult is the outcome of an sgbench mode: the tables it prints, how
// it writes its report file, its error and how many of its runs failed.
type modeResult struct {
	name, tables, what string
	write              func() (path string, err error)
	runErr             error
	failed             int
}

// finish prints the tables and, unless out is empty, writes the report
// (with a fresh context: even after an interrupt), and returns the
// mode's exit code.
func (m modeResult) finish(out string, stdout, stderr io.Writer) int {
	if m.write != nil {
		fmt.Fprint(stdout, m.tables)
		if out != "" {
			path, err := m.write()
			if err != nil {
				fmt.Fprintf(stderr, "sgbench %s: %v\n", m.name, err)
				return 1
			}
			fmt.Fprintf(stderr, "sgbench %s: wrote %s\n", m.name, path)
		}
	}
	if m.runErr != nil {
		fmt.Fprintf(stderr, "sgbench %s: %v\n", m.name, m.runErr)
		return exitCode(m.runErr)
	}
	if m.failed > 0 {
		fmt.Fprintf(stderr, "sgbench %s: %d %s failed; see \"Failed runs\" in the report\n", m.name, m.failed, m.what)
		return 1
	}
	return 0
}

func parseStreamFlags(args []string, stderr io.Writer) (bench.StreamConfig, string, envFlags, error) {
	cfg := bench.DefaultStreamConfig()
	var ef envFlags
	fs := flag.NewFlagSet("sgbench stream", flag.ContinueOnError)
	fs.SetOutput(stderr)
	size := byteSize(cfg.Size)
	targets := stringList(targetNames(cfg.Targets))
	fs.Var(&size, "size", "`bytes` of row data per run, e.g. 1GiB, 256MiB or a plain number (rounded down to whole rows)")
	fs.IntVar(&cfg.RowBytes, "row-bytes", cfg.RowBytes, "bytes per row")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "runs per target (targets interleaved, order rotated each round); the table reports medians")
	fs.Var(&targets, "targets", "targets, comma-separated, in round-1 order (direct, relay, shardgate, sharded: a scatter read of 4 sub-tables)")
	out := fs.String("out", "bench/results", "directory for stream-<timestamp>.md (empty: no file)")
	ef.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return cfg, "", ef, err
	}
	cfg.Size = int64(size)
	var err error
	if cfg.Targets, err = parseTargets(targets); err != nil {
		return cfg, "", ef, err
	}
	if err := errors.Join(cfg.Validate(), ef.validate()); err != nil {
		return cfg, "", ef, err
	}
	return cfg, *out, ef, nil
}

// ---------------------------------------------------------------------------
// sgbench scatter

func runScatter(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, out, ef, err := parseScatterFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "sgbench scatter: %v\n", err)
		return 2
	}
	env, err := startEnv(ctx, ef.options(cfg.Targets, stderr), stderr)
	if err != nil {
		fmt.Fprintf(stderr, "sgbench scatter: %v\n", err)
		return exitCode(err)
	}
	defer closeEnv(env, stderr)
	res, runErr := bench.RunScatter(ctx, env, cfg)
	m := modeResult{name: "scatter", runErr: runErr, what: "run(s)"}
	if res != nil && len(res.Cells) > 0 {
		m.tables, m.failed = res.Description()+"\n"+res.Tables()+res.MergeTable(), res.Failed()
		m.write = func() (string, error) {
			return bench.WriteScatterReport(bench.NewScatterReport(context.Background(), env, res), out)
		}
	}
	return m.finish(out, stdout, stderr)
}

func parseScatterFlags(args []string, stderr io.Writer) (bench.ScatterConfig, string, envFlags, error) {
	cfg := bench.DefaultScatterConfig()
	var ef envFlags
	fs := flag.NewFlagSet("sgbench scatter", flag.ContinueOnError)
	fs.SetOutput(stderr)
	queries := stringList(cfg.Queries)
	psModes := stringList(cfg.PSModes)
	targets := stringList(targetNames(cfg.Targets))
	fs.IntVar(&cfg.Rows, "rows", cfg.Rows, "rows of the table (the same rows unsharded and over the shards)")
	fs.IntVar(&cfg.Groups, "groups", cfg.Groups, "distinct values of g, the GROUP BY's groups")
	fs.IntVar(&cfg.Threads, "threads", cfg.Threads, "client connections, each running the statement in a loop")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "runs per query and target (targets interleaved, order rotated each round); tables report medians")
	fs.DurationVar(&cfg.Time, "time", cfg.Time, "duration of each run")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "unmeasured warm-up per query, ps-mode and target (0: none)")
	fs.Var(&queries, "queries", "statements, comma-separated: order-limit, group-by, scatter")
	fs.Var(&psModes, "ps-modes", "disable (text protocol), auto (prepared statements), comma-separated")
	fs.Var(&targets, "targets", "targets, comma-separated, in round-1 order (direct, relay, shardgate, sharded, shardgate-base, sharded-base)")
	out := fs.String("out", "bench/results", "directory for scatter-<timestamp>.md (empty: no file)")
	ef.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return cfg, "", ef, err
	}
	cfg.Queries, cfg.PSModes = queries, psModes
	var err error
	if cfg.Targets, err = parseTargets(targets); err != nil {
		return cfg, "", ef, err
	}
	if err := errors.Join(cfg.Validate(), ef.validate()); err != nil {
		return cfg, "", ef, err
	}
	return cfg, *out, ef, nil
}

// ---------------------------------------------------------------------------
// sgbench memory

func runMemory(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, out, ef, err := parseMemoryFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "sgbench memory: %v\n", err)
		return 2
	}
	opts := ef.options([]bench.Target{bench.Sharded}, stderr)
	opts.ServerArgs = bench.MemoryServerArgs()
	env, err := startEnv(ctx, opts, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "sgbench memory: %v\n", err)
		return exitCode(err)
	}
	defer closeEnv(env, stderr)
	res, runErr := bench.RunMemory(ctx, env, cfg)
	m := modeResult{name: "memory", runErr: runErr, what: "statement(s)"}
	if res != nil && len(res.Runs) > 0 {
		m.tables, m.failed = res.Description()+"\n"+res.Table(), res.Failed()
		m.write = func() (string, error) {
			return bench.WriteMemoryReport(bench.NewMemoryReport(context.Background(), env, res), out)
		}
	}
	return m.finish(out, stdout, stderr)
}

func parseMemoryFlags(args []string, stderr io.Writer) (bench.MemoryConfig, string, envFlags, error) {
	cfg := bench.DefaultMemoryConfig()
	var ef envFlags
	fs := flag.NewFlagSet("sgbench memory", flag.ContinueOnError)
	fs.SetOutput(stderr)
	queries := stringList(cfg.Queries)
	fs.Int64Var(&cfg.Rows, "rows", cfg.Rows, "rows of the table, over 4 shards (e.g. 100000 for a quick run)")
	fs.IntVar(&cfg.RowBytes, "row-bytes", cfg.RowBytes, "bytes per row, about")
	fs.IntVar(&cfg.Loaders, "loaders", cfg.Loaders, "connections loading the sub-tables in parallel")
	fs.Int64Var(&cfg.PauseEvery, "pause-every", cfg.PauseEvery, "the slow client of slow-order sleeps after every this many rows")
	fs.DurationVar(&cfg.Pause, "pause", cfg.Pause, "how long the slow client sleeps each time")
	fs.Var(&queries, "queries", "statements, comma-separated, in this order: "+strings.Join(bench.MemoryQueries, ", "))
	out := fs.String("out", "bench/results", "directory for memory-<timestamp>.md (empty: no file)")
	ef.register(fs)
	pool := fs.Lookup("buffer-pool")
	pool.DefValue = bench.DefaultMemoryBufferPool
	if err := pool.Value.Set(bench.DefaultMemoryBufferPool); err != nil {
		return cfg, "", ef, err
	}
	if err := parseFlags(fs, args); err != nil {
		return cfg, "", ef, err
	}
	cfg.Queries = queries
	if err := errors.Join(cfg.Validate(), ef.validate()); err != nil {
		return cfg, "", ef, err
	}
	return cfg, *out, ef, nil
}

// ---------------------------------------------------------------------------
// sgbench transfer

func runTransfer(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, out, ef, err := parseTransferFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "sgbench transfer: %v\n", err)
		return 2
	}
	// The sharded target's options build shardgate and start no proxy:
	// RunTransfer starts its own.
	env, err := startEnv(ctx, ef.options([]bench.Target{bench.Sharded}, stderr), stderr)
	if err != nil {
		fmt.Fprintf(stderr, "sgbench transfer: %v\n", err)
		return exitCode(err)
	}
	defer closeEnv(env, stderr)
	res, runErr := bench.RunTransfer(ctx, env, cfg)
	m := modeResult{name: "transfer", runErr: runErr, what: "run(s)"}
	if res != nil && len(res.Cells) > 0 {
		m.tables, m.failed = res.Description()+"\n"+res.Tables(), res.Failed()
		m.write = func() (string, error) {
			return bench.WriteTransferReport(bench.NewTransferReport(context.Background(), env, res), out)
		}
	}
	return m.finish(out, stdout, stderr)
}

func parseTransferFlags(args []string, stderr io.Writer) (bench.TransferConfig, string, envFlags, error) {
	cfg := bench.DefaultTransferConfig()
	var ef envFlags
	fs := flag.NewFlagSet("sgbench transfer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var names []string
	for _, c := range cfg.Cases {
		names = append(names, c.String())
	}
	cases := stringList(names)
	fs.IntVar(&cfg.Accounts, "accounts", cfg.Accounts, "accounts per policy, hash-sharded over 2 shards")
	fs.IntVar(&cfg.Threads, "threads", cfg.Threads, "client connections, each running transfers in a loop")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "runs per case (cases interleaved, order rotated each round); tables report medians")
	fs.DurationVar(&cfg.Time, "time", cfg.Time, "duration of each run")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "unmeasured warm-up per case (0: none)")
	fs.IntVar(&cfg.Count, "count", cfg.Count, "transfers per case counted in the server's general log for the round trips (0: none)")
	fs.DurationVar(&cfg.RecoveryInterval, "recovery-interval", cfg.RecoveryInterval, "the proxy's transactions.recovery_interval (recovery removes the decision rows)")
	fs.Var(&cases, "cases", "workload/policy, comma-separated, in round-1 order: single or cross under refuse, allow or atomic (not cross/refuse)")
	out := fs.String("out", "bench/results", "directory for transfer-<timestamp>.md (empty: no file)")
	ef.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return cfg, "", ef, err
	}
	cfg.Cases = nil
	var errs []error
	for _, n := range cases {
		c, err := bench.ParseTransferCase(n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cfg.Cases = append(cfg.Cases, c)
	}
	if err := errors.Join(errors.Join(errs...), cfg.Validate(), ef.validate()); err != nil {
		return cfg, "", ef, err
	}
	return cfg, *out, ef, nil
}

// ---------------------------------------------------------------------------
// list flags

// intList is a comma-separated list of positive integers.
type intList []int

func (l *intList) String() string {
	s := make([]string, len(*l))
	for i, n := range *l {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func (l *intList) Set(v string) error {
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("%q is not an integer", f)
		}
		out = append(out, n)
	}
	*l = out
	return nil
}

// stringList is a comma-separated list of names.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	*l = out
	return nil
}

// byteSize is a size in bytes written as bench.ParseByteSize reads it.
type byteSize int64

func (b *byteSize) String() string { return bench.FormatByteSize(int64(*b)) }

func (b *byteSize) Set(v string) error {
	n, err := bench.ParseByteSize(v)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}
