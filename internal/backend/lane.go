package backend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
)

// A Lane is a backend connection that carries the statements of several
// sessions at once (pool.pipeline_connections, issue 23): each session
// writes its command as soon as it has one, without waiting for the
// answers of the commands before it, and the server finds the next
// command in its socket when it finishes one, instead of going to sleep
// and being woken for it, which spares it CPU per statement
// (docs/benchmarks.md).
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
// (one write system call for several commands under load). One goroutine
// per lane reads the answers, in order, each into its session's client
// output (Turn), and wakes the session, which flushes it: the lane's
// reading never waits for a session to be scheduled, nor for a client's
// socket unless an answer outgrows the output buffer.
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
	sends   uint64  // commands queued since it opened
	seen    uint64  // sends at the pool's previous tick (retireIdleLanes)
}

// A Turn is one command's place in a lane's queue: where its answer goes,
// and what it was.
type Turn struct {
	lane *Lane
	done chan struct{} // a token once the answer is in the client's output, or the turn ended otherwise

	// Set by the session before Send.
	client *mysql.Conn
	caps   uint32
	rename mysql.TableRenamer

	// Set by the lane before done.
	Info mysql.ResponseInfo // the answer's, its SessionState the turn's own copy
	// Err is why the answer was not relayed whole: ErrLaneBroken when
	// none of it was (it may not have run), a *mysql.RelayError when the
	// lane failed or the client did mid-answer, ErrTurnAbandoned.
	Err error
	// Sent: part of the answer was written to the client already (an
	// answer larger than the output buffer): it cannot run again.
	Sent bool

	reading   bool // the lane is reading its answer
	abandoned bool // its session left (KILL): its answer is read and dropped
	ping      bool // Retire's COM_PING, which wakes the reader to leave
	state     []byte
}

// Lane errors. ErrLaneBroken and ErrLaneClosed mean the command did not
// have its answer, and may not have run: the caller runs it again on a
// connection of its own (a lane carries only statements that may run
// twice).
var (
	ErrLaneBroken    = errors.New("pipelined connection failed")
	ErrLaneClosed    = errors.New("pipelined connection closed")
	ErrTurnAbandoned = errors.New("pipelined statement abandoned")
)

// turns recycles Turns: one per statement otherwise.
var turns = sync.Pool{New: func() any { return &Turn{done: make(chan struct{}, 1)} }}

// newLane makes c, a connection taken from p and in the state it serves, a
// lane, and starts its reader.
func newLane(p *Pool, c *Conn) *Lane {
	l := &Lane{c: c, pool: p}
	go l.read()
	return l
}

// Conn returns the lane's connection: its state says which sessions it
// serves. Only the lane reads from it.
func (l *Lane) Conn() *Conn { return l.c }

// Send queues command p (a whole packet's payload, command byte first),
// whose answer goes to client (of capabilities caps, table names passed
// through rename), and writes it, with the commands others queued
// meanwhile. The Turn it returns is the caller's: Wait for the answer,
// then Release it.
func (l *Lane) Send(p []byte, client *mysql.Conn, caps uint32, rename mysql.TableRenamer) (*Turn, error) {
	if len(p) >= mysql.MaxPayload {
		return nil, ErrLaneClosed
	}
	t := turns.Get().(*Turn)
	t.lane, t.client, t.caps, t.rename = l, client, caps, rename
	t.Err, t.Sent, t.reading, t.abandoned = nil, false, false, false
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
	l.sends++
	l.writeOut()
	l.mu.Unlock()
	return t, nil // a failed write ended t with ErrLaneBroken
}

// writeOut writes the commands queued unless another sender is writing,
// which then writes them with its own. l.mu is held, and released while
// writing.
func (l *Lane) writeOut() {
	if l.writing {
		return
	}
	l.writing = true
	for len(l.out) > 0 && l.err == nil {
		buf := l.out
		l.out, l.spare = l.spare[:0], nil
		l.mu.Unlock()
		// Not through the mysql.Conn, which the reader uses: a net.Conn
		// may be written while another goroutine reads it.
		_, err := l.c.NetConn().Write(buf)
		l.mu.Lock()
		l.spare = buf[:0]
		if err != nil {
			l.breakLocked(fmt.Errorf("write: %w", err))
		}
	}
	l.writing = false
}

// Wait blocks until t's answer is in its client's output (unflushed), or
// t ended otherwise (Err).
func (t *Turn) Wait() { <-t.done }

