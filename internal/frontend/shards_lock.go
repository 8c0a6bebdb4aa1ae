package frontend

import (
	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/planner"
	"github.com/shardgate/shardgate/internal/router"
)

// LOCK TABLES on a sharded schema: each cluster holding some of the
// tables named locks them on the session's connection there, which stays
// pinned (pinLock) until UNLOCK TABLES; the statements in between reach
// the sub-tables through those connections, as one server's session
// reaches its locked tables.

// planLockTables plans LOCK TABLES: the lock statement of each cluster
// (planner.Keyspace.LockTables), and UNLOCK TABLES on clusters the
// session had locked tables on and this statement does not, since a
// LOCK TABLES releases the locks held before it.
func (s *Session) planLockTables(ks *planner.Keyspace, p []byte) engine.Primitive {
	if p[0] != mysql.ComQuery {
		return s.refuse1235("This version of shardgate doesn't yet support '%s'", "LOCK TABLES as a prepared statement on a sharded schema")
	}
	if s.inTrx() {
		// LOCK TABLES commits the open transaction: shard by shard here.
		return s.refuse1235("This version of shardgate doesn't yet support '%s'", "LOCK TABLES inside a transaction on a sharded schema (it would commit the transaction one shard at a time); COMMIT first")
	}
	parts, err := ks.LockTables(p[1:], s.db)
	if err != nil {
		return s.refuseErr(err)
	}
	for _, cl := range s.lockedClusters() {
		locks := false
		for _, part := range parts {
			locks = locks || part.Cluster == cl
		}
		if !locks {
			parts = append(parts, engine.Part{Cluster: cl, Query: unlockTables})
		}
	}
	return s.useFanout(parts, true, true)
}

// unlockTables is UNLOCK TABLES as a command.
var unlockTables = append([]byte{mysql.ComQuery}, "UNLOCK TABLES"...)

// planUnlockTables plans UNLOCK TABLES: on every cluster where the session
// holds table locks, or where it is when it holds none (it may hold a
// FLUSH TABLES … WITH READ LOCK taken outside the schema, and the server
// answers OK either way). BACKUP UNLOCK runs where the session is.
func (s *Session) planUnlockTables(st router.Stmt, p []byte) engine.Primitive {
	locked := s.lockedClusters()
	if len(locked) == 0 || len(locked) == 1 && locked[0] == s.cl || p[0] != mysql.ComQuery || !router.IsUnlockTables(p[1:]) {
		return planner.PlanCluster(&s.planned, s.cl, s.user.Policy(), st, s)
	}
	s.parts = s.parts[:0]
	for _, cl := range locked {
		s.parts = append(s.parts, engine.Part{Cluster: cl})
	}
	return s.useFanout(s.parts, true, false)
}

// UnlockTables implements engine.Cursor. One server's failed LOCK TABLES
// holds no lock, neither the tables it named nor those locked before it:
// the connections holding table locks on other clusters (those whose part
// of the statement ran before, those it had not reached yet that held an
// earlier statement's) run UNLOCK TABLES and are let go of unless other
// state keeps them. The current connection, where the statement failed,
// holds none (the server released them) and is not sent a statement, so
// that the error stays there for SHOW WARNINGS.
func (s *Session) UnlockTables() bool {
	s.pins &^= pinLock
	if s.pinned != nil && s.pins == 0 {
		s.release(s.pinned)
	}
	goOn := true
	kept := s.others[:0]
	for _, h := range s.others {
		if h.pins&pinLock == 0 {
			kept = append(kept, h)
			continue
		}
		h.pins &^= pinLock
		if err := h.conn.Exec("UNLOCK TABLES"); err != nil && !mysql.IsSQLError(err) {
			s.logger().Warn("backend connection failed undoing a LOCK TABLES that failed on another shard",
				"backend", h.conn.Pool().Addr(), "err", err)
			h.conn.Pool().Discard(h.conn, true)
			// Locks were all it held, unless the session keeps state there
			// (user variables...), which is lost with it.
			goOn = goOn && h.pins&^pinHeld == 0
			continue
		}
		if h.pins != 0 {
			kept = append(kept, h)
			continue
		}
		s.releaseDirty(h.conn) // LOCK TABLES marked it dirty: reset before reuse
	}
	clear(s.others[len(kept):])
	s.others = kept
	if !goOn {
		s.logger().Warn("closing client whose session state was lost with its backend connection")
	}
	return goOn
}

// lockedClusters are the clusters whose connection the session holds for
// table locks (pinLock), the current one first.
func (s *Session) lockedClusters() []*backend.Cluster {
	var cls []*backend.Cluster
	if s.pinned != nil && s.pins&pinLock != 0 {
		cls = append(cls, s.cl)
	}
	for _, h := range s.others {
		if h.pins&pinLock != 0 {
			cls = append(cls, h.cl)
		}
	}
	return cls
}
