package mysql

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (a, b net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			ch <- nil
			return
		}
		ch <- c
	}()
	a, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b = <-ch
	if b == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func TestSocketUsesRawIOOnTCP(t *testing.T) {
	a, _ := tcpPair(t)
	c := NewConn(a)
	if !c.rawSocket() {
		t.Fatal("a *net.TCPConn must be driven through its raw socket")
	}
	// After a TLS-style upgrade the new layer is not a socket.
	c.Upgrade(func(nc net.Conn) net.Conn { return struct{ net.Conn }{nc} })
	if c.rawSocket() {
		t.Fatal("an upgraded connection must not use the raw socket underneath")
	}
}

// A packet larger than the socket buffers makes the raw write meet EAGAIN
// and continue after the poller reports the socket writable; the reader
// must receive every byte in order.
func TestSocketLargeWriteAndReadRoundTrip(t *testing.T) {
	a, b := tcpPair(t)
	w, r := NewConn(a), NewConn(b)
	payload := bytes.Repeat([]byte("0123456789abcdef"), (MaxPayload*2+1000)/16)
	errc := make(chan error, 1)
	go func() {
		if err := w.WritePacket(payload); err != nil {
			errc <- err
			return
		}
		errc <- w.Flush()
	}()
	time.Sleep(50 * time.Millisecond) // let the writer fill the socket buffers
	got, err := r.ReadPacket()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, payload) {
		t.Fatalf("read %d bytes, want the %d written", len(got), len(payload))
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func TestSocketReadEOFAndClosedErrors(t *testing.T) {
	a, b := tcpPair(t)
	r := NewConn(b)
	a.Close()
	if _, err := r.ReadPacket(); !errors.Is(err, io.EOF) {
		t.Fatalf("peer closed: got %v, want io.EOF", err)
	}

	a2, b2 := tcpPair(t)
	_ = a2
	r2 := NewConn(b2)
	go func() { time.Sleep(50 * time.Millisecond); b2.Close() }()
	if _, err := r2.ReadPacket(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("closed while reading: got %v, want net.ErrClosed", err)
	}
	if _, err := r2.writeAll([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("write after close: got %v, want net.ErrClosed", err)
	}
}

func TestSocketWriteToResetPeer(t *testing.T) {
	a, b := tcpPair(t)
	_ = b.(*net.TCPConn).SetLinger(0)
	b.Close() // RST
	w := NewConn(a)
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = w.writeAll([]byte("hello"))
		time.Sleep(time.Millisecond)
	}
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("write to a reset peer: got %v, want ECONNRESET or EPIPE", err)
	}
}

