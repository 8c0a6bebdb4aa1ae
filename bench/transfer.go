package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/go-sql-driver/mysql"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/sharding"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/internal/xa"
)

// The transfer benchmark (issue 21's "Performance"): bank transfers, each
// BEGIN; two UPDATEs of TransferTable; COMMIT, through one shardgate whose
// schemas differ only in cross_shard_writes. TransferTable is hash-sharded
// on id over TransferShards shards of one sub-table each, every shard the
// benchmark's one mariadbd; each policy has its own copy of the accounts in
// its own database (TransferDatabase).
const (
	TransferTable  = "sgaccount"
	TransferShards = 2
	// transferBalance is every account's balance after loading: the sum
	// over the accounts must stay Accounts × transferBalance.
	transferBalance = 1000
)

// The workloads: the two accounts of a transfer on one shard, or one on
// each shard.
const (
	TransferSingle = "single"
	TransferCross  = "cross"
)

// TransferPolicies are the cross_shard_writes values a case runs under.
var TransferPolicies = []string{config.CrossShardRefuse, config.CrossShardAllow, config.CrossShardAtomic}

// TransferDatabase is the schema (database) of a policy's accounts.
func TransferDatabase(policy string) string { return "sgxfer_" + policy }

// TransferCase is a workload under a policy, e.g. single/atomic.
type TransferCase struct{ Workload, Policy string }

func (c TransferCase) String() string { return c.Workload + "/" + c.Policy }

// ParseTransferCase reads workload/policy. cross/refuse is no case: the
// policy refuses its second write.
func ParseTransferCase(s string) (TransferCase, error) {
	w, p, ok := strings.Cut(s, "/")
	c := TransferCase{Workload: w, Policy: p}
	switch {
	case !ok || (w != TransferSingle && w != TransferCross) || !slices.Contains(TransferPolicies, p):
		return c, fmt.Errorf("case %q: want workload/policy, workload single or cross, policy %s", s, strings.Join(TransferPolicies, ", "))
	case w == TransferCross && p == "refuse":
		return c, errors.New("case cross/refuse: refuse refuses the second shard's write; cross runs under allow or atomic")
	}
	return c, nil
}

// TransferConfig configures RunTransfer.
type TransferConfig struct {
	Accounts int // per policy, over the shards
	Threads  int // client connections, each running transfers in a loop
	Rounds   int
	Time     time.Duration // per run
	Warmup   time.Duration // per case, unmeasured; 0: none
	// Count is how many transfers of each case, on one connection, the
	// server's general log records to count the proxy's round trips to
	// the backends; 0: none.
	Count int
	// RecoveryInterval is the proxy's transactions.recovery_interval:
	// recovery removes the decision rows of two-phase commits, one DELETE
	// each; short, that work happens during the run that left the rows.
	RecoveryInterval time.Duration
	Cases            []TransferCase // the order of round 1
}

// DefaultTransferCases: single-shard transfers under refuse and atomic,
// cross-shard ones under allow (the same writes, not atomic) and atomic.
var DefaultTransferCases = []TransferCase{
	{TransferSingle, "refuse"}, {TransferSingle, "atomic"}, {TransferCross, "allow"}, {TransferCross, "atomic"},
}

// DefaultTransferConfig is what `sgbench transfer` runs.
func DefaultTransferConfig() TransferConfig {
	return TransferConfig{
		Accounts: 100000, Threads: 16, Rounds: 3, Time: 10 * time.Second, Warmup: 2 * time.Second,
		Count: 200, RecoveryInterval: time.Second, Cases: slices.Clone(DefaultTransferCases),
	}
}

