package backend

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/testenv"
)

func wantOpen(t *testing.T, p *Pool, open, idle, waiting int) {
	t.Helper()
	o, i, w := p.Open()
	if o != open || i != idle || w != waiting {
		t.Errorf("Open() = %d open, %d idle, %d waiting; want %d, %d, %d", o, i, w, open, idle, waiting)
	}
}

func waitOpen(t *testing.T, p *Pool, open, idle, waiting int) {
	t.Helper()
	waitFor(t, 5*time.Second, fmt.Sprintf("pool at %d open, %d idle, %d waiting", open, idle, waiting), func() bool {
		o, i, w := p.Open()
		return o == open && i == idle && w == waiting
	})
}

type acquired struct {
	c   *Conn
	err error
}

func acquireAsync(p *Pool, ctx context.Context, foundRows bool) chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		c, err := p.Acquire(ctx, foundRows)
		ch <- acquired{c, err}
	}()
	return ch
}

func TestPoolWarmUp(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	p := newPool(t, "test/warm", dialConfig(srv), PoolConfig{MaxOpen: 5, MinIdle: 3, WaitTimeout: time.Second, HealthCheckInterval: time.Second})
	waitOpen(t, p, 3, 3, 0)
	if d := p.Stats.Dials.Load(); d != 3 {
		t.Errorf("Dials = %d, want 3", d)
	}
	root := srv.RootDB(t)
	var conns []*Conn
	for i := 0; i < 3; i++ {
		c := acquire(t, p, false)
		if !threadAlive(t, root, c.ThreadID) {
			t.Errorf("warm connection %d unknown to the server", c.ThreadID)
		}
		if err := c.Ping(); err != nil {
			t.Errorf("warm connection: %v", err)
		}
		if c.Pool() != p || c.Uses() != 2 {
			t.Errorf("warm connection: pool %p (want %p), uses %d (want 2)", c.Pool(), p, c.Uses())
		}
		conns = append(conns, c)
	}
	if d := p.Stats.Dials.Load(); d != 3 {
		t.Errorf("acquiring the warm connections dialed: Dials = %d", d)
	}
	wantOpen(t, p, 3, 0, 0)
	// Warm-up only counts open connections: all 3 in use is enough.
	time.Sleep(100 * time.Millisecond)
	wantOpen(t, p, 3, 0, 0)
	for _, c := range conns {
		p.Release(c)
	}
	wantOpen(t, p, 3, 3, 0)
}

func TestPoolReuseLIFOAndMaxOpen(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	p := newPool(t, "test/lifo", dialConfig(srv), PoolConfig{MaxOpen: 3, WaitTimeout: 100 * time.Millisecond, MaxWaiters: 10})
	a := acquire(t, p, false)
	b := acquire(t, p, false)
	c := acquire(t, p, false)
	if a == b || b == c || a == c || a.ThreadID == b.ThreadID || b.ThreadID == c.ThreadID {
		t.Fatal("Acquire handed out the same connection twice")
	}
	wantOpen(t, p, 3, 0, 0)

	// MaxOpen: a fourth waits and times out.
	ctx := context.Background()
	if x, err := p.Acquire(ctx, false); err == nil {
		p.Release(x)
		t.Fatal("Acquire beyond MaxOpen succeeded")
	}
	if d := p.Stats.Dials.Load(); d != 3 {
		t.Errorf("Dials = %d, want 3", d)
	}
	wantOpen(t, p, 3, 0, 0)

	p.Release(a)
	p.Release(c)
	p.Release(b)
	wantOpen(t, p, 3, 3, 0)
	for i, want := range []*Conn{b, c, a} {
		got := acquire(t, p, false)
		if got != want {
			t.Errorf("Acquire %d: got thread %d, want the last released %d", i, got.ThreadID, want.ThreadID)
		}
		if i == 0 {
			p.Release(got)
			if again := acquire(t, p, false); again != got {
				t.Errorf("release+acquire: got thread %d, want %d", again.ThreadID, got.ThreadID)
			}
		}
	}
	if d := p.Stats.Dials.Load(); d != 3 {
		t.Errorf("reuse dialed: Dials = %d, want 3", d)
	}
	for _, x := range []*Conn{a, b, c} {
		p.Release(x)
	}
}

