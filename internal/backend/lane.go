package backend

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
)

// A Lane is a backend connection that carries the statements of several
// sessions at once (pool.pipeline_connections, issue 23): each session
// writes its command as soon as it has one, without waiting for the
// answers of the commands before it, and reads its own answer when the
// answers before it have been read. The server finds the next command in
// its socket when it finishes one, instead of going to sleep and being
// woken for it, which spares it CPU per statement (docs/benchmarks.md).
//
// A lane serves only sessions whose state (database, session variables,
// CLIENT_FOUND_ROWS) is the connection's, and only statements that cannot
// change that state or leave anything on the connection for the next one
// to read: the frontend decides which (Session.pipelinable). What one
// statement does on the server is then what it would do on a connection
// of its own.
//
// Writes are gathered: a session that finds another writing appends its
// command to the output and leaves, and the writer sends it with its own
// (one write system call for several commands under load). Answers are
// read by the sessions themselves, in the order their commands were
// written: the Turn at the head of the queue reads, then wakes the next.
type Lane struct {
	c    *Conn
	pool *Pool

	mu      sync.Mutex
	out     []byte  // commands framed and not written yet
	spare   []byte  // the other output buffer, swapped with out by the writer
	writing bool    // a sender is writing out
	queue   []*Turn // the commands written or to write whose answers are unread, oldest first
	err     error   // why the lane broke: it takes no more commands
	retired bool    // it takes no more commands and leaves when its queue is empty
	dirty   bool    // its connection's state is not what the lane was opened with
	closed  bool    // its connection has gone back to the pool or been closed
}

// A Turn is one command's place in a lane's queue.
type Turn struct {
	lane  *Lane
	ready chan struct{} // a token when the turn reaches the head (or the lane breaks)
	// abandoned: its session gave up waiting (KILL): whoever reads the
	// answer before it reads this one's too, and drops it.
	abandoned bool
}

// Lane errors. ErrLaneBroken and ErrLaneClosed mean the command may not
// have run: the caller runs it again on a connection of its own (a lane
// carries only statements that may run twice).
var (
	ErrLaneBroken    = errors.New("pipelined connection failed")
	ErrLaneClosed    = errors.New("pipelined connection closed")
	ErrTurnAbandoned = errors.New("pipelined statement abandoned")
)

// turns recycles Turns: one per statement otherwise.
var turns = sync.Pool{New: func() any { return &Turn{ready: make(chan struct{}, 1)} }}

// newLane makes c, a connection taken from p and in the state it serves, a
// lane.
func newLane(p *Pool, c *Conn) *Lane {
	return &Lane{c: c, pool: p}
}

// Conn returns the lane's connection: its state says which sessions it
// serves. Only the head turn reads from it.
func (l *Lane) Conn() *Conn { return l.c }

// Send queues command p (a whole packet's payload, command byte first) and
// writes it, with the commands others queued meanwhile. The Turn it
// returns is the caller's until Done, or until Wait reports it abandoned
// or the lane broken.
func (l *Lane) Send(p []byte) (*Turn, error) {
	if len(p) >= mysql.MaxPayload {
		return nil, fmt.Errorf("pipelined command of %d bytes: %w", len(p), ErrLaneClosed)
	}
	t := turns.Get().(*Turn)
	t.lane, t.abandoned = l, false
	l.mu.Lock()
	if l.err != nil || l.retired {
		l.mu.Unlock()
		turns.Put(t)
		return nil, ErrLaneClosed
	}
	n := len(p)
	l.out = append(l.out, byte(n), byte(n>>8), byte(n>>16), 0)
	l.out = append(l.out, p...)
	l.queue = append(l.queue, t)
	if len(l.queue) == 1 {
		t.ready <- struct{}{}
	}
	if l.writing {
		l.mu.Unlock() // the writer sends it
		return t, nil
	}
	l.writing = true
	for len(l.out) > 0 && l.err == nil {
		buf := l.out
		l.out, l.spare = l.spare[:0], nil
		l.mu.Unlock()
		// Not through the mysql.Conn, which the head's reader uses: a
		// net.Conn may be written while another goroutine reads it.
		_, err := l.c.NetConn().Write(buf)
		l.mu.Lock()
		l.spare = buf[:0]
		if err != nil {
			l.breakLocked(fmt.Errorf("write: %w", err))
		}
	}
	l.writing = false
	err := l.err
	l.mu.Unlock()
	if err != nil {
		return nil, ErrLaneBroken // t went with the queue
	}
	return t, nil
}

