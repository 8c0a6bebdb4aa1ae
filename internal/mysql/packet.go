package mysql

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Buffer sizes. A packet that fits in the read buffer is returned as a slice
// of it (no copy, no allocation); the write buffer collects the packets of one
// response so they leave in one write syscall.
const (
	readBufferSize  = 16 << 10
	writeBufferSize = 16 << 10
	// flushThreshold is how much output is gathered before writing while a
	// response is still streaming: large enough to coalesce many rows, small
	// enough that memory stays flat for any result size.
	flushThreshold = 64 << 10
)

// ErrPacketTooLarge is returned when a peer announces a logical packet larger
// than the connection's limit.
var ErrPacketTooLarge = errors.New("mysql: packet exceeds max_allowed_packet")

// ErrMalformed marks a packet that does not follow the protocol.
var ErrMalformed = errors.New("mysql: malformed packet")

// ErrPacketsOutOfOrder is returned, with CheckSeq set, for a frame whose
// sequence id is not the one expected: garbage, or not a MySQL client at
// all (an HTTP request's "GET " reads as a header with sequence id 0x20).
var ErrPacketsOutOfOrder = errors.New("mysql: packets out of order")

// Conn frames MySQL packets over a net.Conn. It is not safe for concurrent
// use; one goroutine owns it (the session or the borrower of a backend
// connection).
type Conn struct {
	netConn net.Conn

	rbuf       []byte // buffered input; rbuf[rpos:rend] is unread; nil while released
	rpos, rend int
	big        []byte // holds a frame or a joined packet too large for rbuf
	rbufp      *[]byte

	wbuf  []byte // pending output, flushed by Flush; nil while released
	wbufp *[]byte

	sock socket // raw socket I/O (socket.go)
	// replyPending: the output is a command whose write is left to the
	// next read (FlushForReply).
	replyPending bool
	// holdOutput: Flush leaves output below the flush threshold queued
	// (HoldOutput).
	holdOutput bool

	// Poller, when set, lets waits for input busy-poll briefly (see Poller).
	Poller *Poller

	// WaitStart is when the last timed WaitInput began to wait (zero when
	// input was already there or the wait had no timeout).
	WaitStart time.Time

	seq uint8 // sequence id of the next packet to read or write

	// MaxPacket bounds a joined logical packet (like max_allowed_packet).
	MaxPacket int

	// ReadTimeout, when non-zero, is applied before each blocking read.
	ReadTimeout time.Duration
	// WriteTimeout, when non-zero, bounds a write that waits for the peer
	// to read (net_write_timeout).
	WriteTimeout time.Duration

	// stream is the rest of a packet ReadCommand did not read (allocated
	// on first use: most connections never stream).
	stream *Stream
	// deadlineArmed: a read of a packet in progress set a read deadline
	// (ReadTimeout) that DisarmReadDeadline clears.
	deadlineArmed bool
	// prefix: the results of statements written ahead of a command in
	// its packet, which reads consume before its answer (ExpectPrefix).
	prefix prefixRead

	// CheckSeq makes reads refuse a frame whose sequence id is not Seq(),
	// as a server does with its clients (ErrPacketsOutOfOrder; Seq() is
	// left as it was, for the error packet). Off, reads adopt the peer's.
	CheckSeq bool
}

// NewConn wraps c. Buffers are taken from shared pools on first use and can
// be given back while the connection is idle (ReleaseBuffers).
func NewConn(c net.Conn) *Conn {
	return &Conn{netConn: c, MaxPacket: 1 << 30}
}

// Buffer pools hold pointers to slices so that Put does not allocate.
var (
	readBufPool  = sync.Pool{New: func() any { b := make([]byte, readBufferSize); return &b }}
	writeBufPool = sync.Pool{New: func() any { b := make([]byte, 0, writeBufferSize); return &b }}
)

func (c *Conn) ensureReadBuf() {
	if c.rbuf == nil {
		c.rbufp = readBufPool.Get().(*[]byte)
		c.rbuf = *c.rbufp
	}
}

func (c *Conn) ensureWriteBuf() {
	if c.wbuf == nil {
		c.wbufp = writeBufPool.Get().(*[]byte)
		c.wbuf = (*c.wbufp)[:0]
	}
}

