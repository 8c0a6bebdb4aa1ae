package mysql

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The parameters of COM_STMT_EXECUTE, as a proxy that routes by them reads
// them: the packet's parts (ExecuteParams) and each value in the binary
// protocol's encoding of its type (ReadParam).

// ExecuteParams are the parameter parts of a COM_STMT_EXECUTE packet of a
// statement with n > 0 parameters: the NULL bitmap, the types (2 bytes per
// parameter: type, then 0x80 for unsigned) when the packet carries them
// (nil when it does not: the client bound them before), and the values.
type ExecuteParams struct {
	Nulls, Types, Values []byte
}

// ParseExecuteParams splits p, a whole COM_STMT_EXECUTE packet of a
// statement with n parameters, into its parameter parts. The slices alias p.
func ParseExecuteParams(p []byte, n int) (ExecuteParams, error) {
	const head = 10 // command, statement id, flags, iteration count
	nb := (n + 7) / 8
	if len(p) < head+nb+1 {
		return ExecuteParams{}, fmt.Errorf("execute packet: parameters: %w", ErrMalformed)
	}
	e := ExecuteParams{Nulls: p[head : head+nb]}
	rest := p[head+nb+1:]
	if p[head+nb] == 1 {
		if len(rest) < 2*n {
			return ExecuteParams{}, fmt.Errorf("execute packet: parameter types: %w", ErrMalformed)
		}
		e.Types, rest = rest[:2*n], rest[2*n:]
	}
	e.Values = rest
	return e, nil
}

// Null reports whether parameter i is NULL by the bitmap.
func (e *ExecuteParams) Null(i int) bool { return e.Nulls[i/8]&(1<<(i%8)) != 0 }

// ParamKind is what a parameter's binary value decodes to.
type ParamKind uint8

const (
	ParamInt      ParamKind = iota // Int
	ParamUint                      // Uint
	ParamDouble                    // Float (FLOAT widened)
	ParamDecimal                   // Bytes: the decimal's text
	ParamString                    // Bytes: strings, blobs, ENUM, SET, JSON
	ParamDatetime                  // DATE, DATETIME, TIMESTAMP: the date and time fields
	ParamOther                     // TIME, BIT, GEOMETRY, unknown: Bytes, not interpreted
)

// Param is one parameter value decoded from its binary encoding. Bytes
// alias the packet.
type Param struct {
	Kind                              ParamKind
	Int                               int64
	Uint                              uint64
	Float                             float64
	Bytes                             []byte
	Year, Month, Day                  int
	Hour, Minute, Second, Microsecond int
	// Binary: a ParamString of a BLOB type, which the server reads as a
	// binary string, not in the client's character set.
	Binary bool
}

// ReadParam decodes the value of a parameter of type typ (unsigned: the
// type's unsigned flag) at the start of b and returns it with the number
// of bytes it takes. NULL parameters (by the bitmap) have no value and
// must not be read.
func ReadParam(b []byte, typ byte, unsigned bool) (Param, int, error) {
	fixed := func(n int) bool { return len(b) >= n }
	var v Param
	switch typ {
	case TypeTiny:
		if !fixed(1) {
			break
		}
		v.setInt(int64(int8(b[0])), uint64(b[0]), unsigned)
		return v, 1, nil
	case TypeShort, TypeYear:
		if !fixed(2) {
			break
		}
		u := binary.LittleEndian.Uint16(b)
		v.setInt(int64(int16(u)), uint64(u), unsigned)
		return v, 2, nil
	case TypeLong, TypeInt24:
		if !fixed(4) {
			break
		}
		u := binary.LittleEndian.Uint32(b)
		v.setInt(int64(int32(u)), uint64(u), unsigned)
		return v, 4, nil
	case TypeLongLong:
		if !fixed(8) {
			break
		}
		u := binary.LittleEndian.Uint64(b)
		v.setInt(int64(u), u, unsigned)
		return v, 8, nil
	case TypeFloat:
		if !fixed(4) {
			break
		}
		v.Kind, v.Float = ParamDouble, float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		return v, 4, nil
	case TypeDouble:
		if !fixed(8) {
			break
		}
		v.Kind, v.Float = ParamDouble, math.Float64frombits(binary.LittleEndian.Uint64(b))
		return v, 8, nil
	case TypeDate, TypeDateTime, TypeTimestamp:
		return readDatetimeParam(b)
	case TypeTime:
		if len(b) < 1 || len(b) < 1+int(b[0]) {
			break
		}
		v.Kind, v.Bytes = ParamOther, b[1:1+int(b[0])]
		return v, 1 + int(b[0]), nil
	case TypeNull:
		return v, 0, fmt.Errorf("parameter of type NULL with a value: %w", ErrMalformed)
	default: // every other type is sent as a length-encoded string
		n, ln, isNull, ok := ReadLenEncInt(b)
		if !ok || isNull || uint64(len(b)-ln) < n {
			break
		}
		v.Kind, v.Bytes, v.Binary = stringKind(typ), b[ln:ln+int(n)], IsBlob(typ)
		return v, ln + int(n), nil
	}
	return Param{}, 0, fmt.Errorf("parameter value of type %d: %w", typ, ErrMalformed)
}

func (v *Param) setInt(signed int64, unsignedValue uint64, unsigned bool) {
	if unsigned {
		v.Kind, v.Uint = ParamUint, unsignedValue
		return
	}
	v.Kind, v.Int = ParamInt, signed
}

// IsBlob reports whether parameter type typ is a BLOB type, whose values
// the server reads as binary strings (its other string types are in the
// client's character set).
func IsBlob(typ byte) bool {
	switch typ {
	case TypeTinyBlob, TypeMediumBlob, TypeLongBlob, TypeBlob:
		return true
	}
	return false
}

// stringKind is the kind of a length-encoded value of type typ.
func stringKind(typ byte) ParamKind {
	switch typ {
	case TypeDecimal, TypeNewDecimal:
		return ParamDecimal
	case TypeVarchar, TypeVarString, TypeString, TypeEnum, TypeSet, TypeJSON,
		TypeTinyBlob, TypeMediumBlob, TypeLongBlob, TypeBlob:
		return ParamString
	}
	return ParamOther
}

// readDatetimeParam decodes a DATE, DATETIME or TIMESTAMP value: a length
// (0, 4, 7 or 11) and that many bytes of year, month, day, hour, minute,
// second and microseconds.
func readDatetimeParam(b []byte) (Param, int, error) {
	if len(b) < 1 || len(b) < 1+int(b[0]) {
		return Param{}, 0, fmt.Errorf("date parameter: %w", ErrMalformed)
	}
	n := int(b[0])
	d := b[1 : 1+n]
	v := Param{Kind: ParamDatetime}
	switch n {
	case 11:
		v.Microsecond = int(binary.LittleEndian.Uint32(d[7:]))
		fallthrough
	case 7:
		v.Hour, v.Minute, v.Second = int(d[4]), int(d[5]), int(d[6])
		fallthrough
	case 4:
		v.Year, v.Month, v.Day = int(binary.LittleEndian.Uint16(d)), int(d[2]), int(d[3])
	case 0: // the zero date
	default:
		return Param{}, 0, fmt.Errorf("date parameter of length %d: %w", n, ErrMalformed)
	}
	return v, 1 + n, nil
}
