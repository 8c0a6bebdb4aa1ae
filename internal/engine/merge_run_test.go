package engine

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"vitess.io/vitess/go/sqltypes"
	"vitess.io/vitess/go/vt/sqlparser"
	"vitess.io/vitess/go/vt/vtgate/evalengine"

	"github.com/shardgate/shardgate/internal/mysql"
)

// fakeInput serves rows like the I/O side: each row in one reused
// buffer, overwritten by the next read, so a merge keeping a row it
// should have copied sees garbage.
type fakeInput struct {
	cols  []mysql.ColumnDef
	rows  [][]string // "NULL" is NULL
	next  int
	buf   []byte
	vals  []sqltypes.Value
	err   error // returned after the rows
	reads int
}

func (f *fakeInput) Next() ([]sqltypes.Value, bool, error) {
	f.reads++
	for i := range f.buf {
		f.buf[i] = '#'
	}
	if f.next == len(f.rows) {
		return nil, false, f.err
	}
	row := f.rows[f.next]
	f.next++
	f.buf, f.vals = f.buf[:0], f.vals[:0]
	for _, s := range row {
		if s != "NULL" {
			f.buf = append(f.buf, s...)
		}
	}
	at := 0
	for i, s := range row {
		if s == "NULL" {
			f.vals = append(f.vals, sqltypes.NULL)
			continue
		}
		t, _ := sqltypes.MySQLToType(f.cols[i].Type, int64(f.cols[i].Flags))
		f.vals = append(f.vals, sqltypes.MakeTrusted(t, f.buf[at:at+len(s)]))
		at += len(s)
	}
	return f.vals, true, nil
}

// fakeOutput records the rows sent, "NULL" for NULL, columns joined by
// "|"; Pass rows are marked with their input.
type fakeOutput struct {
	ins     []*fakeInput
	visible int
	got     []string
}

func (o *fakeOutput) Row(row []sqltypes.Value) error {
	o.got = append(o.got, rowText(row))
	return nil
}

func (o *fakeOutput) Pass(i int) error {
	o.got = append(o.got, rowText(o.ins[i].vals[:o.visible]))
	return nil
}

func rowText(row []sqltypes.Value) string {
	s := make([]string, len(row))
	for i, v := range row {
		if v.IsNull() {
			s[i] = "NULL"
		} else {
			s[i] = string(v.Raw())
		}
	}
	return strings.Join(s, "|")
}

// Column definitions for the tests.
func colDef(name string, typ byte, charset uint16, flags uint16, decimals byte) mysql.ColumnDef {
	return mysql.ColumnDef{Name: []byte(name), Type: typ, Charset: charset, Flags: flags, Decimals: decimals}
}

var (
	cInt      = colDef("i", mysql.TypeLongLong, 63, 0, 0)
	cUint     = colDef("u", mysql.TypeLongLong, 63, mysql.FlagUnsigned, 0)
	cDec2     = colDef("d", mysql.TypeNewDecimal, 63, 0, 2)
	cDec0     = colDef("s", mysql.TypeNewDecimal, 63, 0, 0)
	cDec4     = colDef("a", mysql.TypeNewDecimal, 63, 0, 4)
	cDouble   = colDef("f", mysql.TypeDouble, 63, 0, notFixedDecimals)
	cCI       = colDef("c", mysql.TypeVarString, 45, 0, 0) // utf8mb4_general_ci
	cBin      = colDef("b", mysql.TypeVarString, 63, mysql.FlagBinary, 0)
	cTime     = colDef("t", mysql.TypeTime, 63, 0, 0)
	cDatetime = colDef("dt", mysql.TypeDateTime, 63, 0, 0)
	cEnum     = colDef("e", mysql.TypeString, 45, mysql.FlagEnum, 0)
	cCount    = colDef("n", mysql.TypeLongLong, 63, 0, 0)
)

// splitRows reads "a|b" rows; an empty string is no rows.
func splitRows(rows ...string) [][]string {
	var out [][]string
	for _, r := range rows {
		out = append(out, strings.Split(r, "|"))
	}
	return out
}

