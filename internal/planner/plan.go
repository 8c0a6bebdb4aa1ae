// Package planner turns a client statement and a small view of the
// session into a plan of engine primitives. Statements on unsharded
// clusters are planned from the classifier's result alone (PlanCluster);
// statements on sharded schemas are parsed once per statement shape, and
// their plans cached (docs/sharding.md).
package planner

import (
	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/router"
)

// Session is what planning needs to know of the client session. Its
// methods are asked only when the answer matters, since some read the
// clock.
type Session interface {
	// DB is the session's current database.
	DB() string
	// Pinned reports that the session's statements stay on the connection
	// it holds (a transaction, a lock, session state): no choice to make.
	Pinned() bool
	// ReplicaReadsAllowed reports whether the session's mode lets a read
	// outside a transaction go to a replica (autocommit, or the policy
	// lets reads skip the transaction autocommit=0 would open).
	ReplicaReadsAllowed() bool
	// ReadsOwnWritesOnPrimary reports whether a recent write of the
	// session keeps its reads on the primary (read-your-writes).
	ReadsOwnWritesOnPrimary() bool
}

// PlanCluster plans a statement on a cluster that is not sharded: one Route,
// to a replica when the policy, the statement and the session allow it.
// The Route is filled in dst, which the caller keeps, so planning
// allocates nothing.
func PlanCluster(dst *engine.Route, cl *backend.Cluster, pol *router.Policy, st router.Stmt, s Session) engine.Primitive {
	*dst = engine.Route{Cluster: cl, ReplicaOK: ReplicaOK(cl, pol, st, s)}
	return dst
}

// ReplicaOK reports whether st may read from one of cl's replicas: the
// cluster has some, the statement is one the policy lets replicas serve,
// and the session is neither pinned nor reading its own recent writes.
func ReplicaOK(cl *backend.Cluster, pol *router.Policy, st router.Stmt, s Session) bool {
	return len(cl.Servers()) > 1 && !s.Pinned() && pol.ReplicaEligible(st, s.DB()) &&
		s.ReplicaReadsAllowed() && !s.ReadsOwnWritesOnPrimary()
}
