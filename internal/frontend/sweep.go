package frontend

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
)

// A session waiting for its next command must move to the parker once it
// has been idle for a while (parkIdleAfter). Arming a read deadline for that
// on every wait, and clearing it when the command came, cost a clock read,
// two runtime timer updates and the scheduler's timer checks per query:
// about 8% of the proxy's user CPU at 16 sysbench threads (perf,
// oltp_read_only). Instead the wait has no deadline, and a sweep that runs
// every sweepEvery interrupts the waits it finds still the same wait as the
// sweep before. A wait is thus interrupted after between one and two sweep
// intervals, with nothing done per query but two atomic operations.

// sweepEvery is the sweep interval: a wait is interrupted after between
// sweepEvery and 2*sweepEvery.
const sweepEvery = parkIdleAfter / 2

// States of an idleWait.
const (
	waitBusy     uint32 = iota // not in an untimed wait
	waitFresh                  // waiting, not yet seen by a sweep
	waitSeen                   // waiting, seen by the previous sweep
	waitStopping               // a sweep is interrupting the wait
	waitStopped                // a sweep interrupted it: the read deadline is in the past
)

// idleWait is one session's untimed wait for input, which a sweep can
// interrupt.
type idleWait struct{ state atomic.Uint32 }

// wait waits for input on c without a deadline. It returns c.WaitInput's
// error, a timeout when a sweep interrupted the wait, and it leaves c
// without a deadline either way.
func (w *idleWait) wait(c *mysql.Conn) error {
	w.state.Store(waitFresh)
	err := c.WaitInput(0)
	for {
		switch st := w.state.Load(); st {
		case waitFresh, waitSeen:
			if w.state.CompareAndSwap(st, waitBusy) {
				return err // no sweep touches c from here on
			}
		case waitStopping:
			runtime.Gosched() // the sweep is setting the deadline
		default: // waitStopped
			w.state.Store(waitBusy)
			if derr := c.NetConn().SetReadDeadline(time.Time{}); derr != nil && err == nil {
				err = derr
			}
			return err // nil when input won the race: serve it
		}
	}
}

// sweep advances the wait by one sweep and interrupts it when it has been
// waiting since before the previous sweep.
func (w *idleWait) sweep(c *mysql.Conn) {
	if w.state.CompareAndSwap(waitFresh, waitSeen) || !w.state.CompareAndSwap(waitSeen, waitStopping) {
		return
	}
	_ = c.NetConn().SetReadDeadline(time.Now())
	w.state.Store(waitStopped)
}

// sweepIdle interrupts long waits for a command every sweepEvery until
// stop is closed, so that their sessions park (see waitCommand).
func (s *Server) sweepIdle(stop <-chan struct{}) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	var buf []*Session
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		s.sessions.each(&buf, func(sess *Session) bool {
			sess.idleWait.sweep(sess.client)
			return true
		})
		s.parker.expire(time.Now())
		connects := counterValue(s.opt.Metrics.ClientConnects)
		s.relief.sweep(s.parker.count(), int(s.count.Load()), connects, connects+counterValue(s.opt.Metrics.Commands), time.Now())
	}
}
