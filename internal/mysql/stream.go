package mysql

import (
	"errors"
	"slices"
	"sync"
	"time"
)

// A client may send a packet of up to max_allowed_packet bytes (up to 1 GB).
// Holding such a packet cost the proxy three times its size (a 64 MB
// statement grew RSS by 196 MB: the joined copy and its growth), and a
// session that announced one and stopped held it forever. So a command
// packet larger than the caller wants to hold is read only as far as its
// head, and the rest is streamed to the backend as it arrives (Stream),
// through one chunk buffer; a packet that reaches the limit is refused after
// the header that says so, before its body is read (TooLargeError), as the
// server does.

// streamHead is how much of a streamed packet ReadCommand returns: enough to
// classify the statement (its kind, hints and first tokens).
const streamHead = 64 << 10

// streamChunk is the size of the buffer a streamed packet passes through.
const streamChunk = 64 << 10

var streamBufPool = sync.Pool{New: func() any { b := make([]byte, streamChunk); return &b }}

// TooLargeError reports a packet whose length reached the connection's
// limit (max_allowed_packet). The server answers it with ER 1153 and closes;
// Seq() is already the sequence id for that answer.
type TooLargeError struct {
	Limit int
}

func (e *TooLargeError) Error() string {
	return "mysql: packet reaches max_allowed_packet (" + itoa(e.Limit) + " bytes)"
}

// Is makes errors.Is(err, ErrPacketTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrPacketTooLarge }

