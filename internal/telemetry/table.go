package telemetry

import (
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/shardgate/shardgate/internal/router"
)

// table is one generation of the digest table; RESET QUERY DIGESTS
// replaces it. Entries are found by (digest, user, database) in one of
// its stripes, each a map under its own lock, taken only on a session's
// cache miss.
type table struct {
	gen      uint64 // its number among the process's tables (tableGens)
	stripes  [tableStripes]stripe
	n        atomic.Int64 // entries, for telemetry.max_digests
	overflow *entry       // the statements of the digests beyond it (not in the table: a session may cache it)
}

const tableStripes = 64

type stripe struct {
	mu sync.Mutex
	m  map[digestKey]*entry
	_  [40]byte // one stripe per cache line
}

type digestKey struct {
	digest   uint64
	user, db string
}

func newTable(gen uint64) *table {
	t := &table{gen: gen, overflow: &entry{text: OverflowText}}
	for i := range t.stripes {
		t.stripes[i].m = map[digestKey]*entry{}
	}
	return t
}

// lookup returns the entry of st, made if it is new and the table has
// room, else the overflow entry.
func (t *table) lookup(r *Recorder, st *Statement) *entry {
	k := digestKey{digest: st.Digest, user: st.User, db: st.DB}
	sp := &t.stripes[st.Digest>>58]
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if e := sp.m[k]; e != nil {
		return e
	}
	if t.n.Load() >= r.maxDigests.Load() {
		return t.overflow
	}
	t.n.Add(1)
	e := &entry{key: k, text: digestText(st), first: st.Start.UnixNano()}
	sp.m[k] = e
	return e
}

// find returns the entry of st, nil if the table has none.
func (t *table) find(st *Statement) *entry {
	sp := &t.stripes[st.Digest>>58]
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.m[digestKey{digest: st.Digest, user: st.User, db: st.DB}]
}

// digestText is the text of st's digest row, cut to MaxDigestText.
func digestText(st *Statement) string {
	if st.Digest == 0 && st.SQL == nil {
		return NoStatementText
	}
	text, _ := cutText(router.DigestText(st.SQL), MaxDigestText)
	if text == "" {
		return EmptyStatementText
	}
	return text
}

// cutText cuts s to at most max bytes, at a character's start, with "..."
// in place of what it drops; cut reports whether it did.
func cutText(s string, max int) (text string, cut bool) {
	if len(s) <= max {
		return s, false
	}
	end := max - len("...")
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + "...", true
}

// entry is one row of the digest table: counters updated with atomic
// adds by every session that runs its statements.
type entry struct {
	key   digestKey
	text  string
	first int64 // unix ns; immutable

	count, errors, rowsSent, affected, shards atomic.Uint64
	total, max, last                          atomic.Int64 // ns; last: unix ns
	hist                                      Histogram
}

// lastSeenGrain is how stale LastSeen may be: a statement stores its end
// time only when it moved by more, which spares a store per statement.
const lastSeenGrain = int64(time.Millisecond)

func (e *entry) add(st *Statement) {
	ns := int64(st.Duration)
	e.count.Add(1)
	e.total.Add(ns)
	e.hist.Record(st.Duration)
	for m := e.max.Load(); ns > m; m = e.max.Load() {
		if e.max.CompareAndSwap(m, ns) {
			break
		}
	}
	if st.RowsSent != 0 {
		e.rowsSent.Add(st.RowsSent)
	}
	if st.Affected != 0 {
		e.affected.Add(st.Affected)
	}
	if st.Shards != 0 {
		e.shards.Add(uint64(st.Shards))
	}
	if st.ErrCode != 0 {
		e.errors.Add(1)
	}
	if end := st.Start.UnixNano() + ns; end-e.last.Load() > lastSeenGrain {
		e.last.Store(end)
	}
}

func (e *entry) stat() DigestStat {
	n := e.count.Load()
	total := time.Duration(e.total.Load())
	q := e.hist.Quantiles(0.5, 0.99)
	max := time.Duration(e.max.Load())
	for i := range q {
		if q[i] > max { // a bucket's midpoint may pass the largest value in it
			q[i] = max
		}
	}
	ds := DigestStat{
		Digest: e.key.digest, Text: e.text, User: e.key.user, DB: e.key.db,
		Count: n, Errors: e.errors.Load(), RowsSent: e.rowsSent.Load(), RowsAffected: e.affected.Load(),
		ShardsTouched: e.shards.Load(), Total: total, Max: max, P50: q[0], P99: q[1],
		FirstSeen: time.Unix(0, e.first), LastSeen: time.Unix(0, e.last.Load()),
	}
	if n > 0 {
		ds.Mean = total / time.Duration(n)
	}
	return ds
}

func (t *table) stats() []DigestStat {
	out := make([]DigestStat, 0, t.n.Load()+1)
	for i := range t.stripes {
		sp := &t.stripes[i]
		sp.mu.Lock()
		for _, e := range sp.m {
			out = append(out, e.stat())
		}
		sp.mu.Unlock()
	}
	if t.overflow.count.Load() > 0 {
		ds := t.overflow.stat()
		ds.FirstSeen = ds.LastSeen // the overflow row has no first statement of its own
		out = append(out, ds)
	}
	return out
}
