package planner

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/sharding"
)

// Route, Keys and Place run per execution of a cached plan: the point
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
	var k RowKeys
	if n := testing.AllocsPerRun(100, func() { _ = an.Keys(v, false, &k); _ = an.Place(&k, 0) }); n != 0 {
		t.Errorf("single-row INSERT: %v allocations per Keys and Place, want 0", n)
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

// withSequenceTable adds sf_seq to the fixture: hash on id over 8
// sub-tables, an INT AUTO_INCREMENT key.
func withSequenceTable(t *testing.T) *sharding.Schema {
	s := fixture(t)
	r, err, n := hashRule(8)
	if err != nil {
		t.Fatal(err)
	}
	l, err := sharding.NewLayout([]string{"s0", "s1"}, n)
	if err != nil {
		t.Fatal(err)
	}
	g, err := sharding.NewGroup(r, l)
	if err != nil {
		t.Fatal(err)
	}
	st := &sharding.SchemaTable{Table: sharding.Table{Name: "sf_seq", ShardKey: "id", Group: g}, Type: sharding.TableSharded}
	st.SetKeyType(sharding.ColumnType{Class: sharding.ClassInt, Bits: 32, AutoIncrement: true})
	if err := s.Add(st); err != nil {
		t.Fatal(err)
	}
	return s
}

// Keys finds the rows whose AUTO_INCREMENT key the sequence generates, as
// MySQL decides, and Place puts generated and explicit keys on their
// sub-tables.
func TestInsertKeys(t *testing.T) {
	s := withSequenceTable(t)
	const first = 1000
	for _, c := range []struct {
		sql        string
		noAutoZero bool
		gen        []int
		keys       []int64 // each row's key after Place; generated ones from first
		maxExp     uint64
		last       int64
		lastKnown  bool
	}{
		{sql: "insert into sf_seq (x) values (1), (2), (3)", gen: []int{0, 1, 2}, keys: []int64{first, first + 1, first + 2}},
		{sql: "insert into sf_seq (id, x) values (null, 1), (0, 2), (5, 3), (default, 4)", gen: []int{0, 1, 3},
			keys: []int64{first, first + 1, 5, first + 2}, maxExp: 5},
		{sql: "insert into sf_seq (id, x) values (null, 1), (0, 2), (5, 3), (default, 4)", noAutoZero: true, gen: []int{0, 3},
			keys: []int64{first, 0, 5, first + 1}, maxExp: 5},
		{sql: "insert into sf_seq (id) values (7), (-3)", keys: []int64{7, -3}, maxExp: 7, last: -3, lastKnown: true},
		{sql: "insert into sf_seq (id) values ('12'), (0x0b)", keys: []int64{12, 11}, maxExp: 12, last: 11, lastKnown: true},
		{sql: "insert into sf_user (id) values (0), (null)", keys: []int64{0, 0}},
	} {
		an, err := Analyze(parse(t, c.sql), s, "shop")
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		var k RowKeys
		if err := an.Keys(nil, c.noAutoZero, &k); err != nil {
			t.Fatalf("%s: Keys: %v", c.sql, err)
		}
		if err := an.Place(&k, first); err != nil {
			t.Fatalf("%s: Place: %v", c.sql, err)
		}
		if !slices.Equal(k.Generate, c.gen) || k.MaxExplicit != c.maxExp || k.LastKeyKnown != c.lastKnown || c.lastKnown && k.LastKey != uint64(c.last) {
			t.Errorf("%s: Generate %v MaxExplicit %d LastKey %d (%v); want %v %d %d (%v)", c.sql, k.Generate, k.MaxExplicit, int64(k.LastKey), k.LastKeyKnown, c.gen, c.maxExp, c.last, c.lastKnown)
		}
		for i, key := range c.keys {
			want := h(t, key)
			if strings.Contains(c.sql, "null") && strings.HasPrefix(c.sql, "insert into sf_user") && i == 1 {
				want = 0 // NULL is a value of a key that is not AUTO_INCREMENT: sub-table 0
			}
			if k.Sub[i] != want {
				t.Errorf("%s: row %d on sub-table %d, want %d (key %d)", c.sql, i, k.Sub[i], want, key)
			}
		}
	}
}

// An INSERT whose rows are not all as long as its column list gets the
// server's error before any row is split off.
func TestInsertColumnCount(t *testing.T) {
	_, err := Analyze(parse(t, "insert into sf_user (id, x) values (1, 2), (3)"), fixture(t), "shop")
	var se *mysql.SQLError
	if !errors.As(err, &se) || se.Code != 1136 || se.State != "21S01" || se.Message != "Column count doesn't match value count at row 2" {
		t.Fatalf("got %v; want 1136 (21S01) at row 2", err)
	}
}