func TestPoolMaxIdle(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	root := srv.RootDB(t)
	p := newPool(t, "test/maxidle", dialConfig(srv), PoolConfig{MaxOpen: 3, MaxIdle: 1, WaitTimeout: time.Second})
	a, b, c := acquire(t, p, false), acquire(t, p, false), acquire(t, p, false)
	p.Release(a)
	p.Release(b)
	p.Release(c)
	wantOpen(t, p, 1, 1, 0)
	waitFor(t, 5*time.Second, "connections beyond MaxIdle to close", func() bool {
		return !threadAlive(t, root, b.ThreadID) && !threadAlive(t, root, c.ThreadID)
	})
	if !threadAlive(t, root, a.ThreadID) {
		t.Errorf("the idle connection was closed")
	}
	if got := acquire(t, p, false); got != a {
		t.Errorf("idle connection not reused")
	} else {
		p.Release(got)
	}
}

func TestPoolWaiterGetsReleasedConn(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	p := newPool(t, "test/wait", dialConfig(srv), PoolConfig{MaxOpen: 1, WaitTimeout: 5 * time.Second, MaxWaiters: 5})
	a := acquire(t, p, false)
	uses := a.Uses()

	ctx := context.Background()
	w1 := acquireAsync(p, ctx, false)
	waitOpen(t, p, 1, 0, 1)
	w2 := acquireAsync(p, ctx, false)
	waitOpen(t, p, 1, 0, 2)

	p.Release(a)
	var got acquired
	select {
	case got = <-w1:
	case got = <-w2:
		t.Fatal("the second waiter was served first")
	case <-time.After(3 * time.Second):
		t.Fatal("waiter not served after a release")
	}
	if got.err != nil || got.c != a {
		t.Fatalf("first waiter got %v, %v; want the released connection", got.c, got.err)
	}
	if a.Uses() != uses+1 {
		t.Errorf("uses %d, want %d", a.Uses(), uses+1)
	}
	if err := got.c.Ping(); err != nil {
		t.Errorf("handed-over connection: %v", err)
	}
	wantOpen(t, p, 1, 0, 1)
	go p.Release(got.c) // from another goroutine
	select {
	case got = <-w2:
	case <-time.After(3 * time.Second):
		t.Fatal("second waiter not served")
	}
	if got.err != nil || got.c != a {
		t.Fatalf("second waiter got %v, %v", got.c, got.err)
	}
	if d := p.Stats.Dials.Load(); d != 1 {
		t.Errorf("Dials = %d, want 1", d)
	}
	p.Release(got.c)
	wantOpen(t, p, 1, 1, 0)
}

func TestPoolWaitTimeout(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	p := newPool(t, "test/timeout", dialConfig(srv), PoolConfig{MaxOpen: 1, WaitTimeout: 200 * time.Millisecond, MaxWaiters: 5})
	a := acquire(t, p, false)
	start := time.Now()
	c, err := p.Acquire(context.Background(), false)
	elapsed := time.Since(start)
	if err == nil {
		p.Release(c)
		t.Fatal("Acquire on a full pool succeeded")
	}
	se := wantSQLError(t, err, ErrCodeBackendUnavailable)
	wantContains(t, se.Message, "test/timeout", srv.Addr, "200ms")
	if elapsed < 180*time.Millisecond || elapsed > 2*time.Second {
		t.Errorf("timed out after %v, want about 200ms", elapsed)
	}
	if n := p.Stats.Timeouts.Load(); n != 1 {
		t.Errorf("Timeouts = %d, want 1", n)
	}
	wantOpen(t, p, 1, 0, 0)

	// A cancelled context ends the wait with the context's error.
	ctx, cancel := context.WithCancel(context.Background())
	ch := acquireAsync(p, ctx, false)
	waitOpen(t, p, 1, 0, 1)
	cancel()
	got := <-ch
	if got.err == nil || !errors.Is(got.err, context.Canceled) {
		t.Errorf("cancelled wait: %v, %v", got.c, got.err)
	}
	wantOpen(t, p, 1, 0, 0)

	// The pool still works.
	p.Release(a)
	p.Release(acquire(t, p, false))
	wantOpen(t, p, 1, 1, 0)
}