func TestWaitInputReadsWhatIsThereWithoutDeadline(t *testing.T) {
	a, b := tcpPair(t)
	w, r := NewConn(a), NewConn(b)
	if err := w.WritePacket([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if err := r.WaitInput(time.Second); err != nil {
		t.Fatal(err)
	}
	if !r.WaitStart.IsZero() {
		t.Fatal("input was already there: WaitInput must not have waited")
	}
	if p, err := r.ReadPacket(); err != nil || string(p) != "ping" {
		t.Fatalf("got %q, %v", p, err)
	}
}

// While waiting the connection holds no buffers; the timeout fires; and the
// deadline it armed is gone afterwards, so a later slow read is not cut
// short (a stale deadline once broke LOAD DATA LOCAL uploads slower than
// the idle wait).
func TestWaitInputReleasesBuffersTimesOutAndClearsDeadline(t *testing.T) {
	a, b := tcpPair(t)
	w, r := NewConn(a), NewConn(b)
	r.ensureReadBuf()
	r.ensureWriteBuf()

	start := time.Now()
	err := r.WaitInput(100 * time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("got %v, want a timeout", err)
	}
	if d := time.Since(start); d < 90*time.Millisecond {
		t.Fatalf("timed out after %v, before the 100ms timeout", d)
	}
	if r.WaitStart.IsZero() {
		t.Fatal("WaitStart not set after a real wait")
	}
	if r.rbuf != nil || r.wbuf != nil {
		t.Fatal("buffers still held after waiting")
	}

	// Input that arrives after the old deadline would have passed; then
	// more input, read only after the second wait's deadline has passed.
	go func() {
		time.Sleep(200 * time.Millisecond)
		_ = w.WritePacket([]byte("late"))
		_ = w.Flush()
		time.Sleep(10 * time.Millisecond)
		_ = w.WritePacket([]byte("later"))
		_ = w.Flush()
	}()
	if err := r.WaitInput(time.Second); err != nil {
		t.Fatal(err)
	}
	p, err := r.ReadPacket()
	if err != nil || string(p) != "late" {
		t.Fatalf("got %q, %v", p, err)
	}
	time.Sleep(1100 * time.Millisecond) // past the second wait's deadline
	if p, err = r.ReadPacket(); err != nil || string(p) != "later" {
		t.Fatalf("read after an earlier wait's deadline: got %q, %v", p, err)
	}
}

func TestWaitInputWakesOnData(t *testing.T) {
	a, b := tcpPair(t)
	w, r := NewConn(a), NewConn(b)
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = w.WritePacket([]byte("wake"))
		_ = w.Flush()
	}()
	if err := r.WaitInput(0); err != nil {
		t.Fatal(err)
	}
	if p, err := r.ReadPacket(); err != nil || string(p) != "wake" {
		t.Fatalf("got %q, %v", p, err)
	}
}

// TryInput reads what is there without waiting: nothing (buffers given
// back, no deadline armed), then a packet, then the peer's close.
func TestTryInput(t *testing.T) {
	a, b := tcpPair(t)
	w, r := NewConn(a), NewConn(b)
	r.ensureReadBuf()
	r.ensureWriteBuf()
	start := time.Now()
	if ready, err := r.TryInput(); ready || err != nil {
		t.Fatalf("nothing sent: TryInput = %v, %v; want false, nil", ready, err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("TryInput waited %v", d)
	}
	if r.rbuf != nil || r.wbuf != nil || !r.WaitStart.IsZero() {
		t.Fatal("TryInput that found nothing kept its buffers or armed a deadline")
	}
	if err := w.WritePacket([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ready, err := r.TryInput()
		if err != nil {
			t.Fatal(err)
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("TryInput never saw the packet sent")
		}
		time.Sleep(time.Millisecond)
	}
	if p, err := r.ReadPacket(); err != nil || string(p) != "ping" {
		t.Fatalf("got %q, %v", p, err)
	}
	w.Close()
	for {
		ready, err := r.TryInput()
		if ready {
			if err != io.EOF {
				t.Fatalf("after the peer closed: TryInput = true, %v; want io.EOF", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("TryInput never saw the close")
		}
		time.Sleep(time.Millisecond)
	}
}

// echoServer answers each packet read from c with the same packet.
func echoServer(c net.Conn) {
	s := NewConn(c)
	for {
		p, err := s.ReadPacket()
		if err != nil {
			return
		}
		s.ResetSeq()
		if s.WritePacket(p) != nil || s.Flush() != nil {
			return
		}
	}
}

// FlushForReply leaves the write to the read of the reply; commands small
// and larger than the socket buffers both arrive whole.
func TestFlushForReplyRoundTrips(t *testing.T) {
	a, b := tcpPair(t)
	go echoServer(b)
	c := NewConn(a)
	for _, size := range []int{1, 100, 64 << 10, 4 << 20} {
		cmd := bytes.Repeat([]byte{byte(size)}, size)
		c.ResetSeq()
		if err := c.WritePacket(cmd); err != nil {
			t.Fatal(err)
		}
		if err := c.FlushForReply(); err != nil {
			t.Fatal(err)
		}
		got, err := c.ReadPacket()
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if !bytes.Equal(got, cmd) {
			t.Fatalf("size %d: reply of %d bytes differs", size, len(got))
		}
		if c.replyPending || c.Pending() != 0 {
			t.Fatalf("size %d: output left pending", size)
		}
	}
}

// A peer that closed before the command: the command's write or the read
// of its reply fails; it never hangs.
func TestFlushForReplyToClosedPeer(t *testing.T) {
	for _, linger := range []bool{false, true} {
		a, b := tcpPair(t)
		if linger {
			_ = b.(*net.TCPConn).SetLinger(0) // close with RST
		}
		b.Close()
		time.Sleep(20 * time.Millisecond)
		c := NewConn(a)
		_ = a.SetDeadline(time.Now().Add(5 * time.Second))
		if err := c.WritePacket([]byte{ComPing}); err != nil {
			t.Fatal(err)
		}
		if err := c.FlushForReply(); err != nil {
			t.Fatal(err)
		}
		_, err := c.ReadPacket()
		if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("linger=%v: got %v, want a connection error", linger, err)
		}
	}
}

// Flush after FlushForReply writes at once (nothing stays deferred).
func TestFlushAfterFlushForReply(t *testing.T) {
	a, b := tcpPair(t)
	c, peer := NewConn(a), NewConn(b)
	if err := c.WritePacket([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := c.FlushForReply(); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	_ = b.SetReadDeadline(time.Now().Add(2 * time.Second))
	if p, err := peer.ReadPacket(); err != nil || string(p) != "x" {
		t.Fatalf("got %q, %v", p, err)
	}
}

// WatchClose calls back when the peer closes while nobody reads; its
// stop leaves the connection readable as before; input ends the watch
// unread, and a close after it is not reported.
func TestSocketWatchClose(t *testing.T) {
	t.Run("peer closes", func(t *testing.T) {
		a, b := tcpPair(t)
		closed := make(chan struct{})
		stop := NewConn(a).WatchClose(func() { close(closed) })
		defer stop()
		b.Close()
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Fatal("no callback 5s after the peer closed")
		}
	})
	t.Run("stopped, then read", func(t *testing.T) {
		a, b := tcpPair(t)
		c := NewConn(a)
		stop := c.WatchClose(func() { t.Error("closed called for an open connection") })
		stop()
		if _, err := b.Write([]byte{1, 0, 0, 0, 'x'}); err != nil {
			t.Fatal(err)
		}
		if p, err := c.ReadPacket(); err != nil || string(p) != "x" {
			t.Fatalf("the packet after the watch stopped: %q, %v", p, err)
		}
	})
	t.Run("input first", func(t *testing.T) {
		a, b := tcpPair(t)
		c := NewConn(a)
		stop := c.WatchClose(func() { t.Error("closed called after input the watch left unread") })
		if _, err := b.Write([]byte{1, 0, 0, 0, 'y'}); err != nil {
			t.Fatal(err)
		}
		b.Close()
		stop()
		if p, err := c.ReadPacket(); err != nil || string(p) != "y" {
			t.Fatalf("the packet the watch saw: %q, %v", p, err)
		}
	})
}
