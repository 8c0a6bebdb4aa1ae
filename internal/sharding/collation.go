package sharding

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"vitess.io/vitess/go/mysql/collations"
	"vitess.io/vitess/go/mysql/collations/charset"
	"vitess.io/vitess/go/mysql/collations/colldata"
)

// Collation is a string key's collation. Only the collations whose weight
// function is known exactly are accepted: routing must put strings the
// server calls equal on the same sub-table.
type Collation uint8

// The first three collations have their own weight code: their weight
// strings decide where existing data lives and must never change.
const (
	CollationBinary           Collation = iota + 1 // binary strings: bytes, NO PAD
	CollationUTF8MB4Bin                            // utf8mb4_bin: code points, PAD SPACE
	CollationUTF8MB4GeneralCI                      // utf8mb4_general_ci: MariaDB's default, PAD SPACE
	collationVitess                                // the first of vitessNames
)

// vitessNames are the collations whose weights come from Vitess's
// collations package, each checked against MariaDB 10.11's equality and
// WEIGHT_STRING (TestVitessCollationsMatchServer); names as
// information_schema spells them. All pad with spaces. Their order fixes
// their Collation values: append only.
var vitessNames = []string{
	"utf8mb4_unicode_ci", "utf8mb4_unicode_520_ci", "utf8mb4_croatian_ci", "utf8mb4_czech_ci",
	"utf8mb4_danish_ci", "utf8mb4_esperanto_ci", "utf8mb4_estonian_ci", "utf8mb4_german2_ci",
	"utf8mb4_hungarian_ci", "utf8mb4_icelandic_ci", "utf8mb4_latvian_ci", "utf8mb4_lithuanian_ci",
	"utf8mb4_persian_ci", "utf8mb4_polish_ci", "utf8mb4_romanian_ci", "utf8mb4_roman_ci",
	"utf8mb4_sinhala_ci", "utf8mb4_slovak_ci", "utf8mb4_slovenian_ci", "utf8mb4_spanish2_ci",
	"utf8mb4_spanish_ci", "utf8mb4_swedish_ci", "utf8mb4_turkish_ci", "utf8mb4_vietnamese_ci",
	"utf8mb3_general_ci", "utf8mb3_bin", "utf8mb3_unicode_ci", "utf8mb3_unicode_520_ci",
	"utf8mb3_croatian_ci", "utf8mb3_czech_ci", "utf8mb3_danish_ci", "utf8mb3_esperanto_ci",
	"utf8mb3_estonian_ci", "utf8mb3_german2_ci", "utf8mb3_hungarian_ci", "utf8mb3_icelandic_ci",
	"utf8mb3_latvian_ci", "utf8mb3_lithuanian_ci", "utf8mb3_persian_ci", "utf8mb3_polish_ci",
	"utf8mb3_romanian_ci", "utf8mb3_roman_ci", "utf8mb3_sinhala_ci", "utf8mb3_slovak_ci",
	"utf8mb3_slovenian_ci", "utf8mb3_spanish2_ci", "utf8mb3_spanish_ci", "utf8mb3_swedish_ci",
	"utf8mb3_turkish_ci", "utf8mb3_vietnamese_ci", "latin1_swedish_ci", "latin1_bin",
	"latin1_general_ci", "latin1_general_cs", "latin1_german1_ci", "latin1_danish_ci",
	"latin1_spanish_ci", "ascii_general_ci", "ascii_bin",
}

// vitessCollation is a collation computed by Vitess: the key is converted
// to its character set, then weighed.
type vitessCollation struct {
	coll  colldata.Collation
	space []byte // the weight of ' ': PAD SPACE drops trailing ones
}

var (
	collationNames   = map[string]Collation{"binary": CollationBinary, "utf8mb4_bin": CollationUTF8MB4Bin, "utf8mb4_general_ci": CollationUTF8MB4GeneralCI}
	vitessCollations []vitessCollation
	supportedList    string
)

