package mysql

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// socket does the connection's I/O on a plain TCP or Unix socket through
// syscall.RawConn with raw read(2)/write(2) calls instead of net.Conn.
//
// Why: net.Conn makes each call through syscall.Syscall, whose runtime entry
// hook wakes the runtime's monitor thread (sysmon) whenever it sleeps, and
// it sleeps whenever the proxy has been idle for a moment: at low
// concurrency that was one futex wake-up, one nanosleep and one extra
// context switch per query (perf, 1 sysbench thread: 1.15 futex and 0.77
// nanosleep calls per query). The socket is non-blocking, so a raw call
// never blocks; when it would, the callback reports "not ready" and the Go
// poller parks the goroutine exactly as net.Conn does, with deadlines and
// Close from other goroutines working the same way.
//
// Connections that are not plain sockets (TLS) keep using net.Conn.
type socket struct {
	raw     syscall.RawConn
	checked bool // raw looked up (raw stays nil when not a socket)

	readFn, writeFn, inputFn, sendFn func(uintptr) bool
	sent                             bool // sendForReply: the command is written
	noWait                           bool // TryInput: readInput reports a miss rather than wait

	// The buffer and outcome of the call in progress, for the callbacks.
	buf []byte
	n   int
	err error

	waitTimeout time.Duration

	// written counts the bytes handed to the kernel, for Unreceived.
	written uint64
	// writeArmed: a write that had to wait set a write deadline
	// (WriteTimeout), cleared when the write is done.
	writeArmed bool
}

