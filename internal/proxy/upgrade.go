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
// addresses, for the new process of a live upgrade. The caller keeps the
// files until the hand-over ended (ResumeAccepting serves on them again if
// it failed), then closes them.
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

// NextSessionID is where the new process of a live upgrade numbers its
// sessions from: far above the ids this process gave out so far, as it
// goes on giving some out until the new one serves.
func (p *Proxy) NextSessionID() uint32 { return p.ids.Load() + 1<<20 }

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
// every client listener stops accepting (the new process accepts on the
// same sockets) and its sessions move as they can (frontend.Server.HandOff)
// until none is left, ctx ends or gone closes (the new process died). It
// returns how many stayed.
func (p *Proxy) HandOff(ctx context.Context, gone <-chan struct{}, send SessionSender) int {
	stop := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-gone:
		}
		close(stop)
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	left := 0
	for i, srv := range p.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := srv.HandOff(stop, func(h *frontend.Handoff, files []*os.File) error {
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

// StopAdmin ends the admin ports' service in this process, once a live
// upgrade's new process serves them on the same sockets.
func (p *Proxy) StopAdmin() {
	if p.admin != nil {
		_ = p.admin.Close()
	}
	if p.adminSQL != nil {
		p.adminSQL.StopAccepting()
	}
}

// ResumeAccepting serves the client listeners again on files (copies of
// their sockets, ListenerFiles) after a live upgrade whose new process
// died: this process is the one that serves, as before. It closes files.
func (p *Proxy) ResumeAccepting(addrs []string, files []*os.File) {
	byAddr := map[string]*os.File{}
	for i, a := range addrs {
		byAddr[a] = files[i]
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	cfg := p.runningConfig()
	for i, srv := range p.servers {
		f := byAddr[cfg.Listeners[i].Address]
		if f == nil {
			continue
		}
		ln, err := net.FileListener(f)
		if err != nil {
			p.log.Error("listener not resumed after the failed upgrade; restart this process", "addr", cfg.Listeners[i].Address, "err", err)
			continue
		}
		p.lns[i] = ln
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			if err := srv.ResumeAccepting(ln); err != nil {
				p.fail(err)
			}
		}()
	}
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
