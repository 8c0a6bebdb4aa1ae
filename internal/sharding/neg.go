package sharding

import (
	"math"
	"strconv"
	"strings"
)

// Neg returns the literal -lit as MySQL evaluates unary minus on a
// constant: numbers keep their kind, a numeric string becomes a double
// (-'5' is the double -5), a 0x… or b'…' literal becomes the negative integer
// (-0x01 is -1), and NULL stays NULL. It reports false when the result is
// not one exact literal (a non-numeric string, a date, more than 64 bits),
// so the caller treats the key as inexact.
func (l Literal) Neg() (Literal, bool) {
	switch l.kind {
	case LitNull:
		return l, true
	case LitNumber:
		return NumberLit(negText(l.text)), true
	case LitInt:
		if l.i == math.MinInt64 {
			return UintLit(1 << 63), true
		}
		return IntLit(-l.i), true
	case LitUint:
		return NumberLit("-" + strconv.FormatUint(uint64(l.i), 10)), true
	case LitDouble:
		return DoubleLit(-l.f), true
	case LitHex:
		u, ok := hexToUint(l.text)
		if !ok {
			return Literal{}, false
		}
		return NumberLit("-" + strconv.FormatUint(u, 10)), true
	case LitString:
		text := strings.Trim(l.text, " ")
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || !isPlainNumber(text) {
			return Literal{}, false
		}
		return DoubleLit(-f), true
	}
	return Literal{}, false
}

// negText flips the sign of a number spelled as text.
func negText(s string) string {
	switch {
	case strings.HasPrefix(s, "-"):
		return s[1:]
	case strings.HasPrefix(s, "+"):
		return "-" + s[1:]
	}
	return "-" + s
}