// expr translates a SQL expression whose columns are named c0, c1... by
// their offsets in the combined row.
func expr(t *testing.T, sql string) evalengine.Expr {
	t.Helper()
	e, err := sqlparser.NewTestParser().ParseExpr(sql)
	if err != nil {
		t.Fatalf("parse %q: %v", sql, err)
	}
	ev, err := evalengine.Translate(e, &evalengine.Config{
		ResolveColumn: func(name *sqlparser.ColName) (int, error) {
			return strconv.Atoi(strings.TrimPrefix(name.Name.String(), "c"))
		},
		Collation:   45,
		Environment: mergeVtenv(),
	})
	if err != nil {
		t.Fatalf("translate %q: %v", sql, err)
	}
	return ev
}

type mergeCase struct {
	name   string
	cols   []mysql.ColumnDef
	spec   MergeSpec
	limit  []uint64 // offset, count
	inputs [][]string
	want   []string
	err    string // the error's text, when run fails
}

// fakeWeights gives every non-binary string column of a case without
// Weights the weight and space columns the planner adds (addWeights),
// as a shard computes them under a PAD SPACE, case-insensitive
// collation: the value upper-cased, and " ".
func fakeWeights(c mergeCase) mergeCase {
	if c.spec.Weights != nil {
		return c
	}
	var strs []int
	for i, col := range c.cols {
		if col.Charset != 63 && (col.Type == mysql.TypeVarString || col.Type == mysql.TypeString) && col.Flags&mysql.FlagEnum == 0 {
			strs = append(strs, i)
		}
	}
	if len(strs) == 0 {
		return c
	}
	n := len(c.cols)
	c.cols = append([]mysql.ColumnDef(nil), c.cols...)
	c.spec.Weights = make([]int, n+2*len(strs))
	for i := range c.spec.Weights {
		c.spec.Weights[i] = -1
	}
	for j, i := range strs {
		c.spec.Weights[i] = n + 2*j
		c.cols = append(c.cols, cBin, cBin)
	}
	c.spec.Hidden += 2 * len(strs)
	inputs := make([][]string, len(c.inputs))
	for k, rows := range c.inputs {
		for _, r := range rows {
			f := strings.Split(r, "|")
			for _, i := range strs {
				if f[i] == "NULL" {
					f = append(f, "NULL", " ")
				} else {
					f = append(f, fakeCI.Replace(strings.ToUpper(f[i])), " ")
				}
			}
			inputs[k] = append(inputs[k], strings.Join(f, "|"))
		}
	}
	c.inputs = inputs
	return c
}

// fakeCI folds the accents the tests use, as utf8mb4_general_ci does.
var fakeCI = strings.NewReplacer("É", "E")

func runMergeCase(t *testing.T, c mergeCase) ([]string, error) {
	t.Helper()
	c = fakeWeights(c)
	ins := make([]mergeInput, len(c.inputs))
	fakes := make([]*fakeInput, len(c.inputs))
	for i, rows := range c.inputs {
		var rs [][]string
		if len(rows) > 0 {
			rs = splitRows(rows...)
		}
		fakes[i] = &fakeInput{cols: c.cols, rows: rs}
		ins[i] = fakes[i]
	}
	spec := c.spec
	m := &Merge{Spec: &spec}
	if c.limit != nil {
		m.Offset, m.Count, m.HasLimit = c.limit[0], c.limit[1], true
	}
	out := &fakeOutput{ins: fakes, visible: len(c.cols) - spec.Hidden}
	err := m.run(c.cols, ins, out)
	return out.got, err
}

func checkMergeCases(t *testing.T, cases []mergeCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := runMergeCase(t, c)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				if len(got) != 0 {
					t.Fatalf("rows before the error: %q", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(c.want, "\n  "))
			}
		})
	}
}

func in(rows ...string) []string { return rows }

