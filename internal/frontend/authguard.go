package frontend

import (
	"container/list"
	"hash/maphash"
	"log/slog"
	"net/netip"
	"sync"
	"time"
)

// AuthDelayConfig sets when logins are delayed, as MySQL's
// connection_control plugin does: after Threshold consecutive failures of
// one user name from one client address, the answer to each further
// attempt as that user from that address (a success too) waits MinDelay,
// then one MinDelay more per further failure, up to MaxDelay. A success
// resets the count; so does MaxDelay without a failure. Threshold 0 turns
// the delay off.
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

// Limits of the guard's tables and log output. An attacker rotating source
// addresses or user names must not grow the tables without bound, nor the
// log: past maxAuthRecords the address and user that failed longest ago
// are forgotten, and per interval at most maxAuthLogLines addresses get a
// line of their own. maxWaitingPerAddress bounds the logins of one
// address that wait for their delay at once (see AuthGuard.Wait).
const (
	maxAuthRecords       = 100_000
	authLogInterval      = 10 * time.Second
	maxAuthLogLines      = 100
	maxLoggedUsers       = 5
	maxLoggedUserLen     = 64
	maxWaitingPerAddress = 64
)

// AuthGuard counts failed logins per client address (IPv6 by /64, which
// one host usually holds whole) and user name, as MySQL's
// connection_control counts them per 'user'@'host'. It tells sessions how
// long to wait before answering a login (AuthDelayConfig): a flood of
// wrong passwords for one account delays the logins to that account from
// that address, not another user's logging in from the same address (a
// host behind the same NAT, the application whose address an attacker
// shares). It logs failures as one line per address per interval instead
// of one per attempt: the first failure at once, then a count with the
// user names tried. One AuthGuard serves every listener. It keeps no
// goroutine: a timer runs while it tracks failures.
type AuthGuard struct {
	log  *slog.Logger
	m    *Metrics
	seed maphash.Seed // of the user names' hashes (authKey)

	mu      sync.Mutex
	cfg     AuthDelayConfig
	recs    map[authKey]*list.Element // of lru, values *authRecord
	lru     list.List                 // most recent failure first
	delayed int                       // records whose next login waits
	addrs   map[string]*authAddr      // addresses with a log interval open or logins waiting
	lines   int                       // log lines of addresses this interval
	evicted int                       // records forgotten this interval (table full)
	unnoted int                       // failures of addresses beyond the table of addrs, this interval
	timer   *time.Timer
	closed  bool
}

// authKey names an address and a user name. The name is hashed: the
// client chooses it, up to a handshake packet long, and a table of them
// must not grow with their length. The seed is the guard's own, so no
// client can pick two names that share a count.
type authKey struct {
	addr string
	user uint64
}

// authRecord is the failure count of an address and user name.
type authRecord struct {
	key      authKey
	failures int       // consecutive
	last     time.Time // of the last failure
}

// authAddr is what the guard knows of one client address for its log
// and for the logins it has waiting.
type authAddr struct {
	key     string
	logging bool // a log interval is open: the next failure is counted, not logged at once
	// Failures since the address's last log line, the user names tried
	// (at most maxLoggedUsers; moreUsers: others too), and logins that
	// waited too many at once to wait (Wait).
	pending   int
	users     []string
	moreUsers bool
	dropped   int
	// waiting are the address's logins waiting for their delay now.
	waiting int
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
	return &AuthGuard{log: log, m: m, seed: maphash.MakeSeed(), cfg: cfg, recs: map[authKey]*list.Element{}, addrs: map[string]*authAddr{}}
}

