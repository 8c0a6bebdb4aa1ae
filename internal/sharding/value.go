package sharding

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrInexact means a literal does not denote exactly one value of the key
// column's type as MySQL would compare them (for example '42abc', 42.5 or
// 1e300 on an INT key). The caller must then consider every sub-table that
// could hold the row, never guess one.
var ErrInexact = errors.New("value is not exactly one key of the column's type")

// Class is the MySQL type class of a shard-key column: it decides how a
// literal is converted before it is placed.
type Class uint8

const (
	ClassInt      Class = iota + 1 // TINYINT … BIGINT, signed
	ClassUint                      // TINYINT … BIGINT UNSIGNED
	ClassDecimal                   // DECIMAL(Precision, Scale)
	ClassDouble                    // DOUBLE (FLOAT is not a usable key: it compares inexactly)
	ClassString                    // CHAR, VARCHAR, TEXT, BINARY, VARBINARY, BLOB with Collation
	ClassDate                      // DATE
	ClassDatetime                  // DATETIME(Scale); TIMESTAMP depends on time_zone and is not a usable key
)

// ColumnType describes a shard-key column as its DDL declares it.
type ColumnType struct {
	Class     Class
	Bits      int       // integers: 8, 16, 24, 32 or 64; 0 means 64
	Precision int       // DECIMAL(M, D): M
	Scale     int       // DECIMAL(M, D): D; DATETIME(fsp): fsp
	Collation Collation // strings
	// AutoIncrement: the column is the table's AUTO_INCREMENT column, whose
	// values for a sharded table come from a sequence (docs/sharding.md).
	AutoIncrement bool
}

// Kind is the canonical form a Value is held in. Integral numbers of every
// numeric class are held as KindInt (or KindUint above MaxInt64), so that
// equal numbers of different classes hash alike.
type Kind uint8

const (
	KindNull     Kind = iota
	KindInt           // i
	KindUint          // uint64(i) > MaxInt64
	KindDecimal       // s: canonical text of a non-integral (or huge) decimal
	KindDouble        // f: a non-integral double
	KindString        // s: weight string under coll; raw: the bytes as written
	KindDatetime      // i: packed Datetime (dates are datetimes at midnight)
)

// Value is a shard-key value converted to its column's type.
type Value struct {
	kind Kind
	coll Collation
	i    int64
	f    float64
	s    string
	raw  string
}

// Null is the SQL NULL key.
func Null() Value { return Value{} }

// IntValue is an integer key.
func IntValue(v int64) Value { return Value{kind: KindInt, i: v} }

// UintValue is an unsigned integer key.
func UintValue(v uint64) Value {
	if v <= math.MaxInt64 {
		return IntValue(int64(v))
	}
	return Value{kind: KindUint, i: int64(v)}
}

// Kind reports the canonical form of v.
func (v Value) Kind() Kind { return v.kind }

// IsNull reports whether v is NULL.
func (v Value) IsNull() bool { return v.kind == KindNull }

// Int returns the value of a KindInt.
func (v Value) Int() int64 { return v.i }

// Uint returns the value of a KindUint.
func (v Value) Uint() uint64 { return uint64(v.i) }

// String renders v for error messages and the layout report.
func (v Value) String() string {
	switch v.kind {
	case KindNull:
		return "NULL"
	case KindInt:
		return strconv.FormatInt(v.i, 10)
	case KindUint:
		return strconv.FormatUint(uint64(v.i), 10)
	case KindDouble:
		return strconv.FormatFloat(v.f, 'g', -1, 64)
	case KindString:
		return strconv.Quote(v.raw)
	case KindDatetime:
		return unpackDatetime(v.i).String()
	}
	return v.s
}

// LiteralKind says how a literal was written (or which type a prepared
// statement parameter was sent as); it decides MySQL's comparison rules.
type LiteralKind uint8

const (
	LitNull     LiteralKind = iota
	LitNumber               // unquoted number as spelled: 42, -1, 42.0, 4.2e1
	LitInt                  // integer parameter
	LitUint                 // unsigned integer parameter
	LitDouble               // DOUBLE parameter
	LitString               // quoted string, X'…' literal or string/blob parameter (bytes of its Charset)
	LitHex                  // 0x… or b'…' literal: a number in numeric context, bytes otherwise
	LitDatetime             // DATE/DATETIME parameter
)

