// Package engine executes plans. A plan is a tree of small primitives (a
// Route to one cluster today; Scatter, InsertSplit, Fanout and the merges of
// the sharding issues next) that send statements to backend clusters and
// stream the answers to the client through a Cursor, which the client
// session implements. Primitives decide what runs where; the cursor owns
// the connections: borrowing one, bringing it in step with the session's
// state, relaying, pinning and releasing it.
//
// Primitives are values the planner fills in place (see planner.PlanCluster):
// executing the plan of an unsharded statement allocates nothing.
package engine

import (
	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
)

// Cursor is the client session as primitives see it.
type Cursor interface {
	// Run sends q, a complete client command packet (COM_QUERY or
	// COM_STMT_EXECUTE, rewritten or as the client sent it), to a server of
	// r.Cluster: a replica when r.ReplicaOK and one is fit to serve the
	// session, else the writer; for a prepared statement's execution, as
	// the execution of the server-side statement r.Stmt names (the
	// client's own when nil), taking the client's parameters r.Params. It
	// relays the whole answer to the client and reports whether the
	// session goes on; the client has been answered either way. r.Query
	// is not read: q is the command.
	Run(r *Route, q []byte) bool
	// Fail answers the client with e instead of running anything.
	Fail(e *mysql.SQLError) bool
	// EndTransaction runs q, COMMIT or ROLLBACK, on the connection of
	// every shard the session's transaction touched, the shard that wrote
	// last, and answers the client with that shard's answer.
	EndTransaction(q []byte) bool
	// Savepoint runs q, SAVEPOINT, ROLLBACK TO SAVEPOINT or RELEASE
	// SAVEPOINT, on the connection of every shard in the session's
	// transaction, and answers the client with the current shard's
	// answer.
	Savepoint(q []byte) bool

	// The steps of a statement that runs in parts (Scatter, Fanout):

	// Acquire returns a connection to a server of cl (a replica when
	// replicaOK and the session allows one), in step with the session's
	// state, for one part. nil: the client has been answered with the
	// error, and ok says whether the session goes on.
	Acquire(cl *backend.Cluster, replicaOK bool) (c *backend.Conn, ok bool)
	// AcquireToSend is Acquire for a part whose command the caller writes
	// at once with Send, before anything else on c: the state sync the
	// connection may need then rides in the packet of a text command
	// (one multi-statement) instead of costing a round trip of its own.
	AcquireToSend(cl *backend.Cluster, replicaOK bool) (c *backend.Conn, ok bool)
	// Send writes part p's command to c, given the client's command q:
	// p.Query or q, or, for a prepared statement's execution, q made the
	// execution of the statement p.Stmt names on c (prepared there
	// first if need be). Errors are classified as Failed expects them.
	Send(c *backend.Conn, p *Part, q []byte) error
	// Relay returns the relay from c to the client, which renames
	// sub-tables to their logical tables in column definitions.
	Relay(c *backend.Conn) *mysql.Relay
	// Done ends a part c's server answered (OK, rows or ERR): the session
	// learns its state changes and the part's warnings (for SHOW WARNINGS
	// after the statement, part after part), and c is released or stays
	// pinned.
	Done(c *backend.Conn, info *mysql.ResponseInfo)
	// SkipWarnings makes the next Done leave its part's warnings out of
	// the statement's: a part whose answer the client does not get as its
	// own (another copy of a reference table, a sub-table's DDL before the
	// last one).
	SkipWarnings()
	// RenameWarnings makes the next Done pass its part's warning messages
	// through f, and after an error collect the error (as SHOW WARNINGS
	// lists it) through f too: a DDL part's diagnostics name its
	// sub-table ("Unknown table 'shop.t_0003'"), where one server would
	// name the logical table.
	RenameWarnings(f func(msg string) string)
	// Failed handles a part whose connection failed (err says which
	// side); sent: the client has part of the answer. It answers the
	// client and reports whether the session goes on.
	Failed(c *backend.Conn, err error, sent bool) bool
	// Drop discards c, a part's connection that failed or whose answer
	// will not be read, without answering the client (a merge that
	// answers for every part at once): the session forgets what it held
	// there. false: the session lost state with it (beyond a transaction,
	// which becomes aborted) and must end.
	Drop(c *backend.Conn, err error) bool
	// Held returns the connection the session holds on cl for its
	// transaction, its table locks or its session state, nil when it
	// holds none there: a statement of the proxy's own that must see
	// what the session sees (EXPLAIN) runs on it, else on an Aside
	// connection, which opens no transaction on a shard the session's
	// has not reached. A statement run on it is not the client's: its
	// answer is not relayed, its warnings are taken (TakeWarnings), and
	// a failure of it is Drop's to handle.
	Held(cl *backend.Cluster) *backend.Conn
	// Aside returns a connection to cl's primary for a statement of the
	// proxy's own on the client's behalf, outside the session's
	// transaction and pins, in step with the session's database and
	// variables; ReleaseAside gives it back (broken: it is discarded).
	Aside(cl *backend.Cluster) (*backend.Conn, error)
	ReleaseAside(c *backend.Conn, broken bool)
	// TakeWarnings collects now the diagnostics a part's answer (info)
	// left on c, which the session keeps for the statement, and clears
	// info's warning count: the primitive runs a statement of its own on
	// c before Done (Evaluate drops its temporary tables), which would
	// replace them.
	TakeWarnings(c *backend.Conn, info *mysql.ResponseInfo)
	// Status is the server status the answer ends with.
	Status() uint16
	// Answer sends ok as the whole statement's answer and remembers its
	// affected rows as the session's. Its insert id may be one a row gave:
	// the session's LAST_INSERT_ID() is what the parts' connections said
	// (Done).
	Answer(ok *mysql.OKPacket) bool
	// AnswerResult sends rs, a result set the plan composed, as the whole
	// statement's answer.
	AnswerResult(rs *mysql.ResultSet) bool
	// AnswerInsert is Answer for an INSERT or REPLACE: ok's insert id is
	// what MySQL reports for the statement (the last row's key when every
	// row gave its own), while generated, the first id the proxy generated
	// for the statement, becomes the session's LAST_INSERT_ID() (0: what
	// the parts' connections said, as for Answer).
	AnswerInsert(ok *mysql.OKPacket, generated uint64) bool
	// Killed reports that a KILL QUERY came for the client's statement
	// while it ran: the parts running then were sent KILL QUERY, and the
	// parts not sent yet are refused (Send).
	Killed() bool
	// WatchClient makes the client closing its connection interrupt the
	// statement as a KILL QUERY does, until stop is called: for a
	// primitive that works a long time before it writes to the client
	// (Evaluate's copies), which would otherwise learn it only at its
	// first write. Called and stopped on the session's goroutine, which
	// does not read the client in between.
	WatchClient() (stop func())
	// UnlockTables lets go of every table lock the session holds, after a
	// LOCK TABLES that failed on the current connection (which the server
	// left holding none) and whose error the client has: UNLOCK TABLES on
	// the other connections holding locks. false: the session must end
	// (a connection failed with state it cannot lose).
	UnlockTables() bool
	// AnnotateErrors makes every error the session answers the client
	// with, until called with nil, pass through f first: a statement in
	// parts (DDL) says which parts had been applied when one failed, for
	// failures the session answers itself (Acquire, Failed).
	AnnotateErrors(f func(*mysql.SQLError) *mysql.SQLError)
	// KeepCursor gives the session the rows of the cursor the client's
	// COM_STMT_EXECUTE opened over several shards, held by the proxy:
	// it serves them to COM_STMT_FETCH until the statement is reset,
	// closed or executed again.
	KeepCursor(h *mysql.RowHold)
	// Merged tells the session what the client got from a merge, whose
	// parts' Done reported what each shard sent: info.Rows is the rows of
	// the merged answer (held for a cursor, or written).
	Merged(info *mysql.ResponseInfo)
}

