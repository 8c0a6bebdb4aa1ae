package mysql

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
)

// Values of binary result rows (COM_STMT_EXECUTE) and their text form:
// a merge compares and combines values in the text protocol's form, so a
// binary value is printed as the server prints it in a text row
// (AppendBinaryAsText), and a value the merge composed is encoded back
// into the bytes the server would send (AppendTextAsBinary).

// binaryValueSize returns how many bytes the binary value of a column of
// type typ at the start of b takes, and for a length-encoded string the
// offset of its contents (else -1).
func binaryValueSize(b []byte, typ byte) (size, str int, err error) {
	fixed := 0
	switch typ {
	case TypeTiny:
		fixed = 1
	case TypeShort, TypeYear:
		fixed = 2
	case TypeLong, TypeInt24, TypeFloat:
		fixed = 4
	case TypeLongLong, TypeDouble:
		fixed = 8
	case TypeDate, TypeDateTime, TypeTimestamp, TypeTime:
		if len(b) < 1 || len(b) < 1+int(b[0]) {
			return 0, 0, fmt.Errorf("binary date or time value: %w", ErrMalformed)
		}
		return 1 + int(b[0]), -1, nil
	default:
		n, ln, isNull, ok := ReadLenEncInt(b)
		if !ok || isNull || uint64(len(b)-ln) < n {
			return 0, 0, fmt.Errorf("binary value of type %d: %w", typ, ErrMalformed)
		}
		return ln + int(n), ln, nil
	}
	if len(b) < fixed {
		return 0, 0, fmt.Errorf("binary value of type %d: %w", typ, ErrMalformed)
	}
	return fixed, -1, nil
}

// AppendBinaryAsText appends the text form of v, the binary value of a
// number, date or time column d (without a string's length prefix).
func AppendBinaryAsText(dst, v []byte, d *ColumnDef) ([]byte, error) {
	unsigned := d.Flags&FlagUnsigned != 0
	start := len(dst)
	switch d.Type {
	case TypeTiny:
		dst = appendInt(dst, int64(int8(v[0])), uint64(v[0]), unsigned)
	case TypeShort, TypeYear:
		u := binary.LittleEndian.Uint16(v)
		dst = appendInt(dst, int64(int16(u)), uint64(u), unsigned || d.Type == TypeYear)
	case TypeLong, TypeInt24:
		u := binary.LittleEndian.Uint32(v)
		dst = appendInt(dst, int64(int32(u)), uint64(u), unsigned)
	case TypeLongLong:
		u := binary.LittleEndian.Uint64(v)
		dst = appendInt(dst, int64(u), u, unsigned)
	case TypeFloat:
		return AppendFloat(dst, float64(math.Float32frombits(binary.LittleEndian.Uint32(v))), 32, d.Decimals), nil
	case TypeDouble:
		return AppendFloat(dst, math.Float64frombits(binary.LittleEndian.Uint64(v)), 64, d.Decimals), nil
	case TypeDate, TypeDateTime, TypeTimestamp:
		return appendDatetimeText(dst, v[1:], d)
	case TypeTime:
		return appendTimeText(dst, v[1:], d)
	default:
		return dst, fmt.Errorf("binary value of type %d is not a number or a date: %w", d.Type, ErrMalformed)
	}
	if d.Flags&FlagZerofill != 0 || d.Type == TypeYear {
		dst = zeroFill(dst, start, int(d.Length))
	}
	return dst, nil
}

func appendInt(dst []byte, signed int64, unsignedValue uint64, unsigned bool) []byte {
	if unsigned {
		return strconv.AppendUint(dst, unsignedValue, 10)
	}
	return strconv.AppendInt(dst, signed, 10)
}

