// Package planner turns a client statement and a small view of the
// session into a plan of engine primitives. Statements on unsharded
// clusters are planned from the classifier's result alone (PlanCluster);
// statements on sharded schemas are parsed once per statement shape,
// their plans cached (docs/sharding.md), and bound to each execution's
// values and the session's state by the session's Binder (bind.go).
package planner

import (
	"log/slog"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sequence"
)

// Session is what planning needs to know of the client session, and
// what binding a statement on a sharded schema (Binder) asks of it: the
// session's state it decides by, and the few things only the session can
// do (check a write against its transaction, draw keys from a sequence
// with its settings, decode an execution's parameters, ask a server
// about a syntax error with its state). Its methods are asked only when
// the answer matters, since some read the clock.
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

	// Binding (bind*.go) asks the rest.

	// Policy is the user's read/write policy.
	Policy() *router.Policy
	// Cluster is the cluster the session is on: where its statements
	// about itself (SET, USE, BEGIN, SHOW WARNINGS …) run.
	Cluster() *backend.Cluster
	// InTransaction reports that the session is in a transaction: one a
	// backend connection holds, or one whose BEGIN was answered and which
	// opens with its first statement.
	InTransaction() bool
	// Autocommit reports the session's autocommit: off, every statement
	// runs inside a transaction.
	Autocommit() bool
	// LocksTables reports that the session holds table locks (LOCK
	// TABLES) on any cluster, and LockedClusters lists those clusters,
	// the session's current one first.
	LocksTables() bool
	LockedClusters() []*backend.Cluster
	// CursorRequested reports that the prepared statement's execution
	// being planned asked for a cursor.
	CursorRequested() bool
	// Streaming reports that the statement being planned is larger than
	// the packet buffer: only its head was read, the rest streams to the
	// server it runs on.
	Streaming() bool
	// SQLMode is the session's sql_mode as the client set it, "" when it
	// never did (the servers' default).
	SQLMode() string
	// CrossShardWrite checks statement st, about to run on cl, against
	// the session's transaction: the refusal of a write on a shard other
	// than the one it wrote to (cross_shard_writes), or nil, having
	// recorded cl as written when st writes. Binding asks it for every
	// cluster a write runs on, in the order they run.
	CrossShardWrite(cl *backend.Cluster, st router.Stmt) *mysql.SQLError
	// DrawKeys draws from seq, a sharded table's sequence, the keys of an
	// INSERT: it first makes sure seq never hands out maxExplicit, the
	// largest key a row gives itself (0: none), then, for rows > 0,
	// reserves rows consecutive ids (with the session's
	// auto_increment_increment) and returns the first. Errors are the
	// client's (*mysql.SQLError).
	DrawKeys(seq *sequence.Sequence, maxExplicit uint64, rows int) (first uint64, err error)
	// ExecuteParams decodes the parameters of the prepared statement's
	// execution being planned (COM_STMT_EXECUTE, with the long data held
	// for it) into dst, already reset to the statement's text and shape.
	ExecuteParams(dst *ExecValues) error
	// SyntaxError asks a server of cl whether sql, which the planner's
	// parser could not read, is a syntax error as the session's state
	// reads it: the server's error if it is, else nil.
	SyntaxError(cl *backend.Cluster, sql []byte) *mysql.SQLError
	// Logger is a logger with the session's attributes, built when
	// something is logged.
	Logger() *slog.Logger
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
