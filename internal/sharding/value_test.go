package sharding

import (
	"errors"
	"strings"
	"testing"
)

var (
	intCol     = ColumnType{Class: ClassInt, Bits: 32}
	bigintCol  = ColumnType{Class: ClassInt}
	tinyUCol   = ColumnType{Class: ClassUint, Bits: 8}
	ubigintCol = ColumnType{Class: ClassUint}
	decCol     = ColumnType{Class: ClassDecimal, Precision: 10, Scale: 2}
	wideDecCol = ColumnType{Class: ClassDecimal, Precision: 30, Scale: 2}
	doubleCol  = ColumnType{Class: ClassDouble}
	ciCol      = ColumnType{Class: ClassString, Collation: CollationUTF8MB4GeneralCI}
	binCol     = ColumnType{Class: ClassString, Collation: CollationUTF8MB4Bin}
	rawCol     = ColumnType{Class: ClassString, Collation: CollationBinary}
	dateCol    = ColumnType{Class: ClassDate}
	dtCol      = ColumnType{Class: ClassDatetime, Scale: 3}
)

func mustConvert(t *testing.T, col ColumnType, lit Literal) Value {
	t.Helper()
	v, err := Convert(col, lit)
	if err != nil {
		t.Fatalf("Convert(%v): %v", lit, err)
	}
	return v
}

// The spellings the issue names must all be the same key on an INT column.
func TestConvertIntegerSpellings(t *testing.T) {
	for _, lit := range []Literal{
		NumberLit("42"), NumberLit("42.0"), NumberLit("42.000"), NumberLit("+42"), NumberLit("4.2e1"),
		StringLit("42"), StringLit(" 42 "), StringLit("42.0"), HexLit("\x2A"), HexLit("\x00\x2A"),
		IntLit(42), UintLit(42), DoubleLit(42),
	} {
		if v := mustConvert(t, intCol, lit); v != IntValue(42) {
			t.Errorf("%v on INT = %v, want 42", lit, v)
		}
	}
	if v := mustConvert(t, intCol, NumberLit("-1")); v != IntValue(-1) {
		t.Errorf("-1 = %v", v)
	}
	if v := mustConvert(t, intCol, StringLit("-1")); v != IntValue(-1) {
		t.Errorf("'-1' = %v", v)
	}
}

func TestConvertIntegerInexact(t *testing.T) {
	for _, c := range []struct {
		col ColumnType
		lit Literal
	}{
		{intCol, StringLit("42abc")},      // MySQL compares it as 42 with a warning; strict INSERT fails
		{intCol, NumberLit("42.5")},       // matches no row
		{intCol, StringLit("42.5")},       // compared as double: no row
		{intCol, StringLit("0x2A")},       // a string: 0 as a double
		{intCol, NumberLit("3000000000")}, // beyond INT
		{tinyUCol, NumberLit("-1")},
		{tinyUCol, NumberLit("256")},
		{bigintCol, StringLit("9007199254740993")}, // compared as a double: two rows could match
		{bigintCol, DoubleLit(1e300)},
		{bigintCol, NumberLit("18446744073709551615")},
		{bigintCol, StringLit("1e1")},
		{intCol, HexLit("\x01\x00\x00\x00\x00\x00\x00\x00\x00")},
		{intCol, DatetimeLit(Datetime{Year: 2024, Month: 1, Day: 1})},
	} {
		if _, err := Convert(c.col, c.lit); !errors.Is(err, ErrInexact) {
			t.Errorf("Convert(%v, %v) = %v, want ErrInexact", c.col, c.lit, err)
		}
	}
}

func TestConvertUnsignedAndNull(t *testing.T) {
	if v := mustConvert(t, ubigintCol, NumberLit("18446744073709551615")); v.Kind() != KindUint || v.Uint() != 1<<64-1 {
		t.Errorf("max uint64 = %v", v)
	}
	if v := mustConvert(t, ubigintCol, IntLit(7)); v != IntValue(7) {
		t.Errorf("small unsigned is held as int: %v", v)
	}
	for _, col := range []ColumnType{intCol, decCol, ciCol, dateCol} {
		if v := mustConvert(t, col, NullLit()); !v.IsNull() {
			t.Errorf("NULL on %v = %v", col, v)
		}
	}
}

var tenth = 0.1 // a variable: constant arithmetic would be exact

