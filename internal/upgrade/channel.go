// Package upgrade carries a live upgrade between the running shardgate and
// the new binary it starts: one Unix socket pair (SOCK_SEQPACKET) over
// which the old process hands over its listening sockets, then its client
// sessions, each a state document with the session's sockets attached
// (SCM_RIGHTS); the new process answers each session with an ack or a
// refusal, so that a session the new process cannot take stays served by
// the old one. It knows nothing of sessions: states are opaque bytes.
//
// The exchange:
//
//	old → new  hello    listener addresses (their sockets attached), next session id
//	new → old  ready    the new process serves on the listeners
//	old → new  session  a session's state (its client socket, and backend socket if any)
//	new → old  ack      taken, or refused with the reason
//	old → new  done     every session that could move has moved
package upgrade

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
)

// Message kinds.
const (
	KindHello   = "hello"
	KindReady   = "ready"
	KindSession = "session"
	KindAck     = "ack"
	KindDone    = "done"
)

// maxFiles bounds the descriptors one message carries: a hello with every
// listener, a session with its two sockets.
const maxFiles = 64

// chunk bounds one datagram: a state larger than this (a session with many
// prepared statements) travels in several.
const chunk = 48 << 10

// header is one datagram's envelope; Body's chunks join into the message.
type header struct {
	Kind string `json:"k"`
	More bool   `json:"m,omitempty"` // chunks of this message follow
	Body []byte `json:"b,omitempty"`
}

// Channel is one end of the socket pair. Send and Recv may run in two
// goroutines; sends are serialized.
type Channel struct {
	conn   *net.UnixConn
	sendMu sync.Mutex
}

// Pair makes the socket pair: the parent's Channel, and the file to give
// the child (as an inherited descriptor).
func Pair() (*Channel, *os.File, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("upgrade: socket pair: %w", err)
	}
	mine := os.NewFile(uintptr(fds[0]), "upgrade-parent")
	defer mine.Close()
	ch, err := FromFile(mine)
	if err != nil {
		syscall.Close(fds[1])
		return nil, nil, err
	}
	return ch, os.NewFile(uintptr(fds[1]), "upgrade-child"), nil
}

// FromFile makes a Channel of an inherited socket (the child's end); f may
// be closed afterwards.
func FromFile(f *os.File) (*Channel, error) {
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("upgrade: channel: %w", err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, errors.New("upgrade: channel is not a Unix socket")
	}
	return &Channel{conn: uc}, nil
}

// Close closes this end; the other end reads EOF.
func (c *Channel) Close() error { return c.conn.Close() }

// Send sends a message of kind with v as JSON, and files attached to it.
func (c *Channel) Send(kind string, v any, files ...*os.File) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("upgrade: encode %s: %w", kind, err)
	}
	if len(files) > maxFiles {
		return fmt.Errorf("upgrade: %d descriptors in one message, at most %d", len(files), maxFiles)
	}
	var rights []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		rights = syscall.UnixRights(fds...)
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	for first := true; first || len(body) > 0; first = false {
		n := min(len(body), chunk)
		h := header{Kind: kind, More: n < len(body), Body: body[:n]}
		body = body[n:]
		dgram, err := json.Marshal(h)
		if err != nil {
			return err
		}
		var oob []byte
		if first {
			oob = rights
		}
		if _, _, err := c.conn.WriteMsgUnix(dgram, oob, nil); err != nil {
			return fmt.Errorf("upgrade: send %s: %w", kind, err)
		}
	}
	return nil
}

// Recv receives the next message: its kind, its JSON body and the files
// attached (the caller owns them).
func (c *Channel) Recv() (kind string, body json.RawMessage, files []*os.File, err error) {
	buf := make([]byte, 2*chunk+1024)
	oob := make([]byte, syscall.CmsgSpace(maxFiles*4))
	for {
		n, oobn, flags, _, err := c.conn.ReadMsgUnix(buf, oob)
		if err != nil {
			closeAll(files)
			return "", nil, nil, err
		}
		if flags&(syscall.MSG_TRUNC|syscall.MSG_CTRUNC) != 0 {
			closeAll(files)
			return "", nil, nil, errors.New("upgrade: message truncated")
		}
		if n == 0 {
			closeAll(files)
			return "", nil, nil, errEOF
		}
		got, err := parseRights(oob[:oobn])
		if err != nil {
			closeAll(files)
			return "", nil, nil, err
		}
		files = append(files, got...)
		var h header
		if err := json.Unmarshal(buf[:n], &h); err != nil {
			closeAll(files)
			return "", nil, nil, fmt.Errorf("upgrade: bad message: %w", err)
		}
		kind = h.Kind
		body = append(body, h.Body...)
		if !h.More {
			return kind, body, files, nil
		}
	}
}

// errEOF is the other end gone.
var errEOF = errors.New("upgrade: the other process closed the channel")

func parseRights(oob []byte) ([]*os.File, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("upgrade: control message: %w", err)
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := syscall.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			syscall.CloseOnExec(fd)
			files = append(files, os.NewFile(uintptr(fd), "inherited"))
		}
	}
	return files, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
