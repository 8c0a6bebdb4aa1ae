package sharding

import (
	"fmt"
	"unicode/utf8"
)

// Collation is a string key's collation. Only the collations whose weight
// function this package implements exactly are accepted: routing must put
// strings the server calls equal on the same sub-table.
type Collation uint8

const (
	CollationBinary           Collation = iota + 1 // binary strings: bytes, NO PAD
	CollationUTF8MB4Bin                            // utf8mb4_bin: code points, PAD SPACE
	CollationUTF8MB4GeneralCI                      // utf8mb4_general_ci: MariaDB's default, PAD SPACE
)

var collationNames = map[string]Collation{
	"binary":             CollationBinary,
	"utf8mb4_bin":        CollationUTF8MB4Bin,
	"utf8mb4_general_ci": CollationUTF8MB4GeneralCI,
}

// LookupCollation returns the collation named as in information_schema.
func LookupCollation(name string) (Collation, error) {
	if c, ok := collationNames[name]; ok {
		return c, nil
	}
	return 0, fmt.Errorf("collation %q is not supported for shard keys (supported: binary, utf8mb4_bin, utf8mb4_general_ci)", name)
}

func (c Collation) String() string {
	for name, cc := range collationNames {
		if cc == c {
			return name
		}
	}
	return fmt.Sprintf("collation(%d)", uint8(c))
}

// convertString: a string column compares with a string (or 0x literal,
// converted to the column's character set) under its collation. Numbers
// compare with it as doubles, which no single string key represents.
func convertString(col ColumnType, lit Literal) (Value, error) {
	if lit.kind != LitString && lit.kind != LitHex {
		return Value{}, inexact("a %s compares with a string column as a double", lit.kind)
	}
	w, err := weightString(col.Collation, lit.text)
	if err != nil {
		return Value{}, err
	}
	return Value{kind: KindString, coll: col.Collation, s: w, raw: lit.text}, nil
}

// weightString returns the bytes that compare under c exactly as s does:
// strings equal under c have equal weight strings, and only those.
func weightString(c Collation, s string) (string, error) {
	switch c {
	case CollationBinary:
		return s, nil
	case CollationUTF8MB4Bin:
		return utf8Weights(s, 3, func(r rune) uint32 { return uint32(r) })
	case CollationUTF8MB4GeneralCI:
		return utf8Weights(s, 2, generalCIWeight)
	}
	return "", fmt.Errorf("collation %s is not supported for shard keys", c)
}

// utf8Weights encodes each character's weight big-endian in width bytes and
// drops trailing spaces' weights: PAD SPACE collations compare 'a' = 'a '.
func utf8Weights(s string, width int, weight func(rune) uint32) (string, error) {
	if !utf8.ValidString(s) {
		return "", inexact("not valid utf8mb4")
	}
	end := len(s)
	for end > 0 && s[end-1] == ' ' {
		end--
	}
	buf := make([]byte, 0, utf8.RuneCountInString(s[:end])*width)
	for _, r := range s[:end] {
		w := weight(r)
		for i := width - 1; i >= 0; i-- {
			buf = append(buf, byte(w>>(8*i)))
		}
	}
	return string(buf), nil
}

// generalCIWeight is utf8mb4_general_ci's weight: a table for the BMP
// (generated from the server), U+FFFD for every supplementary character.
func generalCIWeight(r rune) uint32 {
	if r > 0xFFFF {
		return 0xFFFD
	}
	if page := generalCIPages[r>>8]; page != nil {
		return uint32(page[r&0xFF])
	}
	return uint32(r)
}
