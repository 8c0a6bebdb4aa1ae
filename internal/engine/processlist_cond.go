package engine

import (
	"bytes"
	"math/big"
	"strings"

	"vitess.io/vitess/go/mysql/collations"
	"vitess.io/vitess/go/mysql/collations/colldata"
	"vitess.io/vitess/go/sqltypes"
)

// A WHERE on information_schema.PROCESSLIST is evaluated by the proxy,
// over each session's row, as the server evaluates it: strings compare
// under utf8mb3_general_ci (information_schema's collation), PAD SPACE
// ('app' = 'APP '), numbers exactly. Vitess's evalengine is not used for
// it: its general_ci comparison does not pad. The planner builds the
// condition and refuses, before anything runs, what would need the
// server's loose conversions (a string column compared with a number,
// 'abc' = 0): the condition only holds comparisons this file makes
// exactly.

// CondOp is the operation of a ProcessCond.
type CondOp uint8

const (
	CondAnd     CondOp = iota // Args[0] AND Args[1]
	CondOr                    // Args[0] OR Args[1]
	CondXor                   // Args[0] XOR Args[1]
	CondNot                   // NOT Args[0]
	CondCompare               // Args[0] Cmp Args[1]
	CondIn                    // Args[0] [NOT] IN (Args[1:])
	CondBetween               // Args[0] [NOT] BETWEEN Args[1] AND Args[2]
	CondIsNull                // Args[0] IS [NOT] NULL
	CondIsTrue                // Args[0] IS [NOT] TRUE
	CondIsFalse               // Args[0] IS [NOT] FALSE
	CondLike                  // Args[0] [NOT] LIKE Args[1] (a string literal) [ESCAPE Escape]
	CondField                 // the column Field
	CondLiteral               // the literal Value
)

// Comparison operators of CondCompare.
const (
	CmpEQ     = "="
	CmpNE     = "<>"
	CmpLT     = "<"
	CmpLE     = "<="
	CmpGT     = ">"
	CmpGE     = ">="
	CmpNullEQ = "<=>"
)

// ProcessCond is a condition (or an operand of one) of a WHERE on
// information_schema.PROCESSLIST.
type ProcessCond struct {
	Op     CondOp
	Cmp    string // CondCompare's operator
	Not    bool   // NOT IN, NOT BETWEEN, IS NOT, NOT LIKE
	Args   []*ProcessCond
	Field  int    // CondField: in ProcessField's numbering
	Value  PValue // CondLiteral
	Escape rune   // CondLike
	like   colldata.WildcardPattern
}

// PValue is a value a condition compares: NULL, a number (exact) or a
// string, binary (compared byte for byte) or not (utf8mb3_general_ci).
type PValue struct {
	Null   bool
	Num    *big.Rat // nil: a string
	Str    []byte
	Binary bool
}

// ValueKind is what a value is, for the planner's checks.
type ValueKind uint8

const (
	ValueNull ValueKind = iota
	ValueNumber
	ValueText   // utf8mb3_general_ci
	ValueBinary // byte for byte
)

// FieldKind is the kind of the values of field i.
func FieldKind(i int) ValueKind {
	switch {
	case processFields[i].typ == sqltypes.Blob:
		return ValueBinary
	case processFields[i].text:
		return ValueText
	}
	return ValueNumber
}

// Kind is the kind of v.
func (v PValue) Kind() ValueKind {
	switch {
	case v.Null:
		return ValueNull
	case v.Num != nil:
		return ValueNumber
	case v.Binary:
		return ValueBinary
	}
	return ValueText
}