// Waiters share one timer: each still times out at its own deadline, and
// the timer is re-armed for waiters that queue after it went idle.
func TestPoolWaitersShareOneTimer(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	const timeout = 400 * time.Millisecond
	p := newPool(t, "test/timer", dialConfig(srv), PoolConfig{MaxOpen: 1, WaitTimeout: timeout, MaxWaiters: 5})
	a := acquire(t, p, false)
	defer p.Release(a)

	timed := func() (chan time.Duration, time.Time) {
		start := time.Now()
		ch := make(chan time.Duration, 1)
		go func() {
			c, err := p.Acquire(context.Background(), false)
			if err == nil {
				p.Release(c)
				t.Error("Acquire on a full pool succeeded")
			}
			ch <- time.Since(start)
		}()
		return ch, start
	}
	first, _ := timed()
	waitOpen(t, p, 1, 0, 1)
	time.Sleep(timeout / 2)
	second, secondStart := timed()
	waitOpen(t, p, 1, 0, 2)
	if d := <-first; d < timeout-20*time.Millisecond {
		t.Errorf("first waiter timed out after %v, want %v", d, timeout)
	}
	select {
	case d := <-second:
		if time.Since(secondStart) < timeout-20*time.Millisecond {
			t.Fatalf("second waiter timed out with the first, after %v", d)
		}
	default:
	}
	if d := <-second; d < timeout-20*time.Millisecond || d > 5*timeout {
		t.Errorf("second waiter timed out after %v, want %v", d, timeout)
	}
	waitOpen(t, p, 1, 0, 0)

	// The queue was empty when the timer last fired: a new waiter re-arms it.
	third, _ := timed()
	select {
	case d := <-third:
		if d < timeout-20*time.Millisecond {
			t.Errorf("third waiter timed out after %v, want %v", d, timeout)
		}
	case <-time.After(10 * timeout):
		t.Fatal("a waiter queued after the timer went idle never timed out")
	}
	if w, to := p.Stats.Waits.Load(), p.Stats.Timeouts.Load(); w != 3 || to != 3 {
		t.Errorf("Waits = %d, Timeouts = %d; want 3 and 3", w, to)
	}
}

func TestPoolMaxWaiters(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	p := newPool(t, "test/waiters", dialConfig(srv), PoolConfig{MaxOpen: 1, WaitTimeout: 5 * time.Second, MaxWaiters: 1})
	a := acquire(t, p, false)
	w := acquireAsync(p, context.Background(), false)
	waitOpen(t, p, 1, 0, 1)

	// Rejected without queueing (Waits counts the acquires that queued;
	// a time bound on "immediate" would fail on a busy machine).
	waits := p.Stats.Waits.Load()
	c, err := p.Acquire(context.Background(), false)
	if err == nil {
		p.Release(c)
		t.Fatal("Acquire beyond MaxWaiters succeeded")
	}
	if w := p.Stats.Waits.Load(); w != waits {
		t.Errorf("the rejected acquire queued: Waits %d -> %d", waits, w)
	}
	se := wantSQLError(t, err, ErrCodeBackendUnavailable)
	wantContains(t, se.Message, "test/waiters", srv.Addr, "max_waiters=1")

	p.Release(a)
	got := <-w
	if got.err != nil || got.c != a {
		t.Fatalf("queued waiter: %v, %v", got.c, got.err)
	}
	p.Release(got.c)

	// MaxWaiters 0: no queue at all.
	p0 := newPool(t, "test/nowait", dialConfig(srv), PoolConfig{MaxOpen: 1, WaitTimeout: 5 * time.Second})
	b := acquire(t, p0, false)
	if c, err := p0.Acquire(context.Background(), false); err == nil {
		p0.Release(c)
		t.Error("Acquire on a full pool without waiters succeeded")
	} else {
		wantSQLError(t, err, ErrCodeBackendUnavailable)
		if w := p0.Stats.Waits.Load(); w != 0 {
			t.Errorf("the rejected acquire queued: Waits %d", w)
		}
	}
	p0.Release(b)
}

