package frontend

import (
	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/planner"
	"github.com/shardgate/shardgate/internal/router"
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
	return s.refuse1235("shardgate: statements on sharded schema %s are not routed yet; send them to one shard with /* shardgate:shard=NAME */", ks.Schema.Name)
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
		if q[0] == mysql.ComQuery && s.stream == nil && s.cmd.st.Flags&router.FlagMultiStatement == 0 {
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