// Release gives t back once its results are read.
func (t *Turn) Release() {
	if t.abandoned {
		return // the lane still holds it, to drop its answer
	}
	t.client, t.rename = nil, nil
	turns.Put(t)
}

// Lane returns the lane t is queued on.
func (t *Turn) Lane() *Lane { return t.lane }

// read is the lane's reader: it waits for input on the connection (an
// idle lane costs a parked goroutine, no wake-up per command), relays each
// answer in turn into its session's client output, drops those of
// abandoned turns, and ends with the lane.
func (l *Lane) read() {
	for {
		l.mu.Lock()
		if l.err != nil || l.retired && len(l.queue) == 0 {
			failed := l.err != nil
			l.mu.Unlock()
			l.close(failed)
			return
		}
		// An abandoned turn at the head is killed at once, before its
		// answer comes: it may run for long.
		ahead := len(l.queue) > 0 && l.queue[0].abandoned
		l.mu.Unlock()
		if !ahead {
			if err := l.c.WaitInput(0); err != nil {
				l.mu.Lock()
				l.breakLocked(fmt.Errorf("read: %w", err))
				l.mu.Unlock()
				continue
			}
		}
		l.mu.Lock()
		if len(l.queue) == 0 {
			// Not an answer: the server's word before it closes the
			// connection (or garbage).
			l.breakLocked(errors.New("the server sent a packet no command asked for"))
			l.mu.Unlock()
			continue
		}
		t := l.queue[0]
		t.reading = true
		abandoned := t.abandoned
		l.mu.Unlock()
		var err error
		switch {
		case t.ping:
			err = l.c.DrainResponse()
		case abandoned:
			err = l.drainAbandoned()
			if mysql.IsSQLError(err) {
				err = nil
			}
		default:
			err = l.relay(t)
		}
		l.mu.Lock()
		l.pop()
		if err != nil {
			l.breakLocked(err)
		} else if !abandoned && !t.ping && (len(t.Info.SessionState) > 0 || t.Info.Status&mysql.StatusInTrans != 0) {
			// The read changed the connection's state (a stored function
			// setting a variable): no more reads go there, and its
			// connection is closed once the answers queued are read.
			l.retired, l.dirty = true, true
		}
		if !t.abandoned {
			t.Err = err
			t.done <- struct{}{}
		}
		l.mu.Unlock()
		if err == nil && !abandoned {
			l.pool.Stats.Pipelined.Add(1)
		}
	}
}

// relay reads t's answer into its client's output.
func (l *Lane) relay(t *Turn) error {
	r := l.c.Relay(t.client, t.caps)
	r.RenameTable, r.HoldFlush = t.rename, true
	mark := t.client.BytesWritten()
	err := r.Query()
	t.Sent = t.client.BytesWritten() != mark
	t.Info = r.Info
	t.state = append(t.state[:0], r.Info.SessionState...)
	t.Info.SessionState = t.state
	return err
}

