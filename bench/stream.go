package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shardgate/shardgate/internal/testenv"
)

// StreamConfig configures RunStream.
type StreamConfig struct {
	// Size is the row data of one run in bytes, rounded down to whole rows.
	Size     int64
	RowBytes int      // bytes per row
	Rounds   int      // runs per target; the table reports medians
	Targets  []Target // default AllTargets; the order of round 1
}

// DefaultStreamConfig is what `sgbench stream` runs without flags: the 1 GB
// result of the project's streaming target, through every target, the
// sharded one as a scatter read (issue 13).
func DefaultStreamConfig() StreamConfig {
	return StreamConfig{Size: 1 << 30, RowBytes: 1024, Rounds: 3, Targets: MatrixTargets}
}

// maxRowBytes caps --row-bytes: one row stays within one protocol packet
// (16 MiB), which is what a large result of ordinary rows looks like.
const maxRowBytes = 16<<20 - 1024

// Validate reports every problem of the configuration.
func (c StreamConfig) Validate() error {
	var errs []error
	if c.RowBytes < 1 || c.RowBytes > maxRowBytes {
		errs = append(errs, fmt.Errorf("row-bytes: %d is not in 1..%d", c.RowBytes, maxRowBytes))
	} else if c.Size < int64(c.RowBytes) {
		errs = append(errs, fmt.Errorf("size: %d bytes, need at least one row (row-bytes %d)", c.Size, c.RowBytes))
	} else if len(ShardedOf(c.Targets)) > 0 && c.Rows() < StreamSubTables {
		errs = append(errs, fmt.Errorf("size: %d rows, the sharded target needs at least one per sub-table (%d)", c.Rows(), StreamSubTables))
	}
	if c.Rounds < 1 {
		errs = append(errs, fmt.Errorf("rounds: %d, need at least 1", c.Rounds))
	}
	for _, t := range c.Targets {
		if _, err := ParseTarget(string(t)); err != nil {
			errs = append(errs, fmt.Errorf("targets: %w", err))
		}
	}
	return errors.Join(errs...)
}

func (c StreamConfig) targets() []Target {
	if len(c.Targets) == 0 {
		return AllTargets
	}
	return c.Targets
}

// Rows is the number of rows of one run.
func (c StreamConfig) Rows() int64 { return c.Size / int64(c.RowBytes) }

// Query is the statement of a run. MariaDB's SEQUENCE engine generates the
// rows, so no table has to be filled and the server reads nothing from disk.
func (c StreamConfig) Query() string {
	return fmt.Sprintf("SELECT REPEAT('x', %d) FROM seq_1_to_%d", c.RowBytes, c.Rows())
}

// ShardedQuery is the statement of a run through the Sharded target: a
// scatter read of StreamTable, whose sub-tables give the same rows as
// Query (streamViews).
func (c StreamConfig) ShardedQuery() string { return "SELECT v FROM " + StreamTable }

// QueryFor is the statement of a run through target t.
func (c StreamConfig) QueryFor(t Target) string {
	if t.IsSharded() {
		return c.ShardedQuery()
	}
	return c.Query()
}

// streamStallTimeout fails a run whose stream delivers nothing for this
// long (the driver's per-read deadline), instead of hanging the benchmark.
const streamStallTimeout = time.Minute

// rssSampleEvery is how often the proxy's VmRSS is read during a run.
const rssSampleEvery = 20 * time.Millisecond

// StreamRun is one streamed result through one target.
type StreamRun struct {
	Round   int // 1-based
	Slot    int // 1-based position of the target in the round's order
	Rows    int64
	Bytes   int64 // row data received
	Elapsed time.Duration
	MBps    float64 // Bytes / Elapsed, MB = 10^6 bytes
	// ProxyCPU is the CPU time of the proxy process during the query (0 for
	// direct).
	ProxyCPU time.Duration
	// RSSGrowth is the proxy's peak VmRSS during the query minus its VmRSS
	// just before it, bytes (0 for direct).
	RSSGrowth  int64
	RSSSamples int
	Failure    string // non-empty when the run failed; its numbers are not used
}

// StreamCell holds the runs of one target.
type StreamCell struct {
	Target Target
	Runs   []StreamRun
}

// StreamResults is a finished (or interrupted) RunStream.
type StreamResults struct {
	Config     StreamConfig
	Start, End time.Time
	Cells      []*StreamCell // in the order of Config.Targets
	// Interrupted is set when the run was cancelled before the end.
	Interrupted bool
}

