package frontend

import (
	"container/list"
	"log/slog"
	"net/netip"
	"sync"
	"time"
)

// AuthDelayConfig sets when logins from a client address are delayed, as
// MySQL's connection_control plugin does: after Threshold consecutive
// failures, the answer to each further attempt (a success too) waits
// MinDelay, then one MinDelay more per further failure, up to MaxDelay. A
// success resets the count; so does MaxDelay without a failure. Threshold 0
// turns the delay off.
type AuthDelayConfig struct {
	Threshold          int
	MinDelay, MaxDelay time.Duration
}

// delayAfter is the delay before answering an attempt that follows
// failures consecutive failures.
func (c AuthDelayConfig) delayAfter(failures int) time.Duration {
	if c.Threshold <= 0 || c.MinDelay <= 0 || failures < c.Threshold {
		return 0
	}
	steps := failures - c.Threshold + 1
	if time.Duration(steps) > c.MaxDelay/c.MinDelay {
		return c.MaxDelay
	}
	return time.Duration(steps) * c.MinDelay
}

// Limits of the guard's table and log output. An attacker rotating source
// addresses must not grow the table without bound, nor the log: past
// maxAuthAddresses the address that failed longest ago is forgotten, and
// per interval at most maxAuthLogLines addresses get a line of their own.
const (
	maxAuthAddresses = 100_000
	authLogInterval  = 10 * time.Second
	maxAuthLogLines  = 100
	maxLoggedUsers   = 5
	maxLoggedUserLen = 64
)

// AuthGuard counts failed logins per client address (IPv6 by /64, which
// one host usually holds whole). It tells sessions how long to wait before
// answering a login (AuthDelayConfig) and logs failures as one line per
// address per interval instead of one per attempt: the first failure at
// once, then a count with the user names tried. One AuthGuard serves every
// listener. It keeps no goroutine: a timer runs while it tracks addresses.
type AuthGuard struct {
	log *slog.Logger
	m   *Metrics

	mu      sync.Mutex
	cfg     AuthDelayConfig
	addrs   map[string]*list.Element // of lru, values *authAddr
	lru     list.List                // most recent failure first
	delayed int                      // addresses whose next login waits
	logging map[*authAddr]struct{}   // addresses with a log interval open
	lines   int                      // log lines of addresses this interval
	evicted int                      // addresses forgotten this interval (table full)
	timer   *time.Timer
	closed  bool
}

// authAddr is what the guard knows of one client address.
type authAddr struct {
	key      string
	failures int       // consecutive
	last     time.Time // of the last failure
	// Failures since the address's last log line, and the user names
	// tried (at most maxLoggedUsers; moreUsers: others too).
	pending   int
	users     []string
	moreUsers bool
}

// NewAuthGuard returns a guard applying cfg, logging to log and counting in
// m.
func NewAuthGuard(cfg AuthDelayConfig, log *slog.Logger, m *Metrics) *AuthGuard {
	if log == nil {
		log = slog.Default()
	}
	if m == nil {
		m = NewMetrics(nil)
	}
	return &AuthGuard{log: log, m: m, cfg: cfg, addrs: map[string]*list.Element{}, logging: map[*authAddr]struct{}{}}
}

// SetConfig applies a new delay configuration (a reload) to the logins
// that follow.
func (g *AuthGuard) SetConfig(cfg AuthDelayConfig) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cfg = cfg
	g.delayed = 0
	for _, e := range g.addrs {
		if g.isDelayed(e.Value.(*authAddr)) {
			g.delayed++
		}
	}
	g.m.AuthDelayedAddrs.Set(float64(g.delayed))
}

// Close stops the guard's timer.
func (g *AuthGuard) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	if g.timer != nil {
		g.timer.Stop()
	}
}

// addrKey is the key of a client's host (an IP address, as splitHost
// returns it): IPv6 addresses by /64, since one client usually has all of
// a /64 to rotate through.
func addrKey(host string) string {
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return ip.String()
	}
	p, _ := ip.WithZone("").Prefix(64)
	return p.String()
}

// Delay is how long to wait before answering a login from host now.
func (g *AuthGuard) Delay(host string) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.lookup(addrKey(host), time.Now())
	if a == nil {
		return 0
	}
	return g.cfg.delayAfter(a.failures)
}

// Failed records a failed login from host as user (why says why, for the
// log) and returns how long to wait before answering it: the delay the
// failures before it earned. Recording before the wait makes concurrent
// attempts from one address see each other.
func (g *AuthGuard) Failed(host, user, why string) time.Duration {
	now := time.Now()
	key := addrKey(host)
	g.mu.Lock()
	a := g.lookup(key, now)
	if a == nil {
		a = g.add(key)
	} else {
		g.lru.MoveToFront(g.addrs[key])
	}
	d := g.cfg.delayAfter(a.failures)
	wasDelayed := g.isDelayed(a)
	a.failures++
	a.last = now
	if !wasDelayed && g.isDelayed(a) {
		g.delayed++
		g.m.AuthDelayedAddrs.Set(float64(g.delayed))
	}
	logNow := false
	if _, open := g.logging[a]; !open && g.lines < maxAuthLogLines {
		// The first failure of an interval is logged at once.
		g.logging[a] = struct{}{}
		g.lines++
		logNow = true
	} else {
		g.logging[a] = struct{}{}
		a.note(user)
	}
	g.schedule()
	failures := a.failures
	g.mu.Unlock()
	if logNow {
		g.log.Warn("client authentication failed", "client", host, "user", truncUser(user), "reason", why,
			"consecutive_failures", failures, "delay", d,
			"hint", "further failures from this address are logged as one line per "+authLogInterval.String())
	}
	return d
}

