package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardgate/shardgate/internal/mysql"
)

// PoolConfig bounds a pool.
type PoolConfig struct {
	MaxOpen, MaxIdle, MinIdle int
	IdleTimeout, MaxLifetime  time.Duration
	WaitTimeout               time.Duration
	MaxWaiters                int
	HealthCheckInterval       time.Duration
	// ConnectTimeout bounds a dial for the pool; 0: the DialConfig's.
	ConnectTimeout time.Duration
	// EvaluatorMaxOpen bounds the pool's evaluator pool (Pool.Evaluator);
	// 0: DefaultEvaluatorMaxOpen.
	EvaluatorMaxOpen int
	// PipelineConnections is how many of the pool's connections may be
	// lanes, carrying several sessions' statements at once (lane.go); 0
	// turns pipelining off. PipelineDepth bounds the statements in flight
	// on one lane; 0: DefaultPipelineDepth.
	PipelineConnections, PipelineDepth int
}

// DefaultPipelineDepth is how many statements a lane carries at once when
// the configuration says nothing.
const DefaultPipelineDepth = 8

// DefaultEvaluatorMaxOpen is how many connections an evaluator pool may
// have open when its configuration says nothing: evaluations across
// shards that may run on one server at once.
const DefaultEvaluatorMaxOpen = 4

// withDefaults resolves the zero values NewPool and SetConfig accept.
func (cfg PoolConfig) withDefaults(dc *DialConfig) PoolConfig {
	if cfg.MaxIdle <= 0 || cfg.MaxIdle > cfg.MaxOpen {
		cfg.MaxIdle = cfg.MaxOpen
	}
	if cfg.MinIdle > cfg.MaxIdle {
		cfg.MinIdle = cfg.MaxIdle
	}
	if cfg.HealthCheckInterval <= 0 {
		cfg.HealthCheckInterval = 10 * time.Second
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = dc.ConnectTimeout
	}
	if cfg.EvaluatorMaxOpen <= 0 {
		cfg.EvaluatorMaxOpen = DefaultEvaluatorMaxOpen
	}
	if cfg.PipelineDepth <= 0 {
		cfg.PipelineDepth = DefaultPipelineDepth
	}
	cfg.PipelineConnections = max(min(cfg.PipelineConnections, cfg.MaxOpen-1), 0)
	return cfg
}

// evaluatorConfig is the limits of the evaluator pool of a pool whose
// limits are cfg: EvaluatorMaxOpen connections, kept idle for reuse but
// none opened ahead of use (most servers never evaluate), timed as cfg.
func (cfg PoolConfig) evaluatorConfig() PoolConfig {
	e := cfg
	e.MaxOpen, e.MaxIdle, e.MinIdle = cfg.EvaluatorMaxOpen, cfg.EvaluatorMaxOpen, 0
	e.PipelineConnections = 0 // the proxy's own statements, one at a time
	return e
}

// ErrWaitTimedOut marks the error of an Acquire that waited wait_timeout
// for a connection in vain (beside the *mysql.SQLError the client gets).
var ErrWaitTimedOut = errors.New("timed out waiting for a connection")

// Error codes of the proxy's own backend errors. 9001 is what ProxySQL uses
// for "no connection to the backend could be had", so tooling recognises it.
const ErrCodeBackendUnavailable uint16 = 9001