func TestPoolDiscardEpoch(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	root := srv.RootDB(t)
	p := newPool(t, "test/epoch", dialConfig(srv), PoolConfig{MaxOpen: 5, WaitTimeout: time.Second})
	a, b, c, d := acquire(t, p, false), acquire(t, p, false), acquire(t, p, false), acquire(t, p, false)
	p.Release(b)
	p.Release(c)

	// Discard without I/O failure: only that connection goes.
	p.Discard(d, false)
	if n := p.Stats.Discarded.Load(); n != 1 {
		t.Errorf("Discarded = %d", n)
	}
	wantOpen(t, p, 3, 2, 0)
	waitFor(t, 5*time.Second, "discarded connection to close", func() bool { return !threadAlive(t, root, d.ThreadID) })
	if got := acquire(t, p, false); got != c {
		t.Fatalf("idle connection not reused after a plain Discard")
	} else {
		p.Release(got)
	}
	ub := b.Uses()

	// I/O failure: idle connections dialed before are retired.
	p.Discard(a, true)
	wantOpen(t, p, 2, 2, 0)
	if p.Reclaim(b, ub) {
		t.Errorf("Reclaim returned a connection of a retired epoch")
	}
	dials := p.Stats.Dials.Load()
	e := acquire(t, p, false)
	if e == b || e == c {
		t.Fatal("Acquire handed out a connection dialed before the I/O failure")
	}
	if p.Stats.Dials.Load() != dials+1 {
		t.Errorf("Dials %d -> %d, want one new dial", dials, p.Stats.Dials.Load())
	}
	wantOpen(t, p, 1, 0, 0)
	waitFor(t, 5*time.Second, "old connections to close on the server", func() bool {
		return !threadAlive(t, root, a.ThreadID) && !threadAlive(t, root, b.ThreadID) && !threadAlive(t, root, c.ThreadID)
	})
	if !threadAlive(t, root, e.ThreadID) {
		t.Error("new connection not on the server")
	}
	// An old connection in use when the failure happened is closed on
	// release rather than pooled; a new one is kept.
	p.Release(e)
	wantOpen(t, p, 1, 1, 0)
	f := acquire(t, p, false)
	g := acquire(t, p, false)
	p.Discard(g, true) // bumps the epoch again: f is now old
	p.Release(f)
	wantOpen(t, p, 0, 0, 0)
	waitFor(t, 5*time.Second, "old in-use connection to close on release", func() bool { return !threadAlive(t, root, f.ThreadID) })
}

func TestPoolReclaim(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	p := newPool(t, "test/reclaim", dialConfig(srv), PoolConfig{MaxOpen: 4, WaitTimeout: time.Second})
	a := acquire(t, p, false)
	p.Release(a)
	u := a.Uses()
	if !p.Reclaim(a, u) {
		t.Fatal("Reclaim of an untouched idle connection failed")
	}
	if a.Uses() != u+1 {
		t.Errorf("Reclaim: uses %d, want %d", a.Uses(), u+1)
	}
	wantOpen(t, p, 1, 0, 0)
	if p.Reclaim(a, a.Uses()) {
		t.Error("Reclaim of a connection in use succeeded")
	}

	p.Release(a)
	u = a.Uses()
	other := acquire(t, p, false) // someone else takes it (LIFO)
	if other != a {
		t.Fatal("LIFO: did not get the released connection")
	}
	p.Release(other)
	if p.Reclaim(a, u) {
		t.Error("Reclaim succeeded although another session used the connection")
	}
	wantOpen(t, p, 1, 1, 0)

	// Reclaim from the middle of the idle stack keeps the others reclaimable.
	x, y, z := acquire(t, p, false), acquire(t, p, false), acquire(t, p, false)
	p.Release(x)
	p.Release(y)
	p.Release(z)
	ux, uy, uz := x.Uses(), y.Uses(), z.Uses()
	for _, r := range []struct {
		c *Conn
		u uint64
	}{{x, ux}, {z, uz}, {y, uy}} {
		if !p.Reclaim(r.c, r.u) {
			t.Errorf("Reclaim of idle thread %d failed", r.c.ThreadID)
		}
	}
	wantOpen(t, p, 3, 0, 0)
	for _, c := range []*Conn{x, y, z} {
		if err := c.Ping(); err != nil {
			t.Error(err)
		}
		p.Release(c)
	}
	wantOpen(t, p, 3, 3, 0)
}

