package sharding

import "math/bits"

// Set is a set of sub-table indices in [0, n).
type Set struct {
	n    int
	bits []uint64
}

// NewSet returns an empty set over n sub-tables.
func NewSet(n int) Set { return Set{n: n, bits: make([]uint64, (n+63)/64)} }

// FullSet returns the set of all n sub-tables.
func FullSet(n int) Set {
	s := NewSet(n)
	for i := 0; i < n; i++ {
		s.Add(i)
	}
	return s
}

// Add puts sub-table i in s.
func (s Set) Add(i int) { s.bits[i/64] |= 1 << (i % 64) }

// Has reports whether sub-table i is in s.
func (s Set) Has(i int) bool { return i >= 0 && i < s.n && s.bits[i/64]&(1<<(i%64)) != 0 }

// Len is the number of sub-tables in s.
func (s Set) Len() int {
	c := 0
	for _, w := range s.bits {
		c += bits.OnesCount64(w)
	}
	return c
}

// Full reports whether s holds every sub-table.
func (s Set) Full() bool { return s.Len() == s.n }

// Indices lists the sub-tables in s in ascending order.
func (s Set) Indices() []int {
	out := make([]int, 0, s.Len())
	for i := 0; i < s.n; i++ {
		if s.Has(i) {
			out = append(out, i)
		}
	}
	return out
}
