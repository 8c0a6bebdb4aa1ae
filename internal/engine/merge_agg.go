package engine

import (
	"math"
	"slices"
	"strconv"

	"vitess.io/vitess/go/hack"
	"vitess.io/vitess/go/mysql/decimal"
	"vitess.io/vitess/go/sqltypes"

	"github.com/shardgate/shardgate/internal/mysql"
)

// accum combines one aggregate column over the rows of a group. Its
// result aliases its own buffer: valid until the next group starts.
type accum struct {
	Aggregate
	cmp    *colCmp // MIN/MAX: Col's; DISTINCT kinds: Arg's
	by     int     // the column cmp compares: Col or Arg, or its weight's
	typ    sqltypes.Type
	format numFormat

	count  int64
	sum    decSum
	fsum   float64
	seen   bool // a non-NULL value was combined
	bits   uint64
	best   ownedValue   // MIN/MAX
	bestBy ownedValue   // MIN/MAX: best's column by (its weight)
	with   []ownedValue // MIN/MAX: best's row's columns With
	prev   ownedValue   // DISTINCT kinds: the last value of by counted
	// set holds, for a DISTINCT kind whose argument the group's rows do
	// not come sorted by (not the first DISTINCT argument), the values of
	// by counted in the group; held counts their bytes against budget.
	set          map[string]struct{}
	held, budget int64
	// GROUP_CONCAT: the values joined, how many, and the most it may be;
	// one whose order the rows do not arrive in keeps the group's rows
	// (buffered) and sorts them by its keys at the group's end.
	concat   []byte
	values   int
	maxLen   int64
	keys     []keyCmp
	buffered [][]sqltypes.Value
	result   []byte
}

// numFormat is how a column's numbers are written: as the server writes
// that column's type.
type numFormat struct {
	kind     numKind
	decimals int32 // DECIMAL's scale; a double's fixed decimals (31: none)
}

type numKind uint8

const (
	numOther   numKind = iota // not a number: values pass as they are
	numInteger                // integer types
	numDecimal                // DECIMAL
	numFloat                  // FLOAT, DOUBLE: MariaDB's double text, or fixed decimals
)

// notFixedDecimals is a double's decimals when it has no fixed scale.
const notFixedDecimals = 31

func columnFormat(col *mysql.ColumnDef) numFormat {
	switch col.Type {
	case mysql.TypeFloat, mysql.TypeDouble:
		return numFormat{kind: numFloat, decimals: int32(col.Decimals)}
	case mysql.TypeDecimal, mysql.TypeNewDecimal:
		return numFormat{kind: numDecimal, decimals: min(int32(col.Decimals), 38)}
	case mysql.TypeTiny, mysql.TypeShort, mysql.TypeLong, mysql.TypeLongLong, 0x09, mysql.TypeYear:
		return numFormat{kind: numInteger}
	}
	return numFormat{kind: numOther}
}

func (a *accum) reset() {
	a.count, a.fsum, a.seen = 0, 0, false
	a.sum.reset(a.format.decimals)
	a.best.null = true
	a.bestBy.null = true
	a.prev.null = true
	if a.set != nil {
		clear(a.set)
		a.held = 0
	}
	a.concat, a.values = a.concat[:0], 0
	a.buffered, a.held = a.buffered[:0], 0
	a.bits = 0
	if a.Kind == AggBitAnd {
		a.bits = math.MaxUint64
	}
}

// add combines one part row.
func (a *accum) add(row []sqltypes.Value) error {
	v := row[a.Col]
	switch a.Kind {
	case AggCount:
		n, err := strconv.ParseInt(hack.String(v.Raw()), 10, 64)
		if err != nil && !v.IsNull() {
			return aggValueError(a.Kind, v, err)
		}
		a.count += n
	case AggSum:
		return a.addSum(v)
	case AggMin, AggMax:
		if v.IsNull() {
			return nil
		}
		if !a.best.null {
			if c := a.cmp.compare(row[a.by], a.bestBy.value()); c >= 0 && a.Kind == AggMin || c <= 0 && a.Kind == AggMax {
				return nil
			}
		}
		a.best.set(v)
		a.bestBy.set(row[a.by])
		if len(a.With) > 0 {
			a.setWith(row)
		}
	case AggBitAnd, AggBitOr, AggBitXor:
		if v.IsNull() {
			return nil
		}
		n, err := strconv.ParseUint(hack.String(v.Raw()), 10, 64)
		if err != nil {
			return aggValueError(a.Kind, v, err)
		}
		switch a.Kind {
		case AggBitAnd:
			a.bits &= n
		case AggBitOr:
			a.bits |= n
		default:
			a.bits ^= n
		}
	case AggGroupConcat:
		if a.keys != nil {
			a.held += rowSize(row)
			if a.held > a.budget {
				return outOfMemory(a.budget)
			}
			a.buffered = append(a.buffered, copyRow(row))
			return nil
		}
		return a.addConcat(row)
	case AggCountDistinct, AggSumDistinct:
		x, by := row[a.Arg], row[a.by]
		if x.IsNull() {
			return nil
		}
		if a.set != nil {
			if seen, err := a.seenInSet(by); seen || err != nil {
				return err
			}
		} else {
			if !a.prev.null && a.cmp.compare(by, a.prev.value()) == 0 {
				return nil
			}
			a.prev.set(by)
		}
		if a.Kind == AggCountDistinct {
			a.count++
			return nil
		}
		return a.addSum(x)
	}
	return nil
}