func init() {
	for i, name := range vitessNames {
		vc, err := newVitessCollation(name)
		if err != nil {
			panic(err) // a Vitess upgrade dropped a listed collation
		}
		vitessCollations = append(vitessCollations, vc)
		collationNames[name] = collationVitess + Collation(i)
	}
	names := make([]string, 0, len(collationNames))
	for name := range collationNames {
		names = append(names, name)
	}
	sort.Strings(names)
	supportedList = strings.Join(names, ", ")
}

func newVitessCollation(name string) (vitessCollation, error) {
	coll := colldata.Lookup(collations.MySQL8().LookupByName(name))
	if coll == nil {
		return vitessCollation{}, fmt.Errorf("vitess does not implement collation %s", name)
	}
	return vitessCollation{coll: coll, space: coll.WeightString(nil, []byte(" "), 0)}, nil
}

// LookupCollation returns the collation named as in information_schema.
func LookupCollation(name string) (Collation, error) {
	if rest, ok := strings.CutPrefix(name, "utf8_"); ok {
		name = "utf8mb3_" + rest // MariaDB before 10.6 and old_mode=UTF8_IS_UTF8MB3 off spell it so
	}
	if c, ok := collationNames[name]; ok {
		return c, nil
	}
	return 0, fmt.Errorf("collation %q is not supported for shard keys (supported: %s; MariaDB's uca1400 and nopad collations are not implemented by Vitess's collations package, and others have not been checked to weigh as MariaDB does)", name, supportedList)
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

// convertString: a string column compares with a string under its
// collation, the string converted from its character set to the column's
// (a binary string, 0x literal or X'…', is taken as bytes of the
// column's character set). A binary column compares the string's bytes
// as they are in its own character set. Numbers compare with a string
// column as doubles, which no single string key represents.
func convertString(col ColumnType, lit Literal) (Value, error) {
	if lit.kind != LitString && lit.kind != LitHex {
		return Value{}, inexact("a %s compares with a string column as a double", lit.kind)
	}
	text, bytesOfColumn := lit.text, lit.kind == LitHex || lit.cs == CharsetBinary
	var err error
	switch {
	case col.Collation == CollationBinary:
		if lit.cs == CharsetOther && !isASCII(text) {
			return Value{}, inexact("bytes of character set %s", lit.cs)
		}
	case !bytesOfColumn:
		if text, err = lit.utf8Text(); err != nil {
			return Value{}, err
		}
	}
	var w string
	if col.Collation >= collationVitess {
		w, err = vitessWeights(col.Collation, text, bytesOfColumn)
	} else {
		w, err = weightString(col.Collation, text)
	}
	if err != nil {
		return Value{}, err
	}
	return Value{kind: KindString, coll: col.Collation, s: w, raw: text}, nil
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

// vitessWeights converts a string (utf8mb4) to the collation's character
// set, as the server does before comparing it with the column; a
// character the set cannot hold matches no single key. A binary string
// (bytesOfColumn) is already the column's bytes.
func vitessWeights(c Collation, text string, bytesOfColumn bool) (string, error) {
	if int(c-collationVitess) >= len(vitessCollations) {
		return "", fmt.Errorf("collation %s is not supported for shard keys", c)
	}
	vc := vitessCollations[c-collationVitess]
	cs := vc.coll.Charset()
	src := []byte(text)
	if bytesOfColumn {
		if !charset.Validate(cs, src) {
			return "", inexact("not valid %s", cs.Name())
		}
	} else {
		if !utf8.Valid(src) {
			return "", inexact("not valid utf8mb4")
		}
		var err error
		if src, err = charset.Convert(nil, cs, src, charset.Charset_utf8mb4{}); err != nil {
			return "", inexact("not representable in %s", cs.Name())
		}
	}
	return string(trimPadding(vc.coll.WeightString(nil, src, 0), vc.space)), nil
}

// trimPadding drops the trailing weights equal to a space's: under PAD
// SPACE the shorter string compares as if padded with spaces, so 'a',
// 'a ' and 'a' followed by any character weighing as a space are equal.
func trimPadding(w, space []byte) []byte {
	for len(space) > 0 && len(w) >= len(space) && string(w[len(w)-len(space):]) == string(space) {
		w = w[:len(w)-len(space)]
	}
	return w
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
