package frontend

import (
	"errors"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/planner"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sharding"
)

// heldConn is a connection the session holds on a cluster other than the
// one its current statement runs on, with the reasons it is held. A
// session of a sharded schema holds one per shard its transaction (or
// other pinned state) touched; an unsharded session never has any.
type heldConn struct {
	cl   *backend.Cluster
	conn *backend.Conn
	pins pinReason
}

// enter makes cl the cluster the session's statement runs on (s.cl): the
// connection held on the previous cluster, if any, is set aside with its
// pin reasons, and the one held on cl, if any, becomes s.pinned again.
// Everything that works on s.pinned and s.pins (routing, pinning, release,
// failure handling) thus sees the connection of the statement's cluster.
func (s *Session) enter(cl *backend.Cluster) {
	if cl == s.cl {
		return
	}
	if s.pinned != nil {
		s.others = append(s.others, heldConn{cl: s.cl, conn: s.pinned, pins: s.pins})
	}
	s.pinned, s.pins = nil, 0
	for i, h := range s.others {
		if h.cl == cl {
			s.pinned, s.pins = h.conn, h.pins
			s.others = append(s.others[:i], s.others[i+1:]...)
			break
		}
	}
	s.cl = cl
}

// heldPins is the union of the pin reasons of every connection the
// session holds, the current cluster's included.
func (s *Session) heldPins() pinReason {
	p := s.pins
	for _, h := range s.others {
		p |= h.pins
	}
	return p
}

// releaseOthers lets go of the connections held on other clusters, as
// close does with the current one.
func (s *Session) releaseOthers() {
	for _, h := range s.others {
		if h.pins&^pinHeld == 0 && !h.conn.Dirty {
			h.conn.Pool().Release(h.conn)
		} else {
			s.releaseDirty(h.conn)
		}
	}
	s.others = s.others[:0]
}

// homeCluster is where a user's statements outside sharded schemas go:
// its cluster, or, for a user that has none and reaches its data through
// schemas, the default cluster of its default database's schema (else of
// the first schema by name).
func (s *Session) homeCluster(u *User) *backend.Cluster {
	if u.Cluster != nil {
		return u.Cluster
	}
	kss := s.srv.opt.Keyspaces
	if ks := kss.Lookup(u.DefaultDB); ks != nil {
		return ks.Default
	}
	first := ""
	for name := range kss {
		if first == "" || name < first {
			first = name
		}
	}
	if first == "" {
		return nil
	}
	return kss[first].Default
}

// planSharded plans a statement on a sharded schema. Statements about
// the session rather than tables (BEGIN, COMMIT, SET …) run where the
// session is; COMMIT and ROLLBACK of a transaction that touched several
// shards end it on each. A shard hint sends a statement to the named
// shard as written.
func (s *Session) planSharded(ks *planner.Keyspace, st router.Stmt, p []byte) engine.Primitive {
	switch st.Kind {
	case router.KindCommit, router.KindRollback:
		if len(s.others) > 0 {
			return engine.EndTransaction{}
		}
		return planner.PlanCluster(&s.planned, s.cl, s.user.Policy(), st, s)
	case router.KindBegin, router.KindSet, router.KindSavepoint:
		return planner.PlanCluster(&s.planned, s.cl, s.user.Policy(), st, s)
	}
	if st.Flags&router.FlagHintShard != 0 {
		if name, ok := router.ShardHint(p[1:]); ok {
			cl := ks.Shard(name)
			if cl == nil {
				return s.refuse1235("shardgate: shard hint names %q, which is not a shard of schema %s", name, ks.Schema.Name)
			}
			return s.routeToShard(cl, st)
		}
	}
	if s.exec.ps != nil {
		return s.refuse1235("This version of shardgate doesn't yet support '%s'", "prepared statements on a sharded schema")
	}
	if s.stream != nil {
		return s.refuse1235("This version of shardgate doesn't yet support '%s'", "statements larger than the packet buffer on a sharded schema")
	}
	return s.planStatement(ks, st, p[1:])
}

// planStatement plans a text statement on a sharded schema by its cached
// plan: where its tables are, and for sharded ones, which sub-tables its
// key values pick.
func (s *Session) planStatement(ks *planner.Keyspace, st router.Stmt, sql []byte) engine.Primitive {
	router.ScanShape(sql, &s.shape)
	plan := ks.Plan(sql, &s.shape, s.db)
	if plan.Err != nil {
		return s.refuseErr(plan.Err)
	}
	an := plan.An
	switch an.Placement {
	case planner.Reference:
		if an.Write {
			return s.everyShard(ks, st)
		}
		return s.routeToShard(ks.Default, st)
	case planner.Sharded:
		s.vals.Reset(sql, &s.shape)
		target, err := an.Route(&s.vals)
		if err != nil {
			return s.refuseErr(err)
		}
		if an.Insert != nil && target.Len() > 1 {
			return s.refuse1235("This version of shardgate doesn't yet support '%s'", "a multi-row INSERT whose rows go to several sub-tables")
		}
		return s.subTables(ks, plan, st, sql, target)
	}
	return s.routeToShard(ks.Default, st)
}

