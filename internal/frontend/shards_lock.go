package frontend

import (
	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
)

// LOCK TABLES on a sharded schema: each cluster holding some of the
// tables named locks them on the session's connection there, which stays
// pinned (pinLock) until UNLOCK TABLES; the statements in between reach
// the sub-tables through those connections, as one server's session
// reaches its locked tables. The planner binds LOCK and UNLOCK TABLES
// (planner/bind_lock.go) from the clusters the session holds locks on
// (lockedClusters); undoing a LOCK TABLES that failed half-way is the
// session's.

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