func TestMergeOrder(t *testing.T) {
	asc := []SortKey{{Col: 0}}
	desc := []SortKey{{Col: 0, Desc: true}}
	checkMergeCases(t, []mergeCase{
		{name: "signed extremes, NULL first, ties in input order",
			cols: []mysql.ColumnDef{cInt, cInt}, spec: MergeSpec{Order: asc},
			inputs: [][]string{in("NULL|0", "-9223372036854775808|0", "-2|0", "10|0"), in("-10|1", "-2|1", "9|1", "9223372036854775807|1"), in("NULL|2", "2|2")},
			want:   []string{"NULL|0", "NULL|2", "-9223372036854775808|0", "-10|1", "-2|0", "-2|1", "2|2", "9|1", "10|0", "9223372036854775807|1"}},
		{name: "descending, NULL last",
			cols: []mysql.ColumnDef{cUint}, spec: MergeSpec{Order: desc},
			inputs: [][]string{in("18446744073709551615", "9", "NULL"), in("10", "0")},
			want:   []string{"18446744073709551615", "10", "9", "0", "NULL"}},
		{name: "decimal scales and negative zero",
			cols: []mysql.ColumnDef{cDec2, cInt}, spec: MergeSpec{Order: []SortKey{{Col: 0}, {Col: 1}}},
			inputs: [][]string{in("-10.50|1", "-0.00|1", "0.01|1", "99999999999999999999.99|1"), in("-10.5|2", "-1.25|2", "0.00|2", "0.10|2", "5|2")},
			want:   []string{"-10.50|1", "-10.5|2", "-1.25|2", "-0.00|1", "0.00|2", "0.01|1", "0.10|2", "5|2", "99999999999999999999.99|1"}},
		{name: "doubles by value",
			cols: []mysql.ColumnDef{cDouble}, spec: MergeSpec{Order: asc},
			inputs: [][]string{in("-1e20", "0.30000000000000004", "1e15"), in("-0.000025", "2", "1.5e16")},
			want:   []string{"-1e20", "-0.000025", "0.30000000000000004", "2", "1e15", "1.5e16"}},
		{name: "general_ci: case and trailing spaces tie, input order kept",
			cols: []mysql.ColumnDef{cCI, cInt}, spec: MergeSpec{Order: asc},
			inputs: [][]string{in("a|0", "B|0", "é|0"), in("A|1", "a |1", "b|1", "z|1")},
			want:   []string{"a|0", "A|1", "a |1", "B|0", "b|1", "é|0", "z|1"}},
		{name: "PAD SPACE: a tab sorts before the padding",
			cols: []mysql.ColumnDef{cCI}, spec: MergeSpec{Order: asc},
			inputs: [][]string{in("a", "ab"), in("a\t", "a\tb", "a  ")},
			want:   []string{"a\t", "a\tb", "a", "a  ", "ab"}},
		{name: "binary strings bytewise",
			cols: []mysql.ColumnDef{cBin}, spec: MergeSpec{Order: asc},
			inputs: [][]string{in("B", "a"), in("A", "a ", "b")},
			want:   []string{"A", "B", "a", "a ", "b"}},
		{name: "TIME: sign and wide hours",
			cols: []mysql.ColumnDef{cTime}, spec: MergeSpec{Order: asc},
			inputs: [][]string{in("-838:59:59", "-01:00:00", "09:00:00", "100:00:00"), in("-00:00:01", "00:00:00", "10:00:00")},
			want:   []string{"-838:59:59", "-01:00:00", "-00:00:01", "00:00:00", "09:00:00", "10:00:00", "100:00:00"}},
		{name: "DATETIME with zero dates",
			cols: []mysql.ColumnDef{cDatetime}, spec: MergeSpec{Order: desc},
			inputs: [][]string{in("2024-01-02 00:00:00", "0000-00-00 00:00:00"), in("2025-12-31 23:59:59", "2024-01-01 23:59:59")},
			want:   []string{"2025-12-31 23:59:59", "2024-01-02 00:00:00", "2024-01-01 23:59:59", "0000-00-00 00:00:00"}},
		{name: "hidden sort key",
			cols: []mysql.ColumnDef{cCI, cInt}, spec: MergeSpec{Order: []SortKey{{Col: 1, Desc: true}}, Hidden: 1},
			inputs: [][]string{in("x|3", "y|1"), in("z|2")},
			want:   []string{"x", "z", "y"}},
		{name: "empty inputs",
			cols: []mysql.ColumnDef{cInt}, spec: MergeSpec{Order: asc},
			inputs: [][]string{in(), in("1"), in()},
			want:   []string{"1"}},
		{name: "no inputs at all",
			cols: []mysql.ColumnDef{cInt}, spec: MergeSpec{Order: asc},
			want: nil},
	})
}

