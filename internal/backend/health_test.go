package backend

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/testenv"
)

// outage drives a checker's schedule and a server's breaker with a fake
// clock, as checker.step does, for a server that accepts no connections
// before acceptsAt and fails its full checks with loginErr (nil: passes)
// before passesAt.
type outage struct {
	acceptsAt, passesAt time.Time
	refusedErr          error // what a full check fails with before acceptsAt
	loginErr            error

	checks, connects []time.Time
	closedAt         time.Time
}

func (o *outage) run(t *testing.T, sc *schedule, b *breaker, now, end time.Time) {
	t.Helper()
	for now.Before(end) {
		what, wait := sc.next(now, b)
		switch what {
		case stepWait:
			if wait <= 0 {
				t.Fatalf("%v: wait %v", now, wait)
			}
			now = now.Add(wait)
			continue
		case stepConnect:
			o.connects = append(o.connects, now)
			sc.connectTried(now)
			if now.Before(o.acceptsAt) {
				continue
			}
		}
		o.checks = append(o.checks, now)
		var err error
		switch {
		case now.Before(o.acceptsAt):
			err = o.refusedErr
		case now.Before(o.passesAt):
			err = o.loginErr
		}
		if b.probed(now, err == nil) && o.closedAt.IsZero() {
			o.closedAt = now
		}
		sc.checked(now, err, false)
	}
}

// refusedError is a real failed connect: to a port nothing listens on.
func refusedError(t *testing.T) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = connectTCP(ctx, &DialConfig{Addr: addr})
	if err == nil || !isConnectError(err) {
		t.Fatalf("connect to a closed port: %v", err)
	}
	return err
}

// A server that accepts no connections is tried with cheap connects every
// reconnect period, so it is back in use right after it accepts again, not
// when the grown backoff ends; full checks (logins) keep the backoff.
func TestScheduleRecoversAfterLongOutage(t *testing.T) {
	cfg := HealthConfig{}.withDefaults()
	var b breaker
	b.cfg.Store(&BreakerConfig{Failures: 3, Backoff: time.Second, MaxBackoff: 30 * time.Second})
	start := time.Unix(1000, 0)
	sc := newSchedule(cfg)
	back := start.Add(95*time.Second + 10*time.Millisecond)
	o := outage{acceptsAt: back, passesAt: back, refusedErr: refusedError(t)}
	b.trip(start) // a statement's connect failed
	o.run(t, &sc, &b, start, start.Add(100*time.Second))

	if o.closedAt.IsZero() || o.closedAt.Sub(back) > cfg.Reconnect {
		t.Fatalf("server back at %v, breaker closed at %v: want within %v", back.Sub(start), o.closedAt.Sub(start), cfg.Reconnect)
	}
	// Logins while it was down: 1, 3, 7, 15, 31, 61, 91 s (the backoff,
	// capped at 30 s), then the one that put it back.
	var during int
	for _, c := range o.checks {
		if c.Before(back) {
			during++
		}
	}
	if during != 7 {
		t.Errorf("full checks during the outage: %d, want 7 (the backoff's): %v", during, o.checks)
	}
	// Connects every reconnect period from the first refused check on.
	firstRefused := start.Add(time.Second)
	if want := int(back.Sub(firstRefused)/cfg.Reconnect) - during; len(o.connects) < want {
		t.Errorf("connect attempts: %d, want about %d", len(o.connects), want)
	}
	for i := 1; i < len(o.connects); i++ {
		if d := o.connects[i].Sub(o.connects[i-1]); d > cfg.Reconnect {
			t.Fatalf("connects %v apart at %v", d, o.connects[i].Sub(start))
		}
	}
	// Back in use: one check per interval, no more connects.
	n := len(o.connects)
	o.run(t, &sc, &b, o.closedAt, o.closedAt.Add(10*time.Second))
	if len(o.connects) != n || b.isOpen() {
		t.Errorf("server in use: %d more connects, breaker open %v", len(o.connects)-n, b.isOpen())
	}
}