// NumberValue reads s as an exact number: digits with an optional sign,
// point and exponent, and spaces around, as the server reads a string it
// compares with a number when nothing of it is left over (the planner
// refuses any other string there: the server would warn and use what it
// could read).
func NumberValue(s string) (*big.Rat, bool) {
	s = strings.Trim(s, " ")
	if s == "" || strings.Trim(s, "+-.0123456789eE") != "" {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// tri is a value of SQL's three-valued logic.
type tri uint8

const (
	triFalse tri = iota
	triTrue
	triNull
)

func triOf(b bool) tri {
	if b {
		return triTrue
	}
	return triFalse
}

func (t tri) not() tri {
	switch t {
	case triTrue:
		return triFalse
	case triFalse:
		return triTrue
	}
	return triNull
}

// Holds reports whether the condition is true for row (NULL is not).
func (c *ProcessCond) Holds(row []sqltypes.Value) bool {
	return c.eval(row) == triTrue
}

// eval evaluates c as a condition.
func (c *ProcessCond) eval(row []sqltypes.Value) tri {
	switch c.Op {
	case CondAnd:
		return triAnd(c.Args[0].eval(row), c.Args[1].eval(row))
	case CondOr:
		a, b := c.Args[0].eval(row), c.Args[1].eval(row)
		switch {
		case a == triTrue || b == triTrue:
			return triTrue
		case a == triNull || b == triNull:
			return triNull
		}
		return triFalse
	case CondXor:
		a, b := c.Args[0].eval(row), c.Args[1].eval(row)
		if a == triNull || b == triNull {
			return triNull
		}
		return triOf(a != b)
	case CondNot:
		return c.Args[0].eval(row).not()
	case CondCompare:
		a, b := c.Args[0].value(row), c.Args[1].value(row)
		if c.Cmp == CmpNullEQ {
			if a.Null || b.Null {
				return triOf(a.Null && b.Null)
			}
			return triOf(comparePValues(a, b) == 0)
		}
		if a.Null || b.Null {
			return triNull
		}
		n := comparePValues(a, b)
		switch c.Cmp {
		case CmpEQ:
			return triOf(n == 0)
		case CmpNE:
			return triOf(n != 0)
		case CmpLT:
			return triOf(n < 0)
		case CmpLE:
			return triOf(n <= 0)
		case CmpGT:
			return triOf(n > 0)
		}
		return triOf(n >= 0)
	case CondIn:
		v := c.Args[0].value(row)
		if v.Null {
			return triNull
		}
		res := triFalse
		for _, e := range c.Args[1:] {
			w := e.value(row)
			switch {
			case w.Null:
				res = triNull
			case comparePValues(v, w) == 0:
				res = triTrue
			}
			if res == triTrue {
				break
			}
		}
		if c.Not {
			return res.not()
		}
		return res
	case CondBetween:
		v, lo, hi := c.Args[0].value(row), c.Args[1].value(row), c.Args[2].value(row)
		ge, le := triNull, triNull
		if !v.Null && !lo.Null {
			ge = triOf(comparePValues(v, lo) >= 0)
		}
		if !v.Null && !hi.Null {
			le = triOf(comparePValues(v, hi) <= 0)
		}
		res := triAnd(ge, le)
		if c.Not {
			return res.not()
		}
		return res
	case CondIsNull:
		return triOf(c.Args[0].value(row).Null != c.Not)
	case CondIsTrue, CondIsFalse:
		t := c.Args[0].eval(row)
		want := triTrue
		if c.Op == CondIsFalse {
			want = triFalse
		}
		return triOf((t == want) != c.Not)
	case CondLike:
		v := c.Args[0].value(row)
		if v.Null {
			return triNull
		}
		res := triOf(c.pattern(v).Match(v.Str))
		if c.Not {
			return res.not()
		}
		return res
	}
	// A column or a literal as a condition: a number, true unless zero
	// (the planner lets no string through).
	v := c.value(row)
	if v.Null {
		return triNull
	}
	return triOf(v.Num != nil && v.Num.Sign() != 0)
}

func triAnd(a, b tri) tri {
	switch {
	case a == triFalse || b == triFalse:
		return triFalse
	case a == triNull || b == triNull:
		return triNull
	}
	return triTrue
}

// pattern is the LIKE pattern, compiled once, under the collation of
// the value it matches.
func (c *ProcessCond) pattern(v PValue) colldata.WildcardPattern {
	if c.like == nil {
		coll := collations.ID(collations.CollationUtf8mb3ID)
		if v.Binary {
			coll = collations.CollationBinaryID
		}
		c.like = colldata.Lookup(coll).Wildcard(c.Args[1].Value.Str, 0, 0, c.Escape)
	}
	return c.like
}

// value is the value of an operand: a column's in row, a literal, or a
// condition's (1, 0 or NULL).
func (c *ProcessCond) value(row []sqltypes.Value) PValue {
	switch c.Op {
	case CondField:
		return fieldValue(c.Field, row[c.Field])
	case CondLiteral:
		return c.Value
	}
	switch c.eval(row) {
	case triTrue:
		return PValue{Num: big.NewRat(1, 1)}
	case triFalse:
		return PValue{Num: new(big.Rat)}
	}
	return PValue{Null: true}
}

// fieldValue is a row's value of field f as a condition compares it.
func fieldValue(f int, v sqltypes.Value) PValue {
	if v.IsNull() {
		return PValue{Null: true}
	}
	switch FieldKind(f) {
	case ValueNumber:
		r, _ := new(big.Rat).SetString(v.ToString())
		return PValue{Num: r}
	case ValueBinary:
		return PValue{Str: v.Raw(), Binary: true}
	}
	return PValue{Str: v.Raw()}
}

// compareValues orders two values that are not NULL, of kinds the
// planner let meet: numbers, or strings (byte for byte when either is
// binary, as the server compares a binary string with any other).
func comparePValues(a, b PValue) int {
	if a.Num != nil && b.Num != nil {
		return a.Num.Cmp(b.Num)
	}
	if a.Binary || b.Binary {
		return bytes.Compare(a.Str, b.Str)
	}
	return compareGeneralCI(a.Str, b.Str)
}

// generalCI is information_schema's collation.
var generalCI = colldata.Lookup(collations.CollationUtf8mb3ID)

// generalCISpace is the weight of a space under generalCI.
var generalCISpace = generalCI.WeightString(nil, []byte(" "), 0)

// compareGeneralCI orders two strings under utf8mb3_general_ci, PAD
// SPACE (comparePadded): 'a' = 'a  ' and 'a' > 'a\t'.
func compareGeneralCI(a, b []byte) int {
	return comparePadded(generalCI.WeightString(nil, a, 0), generalCI.WeightString(nil, b, 0), generalCISpace)
}