func TestMergeLimit(t *testing.T) {
	inputs := [][]string{in("1", "4", "7"), in("2", "5"), in("3", "6")}
	cols := []mysql.ColumnDef{cInt}
	spec := MergeSpec{Order: []SortKey{{Col: 0}}}
	checkMergeCases(t, []mergeCase{
		{name: "offset and count", cols: cols, spec: spec, inputs: inputs, limit: []uint64{2, 3}, want: []string{"3", "4", "5"}},
		{name: "count past the end", cols: cols, spec: spec, inputs: inputs, limit: []uint64{5, 10}, want: []string{"6", "7"}},
		{name: "offset past the end", cols: cols, spec: spec, inputs: inputs, limit: []uint64{7, 10}, want: nil},
		{name: "LIMIT 0", cols: cols, spec: spec, inputs: inputs, limit: []uint64{0, 0}, want: nil},
		{name: "limit on composed rows", cols: cols, spec: MergeSpec{Order: spec.Order, Groups: 1},
			inputs: [][]string{in("1", "2", "2"), in("1", "3")}, limit: []uint64{1, 1}, want: []string{"2"}},
	})
}

// TestMergeStopsAtLimit: once LIMIT's rows are out, run returns without
// reading the inputs to their end.
func TestMergeStopsAtLimit(t *testing.T) {
	a := &fakeInput{cols: []mysql.ColumnDef{cInt}, rows: splitRows("1", "2", "3", "4", "5")}
	m := &Merge{Spec: &MergeSpec{Order: []SortKey{{Col: 0}}}, Count: 2, HasLimit: true}
	out := &fakeOutput{ins: []*fakeInput{a}, visible: 1}
	if err := m.run([]mysql.ColumnDef{cInt}, []mergeInput{a}, out); err != nil {
		t.Fatal(err)
	}
	if strings.Join(out.got, ",") != "1,2" || a.reads != 2 {
		t.Fatalf("got %q after %d reads, want 1,2 after 2", out.got, a.reads)
	}
}

func TestMergeInputErrorUnchanged(t *testing.T) {
	boom := errors.New("shard 2 went away")
	a := &fakeInput{cols: []mysql.ColumnDef{cInt}, rows: splitRows("1"), err: boom}
	m := &Merge{Spec: &MergeSpec{Order: []SortKey{{Col: 0}}}}
	err := m.run([]mysql.ColumnDef{cInt}, []mergeInput{a}, &fakeOutput{ins: []*fakeInput{a}, visible: 1})
	if err != boom {
		t.Fatalf("err = %v, want the input's", err)
	}
}

