package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/go-sql-driver/mysql"

	"github.com/shardgate/shardgate/internal/testenv"
)

// RateConfig configures RunRate.
type RateConfig struct {
	Target Target
	// SLOP99: a step passes while its p99 stays at or below this. The
	// default is the latency SLO of deploy/prometheus/rules.yml (99% of
	// statements under 10 ms).
	SLOP99 time.Duration
	Start  int // first rate, queries per second
	Step   int // rate increment per step
	Max    int // highest rate tried
	// Rates, when set, are the rates to step through instead of
	// Start/Step/Max, ascending (a sweep that is coarse where it is
	// cheap and fine near the expected limit).
	Rates    []int
	Duration time.Duration // per step
	Conns    int           // client connections (the concurrency cap of the generator)
	// Query is the workload; only "point" (SELECT c FROM sbtest1 WHERE id=?
	// with uniformly random ids) exists.
	Query string
	// PSMode "auto" uses a server-side prepared statement per connection
	// (binary protocol); "disable" sends text queries.
	PSMode    string
	TableSize int // ids are drawn from 1..TableSize
	// MinAchieved is the fraction of the target rate a step must achieve
	// (default 0.95).
	MinAchieved float64
	// Retries is how often a failing step is repeated before the search
	// stops: on a shared machine a single noisy interval should not end it.
	// A rate passes when any attempt passes.
	Retries int
	Log     io.Writer
}

// DefaultRateConfig is what `sgbench rate` uses without flags.
func DefaultRateConfig() RateConfig {
	return RateConfig{
		Target:      Shardgate,
		SLOP99:      10 * time.Millisecond,
		Start:       1000,
		Step:        1000,
		Max:         50000,
		Duration:    10 * time.Second,
		Conns:       64,
		Query:       "point",
		PSMode:      "auto",
		TableSize:   100000,
		MinAchieved: 0.95,
		Retries:     1,
	}
}

// Validate reports every problem of the configuration.
func (c RateConfig) Validate() error {
	var errs []error
	if _, err := ParseTarget(string(c.Target)); err != nil {
		errs = append(errs, fmt.Errorf("target: %w", err))
	}
	if c.SLOP99 <= 0 {
		errs = append(errs, fmt.Errorf("slo-p99: %v, must be > 0", c.SLOP99))
	}
	if len(c.Rates) > 0 {
		for i, r := range c.Rates {
			if r < 1 || (i > 0 && r <= c.Rates[i-1]) {
				errs = append(errs, fmt.Errorf("rates: %v, need positive rates in ascending order", c.Rates))
				break
			}
		}
	} else if c.Start < 1 || c.Step < 1 || c.Max < c.Start {
		errs = append(errs, fmt.Errorf("start/step/max: %d/%d/%d, need start >= 1, step >= 1 and max >= start", c.Start, c.Step, c.Max))
	}
	if c.Duration < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("duration: %v, need at least 100ms", c.Duration))
	}
	if c.Conns < 1 || c.Conns > 4000 {
		errs = append(errs, fmt.Errorf("conns: %d is not in 1..4000", c.Conns))
	}
	if c.Query != "point" {
		errs = append(errs, fmt.Errorf("query: %q, the only workload is \"point\"", c.Query))
	}
	if c.PSMode != "auto" && c.PSMode != "disable" {
		errs = append(errs, fmt.Errorf("ps-mode: %q, want auto or disable", c.PSMode))
	}
	if c.TableSize < 1 {
		errs = append(errs, fmt.Errorf("table-size: %d, need at least 1", c.TableSize))
	}
	if c.Retries < 0 || c.Retries > 10 {
		errs = append(errs, fmt.Errorf("retries: %d is not in 0..10", c.Retries))
	}
	if c.MinAchieved < 0 || c.MinAchieved > 1 {
		errs = append(errs, fmt.Errorf("min-achieved: %v is not in 0..1", c.MinAchieved))
	}
	return errors.Join(errs...)
}