// rawSocket reports whether the connection's socket can be used directly,
// looking it up on first use.
func (c *Conn) rawSocket() bool {
	if c.sock.checked {
		return c.sock.raw != nil
	}
	c.sock.checked = true
	sc, ok := c.netConn.(syscall.Conn)
	if !ok || !rawIOSupported {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	c.sock.raw = rc
	c.sock.readFn, c.sock.writeFn, c.sock.inputFn, c.sock.sendFn = c.readOrPoll, c.writeOnce, c.readInput, c.sendThenRead
	return true
}

// readSome reads like net.Conn.Read.
func (c *Conn) readSome(b []byte) (int, error) {
	if !c.rawSocket() {
		return c.netConn.Read(b)
	}
	c.sock.buf, c.sock.n, c.sock.err = b, 0, nil
	err := c.sock.raw.Read(c.sock.readFn)
	n := c.sock.n
	if err == nil {
		err = c.sock.err
	}
	c.sock.buf, c.sock.err = nil, nil
	return n, err
}

// readOnce is readSome's callback: false means "would block, wait".
func (c *Conn) readOnce(fd uintptr) bool {
	for {
		n, errno := rawRead(fd, c.sock.buf)
		switch {
		case n > 0:
			c.sock.n = n
			return true
		case errno == syscall.EINTR:
			continue
		case errno == syscall.EAGAIN:
			return false
		case errno == 0:
			c.sock.err = io.EOF
			return true
		default:
			c.sock.err = os.NewSyscallError("read", errno)
			return true
		}
	}
}

// readOrPoll is readSome's callback: one read, then, when there was
// nothing, a busy poll if the Poller allows one.
func (c *Conn) readOrPoll(fd uintptr) bool {
	return c.readOnce(fd) || c.poll(fd)
}

// writeAll writes all of b like net.Conn.Write. With WriteTimeout set, a
// write that has to wait for the peer to read fails after that long; a
// write the socket takes at once reads no clock.
func (c *Conn) writeAll(b []byte) (int, error) {
	if !c.rawSocket() {
		return c.writeThroughConn(b)
	}
	c.sock.buf, c.sock.n, c.sock.err = b, 0, nil
	err := c.sock.raw.Write(c.sock.writeFn)
	n := c.sock.n
	if err == nil {
		err = c.sock.err
	}
	c.sock.buf, c.sock.err = nil, nil
	if c.sock.writeArmed {
		c.sock.writeArmed = false
		_ = c.netConn.SetWriteDeadline(time.Time{})
	}
	return n, err
}

// writeThroughConn is writeAll for connections without a raw socket (TLS).
func (c *Conn) writeThroughConn(b []byte) (int, error) {
	if c.WriteTimeout <= 0 {
		return c.netConn.Write(b)
	}
	if err := c.netConn.SetWriteDeadline(time.Now().Add(c.WriteTimeout)); err != nil {
		return 0, err
	}
	n, err := c.netConn.Write(b)
	_ = c.netConn.SetWriteDeadline(time.Time{})
	return n, err
}

// armWriteDeadline starts WriteTimeout for a write that must wait; called
// from inside the raw write, before the poller waits.
func (c *Conn) armWriteDeadline() error {
	if c.WriteTimeout <= 0 || c.sock.writeArmed {
		return nil
	}
	c.sock.writeArmed = true
	return c.netConn.SetWriteDeadline(time.Now().Add(c.WriteTimeout))
}

// writeOnce is writeAll's callback: it writes until done, an error, or the
// socket buffer is full (false: wait until writable, then continue).
func (c *Conn) writeOnce(fd uintptr) bool {
	for c.sock.n < len(c.sock.buf) {
		n, errno := rawWrite(fd, c.sock.buf[c.sock.n:])
		switch {
		case n > 0:
			c.sock.n += n
			c.sock.written += uint64(n)
		case errno == syscall.EINTR:
		case errno == syscall.EAGAIN:
			if err := c.armWriteDeadline(); err != nil {
				c.sock.err = err
				return true
			}
			return false
		case errno == 0:
			c.sock.err = io.ErrShortWrite
			return true
		default:
			c.sock.err = os.NewSyscallError("write", errno)
			return true
		}
	}
	return true
}

// BytesWritten is a mark for Unreceived: how many bytes the connection has
// written to its socket so far.
func (c *Conn) BytesWritten() uint64 { return c.sock.written }

// Unreceived reports whether the last bytes written, after mark (a
// BytesWritten value), provably never reached the peer process: they were
// never written, or its TCP stack acknowledged none of them. A process can only read bytes its kernel
// acknowledged, and a socket the peer had closed acknowledges nothing (it
// answers with a reset), so after a server closed the connection (idle
// timeout, restart, KILL) a command written to it can be sent again
// elsewhere. A peer that read everything and then died acknowledges it in
// its FIN. False when it cannot tell (TLS, not Linux).
//
// Linux counts the SYN in tcpi_bytes_acked, one more than the data, so
// "acked < written" means at least the last byte written was never
// acknowledged; a server acts on a command only once it has all of it.
func (c *Conn) Unreceived(mark uint64) bool {
	if !c.rawSocket() {
		return false
	}
	if c.sock.written == mark {
		return true // nothing left the proxy
	}
	var acked uint64
	var ok bool
	if err := c.sock.raw.Control(func(fd uintptr) { acked, ok = peerAckedBytes(fd) }); err != nil || !ok {
		return false
	}
	return acked < c.sock.written
}

// WatchClose watches, on a goroutine of its own, for the peer closing
// the connection (its FIN or a reset, with nothing it sent before left
// unread) while the caller does not read from it: closed runs once if it
// does. For a statement that works a long time before it writes to its
// client (an evaluation copying tables, waiting for a shard), so that a
// client that went away stops it at once rather than at its first write.
// The watch ends at the first input too (a client sending its next
// command early), which it leaves unread. stop ends the watch and returns
// once it has ended: the caller may read again then, and must call it
// before it does. Nothing is watched where the socket cannot be (TLS,
// whose close_notify comes before the FIN; no raw socket).
func (c *Conn) WatchClose(closed func()) (stop func()) {
	if c.Buffered() > 0 || !c.rawSocket() {
		return func() {}
	}
	var stopping atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.sock.raw.Read(func(fd uintptr) bool {
			if stopping.Load() {
				return true
			}
			switch peekInput(fd) {
			case inputNone:
				return false // wait until the socket is readable
			case inputClosed:
				closed()
			}
			return true
		})
	}()
	return func() {
		stopping.Store(true)
		_ = c.netConn.SetReadDeadline(time.Now()) // wakes the watch's wait
		<-done
		_ = c.netConn.SetReadDeadline(time.Time{})
	}
}

// What a peek at a socket's input found.
const (
	inputNone   = iota // nothing yet
	inputData          // bytes to read
	inputClosed        // the end: the peer closed or reset the connection
)

// FlushForReply is Flush for a command whose reply the caller reads next.
// On a raw socket the write is made by that read, from inside the poller's
// read wait (sendForReply): the read that follows a fresh command would
// only find nothing (EAGAIN), so it is skipped and the goroutine parks
// until the reply arrives, saving one syscall per round trip.
//
// Only for a peer that sends nothing unasked, like a MySQL server to its
// client: the poller forgets readiness that came before a wait, so input
// that arrived before the command would go unnoticed until more came. (A
// server that closed the connection meanwhile answers the command with a
// reset, which wakes the wait.)
func (c *Conn) FlushForReply() error {
	if len(c.wbuf) == 0 || !c.rawSocket() {
		return c.Flush()
	}
	c.replyPending = true
	return nil
}

