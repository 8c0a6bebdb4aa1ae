package xa

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// States of an open transaction, as SHOW TRANSACTIONS shows them.
const (
	StateActive      = "active"     // statements run in its branches
	StatePreparing   = "preparing"  // XA PREPARE on the participants
	StateDeciding    = "deciding"   // the coordinator commits with the decision
	StateCommitting  = "committing" // XA COMMIT on the prepared participants
	StateRollingBack = "rolling back"
)

// Trx is a transaction with XA branches open in this process.
type Trx struct {
	XID          XID // of its first branch; the gtrid is the transaction's
	Session      uint32
	Started      time.Time
	mu           sync.Mutex
	state        string
	participants []string
}

// TrxView is a Trx as the admin port lists it.
type TrxView struct {
	Gtrid        string
	Session      uint32
	Coordinator  string
	Participants []string
	State        string
	Age          time.Duration
}

// SetState records the transaction's step.
func (t *Trx) SetState(s string) {
	t.mu.Lock()
	t.state = s
	t.mu.Unlock()
}

// Join records a participant's branch.
func (t *Trx) Join(cluster string) {
	t.mu.Lock()
	if !slices.Contains(t.participants, cluster) {
		t.participants = append(t.participants, cluster)
	}
	t.mu.Unlock()
}

// Registry is the transactions with XA branches open in this process: the
// ids it hands out, what SHOW TRANSACTIONS lists, and what recovery must
// leave alone.
type Registry struct {
	Instance string
	Boot     string
	// Tables creates a decision table found missing (the Recoverer's
	// CreateTable); nil: none is created.
	Tables func(ctx context.Context, cluster, schema string) error
	seq    atomic.Uint64
	mu     sync.Mutex
	open   map[string]*Trx // by gtrid
}

// NewRegistry returns the registry of a process named instance.
func NewRegistry(instance string) *Registry {
	return &Registry{Instance: instance, Boot: NewBoot(), open: map[string]*Trx{}}
}

// Begin registers a new transaction coordinated by coordinator (a
// cluster) of schema, for session.
func (r *Registry) Begin(session uint32, coordinator, schema string) *Trx {
	x := XID{Boot: r.Boot, Seq: r.seq.Add(1), Coordinator: coordinator, Instance: r.Instance, Schema: schema}
	t := &Trx{XID: x, Session: session, Started: time.Now(), state: StateActive, participants: []string{coordinator}}
	r.mu.Lock()
	r.open[x.Gtrid()] = t
	r.mu.Unlock()
	return t
}

// End forgets t: nothing of it is left prepared by this process's session
// (committed, rolled back, or left to recovery).
func (r *Registry) End(t *Trx) {
	r.mu.Lock()
	delete(r.open, t.XID.Gtrid())
	r.mu.Unlock()
}

// Open reports whether the transaction of gtrid is open in this process.
func (r *Registry) Open(gtrid string) bool {
	r.mu.Lock()
	_, ok := r.open[gtrid]
	r.mu.Unlock()
	return ok
}

// List is the open transactions, oldest first.
func (r *Registry) List() []TrxView {
	now := time.Now()
	r.mu.Lock()
	out := make([]TrxView, 0, len(r.open))
	for g, t := range r.open {
		t.mu.Lock()
		out = append(out, TrxView{Gtrid: g, Session: t.Session, Coordinator: t.XID.Coordinator,
			Participants: slices.Clone(t.participants), State: t.state, Age: now.Sub(t.Started)})
		t.mu.Unlock()
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b TrxView) int { return int(b.Age - a.Age) })
	return out
}
