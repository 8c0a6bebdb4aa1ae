package engine

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
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
//
// Without a LIMIT, rows past the budget are spilled (MergeSpec.Spill): the
// rows held are sorted and written to a temporary file as a run, and the
// runs are merged at the end, one row of each in memory.
type finalSorter struct {
	keys   []keyCmp
	bound  uint64 // rows kept under a LIMIT; 0: no LIMIT
	rows   []sortRow
	seq    uint64
	held   int64
	budget int64
	spill  bool
	file   *os.File // the runs, once spilled
	runs   []spillRun
	w      *bufio.Writer
	buf    []byte
}

// spillRun is one sorted run in the spill file: its bytes' place.
type spillRun struct{ start, end int64 }

type sortRow struct {
	vals []sqltypes.Value
	seq  uint64
	size int64
}

func newFinalSorter(keys []keyCmp, m *Merge) *finalSorter {
	s := &finalSorter{keys: keys, budget: m.budget(), spill: m.Spec.Spill}
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
	if s.bound == 0 && s.spill && s.held+rowSize(row) > s.budget && len(s.rows) > 0 {
		if err := s.writeRun(); err != nil {
			return err
		}
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

// writeRun writes the rows held, sorted, as a run of the spill file.
func (s *finalSorter) writeRun() error {
	if s.file == nil {
		f, err := os.CreateTemp("", "shardgate-merge-*")
		if err != nil {
			return fmt.Errorf("merge: spilling rows past merge_memory: %w", err)
		}
		_ = os.Remove(f.Name()) // gone with the file's last handle
		s.file, s.w = f, bufio.NewWriterSize(f, 64<<10)
	}
	start := int64(0)
	if n := len(s.runs); n > 0 {
		start = s.runs[n-1].end
	}
	size := start
	for _, r := range s.sorted() {
		s.buf = encodeRow(s.buf[:0], r.seq, r.vals)
		if _, err := s.w.Write(s.buf); err != nil {
			return fmt.Errorf("merge: spilling rows past merge_memory: %w", err)
		}
		size += int64(len(s.buf))
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("merge: spilling rows past merge_memory: %w", err)
	}
	s.runs = append(s.runs, spillRun{start: start, end: size})
	s.rows, s.held = s.rows[:0], 0
	return nil
}

// encodeRow appends a spilled row: its arrival number, its values'
// count, and each value's type (0: NULL), length and bytes.
func encodeRow(b []byte, seq uint64, vals []sqltypes.Value) []byte {
	b = binary.AppendUvarint(b, seq)
	b = binary.AppendUvarint(b, uint64(len(vals)))
	for _, v := range vals {
		if v.IsNull() {
			b = binary.AppendUvarint(b, 0)
			continue
		}
		b = binary.AppendUvarint(b, uint64(v.Type())+1)
		b = binary.AppendUvarint(b, uint64(len(v.Raw())))
		b = append(b, v.Raw()...)
	}
	return b
}

// decodeRow reads a row encodeRow wrote.
func decodeRow(r *bufio.Reader) (sortRow, error) {
	seq, err := binary.ReadUvarint(r)
	if err != nil {
		return sortRow{}, err
	}
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return sortRow{}, err
	}
	vals := make([]sqltypes.Value, n)
	for i := range vals {
		t, err := binary.ReadUvarint(r)
		if err != nil {
			return sortRow{}, err
		}
		if t == 0 {
			vals[i] = sqltypes.NULL
			continue
		}
		l, err := binary.ReadUvarint(r)
		if err != nil {
			return sortRow{}, err
		}
		b := make([]byte, l)
		if _, err := io.ReadFull(r, b); err != nil {
			return sortRow{}, err
		}
		vals[i] = sqltypes.MakeTrusted(sqltypes.Type(t-1), b)
	}
	return sortRow{vals: vals, seq: seq}, nil
}

// each calls f with the rows in order, until it says done: from memory,
// or merging the spilled runs and the rows held.
func (s *finalSorter) each(f func([]sqltypes.Value) (bool, error)) error {
	if s.file == nil {
		for _, row := range s.sorted() {
			if done, err := f(row.vals); done || err != nil {
				return err
			}
		}
		return nil
	}
	if len(s.rows) > 0 {
		if err := s.writeRun(); err != nil {
			return err
		}
	}
	readers := make([]*bufio.Reader, len(s.runs))
	heads := make([]sortRow, len(s.runs))
	var live []int
	next := func(i int) error {
		row, err := decodeRow(readers[i])
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("merge: reading spilled rows: %w", err)
		}
		heads[i] = row
		live = append(live, i)
		return nil
	}
	for i, r := range s.runs {
		readers[i] = bufio.NewReaderSize(io.NewSectionReader(s.file, r.start, r.end-r.start), 64<<10)
		if err := next(i); err != nil {
			return err
		}
	}
	for len(live) > 0 {
		best := 0
		for k := 1; k < len(live); k++ {
			if s.less(&heads[live[k]], &heads[live[best]]) {
				best = k
			}
		}
		i := live[best]
		live = slices.Delete(live, best, best+1)
		if done, err := f(heads[i].vals); done || err != nil {
			return err
		}
		if err := next(i); err != nil {
			return err
		}
	}
	return nil
}

// close removes the spill file, if any.
func (s *finalSorter) close() {
	if s.file != nil {
		_ = s.file.Close()
		s.file = nil
	}
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
