package mysql

import "encoding/binary"

// Length-encoded integers and strings, and a bounds-checked reader. Every
// decoder here treats its input as hostile: a short buffer yields ok=false,
// never a panic.

// AppendLenEncInt appends v as a length-encoded integer.
func AppendLenEncInt(b []byte, v uint64) []byte {
	switch {
	case v < 251:
		return append(b, byte(v))
	case v < 1<<16:
		return append(b, 0xfc, byte(v), byte(v>>8))
	case v < 1<<24:
		return append(b, 0xfd, byte(v), byte(v>>8), byte(v>>16))
	default:
		return append(b, 0xfe, byte(v), byte(v>>8), byte(v>>16), byte(v>>24),
			byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56))
	}
}

// AppendLenEncString appends s prefixed by its length-encoded length.
func AppendLenEncString(b []byte, s []byte) []byte {
	b = AppendLenEncInt(b, uint64(len(s)))
	return append(b, s...)
}

// AppendLenEncStr is AppendLenEncString for a string.
func AppendLenEncStr(b []byte, s string) []byte {
	b = AppendLenEncInt(b, uint64(len(s)))
	return append(b, s...)
}

// AppendUint16 appends v little-endian.
func AppendUint16(b []byte, v uint16) []byte { return append(b, byte(v), byte(v>>8)) }

// AppendUint32 appends v little-endian.
func AppendUint32(b []byte, v uint32) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}

// ReadLenEncInt decodes a length-encoded integer at the start of b and returns
// it with the number of bytes used. isNull reports the 0xfb NULL marker.
func ReadLenEncInt(b []byte) (v uint64, n int, isNull, ok bool) {
	if len(b) == 0 {
		return 0, 0, false, false
	}
	switch b[0] {
	case 0xfb:
		return 0, 1, true, true
	case 0xfc:
		if len(b) < 3 {
			return 0, 0, false, false
		}
		return uint64(binary.LittleEndian.Uint16(b[1:])), 3, false, true
	case 0xfd:
		if len(b) < 4 {
			return 0, 0, false, false
		}
		return uint64(b[1]) | uint64(b[2])<<8 | uint64(b[3])<<16, 4, false, true
	case 0xfe:
		if len(b) < 9 {
			return 0, 0, false, false
		}
		return binary.LittleEndian.Uint64(b[1:]), 9, false, true
	case 0xff:
		return 0, 0, false, false
	default:
		return uint64(b[0]), 1, false, true
	}
}

// Reader walks a packet payload. Methods record the first failure in ok
// instead of panicking, so a decoder can read every field and check once.
type Reader struct {
	b   []byte
	pos int
	bad bool
}

// NewReader returns a Reader over b.
func NewReader(b []byte) Reader { return Reader{b: b} }

// OK reports whether every read so far was within bounds.
func (r *Reader) OK() bool { return !r.bad }

// Len reports how many bytes are left.
func (r *Reader) Len() int { return len(r.b) - r.pos }

// Rest returns the unread bytes.
func (r *Reader) Rest() []byte {
	if r.bad {
		return nil
	}
	return r.b[r.pos:]
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if r.bad || r.pos >= len(r.b) {
		r.bad = true
		return 0
	}
	c := r.b[r.pos]
	r.pos++
	return c
}

// Bytes reads n bytes.
func (r *Reader) Bytes(n int) []byte {
	if r.bad || n < 0 || r.pos+n > len(r.b) {
		r.bad = true
		return nil
	}
	s := r.b[r.pos : r.pos+n]
	r.pos += n
	return s
}

// Skip skips n bytes.
func (r *Reader) Skip(n int) { r.Bytes(n) }

// Uint16 reads a little-endian uint16.
func (r *Reader) Uint16() uint16 {
	s := r.Bytes(2)
	if s == nil {
		return 0
	}
	return binary.LittleEndian.Uint16(s)
}

// Uint32 reads a little-endian uint32.
func (r *Reader) Uint32() uint32 {
	s := r.Bytes(4)
	if s == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(s)
}

// LenEncInt reads a length-encoded integer.
func (r *Reader) LenEncInt() uint64 {
	if r.bad {
		return 0
	}
	v, n, _, ok := ReadLenEncInt(r.b[r.pos:])
	if !ok {
		r.bad = true
		return 0
	}
	r.pos += n
	return v
}

// LenEncString reads a length-encoded string.
func (r *Reader) LenEncString() []byte {
	n := r.LenEncInt()
	if r.bad || n > uint64(r.Len()) {
		r.bad = true
		return nil
	}
	return r.Bytes(int(n))
}

// NulString reads a NUL-terminated string (without the NUL).
func (r *Reader) NulString() []byte {
	if r.bad {
		return nil
	}
	for i := r.pos; i < len(r.b); i++ {
		if r.b[i] == 0 {
			s := r.b[r.pos:i]
			r.pos = i + 1
			return s
		}
	}
	r.bad = true
	return nil
}
