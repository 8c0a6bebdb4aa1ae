package engine

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"vitess.io/vitess/go/mysql/collations"
	"vitess.io/vitess/go/mysql/decimal"
	"vitess.io/vitess/go/sqltypes"
	"vitess.io/vitess/go/vt/vtenv"
	"vitess.io/vitess/go/vt/vtgate/evalengine"

	"github.com/shardgate/shardgate/internal/mysql"
)

// run is the row pipeline of a Merge (see merge.go): a k-way merge of the
// inputs by Spec.Order, then grouping and aggregates, computed columns,
// HAVING, DISTINCT, the final order and LIMIT. Rows passing unchanged
// (a plain ORDER BY) go out with out.Pass; out.Row's row is valid only
// during the call.
func (m *Merge) run(cols []mysql.ColumnDef, in []mergeInput, out mergeOutput) error {
	r, err := newMergeRun(m, cols, in, out)
	if err != nil {
		return err
	}
	if m.HasLimit && m.Count == 0 {
		return nil
	}
	return r.run()
}

// mergeRun is one execution of a merge.
type mergeRun struct {
	m       *Merge
	spec    *MergeSpec
	cols    []mysql.ColumnDef
	in      []mergeInput
	out     mergeOutput
	visible int
	cmps    []colCmp // by part column
	// weighted are the columns that compare by weights: each learns the
	// weight of a space from the first row.
	weighted []int
	order    []keyCmp
	groups   []keyCmp // the group keys: a prefix of order

	rows [][]sqltypes.Value // each input's current row
	heap []int              // inputs with a current row, smallest first

	// pass: rows go out unchanged; else each row or group is combined.
	pass     bool
	combined ownedRow
	hasGroup bool
	accums   []accum
	computed [][]byte // each computed column's text
	types    []sqltypes.Type
	formats  []numFormat
	env      *evalengine.ExpressionEnv
	sorter   *finalSorter
	// looseText are the string constants evaluated expressions read as
	// numbers, checked in the first group (their value is every group's).
	looseText []int

	skip, left uint64 // LIMIT: rows still to skip, to send
}

func newMergeRun(m *Merge, cols []mysql.ColumnDef, in []mergeInput, out mergeOutput) (*mergeRun, error) {
	s := m.Spec
	// The run is the Merge's own, its buffers kept from one execution to
	// the next.
	r := &m.runBuf
	rows, heap := r.rows[:0], r.heap[:0]
	*r = mergeRun{m: m, spec: s, cols: cols, in: in, out: out, visible: len(cols) - s.Hidden,
		skip: m.Offset, left: m.Count}
	for range in {
		rows = append(rows, nil)
	}
	r.rows, r.heap = rows, heap
	if r.visible < 0 {
		return nil, fmt.Errorf("merge: %d hidden columns in a row of %d", s.Hidden, len(cols))
	}
	if s.passesRows() {
		r.pass = true // nothing to compare, combine or format
		return r, nil
	}
	r.cmps = make([]colCmp, len(cols))
	for i := range cols {
		r.cmps[i] = newColCmp(&cols[i], r.weight(i))
		if w := r.cmps[i].weight; w >= 0 {
			if w+1 >= len(cols) {
				return nil, fmt.Errorf("merge: column %d's weight in column %d of a row of %d", i, w, len(cols))
			}
			r.weighted = append(r.weighted, i)
		}
	}
	var err error
	if r.order, err = r.keys(s.Order); err != nil {
		return nil, err
	}
	switch {
	case s.Groups > len(s.Order):
		return nil, fmt.Errorf("merge: %d group keys but %d sort keys", s.Groups, len(s.Order))
	case s.Groups > 0:
		r.groups = r.order[:s.Groups]
	}
	if err := r.prepareCombine(); err != nil {
		return nil, err
	}
	return r, nil
}

// sortedDistinct is the column a group's rows come sorted by after the
// group keys: the first DISTINCT aggregate's argument (-1: none).
func (r *mergeRun) sortedDistinct() int {
	first := max(r.spec.Groups, 0)
	if first < len(r.spec.Order) {
		return r.spec.Order[first].Col
	}
	return -1
}

