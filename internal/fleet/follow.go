package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ApplyFunc applies one configuration revision. An error means the
// revision was not applied and the running configuration did not change.
type ApplyFunc func(Document) error

// State is what an instance knows of its configuration source.
type State struct {
	Source    string
	Applied   int64 // revision in force; 0 before the first
	Checksum  string
	AppliedAt time.Time
	// FromCache: the revision in force was read from the local cache,
	// because etcd could not be reached (or held no valid revision) at start.
	FromCache bool
	// Rejected is the newest revision that failed validation, when it is
	// newer than Applied; RejectedError says why.
	Rejected      int64
	RejectedError string
	// Reachable: the last request to etcd succeeded. LastError is the
	// last failure's message, kept after a recovery.
	Reachable bool
	LastError string
	LastSeen  time.Time // last successful contact with etcd
}

// Follower keeps an instance on the newest valid configuration revision:
// it applies each revision etcd holds as it is written, keeps the last good
// one (and a copy on disk) when a revision is rejected or etcd is away,
// and catches up when etcd returns.
type Follower struct {
	store *Store
	log   *slog.Logger
	cache string // local copy of the last good revision; "" for none
	// PollInterval bounds how long a missed watch event, or etcd's return,
	// goes unnoticed. The watch normally delivers a revision at once.
	PollInterval time.Duration

	// mu runs one application at a time, in revision order.
	mu    sync.Mutex
	apply ApplyFunc
	seen  int64 // newest revision offered, applied or rejected
	// readAt is etcd's revision when the configuration was last read: a
	// watch starts after it and after seen, so that it never starts below
	// what etcd compacted (the configuration's own revision may be older).
	readAt int64
	// stateMu orders the state's updates (the watch, the poll and the
	// admin port's reload each make some); readers load it without a lock.
	stateMu sync.Mutex
	state   atomic.Pointer[State]
	// onApplied hears of each applied revision (the registry).
	onApplied []func(Document)
	// watches counts the watches opened (Watches).
	watches atomic.Int64
}

// Watches reports how many watches the follower opened: one, and one more
// after each outage or compaction.
func (f *Follower) Watches() int64 { return f.watches.Load() }

// NewFollower follows store's configuration; cache is the file that keeps
// the last good revision for a start while etcd is down ("" for none).
func NewFollower(store *Store, cache string, log *slog.Logger) *Follower {
	f := &Follower{store: store, log: log, cache: cache, PollInterval: 5 * time.Second}
	f.state.Store(&State{Source: store.URL()})
	return f
}

// State returns the follower's state; safe from any goroutine.
func (f *Follower) State() State { return *f.state.Load() }

// OnApplied adds a function told of every applied revision, after the fact.
// Call it before Start.
func (f *Follower) OnApplied(fn func(Document)) { f.onApplied = append(f.onApplied, fn) }

// Start applies the configuration in force at start: etcd's current
// revision, or, when etcd cannot be reached within timeout or its revision
// is rejected, the cached last good one. It fails only when neither works.
func (f *Follower) Start(ctx context.Context, timeout time.Duration, apply ApplyFunc) error {
	f.apply = apply
	gctx, cancel := context.WithTimeout(ctx, timeout)
	doc, err := f.store.Get(gctx)
	cancel()
	if err == nil {
		f.contact(nil)
		if err = f.Offer(doc); err == nil {
			return nil
		}
	} else {
		f.contact(err)
	}
	cached, cerr := f.readCache()
	if cerr != nil {
		return fmt.Errorf("%w; and no cached configuration to start from: %v", err, cerr)
	}
	f.log.Warn("starting from the cached configuration; etcd's will be applied when it can be",
		"cache", f.cache, "revision", cached.Revision, "etcd_error", err.Error())
	f.mu.Lock()
	defer f.mu.Unlock()
	if aerr := f.apply(cached); aerr != nil {
		return fmt.Errorf("%w; and the cached configuration %s is rejected too: %v", err, f.cache, aerr)
	}
	f.applied(cached, true)
	return nil
}

