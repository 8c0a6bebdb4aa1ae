package router

import "time"

// Consistency is what a session reads after its own writes.
type Consistency uint8

const (
	// ConsistencyCausal: a read on a replica first waits until the replica
	// has applied the session's last write (by GTID); after a timeout it
	// goes to the primary. Without a known GTID it behaves like
	// ConsistencyWindow.
	ConsistencyCausal Consistency = iota
	// ConsistencyWindow: reads go to the primary for a while after the
	// session's last write.
	ConsistencyWindow
	// ConsistencyNone: reads go to replicas right after a write.
	ConsistencyNone
)

// ParseConsistency maps the configuration words to a Consistency.
func ParseConsistency(s string) (Consistency, bool) {
	switch s {
	case "causal":
		return ConsistencyCausal, true
	case "window":
		return ConsistencyWindow, true
	case "none":
		return ConsistencyNone, true
	}
	return 0, false
}

// Policy is the read/write splitting policy of a cluster, or of one user of
// it.
type Policy struct {
	// ReadFromPrimary sends every read to the primary.
	ReadFromPrimary bool
	// PrimaryDatabases are databases whose reads go to the primary.
	PrimaryDatabases map[string]bool
	// MaxReplicaLag: a replica further behind gets no reads.
	MaxReplicaLag time.Duration
	Consistency   Consistency
	// WriteWindow: how long after a write reads stay on the primary
	// (ConsistencyWindow, or ConsistencyCausal without a GTID).
	WriteWindow time.Duration
	// CausalWaitTimeout bounds a causal read's wait on a replica.
	CausalWaitTimeout time.Duration
	// AutocommitOffReplicaReads lets a session with autocommit off read
	// from a replica while no transaction is open: such a read runs
	// outside the transaction it would have started (ProxySQL's
	// mysql-enforce_autocommit_on_reads=false).
	AutocommitOffReplicaReads bool
}

// ReplicaEligible reports whether a statement may read from a replica as
// far as the statement and the static policy go (the session's transaction
// and recent writes are the caller's business): a routing hint decides
// first; otherwise a read-only statement (IsReadOnly) outside the primary
// databases, when the policy reads from replicas. A replica hint counts
// only on statements of a reading kind: a write sent to a replica would
// only fail.
func (p *Policy) ReplicaEligible(st Stmt, db string) bool {
	switch {
	case st.Flags&FlagHintPrimary != 0:
		return false
	case st.Flags&FlagHintReplica != 0:
		return isReadKind(st.Kind) && st.Flags&FlagMultiStatement == 0
	case p.ReadFromPrimary:
		return false
	case len(p.PrimaryDatabases) > 0 && p.PrimaryDatabases[db]:
		return false
	}
	return IsReadOnly(st)
}

// isReadKind reports the statement kinds that only read.
func isReadKind(k Kind) bool {
	switch k {
	case KindSelect, KindShow, KindAnalyze, KindValues, KindTable:
		return true
	}
	return false
}