func TestPoolFoundRows(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	root := srv.RootDB(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS bk_found",
		"CREATE OR REPLACE TABLE bk_found.t (id INT PRIMARY KEY, v INT)",
		"INSERT INTO bk_found.t VALUES (1, 1)")
	dc := dialConfig(srv)
	dc.Database = "bk_found"
	p := newPool(t, "test/found", dc, PoolConfig{MaxOpen: 3, WaitTimeout: 5 * time.Second, MaxWaiters: 5})

	affected := func(c *Conn) uint64 {
		t.Helper()
		if err := c.WriteCommand(append([]byte{mysql.ComQuery}, "UPDATE t SET v = 1 WHERE id = 1"...)); err != nil {
			t.Fatal(err)
		}
		pk, err := c.ReadPacket()
		if err != nil {
			t.Fatal(err)
		}
		ok, valid := mysql.ParseOK(pk, c.Caps)
		if !mysql.IsOK(pk) || !valid {
			t.Fatalf("UPDATE: %x", pk)
		}
		return ok.AffectedRows
	}

	plain := acquire(t, p, false)
	found := acquire(t, p, true)
	if plain.FoundRows || plain.Caps&mysql.ClientFoundRows != 0 {
		t.Errorf("plain connection has CLIENT_FOUND_ROWS")
	}
	if !found.FoundRows || found.Caps&mysql.ClientFoundRows == 0 {
		t.Errorf("FoundRows connection lacks CLIENT_FOUND_ROWS")
	}
	if n := affected(plain); n != 0 {
		t.Errorf("unchanged row without CLIENT_FOUND_ROWS: %d affected, want 0", n)
	}
	if n := affected(found); n != 1 {
		t.Errorf("unchanged row with CLIENT_FOUND_ROWS: %d affected, want 1", n)
	}
	p.Release(plain)
	p.Release(found)
	wantOpen(t, p, 2, 2, 0)

	// Each kind is handed out only to its own kind.
	for i := 0; i < 3; i++ {
		if c := acquire(t, p, true); c != found {
			t.Errorf("FoundRows Acquire got another connection (FoundRows=%v)", c.FoundRows)
			p.Release(c)
		} else {
			p.Release(c)
		}
		if c := acquire(t, p, false); c != plain {
			t.Errorf("plain Acquire got another connection (FoundRows=%v)", c.FoundRows)
			p.Release(c)
		} else {
			p.Release(c)
		}
	}
	if d := p.Stats.Dials.Load(); d != 2 {
		t.Errorf("Dials = %d, want 2", d)
	}

	// Full pool, only the other kind idle: it is replaced.
	third := acquire(t, p, false) // plain
	extra := acquire(t, p, false) // a new dial: the pool is now full
	if third != plain || extra == plain || extra.FoundRows {
		t.Fatalf("plain acquires: reused %v, extra FoundRows %v", third == plain, extra.FoundRows)
	}
	p.Release(extra)
	x := acquire(t, p, true) // reuses found
	y := acquire(t, p, true) // pool full, a plain one idle: replace it
	if x != found || y == extra || !y.FoundRows {
		t.Errorf("replacement: x==found %v, y==extra %v, y FoundRows %v", x == found, y == extra, y.FoundRows)
	}
	wantOpen(t, p, 3, 0, 0)
	waitFor(t, 5*time.Second, "replaced idle connection to close", func() bool { return !threadAlive(t, root, extra.ThreadID) })
	if n := affected(y); n != 1 {
		t.Errorf("replacement connection: %d affected, want 1", n)
	}

	// A release goes to a waiter of its own kind, skipping the other kind.
	wPlain := acquireAsync(p, context.Background(), false)
	waitOpen(t, p, 3, 0, 1)
	p.Release(x) // FoundRows: the plain waiter cannot use it; it is closed and the waiter dials
	got := <-wPlain
	if got.err != nil || got.c.FoundRows || got.c == x {
		t.Fatalf("plain waiter got %+v, %v", got.c, got.err)
	}
	if n := affected(got.c); n != 0 {
		t.Errorf("plain waiter's connection: %d affected, want 0", n)
	}
	wantOpen(t, p, 3, 0, 0)
	for _, c := range []*Conn{third, y, got.c} {
		p.Release(c)
	}
	wantOpen(t, p, 3, 3, 0)
}