// SetLog replaces the logger Start used (the process's own, once the
// configuration said how to log).
func (f *Follower) SetLog(log *slog.Logger) {
	f.mu.Lock()
	f.log = log
	f.mu.Unlock()
}

// Run follows etcd until ctx ends, applying new revisions with apply: a
// watch for new revisions, and a poll every PollInterval that notices what
// a watch cannot (etcd back after an outage with revisions the watch
// missed, a compaction).
func (f *Follower) Run(ctx context.Context, apply ApplyFunc) {
	f.mu.Lock()
	f.apply = apply
	f.mu.Unlock()
	tick := time.NewTicker(f.PollInterval)
	defer tick.Stop()
	for ctx.Err() == nil {
		f.mu.Lock()
		from := max(f.seen, f.readAt) + 1
		f.mu.Unlock()
		began := time.Now()
		f.watches.Add(1)
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		wch := f.store.cli.Watch(wctx, f.store.opts.configKey(), clientv3.WithRev(from))
		f.watch(ctx, wch, tick.C)
		cancel()
		if time.Since(began) < time.Second {
			// A watch refused at once (no leader, no permission) would
			// be asked again at once: wait for the next poll instead.
			select {
			case <-ctx.Done():
			case <-tick.C:
				f.Resync(ctx)
			}
		}
	}
}

// watch consumes one watch until it ends, polling meanwhile.
func (f *Follower) watch(ctx context.Context, wch clientv3.WatchChan, tick <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			f.Resync(ctx)
		case resp, ok := <-wch:
			if !ok {
				return
			}
			if resp.CompactRevision != 0 || resp.Canceled {
				// Revisions were compacted before the watch could send
				// them: read the current one instead.
				f.Resync(ctx)
				return
			}
			if err := resp.Err(); err != nil {
				f.contact(err)
				return
			}
			f.contact(nil)
			for _, ev := range resp.Events {
				if ev.Type == clientv3.EventTypeDelete {
					f.log.Error("the configuration was deleted from etcd; keeping the one in force. Push one again with `shardgate config push`",
						"source", f.store.URL(), "revision_in_force", f.State().Applied)
					continue
				}
				_ = f.Offer(Document{Revision: ev.Kv.ModRevision, Data: ev.Kv.Value})
			}
		}
	}
}

// Resync reads etcd's current revision and applies it if it is new.
func (f *Follower) Resync(ctx context.Context) {
	gctx, cancel := context.WithTimeout(ctx, f.PollInterval)
	defer cancel()
	doc, err := f.store.Get(gctx)
	if errors.Is(err, ErrNoConfig) {
		f.contact(nil)
		return
	}
	f.contact(err)
	if err == nil {
		_ = f.Offer(doc)
	}
}

// noteRead records the etcd revision a Get read at; f.mu is held.
func (f *Follower) noteRead(doc Document) {
	f.readAt = max(f.readAt, doc.ReadAt)
	if st := f.State(); st.FromCache && doc.Revision == st.Applied {
		// etcd holds what the cache held: in force from etcd now.
		f.update(func(st *State) { st.FromCache = false })
	}
}

// Offer applies doc unless a revision as new was already offered. A
// rejected revision is reported and remembered; the one in force stays.
func (f *Follower) Offer(doc Document) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noteRead(doc)
	if doc.Revision <= f.seen {
		return nil
	}
	f.seen = doc.Revision
	if err := f.apply(doc); err != nil {
		f.rejected(doc, err)
		return err
	}
	f.applied(doc, false)
	return nil
}

// Reapply applies the current revision again even if it is the one in
// force (RELOAD CONFIG, SIGHUP): it returns the apply error, if any. A
// newer revision offered meanwhile wins: it is in force already.
func (f *Follower) Reapply(ctx context.Context) error {
	doc, err := f.store.Get(ctx)
	f.contact(err)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noteRead(doc)
	if doc.Revision < f.seen {
		return nil
	}
	again := doc.Revision == f.seen
	f.seen = doc.Revision
	if err := f.apply(doc); err != nil {
		if !again || f.State().Applied != doc.Revision {
			f.rejected(doc, err)
		}
		return err
	}
	f.applied(doc, false)
	return nil
}