// steps returns the rates to try, in order.
func (c RateConfig) steps() []int {
	if len(c.Rates) > 0 {
		return c.Rates
	}
	var rates []int
	for rate := c.Start; rate <= c.Max; rate += c.Step {
		rates = append(rates, rate)
	}
	return rates
}

// pointQuery is the statement of the "point" workload.
const pointQuery = "SELECT c FROM sbtest1 WHERE id=?"

// RateStep is the outcome of one constant-rate step.
type RateStep struct {
	Rate      int   // target queries per second
	Attempt   int   // 1 for the first run of a rate, 2 for its first retry...
	Planned   int64 // queries scheduled: Rate x Duration
	Completed int64
	Errors    int64
	Unsent    int64   // scheduled but not sent before the cut-off (fell behind)
	Achieved  float64 // completed queries per second
	// P50..Max are latencies from the intended start of a query whenever
	// the generator was behind (queueing counted), else from its send.
	P50, P90, P99, P999, Max time.Duration
	// ServiceP99 is the p99 from send to reply: what a closed-loop client
	// would report.
	ServiceP99 time.Duration
	// LateP99 is how late the generator's timer woke for queries that were
	// on time (a diagnostic: that delay is the generator's, not the
	// target's, and is excluded from the latency).
	LateP99 time.Duration
	// ProxyCPUPerQuery is the proxy's CPU per completed query, microseconds
	// (0 for direct).
	ProxyCPUPerQuery float64
	Pass             bool
	Reason           string // why the step failed
	FirstError       string
}

// RateResult is a finished (or interrupted) RunRate.
type RateResult struct {
	Config     RateConfig
	Steps      []RateStep
	MaxPassing int // highest passing rate; 0 when the first step failed
}

// RunRate steps the rate up (Rates, or from Start by Step to Max) until a
// step fails (p99 over the SLO, achieved rate below MinAchieved of the
// target, errors, or the generator falling behind) or the rates run out.
func RunRate(ctx context.Context, env *Env, cfg RateConfig) (*RateResult, error) {
	if cfg.MinAchieved == 0 {
		cfg.MinAchieved = 0.95
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid rate configuration:\n%w", err)
	}
	addr := env.Addr(cfg.Target)
	if addr == "" {
		return nil, fmt.Errorf("target %s was not started by StartEnv", cfg.Target)
	}
	g, err := newGenerator(ctx, addr, cfg)
	if err != nil {
		return nil, err
	}
	defer g.close()
	res := &RateResult{Config: cfg}
	for _, rate := range cfg.steps() {
		passed, err := res.runRate(ctx, env, g, rate)
		if err != nil {
			return res, err
		}
		if !passed {
			break
		}
		res.MaxPassing = rate
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("interrupted: %w", err)
	}
	return res, nil
}

// runRate runs one rate, repeating it up to cfg.Retries times while it
// fails, and reports whether an attempt passed.
func (res *RateResult) runRate(ctx context.Context, env *Env, g *generator, rate int) (bool, error) {
	cfg := res.Config
	for attempt := 1; attempt <= 1+cfg.Retries; attempt++ {
		if err := ctx.Err(); err != nil {
			return false, fmt.Errorf("interrupted: %w", err)
		}
		st := g.step(ctx, rate, env.ProxyPid(cfg.Target))
		st.Attempt = attempt
		res.Steps = append(res.Steps, st)
		env.logf("rate %s %6d/s (attempt %d): achieved %8.0f/s p50 %-9v p99 %-9v service p99 %-9v %s",
			cfg.Target, rate, attempt, st.Achieved, st.P50, st.P99, st.ServiceP99, passText(st))
		if st.Pass {
			return true, nil
		}
	}
	return false, nil
}

func passText(st RateStep) string {
	if st.Pass {
		return "pass"
	}
	return "FAIL: " + st.Reason
}

// generator holds the client connections of a rate run.
type generator struct {
	cfg     RateConfig
	db      *sql.DB
	workers []*rateWorker
}