func TestPoolDeadAddress(t *testing.T) {
	t.Parallel()
	dc := &DialConfig{Addr: closedAddr(t), User: testenv.User, Password: testenv.Password,
		ConnectTimeout: 3 * time.Second, Charset: mysql.CollationUTF8MB4GeneralCI}
	p := newPool(t, "test/dead", dc, PoolConfig{MaxOpen: 2, WaitTimeout: 5 * time.Second, MaxWaiters: 5})
	for i := 0; i < 3; i++ {
		start := time.Now()
		c, err := p.Acquire(context.Background(), false)
		if err == nil {
			p.Release(c)
			t.Fatal("Acquire from a dead address succeeded")
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Errorf("failing Acquire took %v", el)
		}
		se := wantSQLError(t, err, ErrCodeBackendUnavailable)
		wantContains(t, se.Message, "test/dead", dc.Addr)
	}
	if n := p.Stats.DialErrors.Load(); n != 3 {
		t.Errorf("DialErrors = %d, want 3", n)
	}
	wantOpen(t, p, 0, 0, 0) // failed dials give their slots back

	p.Close()
	_, err := p.Acquire(context.Background(), false)
	se := wantSQLError(t, err, ErrCodeBackendUnavailable)
	wantContains(t, se.Message, "closed")
}

func TestPoolIdleTimeout(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	root := srv.RootDB(t)
	p := newPool(t, "test/idle", dialConfig(srv), PoolConfig{MaxOpen: 4, MinIdle: 1,
		IdleTimeout: 200 * time.Millisecond, HealthCheckInterval: 50 * time.Millisecond, WaitTimeout: time.Second})
	waitOpen(t, p, 1, 1, 0)
	conns := []*Conn{acquire(t, p, false), acquire(t, p, false), acquire(t, p, false)}
	for _, c := range conns {
		p.Release(c)
	}
	// (The health check pings idle connections every 50ms: a connection
	// being pinged is open but not idle, so idle counts are polled.)
	start := time.Now()
	waitFor(t, 5*time.Second, "idle connections to expire down to MinIdle", func() bool {
		o, _, _ := p.Open()
		return o == 1
	})
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Errorf("idle connections expired after %v, IdleTimeout is 200ms", el)
	}
	waitFor(t, 5*time.Second, "expired connections to close on the server", func() bool {
		alive := 0
		for _, c := range conns {
			if threadAlive(t, root, c.ThreadID) {
				alive++
			}
		}
		return alive <= 1
	})
	// MinIdle stays: the last one is never expired for idleness.
	for end := time.Now().Add(400 * time.Millisecond); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if o, _, _ := p.Open(); o != 1 {
			t.Fatalf("%d open, want MinIdle=1 kept", o)
		}
	}
	if d := p.Stats.Dials.Load(); d > 4 {
		t.Errorf("Dials = %d: MinIdle connection was expired and re-dialed", d)
	}
	last := acquire(t, p, false)
	if !threadAlive(t, root, last.ThreadID) {
		t.Error("the remaining idle connection is not on the server")
	}
	p.Release(last)
}

