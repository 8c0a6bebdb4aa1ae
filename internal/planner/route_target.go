package planner

import (
	"math/bits"

	"github.com/shardgate/shardgate/internal/sharding"
)

// inlineWords sub-tables words are held in the Target itself, so routing
// a group of up to 256 sub-tables allocates nothing.
const inlineWords = 4

// Target is a set of sub-tables, a value like sharding.Set but held inline
// for up to 256 sub-tables: Route runs per execution of a cached plan.
type Target struct {
	n     int
	small [inlineWords]uint64
	big   []uint64
}

func newTarget(n int, full bool) Target {
	t := Target{n: n}
	if n > inlineWords*64 {
		t.big = make([]uint64, (n+63)/64)
	}
	if full {
		w := t.words()
		for i := range w {
			w[i] = ^uint64(0)
		}
		if r := n % 64; r != 0 {
			w[len(w)-1] = 1<<r - 1
		}
	}
	return t
}

func (t *Target) words() []uint64 {
	if t.big != nil {
		return t.big
	}
	return t.small[:(t.n+63)/64]
}

func (t *Target) add(i int) { t.words()[i/64] |= 1 << (i % 64) }

func (t *Target) and(o *Target) {
	w, ow := t.words(), o.words()
	for i := range w {
		w[i] &= ow[i]
	}
}

func (t *Target) or(o *Target) {
	w, ow := t.words(), o.words()
	for i := range w {
		w[i] |= ow[i]
	}
}

// SubTables is the number of sub-tables of the group.
func (t Target) SubTables() int { return t.n }

// Len is the number of sub-tables in t.
func (t Target) Len() int {
	c := 0
	for _, w := range t.words() {
		c += bits.OnesCount64(w)
	}
	return c
}

// Has reports whether sub-table i is in t.
func (t Target) Has(i int) bool {
	return i >= 0 && i < t.n && t.words()[i/64]&(1<<(i%64)) != 0
}

// Next returns the first sub-table in t from i on, or -1: iterate with
// for i := t.Next(0); i >= 0; i = t.Next(i + 1).
func (t Target) Next(i int) int {
	w := t.words()
	for ; i < t.n; i++ {
		if rest := w[i/64] >> (i % 64); rest != 0 {
			return i + bits.TrailingZeros64(rest)
		} else {
			i |= 63 // skip to the next word
		}
	}
	return -1
}

// Single returns the sub-table when t holds exactly one.
func (t Target) Single() (int, bool) {
	if t.Len() != 1 {
		return 0, false
	}
	return t.Next(0), true
}

// Set returns t as a sharding.Set (this allocates).
func (t Target) Set() sharding.Set {
	s := sharding.NewSet(t.n)
	for i := t.Next(0); i >= 0; i = t.Next(i + 1) {
		s.Add(i)
	}
	return s
}
