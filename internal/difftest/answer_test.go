package difftest

import (
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/mysql"
)

func userColumn() Column {
	return Column{Catalog: "def", Schema: "shop", Table: "u", OrgTable: "sf_user", Name: "id", OrgName: "id",
		Charset: 63, Length: 11, Type: mysql.TypeLong, Flags: 0x4203, Decimals: 0}
}

func sampleAnswer() Answer {
	return Answer{
		Results: []Result{{
			Columns: []Column{userColumn()},
			Rows:    []Row{{{Bytes: "1"}}, {{Bytes: "2"}}, {{Null: true}}},
			Status:  mysql.StatusAutocommit,
		}},
		Warnings: []Warning{{Level: "Warning", Code: 1292, Message: "Truncated incorrect DOUBLE value: 'x'"}},
	}
}

func TestDiff(t *testing.T) {
	tests := []struct {
		name    string
		ordered bool
		alter   func(a *Answer)
		want    string // substring of the difference; "" for none
	}{
		{"equal", true, func(a *Answer) {}, ""},
		{"catalog", true, func(a *Answer) { a.Results[0].Columns[0].Catalog = "x" }, `catalog: reference "def", got "x"`},
		{"schema", true, func(a *Answer) { a.Results[0].Columns[0].Schema = "shop_0" }, `schema: reference "shop", got "shop_0"`},
		{"table", true, func(a *Answer) { a.Results[0].Columns[0].Table = "sf_user_0003" }, `table: reference "u", got "sf_user_0003"`},
		{"org_table", true, func(a *Answer) { a.Results[0].Columns[0].OrgTable = "sf_user_0003" }, `org_table: reference "sf_user", got "sf_user_0003"`},
		{"name", true, func(a *Answer) { a.Results[0].Columns[0].Name = "ID" }, `name: reference "id", got "ID"`},
		{"org_name", true, func(a *Answer) { a.Results[0].Columns[0].OrgName = "ID" }, `org_name: reference "id", got "ID"`},
		{"charset", true, func(a *Answer) { a.Results[0].Columns[0].Charset = 45 }, "charset: reference 63, got 45"},
		{"length", true, func(a *Answer) { a.Results[0].Columns[0].Length = 10 }, "length: reference 11, got 10"},
		{"type", true, func(a *Answer) { a.Results[0].Columns[0].Type = mysql.TypeLongLong }, "type: reference 3, got 8"},
		{"flags", true, func(a *Answer) { a.Results[0].Columns[0].Flags = 0x4003 }, "flags: reference 0x4203, got 0x4003"},
		{"decimals", true, func(a *Answer) { a.Results[0].Columns[0].Decimals = 2 }, "decimals: reference 0, got 2"},
		{"columns", true, func(a *Answer) { a.Results[0].Columns = append(a.Results[0].Columns, userColumn()) }, "columns: 1 in reference, 2 in got"},
		{"row order, ordered", true, func(a *Answer) { r := a.Results[0].Rows; r[0], r[1] = r[1], r[0] }, "rows differ (in order) from row 1"},
		{"row order, multiset", false, func(a *Answer) { r := a.Results[0].Rows; r[0], r[1] = r[1], r[0] }, ""},
		{"row missing, multiset", false, func(a *Answer) { a.Results[0].Rows = a.Results[0].Rows[1:] }, `only in reference: ("1")`},
		{"row duplicated, multiset", false, func(a *Answer) { a.Results[0].Rows = append(a.Results[0].Rows, Row{{Bytes: "2"}}) }, `only in got:       ("2")`},
		{"NULL is not empty", false, func(a *Answer) { a.Results[0].Rows[2][0] = Value{} }, `only in got:       ("")`},
		{"affected rows", true, func(a *Answer) { a.Results[0].AffectedRows = 2 }, "affected rows: reference 0, got 2"},
		{"last insert id", true, func(a *Answer) { a.Results[0].LastInsertID = 7 }, "last insert id: reference 0, got 7"},
		{"info", true, func(a *Answer) { a.Results[0].Info = "Records: 2" }, `info: reference "", got "Records: 2"`},
		{"warning count", true, func(a *Answer) { a.Results[0].Warnings = 1 }, "warning count: reference 0, got 1"},
		{"status in transaction", true, func(a *Answer) { a.Results[0].Status |= mysql.StatusInTrans }, "status flags: reference 0x0002, got 0x0003"},
		{"status index use ignored", true, func(a *Answer) { a.Results[0].Status |= mysql.StatusNoIndexUsed | mysql.StatusSessionStateChange }, ""},
		{"warnings", true, func(a *Answer) { a.Warnings[0].Code = 1366 }, "warnings: reference [Warning 1292"},
		{"warning missing", true, func(a *Answer) { a.Warnings = nil }, "got none"},
		{"results", true, func(a *Answer) { a.Results = append(a.Results, Result{}) }, "results: 1 in reference, 2 in got"},
		{"OK for result set", true, func(a *Answer) { a.Results[0] = Result{} }, "reference is a result set of 1 columns, got an OK"},
		{"unexpected error", true, func(a *Answer) {
			a.Err = &mysql.SQLError{Code: 1146, State: "42S02", Message: "Table 'shop.sf_user_0003' doesn't exist"}
		}, "error: reference succeeded, got ERROR 1146 (42S02)"},
		{"prepare missing", true, func(a *Answer) { a.Prepare = &PrepareInfo{Params: 1} }, "prepare: reference no prepare answer, got 1 parameters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref, got := sampleAnswer(), sampleAnswer()
			tt.alter(&got)
			d := Diff(ref, got, tt.ordered)
			if tt.want == "" && d != "" || !strings.Contains(d, tt.want) {
				t.Errorf("Diff = %q, want it to contain %q", d, tt.want)
			}
		})
	}
}

