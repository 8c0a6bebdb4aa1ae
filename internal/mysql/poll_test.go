package mysql

import (
	"net"
	"runtime"
	"testing"
	"time"
)

// writeSoon writes b to w a moment later, likely after the reader has
// started to wait (either way the reader gets it).
func writeSoon(w net.Conn, b []byte) {
	go func() {
		time.Sleep(2 * time.Millisecond)
		_, _ = w.Write(b)
	}()
}

// writeWhenPolling writes b to w once a wait polls on p: then, and only
// then, the poll is what finds the input. (Writing after a fixed delay
// raced with the reader: on a busy machine the reader may start its wait
// after the write, find the input at its first read and never poll.)
func writeWhenPolling(p *Poller, w net.Conn, b []byte) {
	go func() {
		for p.spinning.Load() == 0 {
			runtime.Gosched()
		}
		_, _ = w.Write(b)
	}()
}

// pollBudget is the tests' budget for a poll that must catch its input:
// ample, since a poll ends as soon as the input is there, and a budget
// that ran out while the writer waited for a CPU would fail the test.
const pollBudget = 10 * time.Second

// quietPoller returns a Poller whose traffic has been single-stream long
// enough for waits to poll.
func quietPoller(budget time.Duration) *Poller {
	p := NewPoller(budget, 2)
	p.streak.Store(quietCommands)
	return p
}

func TestPollerIsOffWithoutBudgetOrSecondCPU(t *testing.T) {
	if NewPoller(0, 8) != nil || NewPoller(-time.Microsecond, 8) != nil {
		t.Error("a zero or negative budget must turn polling off")
	}
	if NewPoller(time.Millisecond, 1) != nil {
		t.Error("one CPU: polling would only delay the peer, it must be off")
	}
	var p *Poller
	p.Begin(1) // nil-safe
	if p.acquire() {
		t.Error("a nil Poller must never poll")
	}
}

// Waits poll only once quietCommands commands in a row came from one
// session, and only one at a time.
func TestPollerGate(t *testing.T) {
	p := NewPoller(time.Millisecond, 2)
	if k1, k2 := p.Key(), p.Key(); k1 == 0 || k1 == k2 {
		t.Fatalf("session keys %d, %d: want distinct and non-zero", k1, k2)
	}
	if p.acquire() {
		t.Fatal("a new Poller must first see single-stream traffic")
	}
	for i := 0; i < quietCommands; i++ {
		if p.acquire() {
			t.Fatalf("polled after %d commands in a row, want %d", i, quietCommands)
		}
		p.Begin(1)
	}
	if !p.acquire() {
		t.Fatal("single-stream traffic must poll")
	}
	if p.acquire() {
		t.Fatal("a second wait must not poll while one does")
	}
	p.release()
	if !p.acquire() {
		t.Fatal("polling must be possible again after release")
	}
	p.release()
	p.Begin(2)
	if p.acquire() {
		t.Fatal("a second busy session must stop polling")
	}
	p.Begin(1)
	for i := 1; i < quietCommands; i++ {
		p.Begin(2)
	}
	if p.acquire() {
		t.Fatal("one command short of a full streak must not poll")
	}
	p.Begin(2)
	if !p.acquire() {
		t.Fatal("polling must resume once traffic is single-stream again")
	}
	p.release()
}

// A wait that polls catches input that arrives within the budget without
// parking; with the gate closed it parks and still gets the input.
func TestWaitInputPolls(t *testing.T) {
	a, b := tcpPair(t)
	c := NewConn(a)
	c.Poller = quietPoller(pollBudget)
	writeWhenPolling(c.Poller, b, []byte{1, 0, 0, 0, 9})
	if err := c.WaitInput(time.Second); err != nil {
		t.Fatal(err)
	}
	if c.Buffered() != 5 {
		t.Fatalf("buffered %d bytes, want 5", c.Buffered())
	}
	if caught, missed := c.Poller.Stats(); caught != 1 || missed != 0 {
		t.Fatalf("caught %d missed %d, want one caught poll", caught, missed)
	}
	if !c.WaitStart.IsZero() {
		t.Error("a wait that polled its input must not count as parked")
	}

	// Gate closed: no poll, the wait parks and wakes on the data.
	c.ReleaseBuffers()
	c.Poller.Begin(7)
	writeSoon(b, []byte{1, 0, 0, 0, 8})
	c.rpos, c.rend = 0, 0
	if err := c.WaitInput(time.Second); err != nil {
		t.Fatal(err)
	}
	if caught, missed := c.Poller.Stats(); caught != 1 || missed != 0 {
		t.Fatalf("caught %d missed %d after a closed gate, want no new poll", caught, missed)
	}
}

// A command written by FlushForReply polls for its reply; a reply slower
// than the budget is still read after the wait parks.
func TestFlushForReplyPollsForReply(t *testing.T) {
	a, b := tcpPair(t)
	go echoServer(b)
	c := NewConn(a)
	c.Poller = quietPoller(pollBudget)
	if err := c.WritePacket([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if err := c.FlushForReply(); err != nil {
		t.Fatal(err)
	}
	p, err := c.ReadPacket()
	if err != nil || string(p) != "ping" {
		t.Fatalf("reply %q, %v", p, err)
	}
	if caught, _ := c.Poller.Stats(); caught != 1 {
		t.Fatalf("caught %d polls, want 1", caught)
	}

	c.Poller = quietPoller(time.Nanosecond) // runs out at once
	c.ResetSeq()
	if err := c.WritePacket([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if err := c.FlushForReply(); err != nil {
		t.Fatal(err)
	}
	if p, err = c.ReadPacket(); err != nil || string(p) != "pong" {
		t.Fatalf("reply %q, %v", p, err)
	}
}

// An ordinary read that finds nothing (the rest of a result, a reply to a
// command written with Flush) polls too.
func TestReadPolls(t *testing.T) {
	a, b := tcpPair(t)
	c := NewConn(a)
	c.Poller = quietPoller(pollBudget)
	writeWhenPolling(c.Poller, b, []byte{2, 0, 0, 0, 'h', 'i'})
	p, err := c.ReadPacket()
	if err != nil || string(p) != "hi" {
		t.Fatalf("read %q, %v", p, err)
	}
	if caught, _ := c.Poller.Stats(); caught != 1 {
		t.Fatalf("caught %d polls, want 1", caught)
	}
}