// drainAbandoned reads and drops the answer of an abandoned turn: its
// session was answered 1317 (KILL QUERY) and left, but the server runs
// its statement, which could hold the lane for as long as it runs. It is
// killed, and killed again while its answer has not come: a kill that
// reaches the server thread before it read the statement is lost. A kill
// that reaches the statement after it instead is answered 1317, which
// the frontend runs again for a session that did not ask.
func (l *Lane) drainAbandoned() error {
	if err := l.c.WaitInput(abandonedGrace); err == nil {
		return l.c.DrainResponse() // it ended on its own: no kill to miss it
	} else if !isTimeout(err) {
		return err
	}
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

// abandonedGrace is how long an abandoned read may take to answer before
// it is killed: most reads end in less, and a kill after a read has ended
// reaches the one behind it.
const abandonedGrace = 50 * time.Millisecond

// isTimeout reports a wait that timed out.
func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
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

// Abandon gives up t (KILL QUERY of its statement) unless it is the head:
// then it reports whether the server may still be running its statement,
// whose answer has not begun to come (the caller kills it there). An abandoned turn's Wait returns at once with
// ErrTurnAbandoned; its answer is read and dropped.
func (t *Turn) Abandon() (reading bool) {
	l := t.lane
	l.mu.Lock()
	defer l.mu.Unlock()
	i := slices.Index(l.queue, t)
	switch {
	case i == 0:
		// The server runs it, unless its answer has begun to come: then
		// it has run (or is sending its rows), and a kill would reach the
		// statement after it.
		return !t.reading
	case i < 0 || t.abandoned:
		return false // ended already
	}
	t.abandoned = true
	t.Err = ErrTurnAbandoned
	t.done <- struct{}{}
	return false
}

// breakLocked stops the lane for err: every turn queued but not being
// read ends with ErrLaneBroken (the reader ends the one it reads), and the
// connection is closed so that the reader's read ends too. l.mu is held.
func (l *Lane) breakLocked(err error) {
	if l.err != nil {
		return
	}
	l.err = err
	l.pool.log.Warn("pipelined backend connection failed; its statements run again on connections of their own",
		"backend", l.pool.Addr(), "thread_id", l.c.ThreadID, "err", err)
	for _, t := range l.queue {
		if !t.reading && !t.abandoned {
			t.Err = ErrLaneBroken
			t.done <- struct{}{}
		}
	}
	if len(l.queue) > 0 && l.queue[0].reading {
		l.queue = l.queue[:1]
	} else {
		l.queue = l.queue[:0]
	}
	_ = l.c.Close()
}

// Retire takes the lane out of use: it takes no more commands and its
// connection goes back to the pool once the answers queued are read.
func (l *Lane) Retire() {
	l.pool.dropLane(l)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.retired || l.err != nil {
		return
	}
	l.retired = true
	// A COM_PING after the last command: its answer wakes the reader,
	// which waits for input, to find the queue empty and leave.
	ping := &Turn{lane: l, done: make(chan struct{}, 1), ping: true, abandoned: true}
	l.queue = append(l.queue, ping)
	l.out = append(l.out, 1, 0, 0, 0, mysql.ComPing)
	l.writeOut()
}

// close gives the lane's connection back to the pool, or discards it when
// the lane broke or its state is not known. The reader calls it as it
// ends.
func (l *Lane) close(failed bool) {
	l.pool.dropLane(l)
	l.mu.Lock()
	dirty := l.dirty
	// A client that failed mid-answer leaves the connection out of step,
	// not the server in doubt: the pool's other connections stay.
	serverFailed := failed && !clientFailure(l.err)
	l.mu.Unlock()
	switch {
	case failed || dirty:
		l.pool.Discard(l.c, serverFailed)
	default:
		l.pool.Release(l.c)
	}
}

// clientFailure reports a relay error on the client's side.
func clientFailure(err error) bool {
	var re *mysql.RelayError
	return errors.As(err, &re) && !re.Backend
}

// inFlight is how many commands wait for their answers on l; -1 when it
// takes no more.
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
// flight, and whether it has pipeline_depth of them already (full).
// Without one, open says whether the caller may open one (OpenLane): the
// pool has fewer than pipeline_connections lanes, or one of another state
// idle, which it retires.
func (p *Pool) PickLane(db string, fp uint64, vars Vars, foundRows bool) (l *Lane, full, open bool) {
	ls := &p.lanes
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.max == 0 {
		return nil, false, false
	}
	bestN := 0
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
		if n >= 0 && (l == nil || n < bestN) {
			l, bestN = x, n
		}
	}
	switch {
	case l != nil && (bestN < ls.depth || len(ls.all) >= ls.max):
		return l, bestN >= ls.depth, false
	case len(ls.all) < ls.max:
		return nil, false, true
	case idle != nil:
		go idle.Retire() // it takes ls.mu
		return nil, false, true
	}
	return l, true, false
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
		l.Retire()
	}
}

// retireIdleLanes retires the lanes that took no command since the
// previous tick, and those older than max_lifetime: a burst of reads does
// not keep connections from writes and transactions after it, and a lane
// is rotated as other connections are (retired, its connection goes back
// to the pool, which closes it when too old).
func (p *Pool) retireIdleLanes(cfg PoolConfig) {
	ls := &p.lanes
	ls.mu.Lock()
	var idle []*Lane
	for _, l := range ls.all {
		l.mu.Lock()
		if l.sends == l.seen && len(l.queue) == 0 || cfg.MaxLifetime > 0 && time.Since(l.c.createdAt) > cfg.MaxLifetime {
			idle = append(idle, l)
		}
		l.seen = l.sends
		l.mu.Unlock()
	}
	ls.mu.Unlock()
	for _, l := range idle {
		l.Retire()
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