func TestDiffErrors(t *testing.T) {
	dup := &mysql.SQLError{Code: 1062, State: "23000", Message: "Duplicate entry '5' for key 'PRIMARY'"}
	tests := []struct {
		name     string
		ref, got *mysql.SQLError
		want     string
	}{
		{"same", dup, dup, ""},
		{"message", dup, &mysql.SQLError{Code: 1062, State: "23000", Message: "Duplicate entry '5' for key 'x'"}, "error: reference ERROR 1062"},
		{"state", dup, &mysql.SQLError{Code: 1062, State: "HY000", Message: dup.Message}, "got ERROR 1062 (HY000)"},
		{"reference failed", dup, nil, "error: reference failed with ERROR 1062 (23000)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Diff(Answer{Err: tt.ref}, Answer{Err: tt.got}, true)
			if tt.want == "" && d != "" || !strings.Contains(d, tt.want) {
				t.Errorf("Diff = %q, want it to contain %q", d, tt.want)
			}
		})
	}
}

// TestRefused: only a refusable statement answered with 1235 (42000) and
// an allowed message is a refusal; anything else goes to Diff, where an
// error against a reference that answered is a difference.
func TestRefused(t *testing.T) {
	opts := DefaultOptions()
	const orderBy = "This version of shardgate doesn't yet support 'ORDER BY across shards'"
	refusal := func(msg string) *mysql.SQLError {
		return &mysql.SQLError{Code: mysql.ERNotSupportedYet, State: mysql.StateSyntax, Message: msg}
	}
	tests := []struct {
		name      string
		refusable bool
		err       *mysql.SQLError
		want      bool
	}{
		{"order by", true, refusal("This version of shardgate doesn't yet support 'ORDER BY across shards on sharded table sf_user'"), true},
		{"aggregate", true, refusal("This version of shardgate doesn't yet support 'an aggregate on sharded table sf_user'"), true},
		{"shard key update", true, refusal("This version of shardgate doesn't yet support 'UPDATE of the shard key id of sf_user'"), true},
		{"construct not listed", true, refusal("This version of shardgate doesn't yet support 'a JOIN on sharded table sf_user'"), false},
		{"MariaDB's own", true, refusal("This version of MariaDB doesn't yet support 'LIMIT & IN/ALL/ANY/SOME subquery'"), false},
		{"wrong state", true, &mysql.SQLError{Code: mysql.ERNotSupportedYet, State: "HY000", Message: orderBy}, false},
		{"other error", true, &mysql.SQLError{Code: 1105, State: "HY000", Message: orderBy}, false},
		{"not refusable", false, refusal(orderBy), false},
		{"no error", true, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := Statement{Refusable: tt.refusable}
			got := Answer{Err: tt.err}
			if r := opts.Refused(&st, &got); r != tt.want {
				t.Fatalf("Refused = %v, want %v", r, tt.want)
			}
			if !tt.want && tt.err != nil && Diff(Answer{}, got, true) == "" {
				t.Errorf("an error where the reference succeeded is no difference")
			}
		})
	}
}

