package fleet

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Instance is one running shardgate of the fleet, as it registers itself.
type Instance struct {
	ID             string    `json:"id"`
	Address        string    `json:"address"`         // where clients connect
	Admin          string    `json:"admin,omitempty"` // admin HTTP address
	Version        string    `json:"version"`
	Started        time.Time `json:"started"`
	ConfigRevision int64     `json:"config_revision"`
	ConfigChecksum string    `json:"config_checksum"`
	Host           string    `json:"host"`
	PID            int       `json:"pid"`
}

// Registry registers this instance under an etcd lease, so that it
// disappears from the fleet when the process dies or loses etcd for longer
// than the lease, and keeps the list of every registered instance.
type Registry struct {
	store *Store
	log   *slog.Logger
	// TTL is the lease's time to live: how long a dead instance stays listed.
	TTL time.Duration

	mu      sync.Mutex
	self    Instance
	changed chan struct{} // self changed: register it again

	peers atomic.Pointer[[]Instance] // sorted by ID; self included
}

// NewRegistry registers self (its configuration fields are kept up to date
// by SetConfig) once Run runs.
func NewRegistry(store *Store, self Instance, log *slog.Logger) *Registry {
	r := &Registry{store: store, log: log, TTL: 10 * time.Second, self: self, changed: make(chan struct{}, 1)}
	r.peers.Store(&[]Instance{self})
	return r
}

// SetConfig records the configuration revision this instance applied.
func (r *Registry) SetConfig(doc Document) {
	r.mu.Lock()
	r.self.ConfigRevision, r.self.ConfigChecksum = doc.Revision, doc.Checksum()
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// Self is this instance's record.
func (r *Registry) Self() Instance {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.self
}

// Instances lists the registered instances, sorted by ID, as last seen
// from etcd; this instance is always in it, with its current record.
func (r *Registry) Instances() []Instance {
	self := r.Self()
	list := slices.Clone(*r.peers.Load())
	for i := range list {
		if list[i].ID == self.ID {
			list[i] = self
			return list
		}
	}
	list = append(list, self)
	slices.SortFunc(list, func(a, b Instance) int { return strings.Compare(a.ID, b.ID) })
	return list
}

// Run keeps the registration alive until ctx ends, then revokes it so the
// instance leaves the list at once. After a lost lease (etcd away for
// longer than TTL) it registers again.
func (r *Registry) Run(ctx context.Context) {
	backoff := 200 * time.Millisecond
	for ctx.Err() == nil {
		err := r.session(ctx)
		if ctx.Err() != nil {
			return
		}
		r.log.Warn("fleet registration lost; registering again", "source", r.store.URL(), "err", err, "retry_in", backoff.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// session registers under one lease and follows the other instances until
// the lease or the watch is lost.
func (r *Registry) session(ctx context.Context) error {
	cli := r.store.cli
	gctx, cancel := context.WithTimeout(ctx, r.TTL)
	lease, err := cli.Grant(gctx, int64(r.TTL/time.Second))
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		// Leave the list now rather than when the lease runs out.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		_, _ = cli.Revoke(rctx, lease.ID)
		cancel()
	}()
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	alive, err := cli.KeepAlive(sctx, lease.ID)
	if err != nil {
		return err
	}
	if err := r.put(sctx, lease.ID); err != nil {
		return err
	}
	rev, err := r.list(sctx)
	if err != nil {
		return err
	}
	watch := cli.Watch(clientv3.WithRequireLeader(sctx), r.store.opts.proxiesKey(), clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case _, ok := <-alive:
			if !ok {
				return errLeaseLost
			}
		case <-r.changed:
			if err := r.put(sctx, lease.ID); err != nil {
				return err
			}
		case resp, ok := <-watch:
			if !ok || resp.Err() != nil || resp.Canceled {
				return errWatchLost
			}
			if _, err := r.list(sctx); err != nil {
				return err
			}
		}
	}
}

type registryError string

func (e registryError) Error() string { return string(e) }

const (
	errLeaseLost registryError = "lease expired or could not be renewed"
	errWatchLost registryError = "watch on the instance list ended"
)

func (r *Registry) put(ctx context.Context, lease clientv3.LeaseID) error {
	self := r.Self()
	b, err := json.Marshal(self)
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, r.TTL)
	defer cancel()
	_, err = r.store.cli.Put(pctx, r.store.opts.proxiesKey()+self.ID, string(b), clientv3.WithLease(lease))
	return err
}

// list reads every registered instance and returns the revision read at.
func (r *Registry) list(ctx context.Context) (int64, error) {
	lctx, cancel := context.WithTimeout(ctx, r.TTL)
	defer cancel()
	resp, err := r.store.cli.Get(lctx, r.store.opts.proxiesKey(), clientv3.WithPrefix())
	if err != nil {
		return 0, err
	}
	list := make([]Instance, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var in Instance
		if err := json.Unmarshal(kv.Value, &in); err != nil {
			r.log.Warn("fleet: unreadable instance record ignored", "key", string(kv.Key), "err", err)
			continue
		}
		list = append(list, in)
	}
	slices.SortFunc(list, func(a, b Instance) int { return strings.Compare(a.ID, b.ID) })
	r.peers.Store(&list)
	return resp.Header.Revision, nil
}
