package sharding

import (
	"fmt"
	"sort"
)

// Bound is one sub-table's key range [Start, End); a missing side is
// unbounded.
type Bound struct {
	Start, End       Value
	HasStart, HasEnd bool
}

// Range places a key on the sub-table whose Bound contains it. Ranges may
// leave gaps (a key there is ErrNoSubTable) but never overlap. NULL, lower
// than every value as in MySQL's RANGE partitioning, goes to the sub-table
// whose range starts lowest.
type Range struct {
	bounds []Bound
	null   int
}

// NewRange validates one Bound per sub-table.
func NewRange(bounds []Bound) (*Range, error) {
	if err := checkCount(len(bounds)); err != nil {
		return nil, err
	}
	order := make([]int, len(bounds))
	for i, b := range bounds {
		order[i] = i
		if b.HasStart && b.HasEnd {
			c, err := compareValues(b.Start, b.End)
			if err != nil {
				return nil, fmt.Errorf("sub-table %d: %w", i, err)
			}
			if c >= 0 {
				return nil, fmt.Errorf("sub-table %d: range start %s is not below its end %s", i, b.Start, b.End)
			}
		}
	}
	var sortErr error
	sort.SliceStable(order, func(x, y int) bool {
		c, err := compareStarts(bounds[order[x]], bounds[order[y]])
		if err != nil {
			sortErr = err
		}
		return c < 0
	})
	if sortErr != nil {
		return nil, sortErr
	}
	if err := checkNoOverlap(bounds, order); err != nil {
		return nil, err
	}
	return &Range{bounds: bounds, null: order[0]}, nil
}

func compareStarts(a, b Bound) (int, error) {
	switch {
	case !a.HasStart && !b.HasStart:
		return 0, nil
	case !a.HasStart:
		return -1, nil
	case !b.HasStart:
		return 1, nil
	}
	return compareValues(a.Start, b.Start)
}

// checkNoOverlap walks the ranges in start order: each must start at or
// after the previous one's end.
func checkNoOverlap(bounds []Bound, order []int) error {
	for k := 1; k < len(order); k++ {
		prev, cur := bounds[order[k-1]], bounds[order[k]]
		if !prev.HasEnd || !cur.HasStart {
			return fmt.Errorf("ranges of sub-tables %d and %d overlap", order[k-1], order[k])
		}
		c, err := compareValues(cur.Start, prev.End)
		if err != nil {
			return err
		}
		if c < 0 {
			return fmt.Errorf("ranges of sub-tables %d and %d overlap", order[k-1], order[k])
		}
	}
	return nil
}

func (r *Range) SubTables() int { return len(r.bounds) }

func (r *Range) Index(v Value) (int, error) {
	if v.kind == KindNull {
		return r.null, nil
	}
	for i, b := range r.bounds {
		in, err := b.contains(v)
		if err != nil {
			return 0, err
		}
		if in {
			return i, nil
		}
	}
	return 0, fmt.Errorf("key %s: %w", v, ErrNoSubTable)
}

func (b Bound) contains(v Value) (bool, error) {
	if b.HasStart {
		if c, err := compareValues(v, b.Start); err != nil || c < 0 {
			return false, err
		}
	}
	if b.HasEnd {
		if c, err := compareValues(v, b.End); err != nil || c >= 0 {
			return false, err
		}
	}
	return true, nil
}

func (r *Range) Prune(iv Interval) (Set, error) {
	s := NewSet(len(r.bounds))
	for i, b := range r.bounds {
		hit, err := b.overlaps(iv)
		if err != nil {
			return Set{}, err
		}
		if hit {
			s.Add(i)
		}
	}
	return s, nil
}

// overlaps reports whether [Start, End) meets iv. It may say yes for an
// interval that is empty between integers (x > 4 AND x < 5): a superset is
// safe, a missed sub-table is not.
func (b Bound) overlaps(iv Interval) (bool, error) {
	if b.HasStart && iv.HasHi {
		c, err := compareValues(iv.Hi, b.Start)
		if err != nil || c < 0 || c == 0 && !iv.HiIncl {
			return false, err
		}
	}
	if b.HasEnd && iv.HasLo {
		c, err := compareValues(iv.Lo, b.End)
		if err != nil || c >= 0 {
			return false, err
		}
	}
	return true, nil
}

// List places a key on the sub-table that lists it; a key listed nowhere is
// ErrNoSubTable. NULL is a value like any other: it must be listed (as in
// MySQL's LIST partitioning) to be stored.
type List struct {
	n      int
	values [][]Value
	index  map[string]int
}

// NewList validates one list of values per sub-table.
func NewList(values [][]Value) (*List, error) {
	if err := checkCount(len(values)); err != nil {
		return nil, err
	}
	l := &List{n: len(values), values: values, index: make(map[string]int)}
	for i, vs := range values {
		for _, v := range vs {
			k := listKey(v)
			if j, dup := l.index[k]; dup {
				return nil, fmt.Errorf("value %s is listed for sub-tables %d and %d", v, j, i)
			}
			l.index[k] = i
		}
	}
	return l, nil
}

// listKey identifies a value by kind and canonical bytes: equal keys
// (under the column's collation) have equal list keys.
func listKey(v Value) string {
	return string(appendCanonical([]byte{byte(v.kind)}, v))
}

func (l *List) SubTables() int { return l.n }

func (l *List) Index(v Value) (int, error) {
	if i, ok := l.index[listKey(v)]; ok {
		return i, nil
	}
	return 0, fmt.Errorf("key %s: %w", v, ErrNoSubTable)
}

// Prune checks every listed value against iv; string values are not
// ordered, so an interval on a string list keeps every sub-table.
func (l *List) Prune(iv Interval) (Set, error) {
	s := NewSet(l.n)
	for i, vs := range l.values {
		for _, v := range vs {
			if v.kind == KindNull {
				continue
			}
			in, err := iv.contains(v)
			if err != nil {
				return FullSet(l.n), nil
			}
			if in {
				s.Add(i)
			}
		}
	}
	return s, nil
}

// contains reports whether the non-NULL key v lies in iv.
func (iv Interval) contains(v Value) (bool, error) {
	if iv.HasLo {
		c, err := compareValues(v, iv.Lo)
		if err != nil || c < 0 || c == 0 && !iv.LoIncl {
			return false, err
		}
	}
	if iv.HasHi {
		c, err := compareValues(v, iv.Hi)
		if err != nil || c > 0 || c == 0 && !iv.HiIncl {
			return false, err
		}
	}
	return true, nil
}
