package sharding

import (
	"fmt"
	"strings"
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

// collationIDs maps the collation numbers of column definitions to the
// collations implemented here: utf8mb3's weigh the characters utf8mb3
// holds as utf8mb4's do.
var collationIDs = map[uint16]Collation{
	33: CollationUTF8MB4GeneralCI, // utf8mb3_general_ci (information_schema's)
	45: CollationUTF8MB4GeneralCI,
	83: CollationUTF8MB4Bin, // utf8mb3_bin
	46: CollationUTF8MB4Bin,
	63: CollationBinary,
}

// CollationByID returns the collation numbered id (as column definitions
// carry it), when this package implements it.
func CollationByID(id uint16) (Collation, bool) {
	c, ok := collationIDs[id]
	return c, ok
}

// Compare orders a and b as the server orders them under c; ok is false
// when one is not a valid string of c's character set.
func (c Collation) Compare(a, b string) (cmp int, ok bool) {
	wa, err := weightString(c, a)
	if err != nil {
		return 0, false
	}
	wb, err := weightString(c, b)
	if err != nil {
		return 0, false
	}
	return strings.Compare(wa, wb), true
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
