package sharding

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// goldenKeys covers every canonical form the hash rule hashes.
func goldenKeys(t *testing.T) []Value {
	d := func(col ColumnType, lit Literal) Value { return mustConvert(t, col, lit) }
	return []Value{
		IntValue(0), IntValue(1), IntValue(2), IntValue(42), IntValue(-1), IntValue(-42),
		IntValue(math.MaxInt64), IntValue(math.MinInt64), UintValue(math.MaxUint64),
		d(decCol, NumberLit("12.5")), d(decCol, NumberLit("-0.01")), d(doubleCol, NumberLit("1.5")),
		d(ciCol, StringLit("abc")), d(ciCol, StringLit("")), d(binCol, StringLit("abc")), d(rawCol, StringLit("abc")),
		d(ciCol, StringLit("straße")), d(dateCol, StringLit("2024-01-05")), d(dtCol, StringLit("2024-01-05 10:20:30.5")),
	}
}

// TestHashGolden pins the hash rule's placement: rows written today must be
// found after an upgrade. These numbers must never change.
func TestHashGolden(t *testing.T) {
	want := []int{3, 2, 0, 7, 1, 6, 4, 4, 1, 3, 6, 4, 7, 1, 4, 1, 2, 1, 4}
	h, err := NewHash(8)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range goldenKeys(t) {
		got, err := h.Index(v)
		if err != nil || got != want[i] {
			t.Errorf("hash(%v) = %d, %v; want %d", v, got, err, want[i])
		}
	}
	if got, _ := h.Index(Null()); got != 0 {
		t.Errorf("NULL goes to sub-table 0, got %d", got)
	}
}

