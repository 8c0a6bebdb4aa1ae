package backend

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Cluster is the set of servers one logical database lives on: the
// configured primary and its replicas. Which server takes writes is decided
// by their read_only state, as the health checks see it, so writes follow
// an external failover.
type Cluster struct {
	Name    string
	Primary *Pool // the configured primary's pool

	// servers are the servers statements choose from, the configured
	// primary first. A reload publishes a new slice (copy-on-write), so
	// the per-statement path reads it with one atomic load and no lock.
	servers atomic.Pointer[[]*Server]

	log *slog.Logger

	mu       sync.Mutex // serialises topology updates and server changes
	writer   *Server    // guarded by mu; readers use wp
	wp       atomic.Pointer[Server]
	health   HealthConfig              // guarded by mu
	checkers map[*Server]chan struct{} // guarded by mu: closing one stops that server's checker

	wg sync.WaitGroup
}

// NewCluster builds a cluster over servers (the configured primary first)
// and starts one health checker per server.
func NewCluster(name string, servers []*Server, hc HealthConfig, log *slog.Logger) *Cluster {
	c := &Cluster{Name: name, Primary: servers[0].Pool, health: hc.withDefaults(),
		log: log.With("cluster", name), checkers: map[*Server]chan struct{}{}}
	list := slices.Clone(servers)
	c.servers.Store(&list)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setWriter(servers[0])
	for _, s := range servers {
		s.setOnTrip(c.UpdateTopology)
		c.startCheckerLocked(s)
	}
	return c
}

// Servers returns the cluster's servers, the configured primary first. The
// slice is shared: callers must not modify it.
func (c *Cluster) Servers() []*Server { return *c.servers.Load() }

// startCheckerLocked starts s's health checker (c.mu held).
func (c *Cluster) startCheckerLocked(s *Server) {
	stop := make(chan struct{})
	c.checkers[s] = stop
	k := &checker{s: s, cfg: c.health, log: c.log.With("server", s.Addr(), "backend", s.Pool.Name)}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		k.run(stop, c.checked)
	}()
}

// SetServers replaces the cluster's servers after a reload added or
// removed replicas; servers[0] must stay the configured primary. Added
// servers get a health checker. Removed ones are drained at once (no new
// statements), their checker stops and their pool closes, which closes
// each connection still in use as it comes back.
func (c *Cluster) SetServers(servers []*Server) {
	list := slices.Clone(servers)
	c.mu.Lock()
	var removed []*Server
	for _, s := range c.Servers() {
		if !slices.Contains(list, s) {
			s.SetOffline(true)
			removed = append(removed, s)
		}
	}
	for _, s := range list {
		if _, running := c.checkers[s]; !running {
			s.setOnTrip(c.UpdateTopology)
			c.startCheckerLocked(s)
		}
	}
	c.servers.Store(&list)
	for _, s := range removed {
		if stop, ok := c.checkers[s]; ok {
			close(stop)
			delete(c.checkers, s)
		}
	}
	c.updateTopologyLocked()
	c.mu.Unlock()
	for _, s := range removed {
		s.Pool.Close()
	}
}

// SetHealth retunes the health checks and every server's circuit breaker.
// Changed check timings restart the checkers (each dials a new connection).
func (c *Cluster) SetHealth(hc HealthConfig, bc BreakerConfig) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.Servers() {
		s.SetBreakerConfig(bc)
	}
	if hc = hc.withDefaults(); hc == c.health {
		return
	}
	c.health = hc
	for s, stop := range c.checkers {
		close(stop)
		c.startCheckerLocked(s)
	}
}

// Writer returns the server that takes writes now, or nil when no server is
// known to be writable.
func (c *Cluster) Writer() *Server { return c.wp.Load() }

// Reader picks a replica for a read: among those that are available,
// replicating and at most maxLag behind, by weight, and of two picks the
// less busy for its weight (the "power of two choices", which balances by
// load without scanning every server). It returns nil when no replica
// qualifies (the caller reads from the writer). avoid, if not nil, is left
// out (it just failed this statement).
func (c *Cluster) Reader(maxLag time.Duration, avoid *Server) *Server {
	servers := c.Servers()
	if len(servers) < 2 {
		return nil
	}
	var buf [16]*Server
	cands, total := readCandidates(buf[:0], servers, c.Writer(), maxLag, avoid)
	switch len(cands) {
	case 0:
		return nil
	case 1:
		return cands[0]
	}
	a, b := pickWeighted(cands, total), pickWeighted(cands, total)
	// Less busy per weight (outstanding/weight, compared without division);
	// on a tie, such as two idle replicas, the first draw, so that at low
	// load reads split by weight.
	if b.Outstanding()*int64(a.Weight()) < a.Outstanding()*int64(b.Weight()) {
		return b
	}
	return a
}

