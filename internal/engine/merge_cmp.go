package engine

import (
	"bytes"
	"fmt"
	"strconv"

	"vitess.io/vitess/go/hack"
	"vitess.io/vitess/go/mysql/collations"
	"vitess.io/vitess/go/sqltypes"

	"github.com/shardgate/shardgate/internal/mysql"
)

// How a merge compares the values of one column: as the server orders
// them, without allocating (the k-way merge compares per row).
type cmpKind uint8

const (
	cmpNumber cmpKind = iota + 1 // integers, DECIMAL, YEAR: exact, by their decimal text
	cmpInt                       // integers as the server writes them (no leading zeros): sign, length, digits
	cmpFloat                     // FLOAT, DOUBLE
	cmpBytes                     // binary strings, BIT, DATE, DATETIME, TIMESTAMP (fixed-width text per column)
	cmpTime                      // TIME: signed, hours of varying width
	cmpWeight                    // strings, by the weights the shards computed (bytewise)
)

// colCmp compares values of one part column. err is set when the merge
// cannot order the column as the server does; it is reported only when
// the column is compared.
type colCmp struct {
	kind cmpKind
	// weight is the column of the weights a string column compares by
	// (MergeSpec.Weights), or -1: compare the column's own values; space
	// is the weight of a space under the column's collation, learnt from
	// the first row (spaceKnown).
	weight     int
	space      []byte
	spaceKnown bool
	err        error
}

// at is the column whose values c compares for column col: its weight's,
// or its own.
func (c *colCmp) at(col int) int {
	if c.weight >= 0 {
		return c.weight
	}
	return col
}

// newColCmp decides how to compare a column: by its definition's type
// and flags; a string by its weight (column weight, -1 for none).
func newColCmp(col *mysql.ColumnDef, weight int) colCmp {
	c := newTypeCmp(col, weight)
	if c.kind != cmpWeight {
		c.weight = -1
	}
	return c
}

func newTypeCmp(col *mysql.ColumnDef, weight int) colCmp {
	if col.Flags&(mysql.FlagEnum|mysql.FlagSet) != 0 {
		return colCmp{err: fmt.Errorf("the ENUM or SET column `%s`, which sorts by its members' positions", col.Name)}
	}
	switch col.Type {
	case mysql.TypeTiny, mysql.TypeShort, mysql.TypeLong, mysql.TypeLongLong, 0x09: // INT24
		if col.Flags&mysql.FlagZerofill == 0 {
			return colCmp{kind: cmpInt}
		}
		return colCmp{kind: cmpNumber}
	case mysql.TypeDecimal, mysql.TypeNewDecimal, mysql.TypeYear:
		return colCmp{kind: cmpNumber}
	case mysql.TypeFloat, mysql.TypeDouble:
		return colCmp{kind: cmpFloat}
	case mysql.TypeDate, mysql.TypeDateTime, mysql.TypeTimestamp, 0x0e, // NEWDATE
		mysql.TypeBit, mysql.TypeNull:
		return colCmp{kind: cmpBytes}
	case mysql.TypeTime:
		return colCmp{kind: cmpTime}
	case mysql.TypeVarchar, mysql.TypeVarString, mysql.TypeString, mysql.TypeTinyBlob,
		mysql.TypeMediumBlob, mysql.TypeLongBlob, mysql.TypeBlob, mysql.TypeJSON:
		return stringCmp(col, weight)
	}
	return colCmp{err: fmt.Errorf("the column `%s` of type %d", col.Name, col.Type)}
}

// stringCmp compares a string column: by its weights (a column of the
// shards' WEIGHT_STRING, compared bytewise), or bytewise when it is
// binary. A column definition names the connection's character set, not
// the column's collation, so other strings cannot be compared here.
func stringCmp(col *mysql.ColumnDef, weight int) colCmp {
	switch {
	case weight >= 0:
		return colCmp{kind: cmpWeight, weight: weight}
	case col.Charset == uint16(collations.CollationBinaryID):
		return colCmp{kind: cmpBytes}
	}
	return colCmp{err: fmt.Errorf("the string `%s` computed from several shards' values (its collation is not known)", col.Name)}
}

// notComparable is the refusal for a column the merge cannot order.
func notComparable(err error) *mysql.SQLError {
	return mysql.NewError(mysql.ERNotSupportedYet, "42000",
		"This version of shardgate doesn't yet support 'ORDER BY, GROUP BY, DISTINCT or MIN/MAX across shards on %v'", err)
}

// canonical is the form of a value that equal values share, for a set
// of them: a weight without its trailing spaces' weights under a PAD
// SPACE collation ('a' = 'a '), other values as they are (a column's
// text is one per value).
func (c *colCmp) canonical(b []byte) []byte {
	if c.kind != cmpWeight || len(c.space) == 0 {
		return b
	}
	for len(b) >= len(c.space) && bytes.Equal(b[len(b)-len(c.space):], c.space) {
		b = b[:len(b)-len(c.space)]
	}
	return b
}

// learnSpace reads the weight of a space from a row (the column after
// the weights): the same in every row of a statement.
func (c *colCmp) learnSpace(row []sqltypes.Value) {
	if c.kind == cmpWeight && !c.spaceKnown && !row[c.weight].IsNull() {
		c.space = append(c.space[:0], row[c.weight+1].Raw()...)
		c.spaceKnown = true
	}
}

