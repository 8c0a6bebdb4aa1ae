package sharding

import (
	"errors"
	"fmt"
	"math"
)

// ErrNoSubTable means no sub-table is configured for a key (a range gap,
// a value missing from a list rule). The caller reports it to the client.
var ErrNoSubTable = errors.New("no sub-table holds this shard key")

// Rule maps a typed key value to the sub-table holding its rows.
type Rule interface {
	// SubTables is the number of sub-tables the rule distributes over.
	SubTables() int
	// Index returns the sub-table of rows whose key equals v (NULL included).
	Index(v Value) (int, error)
	// Prune returns every sub-table that could hold a key in iv; when it
	// cannot narrow them down it returns all of them.
	Prune(iv Interval) (Set, error)
}

// Interval is a range predicate on the key: Lo <(=) key <(=) Hi, either side
// possibly unbounded. NULL is in no interval.
type Interval struct {
	Lo, Hi         Value
	HasLo, HasHi   bool
	LoIncl, HiIncl bool
}

// Between is the interval lo <= key <= hi.
func Between(lo, hi Value) Interval {
	return Interval{Lo: lo, Hi: hi, HasLo: true, HasHi: true, LoIncl: true, HiIncl: true}
}

// IndexSet returns the sub-tables of key = v1 OR key = v2 … (IN lists).
func IndexSet(r Rule, values []Value) (Set, error) {
	s := NewSet(r.SubTables())
	for _, v := range values {
		i, err := r.Index(v)
		if errors.Is(err, ErrNoSubTable) {
			continue // no row can have this key: it adds no sub-table
		}
		if err != nil {
			return Set{}, err
		}
		s.Add(i)
	}
	return s, nil
}

// maxExpand bounds how many integer keys a hash-like rule enumerates for a
// range predicate before it gives up and returns every sub-table.
const maxExpand = 64

// intSpan returns iv's integer bounds, both inclusive, if iv is a bounded
// interval of integers.
func intSpan(iv Interval) (lo, hi int64, ok bool) {
	if !iv.HasLo || !iv.HasHi || iv.Lo.kind != KindInt || iv.Hi.kind != KindInt {
		return 0, 0, false
	}
	lo, hi = iv.Lo.i, iv.Hi.i
	if !iv.LoIncl {
		if lo == math.MaxInt64 {
			return 0, -1, true
		}
		lo++
	}
	if !iv.HiIncl {
		if hi == math.MinInt64 {
			return 0, -1, true
		}
		hi--
	}
	return lo, hi, true
}

// expandInts prunes by enumerating a small integer interval through r.Index.
func expandInts(r Rule, iv Interval) (Set, error) {
	lo, hi, ok := intSpan(iv)
	if !ok || hi >= lo && uint64(hi-lo) >= maxExpand {
		return FullSet(r.SubTables()), nil
	}
	s := NewSet(r.SubTables())
	for k := lo; k <= hi && s.Len() < r.SubTables(); k++ {
		i, err := r.Index(IntValue(k))
		if err != nil {
			return Set{}, err
		}
		s.Add(i)
		if k == math.MaxInt64 {
			break
		}
	}
	return s, nil
}

func checkCount(n int) error {
	if n < 1 {
		return fmt.Errorf("a rule needs at least one sub-table, got %d", n)
	}
	return nil
}

// Mod places integer keys on key mod n, taken as the non-negative
// (Euclidean) remainder: MySQL's MOD(-5, 4) is -1, a sub-table that does
// not exist, so -5 goes to 3. NULL goes to sub-table 0.
type Mod struct{ n int }

// NewMod returns the mod rule over n sub-tables.
func NewMod(n int) (*Mod, error) {
	if err := checkCount(n); err != nil {
		return nil, err
	}
	return &Mod{n: n}, nil
}

func (m *Mod) SubTables() int { return m.n }

func (m *Mod) Index(v Value) (int, error) {
	switch v.kind {
	case KindNull:
		return 0, nil
	case KindInt:
		r := v.i % int64(m.n)
		if r < 0 {
			r += int64(m.n)
		}
		return int(r), nil
	case KindUint:
		return int(uint64(v.i) % uint64(m.n)), nil
	}
	return 0, fmt.Errorf("mod rule: key %s is not an integer", v)
}

func (m *Mod) Prune(iv Interval) (Set, error) { return expandInts(m, iv) }

// Hash places any key on xxh64(canonical bytes) mod n; see the package
// documentation for the canonical bytes. NULL goes to sub-table 0.
type Hash struct{ n int }

// NewHash returns the hash rule over n sub-tables.
func NewHash(n int) (*Hash, error) {
	if err := checkCount(n); err != nil {
		return nil, err
	}
	return &Hash{n: n}, nil
}

func (h *Hash) SubTables() int { return h.n }

func (h *Hash) Index(v Value) (int, error) {
	if v.kind == KindNull {
		return 0, nil
	}
	return int(hashValue(v) % uint64(h.n)), nil
}

func (h *Hash) Prune(iv Interval) (Set, error) { return expandInts(h, iv) }
