package sharding

import (
	"math"
	"strconv"
	"strings"
)

// decimal is an exact decimal number in canonical form: digits without
// leading zeros in whole (empty for zero), without trailing zeros in frac,
// and never a negative zero.
type decimal struct {
	neg   bool
	whole string
	frac  string
}

// parseDecimal parses [+-]digits[.digits] (MySQL's exact-value literal
// syntax; at least one digit). It rejects exponents: those are doubles.
func parseDecimal(s string) (decimal, bool) {
	var d decimal
	if s != "" && (s[0] == '-' || s[0] == '+') {
		d.neg = s[0] == '-'
		s = s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" || !allDigits(whole) || !allDigits(frac) {
		return decimal{}, false
	}
	d.whole = strings.TrimLeft(whole, "0")
	d.frac = strings.TrimRight(frac, "0")
	if d.whole == "" && d.frac == "" {
		d.neg = false
	}
	return d, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// integer returns d as an integer Value if it is integral and fits 64 bits.
func (d decimal) integer() (Value, bool) {
	if d.frac != "" {
		return Value{}, false
	}
	u, err := strconv.ParseUint("0"+d.whole, 10, 64)
	if err != nil {
		return Value{}, false
	}
	if !d.neg {
		return UintValue(u), true
	}
	if u > 1<<63 {
		return Value{}, false
	}
	return IntValue(int64(-u)), true
}

func (d decimal) String() string {
	s := d.whole
	if s == "" {
		s = "0"
	}
	if d.frac != "" {
		s += "." + d.frac
	}
	if d.neg {
		s = "-" + s
	}
	return s
}

// value is d in canonical Value form: integral decimals are integers.
func (d decimal) value() Value {
	if v, ok := d.integer(); ok {
		return v
	}
	return Value{kind: KindDecimal, s: d.String()}
}

// maxDoubleDigits is DBL_DIG: two different decimals of at most 15
// significant digits never round to the same double, so a DECIMAL(M≤15)
// column compared with a double is still compared exactly.
const maxDoubleDigits = 15

// convertDecimal follows MySQL: integers and decimals compare as decimals,
// doubles and strings as doubles (exact only while M ≤ 15).
func convertDecimal(col ColumnType, lit Literal) (Value, error) {
	var d decimal
	switch lit.kind {
	case LitInt:
		d, _ = parseDecimal(strconv.FormatInt(lit.i, 10))
	case LitUint:
		d, _ = parseDecimal(strconv.FormatUint(uint64(lit.i), 10))
	case LitHex:
		u, ok := hexToUint(lit.text)
		if !ok {
			return Value{}, inexact("more than 64 bits")
		}
		d, _ = parseDecimal(strconv.FormatUint(u, 10))
	case LitNumber:
		var ok bool
		if d, ok = parseDecimal(lit.text); !ok {
			f, err := strconv.ParseFloat(lit.text, 64)
			if err != nil || !isPlainNumber(lit.text) {
				return Value{}, inexact("not a number")
			}
			return decimalFromDouble(col, f)
		}
	case LitDouble:
		return decimalFromDouble(col, lit.f)
	case LitString:
		f, err := strconv.ParseFloat(strings.Trim(lit.text, " "), 64)
		if err != nil || !isPlainNumber(strings.Trim(lit.text, " ")) {
			return Value{}, inexact("not a numeric string")
		}
		return decimalFromDouble(col, f)
	default:
		return Value{}, inexact("a %s is not compared with a decimal as one number", lit.kind)
	}
	return fitDecimal(col, d)
}

func decimalFromDouble(col ColumnType, f float64) (Value, error) {
	if col.Precision > maxDoubleDigits || math.IsNaN(f) || math.IsInf(f, 0) {
		return Value{}, inexact("compared as a double with a DECIMAL wider than 15 digits")
	}
	d, _ := parseDecimal(strconv.FormatFloat(f, 'f', -1, 64))
	if len(d.whole)+len(d.frac) > maxDoubleDigits {
		return Value{}, inexact("no DECIMAL(%d,%d) value equals this double", col.Precision, col.Scale)
	}
	return fitDecimal(col, d)
}

// fitDecimal checks that d is a value DECIMAL(M,D) can hold; any other
// value matches no row (and an INSERT would round or clamp it).
func fitDecimal(col ColumnType, d decimal) (Value, error) {
	if col.Precision > 0 && (len(d.frac) > col.Scale || len(d.whole) > col.Precision-col.Scale) {
		return Value{}, inexact("not a DECIMAL(%d,%d) value", col.Precision, col.Scale)
	}
	return d.value(), nil
}

// compareDecimal orders two canonical decimals.
func compareDecimal(a, b decimal) int {
	if a.neg != b.neg {
		if a.neg {
			return -1
		}
		return 1
	}
	c := compareMagnitude(a, b)
	if a.neg {
		return -c
	}
	return c
}

func compareMagnitude(a, b decimal) int {
	if len(a.whole) != len(b.whole) {
		if len(a.whole) < len(b.whole) {
			return -1
		}
		return 1
	}
	if c := strings.Compare(a.whole, b.whole); c != 0 {
		return c
	}
	return strings.Compare(a.frac, b.frac)
}