// Pool holds connections to one server. One mutex per pool (per server), held
// only to push or pop a stack: never during I/O.
type Pool struct {
	Name string // for errors and metrics, e.g. "main/primary"
	dial *DialConfig
	log  *slog.Logger

	mu      sync.Mutex
	cfg     PoolConfig // SetConfig may change it: read under mu (or a copy, config)
	idle    [2][]*Conn // by FoundRows flag; LIFO keeps hot connections hot
	open    int
	waiters []*waiter // FIFO, so also in deadline order
	// waitTimer expires waiters (see expireWaiters); armed while it may
	// still fire.
	waitTimer *time.Timer
	armed     bool
	epoch     uint64
	closed    bool
	lastErr   error

	stop chan struct{}
	done chan struct{}
	// back wakes maintain to warm up at once when the server's breaker
	// closes, rather than at its next tick.
	back chan struct{}

	Stats PoolStats
	// waitSeconds is how long acquires that queued waited (exported by
	// PoolCollector): observed off the fast path only, where the wait has
	// read the clock already.
	waitSeconds prometheus.Histogram

	// server is the Server this pool connects to, set by NewServer after
	// maintain has started (so atomic).
	server atomic.Pointer[Server]

	// evaluator is the pool's evaluator pool (Evaluator); nil in an
	// evaluator pool, which isEvaluator marks.
	evaluator   *Pool
	isEvaluator bool

	lanes laneSet // its connections that pipeline (lane.go)
}

// Server returns the server the pool connects to.
func (p *Pool) Server() *Server { return p.server.Load() }

// PoolStats are counters read by metrics.
type PoolStats struct {
	Dials, DialErrors, Timeouts, Discarded atomic.Uint64
	Waits                                  atomic.Uint64 // acquires that queued
	Pipelined                              atomic.Uint64 // answers read on lanes
}

// A waiter is one Acquire queued for a connection. Waiters are recycled and
// share one timer per pool, because with more clients than MaxOpen nearly
// every statement queues: a timer and a channel per wait cost about 2 µs of
// proxy CPU per query at 64 sysbench threads on 16 connections (perf:
// timer heap updates, allocation, the timer channel in the select).
type waiter struct {
	foundRows bool
	queued    time.Time // for the wait-time histogram
	deadline  time.Time
	ch        chan *Conn // receives a conn, nil as permission to dial, or waitExpired
}

// waitExpired is what an expired waiter receives.
var waitExpired = new(Conn)

var waiterPool = sync.Pool{New: func() any { return &waiter{ch: make(chan *Conn, 1)} }}

// NewPool creates a pool and starts its maintenance goroutine, which warms
// up MinIdle connections in the background, and its evaluator pool's.
func NewPool(name string, dc *DialConfig, cfg PoolConfig, log *slog.Logger) *Pool {
	return startPool(name, dc, cfg, log, true)
}

// startPool is NewPool; with ticking false its maintenance never ticks (it
// only warms up, at start and when the server is back): tests of what a
// tick does then run it themselves (Pool.tick) rather than race its timer.
func startPool(name string, dc *DialConfig, cfg PoolConfig, log *slog.Logger, ticking bool) *Pool {
	cfg = cfg.withDefaults(dc)
	p := startOnePool(name, dc, cfg, log, ticking, false)
	p.evaluator = startOnePool(name+"/evaluator", dc, cfg.evaluatorConfig(), log, ticking, true)
	return p
}

// startOnePool creates a pool without an evaluator pool and starts its
// maintenance.
func startOnePool(name string, dc *DialConfig, cfg PoolConfig, log *slog.Logger, ticking, isEvaluator bool) *Pool {
	p := &Pool{Name: name, dial: dc, cfg: cfg.withDefaults(dc), log: log.With("pool", name, "addr", dc.Addr), isEvaluator: isEvaluator,
		stop: make(chan struct{}), done: make(chan struct{}), back: make(chan struct{}, 1),
		waitSeconds: newWaitHistogram(name, dc.Addr)}
	p.setLaneLimits(p.cfg.PipelineConnections, p.cfg.PipelineDepth)
	go p.maintain(ticking)
	return p
}

// limitKey is the configuration key of the pool's MaxOpen, for errors.
func (p *Pool) limitKey() string {
	if p.isEvaluator {
		return "evaluator_max_open"
	}
	return "max_open"
}

