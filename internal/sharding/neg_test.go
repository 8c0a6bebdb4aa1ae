package sharding

import "testing"

// -lit converts to the key -lit would be compared as: -5, -'5', -0x05 and
// -(5.0) are all -5 on an INT key; a non-numeric string has no exact negation.
func TestLiteralNeg(t *testing.T) {
	for _, c := range []struct {
		lit  Literal
		want Value
	}{
		{NumberLit("5"), IntValue(-5)},
		{NumberLit("-5"), IntValue(5)},
		{NumberLit("5.0"), IntValue(-5)},
		{StringLit(" 5 "), IntValue(-5)},
		{HexLit("\x05"), IntValue(-5)},
		{IntLit(5), IntValue(-5)},
		{UintLit(5), IntValue(-5)},
		{DoubleLit(5), IntValue(-5)},
		{IntLit(-9223372036854775808), UintValue(1 << 63)},
	} {
		neg, ok := c.lit.Neg()
		if !ok {
			t.Errorf("-%v: no exact negation", c.lit)
			continue
		}
		col := bigintCol
		if c.want.Kind() == KindUint {
			col = ubigintCol
		}
		if got := mustConvert(t, col, neg); got != c.want {
			t.Errorf("-%v = %v, want %v", c.lit, got, c.want)
		}
	}
	if neg, ok := NullLit().Neg(); !ok || neg != NullLit() {
		t.Errorf("-NULL = %v, %v; want NULL", neg, ok)
	}
	for _, lit := range []Literal{StringLit("abc"), StringLit("0x05"), HexLit("123456789"), DatetimeLit(Datetime{Year: 2024, Month: 1, Day: 1})} {
		if neg, ok := lit.Neg(); ok {
			t.Errorf("-%v = %v; want no exact negation", lit, neg)
		}
	}
}