// Succeeded resets the failure count of host after a successful login.
func (g *AuthGuard) Succeeded(host string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.lookup(addrKey(host), time.Now())
	if a == nil || a.failures == 0 {
		return
	}
	if g.isDelayed(a) {
		g.delayed--
		g.m.AuthDelayedAddrs.Set(float64(g.delayed))
	}
	a.failures = 0
}

// note adds a failure to the address's next log line.
func (a *authAddr) note(user string) {
	a.pending++
	user = truncUser(user)
	for _, u := range a.users {
		if u == user {
			return
		}
	}
	if len(a.users) < maxLoggedUsers {
		a.users = append(a.users, user)
	} else {
		a.moreUsers = true
	}
}

// truncUser bounds a user name kept for the log: the client chose it.
func truncUser(user string) string {
	if len(user) > maxLoggedUserLen {
		return user[:maxLoggedUserLen] + "..."
	}
	return user
}

func (g *AuthGuard) isDelayed(a *authAddr) bool {
	return g.cfg.delayAfter(a.failures) > 0
}

// ttl is how long an address is remembered after its last failure: the
// failure count lapses after max_delay, and a log interval must end before
// its address is forgotten.
func (g *AuthGuard) ttl() time.Duration {
	return max(g.cfg.MaxDelay, authLogInterval)
}

// lookup returns the address's record, nil if there is none or its
// failure count has lapsed (the record then starts over).
func (g *AuthGuard) lookup(key string, now time.Time) *authAddr {
	e := g.addrs[key]
	if e == nil {
		return nil
	}
	a := e.Value.(*authAddr)
	if a.failures > 0 && now.Sub(a.last) > g.cfg.MaxDelay {
		if g.isDelayed(a) {
			g.delayed--
			g.m.AuthDelayedAddrs.Set(float64(g.delayed))
		}
		a.failures = 0
	}
	return a
}

// add starts a record for key, forgetting the address that failed longest
// ago when the table is full.
func (g *AuthGuard) add(key string) *authAddr {
	if g.lru.Len() >= maxAuthAddresses {
		g.remove(g.lru.Back())
		g.evicted++
	}
	a := &authAddr{key: key}
	g.addrs[key] = g.lru.PushFront(a)
	return a
}

func (g *AuthGuard) remove(e *list.Element) {
	a := g.lru.Remove(e).(*authAddr)
	delete(g.addrs, a.key)
	delete(g.logging, a)
	if g.isDelayed(a) {
		g.delayed--
		g.m.AuthDelayedAddrs.Set(float64(g.delayed))
	}
}

// schedule arms the timer that ends log intervals and forgets lapsed
// addresses, if it is not armed.
func (g *AuthGuard) schedule() {
	if g.timer == nil && !g.closed {
		g.timer = time.AfterFunc(authLogInterval, g.tick)
	}
}

// tick ends a log interval: one line per address that failed again since
// its last line (the rest counted in one line when there are too many),
// and addresses idle for ttl are forgotten.
func (g *AuthGuard) tick() {
	type line struct {
		host      string
		failures  int
		users     []string
		moreUsers bool
	}
	var lines []line
	var otherAddrs, otherFailures int
	now := time.Now()
	g.mu.Lock()
	for a := range g.logging {
		if a.pending == 0 {
			delete(g.logging, a) // quiet for an interval: the next failure is logged at once
			continue
		}
		if len(lines) < maxAuthLogLines {
			lines = append(lines, line{a.key, a.pending, a.users, a.moreUsers})
		} else {
			otherAddrs++
			otherFailures += a.pending
		}
		a.pending, a.users, a.moreUsers = 0, nil, false
	}
	for e := g.lru.Back(); e != nil && now.Sub(e.Value.(*authAddr).last) > g.ttl(); e = g.lru.Back() {
		g.remove(e)
	}
	evicted := g.evicted
	g.evicted, g.lines = 0, 0
	g.timer = nil
	if g.lru.Len() > 0 {
		g.schedule()
	}
	g.mu.Unlock()
	for _, l := range lines {
		g.log.Warn("client authentication failures", "client", l.host, "failures", l.failures,
			"users", l.users, "more_users", l.moreUsers, "interval", authLogInterval)
	}
	if otherAddrs > 0 {
		g.log.Warn("client authentication failures from more addresses", "addresses", otherAddrs,
			"failures", otherFailures, "interval", authLogInterval,
			"hint", "many addresses fail to log in: look for a misconfigured client fleet or a distributed password-guessing attack")
	}
	if evicted > 0 {
		g.log.Warn("too many client addresses failing to log in; forgot the ones that failed longest ago",
			"forgotten", evicted, "limit", maxAuthAddresses,
			"hint", "their failure counts start over, so their logins are no longer delayed")
	}
}