// TestRefusedInTransaction: a write inside a generated transaction may
// be refused for writing on a second shard only when the options say so
// (a refuse schema), and never a read.
func TestRefusedInTransaction(t *testing.T) {
	got := Answer{Err: &mysql.SQLError{Code: mysql.ERNotSupportedYet, State: mysql.StateSyntax,
		Message: "shardgate: this transaction already wrote to shard s0; a write to shard s1 in the same transaction is refused (cross_shard_writes: refuse). COMMIT or ROLLBACK first"}}
	write := Statement{InTrx: true, Writes: []string{tUser}}
	read := Statement{InTrx: true}
	outside := Statement{Writes: []string{tUser}}
	refuse := DefaultOptions()
	refuse.TrxRefusals = CrossShardWriteRefusals
	for _, tt := range []struct {
		name string
		opts Options
		st   Statement
		want bool
	}{
		{"refuse schema, write in a transaction", refuse, write, true},
		{"refuse schema, read in a transaction", refuse, read, false},
		{"refuse schema, write outside", refuse, outside, false},
		{"atomic schema, write in a transaction", DefaultOptions(), write, false},
	} {
		if r := tt.opts.Refused(&tt.st, &got); r != tt.want {
			t.Errorf("%s: Refused = %v, want %v", tt.name, r, tt.want)
		}
	}
}

func TestFormatRowBinary(t *testing.T) {
	cols := []Column{
		{Type: mysql.TypeLong}, {Type: mysql.TypeLongLong, Flags: mysql.FlagUnsigned}, {Type: mysql.TypeDouble},
		{Type: mysql.TypeDate}, {Type: mysql.TypeDateTime}, {Type: mysql.TypeNewDecimal}, {Type: mysql.TypeTiny},
	}
	row := Row{
		{Bytes: "\xfe\xff\xff\xff"},
		{Bytes: "\xff\xff\xff\xff\xff\xff\xff\xff"},
		{Bytes: "\x00\x00\x00\x00\x00\x00\xf8\x3f"},
		{Bytes: "\x04\xe8\x07\x02\x1d"},
		{Bytes: "\x0b\xe8\x07\x02\x1d\x17\x3b\x3a\x40\xe2\x01\x00"},
		{Bytes: "-1.50"},
		{Null: true},
	}
	want := `(-2, 18446744073709551615, 1.5, 2024-02-29 00:00:00.000000/4, 2024-02-29 23:59:58.123456/11, "-1.50", NULL)`
	if got := FormatRow(cols, row, true); got != want {
		t.Errorf("FormatRow = %s\nwant         %s", got, want)
	}
}

// TestFoldKey: the fold columns compare as utf8mb4_general_ci does on
// MariaDB 10.11 (SELECT 'Ève' = 'eve', '😀' = '😁 ', 'ß' = 'ss' …: 1, 1,
// 0), the others exactly.
func TestFoldKey(t *testing.T) {
	c := rowCompare{fold: []int{0}}
	row := func(a, b string) Row { return Row{{Bytes: a}, {Bytes: b}} }
	for _, tc := range []struct {
		a, b  string
		equal bool
	}{
		{"alice", "ALICE  ", true}, {"Ève", "eve", true}, {"😀", "😁 ", true}, {"ß", "ss", false},
		{"bob", "bobs", false}, {"", " ", true}, {"a\x00", "a", false},
	} {
		if got := c.key(row(tc.a, "x")) == c.key(row(tc.b, "x")); got != tc.equal {
			t.Errorf("fold %q, %q: equal=%v, want %v", tc.a, tc.b, got, tc.equal)
		}
		if c.key(row("x", tc.a)) == c.key(row("x", tc.b)) && tc.a != tc.b {
			t.Errorf("unfolded column: %q and %q compare equal", tc.a, tc.b)
		}
	}
	if c.key(Row{{Null: true}}) == c.key(Row{{Bytes: ""}}) {
		t.Error("NULL and '' compare equal")
	}
}