// rateWorker is one client connection with its statement.
type rateWorker struct {
	conn *sql.Conn
	stmt *sql.Stmt // nil in ps-mode disable
	rng  *rand.Rand
}

func newGenerator(ctx context.Context, addr string, cfg RateConfig) (*generator, error) {
	mc := mysql.NewConfig()
	mc.User, mc.Passwd, mc.Net, mc.Addr, mc.DBName = testenv.User, testenv.Password, "tcp", addr, Database
	mc.Timeout = 10 * time.Second
	mc.InterpolateParams = cfg.PSMode == "disable"
	connector, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, fmt.Errorf("rate generator: %w", err)
	}
	g := &generator{cfg: cfg, db: sql.OpenDB(connector)}
	g.db.SetMaxOpenConns(cfg.Conns)
	g.db.SetMaxIdleConns(cfg.Conns)
	for i := 0; i < cfg.Conns; i++ {
		w, err := g.newWorker(ctx, uint64(i))
		if err != nil {
			g.close()
			return nil, fmt.Errorf("rate generator: open connection %d of %d to %s: %w", i+1, cfg.Conns, addr, err)
		}
		g.workers = append(g.workers, w)
	}
	return g, nil
}

// newWorker opens a connection, prepares the statement and runs it once.
func (g *generator) newWorker(ctx context.Context, seed uint64) (*rateWorker, error) {
	conn, err := g.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	w := &rateWorker{conn: conn, rng: rand.New(rand.NewPCG(seed, uint64(time.Now().UnixNano())))}
	if g.cfg.PSMode == "auto" {
		if w.stmt, err = conn.PrepareContext(ctx, pointQuery); err != nil {
			conn.Close()
			return nil, fmt.Errorf("prepare %q: %w", pointQuery, err)
		}
	}
	if err := w.query(ctx, 1); err != nil && !errors.Is(err, sql.ErrNoRows) {
		w.close()
		return nil, fmt.Errorf("first %q: %w", pointQuery, err)
	}
	return w, nil
}

func (w *rateWorker) query(ctx context.Context, id int) error {
	var c string
	if w.stmt != nil {
		return w.stmt.QueryRowContext(ctx, id).Scan(&c)
	}
	return w.conn.QueryRowContext(ctx, pointQuery, id).Scan(&c)
}

func (w *rateWorker) close() {
	if w.stmt != nil {
		w.stmt.Close()
	}
	w.conn.Close()
}

func (g *generator) close() {
	for _, w := range g.workers {
		w.close()
	}
	g.db.Close()
}

// workerStats are one worker's measurements of a step.
type workerStats struct {
	lat, svc, late    *hdrhistogram.Histogram
	completed, errors int64
	firstErr          string
	lastEnd           time.Time
}

// histogram bounds: 1 µs .. 60 s, 3 significant digits.
func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, 60_000_000, 3) }

func record(h *hdrhistogram.Histogram, d time.Duration) {
	us := d.Microseconds()
	if us < 1 {
		us = 1
	}
	if us > h.HighestTrackableValue() {
		us = h.HighestTrackableValue()
	}
	_ = h.RecordValue(us)
}

// schedule is the plan of one step: query i is due at t0 + i/rate.
type schedule struct {
	t0      time.Time
	period  float64 // nanoseconds between intended starts
	planned int64
	cutoff  time.Time // nothing is sent after this: the step fell behind
	next    atomic.Int64
}

func (s *schedule) intended(i int64) time.Time {
	return s.t0.Add(time.Duration(float64(i) * s.period))
}

