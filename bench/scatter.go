package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/shardgate/shardgate/internal/sharding"
)

// ScatterTable is the merge benchmark's table (issue 14's "Performance"):
// unsharded in the benchmark database for the Direct and Shardgate targets,
// and the same rows in ScatterTable_0000 … _0007, mod-sharded on id over
// the Sharded target's ShardedShards shards (ShardedSubTables each).
const ScatterTable = "sgscatter"

// scatterKeySpan makes k distinct: k = id × a prime mod (rows ×
// scatterKeySpan) is a permutation of residues (the prime is coprime with
// the modulus), so ORDER BY k has no ties and the first rows are one
// answer, and `k < scatterFilterBelow` selects about 100 rows.
const (
	scatterKeySpan     = 10
	scatterFilterBelow = 1000
	scatterLimit       = 10
)

// ScatterQuery is one statement of the merge benchmark.
type ScatterQuery struct {
	Name string
	SQL  string
	// Ordered: the answer's order is total, so results compare in order;
	// otherwise as multisets.
	Ordered bool
	// shardRows counts the rows one shard answers the pushed-down
	// statement with; %s is the shard's sub-tables as one derived table.
	shardRows string
}

// ScatterDim is the evaluated statements' second table (issue 22): one
// row per group of ScatterTable (id = g), sharded by a rule other than
// ScatterTable's (mod over one sub-table per shard), so that a join of
// the two, a derived table and an IN subquery are evaluated.
const ScatterDim = "sgdim"

// ScatterQueries are the merge benchmark's statements. "scatter" needs no
// merge (the shards' rows are concatenated): the baseline of reading from
// every shard. "join", "derived" and "in-subquery" are evaluated
// (docs/sharding.md): the join reads about 100 outer rows, then
// ScatterDim's by a semi-join (one statement per shard).
var ScatterQueries = []ScatterQuery{
	{Name: "order-limit", Ordered: true,
		SQL:       fmt.Sprintf("SELECT id, k, c FROM %s ORDER BY k LIMIT %d", ScatterTable, scatterLimit),
		shardRows: fmt.Sprintf("SELECT LEAST(COUNT(*), %d) FROM %%s", scatterLimit)},
	{Name: "group-by",
		SQL:       fmt.Sprintf("SELECT g, COUNT(*), SUM(x) FROM %s GROUP BY g", ScatterTable),
		shardRows: "SELECT COUNT(DISTINCT g) FROM %s"},
	{Name: "scatter",
		SQL:       fmt.Sprintf("SELECT id, k, c FROM %s WHERE k < %d", ScatterTable, scatterFilterBelow),
		shardRows: fmt.Sprintf("SELECT COUNT(*) FROM %%s WHERE k < %d", scatterFilterBelow)},
	{Name: "join",
		SQL:       fmt.Sprintf("SELECT s.id, s.g, d.name FROM %s s JOIN %s d ON d.id = s.g WHERE s.k < %d", ScatterTable, ScatterDim, scatterFilterBelow),
		shardRows: fmt.Sprintf("SELECT COUNT(*) FROM %%s WHERE k < %d", scatterFilterBelow)},
	{Name: "derived", Ordered: true,
		SQL: fmt.Sprintf("SELECT t.g, t.n FROM (SELECT g, COUNT(*) AS n FROM %s WHERE k < %d GROUP BY g ORDER BY n DESC, g LIMIT %d) t ORDER BY t.g",
			ScatterTable, scatterFilterBelow, scatterLimit),
		shardRows: fmt.Sprintf("SELECT COUNT(*) FROM %%s WHERE k < %d", scatterFilterBelow)},
	{Name: "in-subquery",
		SQL:       fmt.Sprintf("SELECT id, name FROM %s WHERE id IN (SELECT g FROM %s WHERE k < %d)", ScatterDim, ScatterTable, scatterFilterBelow),
		shardRows: fmt.Sprintf("SELECT COUNT(*) FROM %%s WHERE k < %d", scatterFilterBelow)},
}

func scatterQuery(name string) (ScatterQuery, bool) {
	for _, q := range ScatterQueries {
		if q.Name == name {
			return q, true
		}
	}
	return ScatterQuery{}, false
}