// setWith keeps the columns computed from the MIN or MAX so far, which
// row holds.
func (a *accum) setWith(row []sqltypes.Value) {
	if len(a.with) != len(a.With) {
		a.with = make([]ownedValue, len(a.With))
	}
	for i, c := range a.With {
		a.with[i].set(row[c])
	}
}

// finish completes a buffered GROUP_CONCAT: its rows sorted by its keys
// (stable: ties keep their arrival order), then joined.
func (a *accum) finish() error {
	if a.Kind != AggGroupConcat || a.keys == nil {
		return nil
	}
	slices.SortStableFunc(a.buffered, func(x, y []sqltypes.Value) int { return compareRows(a.keys, x, y) })
	for _, row := range a.buffered {
		if err := a.addConcat(row); err != nil {
			return err
		}
	}
	return nil
}

// addConcat adds a part row's value to a GROUP_CONCAT: as many times as
// the rows it stands for (once for DISTINCT), NULL skipped.
func (a *accum) addConcat(row []sqltypes.Value) error {
	v := row[a.Arg]
	if v.IsNull() {
		return nil
	}
	times := int64(1)
	if a.Distinct {
		if seen, err := a.seenInSet(row[a.by]); seen || err != nil {
			return err
		}
	} else {
		n, err := strconv.ParseInt(hack.String(row[a.Count].Raw()), 10, 64)
		if err != nil {
			return aggValueError(a.Kind, row[a.Count], err)
		}
		times = n
	}
	if a.maxLen == 0 {
		a.maxLen, _ = strconv.ParseInt(hack.String(row[a.MaxLen].Raw()), 10, 64)
	}
	for ; times > 0; times-- {
		if a.values > 0 {
			a.concat = append(a.concat, a.Sep...)
		}
		a.concat = append(a.concat, v.Raw()...)
		a.values++
		if int64(len(a.concat)) > a.maxLen {
			return mysql.NewError(mysql.ERNotSupportedYet, "42000",
				"This version of shardgate doesn't yet support 'a GROUP_CONCAT() longer than group_concat_max_len (%d bytes) across shards; raise group_concat_max_len'", a.maxLen)
		}
	}
	return nil
}

// seenInSet reports whether v (a value's weight, or its text, which is
// one per value in a column) was counted in the group, adding it if not.
func (a *accum) seenInSet(v sqltypes.Value) (bool, error) {
	key := a.cmp.canonical(v.Raw())
	if _, ok := a.set[hack.String(key)]; ok {
		return true, nil
	}
	a.held += int64(len(key)) + 48 // the map's entry
	if a.held > a.budget {
		return false, outOfMemory(a.budget)
	}
	a.set[string(key)] = struct{}{}
	return false, nil
}

func (a *accum) addSum(v sqltypes.Value) error {
	if v.IsNull() {
		return nil
	}
	a.seen = true
	if a.format.kind == numFloat {
		f, err := strconv.ParseFloat(hack.String(v.Raw()), 64)
		if err != nil {
			return aggValueError(a.Kind, v, err)
		}
		a.fsum += f
		return nil
	}
	if err := a.sum.add(v.Raw()); err != nil {
		return aggValueError(a.Kind, v, err)
	}
	return nil
}

// value is the group's combined value, typed as the column.
func (a *accum) value() sqltypes.Value {
	b := a.result[:0]
	switch a.Kind {
	case AggCount, AggCountDistinct:
		b = strconv.AppendInt(b, a.count, 10)
	case AggSum, AggSumDistinct:
		if !a.seen {
			return sqltypes.NULL
		}
		if a.format.kind == numFloat {
			b = appendDouble(b, a.fsum, a.format.decimals)
		} else {
			b = a.sum.appendTo(b)
		}
	case AggMin, AggMax:
		return a.best.value()
	case AggGroupConcat:
		if a.values == 0 {
			return sqltypes.NULL
		}
		return sqltypes.MakeTrusted(a.typ, a.concat)
	case AggBitAnd, AggBitOr, AggBitXor:
		b = strconv.AppendUint(b, a.bits, 10)
	}
	a.result = b
	return sqltypes.MakeTrusted(a.typ, b)
}

func aggValueError(k AggKind, v sqltypes.Value, err error) error {
	return mysql.NewError(mysql.ERUnknownError, "HY000", "shardgate: merging aggregate %d: value %q: %v", k, v.Raw(), err)
}

// ownedValue is a copy of a value that outlives its input row.
type ownedValue struct {
	typ  sqltypes.Type
	b    []byte
	null bool
}