// subTables plans a sharded statement on the sub-tables of target: one
// Route, or a Scatter (reads) or Fanout (writes) over several.
func (s *Session) subTables(ks *planner.Keyspace, plan *planner.Plan, st router.Stmt, sql []byte, target planner.Target) engine.Primitive {
	s.renderParts(ks, plan, sql, target)
	if len(s.parts) == 1 {
		prim := s.routeToShard(s.parts[0].Cluster, st)
		if prim == engine.Primitive(&s.planned) {
			s.planned.Query = s.parts[0].Query
		}
		return prim
	}
	if plan.An.Write {
		for _, p := range s.parts {
			if e := s.crossShardWrite(p.Cluster, st); e != nil {
				return s.refuseErr(e)
			}
		}
		s.fanout.Parts, s.fanout.OneServer = s.parts, false
		return &s.fanout
	}
	s.scatter.Parts = s.parts
	s.scatter.ReplicaOK = planner.ReplicaOK(s.parts[0].Cluster, s.user.Policy(), st, s)
	return &s.scatter
}

// renderParts renders the statement for each sub-table of target into
// s.parts, as COM_QUERY packets in one buffer.
func (s *Session) renderParts(ks *planner.Keyspace, plan *planner.Plan, sql []byte, target planner.Target) {
	b := s.partSQL[:0]
	s.partEnds = s.partEnds[:0]
	s.parts = s.parts[:0]
	for i := target.Next(0); i >= 0; i = target.Next(i + 1) {
		b = append(b, mysql.ComQuery)
		s.sub[0] = i
		b = plan.Tmpl.Append(b, sql, &s.shape, s.sub[:])
		s.partEnds = append(s.partEnds, len(b))
		s.parts = append(s.parts, engine.Part{Cluster: ks.Shard(plan.An.Group.Layout.Shard(i))})
	}
	s.partSQL = b
	start := 0
	for j, end := range s.partEnds {
		s.parts[j].Query = b[start:end:end]
		start = end
	}
}

// everyShard plans a write to a reference table: the statement as written
// on every shard of the schema, answered with one server's OK.
func (s *Session) everyShard(ks *planner.Keyspace, st router.Stmt) engine.Primitive {
	s.parts = s.parts[:0]
	for _, name := range ks.Schema.Shards {
		cl := ks.Shard(name)
		if e := s.crossShardWrite(cl, st); e != nil {
			return s.refuseErr(e)
		}
		s.parts = append(s.parts, engine.Part{Cluster: cl})
	}
	s.fanout.Parts, s.fanout.OneServer = s.parts, true
	return &s.fanout
}

// refuseErr plans the answer err: a refusal or an error the server would
// give, as a *mysql.SQLError.
func (s *Session) refuseErr(err error) engine.Primitive {
	var se *mysql.SQLError
	if !errors.As(err, &se) {
		se = mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax, "shardgate: %v", err)
	}
	s.refusal = engine.Refuse{Err: se}
	return &s.refusal
}

// Acquire implements engine.Cursor.
func (s *Session) Acquire(cl *backend.Cluster, replicaOK bool) (*backend.Conn, bool) {
	s.enter(cl)
	s.joinTransaction(nil)
	s.pinBefore(s.cmd.st)
	if e := s.routeQuery(replicaOK); e != nil {
		return nil, s.writeErr(e)
	}
	c, ok := s.borrow(s.cmd.n)
	if c != nil {
		s.setRunning(c)
	}
	return c, ok
}

// Relay implements engine.Cursor.
func (s *Session) Relay(c *backend.Conn) *mysql.Relay {
	r := c.Relay(s.client, s.caps)
	r.RenameTable = s.renamer
	return r
}

// Done implements engine.Cursor.
func (s *Session) Done(c *backend.Conn, info *mysql.ResponseInfo) {
	s.setRunning(nil)
	s.after(c, info, s.cmd.st)
	if router.IsWrite(s.cmd.st) {
		s.wrote()
	}
	s.release(c)
}

// Failed implements engine.Cursor.
func (s *Session) Failed(c *backend.Conn, err error, sent bool) bool {
	s.setRunning(nil)
	return s.relayFailed(c, err, sent)
}

// Status implements engine.Cursor.
func (s *Session) Status() uint16 { return s.status() }

// Answer implements engine.Cursor.
func (s *Session) Answer(ok *mysql.OKPacket) bool {
	s.lastRowCount = int64(ok.AffectedRows)
	if ok.LastInsertID != 0 {
		s.lastInsertID = ok.LastInsertID
	}
	return s.writeOK(ok)
}