func TestConvertDecimal(t *testing.T) {
	for _, c := range []struct {
		lit  Literal
		want string
	}{
		{NumberLit("12.50"), "12.5"}, {NumberLit("012.5"), "12.5"}, {IntLit(42), "42"},
		{NumberLit("42.00"), "42"}, {NumberLit("-0.00"), "0"}, {StringLit("12.5"), "12.5"},
		{DoubleLit(12.5), "12.5"}, {NumberLit("1.25e1"), "12.5"}, {NumberLit("-3.1"), "-3.1"},
	} {
		if v := mustConvert(t, decCol, c.lit); v.String() != c.want {
			t.Errorf("%v on DECIMAL(10,2) = %v, want %s", c.lit, v, c.want)
		}
	}
	if v := mustConvert(t, decCol, NumberLit("42.0")); v != IntValue(42) {
		t.Errorf("integral decimals hash as integers: %v", v)
	}
	for _, c := range []struct {
		col ColumnType
		lit Literal
	}{
		{decCol, NumberLit("1.255")}, {decCol, NumberLit("123456789")}, {wideDecCol, StringLit("1.5")},
		{wideDecCol, DoubleLit(1.5)}, {decCol, StringLit("abc")}, {decCol, DoubleLit(tenth + 0.2)},
	} {
		if _, err := Convert(c.col, c.lit); !errors.Is(err, ErrInexact) {
			t.Errorf("Convert(%v, %v) = %v, want ErrInexact", c.col, c.lit, err)
		}
	}
	if v := mustConvert(t, wideDecCol, NumberLit("1.5")); v.String() != "1.5" {
		t.Errorf("decimal literal on a wide DECIMAL is exact: %v", v)
	}
}

func TestConvertDouble(t *testing.T) {
	if v := mustConvert(t, doubleCol, NumberLit("1.5")); v.Kind() != KindDouble || v.f != 1.5 {
		t.Errorf("1.5 = %v", v)
	}
	if v := mustConvert(t, doubleCol, NumberLit("-0.0")); v != IntValue(0) {
		t.Errorf("-0.0 = %v", v)
	}
	for _, lit := range []Literal{StringLit("Inf"), StringLit("0x10"), StringLit("1_0"), NumberLit("NaN")} {
		if _, err := Convert(doubleCol, lit); !errors.Is(err, ErrInexact) {
			t.Errorf("%v on DOUBLE = %v, want ErrInexact", lit, err)
		}
	}
}

// 'Abc' and 'abc ' are equal under a _ci PAD SPACE collation: same weights.
func TestConvertStringCollations(t *testing.T) {
	w := func(col ColumnType, s string) string { return mustConvert(t, col, StringLit(s)).s }
	if w(ciCol, "Abc") != w(ciCol, "abc  ") || w(ciCol, "Ábc") != w(ciCol, "abc") || w(ciCol, "straße") == w(ciCol, "strasse") {
		t.Error("utf8mb4_general_ci weights disagree with the server's equality")
	}
	if w(binCol, "abc") != w(binCol, "abc ") || w(binCol, "Abc") == w(binCol, "abc") {
		t.Error("utf8mb4_bin: PAD SPACE, case-sensitive")
	}
	if w(rawCol, "abc") == w(rawCol, "abc ") {
		t.Error("binary is NO PAD")
	}
	if w(ciCol, "a\t") == w(ciCol, "a") {
		t.Error("only spaces are padding")
	}
	if v := mustConvert(t, ciCol, HexLit("ABC")); v.s != w(ciCol, "abc") {
		t.Error("0x414243 compares as the string 'ABC' under the column's collation")
	}
	for _, lit := range []Literal{IntLit(1), NumberLit("1"), StringLit("\xff")} {
		if _, err := Convert(ciCol, lit); !errors.Is(err, ErrInexact) {
			t.Errorf("%v on a string key = %v, want ErrInexact", lit, err)
		}
	}
	for _, name := range []string{"utf8mb4_uca1400_ai_ci", "utf8mb4_general_nopad_ci", "gbk_chinese_ci"} {
		if _, err := LookupCollation(name); err == nil || !strings.Contains(err.Error(), "utf8mb4_unicode_ci") {
			t.Errorf("LookupCollation(%s) = %v: want a refusal listing the supported collations", name, err)
		}
	}
	if c, err := LookupCollation("utf8mb4_general_ci"); err != nil || c != CollationUTF8MB4GeneralCI {
		t.Errorf("LookupCollation = %v, %v", c, err)
	}
}