// ScatterConfig configures RunScatter.
type ScatterConfig struct {
	Rows    int // rows of ScatterTable
	Groups  int // distinct values of g (the GROUP BY's groups)
	Threads int // client connections, each running the query in a loop
	Rounds  int
	Time    time.Duration // per run
	Warmup  time.Duration // per query, ps-mode and target, unmeasured; 0: none
	Queries []string      // names in ScatterQueries
	PSModes []string      // disable: text protocol; auto: prepared statements
	Targets []Target      // the order of round 1
}

// DefaultScatterConfig is what `sgbench scatter` runs.
func DefaultScatterConfig() ScatterConfig {
	return ScatterConfig{
		Rows: 200000, Groups: 500, Threads: 16, Rounds: 3, Time: 10 * time.Second, Warmup: 2 * time.Second,
		Queries: []string{"order-limit", "group-by", "scatter", "join", "derived", "in-subquery"}, PSModes: []string{"disable"},
		Targets: []Target{Direct, Shardgate, Sharded},
	}
}

// maxScatterRows keeps id × the hash primes within BIGINT.
const maxScatterRows = 100_000_000

// Validate reports every problem of the configuration.
func (c ScatterConfig) Validate() error {
	var errs []error
	if c.Rows < ShardedShards*ShardedSubTables || c.Rows > maxScatterRows {
		errs = append(errs, fmt.Errorf("rows: %d is not in %d..%d", c.Rows, ShardedShards*ShardedSubTables, maxScatterRows))
	}
	if c.Groups < 1 || c.Groups > c.Rows {
		errs = append(errs, fmt.Errorf("groups: %d is not in 1..rows (%d)", c.Groups, c.Rows))
	}
	if c.Threads < 1 || c.Threads > 4000 {
		errs = append(errs, fmt.Errorf("threads: %d is not in 1..4000", c.Threads))
	}
	if c.Rounds < 1 {
		errs = append(errs, fmt.Errorf("rounds: %d, need at least 1", c.Rounds))
	}
	if c.Time <= 0 || c.Warmup < 0 {
		errs = append(errs, fmt.Errorf("time %v and warmup %v: need time > 0 and warmup >= 0", c.Time, c.Warmup))
	}
	if len(c.Queries) == 0 {
		errs = append(errs, errors.New("queries: need at least one"))
	}
	for _, q := range c.Queries {
		if _, ok := scatterQuery(q); !ok {
			errs = append(errs, fmt.Errorf("queries: unknown query %q (want order-limit, group-by, scatter, join, derived or in-subquery)", q))
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
	if len(c.Targets) == 0 {
		errs = append(errs, errors.New("targets: need at least one"))
	}
	for _, t := range c.Targets {
		if _, err := ParseTarget(string(t)); err != nil {
			errs = append(errs, fmt.Errorf("targets: %w", err))
		}
	}
	return errors.Join(errs...)
}

// ScatterRun is one target running one query from Threads connections for
// Time.
type ScatterRun struct {
	Round, Slot int // 1-based
	Queries     int64
	Rows        int64 // rows returned, all queries
	Elapsed     time.Duration
	QPS         float64
	P50, P99    time.Duration
	ProxyCPU    time.Duration // 0 for direct
	ServerCPU   time.Duration
	Failure     string // non-empty when the run failed (the first error, exactly)
}

// ScatterCell is one query × ps-mode × target.
type ScatterCell struct {
	Query  string
	PSMode string
	Target Target
	Runs   []ScatterRun
}

// ScatterResults is a finished (or interrupted) RunScatter.
type ScatterResults struct {
	Config     ScatterConfig
	Start, End time.Time
	Cells      []*ScatterCell
	// ShardRows is, per query, how many rows the shards answer the
	// Sharded target's pushed-down statements with: what its merge reads.
	ShardRows   map[string]int64
	Interrupted bool
}

// Cell returns the cell for the given coordinates, or nil.
func (r *ScatterResults) Cell(query, ps string, t Target) *ScatterCell {
	for _, c := range r.Cells {
		if c.Query == query && c.PSMode == ps && c.Target == t {
			return c
		}
	}
	return nil
}

// Failed counts the failed runs.
func (r *ScatterResults) Failed() int {
	n := 0
	for _, c := range r.Cells {
		for _, run := range c.Runs {
			if run.Failure != "" {
				n++
			}
		}
	}
	return n
}

// RunScatter fills ScatterTable and its sub-tables, starts the Sharded
// target if asked for, and runs every query × ps-mode with the targets
// interleaved, the order rotating every round. Failed runs are recorded
// and the benchmark goes on; it stops early when ctx is cancelled or a
// process died.
func RunScatter(ctx context.Context, env *Env, cfg ScatterConfig) (*ScatterResults, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid scatter configuration:\n%w", err)
	}
	for _, t := range cfg.Targets {
		if env.Addr(t) == "" && !env.startsLater(t) {
			return nil, fmt.Errorf("target %s was not started by StartEnv", t)
		}
	}
	res := &ScatterResults{Config: cfg, Start: time.Now(), ShardRows: map[string]int64{}}
	defer func() { res.End = time.Now() }()
	if err := env.loadScatter(cfg); err != nil {
		return res, err
	}
	if len(ShardedOf(cfg.Targets)) > 0 && env.sharded == nil && env.shardedBase == nil {
		if err := env.StartSharded(ctx, 0); err != nil {
			return res, err
		}
	}
	total := len(cfg.Queries) * len(cfg.PSModes) * len(cfg.Targets) * cfg.Rounds
	done := 0
	for _, name := range cfg.Queries {
		q, _ := scatterQuery(name)
		n, err := env.scatterShardRows(q)
		if err != nil {
			return res, err
		}
		res.ShardRows[q.Name] = n
		want, err := referenceResult(ctx, env.Addr(Direct), q)
		if err != nil {
			return res, err
		}
		for _, ps := range cfg.PSModes {
			cells := map[Target]*ScatterCell{}
			for _, t := range cfg.Targets {
				cells[t] = &ScatterCell{Query: q.Name, PSMode: ps, Target: t}
				res.Cells = append(res.Cells, cells[t])
			}
			if cfg.Warmup > 0 {
				for _, t := range cfg.Targets {
					env.logf("warm-up %s ps=%s %s (%v)", q.Name, ps, t, cfg.Warmup)
					if run := scatterOnce(ctx, env, cfg, q, ps, t, cfg.Warmup, want); run.Failure != "" {
						env.logf("warm-up %s ps=%s %s FAILED: %s", q.Name, ps, t, firstLine(run.Failure))
					}
				}
			}
			for round := 1; round <= cfg.Rounds; round++ {
				for slot, t := range rotate(cfg.Targets, round-1) {
					run := scatterOnce(ctx, env, cfg, q, ps, t, cfg.Time, want)
					run.Round, run.Slot = round, slot+1
					cells[t].Runs = append(cells[t].Runs, run)
					done++
					logScatterRun(env, done, total, cells[t], run)
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
		}
	}
	return res, nil
}

func logScatterRun(env *Env, done, total int, c *ScatterCell, r ScatterRun) {
	if r.Failure != "" {
		env.logf("[%d/%d] %s ps=%s round %d %s: FAILED: %s", done, total, c.Query, c.PSMode, r.Round, c.Target, firstLine(r.Failure))
		return
	}
	env.logf("[%d/%d] %s ps=%s round %d %-9s %8.0f qps  p99 %-9v proxy CPU %v", done, total,
		c.Query, c.PSMode, r.Round, c.Target, r.QPS, r.P99.Round(time.Microsecond), r.ProxyCPU)
}

// loadScatter creates ScatterTable with cfg.Rows rows generated by the
// server (the SEQUENCE engine: nothing crosses the network) and copies
// each row to the sub-table the mod rule places its id on.
func (e *Env) loadScatter(cfg ScatterConfig) error {
	e.logf("loading %s: %d rows, %d groups, into it and %d sub-tables", ScatterTable, cfg.Rows, cfg.Groups, ShardedShards*ShardedSubTables)
	table := Database + "." + ScatterTable
	stmts := []string{
		"DROP TABLE IF EXISTS " + table,
		"CREATE TABLE " + table + " (id BIGINT NOT NULL PRIMARY KEY, k BIGINT NOT NULL, g INT NOT NULL, x INT NOT NULL, c CHAR(60) NOT NULL, KEY k (k), KEY gx (g, x))",
		fmt.Sprintf("INSERT INTO %s SELECT seq, (seq * 2654435761) MOD %d, ((seq * 2246822519) MOD 4294967291) MOD %d, seq MOD 1000, RPAD(CONCAT(seq, '-'), 60, 'abcdefghij') FROM %s.seq_1_to_%d",
			table, cfg.Rows*scatterKeySpan, cfg.Groups, Database, cfg.Rows),
	}
	subs := ShardedShards * ShardedSubTables
	for i := range subs {
		sub := Database + "." + sharding.SubTableName(ScatterTable, i)
		stmts = append(stmts, "DROP TABLE IF EXISTS "+sub, "CREATE TABLE "+sub+" LIKE "+table,
			fmt.Sprintf("INSERT INTO %s SELECT * FROM %s WHERE id MOD %d = %d", sub, table, subs, i))
	}
	dim := Database + "." + ScatterDim
	stmts = append(stmts, "DROP TABLE IF EXISTS "+dim,
		"CREATE TABLE "+dim+" (id BIGINT NOT NULL PRIMARY KEY, name VARCHAR(32) NOT NULL)",
		fmt.Sprintf("INSERT INTO %s SELECT seq, CONCAT('group ', seq) FROM %s.seq_0_to_%d", dim, Database, cfg.Groups-1))
	for i := range ShardedShards {
		sub := Database + "." + sharding.SubTableName(ScatterDim, i)
		stmts = append(stmts, "DROP TABLE IF EXISTS "+sub, "CREATE TABLE "+sub+" LIKE "+dim,
			fmt.Sprintf("INSERT INTO %s SELECT * FROM %s WHERE id MOD %d = %d", sub, dim, ShardedShards, i))
	}
	stmts = append(stmts, "ANALYZE TABLE "+table, "ANALYZE TABLE "+dim)
	if err := e.Server.ExecE(stmts...); err != nil {
		return fmt.Errorf("load %s: %w", ScatterTable, err)
	}
	return nil
}

// scatterShardRows sums, over the shards, the rows each answers q's
// pushed-down statement with.
func (e *Env) scatterShardRows(q ScatterQuery) (int64, error) {
	var total int64
	for s := range ShardedShards {
		var parts []string
		for i := s * ShardedSubTables; i < (s+1)*ShardedSubTables; i++ {
			parts = append(parts, "SELECT * FROM "+Database+"."+sharding.SubTableName(ScatterTable, i))
		}
		v, err := e.Server.ScalarE(fmt.Sprintf(q.shardRows, "("+strings.Join(parts, " UNION ALL ")+") s"))
		if err != nil {
			return 0, fmt.Errorf("%s: rows of shard %d: %w", q.Name, s, err)
		}
		var n int64
		if _, err := fmt.Sscan(v, &n); err != nil {
			return 0, fmt.Errorf("%s: rows of shard %d: %q: %w", q.Name, s, v, err)
		}
		total += n
	}
	return total, nil
}

// referenceResult is q's answer from the server itself: every run checks
// its target's answer against it before it measures.
func referenceResult(ctx context.Context, addr string, q ScatterQuery) ([]string, error) {
	sc, err := openStreamConn(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer sc.close()
	rows, err := fetchRows(ctx, sc.conn, nil, q)
	if err != nil {
		return nil, fmt.Errorf("%s: the reference answer from the server: %w", q.Name, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: the server answers no rows; the table is not loaded", q.Name)
	}
	return rows, nil
}

// fetchRows runs q (prepared when stmt is set) and returns its rows, each
// as its columns' text joined by tabs; sorted unless q.Ordered.
func fetchRows(ctx context.Context, conn *sql.Conn, stmt *sql.Stmt, q ScatterQuery) ([]string, error) {
	var rows []string
	_, err := queryRows(ctx, conn, stmt, q.SQL, func(cols []sql.RawBytes) {
		var b strings.Builder
		for i, c := range cols {
			if i > 0 {
				b.WriteByte('\t')
			}
			b.Write(c)
		}
		rows = append(rows, b.String())
	})
	if !q.Ordered {
		slices.Sort(rows)
	}
	return rows, err
}

// queryRows runs query and calls each (when not nil) for every row; the
// row's bytes are valid only during the call. It returns the row count.
func queryRows(ctx context.Context, conn *sql.Conn, stmt *sql.Stmt, query string, each func([]sql.RawBytes)) (int64, error) {
	var r *sql.Rows
	var err error
	if stmt != nil {
		r, err = stmt.QueryContext(ctx)
	} else {
		r, err = conn.QueryContext(ctx, query)
	}
	if err != nil {
		return 0, err
	}
	defer r.Close()
	names, err := r.Columns()
	if err != nil {
		return 0, err
	}
	cols := make([]sql.RawBytes, len(names))
	dest := make([]any, len(cols))
	for i := range cols {
		dest[i] = &cols[i]
	}
	var n int64
	for r.Next() {
		if err := r.Scan(dest...); err != nil {
			return n, fmt.Errorf("row %d: %w", n+1, err)
		}
		n++
		if each != nil {
			each(cols)
		}
	}
	if err := r.Err(); err != nil {
		return n, fmt.Errorf("after %d rows: %w", n, err)
	}
	return n, r.Close()
}

// scatterWorker is one client connection of a run.
type scatterWorker struct {
	sc      *streamConn
	stmt    *sql.Stmt
	hist    *hdrhistogram.Histogram
	queries int64
	rows    int64
	err     error
}

// scatterOnce opens cfg.Threads connections to t, checks the answer
// against want, then runs q on every connection in a loop for d and
// measures the proxy's and the server's CPU around the loop.
func scatterOnce(ctx context.Context, env *Env, cfg ScatterConfig, q ScatterQuery, ps string, t Target, d time.Duration, want []string) ScatterRun {
	var run ScatterRun
	workers, err := openScatterWorkers(ctx, env.Addr(t), cfg.Threads, q, ps)
	defer func() {
		for _, w := range workers {
			if w.stmt != nil {
				w.stmt.Close()
			}
			w.sc.close()
		}
	}()
	if err != nil {
		run.Failure = failureText(ctx, err)
		return run
	}
	got, err := fetchRows(ctx, workers[0].sc.conn, workers[0].stmt, q)
	if err != nil {
		run.Failure = failureText(ctx, fmt.Errorf("%s: %w", q.SQL, err))
		return run
	}
	if diff := diffRows(got, want); diff != "" {
		run.Failure = fmt.Sprintf("%s: a different answer than the server's: %s", q.SQL, diff)
		return run
	}
	lt, errs := timeLoops(env.ProxyPid(t), env.Server.Pid(), len(workers), d, func(i int, deadline time.Time) {
		workers[i].loop(ctx, q.SQL, deadline)
	})
	run.Elapsed = lt.elapsed
	hist := hdrhistogram.New(1, 60_000_000, 3)
	for _, w := range workers {
		hist.Merge(w.hist)
		run.Queries += w.queries
		run.Rows += w.rows
		if w.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", q.SQL, w.err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		run.Failure = failureText(ctx, err)
		return run
	}
	if want := int64(len(want)) * run.Queries; run.Rows != want {
		run.Failure = fmt.Sprintf("%s: %d rows in %d queries, want %d", q.SQL, run.Rows, run.Queries, want)
		return run
	}
	run.record(hist, lt)
	if run.Queries == 0 {
		run.Failure = "no query finished in the run"
	}
	return run
}

// loopTimes are how long a timed run's loops took, and the CPU time the
// proxy and the server spent meanwhile.
type loopTimes struct {
	elapsed, proxyCPU, serverCPU time.Duration
}

// timeLoops runs loop(i, deadline) for i < n, each in its goroutine, until
// d has passed, and returns how long they took and the CPU time of the
// proxy (pid 0: none, as for the direct target) and of the server around
// them, with the errors of reading it.
func timeLoops(proxyPid, serverPid, n int, d time.Duration, loop func(i int, deadline time.Time)) (loopTimes, []error) {
	proxy0, err1 := cpuTimeOrZero(proxyPid)
	server0, err2 := cpuTime(serverPid)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loop(i, deadline)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	proxy1, err3 := cpuTimeOrZero(proxyPid)
	server1, err4 := cpuTime(serverPid)
	return loopTimes{elapsed, proxy1 - proxy0, server1 - server0}, []error{err1, err2, err3, err4}
}

// record sets run's rate, latency quantiles (hist, in µs) and CPU times,
// once its Queries are counted.
func (run *ScatterRun) record(hist *hdrhistogram.Histogram, lt loopTimes) {
	run.QPS = float64(run.Queries) / run.Elapsed.Seconds()
	run.P50 = time.Duration(hist.ValueAtQuantile(50)) * time.Microsecond
	run.P99 = time.Duration(hist.ValueAtQuantile(99)) * time.Microsecond
	run.ProxyCPU, run.ServerCPU = lt.proxyCPU, lt.serverCPU
}

func openScatterWorkers(ctx context.Context, addr string, n int, q ScatterQuery, ps string) ([]*scatterWorker, error) {
	var ws []*scatterWorker
	for range n {
		sc, err := openStreamConn(ctx, addr)
		if err != nil {
			return ws, err
		}
		w := &scatterWorker{sc: sc, hist: hdrhistogram.New(1, 60_000_000, 3)}
		ws = append(ws, w)
		if ps == "auto" {
			if w.stmt, err = sc.conn.PrepareContext(ctx, q.SQL); err != nil {
				return ws, fmt.Errorf("prepare %s: %w", q.SQL, err)
			}
		}
	}
	return ws, nil
}

// loop runs the query until deadline, recording each one's latency; it
// stops at the first error.
func (w *scatterWorker) loop(ctx context.Context, query string, deadline time.Time) {
	for {
		t0 := time.Now()
		if !t0.Before(deadline) || ctx.Err() != nil {
			return
		}
		n, err := queryRows(ctx, w.sc.conn, w.stmt, query, nil)
		if err != nil {
			w.err = err
			return
		}
		_ = w.hist.RecordValue(max(1, time.Since(t0).Microseconds()))
		w.queries++
		w.rows += n
	}
}

// diffRows describes the first difference between two answers ("" when
// equal).
func diffRows(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("row %d is %q, the server's %q", i+1, got[i], want[i])
		}
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d rows, the server's %d", len(got), len(want))
	}
	return ""
}

// ScatterSummary is a cell reduced over its successful rounds (medians).
type ScatterSummary struct {
	OK, Failed int
	QPS        float64
	Spread     float64 // (max-min)/median QPS
	P50, P99   time.Duration
	RowsPerQ   float64 // rows returned per query
	// ProxyCPUPerQ and ServerCPUPerQ are microseconds per query.
	ProxyCPUPerQ, ServerCPUPerQ float64
}

// Summary reduces the cell's runs.
func (c *ScatterCell) Summary() ScatterSummary { return summarize(c.Runs) }

// summarize reduces runs to the medians of the successful ones.
func summarize(runs []ScatterRun) ScatterSummary {
	var s ScatterSummary
	var qps, p50, p99, pcpu, scpu, rows []float64
	for _, r := range runs {
		if r.Failure != "" {
			s.Failed++
			continue
		}
		s.OK++
		qps = append(qps, r.QPS)
		p50 = append(p50, float64(r.P50))
		p99 = append(p99, float64(r.P99))
		pcpu = append(pcpu, perQueryMicros(r.ProxyCPU, r.Queries))
		scpu = append(scpu, perQueryMicros(r.ServerCPU, r.Queries))
		rows = append(rows, float64(r.Rows)/float64(r.Queries))
	}
	if s.OK == 0 {
		return s
	}
	s.QPS, s.RowsPerQ = median(qps), median(rows)
	s.Spread = (slices.Max(qps) - slices.Min(qps)) / s.QPS
	s.P50, s.P99 = time.Duration(median(p50)), time.Duration(median(p99))
	s.ProxyCPUPerQ, s.ServerCPUPerQ = median(pcpu), median(scpu)
	return s
}
