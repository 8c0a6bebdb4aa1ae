package sharding

import (
	"encoding/hex"
	"testing"
)

// TestCollationGolden pins the canonical bytes (and placement) of string
// keys under collations weighed by Vitess: a Vitess upgrade that changed a
// weight would move rows already written, and must fail here first.
func TestCollationGolden(t *testing.T) {
	h, err := NewHash(8)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		coll, s, bytes string
		index          int
	}{
		{"utf8mb4_unicode_ci", "Straße ", "0fea10020fc00e330fea0fea0e8b", 6},
		{"utf8mb4_unicode_520_ci", "Ä😀", "120ffbc3f600", 5},
		{"utf8mb4_german2_ci", "Ä", "0e330e8b", 3},
		{"utf8mb3_general_ci", "Abc", "004100420043", 7},
		{"latin1_swedish_ci", "Äb ", "5c42", 4},
		{"latin1_bin", "Äb", "c462", 1},
		{"ascii_general_ci", "aB", "4142", 5},
	} {
		v := mustConvert(t, ColumnType{Class: ClassString, Collation: mustCollation(t, c.coll)}, StringLit(c.s))
		got := hex.EncodeToString(appendCanonical(nil, v))
		idx, err := h.Index(v)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.bytes || idx != c.index {
			t.Errorf("%s %q: bytes %s, sub-table %d; want %s, %d", c.coll, c.s, got, idx, c.bytes, c.index)
		}
	}
}