// A connection in steady use is never expired as idle, though releases do
// not read the clock: maintenance notes the use (noteUses). The test runs
// maintenance's ticks itself: between two ticks the connection sits in the
// pool for longer than IdleTimeout, used once, so only the use noted by the
// tick keeps it. (With the pool's own ticks racing a loop of uses, a busy
// machine that held the loop back for IdleTimeout expired it.)
func TestPoolUseDefersIdleExpiry(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	const idle = 100 * time.Millisecond
	p := newUntickedPool(t, "test/busy", dialConfig(srv), PoolConfig{MaxOpen: 1, MinIdle: 0,
		IdleTimeout: idle, HealthCheckInterval: time.Hour, WaitTimeout: time.Second})
	cfg := p.config()
	p.Release(acquire(t, p, false))
	p.tick(cfg)
	for i := range 3 {
		time.Sleep(idle + 20*time.Millisecond) // the previous tick's note is older than IdleTimeout
		p.Release(acquire(t, p, false))
		p.tick(cfg)
		if o, _, _ := p.Open(); o != 1 {
			t.Fatalf("tick %d: %d open: a connection used since the previous tick was expired as idle", i+1, o)
		}
	}
	if d := p.Stats.Dials.Load(); d != 1 {
		t.Errorf("Dials = %d: a connection in use was expired as idle", d)
	}
	time.Sleep(idle + 20*time.Millisecond)
	p.tick(cfg)
	if o, _, _ := p.Open(); o != 0 {
		t.Errorf("%d open: a connection unused for longer than IdleTimeout was kept", o)
	}
}

func TestPoolMaxLifetime(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	root := srv.RootDB(t)
	p := newPool(t, "test/lifetime", dialConfig(srv), PoolConfig{MaxOpen: 2, MinIdle: 1,
		MaxLifetime: 300 * time.Millisecond, HealthCheckInterval: 50 * time.Millisecond, WaitTimeout: time.Second})
	waitOpen(t, p, 1, 1, 0)
	first := acquire(t, p, false)
	p.Release(first) // recent use does not extend a lifetime
	waitFor(t, 5*time.Second, "connection past MaxLifetime to close", func() bool { return !threadAlive(t, root, first.ThreadID) })
	if el := time.Since(first.createdAt); el < 300*time.Millisecond {
		t.Errorf("closed after %v, MaxLifetime 300ms", el)
	}
	waitOpen(t, p, 1, 1, 0) // replaced by warm-up
	c := acquire(t, p, false)
	if c == first || c.ThreadID == first.ThreadID {
		t.Error("expired connection handed out")
	}
	if err := c.Ping(); err != nil {
		t.Error(err)
	}
	p.Release(c)
	if d := p.Stats.Dials.Load(); d < 2 {
		t.Errorf("Dials = %d, want a replacement dial", d)
	}
}

func TestPoolHealthCheckDropsKilledConn(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	root := srv.RootDB(t)
	p := newPool(t, "test/health", dialConfig(srv), PoolConfig{MaxOpen: 4, MinIdle: 2,
		HealthCheckInterval: 50 * time.Millisecond, WaitTimeout: time.Second})
	waitOpen(t, p, 2, 2, 0)
	a, b := acquire(t, p, false), acquire(t, p, false)
	p.Release(a)
	p.Release(b)
	if _, err := root.Exec(fmt.Sprintf("KILL %d", a.ThreadID)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "health check to discard the killed connection", func() bool {
		return p.Stats.Discarded.Load() >= 1
	})
	// Warm-up replaces what was dropped; the survivor (older epoch) goes too.
	waitFor(t, 5*time.Second, "pool to be back at MinIdle with new connections", func() bool {
		o, i, _ := p.Open()
		return o == 2 && i == 2 && p.Stats.Dials.Load() >= 3
	})
	x, y := acquire(t, p, false), acquire(t, p, false)
	for _, c := range []*Conn{x, y} {
		if c.ThreadID == a.ThreadID || c == a {
			t.Error("killed connection handed out")
		}
		if err := c.Ping(); err != nil {
			t.Errorf("thread %d: %v", c.ThreadID, err)
		}
	}
	p.Release(x)
	p.Release(y)
}

