package sharding

import (
	"fmt"
	"strconv"
)

// compareValues orders two non-NULL keys of one column: numbers with
// numbers, datetimes with datetimes. Strings are not ordered here: only
// equality (list rules) is defined on them.
func compareValues(a, b Value) (int, error) {
	if a.kind == KindDatetime && b.kind == KindDatetime {
		return cmpInt(a.i, b.i), nil
	}
	if !isNumber(a) || !isNumber(b) {
		return 0, fmt.Errorf("cannot order %s and %s", a, b)
	}
	if a.kind == KindDouble || b.kind == KindDouble {
		return cmpFloat(toFloat(a), toFloat(b)), nil
	}
	return compareDecimal(toDecimal(a), toDecimal(b)), nil
}

func isNumber(v Value) bool {
	return v.kind == KindInt || v.kind == KindUint || v.kind == KindDecimal || v.kind == KindDouble
}

func toDecimal(v Value) decimal {
	d, _ := parseDecimal(v.String())
	return d
}

func toFloat(v Value) float64 {
	if v.kind == KindDouble {
		return v.f
	}
	f, _ := strconv.ParseFloat(v.String(), 64)
	return f
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