// PacketTooLargeError is the server's answer to such a packet.
func PacketTooLargeError() *SQLError {
	return NewError(ERNetPacketTooLarge, StateConnFailure, "Got a packet bigger than 'max_allowed_packet' bytes")
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// Stream is the part of a packet ReadCommand did not return: the rest of its
// current frame and any frames that follow. It is valid until the next read
// on the connection.
type Stream struct {
	c        *Conn
	frameLen int  // length of the frame the head came from
	left     int  // bytes of the current frame not read yet
	more     bool // a frame follows the current one
	total    int  // payload bytes announced so far
	limit    int
}

// StreamCheckError wraps the error of a Stream.WriteTo check: the packet was
// refused for what it says, part of it already reached the backend.
type StreamCheckError struct{ Err error }

func (e *StreamCheckError) Error() string { return e.Err.Error() }
func (e *StreamCheckError) Unwrap() error { return e.Err }

// ReadCommand reads the next packet like ReadPacket when it is at most hold
// bytes long and a single frame. A larger one is returned as its head (the
// first streamHead bytes at most) and a Stream for the rest. A packet of
// limit bytes or more is refused as soon as a header announces it, with a
// *TooLargeError (after which the connection must be closed: the rest of the
// packet is unread). hold must be less than MaxPayload.
func (c *Conn) ReadCommand(hold, limit int) ([]byte, *Stream, error) {
	c.releaseBig()
	n, err := c.nextHeader()
	if err != nil {
		return nil, nil, err
	}
	if n >= limit {
		return nil, nil, &TooLargeError{Limit: limit}
	}
	if n <= hold && n < MaxPayload {
		p, err := c.readFrameBody(n)
		return p, nil, err
	}
	head := min(n, streamHead)
	p, err := c.readFrameBody(head)
	if err != nil {
		return nil, nil, err
	}
	if c.stream == nil {
		c.stream = new(Stream)
	}
	*c.stream = Stream{c: c, frameLen: n, left: n - head, more: n == MaxPayload, total: n, limit: limit}
	return p, c.stream, nil
}

// WriteTo sends the whole packet, head first, to dst as the next packet of
// dst's command, then copies the rest as it arrives from the client. check,
// if not nil, sees every byte after the head, chunk by chunk, before it is
// sent (last: no byte follows); its error stops the copy (a
// *StreamCheckError). A failure to read
// from the client or to write to dst comes as a *RelayError saying which
// side failed, a packet that reaches the limit as a *TooLargeError. After
// any error dst holds part of a packet and is unusable; the client's rest
// is unread (Discard).
func (s *Stream) WriteTo(dst *Conn, head []byte, check func(chunk []byte, last bool) error) error {
	if err := dst.writeFrameHeader(s.frameLen); err != nil {
		return backendErr(err)
	}
	if err := dst.appendOut(head); err != nil {
		return backendErr(err)
	}
	if check != nil {
		if err := check(nil, s.Done()); err != nil {
			return &StreamCheckError{err}
		}
	}
	return s.copy(func(chunk []byte) error {
		if check != nil {
			if err := check(chunk, s.Done()); err != nil {
				return &StreamCheckError{err}
			}
		}
		if err := dst.appendOut(chunk); err != nil {
			return backendErr(err)
		}
		return nil
	}, func(n int) error {
		if err := dst.writeFrameHeader(n); err != nil {
			return backendErr(err)
		}
		return nil
	})
}

// Done reports whether the whole packet has been read.
func (s *Stream) Done() bool { return s.left == 0 && !s.more }

// Discard reads and drops the rest of the packet, so that the connection
// can answer it (the statement was refused, or its backend failed).
func (s *Stream) Discard() error {
	return s.copy(func([]byte) error { return nil }, func(int) error { return nil })
}

// ReadAll reads the rest of the packet and returns it whole, head included:
// for the commands that are not streamed. It costs the packet's size.
func (s *Stream) ReadAll(head []byte) ([]byte, error) {
	out := make([]byte, 0, s.total)
	out = append(out, head...)
	err := s.copy(func(chunk []byte) error {
		out = append(out, chunk...)
		return nil
	}, func(n int) error {
		out = slices.Grow(out, n) // once per frame, to its exact size
		return nil
	})
	return out, err
}

// copy passes the rest of the packet to body, chunk by chunk, and calls
// header before each further frame with its length. Client failures come as
// client-side *RelayErrors; body's and header's errors as they are.
func (s *Stream) copy(body func([]byte) error, header func(n int) error) error {
	c := s.c
	bp := streamBufPool.Get().(*[]byte)
	defer streamBufPool.Put(bp)
	for {
		for s.left > 0 {
			chunk, err := c.readChunk((*bp)[:min(s.left, streamChunk)])
			if err != nil {
				return clientErr(err)
			}
			s.left -= len(chunk)
			if err := body(chunk); err != nil {
				return err
			}
		}
		if !s.more {
			return nil
		}
		n, err := c.nextHeader()
		if err != nil {
			return clientErr(err)
		}
		if s.total+n >= s.limit {
			s.more, s.left = false, 0
			return &TooLargeError{Limit: s.limit}
		}
		s.total += n
		s.left, s.more = n, n == MaxPayload
		if err := header(n); err != nil {
			return err
		}
	}
}

// readChunk returns up to len(b) bytes of input: buffered ones first (as a
// slice of the read buffer), else read into b.
func (c *Conn) readChunk(b []byte) ([]byte, error) {
	if k := min(c.rend-c.rpos, len(b)); k > 0 {
		p := c.rbuf[c.rpos : c.rpos+k]
		c.rpos += k
		return p, nil
	}
	if err := c.armReadDeadline(); err != nil {
		return nil, err
	}
	n, err := c.readSome(b)
	if n > 0 {
		return b[:n], nil
	}
	if err == nil {
		err = errors.New("read returned nothing")
	}
	return nil, err
}

// armReadDeadline applies ReadTimeout to the read about to block: a packet
// in progress must keep arriving (net_read_timeout). DisarmReadDeadline
// clears it afterwards.
func (c *Conn) armReadDeadline() error {
	if c.ReadTimeout <= 0 {
		return nil
	}
	c.deadlineArmed = true
	return c.netConn.SetReadDeadline(time.Now().Add(c.ReadTimeout))
}

// DisarmReadDeadline clears a deadline a read of a packet in progress set,
// so that the wait for the next packet is not cut short by it. It costs
// nothing when no read had to wait.
func (c *Conn) DisarmReadDeadline() {
	if c.deadlineArmed {
		c.deadlineArmed = false
		_ = c.netConn.SetReadDeadline(time.Time{})
	}
}

// writeFrameHeader queues the header of a frame of n bytes whose body the
// caller writes next.
func (c *Conn) writeFrameHeader(n int) error {
	c.ensureWriteBuf()
	c.wbuf = append(c.wbuf, byte(n), byte(n>>8), byte(n>>16), c.seq)
	c.seq++
	return nil
}