// The collations Vitess weighs: utf8mb4 keys are converted to the column's
// character set, and a character it cannot hold matches no single key.
func TestConvertVitessCollations(t *testing.T) {
	unicodeCol := ColumnType{Class: ClassString, Collation: mustCollation(t, "utf8mb4_unicode_ci")}
	latinCol := ColumnType{Class: ClassString, Collation: mustCollation(t, "latin1_swedish_ci")}
	utf8Col := ColumnType{Class: ClassString, Collation: mustCollation(t, "utf8_general_ci")}
	w := func(col ColumnType, lit Literal) string { return mustConvert(t, col, lit).s }
	for _, p := range [][2]string{{"Straße", "STRASSE"}, {"Abc", "abc  "}, {"a\u00a0", "A"}, {"Ä", "a"}} {
		if w(unicodeCol, StringLit(p[0])) != w(unicodeCol, StringLit(p[1])) {
			t.Errorf("utf8mb4_unicode_ci: %q and %q are equal on the server", p[0], p[1])
		}
	}
	if w(unicodeCol, StringLit("a\t")) == w(unicodeCol, StringLit("a")) || w(latinCol, StringLit("Ä")) == w(latinCol, StringLit("a")) {
		t.Error("only what weighs as a space is padding; latin1_swedish_ci tells Ä from a")
	}
	if w(latinCol, HexLit("\xc4")) != w(latinCol, StringLit("ä")) {
		t.Error("0xC4 is latin1's Ä")
	}
	for _, c := range []struct {
		col ColumnType
		lit Literal
	}{{latinCol, StringLit("中")}, {utf8Col, StringLit("😀")}, {unicodeCol, StringLit("\xff")}, {unicodeCol, HexLit("\xff")}, {latinCol, IntLit(1)}} {
		if _, err := Convert(c.col, c.lit); !errors.Is(err, ErrInexact) {
			t.Errorf("%v on %v = %v, want ErrInexact", c.lit, c.col.Collation, err)
		}
	}
}

func TestConvertDatetime(t *testing.T) {
	d := mustConvert(t, dateCol, StringLit("2024-01-05"))
	for _, lit := range []Literal{StringLit("2024-1-5"), StringLit("2024-01-05 00:00:00"), DatetimeLit(Datetime{Year: 2024, Month: 1, Day: 5})} {
		if v := mustConvert(t, dateCol, lit); v != d {
			t.Errorf("%v on DATE = %v, want %v", lit, v, d)
		}
	}
	if v := mustConvert(t, dtCol, StringLit("2024-01-05 10:20:30.12")); v.Datetime() != (Datetime{2024, 1, 5, 10, 20, 30, 120000}) {
		t.Errorf("datetime = %v", v.Datetime())
	}
	for _, c := range []struct {
		col ColumnType
		lit Literal
	}{
		{dateCol, StringLit("2024-01-05 10:00:00")}, {dateCol, StringLit("2024-02-30")}, {dateCol, StringLit("0000-00-00")},
		{dateCol, StringLit("20240105")}, {dtCol, StringLit("2024-01-05 10:20:30.1234")}, {dateCol, IntLit(20240105)},
	} {
		if _, err := Convert(c.col, c.lit); !errors.Is(err, ErrInexact) {
			t.Errorf("Convert(%v, %v) = %v, want ErrInexact", c.col, c.lit, err)
		}
	}
}

func TestCollationCompare(t *testing.T) {
	for _, tc := range []struct {
		id   uint16
		a, b string
		want int
	}{
		{33, "A", "b", -1}, {33, "a", "A", 0}, {33, "t", "t_0000", -1}, {33, "a ", "a", 0}, {45, "Ä", "a", 0},
		{83, "A", "a", -1}, {83, "a ", "a", 0}, {63, "a ", "a", 1}, {63, "B", "a", -1},
	} {
		c, ok := CollationByID(tc.id)
		if !ok {
			t.Fatalf("collation %d unknown", tc.id)
		}
		if got, ok := c.Compare(tc.a, tc.b); !ok || got != tc.want {
			t.Errorf("collation %d: Compare(%q, %q) = %d, %v; want %d", tc.id, tc.a, tc.b, got, ok, tc.want)
		}
	}
	if _, ok := CollationByID(8); ok {
		t.Error("latin1_swedish_ci is not implemented, yet CollationByID found it")
	}
}