func TestMergeGroups(t *testing.T) {
	byKey := []SortKey{{Col: 0}}
	checkMergeCases(t, []mergeCase{
		{name: "count, sum, min, max per group; _ci keys are one group with the first spelling",
			cols: []mysql.ColumnDef{cCI, cCount, cDec2, cCI, cCI},
			spec: MergeSpec{Order: byKey, Groups: 1, Aggregates: []Aggregate{
				{Kind: AggCount, Col: 1}, {Kind: AggSum, Col: 2}, {Kind: AggMin, Col: 3}, {Kind: AggMax, Col: 4}}},
			inputs: [][]string{in("a|2|1.50|x|x", "b|1|NULL|NULL|NULL"), in("A|3|-0.25|W|W", "B|1|NULL|NULL|NULL", "c|1|-5.00|m|m")},
			want:   []string{"a|5|1.25|W|x", "b|2|NULL|NULL|NULL", "c|1|-5.00|m|m"}},
		{name: "MIN and MAX take their With columns from the winning row; over NULLs the group's first row's",
			cols: []mysql.ColumnDef{cInt, cInt, cInt, cInt, cInt},
			spec: MergeSpec{Order: byKey, Groups: 1, Aggregates: []Aggregate{
				{Kind: AggMax, Col: 1, With: []int{2}}, {Kind: AggMin, Col: 3, With: []int{4}}}},
			inputs: [][]string{in("1|5|50|3|30", "2|NULL|7|NULL|8"), in("1|9|90|1|10", "2|NULL|9|NULL|9")},
			want:   []string{"1|9|90|1|10", "2|NULL|7|NULL|8"}},
		{name: "sum past int64 and decimal scale",
			cols:   []mysql.ColumnDef{cInt, cDec0, cDec2},
			spec:   MergeSpec{Order: byKey, Groups: 1, Aggregates: []Aggregate{{Kind: AggSum, Col: 1}, {Kind: AggSum, Col: 2}}},
			inputs: [][]string{in("1|9223372036854775807|92233720368547758.07", "2|-1|-0.01"), in("1|9223372036854775807|92233720368547758.07", "2|-2|-0.02")},
			want:   []string{"1|18446744073709551614|184467440737095516.14", "2|-3|-0.03"}},
		{name: "double sums stay doubles",
			cols:   []mysql.ColumnDef{cInt, cDouble},
			spec:   MergeSpec{Order: byKey, Groups: 1, Aggregates: []Aggregate{{Kind: AggSum, Col: 1}}},
			inputs: [][]string{in("1|0.1", "2|1e15"), in("1|0.2", "2|1e15")},
			want:   []string{"1|0.30000000000000004", "2|2e15"}},
		{name: "bit operations",
			cols:   []mysql.ColumnDef{cInt, cUint, cUint, cUint},
			spec:   MergeSpec{Order: byKey, Groups: 1, Aggregates: []Aggregate{{Kind: AggBitAnd, Col: 1}, {Kind: AggBitOr, Col: 2}, {Kind: AggBitXor, Col: 3}}},
			inputs: [][]string{in("1|18446744073709551615|1|3"), in("1|12|8|5")},
			want:   []string{"1|12|9|6"}},
		{name: "count and sum distinct: equal values across shards count once, NULL not at all",
			cols: []mysql.ColumnDef{cInt, cCount, cDec0, cCI},
			spec: MergeSpec{Order: []SortKey{{Col: 0}, {Col: 3}}, Groups: 1, Hidden: 1, Aggregates: []Aggregate{
				{Kind: AggCountDistinct, Col: 1, Arg: 3}, {Kind: AggSumDistinct, Col: 2, Arg: 3}}},
			inputs: [][]string{in("1|1|0|NULL", "1|1|0|5", "1|1|0|7", "2|1|0|1"), in("1|1|0|5", "1|1|0|7", "1|1|0|8")},
			want:   []string{"1|3|20", "2|1|1"}},
		{name: "count distinct under _ci",
			cols:   []mysql.ColumnDef{cInt, cCount, cCI},
			spec:   MergeSpec{Order: []SortKey{{Col: 0}, {Col: 2}}, Groups: 1, Hidden: 1, Aggregates: []Aggregate{{Kind: AggCountDistinct, Col: 1, Arg: 2}}},
			inputs: [][]string{in("1|1|a", "1|1|b"), in("1|1|A", "1|1|B ", "1|1|c")},
			want:   []string{"1|3"}},
		{name: "one group of all rows",
			cols:   []mysql.ColumnDef{cCount, cDec2, cInt},
			spec:   MergeSpec{Groups: -1, Aggregates: []Aggregate{{Kind: AggCount, Col: 0}, {Kind: AggSum, Col: 1}, {Kind: AggMax, Col: 2}}},
			inputs: [][]string{in("2|1.00|5"), in("0|NULL|NULL"), in("1|2.5|-3")},
			want:   []string{"3|3.50|5"}},
		{name: "zero-row aggregate is one row",
			cols:   []mysql.ColumnDef{cCount, cDec2, cInt, cUint, cCI},
			spec:   MergeSpec{Groups: -1, Aggregates: []Aggregate{{Kind: AggCount, Col: 0}, {Kind: AggSum, Col: 1}, {Kind: AggMin, Col: 2}, {Kind: AggBitAnd, Col: 3}}}, // column 4: its first row's, NULL with none
			inputs: [][]string{in(), in()},
			want:   []string{"0|NULL|NULL|18446744073709551615|NULL"}},
		{name: "grouped with no rows is no rows",
			cols:   []mysql.ColumnDef{cInt, cCount},
			spec:   MergeSpec{Order: byKey, Groups: 1, Aggregates: []Aggregate{{Kind: AggCount, Col: 1}}},
			inputs: [][]string{in(), in()},
			want:   nil},
		{name: "DISTINCT rows under _ci",
			cols:   []mysql.ColumnDef{cCI, cInt},
			spec:   MergeSpec{Order: []SortKey{{Col: 0}, {Col: 1}}, Groups: 2},
			inputs: [][]string{in("a|1", "a|2", "b|1"), in("A|1", "a |2", "c|1")},
			want:   []string{"a|1", "a|2", "b|1", "c|1"}},
	})
}