// sendForReply writes the pending command and waits for the first bytes of
// the reply (see FlushForReply). Called by fill with the read buffer
// compacted.
func (c *Conn) sendForReply() error {
	c.replyPending = false
	c.sock.buf, c.sock.n, c.sock.err, c.sock.sent = c.wbuf, 0, nil, false
	err := c.sock.raw.Read(c.sock.sendFn)
	sent, n := c.sock.sent, c.sock.n
	if err == nil {
		err = c.sock.err
	}
	c.sock.buf, c.sock.err = nil, nil
	if !sent && err == nil {
		// The socket buffer filled up mid-command: write the rest the
		// ordinary way; fill then reads the reply the ordinary way.
		_, err = c.writeAll(c.wbuf[n:])
	}
	written := sent || err == nil
	c.resetOutput()
	if !written {
		return fmt.Errorf("write: %w", err)
	}
	if sent {
		c.rend += n
	}
	return err
}

// sendThenRead is sendForReply's callback: first the write (then, rather
// than a read attempt that would only find nothing, either a short busy
// poll or "wait"), then, once the poller says readable, one read.
func (c *Conn) sendThenRead(fd uintptr) bool {
	if !c.sock.sent {
		if !c.writeOnce(fd) || c.sock.err != nil {
			return true // socket full (finished outside) or failed
		}
		c.sock.sent = true
		c.sock.buf, c.sock.n = c.rbuf[c.rend:], 0
		return c.poll(fd)
	}
	return c.readOnce(fd)
}

// WaitInput returns once input is buffered. When the peer has already sent
// something it costs one read syscall and nothing else: no deadline is set
// and no time is taken. Only when it must wait does it give its buffers back
// to the shared pools (an idle connection holds none) and arm the timeout
// (> 0), after which it fails with a net.Error whose Timeout() is true. The
// deadline is cleared again before it returns, so later reads are not cut
// short by it. On a connection without a raw socket (TLS) it reads through
// the connection with the timeout as deadline.
func (c *Conn) WaitInput(timeout time.Duration) error {
	if c.rend > c.rpos {
		return nil
	}
	if err := c.writeHeld(); err != nil {
		return err
	}
	c.WaitStart = time.Time{}
	if !c.rawSocket() {
		return c.waitThroughConn(timeout)
	}
	c.sock.waitTimeout, c.sock.err = timeout, nil
	err := c.sock.raw.Read(c.sock.inputFn)
	if !c.WaitStart.IsZero() && timeout > 0 {
		_ = c.netConn.SetReadDeadline(time.Time{})
	}
	if err == nil {
		err, c.sock.err = c.sock.err, nil
	}
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		return &timeoutError{err}
	}
	return err
}

// readInput is WaitInput's callback: one read into the read buffer. On the
// first miss it releases the buffers and, for a timed wait, arms the
// deadline before reporting "wait". An untimed wait reads no clock.
func (c *Conn) readInput(fd uintptr) bool {
	c.ensureReadBuf()
	c.rpos, c.rend = 0, 0
	c.sock.buf, c.sock.n = c.rbuf, 0
	ready := c.readOrPoll(fd)
	c.sock.buf = nil
	if ready {
		c.rend = c.sock.n
		return true
	}
	c.ReleaseBuffers()
	if c.sock.noWait {
		return true
	}
	if c.WaitStart.IsZero() && c.sock.waitTimeout > 0 {
		c.WaitStart = time.Now()
		if err := c.netConn.SetReadDeadline(c.WaitStart.Add(c.sock.waitTimeout)); err != nil {
			c.sock.err = err
			return true
		}
	}
	return false
}

// TryInput is WaitInput that does not wait: one read, and true when it
// found input (or failed: err). When there was none it gives its buffers
// back, as WaitInput does before it waits, and returns false; the caller
// then waits for the socket some other way (a session parks it). On a
// connection without a raw socket (TLS) it cannot tell without waiting
// and reports input, so that the caller reads.
func (c *Conn) TryInput() (bool, error) {
	if c.rend > c.rpos {
		return true, nil
	}
	if err := c.writeHeld(); err != nil {
		return true, err
	}
	c.WaitStart = time.Time{}
	if !c.rawSocket() {
		return true, nil
	}
	c.sock.waitTimeout, c.sock.err, c.sock.noWait = 0, nil, true
	err := c.sock.raw.Read(c.sock.inputFn)
	c.sock.noWait = false
	if err == nil {
		err, c.sock.err = c.sock.err, nil
	}
	return c.rend > c.rpos || err != nil, err
}

// waitThroughConn is WaitInput for connections without a raw socket.
func (c *Conn) waitThroughConn(timeout time.Duration) error {
	if timeout > 0 {
		c.WaitStart = time.Now()
		if err := c.netConn.SetReadDeadline(c.WaitStart.Add(timeout)); err != nil {
			return err
		}
		defer c.netConn.SetReadDeadline(time.Time{})
	}
	saved := c.ReadTimeout
	c.ReadTimeout = 0
	err := c.fill(1)
	c.ReadTimeout = saved
	return err
}