// update changes the state under stateMu and publishes a copy.
func (f *Follower) update(change func(*State)) State {
	f.stateMu.Lock()
	defer f.stateMu.Unlock()
	st := *f.state.Load()
	change(&st)
	f.state.Store(&st)
	return st
}

// applied records doc as in force; f.mu is held.
func (f *Follower) applied(doc Document, fromCache bool) {
	f.update(func(st *State) {
		st.Applied, st.Checksum, st.AppliedAt, st.FromCache = doc.Revision, doc.Checksum(), time.Now(), fromCache
		if st.Rejected <= doc.Revision {
			st.Rejected, st.RejectedError = 0, ""
		}
	})
	if f.seen < doc.Revision {
		f.seen = doc.Revision
	}
	if !fromCache {
		if err := f.writeCache(doc); err != nil {
			f.log.Warn("could not keep a local copy of the configuration; a start while etcd is down will fail",
				"cache", f.cache, "err", err)
		}
	}
	for _, fn := range f.onApplied {
		fn(doc)
	}
}

// rejected records a revision that failed; f.mu is held.
func (f *Follower) rejected(doc Document, err error) {
	st := f.update(func(st *State) { st.Rejected, st.RejectedError = doc.Revision, err.Error() })
	f.log.Error("configuration revision rejected; the one in force stays. Fix it and push a new revision (shardgate config push), or roll back (shardgate config rollback)",
		"source", f.store.URL(), "revision", doc.Revision, "revision_in_force", st.Applied, "err", err)
}

// contact records the outcome of a request to etcd, logging when etcd
// goes away and when it comes back.
func (f *Follower) contact(err error) {
	if err == nil {
		if st := f.State(); st.Reachable && time.Since(st.LastSeen) < time.Second {
			return // nothing new to tell; spare the copy
		}
	}
	var was State
	now := f.update(func(st *State) {
		was = *st
		if err == nil {
			st.Reachable, st.LastSeen = true, time.Now()
		} else {
			st.Reachable, st.LastError = false, err.Error()
		}
	})
	switch {
	case err == nil && !was.Reachable && was.LastError != "":
		f.log.Info("etcd reachable again", "source", f.store.URL())
	case err != nil && (was.Reachable || was.LastError == ""):
		f.log.Warn("etcd unreachable; serving the configuration in force and retrying", "source", f.store.URL(),
			"revision_in_force", now.Applied, "err", err)
	}
}

// The cache file is the document itself behind one comment line naming its
// revision, so that it also serves as a configuration file (--config FILE).
const cacheHeader = "# shardgate: last good configuration, etcd revision "

func (f *Follower) writeCache(doc Document) error {
	if f.cache == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(f.cache), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.cache), ".shardgate-config-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	header := fmt.Sprintf("%s%d of %s\n", cacheHeader, doc.Revision, f.store.URL())
	_, err = tmp.WriteString(header)
	if err == nil {
		_, err = tmp.Write(doc.Data)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), f.cache)
}

func (f *Follower) readCache() (Document, error) {
	if f.cache == "" {
		return Document{}, errors.New("no --config-cache file set")
	}
	b, err := os.ReadFile(f.cache)
	if err != nil {
		return Document{}, err
	}
	first, rest, ok := strings.Cut(string(b), "\n")
	var rev int64
	var src string
	if !ok || !strings.HasPrefix(first, cacheHeader) {
		return Document{}, fmt.Errorf("%s is not a shardgate configuration cache (no %q line)", f.cache, strings.TrimSpace(cacheHeader))
	}
	if _, err := fmt.Sscanf(strings.TrimPrefix(first, cacheHeader), "%d of %s", &rev, &src); err != nil {
		return Document{}, fmt.Errorf("%s: cache header: %w", f.cache, err)
	}
	if src != f.store.URL() {
		return Document{}, fmt.Errorf("%s caches %s, not %s", f.cache, src, f.store.URL())
	}
	return Document{Revision: rev, Data: []byte(rest)}, nil
}
