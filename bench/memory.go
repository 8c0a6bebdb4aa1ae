package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/internal/sharding"
)

// MemoryTable is the memory benchmark's table (issue 14's "Memory"
// acceptance): mod-sharded on id over the Sharded target's ShardedShards
// shards, one sub-table each (MemoryTable_0000 … _0003), so that each
// shard answers its part with one SELECT, not a UNION ALL the server
// would have to materialise to sort.
//
// The rows are k = 0 … rows-1 (the clustered primary key, so each shard
// reads its rows in ORDER BY k order without sorting them: the benchmark
// measures the proxy, not the server's sort), id = k × a prime mod rows
// (a permutation: the shard key, so consecutive k lie on pseudo-random
// shards), g = k DIV 10 (groups of 10 spread over the shards), d = k DIV 2
// (each value twice, mostly on two shards), x = k MOD 1000 and pad (the
// rest of the row's bytes).
const MemoryTable = "sgmem"

// MemoryBudget is what issue 14 allows a merge to hold: the default
// merge_memory (64 MiB). A run passes when the proxy's RSS grows by less.
const MemoryBudget = 64 << 20

// memoryServerArgs make the bulk load quick and keep the table's pages in
// the OS page cache (not in mariadbd's small buffer pool, and not in the
// proxy's RSS): no doublewrite, redo written once a second, a redo log
// large enough for the load, buffered I/O.
var memoryServerArgs = []string{
	"--innodb-doublewrite=0", "--innodb-flush-log-at-trx-commit=0",
	"--innodb-log-file-size=1G", "--innodb-flush-method=fsync",
}

// DefaultMemoryBufferPool is mariadbd's buffer pool for the memory
// benchmark: far smaller than the table, like a real shard's.
const DefaultMemoryBufferPool = "1G"

// MemoryServerArgs are the options StartEnv needs for RunMemory (besides
// the buffer pool).
func MemoryServerArgs() []string { return slices.Clone(memoryServerArgs) }

// MemoryConfig configures RunMemory.
type MemoryConfig struct {
	Rows     int64 // rows of MemoryTable
	RowBytes int   // bytes per row, about
	Loaders  int   // connections loading the sub-tables in parallel
	// PauseEvery and Pause make the slow client: it sleeps Pause after
	// every PauseEvery rows of the full ORDER BY.
	PauseEvery int64
	Pause      time.Duration
	Queries    []string // names in MemoryQueries
}

// DefaultMemoryConfig is issue 14's figure: 10 million rows of 1 KiB.
func DefaultMemoryConfig() MemoryConfig {
	return MemoryConfig{
		Rows: 10_000_000, RowBytes: 1024, Loaders: ShardedShards,
		PauseEvery: 500_000, Pause: time.Second,
		Queries: slices.Clone(MemoryQueries),
	}
}

// MemoryQueries are the statements of the memory benchmark, in the order
// they run.
var MemoryQueries = []string{"offset", "slow-order", "group-by", "distinct"}

// memoryRowOverhead is the bytes of a row besides pad: four BIGINTs and
// an INT.
const memoryRowOverhead = 36

// maxMemoryRows keeps k × the prime within BIGINT.
const maxMemoryRows = 1_000_000_000

// Validate reports every problem of the configuration.
func (c MemoryConfig) Validate() error {
	var errs []error
	if c.Rows < 100 || c.Rows > maxMemoryRows {
		errs = append(errs, fmt.Errorf("rows: %d is not in 100..%d", c.Rows, maxMemoryRows))
	}
	if c.RowBytes <= memoryRowOverhead || c.RowBytes > 60000 {
		errs = append(errs, fmt.Errorf("row-bytes: %d is not in %d..60000", c.RowBytes, memoryRowOverhead+1))
	}
	if c.Loaders < 1 || c.Loaders > 64 {
		errs = append(errs, fmt.Errorf("loaders: %d is not in 1..64", c.Loaders))
	}
	if c.PauseEvery < 1 || c.Pause < 0 {
		errs = append(errs, fmt.Errorf("pause-every %d and pause %v: need at least 1 row and a pause >= 0", c.PauseEvery, c.Pause))
	}
	if len(c.Queries) == 0 {
		errs = append(errs, errors.New("queries: need at least one"))
	}
	for _, q := range c.Queries {
		if !slices.Contains(MemoryQueries, q) {
			errs = append(errs, fmt.Errorf("queries: unknown query %q (want %s)", q, strings.Join(MemoryQueries, ", ")))
		}
	}
	return errors.Join(errs...)
}