func TestMergeComputedHavingFinal(t *testing.T) {
	// g, COUNT(*), AVG(x) (the shards' own, for its type), hidden SUM(x), COUNT(x)
	avgCols := []mysql.ColumnDef{cInt, cCount, cDec4, cDec0, cCount}
	avgSpec := MergeSpec{Order: []SortKey{{Col: 0}}, Groups: 1, Hidden: 2,
		Aggregates: []Aggregate{{Kind: AggCount, Col: 1}, {Kind: AggSum, Col: 3}, {Kind: AggCount, Col: 4}},
		Computed:   []ComputedColumn{{Col: 2, Expr: expr(t, "c3 / c4")}}}
	avgInputs := [][]string{in("1|2|0|3|2", "2|1|0|-1|1", "3|1|0|1|1", "4|1|NULL|NULL|0"), in("1|1|0|2|1", "2|2|0|-4|2", "3|2|0|1|2")}
	withHaving := avgSpec
	withHaving.Having = expr(t, "c1 >= 3 and c3 > 0")
	final := avgSpec
	final.Final = []SortKey{{Col: 1, Desc: true}}
	finalHidden := avgSpec
	finalHidden.Final = []SortKey{{Col: 3}} // by SUM(x), a hidden column
	checkMergeCases(t, []mergeCase{
		// 5/3 = 1.66666.. ; -5/3 = -1.6666.. ; 2/3 rounds half away from zero at the 4th decimal
		{name: "AVG from SUM and COUNT", cols: avgCols, spec: avgSpec, inputs: avgInputs,
			want: []string{"1|3|1.6667", "2|3|-1.6667", "3|3|0.6667", "4|1|NULL"}},
		{name: "HAVING", cols: avgCols, spec: withHaving, inputs: avgInputs,
			want: []string{"1|3|1.6667", "3|3|0.6667"}},
		{name: "final order, ties in arrival order", cols: avgCols, spec: final, inputs: avgInputs,
			want: []string{"1|3|1.6667", "2|3|-1.6667", "3|3|0.6667", "4|1|NULL"}},
		{name: "final order on a hidden column, NULL first", cols: avgCols, spec: finalHidden, inputs: avgInputs,
			want: []string{"4|1|NULL", "2|3|-1.6667", "3|3|0.6667", "1|3|1.6667"}},
		{name: "final order under LIMIT", cols: avgCols, spec: finalHidden, inputs: avgInputs, limit: []uint64{1, 2},
			want: []string{"2|3|-1.6667", "3|3|0.6667"}},
		{name: "final order under LIMIT keeps ties' arrival order", cols: avgCols, spec: final, inputs: avgInputs, limit: []uint64{1, 2},
			want: []string{"2|3|-1.6667", "3|3|0.6667"}},
		{name: "integer and decimal arithmetic",
			cols: []mysql.ColumnDef{cInt, cCount, cDec2, cDec2, cDec2},
			spec: MergeSpec{Order: []SortKey{{Col: 0}}, Groups: 1, Hidden: 2,
				Aggregates: []Aggregate{{Kind: AggCount, Col: 1}, {Kind: AggSum, Col: 3}, {Kind: AggSum, Col: 4}},
				Computed:   []ComputedColumn{{Col: 1, Expr: expr(t, "c1 * 2")}, {Col: 2, Expr: expr(t, "c3 - c4")}}},
			inputs: [][]string{in("1|1|0|1.25|2.00"), in("1|2|0|0.50|NULL")},
			want:   []string{"1|6|-0.25"}},
		{name: "an integer column rounds a computed decimal half away from zero",
			cols: []mysql.ColumnDef{cInt, cCount},
			spec: MergeSpec{Groups: -1, Hidden: 1, Aggregates: []Aggregate{{Kind: AggCount, Col: 1}},
				Computed: []ComputedColumn{{Col: 0, Expr: expr(t, "c1 / 2")}}},
			inputs: [][]string{in("0|2"), in("0|3")},
			want:   []string{"3"}},
		{name: "double average",
			cols: []mysql.ColumnDef{cDouble, cDouble, cCount},
			spec: MergeSpec{Groups: -1, Hidden: 2, Aggregates: []Aggregate{{Kind: AggSum, Col: 1}, {Kind: AggCount, Col: 2}},
				Computed: []ComputedColumn{{Col: 0, Expr: expr(t, "c1 / c2")}}},
			inputs: [][]string{in("0|1e15|1"), in("0|1e15|2")},
			want:   []string{"666666666666666.6"}},
	})
}