// Primitive is one step of a plan.
type Primitive interface {
	// Execute runs the step for the client command q and answers the
	// client. false ends the session.
	Execute(c Cursor, q []byte) bool
}

// Route runs a statement on one cluster: the whole of an unsharded
// statement, or a sharded one whose rows all live on one server.
type Route struct {
	Cluster *backend.Cluster
	// ReplicaOK: the statement may read from a replica (the policy, the
	// statement and the session's state allow it).
	ReplicaOK bool
	// Query is the command rewritten for the cluster (sub-table names);
	// nil sends the client's own.
	Query []byte
	// Stmt and Params are, for a prepared statement's execution on one
	// sub-table, what Part's are: the text of the server-side statement
	// the execution runs (nil: the client's own) and the client's
	// parameters it takes, in its order (nil: all, in theirs).
	Stmt   []byte
	Params []int
}

// Execute implements Primitive.
func (r *Route) Execute(c Cursor, q []byte) bool {
	if r.Query != nil {
		q = r.Query
	}
	return c.Run(r, q)
}

// Refuse answers a statement the proxy will not run with an error that
// says why (an unknown shard in a hint, a construct sharding does not
// support), as the server answers one it cannot.
type Refuse struct{ Err *mysql.SQLError }

// Execute implements Primitive.
func (r *Refuse) Execute(c Cursor, _ []byte) bool { return c.Fail(r.Err) }

// EndTransaction ends a transaction that touched several shards (see
// Cursor.EndTransaction).
type EndTransaction struct{}

// Execute implements Primitive.
func (EndTransaction) Execute(c Cursor, q []byte) bool { return c.EndTransaction(q) }

// Savepoint sets, rolls back to or releases a savepoint of a transaction
// that touched several shards (see Cursor.Savepoint).
type Savepoint struct{}

// Execute implements Primitive.
func (Savepoint) Execute(c Cursor, q []byte) bool { return c.Savepoint(q) }