// offset is the LIMIT offset of the "offset" query: half the rows
// (5,000,000 of 10 million).
func (c MemoryConfig) offset() int64 { return c.Rows / 2 }

// SQL is the statement of a query.
func (c MemoryConfig) SQL(query string) string {
	switch query {
	case "offset":
		return fmt.Sprintf("SELECT k, id, pad FROM %s ORDER BY k LIMIT %d,10", MemoryTable, c.offset())
	case "slow-order":
		return fmt.Sprintf("SELECT k, id, pad FROM %s ORDER BY k", MemoryTable)
	case "group-by":
		return fmt.Sprintf("SELECT g, COUNT(*), SUM(x) FROM %s GROUP BY g", MemoryTable)
	case "distinct":
		return fmt.Sprintf("SELECT DISTINCT d FROM %s", MemoryTable)
	}
	return ""
}

// MemoryRun is one query through the Sharded target.
type MemoryRun struct {
	Query   string
	Rows    int64 // rows the client read
	Bytes   int64 // their bytes
	Elapsed time.Duration
	// Paused is the time the client slept (slow-order).
	Paused   time.Duration
	ProxyCPU time.Duration
	// RSSGrowth is the proxy's peak VmRSS during the query minus its
	// VmRSS just before it.
	RSSGrowth  int64
	RSSBefore  int64
	RSSSamples int
	Failure    string
}

// MemoryResults is a finished (or interrupted) RunMemory.
type MemoryResults struct {
	Config      MemoryConfig
	Start, End  time.Time
	Load        time.Duration // loading the sub-tables
	DataBytes   int64         // the sub-tables' data and indexes, from information_schema
	Runs        []MemoryRun
	Interrupted bool
}

// Failed counts the failed runs.
func (r *MemoryResults) Failed() int {
	n := 0
	for _, run := range r.Runs {
		if run.Failure != "" {
			n++
		}
	}
	return n
}

// RunMemory loads MemoryTable's sub-tables directly on the server (not
// through the proxy), starts the Sharded target and runs each query once
// through it, sampling the proxy's RSS. The environment must have been
// started with MemoryServerArgs.
func RunMemory(ctx context.Context, env *Env, cfg MemoryConfig) (*MemoryResults, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid memory configuration:\n%w", err)
	}
	if env.shardgateBin == "" {
		return nil, fmt.Errorf("target %s was not started by StartEnv", Sharded)
	}
	res := &MemoryResults{Config: cfg, Start: time.Now()}
	defer func() { res.End = time.Now() }()
	t0 := time.Now()
	if err := env.loadMemory(ctx, cfg); err != nil {
		return res, err
	}
	res.Load = time.Since(t0)
	if size, err := env.Server.ScalarE(fmt.Sprintf("SELECT SUM(data_length + index_length) FROM information_schema.tables WHERE table_schema = '%s' AND table_name LIKE '%s\\_%%'", Database, MemoryTable)); err == nil {
		res.DataBytes, _ = strconv.ParseInt(size, 10, 64)
	}
	env.logf("loaded %d rows (%s on disk) in %v", cfg.Rows, formatMB(res.DataBytes), res.Load.Round(time.Second))
	if env.sharded == nil {
		if err := env.StartSharded(ctx, 0); err != nil {
			return res, err
		}
	}
	for _, q := range cfg.Queries {
		env.logf("memory: %s: %s", q, cfg.SQL(q))
		run := memoryOnce(ctx, env, cfg, q)
		res.Runs = append(res.Runs, run)
		if run.Failure != "" {
			env.logf("memory: %s FAILED: %s", q, firstLine(run.Failure))
		} else {
			env.logf("memory: %s: %d rows (%s) in %v, proxy CPU %v, RSS growth %.1f MiB",
				q, run.Rows, formatMB(run.Bytes), run.Elapsed.Round(time.Millisecond), run.ProxyCPU, float64(run.RSSGrowth)/(1<<20))
		}
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
	return res, nil
}

