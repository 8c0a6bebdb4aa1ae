package backend

import "github.com/shardgate/shardgate/internal/mysql"

// A connection's state sync folded into the statement it prepares: the
// statements that bring the connection's session in step with a
// client's (USE, SET) are written ahead of the client's COM_QUERY in its
// packet, as one multi-statement, rather than costing a round trip of
// their own (a statement merged over four shards whose pooled
// connections all last served another session paid four). The reads
// consume their results (mysql.Conn.ExpectPrefix); the connection's
// record follows what the server reports: it becomes the target once
// they succeeded, stays as it was when the first failed (whose ERR is
// then the answer: the server ran nothing after it), and moves to the
// database alone when only the USE succeeded.
//
// Invariant: the record (DB, Vars, LastInsertID) always describes the
// server's session as of the last answer read. A deferred sync that no
// COM_QUERY carried can therefore be dropped at any time.

// SyncTarget is the session state a sync brings a connection to.
type SyncTarget struct {
	DB string
	// UseDB: the sync's first statement is USE DB (else the database
	// stays, or already is DB).
	UseDB  bool
	Vars   Vars
	VarsFP uint64
	// SetLastInsertID: the sync sets LAST_INSERT_ID() to LastInsertID.
	LastInsertID    uint64
	SetLastInsertID bool
}

// deferredSync is a sync's SQL (stmts statements, ';'-separated) and
// the state it brings the connection to; its buffers are reused.
type deferredSync struct {
	sql    []byte
	stmts  int
	to     SyncTarget
	active bool
}

// set makes d a copy of sql and to.
func (d *deferredSync) set(sql []byte, stmts int, to *SyncTarget) {
	vars := append(d.to.Vars[:0], to.Vars...)
	d.sql, d.stmts, d.to, d.active = append(d.sql[:0], sql...), stmts, *to, true
	d.to.Vars = vars
}

// DeferSync makes the next COM_QUERY written on c carry sql, stmts
// statements that bring c's session to the state to describes; c's
// record becomes that state once the server has run them. A sync
// deferred before and never sent is replaced (it was never run).
func (c *Conn) DeferSync(sql []byte, stmts int, to *SyncTarget) {
	c.pending.set(sql, stmts, to)
}

// SyncDeferred reports a sync waiting for the next COM_QUERY.
func (c *Conn) SyncDeferred() bool { return c.pending.active }

// DropDeferredSync forgets a sync that no command carried: the record
// still describes the server's session.
func (c *Conn) DropDeferredSync() { c.pending.active = false }

// Synced records that c's session is now in the state to describes.
func (c *Conn) Synced(to *SyncTarget) {
	c.DB = to.DB
	c.Vars = append(c.Vars[:0], to.Vars...)
	c.VarsFP = to.VarsFP
	if to.SetLastInsertID {
		c.LastInsertID, c.LastInsertIDUnknown = to.LastInsertID, false
	}
}

// writeQueryAfterSync queues COM_QUERY packet q (its command byte first)
// with the deferred sync's statements ahead of it, in one packet, and
// readies the reads to consume their results.
func (c *Conn) writeQueryAfterSync(q []byte) error {
	c.ResetSeq()
	b := append(c.BeginPacket(), mysql.ComQuery)
	b = append(b, c.pending.sql...)
	b = append(b, ';')
	b = append(b, q[1:]...)
	if err := c.EndPacket(b); err != nil {
		return err
	}
	c.expectSync()
	return nil
}

// expectSync moves the deferred sync, just written, to await its answer,
// which the reads consume.
func (c *Conn) expectSync() {
	// Swapped, so that both keep their buffers.
	c.pending, c.sent = c.sent, c.pending
	c.pending.active = false
	if c.onSyncAnswer == nil {
		c.onSyncAnswer = c.syncAnswered
	}
	c.Conn.ExpectPrefix(c.sent.stmts, c.onSyncAnswer)
}

// syncAnswered records what the server did with the sync c.sent: ok of
// its statements succeeded, and the next failed when failed.
func (c *Conn) syncAnswered(ok int, failed bool) {
	d := &c.sent
	d.active = false
	switch {
	case !failed:
		c.Synced(&d.to)
	case ok > 0 && d.to.UseDB:
		c.DB = d.to.DB // the USE ran, the SET after it did not
	}
}

// beforeCommand settles a deferred sync before c writes command cmd:
// a COM_QUERY carries it (true: written by the caller with
// writeQueryAfterSync); a command with an answer that is not one cannot,
// and it is dropped, the record still being the server's; a command
// without an answer (a queued COM_STMT_CLOSE) leaves it for the next.
func (c *Conn) beforeCommand(cmd byte) (carry bool) {
	if !c.pending.active {
		return false
	}
	if cmd == mysql.ComQuery {
		return true
	}
	if hasReply(cmd) {
		c.pending.active = false
	}
	return false
}