// readCandidates appends the servers other than the writer w that may take
// a read and returns their total weight.
func readCandidates(out, servers []*Server, w *Server, maxLag time.Duration, avoid *Server) ([]*Server, int) {
	total := 0
	for _, s := range servers {
		if s == w || s == avoid || s.Weight() <= 0 || !s.Available() {
			continue
		}
		h := s.Health()
		if !h.Up || !h.Replica || !h.Replicating || h.Lag < 0 || h.Lag > maxLag {
			continue
		}
		out = append(out, s)
		total += s.Weight()
	}
	return out, total
}

// pickWeighted draws a candidate by weight. A weight changed by a reload
// since readCandidates summed them only skews this one draw.
func pickWeighted(cands []*Server, total int) *Server {
	r := rand.IntN(total)
	for _, s := range cands {
		w := s.Weight()
		if r < w {
			return s
		}
		r -= w
	}
	return cands[len(cands)-1]
}

// checked is called after every health check: it moves writes when the
// writer turned read-only (or went away) and another server is writable.
func (c *Cluster) checked(s *Server, h *Health) {
	c.UpdateTopology()
}

// UpdateTopology re-elects the writer from what is known now: the current
// writer while it stays writable, else the first writable server (the
// configured primary first). A server is writable when it is available and
// its last successful check found read_only OFF; before the first check, or
// when the backend account may not read read_only, only the configured
// primary is assumed writable.
func (c *Cluster) UpdateTopology() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updateTopologyLocked()
}

func (c *Cluster) updateTopologyLocked() {
	cur := c.writer
	if cur != nil && c.writable(cur) {
		return
	}
	var next *Server
	for _, s := range c.Servers() {
		if c.writable(s) {
			next = s
			break
		}
	}
	if next == cur {
		return
	}
	c.setWriter(next)
	if next == nil {
		c.log.Warn("writes move to another server", "from", cur.Addr(), "to", "none",
			"why", c.describeUnwritableLocked())
		return
	}
	from := "none"
	if cur != nil {
		from = cur.Addr()
	}
	c.log.Warn("writes move to another server", "from", from, "to", next.Addr())
}

// unwritable is why a server may not take writes.
type unwritable int

const (
	isWritable unwritable = iota
	outOffline
	outBreakerOpen
	outUnchecked
	outReadOnly
	outDown
	outReadOnlyUnknown
)

func (c *Cluster) writable(s *Server) bool { return c.whyUnwritable(s, s.Health()) == isWritable }

// whyUnwritable decides whether s may take writes (c.mu held).
func (c *Cluster) whyUnwritable(s *Server, h *Health) unwritable {
	switch {
	case s.Offline():
		return outOffline
	case s.BreakerOpen():
		return outBreakerOpen
	case !h.Checked:
		if s == c.Servers()[0] {
			return isWritable
		}
		return outUnchecked
	case h.ReadOnly:
		return outReadOnly
	case !h.Up && s != c.writer:
		// One failed check leaves the writer in place; the breaker
		// takes it out after enough of them.
		return outDown
	case h.ReadOnlyUnknown && s != c.Servers()[0]:
		return outReadOnlyUnknown
	}
	return isWritable
}

// DescribeUnwritable tells, for an error message or a log, why each server
// may not take writes now, e.g. "10.0.0.1:3306 read-only; 10.0.0.2:3306
// down: connect ...". For error paths: it takes the topology lock.
func (c *Cluster) DescribeUnwritable() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.describeUnwritableLocked()
}

func (c *Cluster) describeUnwritableLocked() string {
	var b strings.Builder
	for i, s := range c.Servers() {
		if i > 0 {
			b.WriteString("; ")
		}
		h := s.Health()
		b.WriteString(s.Addr())
		b.WriteByte(' ')
		switch c.whyUnwritable(s, h) {
		case outOffline:
			b.WriteString("offline (drained)")
		case outBreakerOpen:
			fmt.Fprintf(&b, "taken out (circuit breaker open until %s)", s.breaker.until().Format("15:04:05.000"))
			if h.Err != nil {
				fmt.Fprintf(&b, ", last check failed: %v", h.Err)
			} else if err := s.lastConnectErr(); err != nil {
				fmt.Fprintf(&b, ", last connect failed: %v", err)
			}
		case outUnchecked:
			b.WriteString("not checked yet")
		case outReadOnly:
			b.WriteString("read-only")
		case outDown:
			fmt.Fprintf(&b, "down: %v", h.Err)
		case outReadOnlyUnknown:
			b.WriteString("read_only unknown (the backend account may not read @@global.read_only)")
		default:
			b.WriteString("writable")
		}
	}
	return b.String()
}

func (c *Cluster) setWriter(s *Server) {
	c.writer = s
	c.wp.Store(s)
}

// Close stops the health checks and closes the pools.
func (c *Cluster) Close() {
	c.mu.Lock()
	for s, stop := range c.checkers {
		close(stop)
		delete(c.checkers, s)
	}
	c.mu.Unlock()
	c.wg.Wait()
	for _, s := range c.Servers() {
		s.Pool.Close()
	}
}