func TestMergeBudget(t *testing.T) {
	var rows []string
	for i := range 200 {
		rows = append(rows, fmt.Sprintf("%d|%d", i, i%7))
	}
	c := mergeCase{name: "budget", cols: []mysql.ColumnDef{cInt, cInt},
		spec:   MergeSpec{Order: []SortKey{{Col: 0}}, Groups: 1, Final: []SortKey{{Col: 1}}, Budget: 4096},
		inputs: [][]string{rows}}
	_, err := runMergeCase(t, c)
	var se *mysql.SQLError
	if !errors.As(err, &se) || se.Code != mysql.EROutOfSortMemory || se.State != "HY001" || !strings.Contains(se.Message, "merge_memory") {
		t.Fatalf("err = %v, want 1038 (HY001) naming merge_memory", err)
	}
	// Under a LIMIT only Offset+Count rows are held: the same budget holds.
	c.limit = []uint64{2, 3}
	got, err := runMergeCase(t, c)
	if err != nil || strings.Join(got, ",") != "14|0,21|0,28|0" {
		t.Fatalf("got %q, %v", got, err)
	}
	// With Spill, past the budget the sort writes runs to a file: the
	// same rows as sorted in memory, ties in arrival order, NULLs too.
	rows = append(rows, "200|NULL", "201|NULL")
	c = mergeCase{name: "spill", cols: []mysql.ColumnDef{cInt, cInt},
		spec:   MergeSpec{Order: []SortKey{{Col: 0}}, Groups: 1, Final: []SortKey{{Col: 1, Desc: true}}, Budget: 1 << 30},
		inputs: [][]string{rows}}
	want, err := runMergeCase(t, c)
	if err != nil || len(want) != 202 {
		t.Fatalf("in memory: %d rows, %v", len(want), err)
	}
	c.spec.Budget, c.spec.Spill = 2048, true
	got, err = runMergeCase(t, c)
	if err != nil || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("spilled: %v\n got %q\nwant %q", err, got, want)
	}
}

func TestMergeRefusesWhatItCannotOrder(t *testing.T) {
	none := []int{-1, -1}
	checkMergeCases(t, []mergeCase{
		{name: "ENUM", cols: []mysql.ColumnDef{cEnum}, spec: MergeSpec{Order: []SortKey{{Col: 0}}},
			inputs: [][]string{in("b", "a")}, err: "ERROR 1235 (42000): This version of shardgate doesn't yet support 'ORDER BY, GROUP BY, DISTINCT or MIN/MAX across shards on the ENUM or SET column `e`"},
		{name: "a string without weights", cols: []mysql.ColumnDef{cCI}, spec: MergeSpec{Order: []SortKey{{Col: 0}}, Weights: none[:1]},
			inputs: [][]string{in("b", "a")}, err: "the string `c` computed from several shards' values"},
		{name: "MIN of an ENUM", cols: []mysql.ColumnDef{cEnum}, spec: MergeSpec{Groups: -1, Aggregates: []Aggregate{{Kind: AggMin, Col: 0}}},
			inputs: [][]string{in("b")}, err: "1235"},
		{name: "final order by a computed string", cols: []mysql.ColumnDef{cInt, cCI}, spec: MergeSpec{Order: []SortKey{{Col: 0}}, Final: []SortKey{{Col: 1}}, Weights: none},
			inputs: [][]string{in("1|b")}, err: "1235"},
	})
	// A case-sensitive collation (utf8mb4_bin): the weights are the
	// characters' own, and NO PAD ones have no space weight.
	checkMergeCases(t, []mergeCase{
		{name: "utf8mb4_bin by its weights", cols: []mysql.ColumnDef{cCI, cBin, cBin}, spec: MergeSpec{Order: []SortKey{{Col: 0}}, Hidden: 2, Weights: []int{1, -1, -1}},
			inputs: [][]string{in("B|B| ", "a|a| "), in("A|A| ", "b|b| ")}, want: []string{"A", "B", "a", "b"}},
		{name: "PAD SPACE: a tab sorts before the padding", cols: []mysql.ColumnDef{cCI, cBin, cBin}, spec: MergeSpec{Order: []SortKey{{Col: 0}}, Hidden: 2, Weights: []int{1, -1, -1}},
			inputs: [][]string{in("a|a| "), in("a\t|a\t| ", "a |a | ")}, want: []string{"a\t", "a", "a "}},
		{name: "NO PAD: trailing spaces count", cols: []mysql.ColumnDef{cCI, cBin, cBin}, spec: MergeSpec{Order: []SortKey{{Col: 0}}, Groups: 1, Hidden: 2, Weights: []int{1, -1, -1}},
			inputs: [][]string{in("a|a|", "a |a |")}, want: []string{"a", "a "}},
	})
}