// Cell returns the cell of a target, or nil.
func (r *StreamResults) Cell(t Target) *StreamCell {
	for _, c := range r.Cells {
		if c.Target == t {
			return c
		}
	}
	return nil
}

// Runs counts the runs done, failed or not.
func (r *StreamResults) Runs() int {
	n := 0
	for _, c := range r.Cells {
		n += len(c.Runs)
	}
	return n
}

// Failed counts the failed runs.
func (r *StreamResults) Failed() int {
	n := 0
	for _, c := range r.Cells {
		n += c.Summary().Failed
	}
	return n
}

// RunStream streams the result Rounds times through every target, the
// targets interleaved with the order rotating every round as in RunMatrix.
// Failed runs are recorded (StreamRun.Failure) and the benchmark goes on; it
// stops early, with an error and the results so far, when ctx is cancelled
// or a proxy process died.
func RunStream(ctx context.Context, env *Env, cfg StreamConfig) (*StreamResults, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid stream configuration:\n%w", err)
	}
	for _, t := range cfg.targets() {
		if env.Addr(t) == "" && !env.startsLater(t) {
			return nil, fmt.Errorf("target %s was not started by StartEnv", t)
		}
	}
	if len(ShardedOf(cfg.targets())) > 0 {
		if err := env.startShardedStream(ctx, cfg); err != nil {
			return nil, err
		}
	}
	res := &StreamResults{Config: cfg, Start: time.Now()}
	defer func() { res.End = time.Now() }()
	for _, t := range cfg.targets() {
		res.Cells = append(res.Cells, &StreamCell{Target: t})
	}
	total := cfg.Rounds * len(cfg.targets())
	env.logf("streaming %s per run: %s", FormatByteSize(cfg.Rows()*int64(cfg.RowBytes)), cfg.Query())
	for _, t := range ShardedOf(cfg.targets()) {
		env.logf("through %s: %s", t, cfg.ShardedQuery())
	}
	for round := 1; round <= cfg.Rounds; round++ {
		for slot, t := range rotate(cfg.targets(), round-1) {
			run := streamOnce(ctx, env, cfg, t)
			run.Round, run.Slot = round, slot+1
			c := res.Cell(t)
			c.Runs = append(c.Runs, run)
			logStreamRun(env, res.Runs(), total, t, run)
			if err := ctx.Err(); err != nil {
				res.Interrupted = true
				return res, fmt.Errorf("interrupted: %w", err)
			}
			if run.Failure != "" {
				if err := env.checkAlive(); err != nil {
					res.Interrupted = true
					return res, err
				}
			}
		}
	}
	return res, nil
}

func logStreamRun(env *Env, done, total int, t Target, r StreamRun) {
	if r.Failure != "" {
		env.logf("[%d/%d] stream round %d %s: FAILED: %s", done, total, r.Round, t, firstLine(r.Failure))
		return
	}
	env.logf("[%d/%d] stream round %d %-9s %8.1f MB/s in %-9v proxy CPU %-7v RSS growth %.1f MiB",
		done, total, r.Round, t, r.MBps, r.Elapsed.Round(time.Millisecond), r.ProxyCPU, float64(r.RSSGrowth)/(1<<20))
}

// streamOnce connects to the target, then runs the query and reads the
// whole result, measuring the proxy's CPU and RSS around the query only:
// connection set-up is not part of the stream.
func streamOnce(ctx context.Context, env *Env, cfg StreamConfig, t Target) StreamRun {
	var run StreamRun
	sc, err := openStreamConn(ctx, env.Addr(t))
	if err != nil {
		run.Failure = failureText(ctx, err)
		return run
	}
	defer sc.close()
	pid := env.ProxyPid(t)
	rss, err := startRSSSampler(pid, rssSampleEvery)
	if err != nil {
		run.Failure = err.Error()
		return run
	}
	cpu0, err0 := cpuTimeOrZero(pid)
	start := time.Now()
	rows, n, qerr := readResult(ctx, sc.conn, cfg.QueryFor(t))
	run.Elapsed = time.Since(start)
	cpu1, err1 := cpuTimeOrZero(pid)
	growth, samples, rssErr := rss.stop()
	if err := errors.Join(qerr, err0, err1, rssErr); err != nil {
		run.Failure = failureText(ctx, err)
		return run
	}
	run.Rows, run.Bytes, run.RSSGrowth, run.RSSSamples = rows, n, growth, samples
	run.ProxyCPU = cpu1 - cpu0
	run.MBps = float64(n) / 1e6 / run.Elapsed.Seconds()
	if want := cfg.Rows() * int64(cfg.RowBytes); rows != cfg.Rows() || n != want {
		run.Failure = fmt.Sprintf("short result: %d rows and %d bytes, want %d and %d", rows, n, cfg.Rows(), want)
	}
	return run
}