// ReleaseBuffers gives the read and write buffers back to the shared pools
// when they hold nothing, so an idle connection costs little memory.
func (c *Conn) ReleaseBuffers() {
	if c.rbuf != nil && c.rpos == c.rend {
		readBufPool.Put(c.rbufp)
		c.rbuf, c.rbufp, c.rpos, c.rend = nil, nil, 0, 0
	}
	if c.wbuf != nil && len(c.wbuf) == 0 {
		if cap(c.wbuf) == writeBufferSize {
			*c.wbufp = c.wbuf
			writeBufPool.Put(c.wbufp)
		}
		c.wbuf, c.wbufp = nil, nil
	}
	if c.big != nil {
		c.big = nil
	}
}

// timeoutError keeps net.Error's Timeout() for a deadline hit while waiting.
type timeoutError struct{ error }

func (e *timeoutError) Timeout() bool   { return true }
func (e *timeoutError) Temporary() bool { return true }
func (e *timeoutError) Unwrap() error   { return e.error }

// NetConn returns the underlying connection.
func (c *Conn) NetConn() net.Conn { return c.netConn }

// SetNetConn replaces the underlying connection.
func (c *Conn) SetNetConn(nc net.Conn) {
	c.netConn = nc
	c.sock = socket{}
}

// Upgrade layers a new connection (TLS) over the current one. Input already
// buffered belongs to the new layer: a client may send its TLS ClientHello
// right behind the SSLRequest, in the same read.
func (c *Conn) Upgrade(wrap func(net.Conn) net.Conn) {
	under := c.netConn
	if n := c.rend - c.rpos; n > 0 && c.rbuf != nil {
		under = &prefixConn{Conn: under, prefix: append([]byte(nil), c.rbuf[c.rpos:c.rend]...)}
	}
	c.rpos, c.rend = 0, 0
	c.netConn = wrap(under)
	c.sock = socket{} // the new layer is not a raw socket
}

// prefixConn replays bytes read ahead before reading from the connection.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// Close closes the underlying connection.
func (c *Conn) Close() error { return c.netConn.Close() }

// CloseAfterDraining closes c after discarding what the peer still sends,
// for at most d and max bytes. Closing a socket with unread input resets
// the connection, and a peer still writing (the rest of a packet over
// max_allowed_packet) would lose the answer already sent to it; with the
// write side shut first, it reads that answer, then the end of stream.
func (c *Conn) CloseAfterDraining(d time.Duration, max int64) error {
	if hc, ok := c.netConn.(interface{ CloseWrite() error }); ok {
		_ = hc.CloseWrite()
	}
	_ = c.netConn.SetReadDeadline(time.Now().Add(d))
	_, _ = io.CopyN(io.Discard, c.netConn, max)
	return c.netConn.Close()
}

// Seq returns the sequence id of the next packet.
func (c *Conn) Seq() uint8 { return c.seq }

// SetSeq sets the sequence id of the next packet.
func (c *Conn) SetSeq(s uint8) { c.seq = s }

// ResetSeq starts a new command: sequence ids restart at 0.
func (c *Conn) ResetSeq() { c.seq = 0 }

// Buffered reports how many input bytes are already buffered. A relay uses it
// to flush its output before it would block on input.
func (c *Conn) Buffered() int { return c.rend - c.rpos }

// FrameBuffered reports whether the next frame, header and body, is
// already buffered: reading it needs no read from the connection. (A
// frame only partly buffered makes ReadFrame read the connection, which
// then buffers whatever else the peer has sent meanwhile.)
func (c *Conn) FrameBuffered() bool {
	n := c.rend - c.rpos
	if n < 4 {
		return false
	}
	h := c.rbuf[c.rpos:]
	return n >= 4+int(uint32(h[0])|uint32(h[1])<<8|uint32(h[2])<<16)
}

