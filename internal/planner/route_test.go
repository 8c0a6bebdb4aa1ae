package planner

import (
	"slices"
	"testing"

	"github.com/shardgate/shardgate/internal/sharding"
)

// Route and RowSubTables run per execution of a cached plan: the point
// select, the IN list and the single-row INSERT must not allocate.
func TestRouteAllocations(t *testing.T) {
	s := fixture(t)
	var v Values = values{lits: []sharding.Literal{sharding.NumberLit("42"), sharding.NumberLit("7")}, params: []sharding.Literal{sharding.IntLit(42)}}
	for _, c := range []struct {
		sql    string
		allocs float64
	}{
		{"select * from sf_user where id = :sgl1", 0},
		{"select * from sf_user where id = :sgp1", 0},
		{"select * from sf_user u join sf_order o on u.id = o.user_id where o.user_id in (:sgl1, :sgl2)", 0},
		{"update sf_user set x = 1 where id = :sgl1", 0},
		{"update sf_user set x = 1 where id = -:sgl1", 1}, // the negated number's text
	} {
		an, err := Analyze(parse(t, c.sql), s, "shop")
		if err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { _, _ = an.Route(v) }); n != c.allocs {
			t.Errorf("%s: %v allocations per Route, want %v", c.sql, n, c.allocs)
		}
	}
	an, err := Analyze(parse(t, "insert into sf_user (id, x) values (:sgl1, :sgl2)"), s, "shop")
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]int, 0, 1)
	if n := testing.AllocsPerRun(100, func() { dst, _ = an.RowSubTables(v, dst[:0]) }); n != 0 {
		t.Errorf("single-row INSERT: %v allocations per RowSubTables, want 0", n)
	}
}

func TestTarget(t *testing.T) {
	for _, n := range []int{1, 8, 64, 65, 256, 300} {
		full := newTarget(n, true)
		if full.Len() != n || !full.Has(n-1) || full.Has(n) || full.Has(-1) {
			t.Errorf("full set of %d: Len %d", n, full.Len())
		}
		s := newTarget(n, false)
		want := []int{0, n / 2, n - 1}
		for _, i := range want {
			s.add(i)
		}
		var got []int
		for i := s.Next(0); i >= 0; i = s.Next(i + 1) {
			got = append(got, i)
		}
		if want = slices.Compact(want); !slices.Equal(got, want) || !slices.Equal(s.Set().Indices(), want) {
			t.Errorf("n=%d: iterated %v, Set %v; want %v", n, got, s.Set().Indices(), want)
		}
		s.and(&full)
		if s.Len() != len(want) {
			t.Errorf("n=%d: and with the full set changed the set", n)
		}
		if i, one := s.Single(); one != (len(want) == 1) || one && i != 0 {
			t.Errorf("n=%d: Single = %d, %v", n, i, one)
		}
	}
}