// A server that accepts connections but fails the login (here: shutting
// down) is not tried with connects, which would count as aborted
// connections, nor with logins more often than the backoff allows.
func TestScheduleKeepsBackoffForFailingLogins(t *testing.T) {
	cfg := HealthConfig{}.withDefaults()
	var b breaker
	b.cfg.Store(&BreakerConfig{Failures: 3, Backoff: time.Second, MaxBackoff: 30 * time.Second})
	start := time.Unix(1000, 0)
	sc := newSchedule(cfg)
	o := outage{passesAt: start.Add(time.Hour),
		loginErr: mysql.NewError(1053, "08S01", "Server shutdown in progress")}
	b.trip(start)
	o.run(t, &sc, &b, start, start.Add(100*time.Second))
	// The checker's first step after its start may connect once, as it
	// does not know yet whether the server accepts.
	if len(o.connects) > 1 {
		t.Errorf("connects to a server that accepts them: %d", len(o.connects))
	}
	if len(o.checks) > 8 {
		t.Errorf("logins in 100 s: %d, want the backoff's 1, 3, 7, 15, 31, 61, 91 s: %v", len(o.checks), o.checks)
	}
	if !b.isOpen() {
		t.Error("the breaker closed for a failing server")
	}
}

// A server put back in use warms its pool up at once, not at the pool's
// next maintenance tick (up to a second later): the statements that come
// back with it find connections ready. The pool's maintenance never ticks
// here (the test runs a tick itself while the server is out), so only the
// server's return can warm it up; no timing tells the two apart. (Timing
// did: "warm within 300 ms, the next tick being 700 ms away" failed on a
// busy machine whose dials took longer.)
func TestServerBackWarmsPoolAtOnce(t *testing.T) {
	srv := testenv.Shared(t)
	p := startPool("t/warm", dialConfig(srv), PoolConfig{MaxOpen: 4, MinIdle: 2, HealthCheckInterval: time.Hour}, quietLog, false)
	t.Cleanup(p.Close)
	s := NewServer(p, 1, BreakerConfig{})
	openConns := func() int { n, _, _ := p.Open(); return n }
	// Warm: both connections open and idle (one still being dialed counts
	// as open, and would be idle only after the server was taken out).
	warm := func() bool { open, idle, _ := p.Open(); return open == 2 && idle == 2 }
	waitFor(t, 10*time.Second, "the pool warm", warm)

	// Taken out, its connections gone: the pool does not dial while out,
	// its ticks included.
	s.trip(time.Now())
	for _, c := range p.takeIdle(func(*Conn, int) bool { return true }) {
		p.closeConn(c)
		p.releaseSlot()
	}
	p.tick(p.config())
	if n := openConns(); n != 0 {
		t.Fatalf("%d connections opened to a server taken out", n)
	}
	k := &checker{s: s, cfg: HealthConfig{}.withDefaults(), log: quietLog}
	defer k.close()
	if _, err := k.check(nil); err != nil || s.BreakerOpen() {
		t.Fatalf("check: %v, breaker open %v", err, s.BreakerOpen())
	}
	waitFor(t, 10*time.Second, "the pool warm again", warm)
}

// A check that fails on the connection kept from earlier checks does not
// tell whether the server accepts connections (it may have just gone
// down): the checker tries one connect rather than wait for the backoff.
func TestScheduleConnectsAfterKeptConnectionFails(t *testing.T) {
	var b breaker
	b.cfg.Store(&BreakerConfig{Failures: 1, Backoff: 4 * time.Second, MaxBackoff: 30 * time.Second})
	now := time.Unix(1000, 0)
	sc := newSchedule(HealthConfig{}.withDefaults())
	sc.checked(now, nil, false) // passed
	eof := &net.OpError{Op: "read", Net: "tcp", Err: io.EOF}
	b.probed(now, false) // the next check failed: taken out for 4 s
	sc.checked(now, eof, true)
	if what, _ := sc.next(now.Add(10*time.Millisecond), &b); what != stepConnect {
		t.Fatalf("after a failure on a kept connection: step %d, want a connect", what)
	}
	// Connected, but the fresh login fails: now the backoff rules.
	sc.connectTried(now.Add(10 * time.Millisecond))
	b.probed(now.Add(20*time.Millisecond), false)
	sc.checked(now.Add(10*time.Millisecond), mysql.NewError(1053, "08S01", "Server shutdown in progress"), false)
	what, wait := sc.next(now.Add(time.Second), &b)
	if what != stepWait || wait < 7*time.Second {
		t.Fatalf("after a failed login: step %d, wait %v; want to wait for the backoff (8 s)", what, wait)
	}
}