// TestDiffMergedPlanDependentColumns: a merged statement's columns come
// from one sub-table's plan; what a plan decides (key flags,
// NO_DEFAULT_VALUE and a string's decimals of a MIN read by a loose index
// scan) is not a difference, what the column is (its type, a number's
// decimals) still is.
func TestDiffMergedPlanDependentColumns(t *testing.T) {
	str := Column{Catalog: "def", Name: "MIN(name)", Charset: 45, Length: 128, Type: mysql.TypeVarString, Decimals: 39}
	answer := func(c Column) Answer {
		return Answer{Results: []Result{{Columns: []Column{c}, Rows: []Row{{{Bytes: "a"}}}}}}
	}
	merged := &Statement{Constructs: []string{"merge_group"}}
	loose := str
	loose.Flags, loose.Decimals = 0x1000, 0
	if d := DiffStatement("shop", answer(str), answer(loose), merged, nil); d != "" {
		t.Errorf("a loose index scan's MIN column is a difference: %s", d)
	}
	if d := DiffStatement("shop", answer(str), answer(loose), &Statement{}, nil); d == "" {
		t.Error("an unmerged statement's plan-dependent column is no difference")
	}
	num := Column{Catalog: "def", Name: "MIN(score)", Charset: 63, Length: 14, Type: mysql.TypeNewDecimal, Decimals: 2}
	other := num
	other.Decimals = 0
	if d := DiffStatement("shop", answer(num), answer(other), merged, nil); !strings.Contains(d, "decimals: reference 2, got 0") {
		t.Errorf("a number's decimals are compared in a merge: %q", d)
	}
}

// TestDiffPlanNotNull: a statement whose NOT_NULL flags depend on the plan
// (an outer join's NULL side) is not compared on that flag, and on no
// other for it.
func TestDiffPlanNotNull(t *testing.T) {
	ref, got := sampleAnswer(), sampleAnswer()
	got.Results[0].Columns[0].Flags &^= mysql.FlagNotNull
	outer := &Statement{Constructs: []string{"join_left"}, PlanNotNull: true}
	if d := DiffStatement("shop", ref, got, outer, nil); d != "" {
		t.Errorf("NOT_NULL by the plan: %s", d)
	}
	if d := DiffStatement("shop", ref, got, &Statement{Constructs: []string{"join_inner"}}, nil); !strings.Contains(d, "flags: reference") {
		t.Errorf("NOT_NULL of an inner join's column: %q, want a difference", d)
	}
	got.Results[0].Columns[0].Type = mysql.TypeLongLong
	if d := DiffStatement("shop", ref, got, outer, nil); !strings.Contains(d, "type: reference") {
		t.Errorf("type under PlanNotNull: %q, want a difference", d)
	}
}

// TestDiffDerivedOrgTable: a column of a derived table or WITH query is
// named after the plan, by the derived table or the base table it reads,
// with its schema or none; a name the statement does not give (a
// sub-table), another table alias, and the columns of a statement with no
// derived table are compared as usual.
func TestDiffDerivedOrgTable(t *testing.T) {
	derived := &Statement{Constructs: []string{"eval_derived"},
		SQL: "WITH d AS (SELECT DISTINCT o.user_id FROM sf_order AS o), e AS (SELECT d.user_id FROM d) SELECT u.id FROM e AS u"}
	empty := &Statement{Constructs: []string{"join_empty_side"},
		SQL: "SELECT u.id FROM (SELECT * FROM sf_user WHERE 1 = 0) AS u JOIN sf_order o ON o.user_id = u.id"}
	plain := &Statement{Constructs: []string{"join_inner"}, SQL: "SELECT u.id FROM sf_user u JOIN sf_order o ON o.user_id = u.id"}
	variant := func(schema, orgTable string) Answer {
		a := sampleAnswer()
		a.Results[0].Columns[0].Schema, a.Results[0].Columns[0].OrgTable = schema, orgTable
		return a
	}
	for _, c := range []struct {
		st       *Statement
		ref, got Answer
		want     string // "" for none
	}{
		{derived, variant("", "u"), variant("shop", "sf_order"), ""},
		{derived, variant("", "u"), variant("", "sf_order"), ""},
		{derived, variant("", "u"), variant("", ""), ""},
		{plain, variant("", "u"), variant("", ""), "org_table: reference"},
		{derived, variant("shop", "sf_order"), variant("", "d"), ""},
		{empty, variant("", "u"), variant("shop", "sf_user"), ""},
		{derived, variant("", "u"), variant("shop", "sf_order_0003"), "org_table: reference"},
		{derived, variant("", "u"), variant("shop_0", "sf_order"), "schema: reference"},
		{derived, variant("shop", "u"), variant("shop_0", "sf_order"), "schema: reference"},
		{derived, variant("shop", "sf_user"), variant("shop", "sf_order"), "org_table: reference"},
		{plain, variant("shop", "sf_user"), variant("", "u"), "org_table: reference"},
	} {
		d := DiffStatement("shop", c.ref, c.got, c.st, nil)
		if c.want == "" && d != "" || c.want != "" && !strings.Contains(d, c.want) {
			t.Errorf("%s: %+v against %+v: %q, want %q", c.st.SQL, c.got.Results[0].Columns[0], c.ref.Results[0].Columns[0], d, c.want)
		}
	}
	got := variant("shop", "sf_order")
	got.Results[0].Columns[0].Table = "x"
	if d := DiffStatement("shop", variant("", "u"), got, derived, nil); !strings.Contains(d, "table: reference") {
		t.Errorf("another table alias of a derived table's column: %q, want a difference", d)
	}
}

