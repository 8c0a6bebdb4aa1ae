package backend

import (
	"sync"
	"sync/atomic"
	"time"
)

// Health is what the last health check of a server found.
type Health struct {
	Checked     bool          // at least one check finished
	Up          bool          // the last check succeeded
	ReadOnly    bool          // @@read_only is ON
	Replica     bool          // replication is configured (SHOW SLAVE STATUS has a row)
	Replicating bool          // both replication threads run
	Lag         time.Duration // Seconds_Behind_Master; -1 when unknown (NULL)
	GTIDPos     string        // @@gtid_current_pos (MariaDB): what the server has applied
	At          time.Time     // when the check finished
	Err         error         // why the last check failed

	// The backend account was refused reading these: ReadOnly and
	// Replica, Replicating, Lag are then unknown rather than false.
	ReadOnlyUnknown    bool
	ReplicationUnknown bool
}

// Server is one MySQL server of a cluster: its connection pool, what the
// health checks know about it, its circuit breaker, and how busy it is.
// Everything read per statement is an atomic.
type Server struct {
	Pool *Pool

	weight      atomic.Int32 // share of reads among replicas (0: no reads); a reload may change it
	health      atomic.Pointer[Health]
	offline     atomic.Bool  // drained: no new statements
	outstanding atomic.Int64 // statements running on it now
	breaker     breaker
	// onTrip lets the cluster re-elect its writer. Atomic: the pool's
	// goroutine may trip the server while the cluster is being built.
	onTrip atomic.Pointer[func()]
}

// NewServer wraps a pool.
func NewServer(p *Pool, weight int, bc BreakerConfig) *Server {
	s := &Server{Pool: p}
	s.weight.Store(int32(weight))
	s.SetBreakerConfig(bc)
	s.health.Store(&Health{Lag: -1})
	p.server.Store(s) // last: the pool's goroutine uses s from here on
	if p.evaluator != nil {
		p.evaluator.server.Store(s) // (its failed dials trip s's breaker too)
	}
	return s
}

// Addr is the server's address.
func (s *Server) Addr() string { return s.Pool.Addr() }

// Weight is the server's share of reads among replicas (0: no reads).
func (s *Server) Weight() int { return int(s.weight.Load()) }

// SetWeight changes the server's share of reads; the next read sees it.
func (s *Server) SetWeight(w int) { s.weight.Store(int32(w)) }

// SetBreakerConfig retunes the circuit breaker; an open breaker keeps its
// current period, the next one uses the new settings.
func (s *Server) SetBreakerConfig(bc BreakerConfig) {
	c := bc.withDefaults()
	s.breaker.cfg.Store(&c)
}

// Health returns the last health check's findings.
func (s *Server) Health() *Health { return s.health.Load() }

// SetOffline drains (true) or restores the server: a drained server gets no
// new statements; running ones finish.
func (s *Server) SetOffline(v bool) { s.offline.Store(v) }

// Offline reports whether the server is drained.
func (s *Server) Offline() bool { return s.offline.Load() }

// Available reports whether new statements may go to the server: not
// drained and its breaker closed. (One failed check alone does not take a
// server out; Failures of them in a row do.)
func (s *Server) Available() bool {
	return !s.offline.Load() && !s.breaker.isOpen()
}

// Begin counts a statement starting on the server; End when it finished.
func (s *Server) Begin() { s.outstanding.Add(1) }

// End counts a statement that finished.
func (s *Server) End() { s.outstanding.Add(-1) }

// Outstanding is how many statements run on the server now.
func (s *Server) Outstanding() int64 { return s.outstanding.Load() }

// StatementFailed counts an I/O failure of a statement on the server (not a
// SQL error); enough in a row open the breaker.
func (s *Server) StatementFailed(now time.Time) bool {
	opened := s.breaker.failure(now)
	if opened {
		s.tripped()
	}
	return opened
}

// trip opens the breaker at once: a failed connect is decisive, and waiting
// for more would make more statements wait for the connect timeout.
func (s *Server) trip(now time.Time) {
	if s.breaker.trip(now) {
		s.tripped()
	}
}

// lastConnectErr is the pool's last failed connect, if any: why a connect
// took the server out before any health check failed.
func (s *Server) lastConnectErr() error {
	s.Pool.mu.Lock()
	defer s.Pool.mu.Unlock()
	return s.Pool.lastErr
}

