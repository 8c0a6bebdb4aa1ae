package upgrade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// EnvFD names the inherited descriptor of the new process's end of the
// channel; its presence makes a start a live upgrade's.
const EnvFD = "SHARDGATE_UPGRADE_FD"

// Hello is the old process's first message.
type Hello struct {
	// Listeners are the listening sockets' addresses as configured, in the
	// order of the attached files.
	Listeners []string `json:"listeners"`
	// NextID is above every session id the old process gave out: the new
	// one numbers its sessions from there, so that ids stay unique.
	NextID uint32 `json:"next_id"`
}

// Ack answers a session.
type Ack struct {
	Refused string `json:"refused,omitempty"` // why the new process did not take it
}

// Parent is the old process's side of an upgrade.
type Parent struct {
	ch    *Channel
	cmd   *exec.Cmd
	acks  chan Ack
	ready chan error
	gone  chan struct{} // closed when the new process ended the channel
	mu    sync.Mutex    // one session at a time waits for its ack
}

// AckTimeout bounds the wait for the new process's answer to a session:
// past it the new process is taken for hung and stopped (Session).
var AckTimeout = 10 * time.Second

// Start starts the new binary exe with args (the old process's own
// arguments) and the channel's other end inherited as descriptor 3.
func Start(exe string, args []string, stdout, stderr io.Writer) (*Parent, error) {
	ch, theirs, err := Pair()
	if err != nil {
		return nil, err
	}
	defer theirs.Close()
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Env = append(os.Environ(), EnvFD+"=3")
	if err := cmd.Start(); err != nil {
		ch.Close()
		return nil, fmt.Errorf("upgrade: start %s: %w", exe, err)
	}
	p := &Parent{ch: ch, cmd: cmd, acks: make(chan Ack, 1), ready: make(chan error, 1), gone: make(chan struct{})}
	go p.read()
	go func() { _ = cmd.Wait() }() // the new process outlives this one; reap it if it fails first
	return p, nil
}

// Pid is the new process's.
func (p *Parent) Pid() int { return p.cmd.Process.Pid }

// read dispatches the new process's answers.
func (p *Parent) read() {
	for {
		kind, body, files, err := p.ch.Recv()
		closeAll(files)
		if err != nil {
			select {
			case p.ready <- fmt.Errorf("the new process ended the upgrade: %w", err):
			default:
			}
			close(p.acks)
			close(p.gone)
			return
		}
		switch kind {
		case KindReady:
			select {
			case p.ready <- nil:
			default:
			}
		case KindAck:
			var a Ack
			if err := json.Unmarshal(body, &a); err != nil {
				a.Refused = "unreadable ack: " + err.Error()
			}
			p.acks <- a
		}
	}
}

// Hello hands over the listening sockets.
func (p *Parent) Hello(h Hello, listeners []*os.File) error {
	return p.ch.Send(KindHello, h, listeners...)
}

// WaitReady waits until the new process serves on the listeners.
func (p *Parent) WaitReady(ctx context.Context) error {
	select {
	case err := <-p.ready:
		return err
	case <-ctx.Done():
		return fmt.Errorf("the new process did not get ready: %w", ctx.Err())
	}
}

// Gone is closed once the new process has ended the channel (it exited,
// or it closed its end): the upgrade failed.
func (p *Parent) Gone() <-chan struct{} { return p.gone }

// Session hands over one session and waits for the new process's answer:
// nil when it took the session (the caller then lets go of its sockets
// without closing the connections: the new process holds them). Without
// an answer within AckTimeout the new process is stopped, so that the
// session, which it may or may not have taken, is served by this one
// alone.
func (p *Parent) Session(state []byte, files ...*os.File) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gone:
		return errors.New("the new process is gone")
	default:
	}
	if err := p.ch.Send(KindSession, json.RawMessage(state), files...); err != nil {
		return err
	}
	select {
	case a, ok := <-p.acks:
		if !ok {
			return errors.New("the new process is gone")
		}
		if a.Refused != "" {
			return errors.New(a.Refused)
		}
		return nil
	case <-time.After(AckTimeout):
		p.Abort()
		<-p.gone
		return fmt.Errorf("the new process did not answer within %v; stopped it", AckTimeout)
	}
}

// Done tells the new process that no more sessions come, and closes; a
// session waiting for its answer gets it first.
func (p *Parent) Done() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	err := p.ch.Send(KindDone, struct{}{})
	p.ch.Close()
	return err
}

// Abort stops the new process (an upgrade that failed before ready).
func (p *Parent) Abort() {
	p.ch.Close()
	_ = p.cmd.Process.Kill()
}

// Child is the new process's side.
type Child struct {
	ch *Channel
}

// Inherited returns the channel a live upgrade started this process with,
// or nil for an ordinary start.
func Inherited() (*Child, error) {
	v := os.Getenv(EnvFD)
	if v == "" {
		return nil, nil
	}
	os.Unsetenv(EnvFD) // not for this process's own upgrades
	fd, err := strconv.Atoi(v)
	if err != nil {
		return nil, fmt.Errorf("upgrade: $%s=%q: %w", EnvFD, v, err)
	}
	f := os.NewFile(uintptr(fd), "upgrade-child")
	defer f.Close()
	ch, err := FromFile(f)
	if err != nil {
		return nil, err
	}
	return &Child{ch: ch}, nil
}

// Hello reads the listening sockets handed over, by address.
func (c *Child) Hello() (Hello, map[string]*os.File, error) {
	kind, body, files, err := c.ch.Recv()
	if err != nil {
		return Hello{}, nil, err
	}
	var h Hello
	if kind != KindHello {
		closeAll(files)
		return h, nil, fmt.Errorf("upgrade: expected hello, got %q", kind)
	}
	if err := json.Unmarshal(body, &h); err != nil || len(h.Listeners) != len(files) {
		closeAll(files)
		return h, nil, fmt.Errorf("upgrade: bad hello (%d addresses, %d sockets): %v", len(h.Listeners), len(files), err)
	}
	byAddr := make(map[string]*os.File, len(files))
	for i, a := range h.Listeners {
		byAddr[a] = files[i]
	}
	return h, byAddr, nil
}

// Ready tells the old process that this one serves.
func (c *Child) Ready() error { return c.ch.Send(KindReady, struct{}{}) }

// Sessions receives sessions until the old process is done; take adopts
// one (nil) or says why not, which the old process hears.
func (c *Child) Sessions(take func(state []byte, files []*os.File) error) error {
	defer c.ch.Close()
	for {
		kind, body, files, err := c.ch.Recv()
		if err != nil {
			return err
		}
		switch kind {
		case KindDone:
			closeAll(files)
			return nil
		case KindSession:
			var a Ack
			if err := take(body, files); err != nil {
				a.Refused = err.Error()
				closeAll(files)
			}
			if err := c.ch.Send(KindAck, a); err != nil {
				return err
			}
		default:
			closeAll(files)
		}
	}
}