func formatMB(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// memoryPrime is the multiplier that makes id a permutation of k: the
// first of these primes that does not divide rows (then it is coprime
// with rows).
func memoryPrime(rows int64) int64 {
	for _, p := range []int64{1000003, 1000033, 1000037} {
		if rows%p != 0 {
			return p
		}
	}
	return 1000039
}

// memoryChunk is the k values one INSERT … SELECT covers: a quarter of
// them land on the sub-table, about 50 MB of rows per statement.
const memoryChunk = 200_000

// loadMemory creates the sub-tables and fills them from the SEQUENCE
// engine with INSERT … SELECT on the server, cfg.Loaders statements at a
// time, each sub-table's chunks in k order (appends to the clustered
// index).
func (e *Env) loadMemory(ctx context.Context, cfg MemoryConfig) error {
	subs := ShardedShards
	for i := range subs {
		sub := Database + "." + sharding.SubTableName(MemoryTable, i)
		if err := e.Server.ExecE("DROP TABLE IF EXISTS "+sub,
			"CREATE TABLE "+sub+" (k BIGINT NOT NULL PRIMARY KEY, id BIGINT NOT NULL, g BIGINT NOT NULL, d BIGINT NOT NULL, x INT NOT NULL, "+
				fmt.Sprintf("pad VARCHAR(%d) NOT NULL, KEY gx (g, x), KEY d (d)) CHARACTER SET latin1", cfg.RowBytes-memoryRowOverhead)); err != nil {
			return fmt.Errorf("create %s: %w", sub, err)
		}
	}
	type job struct{ sub, lo, hi int64 }
	var jobs []job
	for lo := int64(0); lo < cfg.Rows; lo += memoryChunk {
		for i := range int64(subs) {
			jobs = append(jobs, job{i, lo, min(lo+memoryChunk, cfg.Rows) - 1})
		}
	}
	e.logf("loading %d rows of ~%d bytes into %s_0000 … _%04d (%d statements, %d at a time)",
		cfg.Rows, cfg.RowBytes, MemoryTable, subs-1, len(jobs), cfg.Loaders)
	prime := memoryPrime(cfg.Rows)
	var next, done atomic.Int64
	errs := make([]error, cfg.Loaders)
	var wg sync.WaitGroup
	for w := range cfg.Loaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc, err := openConn(ctx, e.Addr(Direct), 0)
			if err != nil {
				errs[w] = err
				return
			}
			defer sc.close()
			for {
				n := next.Add(1) - 1
				if n >= int64(len(jobs)) || ctx.Err() != nil {
					return
				}
				j := jobs[n]
				q := fmt.Sprintf("INSERT INTO %s.%s SELECT seq, (seq * %d) MOD %d, seq DIV 10, seq DIV 2, seq MOD 1000, "+
					"RPAD(CONCAT(seq, ':'), %d, 'abcdefghijklmnopqrstuvwxyz') FROM %s.seq_%d_to_%d WHERE (seq * %d) MOD %d MOD %d = %d",
					Database, sharding.SubTableName(MemoryTable, int(j.sub)), prime, cfg.Rows,
					cfg.RowBytes-memoryRowOverhead, Database, j.lo, j.hi, prime, cfg.Rows, subs, j.sub)
				if _, err := sc.conn.ExecContext(ctx, q); err != nil {
					errs[w] = fmt.Errorf("load %s: %w", sharding.SubTableName(MemoryTable, int(j.sub)), err)
					return
				}
				if d := done.Add(1); d%int64(max(1, len(jobs)/10)) == 0 {
					e.logf("loaded %d%%", d*100/int64(len(jobs)))
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted while loading: %w", err)
	}
	for i := range subs {
		if err := e.Server.ExecE("ANALYZE TABLE " + Database + "." + sharding.SubTableName(MemoryTable, i)); err != nil {
			return fmt.Errorf("analyze %s: %w", sharding.SubTableName(MemoryTable, i), err)
		}
	}
	n, err := e.Server.ScalarE(fmt.Sprintf("SELECT (SELECT COUNT(*) FROM %[1]s.%[2]s_0000) + (SELECT COUNT(*) FROM %[1]s.%[2]s_0001) + (SELECT COUNT(*) FROM %[1]s.%[2]s_0002) + (SELECT COUNT(*) FROM %[1]s.%[2]s_0003)", Database, MemoryTable))
	if err != nil {
		return fmt.Errorf("count the loaded rows: %w", err)
	}
	if n != strconv.FormatInt(cfg.Rows, 10) {
		return fmt.Errorf("loaded %s rows into %s's sub-tables, want %d", n, MemoryTable, cfg.Rows)
	}
	return nil
}

// memoryQueryTimeout bounds one query of the memory benchmark.
const memoryQueryTimeout = 2 * time.Hour

// memoryOnce runs one query through the Sharded target on a fresh
// connection, reading and checking every row, and samples the proxy's RSS
// and CPU around the query.
func memoryOnce(ctx context.Context, env *Env, cfg MemoryConfig, query string) MemoryRun {
	run := MemoryRun{Query: query}
	// The offset query sends nothing until the merge has skipped half the
	// rows: no read deadline, the query's timeout bounds it.
	sc, err := openConn(ctx, env.Addr(Sharded), 0)
	if err != nil {
		run.Failure = failureText(ctx, err)
		return run
	}
	defer sc.close()
	qctx, cancel := context.WithTimeout(ctx, memoryQueryTimeout)
	defer cancel()
	pid := env.ProxyPid(Sharded)
	rss, err := startRSSSampler(pid, rssSampleEvery)
	if err != nil {
		run.Failure = err.Error()
		return run
	}
	run.RSSBefore = rss.base
	check := newMemoryCheck(cfg, query)
	cpu0, err0 := cpuTime(pid)
	start := time.Now()
	rows, qerr := queryRows(qctx, sc.conn, nil, cfg.SQL(query), func(cols []sql.RawBytes) {
		for _, c := range cols {
			run.Bytes += int64(len(c))
		}
		check.row(cols)
		if query == "slow-order" && check.rows%cfg.PauseEvery == 0 {
			time.Sleep(cfg.Pause)
			run.Paused += cfg.Pause
		}
	})
	run.Elapsed = time.Since(start)
	cpu1, err1 := cpuTime(pid)
	growth, samples, rssErr := rss.stop()
	run.Rows, run.RSSGrowth, run.RSSSamples, run.ProxyCPU = rows, growth, samples, cpu1-cpu0
	if qerr != nil {
		qerr = fmt.Errorf("%s: %w", cfg.SQL(query), qerr)
	}
	if err := errors.Join(qerr, err0, err1, rssErr); err != nil {
		run.Failure = failureText(ctx, err)
		return run
	}
	if err := check.done(); err != nil {
		run.Failure = fmt.Sprintf("%s: a wrong answer: %v", cfg.SQL(query), err)
	}
	return run
}

// memoryCheck verifies an answer as it streams, in constant memory: the
// rows the table's generation implies (k is 0 … rows-1).
type memoryCheck struct {
	cfg     MemoryConfig
	query   string
	rows    int64
	count   int64 // group-by: the COUNT(*)s summed
	failure error
}

func newMemoryCheck(cfg MemoryConfig, query string) *memoryCheck {
	return &memoryCheck{cfg: cfg, query: query}
}

func (c *memoryCheck) row(cols []sql.RawBytes) {
	i := c.rows
	c.rows++
	if c.failure != nil {
		return
	}
	num := func(col int) int64 {
		n, err := strconv.ParseInt(string(cols[col]), 10, 64)
		if err != nil && c.failure == nil {
			c.failure = fmt.Errorf("row %d column %d: %q is not an integer", i+1, col+1, cols[col])
		}
		return n
	}
	switch c.query {
	case "offset", "slow-order":
		want := i
		if c.query == "offset" {
			want += c.cfg.offset()
		}
		if k := num(0); k != want && c.failure == nil {
			c.failure = fmt.Errorf("row %d has k = %d, want %d", i+1, k, want)
		}
	case "group-by":
		c.count += num(1)
	}
}

// done checks the row count (and the counts' sum) after the last row.
func (c *memoryCheck) done() error {
	if c.failure != nil {
		return c.failure
	}
	want := map[string]int64{"offset": 10, "slow-order": c.cfg.Rows, "group-by": (c.cfg.Rows + 9) / 10, "distinct": (c.cfg.Rows + 1) / 2}[c.query]
	if c.rows != want {
		return fmt.Errorf("%d rows, want %d", c.rows, want)
	}
	if c.query == "group-by" && c.count != c.cfg.Rows {
		return fmt.Errorf("the groups' COUNT(*)s add up to %d, want %d", c.count, c.cfg.Rows)
	}
	return nil
}

// Description says what was loaded and run.
func (r *MemoryResults) Description() string {
	c := r.Config
	return fmt.Sprintf("`%s`: %d rows of ~%d bytes (%s of data and indexes) mod-sharded on id over %d shards, one sub-table each, every shard on the one mariadbd; "+
		"loaded in %v with INSERT … SELECT from the SEQUENCE engine directly on the server. "+
		"Each statement runs once through the sharded target on a fresh connection (text protocol), the client reads and checks every row; "+
		"slow-order sleeps %v after every %d rows. RSS growth: the proxy's peak VmRSS (sampled every %v) minus its VmRSS just before the statement; limit %d MiB (merge_memory's default).\n",
		MemoryTable, c.Rows, c.RowBytes, formatMB(r.DataBytes), ShardedShards, r.Load.Round(time.Second), c.Pause, c.PauseEvery, rssSampleEvery, MemoryBudget>>20)
}

// Table renders one line per query.
func (r *MemoryResults) Table() string {
	var b strings.Builder
	b.WriteString("| query | statement | rows returned | MB returned | duration s | client paused s | proxy CPU s | proxy RSS before MiB | proxy RSS growth MiB | < 64 MiB | errors |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n")
	for _, run := range r.Runs {
		if run.Failure != "" {
			fmt.Fprintf(&b, "| %s | `%s` | | | %.1f | | | | | | failed |\n", run.Query, r.Config.SQL(run.Query), run.Elapsed.Seconds())
			continue
		}
		pass := "yes"
		if run.RSSGrowth >= MemoryBudget {
			pass = "**no**"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %d | %.1f | %.1f | %.1f | %.2f | %.1f | %.1f | %s | 0 |\n", run.Query, r.Config.SQL(run.Query),
			run.Rows, float64(run.Bytes)/1e6, run.Elapsed.Seconds(), run.Paused.Seconds(), run.ProxyCPU.Seconds(),
			float64(run.RSSBefore)/(1<<20), float64(run.RSSGrowth)/(1<<20), pass)
	}
	return b.String()
}

// MemoryReport is everything WriteMemoryReport renders.
type MemoryReport struct {
	Results  *MemoryResults
	System   SystemInfo
	Commands []string
}

// NewMemoryReport gathers the machine, versions and commands of env.
func NewMemoryReport(ctx context.Context, env *Env, res *MemoryResults) *MemoryReport {
	return &MemoryReport{Results: res, System: CollectSystemInfo(ctx, env), Commands: env.Commands}
}

// WriteMemoryReport writes memory-<timestamp>.md into dir and returns its
// path.
func WriteMemoryReport(r *MemoryReport, dir string) (string, error) {
	return writeModeReport(dir, "memory", r.Results.Start, r.Markdown())
}

// Markdown renders the whole report.
func (r *MemoryReport) Markdown() string {
	var b strings.Builder
	res := r.Results
	fmt.Fprintf(&b, "# shardgate merge memory benchmark, %s\n\n", res.Start.UTC().Format("2006-01-02 15:04 UTC"))
	if res.Interrupted {
		b.WriteString("**Interrupted: not every statement ran.**\n\n")
	}
	fmt.Fprintf(&b, "Duration %v.\n\n", res.End.Sub(res.Start).Round(time.Second))
	writeMachineInfo(&b, r.System, "The Go client")
	b.WriteString("## Results\n\n" + res.Description() + "\n" + res.Table() + "\n")
	var fails []string
	for _, run := range res.Runs {
		if run.Failure != "" {
			fails = append(fails, fmt.Sprintf("### %s\n\n```\n%s\n```\n", run.Query, strings.TrimSpace(run.Failure)))
		}
	}
	if len(fails) > 0 {
		b.WriteString("## Failed runs\n\n" + strings.Join(fails, "\n") + "\n")
	}
	b.WriteString("## Commands\n\n```\n")
	for _, c := range r.Commands {
		b.WriteString(c + "\n")
	}
	b.WriteString("```\n")
	return b.String()
}
