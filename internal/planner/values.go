package planner

import (
	"unsafe"

	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sharding"
)

// TextValues gives a text statement's literals to Route: the statement's
// SQL and shape, and a buffer for decoded values that the caller keeps
// from one statement to the next, so that routing allocates nothing.
type TextValues struct {
	SQL   []byte
	Shape *router.Shape
	buf   []byte
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
	default: // quoted strings, N'…', X'…' (a string in MariaDB)
		return sharding.StringLit(s), true
	}
}

// Param implements Values: a text statement has no parameters.
func (v *TextValues) Param(int) (sharding.Literal, bool) { return sharding.Literal{}, false }
