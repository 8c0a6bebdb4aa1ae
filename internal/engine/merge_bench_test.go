package engine

import (
	"fmt"
	"testing"

	"vitess.io/vitess/go/sqltypes"

	"github.com/shardgate/shardgate/internal/mysql"
)

// sliceInput serves prepared rows without copying: the merge's own cost.
type sliceInput struct {
	rows [][]sqltypes.Value
	next int
}

func (s *sliceInput) Next() ([]sqltypes.Value, bool, error) {
	if s.next == len(s.rows) {
		return nil, false, nil
	}
	s.next++
	return s.rows[s.next-1], true, nil
}

type nullOutput struct{}

func (nullOutput) Row([]sqltypes.Value) error { return nil }
func (nullOutput) Pass(int) error             { return nil }

// benchInputs makes k inputs of n rows each: (g, i, s, d), sorted by g
// then i, each g spanning `per` rows of an input, then s's weight and the
// weight of a space (hidden columns, as the planner adds them).
func benchInputs(k, n, per int) [][][]sqltypes.Value {
	ins := make([][][]sqltypes.Value, k)
	for j := range ins {
		for r := range n {
			ins[j] = append(ins[j], []sqltypes.Value{
				sqltypes.NewInt64(int64(r / per)),
				sqltypes.NewInt64(int64(r*k + j)),
				sqltypes.MakeTrusted(sqltypes.VarChar, fmt.Appendf(nil, "name-%06d", r*k+j)),
				sqltypes.MakeTrusted(sqltypes.Decimal, fmt.Appendf(nil, "%d.%02d", r, j)),
				sqltypes.MakeTrusted(sqltypes.VarBinary, fmt.Appendf(nil, "NAME-%06d", r*k+j)),
				sqltypes.MakeTrusted(sqltypes.VarBinary, []byte(" ")),
			})
		}
	}
	return ins
}

func benchMerge(b *testing.B, m *Merge, ins [][][]sqltypes.Value) {
	cols := []mysql.ColumnDef{cInt, cInt, cCI, cDec2, cBin, cBin}
	inputs := make([]mergeInput, len(ins))
	srcs := make([]*sliceInput, len(ins))
	for j := range ins {
		srcs[j] = &sliceInput{rows: ins[j]}
		inputs[j] = srcs[j]
	}
	rows := 0
	for _, in := range ins {
		rows += len(in)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for _, s := range srcs {
			s.next = 0
		}
		if err := m.run(cols, inputs, nullOutput{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkMergeOrderBy: a 4-input ORDER BY g, i merge sent with Pass.
// Allocations are per execution (the heap, the comparisons), none per row.
func BenchmarkMergeOrderBy(b *testing.B) {
	m := &Merge{Spec: &MergeSpec{Order: []SortKey{{Col: 0}, {Col: 1}}, Hidden: 2}}
	benchMerge(b, m, benchInputs(4, 5000, 10))
}

// BenchmarkMergeOrderByString: the same merge ordered by a
// utf8mb4_general_ci string.
func BenchmarkMergeOrderByString(b *testing.B) {
	m := &Merge{Spec: &MergeSpec{Order: []SortKey{{Col: 2}}, Hidden: 2, Weights: benchWeights}}
	benchMerge(b, m, benchInputs(4, 5000, 10))
}

// BenchmarkMergeGroupBy: GROUP BY g with COUNT, SUM(decimal), MIN(string)
// over 4 inputs, 40 rows a group.
func BenchmarkMergeGroupBy(b *testing.B) {
	m := &Merge{Spec: &MergeSpec{Order: []SortKey{{Col: 0}}, Groups: 1, Hidden: 2, Weights: benchWeights, Aggregates: []Aggregate{
		{Kind: AggCount, Col: 1}, {Kind: AggMin, Col: 2}, {Kind: AggSum, Col: 3}}}}
	benchMerge(b, m, benchInputs(4, 5000, 10))
}

// benchWeights: column 2's weights are in column 4 (and the space's in 5).
var benchWeights = []int{-1, -1, 4, -1, -1, -1}
