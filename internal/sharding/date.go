package sharding

import (
	"fmt"
	"time"
)

// DateUnit is the period a date rule counts in.
type DateUnit uint8

const (
	Year DateUnit = iota + 1
	Month
	Day
)

// Periods is one sub-table's periods, First to Last inclusive, as period
// numbers from ParsePeriod.
type Periods struct{ First, Last int64 }

// Date places a DATE or DATETIME key on the sub-table whose periods contain
// its year, month or day. A key in no configured period is ErrNoSubTable;
// NULL goes to the sub-table holding the earliest periods.
type Date struct {
	unit    DateUnit
	periods []Periods
	null    int
}

// NewDate validates one run of periods per sub-table: non-empty and
// non-overlapping.
func NewDate(unit DateUnit, periods []Periods) (*Date, error) {
	bounds := make([]Bound, len(periods))
	for i, p := range periods {
		if p.First > p.Last {
			return nil, fmt.Errorf("sub-table %d: first period is after the last", i)
		}
		bounds[i] = Bound{Start: IntValue(p.First), End: IntValue(p.Last + 1), HasStart: true, HasEnd: true}
	}
	r, err := NewRange(bounds)
	if err != nil {
		return nil, err
	}
	return &Date{unit: unit, periods: periods, null: r.null}, nil
}

// ParsePeriod reads a period as configured: "2024" (Year), "2024-01"
// (Month) or "2024-01-05" (Day).
func ParsePeriod(unit DateUnit, s string) (int64, error) {
	layout := map[DateUnit]string{Year: "2006", Month: "2006-01", Day: "2006-01-02"}[unit]
	t, err := time.Parse(layout, s)
	if err != nil {
		return 0, fmt.Errorf("period %q: want %s", s, layout)
	}
	return period(unit, Datetime{Year: t.Year(), Month: int(t.Month()), Day: t.Day()}), nil
}

// period numbers years as themselves, months as year*12+month-1 and days
// as days since 1970-01-01, so consecutive periods are consecutive numbers.
func period(unit DateUnit, d Datetime) int64 {
	switch unit {
	case Year:
		return int64(d.Year)
	case Month:
		return int64(d.Year)*12 + int64(d.Month) - 1
	}
	return time.Date(d.Year, time.Month(d.Month), d.Day, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

func (r *Date) SubTables() int { return len(r.periods) }

func (r *Date) Index(v Value) (int, error) {
	switch v.kind {
	case KindNull:
		return r.null, nil
	case KindDatetime:
		p := period(r.unit, v.Datetime())
		for i, ps := range r.periods {
			if p >= ps.First && p <= ps.Last {
				return i, nil
			}
		}
		return 0, fmt.Errorf("key %s: %w", v, ErrNoSubTable)
	}
	return 0, fmt.Errorf("date rule: key %s is not a date", v)
}

// Prune keeps the sub-tables whose periods meet the periods of iv's ends
// (inclusive on both sides: a superset is safe).
func (r *Date) Prune(iv Interval) (Set, error) {
	lo, hi := int64(-1<<62), int64(1<<62)
	if iv.HasLo {
		if iv.Lo.kind != KindDatetime {
			return FullSet(len(r.periods)), nil
		}
		lo = period(r.unit, iv.Lo.Datetime())
	}
	if iv.HasHi {
		if iv.Hi.kind != KindDatetime {
			return FullSet(len(r.periods)), nil
		}
		hi = period(r.unit, iv.Hi.Datetime())
	}
	s := NewSet(len(r.periods))
	for i, ps := range r.periods {
		if ps.First <= hi && ps.Last >= lo {
			s.Add(i)
		}
	}
	return s, nil
}