// Evaluator is the pool of the connections that evaluate statements
// across shards on this pool's server (engine.Evaluate's own connection,
// which holds the temporary tables): a pool of its own, with its own
// limit (EvaluatorMaxOpen), so that an evaluation never holds a
// connection of this pool while it waits for another of it. An
// evaluation takes its evaluator connection first, then the shards'
// connections for the copies, the evaluator's server's included: with
// both from one pool, sessions holding an evaluator connection each
// could take the whole pool and wait for a copy's connection until the
// pool's wait_timeout (error 9001), a session alone when max_open is 1.
// Nil for an evaluator pool.
func (p *Pool) Evaluator() *Pool { return p.evaluator }

// Addr returns the server address.
func (p *Pool) Addr() string { return p.dial.Addr }

// Dial opens a connection to the pool's server that is not the pool's:
// for a caller that keeps connections of its own (sequences), never
// handed to clients. The caller closes it.
func (p *Pool) Dial(ctx context.Context) (*Conn, error) { return Dial(ctx, p.dial, false) }

// Acquire hands out a connection, dialing when the pool is below MaxOpen and
// waiting (bounded in time and queue length) when it is full.
func (p *Pool) Acquire(ctx context.Context, foundRows bool) (*Conn, error) {
	fr := b2i(foundRows)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, p.unavailable(errors.New("pool is closed"))
	}
	for n := len(p.idle[fr]); n > 0; n = len(p.idle[fr]) {
		c := p.idle[fr][n-1]
		p.idle[fr] = p.idle[fr][:n-1]
		c.idleIdx = -1
		if c.epoch != p.epoch {
			p.open--
			p.mu.Unlock()
			p.closeConn(c)
			p.mu.Lock()
			continue
		}
		c.uses++
		p.mu.Unlock()
		return c, nil
	}
	if p.open < p.cfg.MaxOpen {
		p.open++
		p.mu.Unlock()
		return p.dialReserved(ctx, foundRows)
	}
	if other := p.idle[1-fr]; len(other) > 0 {
		// Full, but an idle connection of the other CLIENT_FOUND_ROWS kind
		// exists: replace it.
		c := other[len(other)-1]
		p.idle[1-fr] = other[:len(other)-1]
		c.idleIdx = -1
		p.mu.Unlock()
		p.closeConn(c)
		return p.dialReserved(ctx, foundRows)
	}
	if maxWaiters := p.cfg.MaxWaiters; len(p.waiters) >= maxWaiters {
		p.mu.Unlock()
		return nil, mysql.NewError(ErrCodeBackendUnavailable, mysql.StateGeneral,
			"shardgate: too many statements waiting for a connection to backend %s (%s): max_waiters=%d",
			p.Name, p.dial.Addr, maxWaiters)
	}
	w := waiterPool.Get().(*waiter)
	now := time.Now()
	w.foundRows, w.queued, w.deadline = foundRows, now, now.Add(p.cfg.WaitTimeout)
	p.waiters = append(p.waiters, w)
	p.armWaitTimer()
	p.mu.Unlock()
	p.Stats.Waits.Add(1)
	return p.wait(ctx, w)
}

// wait waits for a connection and observes how long it took: granted,
// timed out or cancelled, the statement was held up that long.
func (p *Pool) wait(ctx context.Context, w *waiter) (*Conn, error) {
	queued := w.queued // w goes back to waiterPool in awaitTurn
	c, err := p.awaitTurn(ctx, w)
	p.waitSeconds.Observe(time.Since(queued).Seconds())
	return c, err
}