// Wait blocks until t's answer is the next to read: the caller reads it
// from the lane's connection and then calls Done. It returns
// ErrTurnAbandoned after Abandon, or ErrLaneBroken; t is then no longer
// the caller's.
func (t *Turn) Wait() error {
	<-t.ready
	l := t.lane
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case t.abandoned:
		return ErrTurnAbandoned
	case l.err != nil:
		return ErrLaneBroken
	}
	return nil
}

// Lane returns the lane t is queued on.
func (t *Turn) Lane() *Lane { return t.lane }

// Done ends t, the head, once its answer was read. read false says it was
// not read whole (the client went away, the server failed): the lane
// breaks, since the next answer cannot be found. Answers of abandoned
// turns next in line are read and dropped here.
func (t *Turn) Done(read bool) {
	l := t.lane
	l.mu.Lock()
	if !read {
		l.breakLocked(errors.New("an answer was left unread"))
	}
	if l.err != nil {
		l.mu.Unlock()
		l.close(true)
		return
	}
	l.pop()
	turns.Put(t)
	l.pool.Stats.Pipelined.Add(1)
	for len(l.queue) > 0 && l.queue[0].abandoned {
		l.mu.Unlock()
		err := l.drainAbandoned()
		l.mu.Lock()
		if err != nil && !mysql.IsSQLError(err) {
			l.breakLocked(fmt.Errorf("read an abandoned answer: %w", err))
			l.mu.Unlock()
			l.close(true)
			return
		}
		l.pop() // not recycled: its owner may not have taken its token yet
	}
	if len(l.queue) > 0 {
		l.queue[0].ready <- struct{}{}
		l.mu.Unlock()
		return
	}
	leave := l.retired
	l.mu.Unlock()
	if leave {
		l.close(false)
	}
}

// drainAbandoned reads and drops the answer of an abandoned turn, the
// head now: its session was answered 1317 (KILL QUERY) and left, but the
// server runs its statement, which could hold the lane for as long as it
// runs. It is killed, and killed again while its answer has not come: a
// kill that reaches the server thread before it read the statement is
// lost. A kill that reaches the statement after it instead is answered
// 1317, which the frontend runs again for a session that did not ask.
func (l *Lane) drainAbandoned() error {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, d := range abandonedKillAfter {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := l.pool.KillQuery(ctx, l.c.ThreadID); err != nil {
				l.pool.log.Warn("KILL QUERY of an abandoned pipelined read failed", "thread_id", l.c.ThreadID, "err", err)
			}
			cancel()
			select {
			case <-stop:
				return
			case <-time.After(d):
			}
		}
	}()
	err := l.c.DrainResponse()
	close(stop)
	<-done
	return err
}

// abandonedKillAfter are the waits between the kills of an abandoned
// read (about 30 s in all, as the frontend's repeats of a KILL QUERY).
var abandonedKillAfter = []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond,
	80 * time.Millisecond, 160 * time.Millisecond, 320 * time.Millisecond, 640 * time.Millisecond,
	time.Second, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 12 * time.Second}

// pop removes the head; l.mu is held.
func (l *Lane) pop() {
	n := copy(l.queue, l.queue[1:]) // a few turns: cheaper than a ring
	l.queue[n] = nil
	l.queue = l.queue[:n]
}

// Abandon gives up t (KILL QUERY of its statement) unless it is the head,
// whose answer is being read: then the server may be running its
// statement, and it reports true. An abandoned turn's Wait returns
// ErrTurnAbandoned at once; its answer is read and dropped by the turn
// before it.
func (t *Turn) Abandon() (head bool) {
	l := t.lane
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil || len(l.queue) == 0 {
		return false
	}
	if l.queue[0] == t {
		return true
	}
	t.abandoned = true
	select {
	case t.ready <- struct{}{}:
	default:
	}
	return false
}

// breakLocked stops the lane for err: every turn queued is woken to find
// it broken (ErrLaneBroken), and the connection is closed so that the
// head's read ends too. l.mu is held.
func (l *Lane) breakLocked(err error) {
	if l.err != nil {
		return
	}
	l.err = err
	l.pool.log.Warn("pipelined backend connection failed; its statements run again on connections of their own",
		"backend", l.pool.Addr(), "thread_id", l.c.ThreadID, "err", err)
	for _, t := range l.queue {
		select {
		case t.ready <- struct{}{}:
		default:
		}
	}
	l.queue = nil
	_ = l.c.Close()
}