// compare orders a and b as the server does, NULL first.
func (c *colCmp) compare(a, b sqltypes.Value) int {
	an, bn := a.IsNull(), b.IsNull()
	switch {
	case an && bn:
		return 0
	case an:
		return -1
	case bn:
		return 1
	}
	ra, rb := a.Raw(), b.Raw()
	switch c.kind {
	case cmpInt:
		return compareIntText(ra, rb)
	case cmpNumber:
		return compareDecimalText(ra, rb)
	case cmpFloat:
		return compareFloatText(ra, rb)
	case cmpTime:
		return compareTimeText(ra, rb)
	case cmpWeight:
		if len(c.space) == 0 {
			return bytes.Compare(ra, rb) // NO PAD
		}
		return comparePadded(ra, rb, c.space)
	}
	return bytes.Compare(ra, rb)
}

// comparePadded orders two weight strings of a PAD SPACE collation: the
// shorter compares as if padded with spaces, so 'a' = 'a ' and, as the
// server has it, 'a\t' < 'a'. (Vitess's Collate compares NO PAD.)
func comparePadded(a, b, space []byte) int {
	n := min(len(a), len(b))
	if c := bytes.Compare(a[:n], b[:n]); c != 0 {
		return c
	}
	sign := 1
	rest := a[n:]
	if len(b) > n {
		sign, rest = -1, b[n:]
	}
	for i, w := range rest {
		if s := space[i%len(space)]; w != s {
			if w < s {
				return -sign
			}
			return sign
		}
	}
	return 0
}

// decimalParts splits a decimal number's text into its sign, integer
// digits without leading zeros and fraction digits without trailing
// zeros: the canonical form two equal numbers share.
func decimalParts(s []byte) (neg bool, ip, fp []byte) {
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	ip = s
	if dot := bytes.IndexByte(s, '.'); dot >= 0 {
		ip, fp = s[:dot], s[dot+1:]
	}
	for len(ip) > 0 && ip[0] == '0' {
		ip = ip[1:]
	}
	for len(fp) > 0 && fp[len(fp)-1] == '0' {
		fp = fp[:len(fp)-1]
	}
	if len(ip) == 0 && len(fp) == 0 {
		neg = false // -0
	}
	return neg, ip, fp
}

// compareDecimalText orders two integers or decimals written in decimal
// (as the text protocol sends them): exact at any size and scale.
// compareIntText orders two integers in the server's text (an optional
// '-', digits without leading zeros): by sign, then length, then digits.
// It is compareSigned written out: the integer keys' comparison inlines
// (a call costs 15% of an ORDER BY merge of integers, BenchmarkMergeOrderBy).
func compareIntText(a, b []byte) int {
	an, bn := len(a) > 0 && a[0] == '-', len(b) > 0 && b[0] == '-'
	if an != bn {
		if an {
			return -1
		}
		return 1
	}
	c := len(a) - len(b)
	if c == 0 {
		c = bytes.Compare(a, b)
	}
	if an {
		return -c
	}
	return c
}

// compareSigned orders two signed numbers given as their sign, their
// integer digits without leading zeros, and a rest that compares
// bytewise (a fraction without trailing zeros, a TIME's MM:SS.frac): by
// sign, then the integer part's length and digits, then the rest.
func compareSigned(an bool, ai, ar []byte, bn bool, bi, br []byte) int {
	if an != bn {
		if an {
			return -1
		}
		return 1
	}
	c := len(ai) - len(bi)
	if c == 0 {
		c = bytes.Compare(ai, bi)
	}
	if c == 0 {
		c = bytes.Compare(ar, br)
	}
	if an {
		return -c
	}
	return c
}

func compareDecimalText(a, b []byte) int {
	an, ai, af := decimalParts(a)
	bn, bi, bf := decimalParts(b)
	return compareSigned(an, ai, af, bn, bi, bf) // no trailing zeros: a prefix is the smaller
}

func compareFloatText(a, b []byte) int {
	fa, _ := strconv.ParseFloat(hack.String(a), 64)
	fb, _ := strconv.ParseFloat(hack.String(b), 64)
	switch {
	case fa < fb:
		return -1
	case fa > fb:
		return 1
	}
	return 0
}

// compareTimeText orders TIME values: [-]H+:MM:SS[.frac], hours up to
// 838; MM:SS.frac has a fixed width for one column.
func compareTimeText(a, b []byte) int {
	an, ah, ar := timeParts(a)
	bn, bh, br := timeParts(b)
	return compareSigned(an, ah, ar, bn, bh, br)
}

func timeParts(s []byte) (neg bool, hours, rest []byte) {
	if len(s) > 0 && s[0] == '-' {
		neg = true
		s = s[1:]
	}
	hours = s
	if colon := bytes.IndexByte(s, ':'); colon >= 0 {
		hours, rest = s[:colon], s[colon:]
	}
	for len(hours) > 1 && hours[0] == '0' {
		hours = hours[1:]
	}
	if neg && len(bytes.Trim(hours, "0")) == 0 && len(bytes.Trim(rest, ":0.")) == 0 {
		neg = false // -00:00:00
	}
	return neg, hours, rest
}

// keyCmp is one sort key with its column's comparison.
type keyCmp struct {
	col  int
	desc bool
	cmp  *colCmp
}

// compareRows orders two rows by keys.
func compareRows(keys []keyCmp, a, b []sqltypes.Value) int {
	for i := range keys {
		k := &keys[i]
		if c := k.cmp.compare(a[k.col], b[k.col]); c != 0 {
			if k.desc {
				return -c
			}
			return c
		}
	}
	return 0
}