func (p *Pool) awaitTurn(ctx context.Context, w *waiter) (*Conn, error) {
	var c *Conn
	select {
	case c = <-w.ch:
	case <-ctx.Done():
		p.mu.Lock()
		removed := p.removeWaiter(w)
		p.mu.Unlock()
		if removed {
			waiterPool.Put(w)
			p.Stats.Timeouts.Add(1)
			return nil, fmt.Errorf("waiting for backend %s: %w", p.Name, ctx.Err())
		}
		c = <-w.ch // granted or expired meanwhile: take it rather than lose it
	}
	foundRows := w.foundRows
	waiterPool.Put(w) // its channel is empty again
	if c == waitExpired {
		p.Stats.Timeouts.Add(1)
		cfg := p.config()
		return nil, errors.Join(ErrWaitTimedOut, mysql.NewError(ErrCodeBackendUnavailable, mysql.StateGeneral,
			"shardgate: timed out after %s waiting for a connection to backend %s (%s); pool %s=%d",
			cfg.WaitTimeout, p.Name, p.dial.Addr, p.limitKey(), cfg.MaxOpen))
	}
	return p.granted(ctx, foundRows, c)
}

// armWaitTimer makes sure the wait timer will fire by the deadline of the
// waiter just queued. Called with mu held. An armed timer already fires by
// then: it is set for an older waiter's deadline.
func (p *Pool) armWaitTimer() {
	if p.armed {
		return
	}
	p.armed = true
	if p.waitTimer == nil {
		p.waitTimer = time.AfterFunc(p.cfg.WaitTimeout, p.expireWaiters)
		return
	}
	p.waitTimer.Reset(p.cfg.WaitTimeout)
}

// expireWaiters fails the waiters whose deadline has passed and re-arms the
// timer for the oldest one left.
func (p *Pool) expireWaiters() {
	p.mu.Lock()
	now := time.Now()
	n := 0
	for n < len(p.waiters) && !p.waiters[n].deadline.After(now) {
		n++
	}
	expired := append([]*waiter(nil), p.waiters[:n]...)
	p.waiters = slices.Delete(p.waiters, 0, n)
	if len(p.waiters) > 0 {
		p.waitTimer.Reset(p.waiters[0].deadline.Sub(now))
	} else {
		p.armed = false
	}
	p.mu.Unlock()
	for _, w := range expired {
		w.ch <- waitExpired
	}
}

func (p *Pool) granted(ctx context.Context, foundRows bool, c *Conn) (*Conn, error) {
	if c != nil {
		return c, nil
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		p.releaseSlot()
		return nil, p.unavailable(errors.New("pool is closed"))
	}
	return p.dialReserved(ctx, foundRows)
}

func (p *Pool) removeWaiter(w *waiter) bool {
	for i, x := range p.waiters {
		if x == w {
			p.waiters = slices.Delete(p.waiters, i, i+1)
			return true
		}
	}
	return false
}

// dialReserved dials for a slot already counted in open.
func (p *Pool) dialReserved(ctx context.Context, foundRows bool) (*Conn, error) {
	p.mu.Lock()
	epoch := p.epoch
	timeout := p.cfg.ConnectTimeout
	p.mu.Unlock()
	p.Stats.Dials.Add(1)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	c, err := Dial(ctx, p.dial, foundRows)
	cancel()
	if err != nil {
		p.Stats.DialErrors.Add(1)
		p.mu.Lock()
		p.lastErr = err
		p.mu.Unlock()
		p.releaseSlot()
		p.log.Warn("backend connect failed", "err", err)
		if s := p.server.Load(); s != nil && isNetError(err) {
			s.trip(time.Now())
		}
		return nil, p.unavailable(err)
	}
	c.pool = p
	c.epoch = epoch
	c.uses = 1
	return c, nil
}

func (p *Pool) unavailable(err error) error {
	return mysql.NewError(ErrCodeBackendUnavailable, mysql.StateGeneral,
		"shardgate: backend %s (%s) unavailable: %v", p.Name, p.dial.Addr, err)
}

// releaseSlot gives up an open slot: a waiter, if any, inherits it and
// dials, unless a reload lowered max_open below the open count.
func (p *Pool) releaseSlot() {
	p.mu.Lock()
	if len(p.waiters) > 0 && p.open <= p.cfg.MaxOpen {
		w := p.popWaiter()
		p.mu.Unlock()
		w.ch <- nil
		return
	}
	p.open--
	p.mu.Unlock()
}