// setOnTrip sets what runs when the breaker opens. Atomic: the pool may
// already be dialing (and failing) when the server joins a cluster.
func (s *Server) setOnTrip(f func()) { s.onTrip.Store(&f) }

func (s *Server) tripped() {
	if f := s.onTrip.Load(); f != nil {
		(*f)()
	}
}

// StatementOK resets the failure count after a statement worked.
func (s *Server) StatementOK() { s.breaker.success() }

// BreakerOpen reports whether the breaker keeps statements away.
func (s *Server) BreakerOpen() bool { return s.breaker.isOpen() }

// MarkReadOnly records that the server refused a write as read-only, so no
// further write goes there before the next check says otherwise.
func (s *Server) MarkReadOnly() {
	h := *s.health.Load()
	h.ReadOnly = true
	s.health.Store(&h)
}

// until is when an open breaker lets the checker probe again.
func (b *breaker) until() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.openUntil
}

// BreakerConfig tunes a server's circuit breaker.
type BreakerConfig struct {
	// Failures is how many failed checks or statements in a row take the
	// server out.
	Failures int
	// Backoff is the first period a server stays out before it may be
	// probed back in; it doubles after every failed probe up to MaxBackoff.
	Backoff, MaxBackoff time.Duration
}

func (c BreakerConfig) withDefaults() BreakerConfig {
	if c.Failures <= 0 {
		c.Failures = 3
	}
	if c.Backoff <= 0 {
		c.Backoff = time.Second
	}
	if c.MaxBackoff < c.Backoff {
		c.MaxBackoff = 30 * c.Backoff
	}
	return c
}

// breaker is a circuit breaker: closed (statements flow), open after
// Failures consecutive failures (statements stay away; only the health
// checker probes, no sooner than the backoff period), closed again by a
// successful probe. The per-statement path reads one atomic.
type breaker struct {
	cfg      atomic.Pointer[BreakerConfig] // swapped whole by a reload
	open     atomic.Bool
	failures atomic.Int32

	mu        sync.Mutex
	backoff   time.Duration // current period
	openUntil time.Time     // no probe before this
}

func (b *breaker) isOpen() bool { return b.open.Load() }

// failure counts a failure; it reports true when it opened the breaker.
func (b *breaker) failure(now time.Time) bool {
	n := b.failures.Add(1)
	if b.open.Load() || int(n) < b.cfg.Load().Failures {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open.Load() {
		return false
	}
	b.openLocked(now)
	return true
}

// openLocked opens the breaker for its first backoff period (b.mu held).
func (b *breaker) openLocked(now time.Time) {
	b.backoff = b.cfg.Load().Backoff
	b.openUntil = now.Add(b.backoff)
	b.open.Store(true)
}

// trip opens the breaker now; true when it was closed.
func (b *breaker) trip(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open.Load() {
		return false
	}
	b.failures.Store(int32(b.cfg.Load().Failures))
	b.openLocked(now)
	return true
}

// success resets the count; it does not close an open breaker (only a
// probe does).
func (b *breaker) success() {
	if b.failures.Load() != 0 {
		b.failures.Store(0)
	}
}

// probeDue reports whether an open breaker's period has passed.
func (b *breaker) probeDue(now time.Time) bool {
	if !b.open.Load() {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return !now.Before(b.openUntil)
}

// probed records a probe of an open breaker: success closes it, failure
// doubles the period.
func (b *breaker) probed(now time.Time, ok bool) (closed bool) {
	if ok {
		b.failures.Store(0)
		if b.open.Load() {
			b.open.Store(false)
			return true
		}
		return false
	}
	b.failures.Add(1)
	if !b.open.Load() {
		if int(b.failures.Load()) >= b.cfg.Load().Failures {
			b.mu.Lock()
			b.openLocked(now)
			b.mu.Unlock()
		}
		return false
	}
	b.mu.Lock()
	b.backoff *= 2
	if limit := b.cfg.Load().MaxBackoff; b.backoff > limit {
		b.backoff = limit
	}
	b.openUntil = now.Add(b.backoff)
	b.mu.Unlock()
	return false
}
