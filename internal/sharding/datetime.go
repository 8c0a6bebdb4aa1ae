package sharding

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Datetime is a calendar date and wall-clock time with microseconds, as
// MySQL's DATE and DATETIME hold it (no time zone).
type Datetime struct {
	Year, Month, Day     int
	Hour, Minute, Second int
	Microsecond          int
}

// valid reports whether d is a real date and time; zero dates are not.
func (d Datetime) valid() bool {
	if d.Year < 1 || d.Year > 9999 || d.Month < 1 || d.Month > 12 || d.Day < 1 {
		return false
	}
	if d.Day > daysIn(d.Year, d.Month) {
		return false
	}
	return d.Hour >= 0 && d.Hour < 24 && d.Minute >= 0 && d.Minute < 60 &&
		d.Second >= 0 && d.Second < 60 && d.Microsecond >= 0 && d.Microsecond < 1e6
}

func daysIn(year, month int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

func (d Datetime) String() string {
	return fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d.%06d",
		d.Year, d.Month, d.Day, d.Hour, d.Minute, d.Second, d.Microsecond)
}

func (d Datetime) midnight() bool {
	return d.Hour == 0 && d.Minute == 0 && d.Second == 0 && d.Microsecond == 0
}

// pack maps d to an integer that orders as d does.
func (d Datetime) pack() int64 {
	v := int64(d.Year)*13 + int64(d.Month)
	v = v*32 + int64(d.Day)
	v = v*24 + int64(d.Hour)
	v = v*60 + int64(d.Minute)
	v = v*60 + int64(d.Second)
	return v*1e6 + int64(d.Microsecond)
}

func unpackDatetime(v int64) Datetime {
	var d Datetime
	d.Microsecond, v = int(v%1e6), v/1e6
	d.Second, v = int(v%60), v/60
	d.Minute, v = int(v%60), v/60
	d.Hour, v = int(v%24), v/24
	d.Day, v = int(v%32), v/32
	d.Month, d.Year = int(v%13), int(v/13)
	return d
}

// DatetimeValue is a DATE or DATETIME key; it fails on an invalid date.
func DatetimeValue(d Datetime) (Value, error) {
	if !d.valid() {
		return Value{}, fmt.Errorf("%s is not a valid date and time", d)
	}
	return Value{kind: KindDatetime, i: d.pack()}, nil
}

// Datetime returns the value of a KindDatetime.
func (v Value) Datetime() Datetime { return unpackDatetime(v.i) }

// convertDatetime: MySQL converts a constant compared with a DATE or
// DATETIME column to a datetime; it then matches only if the column type
// can hold exactly that instant.
func convertDatetime(col ColumnType, lit Literal) (Value, error) {
	var d Datetime
	switch lit.kind {
	case LitDatetime:
		d = lit.dt
	case LitString:
		var ok bool
		if d, ok = parseDatetime(lit.text); !ok {
			return Value{}, inexact("not a YYYY-MM-DD[ hh:mm:ss[.ffffff]] date")
		}
	default:
		return Value{}, inexact("a %s is not converted to a date here", lit.kind)
	}
	if !d.valid() {
		return Value{}, inexact("not a valid date")
	}
	if col.Class == ClassDate && !d.midnight() {
		return Value{}, inexact("a DATE holds no time of day")
	}
	if col.Class == ClassDatetime && d.Microsecond%pow10(6-clampFsp(col.Scale)) != 0 {
		return Value{}, inexact("more fractional digits than DATETIME(%d) holds", col.Scale)
	}
	return DatetimeValue(d)
}

func clampFsp(fsp int) int {
	return min(max(fsp, 0), 6)
}

func pow10(n int) int {
	p := 1
	for ; n > 0; n-- {
		p *= 10
	}
	return p
}

// parseDatetime accepts the unambiguous form 'YYYY-M-D', optionally followed
// by ' h:m:s' and '.f' (1 to 6 digits). Other spellings MySQL accepts
// ('20240105', '2024/01/05') are reported inexact rather than reimplemented.
func parseDatetime(s string) (Datetime, bool) {
	var d Datetime
	date, clock, hasClock := strings.Cut(s, " ")
	if !parseFields(date, "-", &d.Year, &d.Month, &d.Day) || len(date) < 8 || date[4] != '-' {
		return Datetime{}, false
	}
	if !hasClock {
		return d, true
	}
	clock, frac, hasFrac := strings.Cut(clock, ".")
	if !parseFields(clock, ":", &d.Hour, &d.Minute, &d.Second) {
		return Datetime{}, false
	}
	if hasFrac {
		if frac == "" || len(frac) > 6 || !allDigits(frac) {
			return Datetime{}, false
		}
		us, _ := strconv.Atoi(frac + strings.Repeat("0", 6-len(frac)))
		d.Microsecond = us
	}
	return d, true
}

func parseFields(s, sep string, dst ...*int) bool {
	parts := strings.Split(s, sep)
	if len(parts) != len(dst) {
		return false
	}
	for i, p := range parts {
		if p == "" || len(p) > 4 || !allDigits(p) {
			return false
		}
		*dst[i], _ = strconv.Atoi(p)
	}
	return true
}