// zeroFill pads the number in dst[start:] with leading zeros to width.
func zeroFill(dst []byte, start, width int) []byte {
	n := len(dst) - start
	if n >= width || width > 255 {
		return dst
	}
	pad := width - n
	for i := 0; i < pad; i++ {
		dst = append(dst, 0)
	}
	copy(dst[start+pad:], dst[start:start+n])
	for i := start; i < start+pad; i++ {
		dst[i] = '0'
	}
	return dst
}

// notFixedDecimals is the decimals of a FLOAT or DOUBLE column printed in
// its shortest form (no fixed number of decimals).
const notFixedDecimals = 31

// AppendFloat appends f (bits: 32 for FLOAT, 64 for DOUBLE) as the server
// prints it in a text row: with decimals fixed digits after the point when
// the column has them, else as MariaDB's my_gcvt does: the shortest digits
// that read back as the same value (6 significant digits at most for a
// FLOAT), in positional notation when the exponent is -15 to 14 or the
// number has a fraction, else as 1.5e16 (no '+', no padding).
func AppendFloat(dst []byte, f float64, bits int, decimals byte) []byte {
	if decimals < notFixedDecimals {
		return strconv.AppendFloat(dst, f, 'f', int(decimals), 64)
	}
	if f == 0 {
		return append(dst, '0') // -0 too
	}
	prec := -1
	if bits == 32 {
		prec = 5 // FLT_DIG significant digits
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', prec, 64)
	mant, exp := splitExponent(e)
	if prec >= 0 {
		mant = trimZeros(mant)
	}
	if exp < -15 || exp > 14 && significantDigits(mant) <= exp+1 {
		dst = append(dst, mant...)
		dst = append(dst, 'e')
		return strconv.AppendInt(dst, int64(exp), 10)
	}
	return appendPositional(dst, mant, exp)
}

// significantDigits counts the digits of a mantissa.
func significantDigits(m []byte) int {
	n := 0
	for _, c := range m {
		if c >= '0' && c <= '9' {
			n++
		}
	}
	return n
}

// splitExponent splits strconv's 'e' form ("-1.25e+15") into its
// mantissa and exponent.
func splitExponent(e []byte) ([]byte, int) {
	for i := len(e) - 1; i >= 0; i-- {
		if e[i] == 'e' {
			exp, _ := strconv.Atoi(string(e[i+1:]))
			return e[:i], exp
		}
	}
	return e, 0
}

// trimZeros drops the trailing zeros of a mantissa's fraction, and the
// point with them.
func trimZeros(m []byte) []byte {
	dot := -1
	for i, c := range m {
		if c == '.' {
			dot = i
		}
	}
	if dot < 0 {
		return m
	}
	for len(m) > dot+1 && m[len(m)-1] == '0' {
		m = m[:len(m)-1]
	}
	if len(m) == dot+1 {
		m = m[:dot]
	}
	return m
}

// appendPositional appends mant × 10^exp in positional notation.
func appendPositional(dst, mant []byte, exp int) []byte {
	if mant[0] == '-' {
		dst = append(dst, '-')
		mant = mant[1:]
	}
	var digits [24]byte
	ds := digits[:0]
	for _, c := range mant {
		if c != '.' {
			ds = append(ds, c)
		}
	}
	point := exp + 1 // digits before the point
	switch {
	case point <= 0:
		dst = append(dst, '0', '.')
		for i := 0; i < -point; i++ {
			dst = append(dst, '0')
		}
		return append(dst, ds...)
	case point >= len(ds):
		dst = append(dst, ds...)
		for i := len(ds); i < point; i++ {
			dst = append(dst, '0')
		}
		return dst
	}
	dst = append(dst, ds[:point]...)
	dst = append(dst, '.')
	return append(dst, ds[point:]...)
}

// appendDatetimeText appends a binary DATE, DATETIME or TIMESTAMP value
// (after its length byte) as text, with the column's fractional digits.
func appendDatetimeText(dst, v []byte, d *ColumnDef) ([]byte, error) {
	var year, month, day, hour, minute, second, micro int
	switch len(v) {
	case 11:
		micro = int(binary.LittleEndian.Uint32(v[7:]))
		fallthrough
	case 7:
		hour, minute, second = int(v[4]), int(v[5]), int(v[6])
		fallthrough
	case 4:
		year, month, day = int(binary.LittleEndian.Uint16(v)), int(v[2]), int(v[3])
	case 0:
	default:
		return dst, fmt.Errorf("binary date of length %d: %w", len(v), ErrMalformed)
	}
	dst = appendDigits(dst, year, 4)
	dst = append(dst, '-')
	dst = appendDigits(dst, month, 2)
	dst = append(dst, '-')
	dst = appendDigits(dst, day, 2)
	if d.Type == TypeDate {
		return dst, nil
	}
	dst = append(dst, ' ')
	return appendClock(dst, hour, minute, second, micro, d.Decimals), nil
}

// appendTimeText appends a binary TIME value (after its length byte) as
// text: [-]HH:MM:SS with the hours of the days included.
func appendTimeText(dst, v []byte, d *ColumnDef) ([]byte, error) {
	var neg bool
	var days, hour, minute, second, micro int
	switch len(v) {
	case 12:
		micro = int(binary.LittleEndian.Uint32(v[8:]))
		fallthrough
	case 8:
		neg, days = v[0] == 1, int(binary.LittleEndian.Uint32(v[1:]))
		hour, minute, second = int(v[5]), int(v[6]), int(v[7])
	case 0:
	default:
		return dst, fmt.Errorf("binary time of length %d: %w", len(v), ErrMalformed)
	}
	if neg {
		dst = append(dst, '-')
	}
	return appendClock(dst, days*24+hour, minute, second, micro, d.Decimals), nil
}

// appendClock appends HH:MM:SS and decimals (1 to 6) fractional digits.
func appendClock(dst []byte, hour, minute, second, micro int, decimals byte) []byte {
	dst = appendDigits(dst, hour, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, minute, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, second, 2)
	if decimals > 0 && decimals <= 6 {
		dst = append(dst, '.')
		frac := micro
		for i := decimals; i < 6; i++ {
			frac /= 10
		}
		dst = appendDigits(dst, frac, int(decimals))
	}
	return dst
}

// appendDigits appends n with at least width digits.
func appendDigits(dst []byte, n, width int) []byte {
	var buf [12]byte
	b := strconv.AppendInt(buf[:0], int64(n), 10)
	for i := len(b); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, b...)
}