// arrivesIn reports whether a group's rows arrive sorted by keys: Order
// lists them right after the group keys.
func (r *mergeRun) arrivesIn(keys []SortKey) bool {
	first := max(r.spec.Groups, 0)
	return first+len(keys) <= len(r.spec.Order) && slices.Equal(r.spec.Order[first:first+len(keys)], keys)
}

// budget is the memory the merge may hold for what it cannot stream.
func (r *mergeRun) budget() int64 { return r.m.budget() }

// weight is the column holding column i's collation weight, or -1.
func (r *mergeRun) weight(i int) int {
	if i < len(r.spec.Weights) {
		return r.spec.Weights[i]
	}
	return -1
}

// keys resolves sort keys, refusing a column the merge cannot order: a
// string column compares by its weight's column.
func (r *mergeRun) keys(ks []SortKey) ([]keyCmp, error) {
	out := make([]keyCmp, len(ks))
	for i, k := range ks {
		c, err := r.cmp(k.Col)
		if err != nil {
			return nil, err
		}
		out[i] = keyCmp{col: c.at(k.Col), desc: k.Desc, cmp: c}
	}
	return out, nil
}

// cmp is column i's comparison, or the refusal when it has none.
func (r *mergeRun) cmp(i int) (*colCmp, error) {
	if i < 0 || i >= len(r.cmps) {
		return nil, fmt.Errorf("merge: column %d of a row of %d", i, len(r.cmps))
	}
	if err := r.cmps[i].err; err != nil {
		return nil, notComparable(err)
	}
	return &r.cmps[i], nil
}

// prepareCombine readies what a merge that combines rows needs: the
// aggregates, the computed columns' formats, the final order.
func (r *mergeRun) prepareCombine() error {
	s := r.spec
	r.pass = s.Groups == 0 && len(s.Aggregates) == 0 && len(s.Computed) == 0 && s.Having == nil &&
		len(s.Final) == 0
	if r.pass {
		return nil
	}
	r.types = make([]sqltypes.Type, len(r.cols))
	r.formats = make([]numFormat, len(r.cols))
	for i := range r.cols {
		c := &r.cols[i]
		t, err := sqltypes.MySQLToType(c.Type, int64(c.Flags))
		if err != nil {
			t = sqltypes.VarBinary
		}
		r.types[i], r.formats[i] = t, columnFormat(c)
	}
	r.accums = make([]accum, 0, len(s.Aggregates))
	for _, a := range s.Aggregates {
		if a.Col < 0 || a.Col >= len(r.cols) || a.Kind < AggCount || a.Kind > AggGroupConcat {
			return fmt.Errorf("merge: aggregate %d of column %d of a row of %d", a.Kind, a.Col, len(r.cols))
		}
		for _, c := range a.With {
			if c < 0 || c >= len(r.cols) || a.Kind != AggMin && a.Kind != AggMax {
				return fmt.Errorf("merge: aggregate %d taking column %d of a row of %d", a.Kind, c, len(r.cols))
			}
		}
		acc := accum{Aggregate: a, typ: r.types[a.Col], format: r.formats[a.Col], by: -1}
		var err error
		switch a.Kind {
		case AggMin, AggMax:
			acc.cmp, err = r.cmp(a.Col)
			if err == nil {
				acc.by = acc.cmp.at(a.Col)
			}
		case AggCountDistinct, AggSumDistinct:
			acc.cmp, err = r.cmp(a.Arg)
			if err == nil {
				acc.by = acc.cmp.at(a.Arg)
			}
			if a.Arg != r.sortedDistinct() {
				acc.set, acc.budget = map[string]struct{}{}, r.budget()
			}
		case AggGroupConcat:
			if a.Arg < 0 || a.Arg >= len(r.cols) || a.Count < 0 || a.Count >= len(r.cols) || a.MaxLen < 0 || a.MaxLen >= len(r.cols) {
				return fmt.Errorf("merge: GROUP_CONCAT of columns %d, %d, %d of a row of %d", a.Arg, a.Count, a.MaxLen, len(r.cols))
			}
			if a.Distinct {
				acc.cmp, err = r.cmp(a.Arg)
				if err == nil {
					acc.by = acc.cmp.at(a.Arg)
				}
				acc.set = map[string]struct{}{}
			}
			acc.budget = r.budget()
			if err == nil && !r.arrivesIn(a.Keys) {
				acc.keys, err = r.keys(a.Keys)
			}
		}
		if err != nil {
			return err
		}
		r.accums = append(r.accums, acc)
	}
	for _, c := range s.Computed {
		if c.Col < 0 || c.Col >= len(r.cols) {
			return fmt.Errorf("merge: computed column %d of a row of %d", c.Col, len(r.cols))
		}
		if err := r.checkOperands(c.Operands); err != nil {
			return err
		}
	}
	if err := r.checkOperands(s.HavingOperands); err != nil {
		return err
	}
	r.computed = make([][]byte, len(s.Computed))
	if len(s.Computed) > 0 || s.Having != nil {
		r.env = evalengine.EmptyExpressionEnv(mergeVtenv())
	}
	if len(s.Final) > 0 {
		keys, err := r.keys(s.Final)
		if err != nil {
			return err
		}
		r.sorter = newFinalSorter(keys, r.m)
	}
	return nil
}