// TestDiffPlanOrgName: an expression's org_name, its name or empty by the
// plan, is not compared for a merged or evaluated statement; a table
// column's is.
func TestDiffPlanOrgName(t *testing.T) {
	expr := func(orgName string) Answer {
		a := sampleAnswer()
		c := &a.Results[0].Columns[0]
		c.Table, c.OrgTable, c.Name, c.OrgName = "", "", "u.city_id % 3", orgName
		return a
	}
	merged := &Statement{Constructs: []string{"group_by"}}
	if d := DiffStatement("shop", expr(""), expr("u.city_id % 3"), merged, nil); d != "" {
		t.Errorf("an expression's org_name by the plan: %s", d)
	}
	if d := DiffStatement("shop", expr(""), expr("other"), merged, nil); !strings.Contains(d, "org_name") {
		t.Errorf("an expression's org_name other than its name: %q, want a difference", d)
	}
	if d := DiffStatement("shop", expr(""), expr("u.city_id % 3"), &Statement{}, nil); !strings.Contains(d, "org_name") {
		t.Errorf("an unmerged statement's org_name: %q, want a difference", d)
	}
	ref, got := sampleAnswer(), sampleAnswer()
	got.Results[0].Columns[0].OrgName = ""
	if d := DiffStatement("shop", ref, got, merged, nil); !strings.Contains(d, "org_name") {
		t.Errorf("a table column's org_name: %q, want a difference", d)
	}
}

// TestDiffPlanTempField: a column one plan reads from its table and
// another from a temporary table (no org_table, its name as org_name,
// nullable) is no difference in a merged or evaluated statement; its type
// or name is.
func TestDiffPlanTempField(t *testing.T) {
	ref, got := sampleAnswer(), sampleAnswer()
	c := &got.Results[0].Columns[0]
	c.OrgTable, c.OrgName, c.Flags = "", c.Name, c.Flags&^mysql.FlagNotNull
	merged := &Statement{Constructs: []string{"rollup"}}
	if d := DiffStatement("shop", ref, got, merged, nil); d != "" {
		t.Errorf("a temporary table's field: %s", d)
	}
	if d := DiffStatement("shop", got, ref, merged, nil); d != "" {
		t.Errorf("a temporary table's field on the reference: %s", d)
	}
	if d := DiffStatement("shop", ref, got, &Statement{}, nil); !strings.Contains(d, "org_table") {
		t.Errorf("an unmerged statement: %q, want a difference", d)
	}
	c.Type = mysql.TypeLongLong
	if d := DiffStatement("shop", ref, got, merged, nil); !strings.Contains(d, "type: reference") || !strings.Contains(d, "org_table") {
		t.Errorf("another type: %q, want a difference", d)
	}
}

// TestDiffPlanTempFieldMergeable: the temporary table's field is told
// apart on the definitions as sent, before the derived table's rule.
func TestDiffPlanTempFieldMergeable(t *testing.T) {
	ref, got := sampleAnswer(), sampleAnswer()
	c := &got.Results[0].Columns[0]
	c.OrgTable, c.OrgName, c.Flags = "", c.Name, c.Flags&^mysql.FlagNotNull
	st := &Statement{Constructs: []string{"rollup"}, SQL: "SELECT d.id FROM (SELECT id FROM sf_user) AS d"}
	if d := DiffStatement("shop", ref, got, st, nil); d != "" {
		t.Errorf("a temporary table's field of a derived table: %s", d)
	}
}
