package mysql

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

func TestReadParamDecodesEachBinaryType(t *testing.T) {
	le16 := func(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }
	le32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	le64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	for _, tc := range []struct {
		name     string
		typ      byte
		unsigned bool
		b        []byte
		want     Param
		n        int
	}{
		{"tiny signed", TypeTiny, false, []byte{0xff}, Param{Kind: ParamInt, Int: -1}, 1},
		{"tiny unsigned", TypeTiny, true, []byte{0xff}, Param{Kind: ParamUint, Uint: 255}, 1},
		{"short", TypeShort, false, le16(0xfffe), Param{Kind: ParamInt, Int: -2}, 2},
		{"year", TypeYear, true, le16(2024), Param{Kind: ParamUint, Uint: 2024}, 2},
		{"long", TypeLong, false, le32(0x80000000), Param{Kind: ParamInt, Int: math.MinInt32}, 4},
		{"int24 unsigned", TypeInt24, true, le32(0xffffffff), Param{Kind: ParamUint, Uint: math.MaxUint32}, 4},
		{"longlong", TypeLongLong, false, le64(uint64(1<<63 - 1)), Param{Kind: ParamInt, Int: math.MaxInt64}, 8},
		{"longlong unsigned", TypeLongLong, true, le64(math.MaxUint64), Param{Kind: ParamUint, Uint: math.MaxUint64}, 8},
		{"float", TypeFloat, false, le32(math.Float32bits(1.5)), Param{Kind: ParamDouble, Float: 1.5}, 4},
		{"double", TypeDouble, false, le64(math.Float64bits(-2.25)), Param{Kind: ParamDouble, Float: -2.25}, 8},
		{"decimal", TypeNewDecimal, false, []byte("\x05-1.50rest"), Param{Kind: ParamDecimal, Bytes: []byte("-1.50")}, 6},
		{"varchar", TypeVarString, false, []byte("\x03abc"), Param{Kind: ParamString, Bytes: []byte("abc")}, 4},
		{"blob", TypeBlob, false, []byte("\x00"), Param{Kind: ParamString, Bytes: []byte{}}, 1},
		{"bit", TypeBit, false, []byte("\x01\x2a"), Param{Kind: ParamOther, Bytes: []byte{0x2a}}, 2},
		{"date", TypeDate, false, append([]byte{4}, append(le16(2024), 2, 29)...), Param{Kind: ParamDatetime, Year: 2024, Month: 2, Day: 29}, 5},
		{"datetime", TypeDateTime, false, append([]byte{7}, append(le16(2023), 12, 31, 23, 59, 58)...),
			Param{Kind: ParamDatetime, Year: 2023, Month: 12, Day: 31, Hour: 23, Minute: 59, Second: 58}, 8},
		{"timestamp micro", TypeTimestamp, false, append(append([]byte{11}, append(le16(2023), 1, 2, 3, 4, 5)...), le32(123456)...),
			Param{Kind: ParamDatetime, Year: 2023, Month: 1, Day: 2, Hour: 3, Minute: 4, Second: 5, Microsecond: 123456}, 12},
		{"zero date", TypeDate, false, []byte{0}, Param{Kind: ParamDatetime}, 1},
		{"time", TypeTime, false, []byte{8, 0, 1, 0, 0, 0, 2, 3, 4}, Param{Kind: ParamOther, Bytes: []byte{0, 1, 0, 0, 0, 2, 3, 4}}, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n, err := ReadParam(tc.b, tc.typ, tc.unsigned)
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.n || got.Kind != tc.want.Kind || got.Int != tc.want.Int || got.Uint != tc.want.Uint ||
				got.Float != tc.want.Float || string(got.Bytes) != string(tc.want.Bytes) ||
				got.Year != tc.want.Year || got.Month != tc.want.Month || got.Day != tc.want.Day ||
				got.Hour != tc.want.Hour || got.Minute != tc.want.Minute || got.Second != tc.want.Second ||
				got.Microsecond != tc.want.Microsecond {
				t.Errorf("got %+v (%d bytes), want %+v (%d bytes)", got, n, tc.want, tc.n)
			}
		})
	}
}

func TestReadParamRefusesTruncatedValues(t *testing.T) {
	for _, tc := range []struct {
		typ byte
		b   []byte
	}{
		{TypeTiny, nil}, {TypeShort, []byte{1}}, {TypeLong, []byte{1, 2, 3}}, {TypeLongLong, make([]byte, 7)},
		{TypeDouble, make([]byte, 4)}, {TypeVarString, []byte{5, 'a'}}, {TypeVarString, []byte{0xff}},
		{TypeDate, []byte{4, 1}}, {TypeDateTime, []byte{5, 1, 2, 3, 4, 5}}, {TypeTime, []byte{8}}, {TypeNull, nil},
	} {
		if _, _, err := ReadParam(tc.b, tc.typ, false); !errors.Is(err, ErrMalformed) {
			t.Errorf("type %d, % x: err %v, want ErrMalformed", tc.typ, tc.b, err)
		}
	}
}

func TestParseExecuteParams(t *testing.T) {
	head := []byte{ComStmtExecute, 1, 0, 0, 0, 0, 1, 0, 0, 0}
	// 9 parameters: a 2-byte bitmap, bound types, then the values.
	p := append(append([]byte{}, head...), 0x01, 0x01, 1)
	for i := 0; i < 9; i++ {
		p = append(p, TypeTiny, 0)
	}
	p = append(p, 7, 8)
	e, err := ParseExecuteParams(p, 9)
	if err != nil {
		t.Fatal(err)
	}
	if !e.Null(0) || e.Null(1) || !e.Null(8) || len(e.Types) != 18 || string(e.Values) != "\x07\x08" {
		t.Errorf("got %+v", e)
	}
	// Types not sent again: nil, values right after the flag.
	e, err = ParseExecuteParams(append(append([]byte{}, head...), 0, 0), 1)
	if err != nil || e.Types != nil || len(e.Values) != 0 {
		t.Errorf("unbound: %+v %v", e, err)
	}
	for _, bad := range [][]byte{head, append(append([]byte{}, head...), 0, 1, TypeTiny)} {
		if _, err := ParseExecuteParams(bad, 1); !errors.Is(err, ErrMalformed) {
			t.Errorf("% x: %v, want ErrMalformed", bad, err)
		}
	}
}