// checkOperands refuses an expression the merge would evaluate over
// values evalengine does not compare or compute as the server does:
// anything but numbers and NULL, but for constants read as numbers.
func (r *mergeRun) checkOperands(ops Operands) error {
	for _, o := range ops.Cols {
		if o.Col < 0 || o.Col >= len(r.cols) {
			return fmt.Errorf("merge: operand column %d of a row of %d", o.Col, len(r.cols))
		}
		switch t := r.types[o.Col]; {
		case t == sqltypes.Null, sqltypes.IsNumber(t) && r.cols[o.Col].Type != mysql.TypeYear:
		case o.Loose && (sqltypes.IsText(t) || sqltypes.IsBinary(t)):
			if !slices.Contains(r.looseText, o.Col) {
				r.looseText = append(r.looseText, o.Col)
			}
		default:
			return mysql.NewError(mysql.ERNotSupportedYet, "42000",
				"This version of shardgate doesn't yet support 'comparing or computing %s, a %s value, with another aggregate across shards (the proxy computes those over numbers only)'",
				o.Text, strings.ToLower(t.String()))
		}
	}
	return nil
}

// numberText is a string the server reads as a number without a warning
// or a note: evalengine reads the others too, but warns of none.
var numberText = regexp.MustCompile(`^[ \t\n\r]*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// checkNumbers refuses a string constant read as a number that the
// server would read with a warning: '12abc', an empty string, '1 '.
func (r *mergeRun) checkNumbers(vals []sqltypes.Value) error {
	for _, c := range r.looseText {
		if v := vals[c]; !v.IsNull() && !numberText.Match(v.Raw()) {
			return mysql.NewError(mysql.ERNotSupportedYet, "42000",
				"This version of shardgate doesn't yet support 'comparing an aggregate with %q, which is not a number, across shards'", v.Raw())
		}
	}
	return nil
}

// mergeVtenv is the Vitess environment expressions evaluate in: evaluation
// uses only its collation environment, which NewTestEnv builds for Vitess's
// default MySQL version without needing options that can fail.
var mergeVtenv = sync.OnceValue(func() *vtenv.Environment { return vtenv.NewTestEnv() })

func (r *mergeRun) run() error {
	for i := range r.in {
		ok, err := r.next(i)
		if err != nil {
			return err
		}
		if ok {
			r.heap = append(r.heap, i)
			r.up(len(r.heap) - 1)
		}
	}
	for len(r.heap) > 0 {
		i := r.heap[0]
		done, err := r.consume(i)
		if done || err != nil {
			return err
		}
		ok, err := r.next(i)
		if err != nil {
			return err
		}
		if !ok {
			last := len(r.heap) - 1
			r.heap[0] = r.heap[last]
			r.heap = r.heap[:last]
		}
		r.down(0)
	}
	return r.finish()
}

// next reads input i's next row.
func (r *mergeRun) next(i int) (bool, error) {
	row, ok, err := r.in[i].Next()
	if err != nil || !ok {
		return false, err
	}
	if row == nil && r.spec.passesRows() {
		return true, nil // an opaque row (mysql.RowStream.Opaque), passed whole
	}
	if len(row) != len(r.cols) {
		return false, fmt.Errorf("merge: part %d sent a row of %d columns, want %d", i, len(row), len(r.cols))
	}
	for _, c := range r.weighted {
		r.cmps[c].learnSpace(row)
	}
	r.rows[i] = row
	return true, nil
}

// consume takes input i's current row, the smallest; done is true once
// LIMIT's rows are out.
func (r *mergeRun) consume(i int) (done bool, err error) {
	row := r.rows[i]
	if r.pass {
		if r.skip > 0 {
			r.skip--
			return false, nil
		}
		if err := r.out.Pass(i); err != nil {
			return false, err
		}
		return r.sent(), nil
	}
	if r.spec.Groups != 0 {
		if r.hasGroup && r.sameGroup(row) {
			return false, r.accumulate(row)
		}
		if r.hasGroup {
			if done, err := r.finishGroup(); done || err != nil {
				return done, err
			}
		}
		return false, r.startGroup(row)
	}
	if err := r.startGroup(row); err != nil {
		return false, err
	}
	return r.finishGroup()
}

// sent counts a row out and reports whether LIMIT's rows are.
func (r *mergeRun) sent() bool {
	if !r.m.HasLimit {
		return false
	}
	r.left--
	return r.left == 0
}

func (r *mergeRun) sameGroup(row []sqltypes.Value) bool {
	return r.spec.Groups < 0 || compareRows(r.groups, r.combined.vals, row) == 0
}

func (r *mergeRun) startGroup(row []sqltypes.Value) error {
	r.combined.set(row)
	r.hasGroup = true
	for i := range r.accums {
		r.accums[i].reset()
	}
	return r.accumulate(row)
}

func (r *mergeRun) accumulate(row []sqltypes.Value) error {
	for i := range r.accums {
		if err := r.accums[i].add(row); err != nil {
			return err
		}
	}
	return nil
}

// finishGroup completes the current group's row and sends it on.
func (r *mergeRun) finishGroup() (done bool, err error) {
	r.hasGroup = false
	vals := r.combined.vals
	for i := range r.accums {
		a := &r.accums[i]
		if err := a.finish(); err != nil {
			return false, err
		}
		vals[a.Col] = a.value()
		if (a.Kind == AggMin || a.Kind == AggMax) && !a.best.null {
			if a.by != a.Col {
				vals[a.by] = a.bestBy.value() // the winner's weight, for a final order by it
			}
			for j, c := range a.With {
				vals[c] = a.with[j].value()
			}
		}
	}
	if r.env != nil {
		r.env.Row = vals
	}
	if r.looseText != nil {
		if err := r.checkNumbers(vals); err != nil {
			return false, err
		}
		r.looseText = nil
	}
	for i, c := range r.spec.Computed {
		res, err := r.env.Evaluate(c.Expr)
		if err != nil {
			return false, fmt.Errorf("merge: computing column %d: %w", c.Col, err)
		}
		vals[c.Col], r.computed[i] = r.formatComputed(res, c.Col, r.computed[i])
	}
	if r.spec.Having != nil {
		res, err := r.env.Evaluate(r.spec.Having)
		if err != nil {
			return false, fmt.Errorf("merge: evaluating HAVING: %w", err)
		}
		if !res.ToBoolean() {
			return false, nil
		}
	}
	if r.sorter != nil {
		return false, r.sorter.add(vals)
	}
	return r.emit(vals[:r.visible])
}

// emit sends a composed row, after LIMIT's offset.
func (r *mergeRun) emit(row []sqltypes.Value) (done bool, err error) {
	if r.skip > 0 {
		r.skip--
		return false, nil
	}
	if err := r.out.Row(row); err != nil {
		return false, err
	}
	return r.sent(), nil
}

// finish completes the last group (or the one group of an aggregate
// query without GROUP BY over no rows at all) and sends the final order.
func (r *mergeRun) finish() error {
	if r.spec.Groups < 0 && !r.hasGroup {
		r.combined.setNull(len(r.cols))
		for i := range r.accums {
			r.accums[i].reset()
		}
		r.hasGroup = true
	}
	if r.hasGroup {
		if done, err := r.finishGroup(); done || err != nil {
			return err
		}
	}
	if r.sorter == nil {
		return nil
	}
	defer r.sorter.close()
	return r.sorter.each(func(vals []sqltypes.Value) (bool, error) { return r.emit(vals[:r.visible]) })
}

// formatComputed writes an expression's result as the server writes the
// column's type: DECIMAL with the column's decimals (rounded half away
// from zero), DOUBLE as MariaDB prints doubles.
func (r *mergeRun) formatComputed(res evalengine.EvalResult, col int, buf []byte) (sqltypes.Value, []byte) {
	v := res.Value(collations.ID(r.cols[col].Charset))
	if v.IsNull() {
		return sqltypes.NULL, buf
	}
	f := r.formats[col]
	switch {
	case f.kind == numFloat:
		x, err := v.ToFloat64()
		if err != nil {
			return v, buf
		}
		buf = appendDouble(buf[:0], x, f.decimals)
	case f.kind == numDecimal || f.kind == numInteger && !v.IsIntegral():
		d, err := decimal.NewFromMySQL(v.Raw())
		if err != nil {
			x, ferr := v.ToFloat64()
			if ferr != nil {
				return v, buf
			}
			d = decimal.NewFromFloat(x)
		}
		buf = append(buf[:0], d.StringFixed(f.decimals)...)
	default:
		return sqltypes.MakeTrusted(r.types[col], v.Raw()), buf
	}
	return sqltypes.MakeTrusted(r.types[col], buf), buf
}

// The heap orders inputs by their current rows, then by input: equal
// rows go out in input order.
func (r *mergeRun) less(a, b int) bool {
	if c := compareRows(r.order, r.rows[a], r.rows[b]); c != 0 {
		return c < 0
	}
	return a < b
}

func (r *mergeRun) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !r.less(r.heap[i], r.heap[p]) {
			return
		}
		r.heap[p], r.heap[i] = r.heap[i], r.heap[p]
		i = p
	}
}

func (r *mergeRun) down(i int) {
	n := len(r.heap)
	for {
		s := i
		if l := 2*i + 1; l < n && r.less(r.heap[l], r.heap[s]) {
			s = l
		}
		if rt := 2*i + 2; rt < n && r.less(r.heap[rt], r.heap[s]) {
			s = rt
		}
		if s == i {
			return
		}
		r.heap[s], r.heap[i] = r.heap[i], r.heap[s]
		i = s
	}
}

// ownedRow is a copy of a row that outlives its input's next read; its
// buffers are reused from row to row.
type ownedRow struct {
	vals []sqltypes.Value
	buf  []byte
}

func (o *ownedRow) set(row []sqltypes.Value) {
	n := 0
	for _, v := range row {
		n += len(v.Raw())
	}
	if cap(o.buf) < n {
		o.buf = make([]byte, 0, n)
	}
	buf := o.buf[:0]
	o.vals = o.vals[:0]
	for _, v := range row {
		if v.IsNull() {
			o.vals = append(o.vals, sqltypes.NULL)
			continue
		}
		start := len(buf)
		buf = append(buf, v.Raw()...)
		o.vals = append(o.vals, sqltypes.MakeTrusted(v.Type(), buf[start:len(buf):len(buf)]))
	}
	o.buf = buf
}

func (o *ownedRow) setNull(n int) {
	o.vals = o.vals[:0]
	for range n {
		o.vals = append(o.vals, sqltypes.NULL)
	}
}