func TestPoolKillQuery(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	root := srv.RootDB(t)
	p := newPool(t, "test/kill", dialConfig(srv), PoolConfig{MaxOpen: 2, WaitTimeout: time.Second})
	c := acquire(t, p, false)

	type result struct {
		rows [][]string
		err  error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		rows, err := c.QueryRows("SELECT SLEEP(10)")
		done <- result{rows, err}
	}()
	waitFor(t, 5*time.Second, "SLEEP to run on the server", func() bool {
		var n int
		err := root.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ? AND INFO LIKE 'SELECT SLEEP%'", c.ThreadID).Scan(&n)
		return err == nil && n == 1
	})
	dials := p.Stats.Dials.Load()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.KillQuery(ctx, c.ThreadID); err != nil {
		t.Fatalf("KillQuery: %v", err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("SLEEP(10) not interrupted")
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("interrupted after %v", el)
	}
	t.Logf("interrupted SLEEP after %v: %q, %v", time.Since(start), r.rows, r.err)
	if r.err != nil {
		wantSQLError(t, r.err, mysql.ERQueryInterrupted)
	} else if fmt.Sprint(r.rows) != "[[1]]" {
		t.Errorf("interrupted SLEEP returned %q, want 1", r.rows)
	}
	// The connection survives; the kill used a connection of its own.
	if got := queryOne(t, c, "SELECT 'alive'"); got != "alive" {
		t.Errorf("after KILL QUERY: %q", got)
	}
	if p.Stats.Dials.Load() != dials {
		t.Errorf("KillQuery dialed through the pool's accounting")
	}
	wantOpen(t, p, 1, 0, 0)
	p.Release(c)

	// Killing a thread that does not exist is an error.
	err := p.KillQuery(ctx, 0x7ffffff0)
	if err == nil || !strings.Contains(err.Error(), "1094") {
		t.Errorf("KillQuery of an unknown thread: %v", err)
	}
}

// BenchmarkPoolContended: more goroutines than connections, so most
// acquires queue and are granted by a release. Run with -benchmem: a wait
// allocates nothing.
func BenchmarkPoolContended(b *testing.B) {
	srv := testenv.Shared(b)
	p := NewPool("bench/contended", dialConfig(srv), PoolConfig{MaxOpen: 2, WaitTimeout: 5 * time.Second, MaxWaiters: 100}, discardLog())
	defer p.Close()
	ctx := context.Background()
	var held []*Conn
	for range 2 { // dial both before timing
		c, err := p.Acquire(ctx, false)
		if err != nil {
			b.Fatal(err)
		}
		held = append(held, c)
	}
	for _, c := range held {
		p.Release(c)
	}
	b.SetParallelism(4) // 4 per GOMAXPROCS
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c, err := p.Acquire(ctx, false)
			if err != nil {
				b.Error(err)
				return
			}
			p.Release(c)
		}
	})
}

// TestPoolEvaluator: a pool's evaluator pool has connections of its own,
// within its own limit: one is had while the pool's every connection is
// in use, and the pool's connections while the evaluator's are. It is
// not warmed, keeps its connections for reuse, follows SetConfig, and
// closes with the pool.
func TestPoolEvaluator(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	p := newPool(t, "test/evaluator", dialConfig(srv), PoolConfig{MaxOpen: 1, MinIdle: 1, EvaluatorMaxOpen: 1, WaitTimeout: 200 * time.Millisecond, MaxWaiters: 10})
	ev := p.Evaluator()
	if ev == nil || ev.Evaluator() != nil {
		t.Fatalf("Evaluator() = %v, want a pool without an evaluator pool of its own", ev)
	}
	waitOpen(t, p, 1, 1, 0)
	wantOpen(t, ev, 0, 0, 0) // nothing opened ahead of use
	c := acquire(t, p, false)
	e := acquire(t, ev, false)
	if e.Pool() != ev {
		t.Errorf("the evaluator's connection belongs to %v, want the evaluator pool", e.Pool().Name)
	}
	ctx := context.Background()
	if _, err := ev.Acquire(ctx, false); err == nil || !strings.Contains(err.Error(), "evaluator_max_open=1") {
		t.Errorf("a second evaluator connection beyond EvaluatorMaxOpen 1: %v, want a timeout naming evaluator_max_open", err)
	}
	p.Release(c)
	ev.Release(e)
	if got := acquire(t, ev, false); got != e {
		t.Error("the evaluator's idle connection was not reused")
	} else {
		ev.Release(got)
	}
	p.SetConfig(PoolConfig{MaxOpen: 1, EvaluatorMaxOpen: 2, WaitTimeout: time.Second})
	if got := ev.config().MaxOpen; got != 2 {
		t.Errorf("after SetConfig, the evaluator pool's MaxOpen is %d, want 2", got)
	}
	p.Close()
	if _, err := ev.Acquire(ctx, false); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Acquire on the evaluator pool after Close: %v, want pool is closed", err)
	}
}
