package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
)

// TestExplainEvaluate: an evaluation step by step, with what an EXPLAIN
// of each step reads: the fetches' SELECTs without their SET STATEMENT
// on their shards, the semi-join's values and the statement on the
// evaluator; the copies of local tables only inside a transaction.
func TestExplainEvaluate(t *testing.T) {
	s0, s1 := &backend.Cluster{Name: "s0"}, &backend.Cluster{Name: "s1"}
	var e Evaluate
	e.Reset(s0, nil, false)
	e.AddTable("shop.u", "shop.u_0000", "shop.u_0000", false)
	e.AddFetch(s0, []byte("\x03"+FetchPrefix+"SELECT * FROM shop.u_0000 WHERE id < 9"))
	e.AddFetch(s1, []byte("\x03"+FetchPrefix+"SELECT * FROM shop.u_0001 WHERE id < 9"))
	e.Filtered()
	e.AddTable("shop.o", "", "shop.o_0000", false)
	e.Reduce("SELECT DISTINCT city FROM shop.u", "SELECT * FROM shop.o_NNNN WHERE uid IN (…)", nil)
	e.AddFetch(s1, []byte("\x03"+FetchPrefix+"SELECT * FROM shop.o_0001"))
	e.AddTable("shop.plain", "", "shop.plain", true)
	e.AddFetch(s0, []byte("\x03"+FetchPrefix+"SELECT * FROM shop.plain"))
	q := []byte("\x03SELECT u.id FROM u JOIN o ON o.uid = u.city JOIN plain")
	steps := Explain(&e, q)
	type want struct {
		prim, shard, sql string
		evaluator, inTrx bool
	}
	wants := []want{
		{prim: "Evaluate: create", shard: "s0"},
		{prim: "Evaluate: copy into shop.u (the rows the statement's conditions allow)", shard: "s0", sql: "SELECT * FROM shop.u_0000 WHERE id < 9"},
		{prim: "Evaluate: copy into shop.u (the rows the statement's conditions allow)", shard: "s1", sql: "SELECT * FROM shop.u_0001 WHERE id < 9"},
		{prim: "Evaluate: create", shard: "s0"},
		{prim: "Evaluate: semi-join values for shop.o", shard: "s0", sql: "SELECT DISTINCT city FROM shop.u", evaluator: true},
		{prim: "Evaluate: copy into shop.o (semi-join)"},
		{prim: "Evaluate: copy into shop.o (instead, when the values are more than 20000 or not plain numbers)", shard: "s1", sql: "SELECT * FROM shop.o_0001"},
		{prim: "Evaluate: create", shard: "s0", inTrx: true},
		{prim: "Evaluate: copy into shop.plain", shard: "s0", sql: "SELECT * FROM shop.plain", inTrx: true},
		{prim: "Evaluate: the statement", shard: "s0", sql: string(q[1:]), evaluator: true},
		{prim: "Evaluate: drop", shard: "s0"},
	}
	if len(steps) != len(wants) {
		t.Fatalf("%d steps, want %d: %+v", len(steps), len(wants), steps)
	}
	for i, w := range wants {
		st := steps[i]
		if st.Primitive != w.prim || st.Shard != w.shard || st.SQL != w.sql || st.Evaluator != w.evaluator || st.InTrx != w.inTrx ||
			st.SQL != "" && st.Cluster == nil {
			t.Errorf("step %d: %+v, want %+v", i+1, st, w)
		}
	}
	if !strings.Contains(steps[5].Query, "uid IN (…)") || !strings.Contains(steps[1].Query, FetchPrefix) {
		t.Errorf("the semi-join's batches %q, a fetch %q", steps[5].Query, steps[1].Query)
	}
	// Outside a transaction the local table's copy is not a step.
	x := &ExplainPlan{Plan: &e, Query: q}
	if n := len(x.steps(false)); n != len(wants)-2 {
		t.Errorf("outside a transaction: %d steps, want %d", n, len(wants)-2)
	}
	if n := len(x.steps(true)); n != len(wants) {
		t.Errorf("inside a transaction: %d steps, want %d", n, len(wants))
	}
}