// renameSubTable gives a column definition naming a sub-table of a sharded
// schema its logical table's name, as one server holding every row would:
// GUI grids build their UPDATEs from it.
func (s *Session) renameSubTable(schema, orgTable []byte) ([]byte, bool) {
	ks := s.srv.opt.Keyspaces[string(schema)]
	if ks == nil {
		return nil, false
	}
	name, ok := sharding.LogicalName(orgTable)
	if !ok {
		return nil, false
	}
	t := ks.Schema.TableBytes(name)
	if t == nil || t.Type != sharding.TableSharded {
		return nil, false
	}
	return name, true
}

// routeToShard plans a statement that runs on shard cl, unless it is a
// write a transaction may not make there.
func (s *Session) routeToShard(cl *backend.Cluster, st router.Stmt) engine.Primitive {
	if e := s.crossShardWrite(cl, st); e != nil {
		s.refusal = engine.Refuse{Err: e}
		return &s.refusal
	}
	return planner.PlanCluster(&s.planned, cl, s.user.Policy(), st, s)
}

// refuse1235 plans the answer ER_NOT_SUPPORTED_YET with a message naming
// what is not supported.
func (s *Session) refuse1235(format string, args ...any) engine.Primitive {
	s.refusal = engine.Refuse{Err: mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax, format, args...)}
	return &s.refusal
}

// Fail implements engine.Cursor.
func (s *Session) Fail(e *mysql.SQLError) bool { return s.writeErr(e) }

// joinTransaction prepares a statement on a shard the session's open
// transaction has not touched yet: the connection it gets opens the
// transaction first, as the client's BEGIN did (in the round trip that
// syncs its state), and stays pinned. It records the client's BEGIN, on a
// sharded schema, to repeat it so.
func (s *Session) joinTransaction(q []byte) {
	if len(s.srv.opt.Keyspaces) == 0 {
		return
	}
	switch s.cmd.st.Kind {
	case router.KindBegin:
		// Not a BEGIN with more statements after it: those must run once.
		if len(q) > 0 && q[0] == mysql.ComQuery && s.stream == nil && s.cmd.st.Flags&router.FlagMultiStatement == 0 {
			s.beginSQL = append(s.beginSQL[:0], q[1:]...)
		}
		return
	case router.KindCommit, router.KindRollback:
		return
	}
	if s.pins&pinTrx == 0 && len(s.others) > 0 && s.heldPins()&pinTrx != 0 {
		s.pins |= pinTrx
		s.cmd.n |= needBegin
	}
}

// appendBegin appends the statement that opens the session's transaction
// on another shard to a state-sync batch.
func (s *Session) appendBegin(b []byte) []byte {
	if len(b) > 0 {
		b = append(b, ';')
	}
	if len(s.beginSQL) == 0 {
		return append(b, "START TRANSACTION"...)
	}
	return append(b, s.beginSQL...)
}

// EndTransaction implements engine.Cursor. The shards that only read end
// their part first, their answers unseen (a failure there loses nothing
// that was written); the shard that wrote, if any, ends last and its
// answer is the client's, so a failed COMMIT of the writes is what the
// client sees.
func (s *Session) EndTransaction(q []byte) bool {
	last := s.trxWriter
	if last == nil {
		last = s.cl
	}
	for i := 0; i < len(s.others); {
		h := s.others[i]
		if h.cl == last || h.pins&pinTrx == 0 {
			i++
			continue
		}
		s.others = append(s.others[:i], s.others[i+1:]...)
		s.endHeld(h, q)
	}
	s.trxWriter = nil
	return s.Run(last, false, q)
}

// endHeld ends the transaction of a connection held on another shard and
// lets it go unless other state keeps it.
func (s *Session) endHeld(h heldConn, q []byte) {
	err := h.conn.Exec(string(q[1:]))
	if err != nil && !isSQLError(err) {
		s.logger().Warn("backend connection failed ending a read-only part of a transaction", "backend", h.conn.Pool().Addr(), "err", err)
		h.conn.Pool().Discard(h.conn, true)
		return
	}
	h.pins &^= pinTrx | pinNextTrx | pinHeld
	if err != nil {
		h.conn.Dirty = true // its transaction state is unknown
	}
	if h.pins != 0 {
		s.others = append(s.others, h)
		return
	}
	if h.conn.Dirty {
		s.releaseDirty(h.conn)
		return
	}
	h.conn.Pool().Release(h.conn)
}

// crossShardWrite returns the refusal of a write on cl inside a
// transaction that already wrote on another shard (cross_shard_writes:
// refuse), or nil. The transaction stays open for the client to end.
func (s *Session) crossShardWrite(cl *backend.Cluster, st router.Stmt) *mysql.SQLError {
	if s.heldPins()&pinTrx == 0 && s.autocommit() {
		s.trxWriter = nil
		return nil
	}
	if !router.IsWrite(st) {
		return nil
	}
	if s.trxWriter == nil || s.trxWriter == cl {
		s.trxWriter = cl
		return nil
	}
	return mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax,
		"shardgate: this transaction already wrote to shard %s; a write to shard %s in the same transaction is refused (cross_shard_writes: refuse). COMMIT or ROLLBACK first",
		s.trxWriter.Name, cl.Name)
}