// fill ensures at least n bytes are buffered (n <= len(rbuf)).
func (c *Conn) fill(n int) error {
	if c.rend-c.rpos >= n {
		return nil
	}
	c.ensureReadBuf()
	if c.rpos > 0 {
		copy(c.rbuf, c.rbuf[c.rpos:c.rend])
		c.rend -= c.rpos
		c.rpos = 0
	}
	if err := c.armReadDeadline(); err != nil {
		return err
	}
	if c.replyPending {
		if err := c.sendForReply(); err != nil {
			return err
		}
	}
	if err := c.writeHeld(); err != nil {
		return err
	}
	for c.rend < n {
		m, err := c.readSome(c.rbuf[c.rend:])
		c.rend += m
		if err != nil {
			if c.rend >= n {
				return nil
			}
			if err == io.EOF && c.rend > 0 {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

// readHeader reads a frame header and returns the frame length and sequence.
func (c *Conn) readHeader() (int, uint8, error) {
	if err := c.fill(4); err != nil {
		return 0, 0, err
	}
	h := c.rbuf[c.rpos : c.rpos+4]
	c.rpos += 4
	return int(uint32(h[0]) | uint32(h[1])<<8 | uint32(h[2])<<16), h[3], nil
}

// nextHeader reads a frame header, refuses a sequence id out of order
// (CheckSeq) and moves Seq() past it. It returns the frame's length.
func (c *Conn) nextHeader() (int, error) {
	n, seq, err := c.readHeader()
	if err != nil {
		return 0, err
	}
	if c.CheckSeq && seq != c.seq {
		return 0, ErrPacketsOutOfOrder
	}
	c.seq = seq + 1
	return n, nil
}

// readFrameBody returns the n-byte body of the frame whose header was just
// read. The result aliases an internal buffer valid until the next read.
func (c *Conn) readFrameBody(n int) ([]byte, error) {
	if n <= len(c.rbuf) {
		if err := c.fill(n); err != nil {
			return nil, err
		}
		p := c.rbuf[c.rpos : c.rpos+n]
		c.rpos += n
		return p, nil
	}
	// Too large for the read buffer: take what is buffered, read the rest
	// straight into a dedicated buffer that is dropped after use.
	if cap(c.big) < n {
		c.big = make([]byte, n)
	}
	p := c.big[:n]
	k := copy(p, c.rbuf[c.rpos:c.rend])
	c.rpos += k
	if err := c.armReadDeadline(); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(c.netConn, p[k:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return p, nil
}

// ReadFrame reads one physical frame (at most MaxPayload bytes). more reports
// that the frame is full-size, so the logical packet continues in the next
// frame. A relay uses frames so that huge rows pass through without being
// joined in memory.
func (c *Conn) ReadFrame() (payload []byte, more bool, err error) {
	if c.prefix.n > 0 {
		return c.readPastPrefix()
	}
	return c.readFrame()
}

// readFrame is ReadFrame without the prefix's results (prefix.go).
func (c *Conn) readFrame() (payload []byte, more bool, err error) {
	c.releaseBig()
	n, err := c.nextHeader()
	if err != nil {
		return nil, false, err
	}
	if n > c.MaxPacket {
		return nil, false, ErrPacketTooLarge
	}
	p, err := c.readFrameBody(n)
	return p, n == MaxPayload, err
}

// ReadPacket reads one logical packet, joining frames as needed. The payload
// aliases an internal buffer that is valid until the next read.
func (c *Conn) ReadPacket() ([]byte, error) {
	p, more, err := c.ReadFrame()
	if err != nil || !more {
		return p, err
	}
	joined := append([]byte(nil), p...)
	for more {
		var n int
		if n, err = c.nextHeader(); err != nil {
			return nil, err
		}
		if len(joined)+n > c.MaxPacket {
			return nil, ErrPacketTooLarge
		}
		more = n == MaxPayload
		if p, err = c.readFrameBody(n); err != nil {
			return nil, err
		}
		joined = append(joined, p...)
	}
	c.big = joined
	return joined, nil
}

// keepBig is the largest overflow buffer kept between reads: rows of a few
// hundred KB reuse it, while one huge packet does not pin its memory for the
// life of the connection.
const keepBig = 1 << 20

// releaseBig drops the overflow buffer of the previous read when it is huge.
func (c *Conn) releaseBig() {
	if cap(c.big) > keepBig {
		c.big = nil
	}
}

// WritePacket queues payload as one logical packet (split into frames when
// needed). Output is sent by Flush, or earlier once enough has gathered.
func (c *Conn) WritePacket(payload []byte) error {
	c.ensureWriteBuf()
	for {
		n := len(payload)
		if n > MaxPayload {
			n = MaxPayload
		}
		c.wbuf = append(c.wbuf, byte(n), byte(n>>8), byte(n>>16), c.seq)
		c.seq++
		if err := c.appendOut(payload[:n]); err != nil {
			return err
		}
		payload = payload[n:]
		if n < MaxPayload {
			return nil
		}
	}
}

// WriteFrame queues one physical frame as is (a relay forwarding a frame of a
// larger packet). The caller splits; only the sequence id is rewritten.
func (c *Conn) WriteFrame(payload []byte) error {
	c.ensureWriteBuf()
	n := len(payload)
	c.wbuf = append(c.wbuf, byte(n), byte(n>>8), byte(n>>16), c.seq)
	c.seq++
	return c.appendOut(payload)
}

// appendOut appends p to the output buffer, writing through for large p.
func (c *Conn) appendOut(p []byte) error {
	if len(p) > flushThreshold {
		// What is queued leaves first, held or not.
		c.replyPending = false
		if len(c.wbuf) > 0 {
			if err := c.write(); err != nil {
				return err
			}
		}
		_, err := c.writeAll(p)
		return err
	}
	c.wbuf = append(c.wbuf, p...)
	if len(c.wbuf) >= flushThreshold {
		return c.Flush()
	}
	return nil
}

// BeginPacket starts building a packet in place in the output buffer: append
// the payload to the returned slice and pass it to EndPacket. This avoids a
// scratch buffer for packets the proxy composes itself.
func (c *Conn) BeginPacket() []byte {
	c.ensureWriteBuf()
	return append(c.wbuf, 0, 0, 0, 0)
}

// EndPacket finishes a packet started with BeginPacket.
func (c *Conn) EndPacket(b []byte) error {
	start := len(c.wbuf)
	n := len(b) - start - 4
	if n >= MaxPayload {
		// Rare: a composed packet needs splitting. Copy it out and frame it.
		payload := append([]byte(nil), b[start+4:]...)
		c.wbuf = b[:start]
		return c.WritePacket(payload)
	}
	b[start] = byte(n)
	b[start+1] = byte(n >> 8)
	b[start+2] = byte(n >> 16)
	b[start+3] = c.seq
	c.seq++
	c.wbuf = b
	if len(c.wbuf) >= flushThreshold {
		return c.Flush()
	}
	return nil
}

// Pending reports how many output bytes wait for Flush.
func (c *Conn) Pending() int { return len(c.wbuf) }

// Flush writes the pending output in one syscall.
func (c *Conn) Flush() error {
	c.replyPending = false
	if len(c.wbuf) == 0 || (c.holdOutput && len(c.wbuf) < flushThreshold) {
		return nil
	}
	return c.write()
}

// HoldOutput(true) makes Flush keep what is queued, until HoldOutput(false)
// and the next Flush, unless it reaches the flush threshold or the
// connection waits for input: a session can then add a packet to the end
// of a response and have both leave in one write (the drain's farewell,
// which the client must find behind the response it reads).
func (c *Conn) HoldOutput(hold bool) { c.holdOutput = hold }

// writeHeld writes output HoldOutput kept, before a wait for the peer: it
// may be waiting for that output.
func (c *Conn) writeHeld() error {
	if c.holdOutput && len(c.wbuf) > 0 {
		return c.write()
	}
	return nil
}

// write writes the queued output.
func (c *Conn) write() error {
	_, err := c.writeAll(c.wbuf)
	c.resetOutput()
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// resetOutput empties the output buffer after it was written.
func (c *Conn) resetOutput() {
	if cap(c.wbuf) > 4*flushThreshold {
		// A composed giant packet grew the buffer: give the memory back.
		c.wbuf, c.wbufp = nil, nil
	} else {
		c.wbuf = c.wbuf[:0]
	}
}

// DiscardOutput drops pending output (after a failure mid-response).
func (c *Conn) DiscardOutput() {
	c.replyPending = false
	if c.wbuf != nil {
		c.wbuf = c.wbuf[:0]
	}
}

// Unread returns the input read from the peer and not consumed yet (a
// live upgrade moves it with the connection).
func (c *Conn) Unread() []byte { return c.rbuf[c.rpos:c.rend] }

// Prefill makes b the first input read, before anything from the socket:
// what another process had read and not served (Unread).
func (c *Conn) Prefill(b []byte) {
	if len(b) == 0 {
		return
	}
	c.ensureReadBuf()
	if len(b) > len(c.rbuf) {
		c.rbuf = make([]byte, len(b))
	}
	c.rpos, c.rend = 0, copy(c.rbuf, b)
}