// Validate reports every problem of the configuration.
func (c TransferConfig) Validate() error {
	var errs []error
	if c.Accounts < 4*TransferShards || c.Accounts > 100_000_000 {
		errs = append(errs, fmt.Errorf("accounts: %d is not in %d..100000000", c.Accounts, 4*TransferShards))
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
	if c.Count < 0 {
		errs = append(errs, fmt.Errorf("count: %d, must be >= 0", c.Count))
	}
	if c.RecoveryInterval <= 0 || c.RecoveryInterval > time.Minute {
		errs = append(errs, fmt.Errorf("recovery-interval: %v is not in (0, 1m]", c.RecoveryInterval))
	}
	if len(c.Cases) == 0 {
		errs = append(errs, errors.New("cases: need at least one"))
	}
	for i, tc := range c.Cases {
		if _, err := ParseTransferCase(tc.String()); err != nil {
			errs = append(errs, fmt.Errorf("cases: %w", err))
		}
		if slices.Contains(c.Cases[:i], tc) {
			errs = append(errs, fmt.Errorf("cases: %s twice", tc))
		}
	}
	return errors.Join(errs...)
}

// policies are the distinct policies of the cases, in order.
func (c TransferConfig) policies() []string {
	var ps []string
	for _, tc := range c.Cases {
		if !slices.Contains(ps, tc.Policy) {
			ps = append(ps, tc.Policy)
		}
	}
	return ps
}

// TransferRun is one case run from Threads connections for Time; its
// Queries are transfers (transactions) and Rows stays 0.
type TransferRun = ScatterRun

// TransferCount is what the general log saw of Count transfers of a case,
// per transfer.
type TransferCount struct {
	Transfers int
	// RoundTrips are the commands (each one request and its answer) the
	// sessions' backend connections sent; XA those carrying an XA statement.
	RoundTrips, XA float64
	// Cleanup is recovery's DELETEs of decision rows (off the commit path).
	Cleanup float64
	Failure string
}

// TransferCell is one case's runs.
type TransferCell struct {
	Case  TransferCase
	Runs  []TransferRun
	Count TransferCount
}

// Summary reduces the cell's successful runs to medians.
func (c *TransferCell) Summary() ScatterSummary { return summarize(c.Runs) }

// TransferResults is a finished (or interrupted) RunTransfer.
type TransferResults struct {
	Config      TransferConfig
	Start, End  time.Time
	Cells       []*TransferCell
	Interrupted bool
}

// Cell returns the cell of a case, or nil.
func (r *TransferResults) Cell(tc TransferCase) *TransferCell {
	for _, c := range r.Cells {
		if c.Case == tc {
			return c
		}
	}
	return nil
}

// Failed counts the failed runs and counting passes.
func (r *TransferResults) Failed() int {
	n := 0
	for _, c := range r.Cells {
		n += c.Summary().Failed
		if c.Count.Failure != "" {
			n++
		}
	}
	return n
}

// RunTransfer loads the accounts of every policy the cases use, starts the
// transfer proxy and runs the cases interleaved, the order rotating every
// round; then counts each case's round trips with the general log. Failed
// runs are recorded and the benchmark goes on; it stops early when ctx is
// cancelled or a process died.
func RunTransfer(ctx context.Context, env *Env, cfg TransferConfig) (*TransferResults, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid transfer configuration:\n%w", err)
	}
	res := &TransferResults{Config: cfg, Start: time.Now()}
	defer func() { res.End = time.Now() }()
	accounts, err := env.loadTransfer(cfg)
	if err != nil {
		return res, err
	}
	if env.transfer == nil {
		if err := env.startTransfer(ctx, cfg); err != nil {
			return res, err
		}
	}
	for _, tc := range cfg.Cases {
		res.Cells = append(res.Cells, &TransferCell{Case: tc})
	}
	if cfg.Warmup > 0 {
		for _, tc := range cfg.Cases {
			env.logf("warm-up %s (%v)", tc, cfg.Warmup)
			if run := transferOnce(ctx, env, cfg, accounts, tc, cfg.Warmup); run.Failure != "" {
				env.logf("warm-up %s FAILED: %s", tc, firstLine(run.Failure))
			}
		}
	}
	total, done := len(cfg.Cases)*cfg.Rounds, 0
	for round := 1; round <= cfg.Rounds; round++ {
		for slot, c := range rotate(res.Cells, round-1) {
			run := transferOnce(ctx, env, cfg, accounts, c.Case, cfg.Time)
			run.Round, run.Slot = round, slot+1
			c.Runs = append(c.Runs, run)
			done++
			logTransferRun(env, done, total, c.Case, run)
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
	if cfg.Count > 0 {
		for _, c := range res.Cells {
			c.Count = countTransfers(ctx, env, cfg, accounts, c.Case)
			if c.Count.Failure != "" {
				env.logf("round trips of %s: FAILED: %s", c.Case, firstLine(c.Count.Failure))
			} else {
				env.logf("round trips of %s: %.2f per transfer (%.2f with XA), decision cleanup %.2f", c.Case, c.Count.RoundTrips, c.Count.XA, c.Count.Cleanup)
			}
			if err := ctx.Err(); err != nil {
				res.Interrupted = true
				return res, fmt.Errorf("interrupted: %w", err)
			}
		}
	}
	return res, nil
}

func logTransferRun(env *Env, done, total int, tc TransferCase, r TransferRun) {
	if r.Failure != "" {
		env.logf("[%d/%d] round %d %s: FAILED: %s", done, total, r.Round, tc, firstLine(r.Failure))
		return
	}
	env.logf("[%d/%d] round %d %-13s %7.0f transfers/s  p99 %-9v proxy CPU %v", done, total,
		r.Round, tc, r.QPS, r.P99.Round(time.Microsecond), r.ProxyCPU)
}

// transferAccounts are the account ids on each shard.
type transferAccounts [TransferShards][]int64

// loadTransfer creates, in each policy's database, the sub-tables of
// TransferTable with the accounts the hash rule (the proxy's own) places
// on each, every balance transferBalance.
func (e *Env) loadTransfer(cfg TransferConfig) (transferAccounts, error) {
	var acc transferAccounts
	rule, err := sharding.NewHash(TransferShards)
	if err != nil {
		return acc, err
	}
	for id := int64(1); id <= int64(cfg.Accounts); id++ {
		i, err := rule.Index(sharding.IntValue(id))
		if err != nil {
			return acc, fmt.Errorf("place account %d: %w", id, err)
		}
		acc[i] = append(acc[i], id)
	}
	for i, ids := range acc {
		if len(ids) < 2 {
			return acc, fmt.Errorf("shard %d holds %d account(s); a single-shard transfer needs 2", i, len(ids))
		}
	}
	e.logf("loading %d accounts into %s over %d shards, for %s", cfg.Accounts, TransferTable, TransferShards, strings.Join(cfg.policies(), ", "))
	const batch = 5000
	for _, p := range cfg.policies() {
		db := TransferDatabase(p)
		stmts := []string{"CREATE DATABASE IF NOT EXISTS " + db}
		for i, ids := range acc {
			sub := db + "." + sharding.SubTableName(TransferTable, i)
			stmts = append(stmts, "DROP TABLE IF EXISTS "+sub,
				"CREATE TABLE "+sub+" (id BIGINT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL)")
			for lo := 0; lo < len(ids); lo += batch {
				var b strings.Builder
				b.WriteString("INSERT INTO " + sub + " VALUES ")
				for j, id := range ids[lo:min(lo+batch, len(ids))] {
					if j > 0 {
						b.WriteByte(',')
					}
					fmt.Fprintf(&b, "(%d,%d)", id, transferBalance)
				}
				stmts = append(stmts, b.String())
			}
		}
		if err := e.Server.ExecE(stmts...); err != nil {
			return acc, fmt.Errorf("load %s: %w", db, err)
		}
	}
	return acc, nil
}

// startTransfer starts the transfer proxy: TransferShards clusters on the
// one server and a schema per policy, identical but for
// cross_shard_writes.
func (e *Env) startTransfer(ctx context.Context, cfg TransferConfig) error {
	if e.shardgateBin == "" {
		return errors.New("transfer: no shardgate binary (StartEnv was not asked for one)")
	}
	return retryPort(func(addr string) error {
		path := filepath.Join(e.dir, "transfer.yaml")
		if err := os.WriteFile(path, []byte(transferConfig(addr, e.Server.Addr, cfg)), 0o600); err != nil {
			return fmt.Errorf("write the transfer configuration: %w", err)
		}
		argv := []string{e.shardgateBin, "serve", "--config", path}
		e.logf("starting shardgate (transfer: %d shards, schemas %s) on %s", TransferShards, strings.Join(cfg.policies(), ", "), addr)
		c, err := e.startServing(ctx, "shardgate-transfer", argv, addr, "")
		if err != nil {
			return err
		}
		e.transfer, e.transferAddr = c, addr
		e.Commands = append(e.Commands, "shardgate (transfer): "+strings.Join(argv, " "))
		return nil
	})
}

func transferConfig(listen, server string, cfg TransferConfig) string {
	var b strings.Builder
	fmt.Fprintf(&b, "listeners: [{address: %q}]\nlog: {level: warn}\n", listen)
	fmt.Fprintf(&b, "users:\n  - {name: %s, password: %q, default_database: %s}\n", testenv.User, testenv.Password, TransferDatabase(cfg.Cases[0].Policy))
	b.WriteString("clusters:\n")
	shards := make([]string, TransferShards)
	for i := range shards {
		shards[i] = fmt.Sprintf("s%d", i)
		fmt.Fprintf(&b, "  - {name: %s, user: %s, password: %q, primary: {address: %q}}\n", shards[i], testenv.User, testenv.Password, server)
	}
	fmt.Fprintf(&b, "transactions: {recovery_interval: %s}\nschemas:\n", cfg.RecoveryInterval)
	for _, p := range cfg.policies() {
		fmt.Fprintf(&b, "  - name: %s\n    default_cluster: s0\n    cross_shard_writes: %s\n    tables:\n", TransferDatabase(p), p)
		fmt.Fprintf(&b, "      - {name: %s, shard_key: id, rule: hash, shards: [%s], sub_tables: 1}\n", TransferTable, strings.Join(shards, ", "))
	}
	return b.String()
}

// transferWorker is one client connection of a run.
type transferWorker struct {
	sc   *streamConn
	rng  *rand.Rand
	hist *hdrhistogram.Histogram
	n    int64
	err  error
}

func openTransferWorkers(ctx context.Context, addr, db string, n int) ([]*transferWorker, error) {
	var ws []*transferWorker
	seed := uint64(time.Now().UnixNano())
	for i := range n {
		sc, err := openConn(ctx, addr, time.Minute)
		if err != nil {
			return ws, err
		}
		ws = append(ws, &transferWorker{sc: sc, rng: rand.New(rand.NewPCG(seed, uint64(i))), hist: hdrhistogram.New(1, 60_000_000, 3)})
		if _, err := sc.conn.ExecContext(ctx, "USE "+db); err != nil {
			return ws, fmt.Errorf("USE %s: %w", db, err)
		}
	}
	return ws, nil
}

func closeTransferWorkers(ws []*transferWorker) {
	for _, w := range ws {
		w.sc.close()
	}
}

// pick draws the two accounts of a transfer, lower id first (transfers
// lock their accounts in id order, so they never deadlock).
func (acc *transferAccounts) pick(rng *rand.Rand, workload string) (a, b int64) {
	if workload == TransferCross {
		a, b = acc[0][rng.IntN(len(acc[0]))], acc[1][rng.IntN(len(acc[1]))]
	} else {
		ids := acc[rng.IntN(TransferShards)]
		i, j := rng.IntN(len(ids)), rng.IntN(len(ids)-1)
		if j >= i {
			j++
		}
		a, b = ids[i], ids[j]
	}
	return min(a, b), max(a, b)
}

// transfer moves an amount (either way) between two accounts in one
// transaction: BEGIN; UPDATE; UPDATE; COMMIT, in the text protocol.
func (w *transferWorker) transfer(ctx context.Context, acc *transferAccounts, workload string) error {
	a, b := acc.pick(w.rng, workload)
	amount := 1 + w.rng.Int64N(100) // never 0: an UPDATE that changes nothing affects no row
	if w.rng.IntN(2) == 0 {
		amount = -amount
	}
	stmts := [...]string{
		"BEGIN",
		fmt.Sprintf("UPDATE %s SET balance = balance + %d WHERE id = %d", TransferTable, amount, a),
		fmt.Sprintf("UPDATE %s SET balance = balance + %d WHERE id = %d", TransferTable, -amount, b),
		"COMMIT",
	}
	for i, s := range stmts {
		r, err := w.sc.conn.ExecContext(ctx, s)
		if err == nil && (i == 1 || i == 2) {
			if n, _ := r.RowsAffected(); n != 1 {
				err = fmt.Errorf("%d rows changed, want 1", n)
			}
		}
		if err != nil {
			if i > 0 {
				_, _ = w.sc.conn.ExecContext(ctx, "ROLLBACK")
			}
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// loop runs transfers while more says so, recording each one's latency;
// it stops at the first error.
func (w *transferWorker) loop(ctx context.Context, acc *transferAccounts, workload string, more func() bool) {
	for ctx.Err() == nil && more() {
		t0 := time.Now()
		if w.err = w.transfer(ctx, acc, workload); w.err != nil {
			return
		}
		_ = w.hist.RecordValue(max(1, time.Since(t0).Microseconds()))
		w.n++
	}
}

// transferOnce waits until recovery has removed the earlier runs'
// decision rows, opens cfg.Threads connections to the case's schema, runs
// transfers on every one for d and measures the proxy's and the server's
// CPU around them; then checks that the balances still add up.
func transferOnce(ctx context.Context, env *Env, cfg TransferConfig, acc transferAccounts, tc TransferCase, d time.Duration) TransferRun {
	var run TransferRun
	db := TransferDatabase(tc.Policy)
	if err := env.drainDecisions(ctx, cfg); err != nil {
		run.Failure = failureText(ctx, err)
		return run
	}
	workers, err := openTransferWorkers(ctx, env.transferAddr, db, cfg.Threads)
	defer closeTransferWorkers(workers)
	if err != nil {
		run.Failure = failureText(ctx, err)
		return run
	}
	lt, errs := timeLoops(env.transfer.Pid(), env.Server.Pid(), len(workers), d, func(i int, deadline time.Time) {
		workers[i].loop(ctx, &acc, tc.Workload, func() bool { return time.Now().Before(deadline) })
	})
	run.Elapsed = lt.elapsed
	hist := hdrhistogram.New(1, 60_000_000, 3)
	for _, w := range workers {
		hist.Merge(w.hist)
		run.Queries += w.n
		errs = append(errs, w.err)
	}
	errs = append(errs, env.checkBalances(db, cfg.Accounts))
	if err := errors.Join(errs...); err != nil {
		run.Failure = failureText(ctx, err)
		return run
	}
	if run.Queries == 0 {
		run.Failure = "no transfer finished in the run"
		return run
	}
	run.record(hist, lt)
	return run
}

// checkBalances checks, on the server, that db still holds every account
// and that the balances add up to what was loaded.
func (e *Env) checkBalances(db string, accounts int) error {
	parts := make([]string, TransferShards)
	for i := range parts {
		parts[i] = "SELECT balance FROM " + db + "." + sharding.SubTableName(TransferTable, i)
	}
	got, err := e.Server.ScalarE("SELECT CONCAT(COUNT(*), ' ', SUM(balance)) FROM (" + strings.Join(parts, " UNION ALL ") + ") a")
	if err != nil {
		return fmt.Errorf("sum of the balances: %w", err)
	}
	if want := fmt.Sprintf("%d %d", accounts, int64(accounts)*transferBalance); got != want {
		return fmt.Errorf("%s: accounts and the sum of their balances are %s, want %s: a transfer was applied in part", db, got, want)
	}
	return nil
}

// drainDecisions waits until recovery has removed every decision row
// (two-phase commits leave one each) of every policy's database and has
// stopped deleting (with every shard on one server it deletes each row
// once per shard), so that a run starts with none and the removal of its
// own rows happens while it runs, not in the next case's. A database
// without a decision table (not atomic) has nothing to wait for.
func (e *Env) drainDecisions(ctx context.Context, cfg TransferConfig) error {
	within := 3*cfg.RecoveryInterval + time.Minute
	deadline := time.Now().Add(within)
	lastDeletes := ""
	for {
		rows, err := e.decisionRows(cfg)
		if err != nil {
			return err
		}
		deletes, err := e.Server.ScalarE("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'COM_DELETE'")
		if err != nil {
			return err
		}
		if rows == 0 && deletes == lastDeletes {
			return nil
		}
		lastDeletes = deletes
		if time.Now().After(deadline) {
			return fmt.Errorf("%d decision rows still there, or recovery still deleting, after %v", rows, within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// decisionRows counts the decision rows of every policy's database.
func (e *Env) decisionRows(cfg TransferConfig) (int64, error) {
	var total int64
	for _, p := range cfg.policies() {
		v, err := e.Server.ScalarE("SELECT COUNT(*) FROM " + TransferDatabase(p) + "." + xa.DecisionTable)
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1146 {
			continue // not atomic
		}
		if err != nil {
			return 0, err
		}
		var n int64
		if _, err := fmt.Sscan(v, &n); err != nil {
			return 0, fmt.Errorf("decision rows: %q: %w", v, err)
		}
		total += n
	}
	return total, nil
}

// countTransfers runs cfg.Count transfers of a case on one connection
// with the server's general log on (after one unlogged transfer, which
// brings the session's backend connections to its state) and counts what
// the proxy sent, until recovery has removed their decision rows.
func countTransfers(ctx context.Context, env *Env, cfg TransferConfig, acc transferAccounts, tc TransferCase) TransferCount {
	c := TransferCount{Transfers: cfg.Count}
	entries, err := env.generalLog(ctx, func() error {
		ws, err := openTransferWorkers(ctx, env.transferAddr, TransferDatabase(tc.Policy), 1)
		defer closeTransferWorkers(ws)
		if err != nil {
			return err
		}
		w := ws[0]
		if err := w.transfer(ctx, &acc, tc.Workload); err != nil {
			return err
		}
		if err := env.drainDecisions(ctx, cfg); err != nil {
			return err
		}
		if err := env.Server.ExecE("SET GLOBAL general_log = ON"); err != nil {
			return err
		}
		w.loop(ctx, &acc, tc.Workload, func() bool { return w.n < int64(cfg.Count) })
		return errors.Join(w.err, env.drainDecisions(ctx, cfg))
	})
	if err != nil {
		c.Failure = failureText(ctx, err)
		return c
	}
	c.RoundTrips, c.XA, c.Cleanup = countRoundTrips(entries, cfg.Count)
	return c
}

// logEntry is a row of mysql.general_log: one command a server received.
type logEntry struct {
	Thread   int64
	Command  string // Query, Connect, Quit, ...
	Argument string // the statement text of a Query
}

// generalLog truncates mysql.general_log, calls run (which turns the log
// on: SET GLOBAL general_log = ON), turns it off and returns what it
// recorded.
func (e *Env) generalLog(ctx context.Context, run func() error) ([]logEntry, error) {
	if err := e.Server.ExecE("SET GLOBAL general_log = OFF", "SET GLOBAL log_output = 'TABLE'", "TRUNCATE TABLE mysql.general_log"); err != nil {
		return nil, err
	}
	err := run()
	if err := errors.Join(err, e.Server.ExecE("SET GLOBAL general_log = OFF")); err != nil {
		return nil, err
	}
	db, err := sql.Open("mysql", e.Server.RootDSN(""))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT thread_id, command_type, CONVERT(argument USING utf8mb4) FROM mysql.general_log")
	if err != nil {
		return nil, fmt.Errorf("read the general log: %w", err)
	}
	defer rows.Close()
	var out []logEntry
	for rows.Next() {
		var le logEntry
		if err := rows.Scan(&le.Thread, &le.Command, &le.Argument); err != nil {
			return nil, fmt.Errorf("read the general log: %w", err)
		}
		out = append(out, le)
	}
	return out, rows.Err()
}

// countRoundTrips counts, per transfer, the commands of the sessions'
// backend connections — the server threads that opened a transaction
// (BEGIN, START TRANSACTION, XA START), which health checks and recovery
// never do — that get an answer (not Quit or Close stmt; a Connect is a
// login, not counted) and those carrying an XA statement; and recovery's
// DELETEs of decision rows the sessions inserted (one statement removes a
// pass's rows of a table), each distinct statement once (with every shard
// on one server, recovery reads the one table once per shard and sends
// the same DELETE twice: the second removes nothing).
func countRoundTrips(entries []logEntry, transfers int) (roundTrips, xaTrips, cleanup float64) {
	session := map[int64]bool{}
	for _, e := range entries {
		if e.Command == "Query" && opensTransaction(e.Argument) {
			session[e.Thread] = true
		}
	}
	decided, deletes := map[string]bool{}, map[string][]string{}
	var n, nXA int
	for _, e := range entries {
		arg := strings.ToUpper(e.Argument)
		onDecisions := e.Command == "Query" && strings.Contains(arg, strings.ToUpper(xa.DecisionTable))
		switch {
		case session[e.Thread] && !slices.Contains([]string{"Connect", "Quit", "Close stmt"}, e.Command):
			n++
			if strings.Contains(arg, "XA ") {
				nXA++
			}
			if onDecisions && strings.HasPrefix(arg, "INSERT") {
				decided[hexLiteral(arg)] = true
			}
		case onDecisions && strings.HasPrefix(arg, "DELETE"):
			deletes[arg] = hexLiterals(arg)
		}
	}
	if transfers <= 0 {
		return 0, 0, 0
	}
	removed := 0
	for _, keys := range deletes {
		if slices.ContainsFunc(keys, func(g string) bool { return decided[g] }) {
			removed++
		}
	}
	t := float64(transfers)
	return float64(n) / t, float64(nXA) / t, float64(removed) / t
}

// hexLiteral is the first X'…' literal of an upper-cased statement: the
// gtrid of a decision row.
func hexLiteral(s string) string {
	_, rest, _ := strings.Cut(s, "X'")
	lit, _, _ := strings.Cut(rest, "'")
	return lit
}

// hexLiterals are all the X'…' literals of an upper-cased statement.
func hexLiterals(s string) []string {
	var out []string
	for {
		_, rest, ok := strings.Cut(s, "X'")
		if !ok {
			return out
		}
		lit, after, _ := strings.Cut(rest, "'")
		out = append(out, lit)
		s = after
	}
}

// opensTransaction reports a command text with a statement that opens a
// transaction.
func opensTransaction(text string) bool {
	for _, s := range strings.Split(text, ";") {
		s = strings.ToUpper(strings.TrimSpace(s))
		if s == "BEGIN" || strings.HasPrefix(s, "BEGIN ") || strings.HasPrefix(s, "START TRANSACTION") || strings.HasPrefix(s, "XA START") || strings.HasPrefix(s, "XA BEGIN") {
			return true
		}
	}
	return false
}
