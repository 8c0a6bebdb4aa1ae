package frontend

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
)

// loopbackPair returns the two ends of a TCP connection over loopback.
func loopbackPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func send(t *testing.T, c *mysql.Conn, p string) {
	t.Helper()
	c.ResetSeq()
	if err := c.WritePacket([]byte(p)); err != nil {
		t.Error(err)
	}
	if err := c.Flush(); err != nil {
		t.Error(err)
	}
}

// whenWaiting runs f in a goroutine once w has begun a wait; the channel
// closes when f has run.
func whenWaiting(w *idleWait, f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for w.state.Load() != waitFresh {
			time.Sleep(time.Millisecond)
		}
		f()
	}()
	return done
}

func wantPacket(t *testing.T, c *mysql.Conn, want string) {
	t.Helper()
	if p, err := c.ReadPacket(); err != nil || string(p) != want {
		t.Fatalf("got %q, %v; want %q", p, err, want)
	}
}

// A wait survives the first sweep that sees it and is interrupted by the
// second; the connection is left without a deadline.
func TestIdleWaitInterruptedBySecondSweep(t *testing.T) {
	a, b := loopbackPair(t)
	peer, c := mysql.NewConn(a), mysql.NewConn(b)
	var w idleWait
	done := make(chan error, 1)
	go func() { done <- w.wait(c) }()
	<-whenWaiting(&w, func() {})
	time.Sleep(20 * time.Millisecond)
	w.sweep(c)
	select {
	case err := <-done:
		t.Fatalf("the first sweep ended the wait: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	w.sweep(c)
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the second sweep did not interrupt the wait")
	}
	if !isTimeout(err) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("interrupted wait: got %v, want a timeout", err)
	}
	if st := w.state.Load(); st != waitBusy {
		t.Fatalf("state after the wait: %d", st)
	}
	// No deadline is left behind: a later wait sees later input.
	go func() { time.Sleep(50 * time.Millisecond); send(t, peer, "later") }()
	if err := w.wait(c); err != nil {
		t.Fatalf("wait after an interrupted one: %v", err)
	}
	wantPacket(t, c, "later")
}

// A wait that ends between sweeps starts over: the next wait must again be
// seen by two sweeps before it is interrupted.
func TestIdleWaitEndedBetweenSweepsStartsOver(t *testing.T) {
	a, b := loopbackPair(t)
	peer, c := mysql.NewConn(a), mysql.NewConn(b)
	var w idleWait
	sent := whenWaiting(&w, func() {
		w.sweep(c) // seen once
		send(t, peer, "one")
	})
	if err := w.wait(c); err != nil {
		t.Fatal(err)
	}
	<-sent
	wantPacket(t, c, "one")
	w.sweep(c) // no wait in progress: nothing to do
	sent = whenWaiting(&w, func() {
		w.sweep(c) // the new wait, seen once: not interrupted
		time.Sleep(50 * time.Millisecond)
		send(t, peer, "two")
	})
	if err := w.wait(c); err != nil {
		t.Fatalf("a wait seen by one sweep was interrupted: %v", err)
	}
	<-sent
	wantPacket(t, c, "two")
}

// Sweeps racing with arriving input never lose a command or leave a stale
// deadline that cuts a later read short.
func TestIdleWaitRacingSweeps(t *testing.T) {
	a, b := loopbackPair(t)
	peer, c := mysql.NewConn(a), mysql.NewConn(b)
	var w idleWait
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			w.sweep(c)
		}
	}()
	const n = 2000
	go func() {
		for i := 0; i < n; i++ {
			send(t, peer, "cmd")
			if i%100 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	interrupted := 0
	for got := 0; got < n; {
		err := w.wait(c)
		if err != nil {
			if !isTimeout(err) {
				t.Fatalf("after %d commands: %v", got, err)
			}
			interrupted++
			continue
		}
		// The buffered packets (the last may be partial: its read then
		// blocks, which no sweep may interrupt outside a wait).
		for c.Buffered() > 0 {
			if p, err := c.ReadPacket(); err != nil || string(p) != "cmd" {
				t.Fatalf("command %d: got %q, %v (a stale deadline?)", got, p, err)
			}
			got++
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d waits interrupted by sweeps", interrupted)
}

func TestMemoryReliefAfterABurst(t *testing.T) {
	freed := 0
	m := memoryRelief{free: func() { freed++ }}
	t0 := time.Unix(1000, 0)
	steps := []struct {
		parked, clients    int
		connects, activity uint64
		at                 time.Duration
		want               bool
	}{
		{0, 0, 0, 0, 0, false},
		{999, 999, 999, 1000, time.Second, false},
		{999, 999, 999, 1000, 2 * time.Second, false},    // quiet, but no burst
		{5000, 5000, 5000, 5100, 3 * time.Second, false}, // a burst still running
		{9000, 9000, 9000, 9100, 4 * time.Second, false},
		{9000, 9000, 9000, 9100, 5 * time.Second, true},            // quiet: relief
		{9500, 9000, 9000, 9200, 6 * time.Second, false},           // not enough more
		{11000, 11000, 9000, 9200, 6500 * time.Millisecond, false}, // within reliefEvery
		{11000, 11000, 9000, 9200, 8 * time.Second, true},          // the rest of the burst parked
		{11000, 11000, 9000, 9200, 11 * time.Second, false},        // nothing new
		{11000, 13000, 12000, 15000, 12 * time.Second, false},      // a login flood...
		{11000, 13000, 12000, 15000, 13 * time.Second, true},       // ...over: relief
		{200, 13000, 12000, 15100, 14 * time.Second, false},        // clients woke up
		{1300, 13000, 12000, 15200, 15 * time.Second, false},       // parked again, still busy
		{1300, 13000, 12000, 15200, 16 * time.Second, true},        // and quiet
		{1300, 12500, 12000, 15200, 19 * time.Second, false},       // logins of the flood end...
		{1300, 11900, 12000, 15200, 20 * time.Second, true},        // ...1,000 and more of them: relief
		{1300, 11900, 12000, 15200, 23 * time.Second, false},       // nothing new
	}
	for i, st := range steps {
		if got := m.sweep(st.parked, st.clients, st.connects, st.activity, t0.Add(st.at)); got != st.want {
			t.Fatalf("step %d (%+v): relief %v, want %v", i, st, got, st.want)
		}
	}
	if freed != 5 {
		t.Fatalf("freed %d times, want 5", freed)
	}
}
