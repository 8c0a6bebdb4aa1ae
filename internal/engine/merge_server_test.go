package engine

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"vitess.io/vitess/go/sqltypes"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/testenv"
)

// serverQuery runs one statement and returns its result set.
func serverQuery(t *testing.T, c *difftest.Client, sql string) *difftest.Result {
	t.Helper()
	a, err := c.Query(sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if a.Err != nil {
		t.Fatalf("%s: %v", sql, a.Err)
	}
	if len(a.Results) != 1 {
		t.Fatalf("%s: %d results", sql, len(a.Results))
	}
	return &a.Results[0]
}

func dialServer(t *testing.T, db string) *difftest.Client {
	t.Helper()
	srv := testenv.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := difftest.Dial(ctx, difftest.Target{Name: "mariadb", Addr: srv.Addr, User: srv.User, Password: srv.Password})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	serverQuery(t, c, "CREATE DATABASE IF NOT EXISTS "+db)
	serverQuery(t, c, "USE "+db)
	return c
}

// resultInput is a part's result set as a merge input.
type resultInput struct {
	cols []mysql.ColumnDef
	res  *difftest.Result
	next int
	vals []sqltypes.Value
}

func (r *resultInput) Next() ([]sqltypes.Value, bool, error) {
	if r.next == len(r.res.Rows) {
		return nil, false, nil
	}
	row := r.res.Rows[r.next]
	r.next++
	r.vals = r.vals[:0]
	for i, v := range row {
		if v.Null {
			r.vals = append(r.vals, sqltypes.NULL)
			continue
		}
		typ, err := sqltypes.MySQLToType(r.cols[i].Type, int64(r.cols[i].Flags))
		if err != nil {
			return nil, false, err
		}
		r.vals = append(r.vals, sqltypes.MakeTrusted(typ, []byte(v.Bytes)))
	}
	return r.vals, true, nil
}

type resultOutput struct {
	ins     []*resultInput
	visible int
	got     []string
}

func (o *resultOutput) Row(row []sqltypes.Value) error {
	o.got = append(o.got, rowText(row))
	return nil
}

func (o *resultOutput) Pass(i int) error {
	o.got = append(o.got, rowText(o.ins[i].vals[:o.visible]))
	return nil
}

func columnDefs(cols []difftest.Column) []mysql.ColumnDef {
	out := make([]mysql.ColumnDef, len(cols))
	for i, c := range cols {
		out[i] = mysql.ColumnDef{Name: []byte(c.Name), Charset: c.Charset, Length: c.Length, Type: c.Type, Flags: c.Flags, Decimals: c.Decimals}
	}
	return out
}

func resultText(r *difftest.Result) []string {
	out := make([]string, len(r.Rows))
	for i, row := range r.Rows {
		s := make([]string, len(row))
		for j, v := range row {
			if v.Null {
				s[j] = "NULL"
			} else {
				s[j] = v.Bytes
			}
		}
		out[i] = strings.Join(s, "|")
	}
	return out
}

// mergeShards runs shard (a statement with %d for the shard number) on
// each of the shards 0..n-1 and merges the answers.
func mergeSplit(t *testing.T, c *difftest.Client, shard string, n int, m *Merge) []string {
	t.Helper()
	ins := make([]*resultInput, n)
	inputs := make([]mergeInput, n)
	var cols []mysql.ColumnDef
	for k := range n {
		res := serverQuery(t, c, fmt.Sprintf(shard, k))
		if k == 0 {
			cols = columnDefs(res.Columns)
		}
		ins[k] = &resultInput{cols: cols, res: res}
		inputs[k] = ins[k]
	}
	out := &resultOutput{ins: ins, visible: len(cols) - m.Spec.Hidden}
	if err := m.run(cols, inputs, out); err != nil {
		t.Fatalf("merge %s: %v", shard, err)
	}
	return out.got
}

// fillMergeTable inserts rows of random values, NULLs, extremes, strings
// equal under utf8mb4_general_ci in other spellings.
func fillMergeTable(t *testing.T, c *difftest.Client, rng *rand.Rand, rows int) {
	serverQuery(t, c, `CREATE OR REPLACE TABLE t (id INT PRIMARY KEY, i BIGINT, u BIGINT UNSIGNED,
		d DECIMAL(14,3), f DOUBLE, h DOUBLE, s VARCHAR(12) COLLATE utf8mb4_general_ci,
		s1 VARCHAR(12) COLLATE utf8mb4_general_ci, su VARCHAR(12) COLLATE utf8mb4_unicode_ci,
		g INT, g2 INT, tm TIME, dt DATETIME)`)
	alphabet := []string{"a", "A", "b", "B", "é", "É", "e", "z", "Z", " ", "\t", "ß", "ss", "😀", "𝄞", "-", "_", "1", "ä", "Ä"}
	word := func() string {
		var b strings.Builder
		for range rng.IntN(5) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	// s1 takes one spelling per class of strings equal under the
	// collation, so MIN, MAX and group keys have one right answer.
	serverQuery(t, c, "CREATE OR REPLACE TABLE pool (p VARCHAR(12) COLLATE utf8mb4_general_ci)")
	var pool []string
	for range 80 {
		pool = append(pool, "("+quote(word())+")")
	}
	serverQuery(t, c, "INSERT INTO pool VALUES "+strings.Join(pool, ","))
	canon := resultText(serverQuery(t, c, "SELECT MIN(CAST(p AS BINARY)) FROM pool GROUP BY p"))
	orNull := func(s string) string {
		if rng.IntN(10) == 0 {
			return "NULL"
		}
		return s
	}
	var vals []string
	for id := range rows {
		var i string
		switch rng.IntN(6) {
		case 0:
			i = strconv.FormatInt(math.MinInt64+int64(rng.IntN(3)), 10)
		case 1:
			i = strconv.FormatInt(math.MaxInt64-int64(rng.IntN(3)), 10)
		case 2:
			i = strconv.FormatInt(int64(rng.Uint64()), 10)
		default:
			i = strconv.Itoa(rng.IntN(201) - 100)
		}
		u := strconv.FormatUint(rng.Uint64()>>(rng.IntN(64)), 10)
		d := fmt.Sprintf("%d.%03d", rng.Int64N(2e11)-1e11, rng.IntN(1000))
		if rng.IntN(2) == 0 {
			d = fmt.Sprintf("%d.%03d", rng.IntN(21)-10, rng.IntN(1000))
		}
		f := strconv.FormatFloat((rng.Float64()-0.5)*math.Pow(10, float64(rng.IntN(41)-20)), 'e', -1, 64)
		h := strconv.FormatFloat(float64(rng.IntN(801)-400)*0.25, 'f', -1, 64)
		tm := fmt.Sprintf("'%s%d:%02d:%02d'", []string{"", "-"}[rng.IntN(2)], rng.IntN(839), rng.IntN(60), rng.IntN(60))
		dt := fmt.Sprintf("'%04d-%02d-%02d %02d:%02d:%02d'", 1000+rng.IntN(9000), 1+rng.IntN(12), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60))
		g2 := orNull(strconv.Itoa(rng.IntN(6)))
		vals = append(vals, fmt.Sprintf("(%d,%s,%s,%s,%s,%s,%s,%s,%s,%d,%s,%s,%s)", id, orNull(i), u, orNull(d), orNull(f), h,
			orNull(quote(word())), quote(canon[rng.IntN(len(canon))]), quote(word()), rng.IntN(10), g2, orNull(tm), dt))
	}
	serverQuery(t, c, "INSERT INTO t VALUES "+strings.Join(vals, ","))
}

func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// TestMergeMatchesServer: one table's rows read as three shards (id % 3)
// and merged give the server's own answer over the whole table, text for
// text: order, groups, aggregates, AVG's rounding, doubles' notation.
func TestMergeMatchesServer(t *testing.T) {
	c := dialServer(t, "merge_run")
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	fillMergeTable(t, c, rand.New(rand.NewPCG(uint64(seed), 14)), 900)

	const where = " WHERE id %% 3 = %d"
	groupCols := "g, COUNT(*), SUM(d), MIN(s1), MAX(s1), SUM(i), BIT_OR(u), BIT_AND(u), BIT_XOR(i), AVG(d), AVG(i), SUM(h), AVG(h), MIN(f), MAX(tm)"
	aggCols := "COUNT(*), SUM(d), AVG(d), MIN(i), MAX(u), SUM(h), AVG(i), MIN(dt)"
	for _, tc := range []struct {
		name, shard, ref string
		spec             MergeSpec
		limit            []uint64
	}{
		{name: "ORDER BY string, decimal DESC, integer",
			shard: "SELECT id, s, d, i, " + weighs("s") + " FROM t" + where + " ORDER BY s, d DESC, i, id",
			ref:   "SELECT id, s, d, i FROM t ORDER BY s, d DESC, i, id",
			spec:  MergeSpec{Order: []SortKey{{Col: 1}, {Col: 2, Desc: true}, {Col: 3}, {Col: 0}}, Hidden: 2, Weights: weights(6, 1, 4)}},
		{name: "ORDER BY double DESC, unsigned",
			shard: "SELECT id, f, u FROM t" + where + " ORDER BY f DESC, u, id",
			ref:   "SELECT id, f, u FROM t ORDER BY f DESC, u, id",
			spec:  MergeSpec{Order: []SortKey{{Col: 1, Desc: true}, {Col: 2}, {Col: 0}}}},
		{name: "ORDER BY utf8mb4_unicode_ci, TIME, DATETIME",
			shard: "SELECT id, su, tm, dt, " + weighs("su") + " FROM t" + where + " ORDER BY su, tm DESC, dt, id",
			ref:   "SELECT id, su, tm, dt FROM t ORDER BY su, tm DESC, dt, id",
			spec:  MergeSpec{Order: []SortKey{{Col: 1}, {Col: 2, Desc: true}, {Col: 3}, {Col: 0}}, Hidden: 2, Weights: weights(6, 1, 4)}},
		{name: "ORDER BY with LIMIT and OFFSET",
			shard: "SELECT id, i FROM t" + where + " ORDER BY i DESC, id LIMIT 27",
			ref:   "SELECT id, i FROM t ORDER BY i DESC, id LIMIT 7, 20",
			spec:  MergeSpec{Order: []SortKey{{Col: 1, Desc: true}, {Col: 0}}}, limit: []uint64{7, 20}},
		{name: "GROUP BY with every aggregate and AVG",
			shard: "SELECT " + groupCols + ", SUM(d), COUNT(d), SUM(i), COUNT(i), SUM(h), COUNT(h), " + weighs("MIN(s1)") + ", " + weighs("MAX(s1)") + " FROM t" + where + " GROUP BY g ORDER BY g",
			ref:   "SELECT " + groupCols + " FROM t GROUP BY g ORDER BY g",
			spec: MergeSpec{Order: []SortKey{{Col: 0}}, Groups: 1, Hidden: 10, Weights: weights(25, 3, 21, 4, 23), Aggregates: []Aggregate{
				{Kind: AggCount, Col: 1}, {Kind: AggSum, Col: 2}, {Kind: AggMin, Col: 3}, {Kind: AggMax, Col: 4},
				{Kind: AggSum, Col: 5}, {Kind: AggBitOr, Col: 6}, {Kind: AggBitAnd, Col: 7}, {Kind: AggBitXor, Col: 8},
				{Kind: AggSum, Col: 11}, {Kind: AggMin, Col: 13}, {Kind: AggMax, Col: 14},
				{Kind: AggSum, Col: 15}, {Kind: AggCount, Col: 16}, {Kind: AggSum, Col: 17}, {Kind: AggCount, Col: 18},
				{Kind: AggSum, Col: 19}, {Kind: AggCount, Col: 20}},
				Computed: []ComputedColumn{{Col: 9, Expr: expr(t, "c15 / c16")}, {Col: 10, Expr: expr(t, "c17 / c18")}, {Col: 12, Expr: expr(t, "c19 / c20")}}}},
		{name: "GROUP BY a _ci string, HAVING, ORDER BY COUNT(*) with LIMIT",
			shard: "SELECT s1, COUNT(*), " + weighs("s1") + " FROM t" + where + " GROUP BY s1 ORDER BY s1",
			ref:   "SELECT s1, COUNT(*) FROM t GROUP BY s1 HAVING COUNT(*) > 3 ORDER BY COUNT(*) DESC, s1 LIMIT 2, 10",
			spec: MergeSpec{Order: []SortKey{{Col: 0}}, Groups: 1, Hidden: 2, Weights: weights(4, 0, 2), Aggregates: []Aggregate{{Kind: AggCount, Col: 1}},
				Having: expr(t, "c1 > 3"), Final: []SortKey{{Col: 1, Desc: true}, {Col: 0}}}, limit: []uint64{2, 10}},
		{name: "ORDER BY an aggregate, in memory",
			shard: "SELECT g2, SUM(d) FROM t" + where + " GROUP BY g2 ORDER BY g2",
			ref:   "SELECT g2, SUM(d) FROM t GROUP BY g2 ORDER BY SUM(d), g2",
			spec: MergeSpec{Order: []SortKey{{Col: 0}}, Groups: 1, Aggregates: []Aggregate{{Kind: AggSum, Col: 1}},
				Final: []SortKey{{Col: 1}, {Col: 0}}}},
		{name: "aggregates without GROUP BY",
			shard: "SELECT " + aggCols + ", SUM(d), COUNT(d), SUM(i), COUNT(i) FROM t" + where,
			ref:   "SELECT " + aggCols + " FROM t",
			spec: MergeSpec{Groups: -1, Hidden: 4, Aggregates: []Aggregate{
				{Kind: AggCount, Col: 0}, {Kind: AggSum, Col: 1}, {Kind: AggMin, Col: 3}, {Kind: AggMax, Col: 4},
				{Kind: AggSum, Col: 5}, {Kind: AggMin, Col: 7}, {Kind: AggSum, Col: 8}, {Kind: AggCount, Col: 9}, {Kind: AggSum, Col: 10}, {Kind: AggCount, Col: 11}},
				Computed: []ComputedColumn{{Col: 2, Expr: expr(t, "c8 / c9")}, {Col: 6, Expr: expr(t, "c10 / c11")}}}},
		{name: "aggregates over no rows",
			shard: "SELECT COUNT(*), SUM(d), MAX(s1), BIT_AND(u), " + weighs("MAX(s1)") + " FROM t" + where + " AND id < 0",
			ref:   "SELECT COUNT(*), SUM(d), MAX(s1), BIT_AND(u) FROM t WHERE id < 0",
			spec: MergeSpec{Groups: -1, Hidden: 2, Weights: weights(6, 2, 4), Aggregates: []Aggregate{
				{Kind: AggCount, Col: 0}, {Kind: AggSum, Col: 1}, {Kind: AggMax, Col: 2}, {Kind: AggBitAnd, Col: 3}}}},
		{name: "DISTINCT",
			shard: "SELECT DISTINCT s1, g, " + weighs("s1") + " FROM t" + where + " ORDER BY s1, g",
			ref:   "SELECT DISTINCT s1, g FROM t ORDER BY s1, g",
			spec:  MergeSpec{Order: []SortKey{{Col: 0}, {Col: 1}}, Groups: 2, Hidden: 2, Weights: weights(4, 0, 2)}},
		{name: "COUNT(DISTINCT) and SUM(DISTINCT)",
			shard: "SELECT g, COUNT(DISTINCT g2), SUM(DISTINCT g2), g2 FROM t" + where + " GROUP BY g, g2 ORDER BY g, g2",
			ref:   "SELECT g, COUNT(DISTINCT g2), SUM(DISTINCT g2) FROM t GROUP BY g ORDER BY g",
			spec: MergeSpec{Order: []SortKey{{Col: 0}, {Col: 3}}, Groups: 1, Hidden: 1, Aggregates: []Aggregate{
				{Kind: AggCountDistinct, Col: 1, Arg: 3}, {Kind: AggSumDistinct, Col: 2, Arg: 3}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			m := &Merge{Spec: &spec}
			if tc.limit != nil {
				m.Offset, m.Count, m.HasLimit = tc.limit[0], tc.limit[1], true
			}
			got := mergeSplit(t, c, tc.shard, 3, m)
			want := resultText(serverQuery(t, c, tc.ref))
			if len(want) == 0 {
				t.Fatalf("the server's answer is empty: the case tests nothing")
			}
			for i := range max(len(got), len(want)) {
				var g, w string
				if i < len(got) {
					g = got[i]
				}
				if i < len(want) {
					w = want[i]
				}
				if g != w {
					t.Fatalf("row %d of %d/%d:\n got  %q\n want %q", i, len(got), len(want), g, w)
				}
			}
		})
	}
}

// TestMergeDoubleTextMatchesServer: doubles the merge computes are
// written as MariaDB writes them, over magnitudes and signs.
func TestMergeDoubleTextMatchesServer(t *testing.T) {
	c := dialServer(t, "merge_run")
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 15))
	var fs []float64
	for range 600 {
		f := math.Float64frombits(rng.Uint64())
		switch rng.IntN(4) {
		case 0: // near the notation thresholds
			f = (rng.Float64() + 0.5) * math.Pow(10, float64(rng.IntN(8)-18+rng.IntN(2)*30))
		case 1:
			f = (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(60)-30))
		case 2: // few digits, from 1e-20 to 1e20
			f, _ = strconv.ParseFloat(fmt.Sprintf("%de%d", rng.IntN(1999)-999, rng.IntN(41)-20), 64)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			f = float64(rng.IntN(1000))
		}
		fs = append(fs, f)
	}
	for start := 0; start < len(fs); start += 100 {
		batch := fs[start : start+100]
		lits := make([]string, len(batch))
		for i, f := range batch {
			lits[i] = strconv.FormatFloat(f, 'e', -1, 64)
		}
		row := serverQuery(t, c, "SELECT "+strings.Join(lits, ",")).Rows[0]
		for i, f := range batch {
			if got := string(appendDouble(nil, f, notFixedDecimals)); got != row[i].Bytes {
				t.Errorf("%s: merge writes %q, the server %q", lits[i], got, row[i].Bytes)
			}
		}
	}
}

// weighs is the SQL of the weight and space columns the planner adds for
// a string the merge compares (planner's weightTemplate, spaceTemplate),
// for a format string.
func weighs(x string) string {
	return strings.ReplaceAll(strings.ReplaceAll("weight_string(X), if(collation(X) = 'binary' or collation(X) like '%nopad%' or collation(X) like '%0900%', '', weight_string(concat(left(X, 0), ' ')))", "X", x), "%", "%%")
}

// weights is a MergeSpec.Weights for n columns: pairs of a column and
// the column of its weights.
func weights(n int, pairs ...int) []int {
	w := make([]int, n)
	for i := range w {
		w[i] = -1
	}
	for i := 0; i < len(pairs); i += 2 {
		w[pairs[i]] = pairs[i+1]
	}
	return w
}
