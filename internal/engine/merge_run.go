package engine

// TEMPORARY — this file belongs to the engineer of branch `mergeexec`
// (the row pipeline: heap, groups, aggregates, LIMIT); the lead takes
// theirs when merging. This stand-in only merges the parts' sorted
// streams by Spec.Order and applies Offset/Count, so that the I/O half
// (merge_io.go) can be tested.

import (
	"github.com/shardgate/shardgate/internal/mysql"
	"vitess.io/vitess/go/mysql/collations"
	"vitess.io/vitess/go/sqltypes"
	"vitess.io/vitess/go/vt/vtgate/evalengine"
)

func (m *Merge) run(cols []mysql.ColumnDef, in []mergeInput, out mergeOutput) error {
	heads := make([][]sqltypes.Value, len(in))
	for i := range in {
		row, ok, err := in[i].Next()
		if err != nil {
			return err
		}
		if ok {
			heads[i] = row
		}
	}
	env := collations.MySQL8()
	var n uint64
	for {
		best := -1
		for i, h := range heads {
			if h == nil {
				continue
			}
			if best < 0 {
				best = i
				continue
			}
			c, err := m.compareStub(env, cols, h, heads[best])
			if err != nil {
				return err
			}
			if c < 0 {
				best = i
			}
		}
		if best < 0 {
			return nil
		}
		if !m.HasLimit || n >= m.Offset {
			if err := out.Pass(best); err != nil {
				return err
			}
		}
		n++
		if m.HasLimit && n >= m.Offset+m.Count {
			return nil
		}
		row, ok, err := in[best].Next()
		if err != nil {
			return err
		}
		heads[best] = nil
		if ok {
			heads[best] = row
		}
	}
}

func (m *Merge) compareStub(env *collations.Environment, cols []mysql.ColumnDef, a, b []sqltypes.Value) (int, error) {
	for _, k := range m.Spec.Order {
		c, err := evalengine.NullsafeCompare(a[k.Col], b[k.Col], env, collations.ID(cols[k.Col].Charset), nil)
		if err != nil {
			return 0, err
		}
		if k.Desc {
			c = -c
		}
		if c != 0 {
			return c, nil
		}
	}
	return 0, nil
}