// step runs one rate for cfg.Duration. Workers take the next query number
// from a shared counter, sleep until its intended start if it lies ahead,
// and send it. When a worker takes a query whose start has already passed,
// every connection was busy: the query was queued and its latency counts
// from the intended start (no coordinated omission). When the worker was
// early, it measures from the send, so that the timer's own wake-up delay
// (about 1 ms for short sleeps) is not charged to the target.
func (g *generator) step(ctx context.Context, rate int, proxyPid int) RateStep {
	st := RateStep{Rate: rate, Planned: int64(math.Round(float64(rate) * g.cfg.Duration.Seconds()))}
	grace := max(time.Second, g.cfg.Duration/2)
	s := &schedule{t0: time.Now().Add(20 * time.Millisecond), period: float64(time.Second) / float64(rate), planned: st.Planned}
	s.cutoff = s.t0.Add(g.cfg.Duration + grace)
	cpu0, cpuErr0 := cpuTimeOrZero(proxyPid)

	stats := make([]*workerStats, len(g.workers))
	var wg sync.WaitGroup
	for i, w := range g.workers {
		stats[i] = &workerStats{lat: newHist(), svc: newHist(), late: newHist()}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(ctx, s, g.cfg.TableSize, stats[i])
		}()
	}
	wg.Wait()
	cpu1, cpuErr1 := cpuTimeOrZero(proxyPid)
	g.summarize(&st, s, stats)
	if err := errors.Join(cpuErr0, cpuErr1); err != nil {
		st.Pass, st.Reason = false, "measuring proxy CPU: "+err.Error()
		return st
	}
	st.ProxyCPUPerQuery = perQueryMicros(cpu1-cpu0, st.Completed)
	g.judge(&st)
	return st
}

// run is one worker's loop for a step.
func (w *rateWorker) run(ctx context.Context, s *schedule, tableSize int, ws *workerStats) {
	for ctx.Err() == nil {
		i := s.next.Add(1) - 1
		if i >= s.planned {
			return
		}
		claimed := time.Now()
		if claimed.After(s.cutoff) {
			return
		}
		due := s.intended(i)
		behind := claimed.After(due)
		if !behind {
			if !sleepUntil(ctx, due) {
				return
			}
		}
		send := time.Now()
		err := w.query(ctx, w.rng.IntN(tableSize)+1)
		end := time.Now()
		ws.lastEnd = end
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			if ctx.Err() != nil {
				return
			}
			ws.errors++
			if ws.firstErr == "" {
				ws.firstErr = err.Error()
			}
			continue
		}
		ws.completed++
		record(ws.svc, end.Sub(send))
		if behind {
			record(ws.lat, end.Sub(due))
		} else {
			record(ws.lat, end.Sub(send))
			record(ws.late, send.Sub(due))
		}
	}
}

// sleepUntil sleeps until t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// summarize merges the workers' measurements into st.
func (g *generator) summarize(st *RateStep, s *schedule, stats []*workerStats) {
	lat, svc, late := newHist(), newHist(), newHist()
	last := s.t0
	for _, ws := range stats {
		lat.Merge(ws.lat)
		svc.Merge(ws.svc)
		late.Merge(ws.late)
		st.Completed += ws.completed
		st.Errors += ws.errors
		if st.FirstError == "" {
			st.FirstError = ws.firstErr
		}
		if ws.lastEnd.After(last) {
			last = ws.lastEnd
		}
	}
	st.Unsent = max(0, st.Planned-st.Completed-st.Errors)
	elapsed := max(last.Sub(s.t0), g.cfg.Duration)
	st.Achieved = float64(st.Completed) / elapsed.Seconds()
	us := func(h *hdrhistogram.Histogram, q float64) time.Duration {
		return time.Duration(h.ValueAtQuantile(q)) * time.Microsecond
	}
	st.P50, st.P90, st.P99, st.P999 = us(lat, 50), us(lat, 90), us(lat, 99), us(lat, 99.9)
	st.Max = time.Duration(lat.Max()) * time.Microsecond
	st.ServiceP99, st.LateP99 = us(svc, 99), us(late, 99)
}