// AppendTextAsBinary appends the binary value of text, a value of column
// d in the text protocol's form, as the server would send it in a binary
// row (strings and decimals length-encoded, as they are).
func AppendTextAsBinary(dst, text []byte, d *ColumnDef) ([]byte, error) {
	switch d.Type {
	case TypeTiny, TypeShort, TypeYear, TypeLong, TypeInt24, TypeLongLong:
		u, err := parseIntText(text, d.Flags&FlagUnsigned != 0 || d.Type == TypeYear)
		if err != nil {
			return dst, err
		}
		switch d.Type {
		case TypeTiny:
			return append(dst, byte(u)), nil
		case TypeShort, TypeYear:
			return binary.LittleEndian.AppendUint16(dst, uint16(u)), nil
		case TypeLong, TypeInt24:
			return binary.LittleEndian.AppendUint32(dst, uint32(u)), nil
		}
		return binary.LittleEndian.AppendUint64(dst, u), nil
	case TypeFloat:
		f, err := strconv.ParseFloat(string(text), 32)
		if err != nil {
			return dst, fmt.Errorf("FLOAT value %q: %w", text, ErrMalformed)
		}
		return binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(f))), nil
	case TypeDouble:
		f, err := strconv.ParseFloat(string(text), 64)
		if err != nil {
			return dst, fmt.Errorf("DOUBLE value %q: %w", text, ErrMalformed)
		}
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f)), nil
	case TypeDate, TypeDateTime, TypeTimestamp:
		return appendDatetimeBinary(dst, text)
	case TypeTime:
		return appendTimeBinary(dst, text)
	}
	return AppendLenEncString(dst, text), nil
}