func (o *ownedValue) set(v sqltypes.Value) {
	o.null = v.IsNull()
	o.typ = v.Type()
	o.b = append(o.b[:0], v.Raw()...)
}

func (o *ownedValue) value() sqltypes.Value {
	if o.null {
		return sqltypes.NULL
	}
	return sqltypes.MakeTrusted(o.typ, o.b)
}

// decSum is an exact sum of decimal numbers at a scale: in an int64 of
// units of 10^-scale while it fits (no allocation), past that in a
// decimal.Decimal.
type decSum struct {
	scale int32
	n     int64
	big   decimal.Decimal
	isBig bool
}

func (s *decSum) reset(scale int32) {
	*s = decSum{scale: scale}
}

func (s *decSum) add(text []byte) error {
	if !s.isBig {
		if n, ok := scaledInt(text, s.scale); ok {
			if sum := s.n + n; (sum > s.n) == (n > 0) || n == 0 {
				s.n = sum
				return nil
			}
		}
		s.isBig = true
		s.big = decimal.New(s.n, -s.scale)
	}
	d, err := decimal.NewFromMySQL(text)
	if err != nil {
		return err
	}
	s.big = s.big.Add(d)
	return nil
}

// appendTo writes the sum with exactly scale decimals, rounded half away
// from zero when an input had more.
func (s *decSum) appendTo(b []byte) []byte {
	if s.isBig {
		return append(b, s.big.StringFixed(s.scale)...)
	}
	return appendScaled(b, s.n, s.scale)
}

// scaledInt reads a decimal number's text as an integer count of
// 10^-scale; ok is false when it has more decimals or does not fit.
func scaledInt(text []byte, scale int32) (int64, bool) {
	neg := len(text) > 0 && text[0] == '-'
	if neg {
		text = text[1:]
	}
	if len(text) == 0 {
		return 0, false
	}
	var n uint64
	frac := int32(-1)
	for _, c := range text {
		if c == '.' && frac < 0 {
			frac = 0
			continue
		}
		if c < '0' || c > '9' || n > (math.MaxInt64-9)/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
		if frac >= 0 {
			frac++
		}
	}
	frac = max(frac, 0)
	if frac > scale {
		return 0, false
	}
	for ; frac < scale; frac++ {
		if n > math.MaxInt64/10 {
			return 0, false
		}
		n *= 10
	}
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}

// appendScaled writes n units of 10^-scale with exactly scale decimals.
func appendScaled(b []byte, n int64, scale int32) []byte {
	if n < 0 {
		b = append(b, '-')
	}
	u := uint64(n)
	if n < 0 {
		u = uint64(-n)
	}
	var digits [24]byte
	d := strconv.AppendUint(digits[:0], u, 10)
	if int32(len(d)) <= scale {
		b = append(b, '0', '.')
		for i := int32(len(d)); i < scale; i++ {
			b = append(b, '0')
		}
		return append(b, d...)
	}
	point := len(d) - int(scale)
	b = append(b, d[:point]...)
	if scale > 0 {
		b = append(b, '.')
		b = append(b, d[point:]...)
	}
	return b
}

// appendDouble writes f as MariaDB writes a DOUBLE with decimals
// (notFixedDecimals: the shortest text that reads back as f, in the
// notation MariaDB's my_gcvt picks).
func appendDouble(b []byte, f float64, decimals int32) []byte {
	if decimals < notFixedDecimals {
		return strconv.AppendFloat(b, f, 'f', int(decimals), 64)
	}
	if f == 0 {
		return append(b, '0')
	}
	if f < 0 {
		b = append(b, '-')
		f = -f
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // d.ddde±XX
	mark := 0
	for e[mark] != 'e' {
		mark++
	}
	exp, _ := strconv.Atoi(string(e[mark+1:]))
	var digits [24]byte
	ds := append(digits[:0], e[0])
	if mark > 1 {
		ds = append(ds, e[2:mark]...)
	}
	decpt := exp + 1 // digits before the point
	if decpt > -15 && (decpt <= 15 || decpt < len(ds)) {
		return appendFixed(b, ds, decpt)
	}
	b = append(b, ds[0])
	if len(ds) > 1 {
		b = append(b, '.')
		b = append(b, ds[1:]...)
	}
	b = append(b, 'e')
	return strconv.AppendInt(b, int64(exp), 10)
}

// appendFixed writes digits with decpt of them before the point.
func appendFixed(b, ds []byte, decpt int) []byte {
	switch {
	case decpt <= 0:
		b = append(b, '0', '.')
		for ; decpt < 0; decpt++ {
			b = append(b, '0')
		}
		return append(b, ds...)
	case decpt >= len(ds):
		b = append(b, ds...)
		for i := len(ds); i < decpt; i++ {
			b = append(b, '0')
		}
		return b
	}
	b = append(b, ds[:decpt]...)
	b = append(b, '.')
	return append(b, ds[decpt:]...)
}
