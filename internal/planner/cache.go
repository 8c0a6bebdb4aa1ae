package planner

import (
	"bytes"
	"sync"
	"sync/atomic"
)

// Cache holds plans by (schema, current database, key): a statement's
// shape (ShapeKey) or, for plans good for one text only, its text
// (TextKey). The value type is the caller's.
//
// Reads take no lock and do not allocate: each of cacheShards shards
// publishes an immutable map through an atomic pointer, and a writer
// copies its shard's map (under the shard's mutex) to add an entry. A
// miss already costs a parse, so the copy is cheap beside it, and a hot
// statement read by every session touches no shared cache line but the
// pointer. The bound is approximate: each shard holds at most
// max/cacheShards entries and drops an arbitrary one when full.
type Cache[V any] struct {
	perShard int
	shards   [cacheShards]cacheShard[V]
}

const cacheShards = 64

type cacheShard[V any] struct {
	mu sync.Mutex // writers
	m  atomic.Pointer[map[uint64]*cacheEntry[V]]
}

// cacheEntry is immutable once published. Entries whose hashes are equal
// (same shape in several databases, or a collision) are chained.
type cacheEntry[V any] struct {
	schema, db string
	key        []byte
	v          V
	next       *cacheEntry[V]
}

// NewCache returns a cache bounded to about maxEntries entries (at least
// one per shard; entries of one hash chained in several databases count
// as one).
func NewCache[V any](maxEntries int) *Cache[V] {
	return &Cache[V]{perShard: max(1, maxEntries/cacheShards)}
}

func (c *Cache[V]) shard(hash uint64) *cacheShard[V] {
	return &c.shards[(hash^hash>>32)%cacheShards]
}

// Get returns the value stored under (schema, db, hash, key). The key is
// compared in full: equal hashes of different keys are misses.
func (c *Cache[V]) Get(schema, db string, hash uint64, key []byte) (V, bool) {
	if m := c.shard(hash).m.Load(); m != nil {
		for e := (*m)[hash]; e != nil; e = e.next {
			if e.schema == schema && e.db == db && bytes.Equal(e.key, key) {
				return e.v, true
			}
		}
	}
	var zero V
	return zero, false
}

// Put stores v under (schema, db, hash, key), replacing any value stored
// under the same. It copies key.
func (c *Cache[V]) Put(schema, db string, hash uint64, key []byte, v V) {
	s := c.shard(hash)
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.m.Load()
	n := 0
	if old != nil {
		n = len(*old)
	}
	m := make(map[uint64]*cacheEntry[V], n+1)
	if old != nil {
		for h, e := range *old {
			m[h] = e
		}
	}
	if _, ok := m[hash]; !ok && len(m) >= c.perShard {
		for h := range m { // map order is random: drop any one
			delete(m, h)
			break
		}
	}
	e := &cacheEntry[V]{schema: schema, db: db, key: bytes.Clone(key), v: v}
	for o := m[hash]; o != nil; o = o.next {
		if !(o.schema == schema && o.db == db && bytes.Equal(o.key, key)) {
			e.next = &cacheEntry[V]{schema: o.schema, db: o.db, key: o.key, v: o.v, next: e.next}
		}
	}
	m[hash] = e
	s.m.Store(&m)
}

// Len returns the number of entries (chained ones included).
func (c *Cache[V]) Len() int {
	n := 0
	for i := range c.shards {
		if m := c.shards[i].m.Load(); m != nil {
			for _, e := range *m {
				for ; e != nil; e = e.next {
					n++
				}
			}
		}
	}
	return n
}

// Clear drops every entry. Readers see each shard emptied at once.
func (c *Cache[V]) Clear() {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		sh.m.Store(nil)
		sh.mu.Unlock()
	}
}
