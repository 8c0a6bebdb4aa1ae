package backend

import (
	"container/list"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
)

// ConnState is what the proxy knows of a backend connection's server
// session: what a live upgrade moves with the connection's socket, so that
// the new process goes on with the same server session (user variables,
// temporary tables, locks, statements prepared on it).
type ConnState struct {
	Pool                string `json:"pool"`
	Addr                string `json:"addr"` // the server it is connected to, as the pool dials it
	ThreadID            uint32 `json:"thread_id"`
	Caps                uint32 `json:"caps"`
	ServerVersion       string `json:"server_version"`
	FoundRows           bool   `json:"found_rows,omitempty"`
	DB                  string `json:"db"`
	Vars                Vars   `json:"vars,omitempty"`
	VarsFP              uint64 `json:"vars_fp"`
	LastInsertID        uint64 `json:"last_insert_id,omitempty"`
	LastInsertIDUnknown bool   `json:"last_insert_id_unknown,omitempty"`
	Dirty               bool   `json:"dirty,omitempty"`
	Status              uint16 `json:"status"`
	Stmts               []Stmt `json:"stmts,omitempty"`
	Salt                []byte `json:"salt,omitempty"`
	Plugin              string `json:"plugin,omitempty"`
}

// HandOff returns a copy of the connection's socket and its state, for a
// live upgrade. The connection must be between statements with nothing
// queued, and not use TLS (whose state lives in this process). It stays
// usable: Forget lets go of it once the new process took it.
func (c *Conn) HandOff() (*os.File, ConnState, error) {
	if c.Pending() > 0 || c.Buffered() > 0 || c.pending.active || c.sent.active {
		return nil, ConnState{}, errors.New("backend connection busy")
	}
	tc, ok := c.NetConn().(*net.TCPConn)
	if !ok {
		return nil, ConnState{}, errors.New("backend connection uses TLS")
	}
	f, err := tc.File()
	if err != nil {
		return nil, ConnState{}, fmt.Errorf("backend connection socket: %w", err)
	}
	st := ConnState{Pool: c.pool.Name, Addr: c.pool.Addr(), ThreadID: c.ThreadID, Caps: c.Caps, ServerVersion: c.ServerVersion,
		FoundRows: c.FoundRows, DB: c.DB, Vars: c.Vars, VarsFP: c.VarsFP, LastInsertID: c.LastInsertID,
		LastInsertIDUnknown: c.LastInsertIDUnknown, Dirty: c.Dirty, Status: c.Status, Salt: c.salt, Plugin: c.plugin}
	for e := c.stmtLRU.Back(); e != nil; e = e.Prev() {
		st.Stmts = append(st.Stmts, *e.Value.(*Stmt))
	}
	return f, st, nil
}

// Forget lets go of a connection handed over to another process: its
// slot is free, and this process's descriptor closes without ending the
// connection, which the other process holds.
func (p *Pool) Forget(c *Conn) {
	_ = c.Close()
	p.releaseSlot()
}

// Adopt takes over a connection another process handed over (HandOff),
// counted in the pool's open connections (beyond max_open if need be),
// in use by the caller, which releases it as any acquired connection.
func (p *Pool) Adopt(f *os.File, st ConnState) (*Conn, error) {
	if st.Addr != p.Addr() {
		// The new configuration moved this pool to another server: the
		// session's connection is not one of its connections.
		return nil, fmt.Errorf("backend connection to %s, but pool %s now connects to %s", st.Addr, p.Name, p.Addr())
	}
	nc, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("adopt backend connection: %w", err)
	}
	c := &Conn{Conn: mysql.NewConn(nc), pool: p, createdAt: time.Now(), lastUsed: time.Now(), idleIdx: -1, uses: 1,
		ThreadID: st.ThreadID, Caps: st.Caps, ServerVersion: st.ServerVersion, FoundRows: st.FoundRows,
		DB: st.DB, Vars: st.Vars, VarsFP: st.VarsFP, LastInsertID: st.LastInsertID,
		LastInsertIDUnknown: st.LastInsertIDUnknown, Dirty: st.Dirty, Status: st.Status, salt: st.Salt, plugin: st.Plugin,
		stmts: make(map[string]*list.Element), stmtLRU: list.New(), stmtLimit: p.dial.StmtLimit}
	if c.stmtLimit <= 0 {
		c.stmtLimit = 256
	}
	for i := range st.Stmts {
		stmt := st.Stmts[i]
		c.stmts[stmt.SQL] = c.stmtLRU.PushFront(&stmt)
	}
	p.mu.Lock()
	c.epoch = p.epoch
	p.open++
	p.mu.Unlock()
	return c, nil
}
