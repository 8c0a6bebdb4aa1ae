package engine

import (
	"slices"

	"vitess.io/vitess/go/sqltypes"

	"github.com/shardgate/shardgate/internal/mysql"
)

// DefaultMergeBudget is the memory a merge may hold for rows it must
// sort itself when MergeSpec.Budget is 0.
const DefaultMergeBudget = 64 << 20

// finalSorter sorts the combined rows by MergeSpec.Final: all of them in
// memory, or with a LIMIT only the best Offset+Count (a bounded heap
// whose root is the worst row kept). Ties keep their arrival order.
type finalSorter struct {
	keys   []keyCmp
	bound  uint64 // rows kept under a LIMIT; 0: no LIMIT
	rows   []sortRow
	seq    uint64
	held   int64
	budget int64
}

type sortRow struct {
	vals []sqltypes.Value
	seq  uint64
	size int64
}

func newFinalSorter(keys []keyCmp, m *Merge) *finalSorter {
	s := &finalSorter{keys: keys, budget: m.budget()}
	if m.HasLimit {
		s.bound = m.Offset + m.Count
		if s.bound < m.Offset { // overflow: every row
			s.bound = 0
		}
	}
	return s
}

// less orders rows by the keys, then by arrival.
func (s *finalSorter) less(a, b *sortRow) bool {
	if c := compareRows(s.keys, a.vals, b.vals); c != 0 {
		return c < 0
	}
	return a.seq < b.seq
}

// add takes a copy of row.
func (s *finalSorter) add(row []sqltypes.Value) error {
	s.seq++
	if s.bound > 0 && uint64(len(s.rows)) == s.bound {
		// Full: the row replaces the worst kept one if it sorts before it
		// (a later row never wins a tie).
		if compareRows(s.keys, row, s.rows[0].vals) >= 0 {
			return nil
		}
		s.held -= s.rows[0].size
		if err := s.charge(row); err != nil {
			return err
		}
		s.rows[0] = s.copy(row)
		s.down(0)
		return nil
	}
	if err := s.charge(row); err != nil {
		return err
	}
	s.rows = append(s.rows, s.copy(row))
	if s.bound > 0 {
		s.up(len(s.rows) - 1)
	}
	return nil
}

func (s *finalSorter) charge(row []sqltypes.Value) error {
	s.held += rowSize(row)
	if s.held > s.budget {
		return outOfMemory(s.budget)
	}
	return nil
}

// outOfMemory is the error of a merge that would hold more than budget
// bytes of rows or values it cannot stream.
func outOfMemory(budget int64) error {
	return mysql.NewError(mysql.EROutOfSortMemory, "HY001",
		"Out of sort memory: merging this query's rows across shards needs more than %d bytes; raise shardgate's merge_memory setting or add a LIMIT", budget)
}

func (s *finalSorter) copy(row []sqltypes.Value) sortRow {
	return sortRow{vals: copyRow(row), seq: s.seq, size: rowSize(row)}
}

// sorted returns the rows in order.
func (s *finalSorter) sorted() []sortRow {
	slices.SortFunc(s.rows, func(a, b sortRow) int {
		if s.less(&a, &b) {
			return -1
		}
		return 1 // seq makes the order total: never equal
	})
	return s.rows
}

// The heap is a max-heap: the root is the worst row kept.
func (s *finalSorter) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(&s.rows[p], &s.rows[i]) {
			return
		}
		s.rows[p], s.rows[i] = s.rows[i], s.rows[p]
		i = p
	}
}

func (s *finalSorter) down(i int) {
	n := len(s.rows)
	for {
		w := i
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < n && s.less(&s.rows[w], &s.rows[c]) {
				w = c
			}
		}
		if w == i {
			return
		}
		s.rows[w], s.rows[i] = s.rows[i], s.rows[w]
		i = w
	}
}

// valueSize is what a sqltypes.Value costs besides its bytes.
const valueSize = 32

func rowSize(row []sqltypes.Value) int64 {
	n := int64(len(row)*valueSize + 64)
	for _, v := range row {
		n += int64(len(v.Raw()))
	}
	return n
}

// copyRow copies row into one new allocation for the values' bytes.
func copyRow(row []sqltypes.Value) []sqltypes.Value {
	n := 0
	for _, v := range row {
		n += len(v.Raw())
	}
	buf := make([]byte, 0, n)
	out := make([]sqltypes.Value, len(row))
	for i, v := range row {
		if v.IsNull() {
			out[i] = sqltypes.NULL
			continue
		}
		start := len(buf)
		buf = append(buf, v.Raw()...)
		out[i] = sqltypes.MakeTrusted(v.Type(), buf[start:len(buf):len(buf)])
	}
	return out
}