// judge decides whether a step passed.
func (g *generator) judge(st *RateStep) {
	switch {
	case st.Errors > 0:
		st.Reason = fmt.Sprintf("%d errors (first: %s)", st.Errors, st.FirstError)
	case st.Unsent > 0:
		st.Reason = fmt.Sprintf("fell behind: %d of %d queries not sent before the cut-off", st.Unsent, st.Planned)
	case st.Achieved < g.cfg.MinAchieved*float64(st.Rate):
		st.Reason = fmt.Sprintf("achieved %.0f/s < %.0f%% of %d/s", st.Achieved, g.cfg.MinAchieved*100, st.Rate)
	case st.P99 > g.cfg.SLOP99:
		st.Reason = fmt.Sprintf("p99 %v > SLO %v", st.P99, g.cfg.SLOP99)
	default:
		st.Pass = true
	}
}

// DefaultHeadroom is the share of its measured capacity an instance is
// planned to run at: room for uneven balancing and bursts shorter than a
// scrape interval (docs/operations.md).
const DefaultHeadroom = 0.7

// CapacityPlan returns how many proxy instances serve targetQPS when one
// instance sustains maxPassing within the SLO: each runs at no more than
// headroom of that, plus one spare so that losing an instance is survived.
func CapacityPlan(targetQPS, maxPassing int, headroom float64) (int, error) {
	if targetQPS <= 0 {
		return 0, fmt.Errorf("target QPS %d must be > 0", targetQPS)
	}
	if maxPassing <= 0 {
		return 0, errors.New("no rate passed the SLO, so there is no per-instance capacity to plan with")
	}
	if headroom <= 0 || headroom > 1 {
		return 0, fmt.Errorf("headroom %v is not in (0, 1]", headroom)
	}
	return int(math.Ceil(float64(targetQPS)/(headroom*float64(maxPassing)))) + 1, nil
}

// CapacityPlanText is the sentence `sgbench rate --target-qps N` prints.
func CapacityPlanText(targetQPS, maxPassing int, headroom float64) string {
	n, err := CapacityPlan(targetQPS, maxPassing, headroom)
	if err != nil {
		return "capacity plan: " + err.Error()
	}
	return fmt.Sprintf("for a target of %d QPS you need ceil(%d / (%g*%d)) + 1 = %d proxy instances (N+1 spare, %g%% headroom)",
		targetQPS, targetQPS, headroom, maxPassing, n, math.Round(headroom*100))
}

// Markdown renders the steps as a table with the verdict.
func (r *RateResult) Markdown() string {
	var b strings.Builder
	c := r.Config
	fmt.Fprintf(&b, "Constant-rate point selects against %s: %d connections, ps-mode %s, %v per step, SLO p99 <= %v, achieved >= %.0f%% of the target rate, a failing step retried %d time(s).\n\n",
		c.Target, c.Conns, c.PSMode, c.Duration, c.SLOP99, c.MinAchieved*100, c.Retries)
	b.WriteString("| rate/s | achieved/s | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | service p99 ms | timer late p99 ms | proxy CPU µs/q | errors | result |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, s := range r.Steps {
		cpu := "—"
		if c.Target != Direct {
			cpu = fmt.Sprintf("%.1f", s.ProxyCPUPerQuery)
		}
		rate := strconv.Itoa(s.Rate)
		if s.Attempt > 1 {
			rate += fmt.Sprintf(" (retry %d)", s.Attempt-1)
		}
		fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %d | %s |\n",
			rate, s.Achieved, ms(s.P50), ms(s.P90), ms(s.P99), ms(s.P999), ms(s.Max),
			ms(s.ServiceP99), ms(s.LateP99), cpu, s.Errors, passText(s))
	}
	if r.MaxPassing > 0 {
		fmt.Fprintf(&b, "\nHighest passing rate: **%d queries/s**.\n", r.MaxPassing)
		if rates := c.steps(); r.MaxPassing == rates[len(rates)-1] {
			b.WriteString("Every rate passed: the real limit is higher; raise --max (or extend --rates).\n")
		}
	} else {
		b.WriteString("\nNo step passed.\n")
	}
	return b.String()
}