func failureText(ctx context.Context, err error) string {
	if ctx.Err() != nil {
		return "interrupted"
	}
	return err.Error()
}

// streamConn is the client connection of one run.
type streamConn struct {
	db   *sql.DB
	conn *sql.Conn
}

// openStreamConn logs in to addr as the sysbench runs do (test account,
// benchmark database: the SEQUENCE engine needs a current database).
func openStreamConn(ctx context.Context, addr string) (*streamConn, error) {
	return openConn(ctx, addr, streamStallTimeout)
}

// openConn is openStreamConn with another read deadline (0: none).
func openConn(ctx context.Context, addr string, readTimeout time.Duration) (*streamConn, error) {
	mc := mysql.NewConfig()
	mc.User, mc.Passwd, mc.Net, mc.Addr, mc.DBName = testenv.User, testenv.Password, "tcp", addr, Database
	mc.Timeout = 10 * time.Second
	mc.ReadTimeout = readTimeout
	connector, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, fmt.Errorf("stream client for %s: %w", addr, err)
	}
	db := sql.OpenDB(connector)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	return &streamConn{db: db, conn: conn}, nil
}

func (c *streamConn) close() {
	c.conn.Close()
	c.db.Close()
}

// readResult sends query with the text protocol (COM_QUERY: no arguments)
// and reads every row without keeping it: sql.RawBytes points into the
// driver's buffer, so the client allocates nothing per row.
func readResult(ctx context.Context, conn *sql.Conn, query string) (rows, n int64, err error) {
	r, err := conn.QueryContext(ctx, query)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", query, err)
	}
	defer r.Close()
	var b sql.RawBytes
	for r.Next() {
		if err := r.Scan(&b); err != nil {
			return rows, n, fmt.Errorf("row %d: %w", rows+1, err)
		}
		rows++
		n += int64(len(b))
	}
	if err := r.Err(); err != nil {
		return rows, n, fmt.Errorf("after %d rows (%d bytes): %w", rows, n, err)
	}
	return rows, n, r.Close()
}

// rssSampler tracks the peak VmRSS of a process while a run lasts. Sampling
// is needed because VmHWM, the kernel's own peak, covers the whole life of
// the process, not just the run.
type rssSampler struct {
	pid        int
	base, peak int64
	samples    int
	err        error
	quit, done chan struct{}
}

// startRSSSampler reads the baseline and then samples every interval until
// stop. For pid 0 (the direct target) it measures nothing.
func startRSSSampler(pid int, every time.Duration) (*rssSampler, error) {
	s := &rssSampler{pid: pid, quit: make(chan struct{}), done: make(chan struct{})}
	if pid == 0 {
		close(s.done)
		return s, nil
	}
	base, err := rssBytes(pid)
	if err != nil {
		return nil, fmt.Errorf("proxy RSS before the query: %w", err)
	}
	s.base, s.peak, s.samples = base, base, 1
	go s.loop(every)
	return s, nil
}

func (s *rssSampler) loop(every time.Duration) {
	defer close(s.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-s.quit:
			s.sample() // the end of the run counts too
			return
		case <-tick.C:
			s.sample()
		}
	}
}

func (s *rssSampler) sample() {
	v, err := rssBytes(s.pid)
	if err != nil {
		if s.err == nil {
			s.err = fmt.Errorf("proxy RSS during the query: %w", err)
		}
		return
	}
	s.samples++
	s.peak = max(s.peak, v)
}

// stop ends the sampling and returns the peak minus the baseline and the
// number of samples taken.
func (s *rssSampler) stop() (int64, int, error) {
	close(s.quit)
	<-s.done
	return s.peak - s.base, s.samples, s.err
}

// StreamSummary is a target's runs reduced over the successful rounds.
type StreamSummary struct {
	OK, Failed int
	MBps       float64 // median
	// Spread is (max-min)/median of MB/s over the rounds.
	Spread float64
	// ProxyCPUPerGB is the median of the proxy's CPU seconds per 10^9 bytes
	// of row data.
	ProxyCPUPerGB float64
	// PeakRSSGrowth is the largest RSS growth of any round, bytes: memory
	// limits are about the worst case, not the typical one.
	PeakRSSGrowth int64
}

