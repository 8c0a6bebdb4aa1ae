package sequence

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
)

// fakeTable keeps counters in memory, as the backend table does, and can
// fail or stall its round trips.
type fakeTable struct {
	mu       sync.Mutex
	counters map[Key]uint64
	advances int
	// fail, when set, is returned by advance; applied says whether the
	// counter moved anyway (a commit whose answer was lost).
	fail    error
	applied bool
	// stall, when set, is received from before advance runs.
	stall chan struct{}
}

func newFake() *fakeTable { return &fakeTable{counters: map[Key]uint64{}} }

func (f *fakeTable) advance(ctx context.Context, key Key, floor, n uint64) (uint64, bool, error) {
	if f.stall != nil {
		select {
		case <-f.stall:
		case <-ctx.Done():
			return 0, false, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advances++
	v, ok := f.counters[key]
	if !ok {
		return 0, false, nil
	}
	v = max(v, floor) + n
	if f.fail != nil {
		if f.applied {
			f.counters[key] = v
		}
		return 0, false, f.fail
	}
	f.counters[key] = v
	return v, true, nil
}

func (f *fakeTable) create(_ context.Context, key Key, next uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counters[key] = max(f.counters[key], next)
	return nil
}

func (f *fakeTable) close() {}

func (f *fakeTable) trips() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.advances
}

func constMax(m uint64, calls *atomic.Int32) MaxFunc {
	return func(context.Context) (uint64, error) {
		if calls != nil {
			calls.Add(1)
		}
		return m, nil
	}
}

func TestNextBlocks(t *testing.T) {
	f := newFake()
	q := newStore(f, 10).Sequence("shop", "t", constMax(41, nil))
	ctx := context.Background()
	steps := []struct {
		n         int
		first     uint64
		advances  int // total so far
		remaining uint64
	}{
		// First use: no counter, created from the max (41), then a block [42, 52).
		{n: 1, first: 42, advances: 2, remaining: 9},
		{n: 1, first: 43, advances: 2, remaining: 8},
		{n: 3, first: 44, advances: 2, remaining: 5},
		// 7 do not fit in the 5 left: a new block, the 5 are a gap.
		{n: 7, first: 52, advances: 3, remaining: 3},
		{n: 3, first: 59, advances: 3, remaining: 0},
		// More than a block: one reservation of exactly n.
		{n: 25, first: 62, advances: 4, remaining: 0},
		{n: 1, first: 87, advances: 5, remaining: 9},
	}
	for i, s := range steps {
		first, err := q.Next(ctx, s.n)
		if err != nil {
			t.Fatalf("step %d: Next(%d): %v", i, s.n, err)
		}
		if first != s.first || f.trips() != s.advances || q.end-q.next != s.remaining {
			t.Fatalf("step %d: Next(%d) = %d with %d advances, %d left; want %d, %d, %d",
				i, s.n, first, f.trips(), q.end-q.next, s.first, s.advances, s.remaining)
		}
	}
	if _, err := q.Next(ctx, 0); err == nil {
		t.Fatal("Next(0) succeeded")
	}
}

func TestObserve(t *testing.T) {
	f := newFake()
	q := newStore(f, 10).Sequence("shop", "t", constMax(0, nil))
	ctx := context.Background()
	next := func(want uint64) {
		t.Helper()
		got, err := q.Next(ctx, 1)
		if err != nil || got != want {
			t.Fatalf("Next = %d, %v; want %d", got, err, want)
		}
	}
	observe := func(id uint64, trips int) {
		t.Helper()
		if err := q.Observe(ctx, id); err != nil {
			t.Fatalf("Observe(%d): %v", id, err)
		}
		if f.trips() != trips {
			t.Fatalf("Observe(%d): %d advances so far, want %d", id, f.trips(), trips)
		}
	}
	next(1) // block [1, 11)
	observe(0, 2)
	observe(1, 2) // handed out already
	observe(5, 2) // in the block: skipped locally
	next(6)
	observe(3, 2)
	next(7)
	// Beyond the block: the counter moves past it at once, and the next
	// block starts above it.
	observe(100, 3)
	if c := f.counters[Key{"shop", "t"}]; c != 111 {
		t.Fatalf("counter after Observe(100) = %d, want 111", c)
	}
	next(101)
	observe(105, 3)
	next(106)
	if err := q.Observe(ctx, math.MaxUint64); err == nil {
		t.Fatal("Observe(MaxUint64) succeeded")
	}
	next(107) // the failed Observe left the block alone
}

func TestObserveCreatesCounter(t *testing.T) {
	f := newFake()
	var calls atomic.Int32
	q := newStore(f, 10).Sequence("shop", "t", constMax(50, &calls))
	ctx := context.Background()
	// An explicit id below the existing data's max on a table with no
	// counter yet: the counter starts above the max all the same.
	if err := q.Observe(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if got, err := q.Next(ctx, 1); err != nil || got != 51 {
		t.Fatalf("Next = %d, %v; want 51", got, err)
	}
	if calls.Load() != 1 {
		t.Fatalf("max called %d times, want 1", calls.Load())
	}
}

func TestRefillFailure(t *testing.T) {
	for _, applied := range []bool{false, true} {
		f := newFake()
		q := newStore(f, 10).Sequence("shop", "t", constMax(0, nil))
		ctx := context.Background()
		if _, err := q.Next(ctx, 10); err != nil { // uses up [1, 11)
			t.Fatal(err)
		}
		lost := errors.New("connection lost")
		f.fail, f.applied = lost, applied
		if _, err := q.Next(ctx, 1); !errors.Is(err, lost) {
			t.Fatalf("applied=%v: Next with a failing backend: %v", applied, err)
		}
		f.fail = nil
		got, err := q.Next(ctx, 1)
		// A reservation that committed unheard is a gap: [11, 21) is skipped.
		want := uint64(11)
		if applied {
			want = 21
		}
		if err != nil || got != want {
			t.Fatalf("applied=%v: Next after the failure = %d, %v; want %d", applied, got, err, want)
		}
	}
}

// TestConcurrentFake checks that goroutines sharing a sequence never get
// the same id and that the counter is initialised once.
func TestConcurrentFake(t *testing.T) {
	f := newFake()
	var calls atomic.Int32
	st := newStore(f, 7)
	var mu sync.Mutex
	seen := map[uint64]bool{}
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := st.Sequence("shop", "t", constMax(0, &calls))
			var last uint64
			for i := range 200 {
				n := 1 + (g+i)%4
				first, err := q.Next(context.Background(), n)
				if err != nil {
					t.Error(err)
					return
				}
				if first <= last {
					t.Errorf("goroutine %d: %d after %d", g, first, last)
				}
				last = first + uint64(n) - 1
				mu.Lock()
				for id := first; id <= last; id++ {
					if seen[id] {
						t.Errorf("id %d handed out twice", id)
					}
					seen[id] = true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if calls.Load() != 1 {
		t.Fatalf("max called %d times, want 1", calls.Load())
	}
}

func TestWaitHonoursContext(t *testing.T) {
	f := newFake()
	f.counters[Key{"shop", "t"}] = 1
	f.stall = make(chan struct{})
	q := newStore(f, 10).Sequence("shop", "t", constMax(0, nil))
	refilled := make(chan error, 1)
	go func() {
		_, err := q.Next(context.Background(), 1)
		refilled <- err
	}()
	// Wait until the first caller owns the round trip.
	for {
		q.mu.Lock()
		busy := q.busy != nil
		q.mu.Unlock()
		if busy {
			break
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := q.Next(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next waiting on a stalled refill: %v, want the context's deadline", err)
	}
	close(f.stall)
	if err := <-refilled; err != nil {
		t.Fatal(err)
	}
}

func TestGenerates(t *testing.T) {
	for _, c := range []struct {
		null, zero, noAutoOnZero, want bool
	}{
		{null: true, want: true},
		{null: true, noAutoOnZero: true, want: true},
		{zero: true, want: true},
		{zero: true, noAutoOnZero: true, want: false},
		{want: false},
		{noAutoOnZero: true, want: false},
	} {
		if got := Generates(c.null, c.zero, c.noAutoOnZero); got != c.want {
			t.Errorf("Generates(null=%v, zero=%v, NO_AUTO_VALUE_ON_ZERO=%v) = %v", c.null, c.zero, c.noAutoOnZero, got)
		}
	}
}

func TestCheckIncrement(t *testing.T) {
	for _, c := range []struct {
		inc uint64
		ok  bool
	}{
		{1, true},
		{2, false},
		{10, false},
	} {
		err := CheckIncrement(c.inc)
		var se *mysql.SQLError
		switch {
		case c.ok && err != nil:
			t.Errorf("CheckIncrement(%d): %v", c.inc, err)
		case !c.ok && (!errors.As(err, &se) || se.Code != mysql.ERNotSupportedYet || se.State != "42000" ||
			!strings.Contains(se.Message, "auto_increment_increment")):
			t.Errorf("CheckIncrement(%d) = %v, want error 1235 (42000) naming auto_increment_increment", c.inc, err)
		}
	}
}
