package frontend

import (
	"fmt"
	"log/slog"
	"sync"
	"syscall"
	"time"
)

// parker holds idle client sessions without a goroutine each: a session
// idle for a while registers its socket here (one-shot) and its goroutine
// ends; when the socket becomes readable a new goroutine resumes it. A
// parked session costs only its heap objects (about 3 KB with its socket
// and connection), not the 4 KB minimum of a parked goroutine's stack.
// Busy sessions never come here. A parked session's idle timeout is no
// timer of its own (132 bytes each): the sweep that runs every second
// anyway ends those past their deadline (expire).
type parker struct {
	epfd int
	log  *slog.Logger

	mu     sync.Mutex
	parked map[int32]*Session // by socket fd
	closed bool
}

const parkingSupported = true

func newParker(log *slog.Logger) (*parker, error) {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	p := &parker{epfd: fd, log: log, parked: make(map[int32]*Session)}
	go p.run()
	return p, nil
}

// park registers s, idle on socket fd until deadline (zero: no idle
// timeout). After it returns true the caller must not touch s: another
// goroutine owns it.
func (p *parker) park(s *Session, fd int, deadline time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: int32(fd)}
	s.parkFD = int32(fd)
	s.parkUntil = deadline
	p.parked[s.parkFD] = s
	if err := syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		delete(p.parked, s.parkFD)
		return false
	}
	return true
}

// expire resumes, to end them, the parked sessions whose idle timeout has
// passed at now. The sweep calls it every sweepEvery, so a parked session
// ends at most that long after its deadline: its client asked for whole
// seconds (wait_timeout) or the operator for hours (client_idle_timeout).
// The sessions are taken under the lock that finds them due: a session
// resumed by its input meanwhile, and parked again with a new deadline,
// must not be ended for the old one.
func (p *parker) expire(now time.Time) {
	var due []*Session
	p.mu.Lock()
	for _, s := range p.parked {
		if !s.parkUntil.IsZero() && !now.Before(s.parkUntil) {
			p.takeLocked(s)
			due = append(due, s)
		}
	}
	p.mu.Unlock()
	for _, s := range due {
		s.wakeReason = wakeIdleTimeout
		go s.srv.commandLoop(s)
	}
}

// take removes s from the parked set; exactly one caller gets true and then
// owns the session.
func (p *parker) take(s *Session) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.parked[s.parkFD] != s {
		return false
	}
	p.takeLocked(s)
	return true
}

// takeLocked removes s, parked, from the parked set; p.mu is held.
func (p *parker) takeLocked(s *Session) {
	delete(p.parked, s.parkFD)
	_ = syscall.EpollCtl(p.epfd, syscall.EPOLL_CTL_DEL, int(s.parkFD), nil)
}

// wake resumes a parked session for a reason other than input (idle
// timeout, shutdown, KILL). It reports whether s was parked.
func (p *parker) wake(s *Session, why wakeReason) bool {
	if !p.take(s) {
		return false
	}
	s.wakeReason = why
	go s.srv.commandLoop(s)
	return true
}

// run waits for parked sockets to become readable and resumes their
// sessions. The timeout lets it notice close.
func (p *parker) run() {
	events := make([]syscall.EpollEvent, 128)
	for {
		n, err := syscall.EpollWait(p.epfd, events, 500)
		p.mu.Lock()
		closed := p.closed
		p.mu.Unlock()
		if closed {
			_ = syscall.Close(p.epfd)
			return
		}
		if err != nil {
			if err != syscall.EINTR {
				p.log.Warn("epoll_wait failed", "err", err)
				time.Sleep(10 * time.Millisecond)
			}
			continue
		}
		for _, ev := range events[:n] {
			p.mu.Lock()
			s := p.parked[ev.Fd]
			p.mu.Unlock()
			if s == nil || !p.take(s) {
				continue
			}
			s.wakeReason = wakeInput
			go s.srv.commandLoop(s)
		}
	}
}

// close stops the parker; sessions still parked are resumed with why.
func (p *parker) close(why wakeReason) {
	p.mu.Lock()
	p.closed = true // no session parks from now on
	all := make([]*Session, 0, len(p.parked))
	for _, s := range p.parked {
		all = append(all, s)
	}
	p.mu.Unlock()
	for _, s := range all {
		p.wake(s, why)
	}
}

// socketFD returns the client socket's descriptor, or -1 when the session
// cannot be parked (TLS, or not a socket).
func (s *Session) socketFD() int {
	if s.tls {
		return -1
	}
	sc, ok := s.client.NetConn().(syscall.Conn)
	if !ok {
		return -1
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	fd := -1
	_ = rc.Control(func(f uintptr) { fd = int(f) })
	return fd
}

// count reports how many sessions are parked.
func (p *parker) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.parked)
}