// Summary reduces the cell's runs.
func (c *StreamCell) Summary() StreamSummary {
	var s StreamSummary
	var mbps, cpu []float64
	for _, r := range c.Runs {
		if r.Failure != "" {
			s.Failed++
			continue
		}
		s.OK++
		mbps = append(mbps, r.MBps)
		cpu = append(cpu, r.ProxyCPU.Seconds()/(float64(r.Bytes)/1e9))
		s.PeakRSSGrowth = max(s.PeakRSSGrowth, r.RSSGrowth)
	}
	if s.OK == 0 {
		return s
	}
	s.MBps, s.ProxyCPUPerGB = median(mbps), median(cpu)
	if s.MBps > 0 {
		s.Spread = (slices.Max(mbps) - slices.Min(mbps)) / s.MBps
	}
	return s
}

// Description is the sentence above the table: what was streamed and how.
func (r *StreamResults) Description() string {
	c := r.Config
	d := fmt.Sprintf("`%s`: %s of row data (%d rows of %d bytes) per run, text protocol, a fresh connection per run, %d round(s) per target, order rotating every round.\n",
		c.Query(), FormatByteSize(c.Rows()*int64(c.RowBytes)), c.Rows(), c.RowBytes, c.Rounds)
	if slices.Contains(c.targets(), Sharded) {
		d += fmt.Sprintf("Through %s: `%s`, a scatter read of the same rows from %d sub-tables (%d shards × %d, on the one server), each a view giving every %dth row of the sequence.\n",
			Sharded, c.ShardedQuery(), StreamSubTables, ShardedShards, StreamSubTables/ShardedShards, StreamSubTables)
	}
	return d
}

// Table renders the Markdown table of the targets.
func (r *StreamResults) Table() string {
	var b strings.Builder
	b.WriteString("| target | MB/s (median) | spread | ×relay | proxy CPU s per GB | proxy peak RSS growth MiB (max) | errors |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---|\n")
	var relay *StreamSummary
	if c := r.Cell(Relay); c != nil {
		if s := c.Summary(); s.OK > 0 {
			relay = &s
		}
	}
	for _, c := range r.Cells {
		b.WriteString("| " + strings.Join(streamRow(c, c.Summary(), relay), " | ") + " |\n")
	}
	return b.String()
}

// streamRow renders one target; relay (possibly nil) is the baseline.
func streamRow(c *StreamCell, s StreamSummary, relay *StreamSummary) []string {
	errs := "0"
	if s.Failed > 0 {
		errs = fmt.Sprintf("%d failed run(s)", s.Failed)
	}
	if s.OK == 0 {
		return []string{string(c.Target), "failed", "", "", "", "", errs}
	}
	vsRelay, cpu, rss := "", "—", "—"
	if relay != nil && c.Target != Direct {
		vsRelay = ratio(s.MBps, relay.MBps)
	}
	if c.Target != Direct {
		cpu = fmt.Sprintf("%.2f", s.ProxyCPUPerGB)
		rss = fmt.Sprintf("%.1f", float64(s.PeakRSSGrowth)/(1<<20))
	}
	return []string{string(c.Target), fmt.Sprintf("%.1f", s.MBps), fmt.Sprintf("%.0f%%", s.Spread*100), vsRelay, cpu, rss, errs}
}

type byteUnit struct {
	suffix string
	mult   int64
}

// byteUnits are the binary units of ParseByteSize and FormatByteSize,
// largest first.
var byteUnits = []byteUnit{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}

// ParseByteSize reads a size such as 1GiB, 256MiB, 8KiB or a plain number
// of bytes. Only binary suffixes are accepted: "1GB" would be ambiguous.
func ParseByteSize(s string) (int64, error) {
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range slices.Concat(byteUnits, []byteUnit{{"B", 1}}) {
		if len(num) > len(u.suffix) && strings.EqualFold(num[len(num)-len(u.suffix):], u.suffix) {
			num, mult = strings.TrimSpace(num[:len(num)-len(u.suffix)]), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: want a whole number of bytes, optionally with KiB, MiB, GiB or TiB", s)
	}
	if n > (1<<63-1)/mult {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n * mult, nil
}

// FormatByteSize renders n with the largest binary unit that divides it.
func FormatByteSize(n int64) string {
	for _, u := range byteUnits {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}