// Equal keys of different spellings and classes hash alike.
func TestHashTypedEquality(t *testing.T) {
	h, _ := NewHash(16)
	idx := func(col ColumnType, lit Literal) int {
		i, err := h.Index(mustConvert(t, col, lit))
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	want := idx(intCol, NumberLit("-1"))
	for _, c := range []struct {
		col ColumnType
		lit Literal
	}{{intCol, StringLit("-1")}, {intCol, NumberLit("-1.0")}, {bigintCol, IntLit(-1)}, {decCol, NumberLit("-1.00")}, {doubleCol, DoubleLit(-1)}} {
		if got := idx(c.col, c.lit); got != want {
			t.Errorf("%v on %v: sub-table %d, want %d", c.lit, c.col, got, want)
		}
	}
	if idx(ciCol, StringLit("Abc")) != idx(ciCol, StringLit("abc ")) {
		t.Error("'Abc' and 'abc ' must share a sub-table under utf8mb4_general_ci")
	}
}

// The hash spreads sequential integers, strings and dates evenly.
func TestHashSpread(t *testing.T) {
	const n, keys = 8, 80000
	h, _ := NewHash(n)
	gens := map[string]func(i int) Value{
		"int":    func(i int) Value { return IntValue(int64(i)) },
		"string": func(i int) Value { return mustConvert(t, ciCol, StringLit("user"+string(rune('a'+i%26))+itoa(i))) },
		"date": func(i int) Value {
			v, _ := DatetimeValue(Datetime{Year: 2000 + i/366%50, Month: 1 + i%12, Day: 1 + i%28})
			return v
		},
		"decimal": func(i int) Value { return mustConvert(t, decCol, NumberLit(itoa(i)+".25")) },
	}
	for name, gen := range gens {
		var count [n]int
		for i := 0; i < keys; i++ {
			s, _ := h.Index(gen(i))
			count[s]++
		}
		for s, c := range count {
			if c < keys/n*9/10 || c > keys/n*11/10 {
				t.Errorf("%s keys: sub-table %d got %d of %d", name, s, c, keys)
			}
		}
	}
}

func itoa(i int) string { return IntValue(int64(i)).String() }

func TestMod(t *testing.T) {
	m, _ := NewMod(4)
	for k, want := range map[int64]int{0: 0, 5: 1, -5: 3, -4: 0, -1: 3, math.MinInt64: 0} {
		if got, err := m.Index(IntValue(k)); err != nil || got != want {
			t.Errorf("mod(%d) = %d, %v; want %d", k, got, err, want)
		}
	}
	if got, _ := m.Index(UintValue(math.MaxUint64)); got != 3 {
		t.Errorf("mod(2^64-1) = %d", got)
	}
	if _, err := m.Index(mustConvert(t, ciCol, StringLit("x"))); err == nil {
		t.Error("mod accepted a string key")
	}
	if _, err := NewMod(0); err == nil {
		t.Error("mod over 0 sub-tables")
	}
}

func intRange(t *testing.T, edges ...int64) *Range {
	t.Helper()
	var b []Bound
	for i := 0; i+1 < len(edges); i += 2 {
		b = append(b, Bound{Start: IntValue(edges[i]), End: IntValue(edges[i+1]), HasStart: true, HasEnd: true})
	}
	r, err := NewRange(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRange(t *testing.T) {
	r := intRange(t, 100, 200, 0, 100, 300, 400) // sub-table 1 starts lowest; 200-300 is a gap
	for k, want := range map[int64]int{0: 1, 99: 1, 100: 0, 199: 0, 300: 2, 399: 2} {
		if got, err := r.Index(IntValue(k)); err != nil || got != want {
			t.Errorf("range(%d) = %d, %v; want %d", k, got, err, want)
		}
	}
	for _, k := range []int64{-1, 200, 299, 400} {
		if _, err := r.Index(IntValue(k)); !errors.Is(err, ErrNoSubTable) {
			t.Errorf("range(%d): %v, want ErrNoSubTable", k, err)
		}
	}
	if got, _ := r.Index(Null()); got != 1 {
		t.Errorf("NULL goes to the lowest range (sub-table 1), got %d", got)
	}
	if got, _ := r.Index(mustConvert(t, decCol, NumberLit("99.5"))); got != 1 {
		t.Errorf("99.5 in sub-table %d", got)
	}
	for _, c := range []struct {
		iv   Interval
		want []int
	}{
		{Between(IntValue(50), IntValue(150)), []int{0, 1}},
		{Interval{Lo: IntValue(100), HasLo: true, LoIncl: false}, []int{0, 2}},
		{Interval{Hi: IntValue(100), HasHi: true}, []int{1}},
		{Interval{Hi: IntValue(100), HasHi: true, HiIncl: true}, []int{0, 1}},
		{Between(IntValue(200), IntValue(299)), nil},
		{Interval{}, []int{0, 1, 2}},
	} {
		s, err := r.Prune(c.iv)
		if err != nil || !sameInts(s.Indices(), c.want) {
			t.Errorf("prune %+v = %v, %v; want %v", c.iv, s.Indices(), err, c.want)
		}
	}
}

func sameInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRangeValidation(t *testing.T) {
	bad := [][]Bound{
		{{Start: IntValue(0), End: IntValue(10), HasStart: true, HasEnd: true}, {Start: IntValue(5), End: IntValue(20), HasStart: true, HasEnd: true}},
		{{Start: IntValue(10), End: IntValue(10), HasStart: true, HasEnd: true}},
		{{End: IntValue(10), HasEnd: true}, {End: IntValue(5), HasEnd: true}},
		{{Start: IntValue(0), HasStart: true}, {Start: IntValue(5), End: IntValue(6), HasStart: true, HasEnd: true}},
		{},
	}
	for i, b := range bad {
		if _, err := NewRange(b); err == nil {
			t.Errorf("case %d: overlapping or empty ranges accepted", i)
		}
	}
}

func TestList(t *testing.T) {
	s := func(x string) Value { return mustConvert(t, ciCol, StringLit(x)) }
	l, err := NewList([][]Value{{s("cn"), s("jp")}, {s("us"), Null()}, {s("de")}})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]int{"CN": 0, "jp  ": 0, "US": 1, "de": 2} {
		if got, err := l.Index(s(k)); err != nil || got != want {
			t.Errorf("list(%q) = %d, %v; want %d", k, got, err, want)
		}
	}
	if got, _ := l.Index(Null()); got != 1 {
		t.Errorf("NULL listed on 1, got %d", got)
	}
	if _, err := l.Index(s("fr")); !errors.Is(err, ErrNoSubTable) {
		t.Errorf("unlisted: %v", err)
	}
	if _, err := NewList([][]Value{{s("a")}, {s("A ")}}); err == nil {
		t.Error("duplicate (equal under the collation) list values accepted")
	}
	il, _ := NewList([][]Value{{IntValue(1), IntValue(5)}, {IntValue(10)}, {IntValue(20)}})
	if p, _ := il.Prune(Between(IntValue(2), IntValue(10))); !sameInts(p.Indices(), []int{0, 1}) {
		t.Errorf("list prune = %v", p.Indices())
	}
	if p, _ := l.Prune(Between(s("a"), s("z"))); !p.Full() {
		t.Error("strings are not ordered: an interval keeps every sub-table")
	}
}

func TestDate(t *testing.T) {
	p := func(u DateUnit, s string) int64 {
		v, err := ParsePeriod(u, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	r, err := NewDate(Month, []Periods{{p(Month, "2024-01"), p(Month, "2024-03")}, {p(Month, "2024-04"), p(Month, "2024-12")}})
	if err != nil {
		t.Fatal(err)
	}
	d := func(s string) Value { return mustConvert(t, dtCol, StringLit(s)) }
	for k, want := range map[string]int{"2024-01-01": 0, "2024-03-31 23:59:59": 0, "2024-04-01": 1, "2024-12-31": 1} {
		if got, err := r.Index(d(k)); err != nil || got != want {
			t.Errorf("date_month(%s) = %d, %v; want %d", k, got, err, want)
		}
	}
	if _, err := r.Index(d("2025-01-01")); !errors.Is(err, ErrNoSubTable) {
		t.Errorf("2025: %v", err)
	}
	if s, _ := r.Prune(Between(d("2024-02-10"), d("2024-03-01"))); !sameInts(s.Indices(), []int{0}) {
		t.Errorf("prune = %v", s.Indices())
	}
	if _, err := NewDate(Year, []Periods{{2020, 2022}, {2022, 2023}}); err == nil {
		t.Error("overlapping years accepted")
	}
	y, _ := NewDate(Year, []Periods{{2020, 2020}, {2021, 2030}})
	dy, _ := NewDate(Day, []Periods{{p(Day, "2024-01-01"), p(Day, "2024-01-01")}, {p(Day, "2024-01-02"), p(Day, "2024-01-31")}})
	if got, _ := y.Index(d("2025-06-01")); got != 1 {
		t.Errorf("date_year = %d", got)
	}
	if got, _ := dy.Index(d("2024-01-02 00:00:01")); got != 1 {
		t.Errorf("date_day = %d", got)
	}
}

// TestKingshardGolden: expected sub-tables derived by hand from kingshard's
// proxy/router/shard.go (HashValue: uint64(int64) or ParseUint else
// crc32.ChecksumIEEE; index = h % ShardNum) and numkey.go
// (ParseNumSharding: [i*limit, (i+1)*limit)); crc32 values computed with
// Python's zlib.crc32.
func TestKingshardGolden(t *testing.T) {
	k8, _ := NewKingshardHash(8)
	k5, _ := NewKingshardHash(5)
	for _, c := range []struct {
		v         Value
		want8, w5 int
	}{
		{IntValue(0), 0, 0}, {IntValue(1), 1, 1}, {IntValue(7), 7, 2}, {IntValue(8), 0, 3}, {IntValue(42), 2, 2},
		{IntValue(-1), 7, 0}, {IntValue(-42), 6, 4}, {IntValue(math.MaxInt64), 7, 2}, {UintValue(math.MaxUint64), 7, 0},
		{mustConvert(t, rawCol, StringLit("abc")), 2, 3}, {mustConvert(t, rawCol, StringLit("-1")), 2, 2},
		{mustConvert(t, rawCol, StringLit("abc ")), 0, 1}, {mustConvert(t, rawCol, StringLit("hello")), 6, 0},
		{mustConvert(t, rawCol, StringLit("42")), 2, 2}, {mustConvert(t, rawCol, StringLit("18446744073709551616")), 0, 0},
	} {
		g8, err8 := k8.Index(c.v)
		g5, err5 := k5.Index(c.v)
		if err8 != nil || err5 != nil || g8 != c.want8 || g5 != c.w5 {
			t.Errorf("kingshard hash(%v) = %d/%d (%v %v), want %d/%d", c.v, g8, g5, err8, err5, c.want8, c.w5)
		}
	}
	if _, err := k8.Index(mustConvert(t, ciCol, StringLit("abc"))); !errors.Is(err, ErrInexact) {
		t.Errorf("kingshard hash of a _ci string must be inexact, got %v", err)
	}
	kr, err := NewKingshardRange(8, 10000)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[int64]int{0: 0, 9999: 0, 10000: 1, 79999: 7} {
		if got, err := kr.Index(IntValue(k)); err != nil || got != want {
			t.Errorf("kingshard range(%d) = %d, %v; want %d", k, got, err, want)
		}
	}
	for _, k := range []int64{-1, 80000} {
		if _, err := kr.Index(IntValue(k)); !errors.Is(err, ErrNoSubTable) {
			t.Errorf("kingshard range(%d): %v", k, err)
		}
	}
}

// Property: every key maps to exactly one sub-table, and pruning an
// interval always keeps the sub-table of every key inside it.
func TestPruneContainsEveryMatchingKey(t *testing.T) {
	hash, _ := NewHash(8)
	mod, _ := NewMod(6)
	ks, _ := NewKingshardHash(8)
	rng := intRange(t, -1000, -10, -10, 50, 50, 51, 60, 1000)
	list, _ := NewList([][]Value{{IntValue(1), IntValue(7)}, {IntValue(3)}, {IntValue(-4), IntValue(99)}})
	rules := map[string]Rule{"hash": hash, "mod": mod, "kingshard": ks, "range": rng, "list": list}
	r := rand.New(rand.NewPCG(1, 2))
	for name, rule := range rules {
		for trial := 0; trial < 2000; trial++ {
			lo := r.Int64N(400) - 200
			hi := lo + r.Int64N(100)
			iv := Interval{Lo: IntValue(lo), Hi: IntValue(hi), HasLo: r.IntN(4) > 0, HasHi: r.IntN(4) > 0, LoIncl: r.IntN(2) == 0, HiIncl: r.IntN(2) == 0}
			set, err := rule.Prune(iv)
			if err != nil {
				t.Fatalf("%s: prune %+v: %v", name, iv, err)
			}
			for k := lo - 5; k <= hi+5; k++ {
				if in, _ := iv.contains(IntValue(k)); !in {
					continue
				}
				i, err := rule.Index(IntValue(k))
				if errors.Is(err, ErrNoSubTable) {
					continue
				}
				if err != nil || i < 0 || i >= rule.SubTables() {
					t.Fatalf("%s: key %d -> %d, %v", name, k, i, err)
				}
				if !set.Has(i) {
					t.Fatalf("%s: prune %+v = %v misses key %d on sub-table %d", name, iv, set.Indices(), k, i)
				}
			}
		}
	}
}

func TestIndexSet(t *testing.T) {
	rng := intRange(t, 0, 10, 10, 20)
	s, err := IndexSet(rng, []Value{IntValue(1), IntValue(2), IntValue(500)})
	if err != nil || !sameInts(s.Indices(), []int{0}) {
		t.Errorf("IN (1, 2, 500) = %v, %v", s.Indices(), err)
	}
}