func TestAppendDouble(t *testing.T) {
	// Texts MariaDB 10.11 prints for these doubles.
	for _, c := range []struct {
		f    float64
		want string
	}{
		{0, "0"}, {-2.5, "-2.5"}, {1e20, "1e20"}, {1.2345678901234568e20, "1.2345678901234568e20"},
		{1.5e-7, "0.00000015"}, {1e-15, "0.000000000000001"}, {1e-16, "1e-16"}, {1.5e-15, "0.0000000000000015"},
		{1e15, "1e15"}, {9.87654321e14, "987654321000000"}, {1234567890123456.8, "1234567890123456.8"},
		{1.2345678901234568e16, "1.2345678901234568e16"}, {9.87654321e15, "9.87654321e15"},
		{0.30000000000000004, "0.30000000000000004"}, {-1.5e-300, "-1.5e-300"}, {123456789012345, "123456789012345"},
	} {
		if got := string(appendDouble(nil, c.f, notFixedDecimals)); got != c.want {
			t.Errorf("appendDouble(%v) = %q, want %q", c.f, got, c.want)
		}
	}
	if got := string(appendDouble(nil, 2.675, 2)); got != "2.67" { // 2.675 is 2.67499999...
		t.Errorf("fixed: %q", got)
	}
}

// TestMergeRejectsBadSpecs: a spec naming columns the rows do not have
// is a planner's bug, reported as an error, never a panic.
func TestMergeRejectsBadSpecs(t *testing.T) {
	cols := []mysql.ColumnDef{cInt, cInt}
	rows := [][]string{in("1|2")}
	checkMergeCases(t, []mergeCase{
		{name: "sort key", cols: cols, spec: MergeSpec{Order: []SortKey{{Col: 2}}}, inputs: rows, err: "merge: column 2 of a row of 2"},
		{name: "final key", cols: cols, spec: MergeSpec{Final: []SortKey{{Col: -1}}}, inputs: rows, err: "merge: column -1"},
		{name: "group keys", cols: cols, spec: MergeSpec{Order: []SortKey{{Col: 0}}, Groups: 2}, inputs: rows, err: "2 group keys but 1 sort keys"},
		{name: "aggregate", cols: cols, spec: MergeSpec{Groups: -1, Aggregates: []Aggregate{{Kind: AggSum, Col: 5}}}, inputs: rows, err: "aggregate 2 of column 5"},
		{name: "aggregate kind", cols: cols, spec: MergeSpec{Groups: -1, Aggregates: []Aggregate{{Col: 0}}}, inputs: rows, err: "aggregate 0 of column 0"},
		{name: "distinct argument", cols: cols, spec: MergeSpec{Groups: -1, Aggregates: []Aggregate{{Kind: AggCountDistinct, Col: 0, Arg: 9}}}, inputs: rows, err: "column 9"},
		{name: "computed", cols: cols, spec: MergeSpec{Groups: -1, Computed: []ComputedColumn{{Col: 3, Expr: expr(t, "c0")}}}, inputs: rows, err: "computed column 3"},
		{name: "hidden", cols: cols, spec: MergeSpec{Hidden: 3}, inputs: rows, err: "3 hidden columns in a row of 2"},
		{name: "row width", cols: cols, spec: MergeSpec{}, inputs: [][]string{in("1")}, err: "part 0 sent a row of 1 columns, want 2"},
	})
}

// TestCompareIntText: integers as the server writes them compare as
// numbers, as the decimal comparison does.
func TestCompareIntText(t *testing.T) {
	vals := []string{"-9223372036854775808", "-100", "-99", "-1", "0", "1", "9", "10", "99", "100", "18446744073709551615"}
	for i, a := range vals {
		for j, b := range vals {
			want := compareDecimalText([]byte(a), []byte(b))
			if got := compareIntText([]byte(a), []byte(b)); (got < 0) != (want < 0) || (got > 0) != (want > 0) || (got < 0) != (i < j) && i != j {
				t.Errorf("%s <=> %s: %d, want %d", a, b, got, want)
			}
		}
	}
}