// explainResult is a server's EXPLAIN answer of columns cols and rows
// (nil values NULL).
func explainResult(cols []string, rows ...[]any) *mysql.ResultSet {
	rs := &mysql.ResultSet{}
	for _, c := range cols {
		rs.Columns = append(rs.Columns, mysql.AppendColumnDef(nil, &mysql.Column{Name: c, Type: mysql.TypeVarString}))
	}
	for _, r := range rows {
		var row [][]byte
		for _, v := range r {
			if v == nil {
				row = append(row, nil)
			} else {
				row = append(row, []byte(v.(string)))
			}
		}
		rs.Rows = append(rs.Rows, row)
	}
	return rs
}

// TestExplainTable: each step's leading columns, then its server's rows
// in the first answer's columns (placed by name); a step without SQL is
// a row of NULLs.
func TestExplainTable(t *testing.T) {
	steps := []Step{{Primitive: "Merge", Shard: "s0", Query: "A"}, {Primitive: "Merge", Shard: "s1", Query: "B"}, {Primitive: "Merge", Query: "merge by 1"}}
	a := explainResult([]string{"id", "table", "Extra"}, []any{"1", "t_0000", ""}, []any{"2", "t_0001", nil})
	b := explainResult([]string{"table", "id", "Extra"}, []any{"t_0002", "1", "Using where"})
	b.Warnings = 2
	rs := explainTable(steps, []*mysql.ResultSet{a, b, nil})
	var names []string
	for _, c := range rs.Columns {
		names = append(names, string(mysql.ColumnDefName(c)))
	}
	if got := strings.Join(names, ","); got != "shardgate_step,primitive,shard,query,id,table,Extra" {
		t.Fatalf("columns %s", got)
	}
	show := func(row [][]byte) string {
		var s []string
		for _, v := range row {
			if v == nil {
				s = append(s, "NULL")
			} else {
				s = append(s, string(v))
			}
		}
		return strings.Join(s, "|")
	}
	var got []string
	for _, r := range rs.Rows {
		got = append(got, show(r))
	}
	want := []string{"1|Merge|s0|A|1|t_0000|", "1|Merge|s0|A|2|t_0001|NULL", "2|Merge|s1|B|1|t_0002|Using where", "3|Merge|NULL|merge by 1|NULL|NULL|NULL"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if rs.Warnings != 2 {
		t.Errorf("warnings %d, want the servers' 2", rs.Warnings)
	}
}

// TestExplainJSON: one document, each step's server document embedded as
// JSON (a text that is not JSON as a string), '<' unescaped.
func TestExplainJSON(t *testing.T) {
	steps := []Step{{Primitive: "Route", Shard: "s1", Query: "select 1"}, {Primitive: "Scatter", Shard: "s0", Query: "select 2"}, {Primitive: "Merge", Query: "m"}}
	rs := explainJSON(steps, []*mysql.ResultSet{
		explainResult([]string{"EXPLAIN"}, []any{`{"query_block": {"table": {"table_name": "<union1,2>"}}}`}),
		explainResult([]string{"EXPLAIN"}, []any{"not json"}),
		nil,
	})
	if len(rs.Columns) != 1 || string(mysql.ColumnDefName(rs.Columns[0])) != "EXPLAIN" || len(rs.Rows) != 1 {
		t.Fatalf("answer %+v, want one row of one column EXPLAIN", rs)
	}
	doc := rs.Rows[0][0]
	if !strings.Contains(string(doc), `"<union1,2>"`) {
		t.Errorf("'<' escaped:\n%s", doc)
	}
	var got struct {
		Shardgate struct {
			Plan []map[string]any `json:"plan"`
		} `json:"shardgate"`
	}
	if err := json.Unmarshal(doc, &got); err != nil {
		t.Fatalf("%v:\n%s", err, doc)
	}
	plan := got.Shardgate.Plan
	if len(plan) != 3 || plan[0]["step"] != 1.0 || plan[0]["shard"] != "s1" || plan[2]["shard"] != nil || plan[2]["explain"] != nil {
		t.Fatalf("plan %v", plan)
	}
	if _, ok := plan[0]["explain"].(map[string]any)["query_block"]; !ok {
		t.Errorf("step 1's explain %v, want the server's document as an object", plan[0]["explain"])
	}
	if plan[1]["explain"] != "not json" {
		t.Errorf("step 2's explain %v, want the text as a string", plan[1]["explain"])
	}
}