// Literal is a value from SQL text or a prepared statement parameter,
// before conversion to the key column's type.
type Literal struct {
	kind LiteralKind
	cs   Charset // a LitString's bytes' character set
	text string
	i    int64
	f    float64
	dt   Datetime
}

// NullLit is the literal NULL.
func NullLit() Literal { return Literal{kind: LitNull} }

// NumberLit is an unquoted numeric literal exactly as written, sign included.
func NumberLit(text string) Literal { return Literal{kind: LitNumber, text: text} }

// IntLit is an integer parameter.
func IntLit(v int64) Literal { return Literal{kind: LitInt, i: v} }

// UintLit is an unsigned integer parameter.
func UintLit(v uint64) Literal { return Literal{kind: LitUint, i: int64(v)} }

// DoubleLit is a DOUBLE parameter.
func DoubleLit(v float64) Literal { return Literal{kind: LitDouble, f: v} }

// StringLit is a string literal (unescaped) or string parameter, in
// utf8mb4 (see StringLitIn for other character sets).
func StringLit(s string) Literal { return Literal{kind: LitString, text: s} }

// HexLit is a 0x… or b'…' literal given as its bytes. MariaDB's X'…' is a
// plain string (42 = X'2A' is false) and must be passed as StringLit.
func HexLit(b string) Literal { return Literal{kind: LitHex, text: b} }

// DatetimeLit is a DATE or DATETIME parameter.
func DatetimeLit(d Datetime) Literal { return Literal{kind: LitDatetime, dt: d} }

// Convert converts lit to col's type as MySQL compares a column of that type
// with it. An error wrapping ErrInexact means lit matches no single key.
func Convert(col ColumnType, lit Literal) (Value, error) {
	if lit.kind == LitNull {
		return Null(), nil
	}
	var v Value
	var err error
	switch col.Class {
	case ClassInt, ClassUint:
		v, err = convertInteger(col, lit)
	case ClassDecimal:
		v, err = convertDecimal(col, lit)
	case ClassDouble:
		v, err = convertDouble(lit)
	case ClassString:
		v, err = convertString(col, lit)
	case ClassDate, ClassDatetime:
		v, err = convertDatetime(col, lit)
	default:
		return Value{}, fmt.Errorf("shard key column type class %d is not supported", col.Class)
	}
	if err != nil {
		return Value{}, fmt.Errorf("%s: %w", lit, err)
	}
	return v, nil
}

// String renders the literal for error messages.
func (l Literal) String() string {
	switch l.kind {
	case LitNull:
		return "NULL"
	case LitInt:
		return strconv.FormatInt(l.i, 10)
	case LitUint:
		return strconv.FormatUint(uint64(l.i), 10)
	case LitDouble:
		return strconv.FormatFloat(l.f, 'g', -1, 64)
	case LitString:
		return strconv.Quote(l.text)
	case LitHex:
		return fmt.Sprintf("0x%X", l.text)
	case LitDatetime:
		return l.dt.String()
	}
	return l.text
}

func inexact(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInexact}, args...)...)
}

// maxExactDouble is 2^53: every integer up to it is a distinct double, so a
// comparison done in doubles still matches exactly one integer.
const maxExactDouble = 1 << 53

// convertInteger follows MySQL: integers and decimals compare exactly, doubles
// and strings compare as doubles (so only integers up to 2^53 are exact), and
// 0x/b” literals are unsigned integers.
func convertInteger(col ColumnType, lit Literal) (Value, error) {
	switch lit.kind {
	case LitInt:
		return checkIntRange(col, IntValue(lit.i))
	case LitUint:
		return checkIntRange(col, UintValue(uint64(lit.i)))
	case LitDouble:
		return integerFromDouble(col, lit.f)
	case LitHex:
		u, ok := hexToUint(lit.text)
		if !ok {
			return Value{}, inexact("more than 64 bits")
		}
		return checkIntRange(col, UintValue(u))
	case LitNumber:
		return integerFromNumber(col, lit.text)
	case LitString:
		return integerFromString(col, lit.text)
	}
	return Value{}, inexact("a %s is not compared with an integer as one number", lit.kind)
}

