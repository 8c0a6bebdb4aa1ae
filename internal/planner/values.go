package planner

import (
	"unsafe"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sharding"
)

// TextValues gives a text statement's literals to Route: the statement's
// SQL and shape, and a buffer for decoded values that the caller keeps
// from one statement to the next, so that routing allocates nothing.
type TextValues struct {
	SQL   []byte
	Shape *router.Shape
	// Charset is the character set of the session's string literals and
	// string parameters (sharding.SessionCharset): the caller sets it
	// when the session's character set changes; Reset keeps it.
	Charset sharding.Charset
	buf     []byte
}

// Reset points v at a new statement, keeping its buffer.
func (v *TextValues) Reset(sql []byte, sh *router.Shape) {
	v.SQL, v.Shape, v.buf = sql, sh, v.buf[:0]
}

// Lit implements Values.
func (v *TextValues) Lit(i int) (sharding.Literal, bool) {
	if i < 1 || i > len(v.Shape.Lits) {
		return sharding.Literal{}, false
	}
	start := len(v.buf)
	v.buf = v.Shape.AppendValue(v.buf, v.SQL, i-1)
	// The value is read during routing only; later values are appended
	// after it, and a grown buffer leaves the old bytes where they were.
	b := v.buf[start:]
	s := unsafe.String(unsafe.SliceData(b), len(b))
	switch v.Shape.Lits[i-1].Kind {
	case router.LitNumber:
		return sharding.NumberLit(s), true
	case router.LitHex, router.LitBit:
		return sharding.HexLit(s), true
	case router.LitNString: // N'…' is _utf8mb3'…', whatever the client's character set
		return sharding.StringLitIn(s, sharding.CharsetUTF8MB3), true
	case router.LitXString: // X'…': a binary string in MariaDB
		return sharding.StringLitIn(s, sharding.CharsetBinary), true
	default: // quoted strings, in the session's character set
		return sharding.StringLitIn(s, v.Charset), true
	}
}

// ClientCharset implements Values.
func (v *TextValues) ClientCharset() sharding.Charset { return v.Charset }

// Param implements Values: a text statement has no parameters.
func (v *TextValues) Param(int) (sharding.Literal, bool) { return sharding.Literal{}, false }

// ExecValues gives one execution of a prepared statement to Route: the
// literals of its text (TextValues, reset to the prepared text) and the
// parameters the client bound, set per execution from the binary
// protocol. The caller keeps it from one execution to the next, so that
// binding allocates nothing once it has seen the statement's parameters.
type ExecValues struct {
	TextValues
	params []paramValue
}

type paramValue struct {
	lit   sharding.Literal
	known bool
}

// ResetParams readies v for an execution with n parameters, all unknown
// until set.
func (v *ExecValues) ResetParams(n int) {
	if cap(v.params) < n {
		v.params = make([]paramValue, n)
	}
	v.params = v.params[:n]
	clear(v.params)
}

// SetParam sets parameter i (0-based) from its binary value. Values that
// are not exactly one value of a shard key (TIME, BIT, GEOMETRY) stay
// unknown: the key is then treated as inexact. p.Bytes must stay
// unchanged while v routes.
func (v *ExecValues) SetParam(i int, p mysql.Param) {
	var lit sharding.Literal
	switch p.Kind {
	case mysql.ParamInt:
		lit = sharding.IntLit(p.Int)
	case mysql.ParamUint:
		lit = sharding.UintLit(p.Uint)
	case mysql.ParamDouble:
		lit = sharding.DoubleLit(p.Float)
	case mysql.ParamDecimal:
		lit = sharding.NumberLit(bytesString(p.Bytes))
	case mysql.ParamString:
		lit = v.stringParam(p.Bytes, p.Binary)
	case mysql.ParamDatetime:
		lit = sharding.DatetimeLit(sharding.Datetime{Year: p.Year, Month: p.Month, Day: p.Day,
			Hour: p.Hour, Minute: p.Minute, Second: p.Second, Microsecond: p.Microsecond})
	default:
		return
	}
	v.params[i] = paramValue{lit: lit, known: true}
}

// SetNull sets parameter i (0-based) to NULL.
func (v *ExecValues) SetNull(i int) { v.params[i] = paramValue{lit: sharding.NullLit(), known: true} }

// SetString sets parameter i (0-based) to the string s (long data sent
// with COM_STMT_SEND_LONG_DATA), which must stay unchanged while v
// routes; binary: the parameter's type is a BLOB (mysql.IsBlob).
func (v *ExecValues) SetString(i int, s []byte, binary bool) {
	v.params[i] = paramValue{lit: v.stringParam(s, binary), known: true}
}

// stringParam is a string parameter's value: in the session's character
// set, or, of a BLOB type, a binary string (as the server reads them).
func (v *ExecValues) stringParam(b []byte, binary bool) sharding.Literal {
	cs := v.TextValues.Charset
	if binary {
		cs = sharding.CharsetBinary
	}
	return sharding.StringLitIn(bytesString(b), cs)
}

// Param implements Values: parameter i, 1-based.
func (v *ExecValues) Param(i int) (sharding.Literal, bool) {
	if i < 1 || i > len(v.params) {
		return sharding.Literal{}, false
	}
	p := v.params[i-1]
	return p.lit, p.known
}

// bytesString views b as a string without copying; b must not change
// while the string is in use.
func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