func (p *Pool) popWaiter() *waiter {
	w := p.waiters[0]
	p.waiters = slices.Delete(p.waiters, 0, 1)
	return w
}

// Release returns a healthy, clean connection to the pool. It reads no
// clock: maintenance notes when the connection was last used (noteUses).
func (p *Pool) Release(c *Conn) {
	c.DropDeferredSync() // no command of its borrower carried it
	if c.Pending() > 0 {
		// A COM_STMT_CLOSE queued by the statement cache's eviction waits
		// for the next command; an idle connection may not get one for a
		// long time, and the server would hold the statement meanwhile.
		if err := c.Flush(); err != nil {
			p.Discard(c, true)
			return
		}
	}
	fr := b2i(c.FoundRows)
	p.mu.Lock()
	if p.closed || c.epoch != p.epoch || p.open > p.cfg.MaxOpen {
		// (open above MaxOpen: a reload lowered it; shrink as conns return)
		p.open--
		p.mu.Unlock()
		p.closeConn(c)
		return
	}
	for i, w := range p.waiters {
		if w.foundRows == c.FoundRows {
			p.waiters = slices.Delete(p.waiters, i, i+1)
			c.uses++
			p.mu.Unlock()
			w.ch <- c
			return
		}
	}
	if len(p.waiters) > 0 {
		// Only waiters of the other kind: close this one, let one dial.
		w := p.popWaiter()
		p.mu.Unlock()
		p.closeConn(c)
		w.ch <- nil
		return
	}
	if len(p.idle[0])+len(p.idle[1]) >= p.cfg.MaxIdle {
		p.open--
		p.mu.Unlock()
		p.closeConn(c)
		return
	}
	c.idleIdx = len(p.idle[fr])
	p.idle[fr] = append(p.idle[fr], c)
	p.mu.Unlock()
}

// HasIdle reports whether an Acquire would find an idle connection now.
func (p *Pool) HasIdle(foundRows bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle[b2i(foundRows)]) > 0
}

// Reclaim takes back a specific idle connection if nobody used it since the
// caller released it (uses unchanged). Sessions use it to see their previous
// statement's diagnostics (warnings, FOUND_ROWS, ROW_COUNT).
func (p *Pool) Reclaim(c *Conn, uses uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.idleIdx < 0 || c.uses != uses || c.epoch != p.epoch {
		return false
	}
	fr := b2i(c.FoundRows)
	st := p.idle[fr]
	i := c.idleIdx
	if i >= len(st) || st[i] != c {
		return false
	}
	copy(st[i:], st[i+1:])
	st[len(st)-1] = nil
	p.idle[fr] = st[:len(st)-1]
	for k := i; k < len(p.idle[fr]); k++ {
		p.idle[fr][k].idleIdx = k
	}
	c.idleIdx = -1
	c.uses++
	return true
}

// Discard closes a broken or dirty connection. A connection that failed on
// I/O also retires every idle connection dialed before it (they most likely
// died with the server), so clients do not meet them one error at a time.
func (p *Pool) Discard(c *Conn, ioFailure bool) {
	p.Stats.Discarded.Add(1)
	p.closeConn(c)
	if ioFailure {
		p.mu.Lock()
		if c.epoch == p.epoch {
			p.epoch++
		}
		p.mu.Unlock()
	}
	p.releaseSlot()
}

func (p *Pool) closeConn(c *Conn) {
	if c.Pending() > 0 {
		_ = c.Flush() // a queued COM_STMT_CLOSE, harmless either way
	}
	_ = c.Close()
}

// config returns a copy of the pool's current limits.
func (p *Pool) config() PoolConfig {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cfg
}

// MaxOpen is the pool's max_open now (a reload may change it).
func (p *Pool) MaxOpen() int { return p.config().MaxOpen }