func integerFromNumber(col ColumnType, text string) (Value, error) {
	d, ok := parseDecimal(text)
	if !ok {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return Value{}, fmt.Errorf("not a number")
		}
		return integerFromDouble(col, f)
	}
	if d.frac != "" {
		return Value{}, inexact("not an integer")
	}
	v, ok := d.integer()
	if !ok {
		return Value{}, inexact("out of the column's range")
	}
	return checkIntRange(col, v)
}

// integerFromString accepts only a whole numeric string with optional
// surrounding spaces: MySQL would also compare '42abc' as 42 (with a
// warning), but an INSERT of it fails in strict mode, so we do not pretend.
func integerFromString(col ColumnType, s string) (Value, error) {
	d, ok := parseDecimal(strings.Trim(s, " "))
	if !ok || d.frac != "" {
		return Value{}, inexact("not an integer string")
	}
	v, ok := d.integer()
	if !ok || v.kind != KindInt || v.i > maxExactDouble || v.i < -maxExactDouble {
		return Value{}, inexact("compared as a double beyond 2^53")
	}
	return checkIntRange(col, v)
}

func integerFromDouble(col ColumnType, f float64) (Value, error) {
	if f != math.Trunc(f) || math.Abs(f) > maxExactDouble {
		return Value{}, inexact("not an integer below 2^53")
	}
	return checkIntRange(col, IntValue(int64(f)))
}

func checkIntRange(col ColumnType, v Value) (Value, error) {
	bits := col.Bits
	if bits <= 0 || bits > 64 {
		bits = 64
	}
	if col.Class == ClassUint {
		if v.kind == KindInt && v.i < 0 {
			return Value{}, inexact("negative for an unsigned column")
		}
		if bits < 64 && uint64(v.i) >= 1<<bits {
			return Value{}, inexact("out of the column's range")
		}
		return v, nil
	}
	if v.kind == KindUint {
		return Value{}, inexact("out of the column's range")
	}
	if bits < 64 && (v.i >= 1<<(bits-1) || v.i < -(1<<(bits-1))) {
		return Value{}, inexact("out of the column's range")
	}
	return v, nil
}

func hexToUint(b string) (uint64, bool) {
	b = strings.TrimLeft(b, "\x00")
	if len(b) > 8 {
		return 0, false
	}
	var u uint64
	for i := 0; i < len(b); i++ {
		u = u<<8 | uint64(b[i])
	}
	return u, true
}

func (k LiteralKind) String() string {
	return [...]string{"NULL", "number", "integer", "unsigned integer", "double", "string", "hex literal", "datetime"}[k]
}

// convertDouble: a DOUBLE column compares with every numeric literal and
// with numeric strings as doubles.
func convertDouble(lit Literal) (Value, error) {
	var f float64
	switch lit.kind {
	case LitInt:
		f = float64(lit.i)
	case LitUint:
		f = float64(uint64(lit.i))
	case LitDouble:
		f = lit.f
	case LitHex:
		u, ok := hexToUint(lit.text)
		if !ok {
			return Value{}, inexact("more than 64 bits")
		}
		f = float64(u)
	case LitNumber, LitString:
		text := lit.text
		if lit.kind == LitString {
			text = strings.Trim(text, " ")
		}
		var err error
		if f, err = strconv.ParseFloat(text, 64); err != nil || !isPlainNumber(text) {
			return Value{}, inexact("not a number")
		}
	default:
		return Value{}, inexact("a %s is not a double", lit.kind)
	}
	return doubleValue(f)
}

func doubleValue(f float64) (Value, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return Value{}, inexact("not a finite double")
	}
	if f == math.Trunc(f) && math.Abs(f) <= maxExactDouble {
		return IntValue(int64(f)), nil
	}
	return Value{kind: KindDouble, f: f}, nil
}

// isPlainNumber rejects what ParseFloat accepts but MySQL does not: Inf,
// NaN, hex floats, underscores.
func isPlainNumber(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c == '.', c == '-', c == '+', c == 'e', c == 'E':
		default:
			return false
		}
	}
	return s != ""
}