// SetConfig applies a new delay configuration (a reload) to the logins
// that follow.
func (g *AuthGuard) SetConfig(cfg AuthDelayConfig) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cfg = cfg
	g.delayed = 0
	for _, e := range g.recs {
		if g.isDelayed(e.Value.(*authRecord)) {
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

// key is the record key of user at host.
func (g *AuthGuard) key(host, user string) authKey {
	return authKey{addr: addrKey(host), user: maphash.String(g.seed, user)}
}

// Delay is how long to wait before answering a login as user from host
// now.
func (g *AuthGuard) Delay(host, user string) time.Duration {
	k := g.key(host, user)
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.lookup(k, time.Now())
	if r == nil {
		return 0
	}
	return g.cfg.delayAfter(r.failures)
}

// Failed records a failed login from host as user (why says why, for the
// log) and returns how long to wait before answering it: the delay the
// failures of user at host before it earned. Recording before the wait
// makes concurrent attempts see each other.
func (g *AuthGuard) Failed(host, user, why string) time.Duration {
	now := time.Now()
	k := g.key(host, user)
	g.mu.Lock()
	r := g.lookup(k, now)
	if r == nil {
		r = g.add(k)
	} else {
		g.lru.MoveToFront(g.recs[k])
	}
	d := g.cfg.delayAfter(r.failures)
	wasDelayed := g.isDelayed(r)
	r.failures++
	r.last = now
	if !wasDelayed && g.isDelayed(r) {
		g.delayed++
		g.m.AuthDelayedAddrs.Set(float64(g.delayed))
	}
	logNow := g.noteFailure(k.addr, user)
	g.schedule()
	failures := r.failures
	g.mu.Unlock()
	if logNow {
		g.log.Warn("client authentication failed", "client", host, "user", truncUser(user), "reason", why,
			"consecutive_failures", failures, "delay", d,
			"hint", "further failures from this address are logged as one line per "+authLogInterval.String())
	}
	return d
}

// noteFailure adds a failure of user to its address's log and reports
// whether it is logged at once: the first of an interval is. g.mu is held.
func (g *AuthGuard) noteFailure(addr, user string) bool {
	a := g.address(addr)
	if a == nil {
		g.unnoted++ // summed up at the interval's end
		return false
	}
	if !a.logging && g.lines < maxAuthLogLines {
		a.logging = true
		g.lines++
		return true
	}
	a.logging = true
	a.note(user)
	return false
}

// address returns the entry of addr in the table of addresses, made if
// need be; nil when the table is full (a storm of addresses).
func (g *AuthGuard) address(addr string) *authAddr {
	if a := g.addrs[addr]; a != nil {
		return a
	}
	if len(g.addrs) >= maxAuthRecords {
		return nil
	}
	a := &authAddr{key: addr}
	g.addrs[addr] = a
	return a
}

// Succeeded resets the failure count of user at host after a successful
// login.
func (g *AuthGuard) Succeeded(host, user string) {
	k := g.key(host, user)
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.lookup(k, time.Now())
	if r == nil || r.failures == 0 {
		return
	}
	if g.isDelayed(r) {
		g.delayed--
		g.m.AuthDelayedAddrs.Set(float64(g.delayed))
	}
	r.failures = 0
}

// Wait admits a login from host to wait for its delay, and reports
// false when maxWaitingPerAddress logins of the address wait already:
// that login must end without an answer. A login waiting for its delay
// holds a session, its goroutine and its socket for up to the handshake
// timeout; an address that sends wrong passwords from thousands of
// connections at once, which all wait (the handshake timeout ends them
// unanswered once the delay outgrows it), would otherwise hold that many.
// The choice depends on nothing the password decides, so an attempt
// closed at once tells its client nothing either. Done ends a wait
// Wait admitted.
func (g *AuthGuard) Wait(host string) bool {
	addr := addrKey(host)
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.address(addr)
	if a == nil {
		return true // a storm of addresses: each waits as it would
	}
	if a.waiting >= maxWaitingPerAddress {
		a.dropped++
		g.schedule()
		return false
	}
	a.waiting++
	return true
}

// Done ends a wait of a login from host that Wait admitted.
func (g *AuthGuard) Done(host string) {
	addr := addrKey(host)
	g.mu.Lock()
	defer g.mu.Unlock()
	if a := g.addrs[addr]; a != nil && a.waiting > 0 {
		a.waiting--
	}
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

func (g *AuthGuard) isDelayed(r *authRecord) bool {
	return g.cfg.delayAfter(r.failures) > 0
}

// ttl is how long a record is kept after its last failure: the failure
// count lapses after max_delay, and a log interval must end before its
// failures are forgotten.
func (g *AuthGuard) ttl() time.Duration {
	return max(g.cfg.MaxDelay, authLogInterval)
}

// lookup returns the record of k, nil if there is none; a failure count
// that has lapsed starts over.
func (g *AuthGuard) lookup(k authKey, now time.Time) *authRecord {
	e := g.recs[k]
	if e == nil {
		return nil
	}
	r := e.Value.(*authRecord)
	if r.failures > 0 && now.Sub(r.last) > g.cfg.MaxDelay {
		if g.isDelayed(r) {
			g.delayed--
			g.m.AuthDelayedAddrs.Set(float64(g.delayed))
		}
		r.failures = 0
	}
	return r
}

// add starts a record for k, forgetting the one that failed longest ago
// when the table is full.
func (g *AuthGuard) add(k authKey) *authRecord {
	if g.lru.Len() >= maxAuthRecords {
		g.remove(g.lru.Back())
		g.evicted++
	}
	r := &authRecord{key: k}
	g.recs[k] = g.lru.PushFront(r)
	return r
}

func (g *AuthGuard) remove(e *list.Element) {
	r := g.lru.Remove(e).(*authRecord)
	delete(g.recs, r.key)
	if g.isDelayed(r) {
		g.delayed--
		g.m.AuthDelayedAddrs.Set(float64(g.delayed))
	}
}

// schedule arms the timer that ends log intervals and forgets lapsed
// records, if it is not armed.
func (g *AuthGuard) schedule() {
	if g.timer == nil && !g.closed {
		g.timer = time.AfterFunc(authLogInterval, g.tick)
	}
}

// authLine is one address's log line at the end of an interval.
type authLine struct {
	host      string
	failures  int
	users     []string
	moreUsers bool
	dropped   int
}

// tick ends a log interval: one line per address that failed again since
// its last line (the rest counted in one line when there are too many),
// and records idle for ttl are forgotten.
func (g *AuthGuard) tick() {
	now := time.Now()
	g.mu.Lock()
	lines, otherAddrs, otherFailures := g.endInterval()
	otherFailures += g.unnoted
	for e := g.lru.Back(); e != nil && now.Sub(e.Value.(*authRecord).last) > g.ttl(); e = g.lru.Back() {
		g.remove(e)
	}
	evicted := g.evicted
	g.evicted, g.lines, g.unnoted = 0, 0, 0
	g.timer = nil
	if g.lru.Len() > 0 || len(g.addrs) > 0 {
		g.schedule()
	}
	g.mu.Unlock()
	g.logInterval(lines, otherAddrs, otherFailures, evicted)
}

// endInterval takes the addresses' log lines of the interval ending and
// forgets the addresses quiet for a whole interval with no login
// waiting. g.mu is held.
func (g *AuthGuard) endInterval() (lines []authLine, otherAddrs, otherFailures int) {
	for key, a := range g.addrs {
		if a.pending == 0 && a.dropped == 0 {
			// Quiet for an interval: the next failure is logged at once.
			a.logging = false
			if a.waiting == 0 {
				delete(g.addrs, key)
			}
			continue
		}
		if len(lines) < maxAuthLogLines {
			lines = append(lines, authLine{a.key, a.pending, a.users, a.moreUsers, a.dropped})
		} else {
			otherAddrs++
			otherFailures += a.pending
		}
		a.pending, a.users, a.moreUsers, a.dropped = 0, nil, false, 0
	}
	return lines, otherAddrs, otherFailures
}

// logInterval writes the lines of an interval.
func (g *AuthGuard) logInterval(lines []authLine, otherAddrs, otherFailures, evicted int) {
	for _, l := range lines {
		attrs := []any{"client", l.host, "failures", l.failures, "users", l.users, "more_users", l.moreUsers, "interval", authLogInterval}
		if l.dropped > 0 {
			attrs = append(attrs, "closed_unanswered", l.dropped,
				"hint", "the address had too many logins waiting for their failure delay at once; the rest were closed without an answer")
		}
		g.log.Warn("client authentication failures", attrs...)
	}
	if otherAddrs > 0 || otherFailures > 0 {
		g.log.Warn("client authentication failures from more addresses", "addresses", otherAddrs,
			"failures", otherFailures, "interval", authLogInterval,
			"hint", "many addresses fail to log in: look for a misconfigured client fleet or a distributed password-guessing attack")
	}
	if evicted > 0 {
		g.log.Warn("too many client addresses and user names failing to log in; forgot the ones that failed longest ago",
			"forgotten", evicted, "limit", maxAuthRecords,
			"hint", "their failure counts start over, so their logins are no longer delayed")
	}
}