// parseIntText parses an integer's text (ZEROFILL padding included) into
// its 64 bits.
func parseIntText(text []byte, unsigned bool) (uint64, error) {
	if unsigned {
		u, err := strconv.ParseUint(string(text), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("integer value %q: %w", text, ErrMalformed)
		}
		return u, nil
	}
	i, err := strconv.ParseInt(string(text), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("integer value %q: %w", text, ErrMalformed)
	}
	return uint64(i), nil
}

// textFields reads the numbers of a date or time text ("2024-01-02
// 03:04:05.123", "-838:59:59.5") in order; the fraction is returned as
// microseconds.
func textFields(text []byte, out []int) (n int, micro int, neg bool, ok bool) {
	i := 0
	if len(text) > 0 && text[0] == '-' {
		neg, i = true, 1
	}
	for i < len(text) && n < len(out) {
		v, start := 0, i
		for i < len(text) && text[i] >= '0' && text[i] <= '9' {
			v = v*10 + int(text[i]-'0')
			i++
		}
		if i == start {
			return 0, 0, false, false
		}
		out[n] = v
		n++
		if i == len(text) {
			return n, 0, neg, true
		}
		if text[i] == '.' {
			i++
			digits := 0
			for ; i < len(text) && text[i] >= '0' && text[i] <= '9'; i++ {
				if digits < 6 {
					micro = micro*10 + int(text[i]-'0')
					digits++
				}
			}
			for ; digits < 6; digits++ {
				micro *= 10
			}
			return n, micro, neg, i == len(text)
		}
		i++ // a separator
	}
	return n, micro, neg, i >= len(text)
}

// appendDatetimeBinary encodes a DATE, DATETIME or TIMESTAMP text as the
// server does: only as long as its non-zero parts need.
func appendDatetimeBinary(dst, text []byte) ([]byte, error) {
	var f [6]int
	n, micro, neg, ok := textFields(text, f[:])
	if !ok || neg || (n != 3 && n != 6) {
		return dst, fmt.Errorf("date value %q: %w", text, ErrMalformed)
	}
	switch {
	case micro != 0:
		dst = append(dst, 11)
	case f[3] != 0 || f[4] != 0 || f[5] != 0:
		dst = append(dst, 7)
	case f[0] != 0 || f[1] != 0 || f[2] != 0:
		dst = append(dst, 4)
	default:
		return append(dst, 0), nil
	}
	l := dst[len(dst)-1]
	dst = binary.LittleEndian.AppendUint16(dst, uint16(f[0]))
	dst = append(dst, byte(f[1]), byte(f[2]))
	if l >= 7 {
		dst = append(dst, byte(f[3]), byte(f[4]), byte(f[5]))
	}
	if l == 11 {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(micro))
	}
	return dst, nil
}

// appendTimeBinary encodes a TIME text as the server does.
func appendTimeBinary(dst, text []byte) ([]byte, error) {
	var f [3]int
	n, micro, neg, ok := textFields(text, f[:])
	if !ok || n != 3 {
		return dst, fmt.Errorf("time value %q: %w", text, ErrMalformed)
	}
	days, hour := f[0]/24, f[0]%24
	switch {
	case micro != 0:
		dst = append(dst, 12)
	case f[0] != 0 || f[1] != 0 || f[2] != 0:
		dst = append(dst, 8)
	default:
		return append(dst, 0), nil
	}
	sign := byte(0)
	if neg {
		sign = 1
	}
	dst = append(dst, sign)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(days))
	dst = append(dst, byte(hour), byte(f[1]), byte(f[2]))
	if micro != 0 {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(micro))
	}
	return dst, nil
}
