package planner

import (
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
)

// LOCK TABLES on a sharded schema: each cluster holding some of the
// tables named locks them on the session's connection there, which stays
// pinned until UNLOCK TABLES; the statements in between reach the
// sub-tables through those connections, as one server's session reaches
// its locked tables. Which clusters the session holds locks on is its
// own state (Session.LockedClusters); undoing a LOCK TABLES that failed
// half-way is the session's too (engine.Cursor.UnlockTables).

// lockTables binds LOCK TABLES: the lock statement of each cluster
// (Keyspace.LockTables), and UNLOCK TABLES on clusters the session had
// locked tables on and this statement does not, since a LOCK TABLES
// releases the locks held before it.
func (b *Binder) lockTables(ks *Keyspace, p []byte, s Session) engine.Primitive {
	if p[0] != mysql.ComQuery {
		return b.refuse("LOCK TABLES as a prepared statement on a sharded schema")
	}
	if s.InTransaction() {
		// LOCK TABLES commits the open transaction: shard by shard here.
		return b.refuse("LOCK TABLES inside a transaction on a sharded schema (it would commit the transaction one shard at a time); COMMIT first")
	}
	parts, err := ks.LockTables(p[1:], s.DB())
	if err != nil {
		return b.refuseErr(err)
	}
	for _, cl := range s.LockedClusters() {
		locks := false
		for _, part := range parts {
			locks = locks || part.Cluster == cl
		}
		if !locks {
			parts = append(parts, engine.Part{Cluster: cl, Query: unlockTablesCmd})
		}
	}
	return b.useFanout(parts, true, true)
}

// unlockTablesCmd is UNLOCK TABLES as a command.
var unlockTablesCmd = append([]byte{mysql.ComQuery}, "UNLOCK TABLES"...)

// unlockTables binds UNLOCK TABLES: on every cluster where the session
// holds table locks, or where it is when it holds none (it may hold a
// FLUSH TABLES … WITH READ LOCK taken outside the schema, and the server
// answers OK either way). BACKUP UNLOCK runs where the session is.
func (b *Binder) unlockTables(st router.Stmt, p []byte, s Session) engine.Primitive {
	locked := s.LockedClusters()
	if len(locked) == 0 || len(locked) == 1 && locked[0] == s.Cluster() || p[0] != mysql.ComQuery || !router.IsUnlockTables(p[1:]) {
		return b.here(st, s)
	}
	b.parts = b.parts[:0]
	for _, cl := range locked {
		b.parts = append(b.parts, engine.Part{Cluster: cl})
	}
	return b.useFanout(b.parts, true, false)
}