// SetConfig applies new limits at once (a configuration reload). Idle
// connections beyond a lowered max_open or max_idle close now, connections
// in use beyond max_open as they are released; a raised max_open lets
// queued statements dial. Waiters already queued keep their deadline.
func (p *Pool) SetConfig(cfg PoolConfig) {
	cfg = cfg.withDefaults(p.dial)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.cfg = cfg
	var surplus []*Conn
	for {
		idle := len(p.idle[0]) + len(p.idle[1])
		if idle == 0 || (p.open <= cfg.MaxOpen && idle <= cfg.MaxIdle) {
			break
		}
		fr := 0
		if len(p.idle[1]) > 0 {
			fr = 1
		}
		st := p.idle[fr]
		c := st[len(st)-1]
		st[len(st)-1] = nil
		p.idle[fr] = st[:len(st)-1]
		c.idleIdx = -1
		p.open--
		surplus = append(surplus, c)
	}
	var grants []*waiter
	for p.open < cfg.MaxOpen && len(p.waiters) > 0 {
		grants = append(grants, p.popWaiter())
		p.open++
	}
	p.mu.Unlock()
	for _, c := range surplus {
		p.closeConn(c)
	}
	for _, w := range grants {
		w.ch <- nil // permission to dial: the slot is counted
	}
	p.setLaneLimits(cfg.PipelineConnections, cfg.PipelineDepth)
	if p.evaluator != nil {
		p.evaluator.SetConfig(cfg.evaluatorConfig())
	}
}

// Open reports the number of open connections and idle ones.
func (p *Pool) Open() (open, idle, waiting int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.open, len(p.idle[0]) + len(p.idle[1]), len(p.waiters)
}

// Close closes idle connections and stops maintenance; in-use connections are
// closed when released.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	p.setLaneLimits(0, 0) // their connections come back (and are closed) as their answers are read
	p.mu.Lock()
	queued := p.waiters
	p.waiters = nil
	if p.waitTimer != nil {
		p.waitTimer.Stop()
	}
	var idle []*Conn
	for fr := range p.idle {
		idle = append(idle, p.idle[fr]...)
		p.idle[fr] = nil
	}
	p.open -= len(idle)
	p.mu.Unlock()
	close(p.stop)
	<-p.done
	for _, c := range idle {
		_ = c.Close()
	}
	// Waiters hold no slot yet: each gets a "dial" grant, sees the pool
	// closed, and fails at once instead of waiting out its timeout.
	p.mu.Lock()
	p.open += len(queued)
	p.mu.Unlock()
	for _, w := range queued {
		w.ch <- nil
	}
	if p.evaluator != nil {
		p.evaluator.Close()
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// KillQuery interrupts the statement running on the server thread id, over
// a connection of its own (never one a client could be waiting for).
func (p *Pool) KillQuery(ctx context.Context, threadID uint32) error {
	c, err := Dial(ctx, p.dial, false)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Exec(fmt.Sprintf("KILL QUERY %d", threadID))
}

// Query runs a statement on a connection of its own and returns its rows as
// strings (NULL as ""). For the proxy's start-up and admin look-ups only.
func (p *Pool) Query(ctx context.Context, sql string) ([][]string, error) {
	c, err := Dial(ctx, p.dial, false)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.QueryRows(sql)
}

// QueryVersion is Query that also returns the server's version string.
func (p *Pool) QueryVersion(ctx context.Context, sql string) ([][]string, string, error) {
	c, err := Dial(ctx, p.dial, false)
	if err != nil {
		return nil, "", err
	}
	defer c.Close()
	rows, err := c.QueryRows(sql)
	return rows, c.ServerVersion, err
}

// isNetError reports a failure to reach the server (refused, timed out,
// reset), as opposed to a server that answered with an error.
func isNetError(err error) bool {
	var ne net.Error
	var se *mysql.SQLError
	return errors.As(err, &ne) && !errors.As(err, &se)
}