// Retire takes the lane out of use: it takes no more commands and its
// connection goes back to the pool once the answers queued are read.
// dirty says a statement changed the connection's state (a stored
// function setting a variable): the connection is then closed instead.
func (l *Lane) Retire(dirty bool) {
	l.pool.dropLane(l)
	l.mu.Lock()
	l.retired = true
	l.dirty = l.dirty || dirty
	leave := len(l.queue) == 0 && l.err == nil
	l.mu.Unlock()
	if leave {
		l.close(false)
	}
}

// close gives the lane's connection back to the pool, or discards it when
// the lane broke or its state is not known; once.
func (l *Lane) close(failed bool) {
	l.pool.dropLane(l)
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	dirty := l.dirty
	l.mu.Unlock()
	switch {
	case failed:
		l.pool.Discard(l.c, true)
	case dirty:
		l.pool.Discard(l.c, false)
	default:
		l.pool.Release(l.c)
	}
}

// inFlight is how many commands wait for their answers on l.
func (l *Lane) inFlight() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil || l.retired {
		return -1
	}
	return len(l.queue)
}

// laneSet is a pool's lanes, under a lock of their own: picking one must
// not wait for the pool's acquires and releases.
type laneSet struct {
	mu  sync.Mutex
	all []*Lane
	// The limits (PoolConfig.PipelineConnections, PipelineDepth), set by
	// NewPool and SetConfig; on is max > 0, read without the lock.
	max, depth int
	on         atomic.Bool
}

// Pipelines reports whether the pool may pipeline (pipeline_connections
// above 0).
func (p *Pool) Pipelines() bool { return p.lanes.on.Load() }

// PickLane returns the lane for a statement of a session in the state
// (db, vars of fingerprint fp, foundRows) with the fewest commands in
// flight, if one has fewer than pipeline_depth. Otherwise open says
// whether the caller may open one (OpenLane): the pool has fewer than
// pipeline_connections lanes, or one of another state idle, which it
// retires. Neither: the statement runs the one-at-a-time way.
func (p *Pool) PickLane(db string, fp uint64, vars Vars, foundRows bool) (l *Lane, open bool) {
	ls := &p.lanes
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.max == 0 {
		return nil, false
	}
	best, bestN := (*Lane)(nil), ls.depth
	var idle *Lane
	for _, x := range ls.all {
		n := x.inFlight()
		c := x.c
		if c.DB != db || c.VarsFP != fp || c.FoundRows != foundRows || !c.Vars.Equal(vars) {
			if n == 0 && idle == nil {
				idle = x
			}
			continue
		}
		if n >= 0 && n < bestN {
			best, bestN = x, n
		}
	}
	if best != nil {
		return best, false
	}
	if len(ls.all) < ls.max {
		return nil, true
	}
	if idle != nil {
		go idle.Retire(false) // it takes ls.mu
		return nil, true
	}
	return nil, false
}

// OpenLane makes c, a connection of p in the state of the sessions it is
// to serve, a lane, unless the pool has its pipeline_connections already
// (ok false: c is still the caller's).
func (p *Pool) OpenLane(c *Conn) (l *Lane, ok bool) {
	ls := &p.lanes
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if len(ls.all) >= ls.max {
		return nil, false
	}
	c.DropDeferredSync()
	l = newLane(p, c)
	ls.all = append(ls.all, l)
	return l, true
}

// dropLane forgets l, retired or broken.
func (p *Pool) dropLane(l *Lane) {
	ls := &p.lanes
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for i, x := range ls.all {
		if x == l {
			ls.all = append(ls.all[:i], ls.all[i+1:]...)
			return
		}
	}
}

// setLaneLimits applies the pipelining limits; lanes beyond max retire.
func (p *Pool) setLaneLimits(max, depth int) {
	ls := &p.lanes
	ls.mu.Lock()
	ls.max, ls.depth = max, depth
	ls.on.Store(max > 0)
	var surplus []*Lane
	if len(ls.all) > max {
		surplus = append(surplus, ls.all[max:]...)
	}
	ls.mu.Unlock()
	for _, l := range surplus {
		l.Retire(false)
	}
}

// Lanes reports how many lanes the pool has and how many commands are in
// flight on them, for metrics and tests.
func (p *Pool) Lanes() (lanes, inFlight int) {
	ls := &p.lanes
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, l := range ls.all {
		if n := l.inFlight(); n > 0 {
			inFlight += n
		}
	}
	return len(ls.all), inFlight
}
