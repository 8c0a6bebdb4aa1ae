package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/frontend"
)

// ListenerFiles returns copies of the listening sockets (client listeners,
// the admin SQL port, the admin HTTP port) with their configured
// addresses, for the new process of a live upgrade; the caller closes the
// files once sent.
func (p *Proxy) ListenerFiles() (addrs []string, files []*os.File, err error) {
	cfg := p.runningConfig()
	add := func(addr string, ln net.Listener) {
		if ln == nil || err != nil {
			return
		}
		tl, ok := ln.(*net.TCPListener)
		if !ok {
			err = fmt.Errorf("listener %s is not TCP", addr)
			return
		}
		f, ferr := tl.File()
		if ferr != nil {
			err = fmt.Errorf("listener %s: %w", addr, ferr)
			return
		}
		addrs, files = append(addrs, addr), append(files, f)
	}
	for i, ln := range p.lns {
		add(cfg.Listeners[i].Address, ln)
	}
	add(cfg.Admin.SQL, p.adminLn)
	if p.admin != nil {
		add(cfg.Admin.HTTP, p.admin.Listener())
	}
	if err != nil {
		for _, f := range files {
			f.Close()
		}
		return nil, nil, err
	}
	return addrs, files, nil
}

// NextSessionID is above every session id given out so far.
func (p *Proxy) NextSessionID() uint32 { return p.ids.Load() + 1 }

// SetNextSessionID makes the sessions of this process number from id on
// (the new process of a live upgrade: ids stay unique across both). Call
// it before Start.
func (p *Proxy) SetNextSessionID(id uint32) {
	if id > 0 {
		p.ids.Store(id - 1)
	}
}

// SessionSender sends a session's state and sockets to the new process;
// nil when it took them.
type SessionSender func(state []byte, files ...*os.File) error

// HandOff moves the client sessions to the new process of a live upgrade:
// the admin ports stop serving (the new process serves them on the same
// sockets), and every client listener's sessions move as they can
// (frontend.Server.HandOff) until none is left or ctx ends. It returns how
// many stayed; Shutdown drains them.
func (p *Proxy) HandOff(ctx context.Context, send SessionSender) int {
	if p.admin != nil {
		_ = p.admin.Close()
	}
	if p.adminSQL != nil {
		p.adminSQL.StopAccepting()
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	left := 0
	for i, srv := range p.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := srv.HandOff(ctx.Done(), func(h *frontend.Handoff, files []*os.File) error {
				h.Listener = i
				state, err := json.Marshal(h)
				if err != nil {
					return err
				}
				return send(state, files...)
			})
			mu.Lock()
			left += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	return left
}

// Adopt serves a session the old process of a live upgrade handed over:
// files are its client socket and, when it held one, its backend
// connection's. It closes the files.
func (p *Proxy) Adopt(state []byte, files []*os.File) error {
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	var h frontend.Handoff
	if err := json.Unmarshal(state, &h); err != nil {
		return fmt.Errorf("session state: %w", err)
	}
	if h.Listener < 0 || h.Listener >= len(p.servers) {
		return fmt.Errorf("session of listener %d, which this process does not have", h.Listener)
	}
	if len(files) == 0 || (h.Backend != nil && len(files) < 2) {
		return errors.New("session sockets missing")
	}
	var pinned *backend.Conn
	if h.Backend != nil {
		pool := p.poolNamed(h.Backend.Pool)
		if pool == nil {
			return fmt.Errorf("backend pool %s is not in this process's configuration", h.Backend.Pool)
		}
		var err error
		if pinned, err = pool.Adopt(files[1], *h.Backend); err != nil {
			return err
		}
	}
	if err := p.servers[h.Listener].Adopt(&h, files[0], pinned); err != nil {
		if pinned != nil {
			pinned.Pool().Forget(pinned) // the old process keeps serving it
		}
		return err
	}
	return nil
}

// poolNamed finds a server's pool by name (cluster/primary, cluster/replicaN).
func (p *Proxy) poolNamed(name string) *backend.Pool {
	for _, nc := range p.clusterList() {
		for _, s := range nc.cluster.Servers() {
			if s.Pool.Name == name {
				return s.Pool
			}
		}
	}
	return nil
}
