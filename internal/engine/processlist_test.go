package engine

import (
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
)

// plDef is a column definition of information_schema.PROCESSLIST (org
// name org, shown as name), or of SHOW PROCESSLIST when org is "".
func plDef(name, org string) []byte {
	b := mysql.AppendLenEncStr(nil, "def")
	table := ""
	if org != "" {
		table = "PROCESSLIST"
		b = mysql.AppendLenEncStr(b, "information_schema")
	} else {
		b = mysql.AppendLenEncStr(b, "")
	}
	b = mysql.AppendLenEncStr(b, table)
	b = mysql.AppendLenEncStr(b, table)
	b = mysql.AppendLenEncStr(b, name)
	b = mysql.AppendLenEncStr(b, org)
	b = append(b, 0x0c)
	b = mysql.AppendUint16(b, 45)
	b = mysql.AppendUint32(b, 0)
	b = append(b, 253)
	b = mysql.AppendUint16(b, 0)
	return append(b, 0, 0, 0)
}

func plDefs(names ...string) [][]byte {
	var defs [][]byte
	for _, n := range names {
		if strings.ToUpper(n) == n {
			defs = append(defs, plDef(n, n))
		} else {
			defs = append(defs, plDef(n, ""))
		}
	}
	return defs
}

// plRowsOf renders a result's rows, NULL as "NULL".
func plRowsOf(rs *mysql.ResultSet) [][]string {
	var out [][]string
	for _, r := range rs.Rows {
		var row []string
		for _, v := range r {
			if v == nil {
				row = append(row, "NULL")
			} else {
				row = append(row, string(v))
			}
		}
		out = append(out, row)
	}
	return out
}

func TestProcesslistAnswer(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	long := strings.Repeat("x", 98) + "é and more" // the 100-byte cut falls inside é
	huge := strings.Repeat("y", 70000)
	procs := []Process{
		{ID: 7, User: "app", Host: "127.0.0.1:5000", Command: "Sleep", Since: now.Add(-90 * time.Second)},
		{ID: 3, User: "app", Host: "127.0.0.1:5001", DB: "shop", Command: "Query", State: "Executing", Info: []byte(long), Since: now.Add(-1500 * time.Millisecond)},
		{ID: 9, User: "ops", Host: "::1:5002", Command: "Query", Info: []byte("SHOW PROCESSLIST"), Self: true, Since: now},
		{ID: 5, User: "bob", Host: "127.0.0.1:5003", Command: "Query", State: "Executing", Info: []byte(huge)},
	}
	showDefs := plDefs("Id", "User", "Host", "db", "Command", "Time", "State", "Info", "Progress")

	pl := &Processlist{Show: true}
	rs, err := pl.Answer(showDefs, 0, procs, now)
	if err != nil {
		t.Fatal(err)
	}
	got := plRowsOf(rs)
	want := [][]string{
		{"3", "app", "127.0.0.1:5001", "shop", "Query", "1", "Executing", long[:100], "0.000"},
		{"5", "bob", "127.0.0.1:5003", "NULL", "Query", "0", "Executing", huge[:100], "0.000"},
		{"7", "app", "127.0.0.1:5000", "NULL", "Sleep", "90", "", "NULL", "0.000"},
		{"9", "ops", "::1:5002", "NULL", "Query", "0", "starting", "SHOW PROCESSLIST", "0.000"},
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("SHOW PROCESSLIST:\n got %q\nwant %q", got, want)
	}
	pl.Full = true
	rs, _ = pl.Answer(showDefs, 0, procs, now)
	if got := plRowsOf(rs); got[0][7] != long || got[1][7] != huge {
		t.Errorf("SHOW FULL PROCESSLIST cut the statements: %d, %d bytes", len(got[0][7]), len(got[1][7]))
	}

	// information_schema: newest first, INFO cut at 65,535 bytes, the
	// asking session's own state, times in ms.
	pl = &Processlist{}
	rs, err = pl.Answer(plDefs("ID", "TIME", "STATE", "INFO", "TIME_MS", "INFO_BINARY", "QUERY_ID"), 0, procs, now)
	if err != nil {
		t.Fatal(err)
	}
	got = plRowsOf(rs)
	if ids := []string{got[0][0], got[1][0], got[2][0], got[3][0]}; !slices.Equal(ids, []string{"9", "7", "5", "3"}) {
		t.Errorf("default order %v, want newest first", ids)
	}
	if got[0][2] != "Filling schema table" || got[2][3] != huge[:65535] || got[2][5] != huge[:65535] || got[3][4] != "1500.000" || got[1][3] != "NULL" {
		t.Errorf("information_schema rows: %q", got)
	}

	// ORDER BY (NULLs first, strings under general_ci), LIMIT, OFFSET.
	pl = &Processlist{Order: []ProcessOrder{{Field: pfDB}, {Pos: 2, Field: -1, Desc: true}}, HasLimit: true, Offset: 1, Limit: 2}
	rs, err = pl.Answer(plDefs("ID", "USER"), 0, procs, now)
	if err != nil {
		t.Fatal(err)
	}
	if got := plRowsOf(rs); !slices.EqualFunc(got, [][]string{{"5", "bob"}, {"7", "app"}}, slices.Equal) {
		t.Errorf("ordered and cut: %q", got)
	}

	// A column the proxy does not fill (a later server's) is refused.
	_, err = (&Processlist{}).Answer([][]byte{plDef("SENT_ROWS", "SENT_ROWS")}, 0, procs, now)
	if se, ok := err.(*mysql.SQLError); !ok || se.Code != mysql.ERNotSupportedYet {
		t.Errorf("unknown column: %v, want 1235", err)
	}
}

func TestProcessCond(t *testing.T) {
	num := func(n int64) *ProcessCond { return &ProcessCond{Op: CondLiteral, Value: PValue{Num: big.NewRat(n, 1)}} }
	str := func(s string) *ProcessCond { return &ProcessCond{Op: CondLiteral, Value: PValue{Str: []byte(s)}} }
	null := &ProcessCond{Op: CondLiteral, Value: PValue{Null: true}}
	col := func(f int) *ProcessCond { return &ProcessCond{Op: CondField, Field: f} }
	cmp := func(op string, a, b *ProcessCond) *ProcessCond {
		return &ProcessCond{Op: CondCompare, Cmp: op, Args: []*ProcessCond{a, b}}
	}
	row := (&Processlist{}).values(&Process{ID: 42, User: "app", Command: "Sleep", Info: []byte("SELECT 1\t")}, time.Now())
	tests := []struct {
		name string
		c    *ProcessCond
		want tri
	}{
		{"USER = 'APP  '", cmp(CmpEQ, col(pfUser), str("APP  ")), triTrue},
		{"USER = 'ap'", cmp(CmpEQ, col(pfUser), str("ap")), triFalse},
		{"USER > 'ap'", cmp(CmpGT, col(pfUser), str("ap")), triTrue},
		{"INFO > 'SELECT 1' (a tab sorts before the pad space)", cmp(CmpGT, col(pfInfo), str("SELECT 1")), triFalse},
		{"INFO_BINARY = 'SELECT 1\\t'", cmp(CmpEQ, col(pfInfoBinary), str("SELECT 1\t")), triTrue},
		{"INFO_BINARY = 'select 1\\t'", cmp(CmpEQ, col(pfInfoBinary), str("select 1\t")), triFalse},
		{"ID = 42", cmp(CmpEQ, col(pfID), num(42)), triTrue},
		{"ID < 42", cmp(CmpLT, col(pfID), num(42)), triFalse},
		{"DB = 'x'", cmp(CmpEQ, col(pfDB), str("x")), triNull},
		{"DB <=> NULL", cmp(CmpNullEQ, col(pfDB), null), triTrue},
		{"NOT DB = 'x'", &ProcessCond{Op: CondNot, Args: []*ProcessCond{cmp(CmpEQ, col(pfDB), str("x"))}}, triNull},
		{"DB = 'x' OR ID = 42", &ProcessCond{Op: CondOr, Args: []*ProcessCond{cmp(CmpEQ, col(pfDB), str("x")), cmp(CmpEQ, col(pfID), num(42))}}, triTrue},
		{"DB = 'x' AND ID = 1", &ProcessCond{Op: CondAnd, Args: []*ProcessCond{cmp(CmpEQ, col(pfDB), str("x")), cmp(CmpEQ, col(pfID), num(1))}}, triFalse},
		{"ID IN (1, NULL)", &ProcessCond{Op: CondIn, Args: []*ProcessCond{col(pfID), num(1), null}}, triNull},
		{"ID NOT IN (1, 42)", &ProcessCond{Op: CondIn, Not: true, Args: []*ProcessCond{col(pfID), num(1), num(42)}}, triFalse},
		{"ID BETWEEN 40 AND 50", &ProcessCond{Op: CondBetween, Args: []*ProcessCond{col(pfID), num(40), num(50)}}, triTrue},
		{"ID NOT BETWEEN 40 AND NULL", &ProcessCond{Op: CondBetween, Not: true, Args: []*ProcessCond{col(pfID), num(40), null}}, triNull},
		{"INFO IS NULL", &ProcessCond{Op: CondIsNull, Args: []*ProcessCond{col(pfInfo)}}, triFalse},
		{"DB IS NOT NULL", &ProcessCond{Op: CondIsNull, Not: true, Args: []*ProcessCond{col(pfDB)}}, triFalse},
		{"DB = 'x' IS NOT TRUE", &ProcessCond{Op: CondIsTrue, Not: true, Args: []*ProcessCond{cmp(CmpEQ, col(pfDB), str("x"))}}, triTrue},
		{"USER LIKE 'A%'", &ProcessCond{Op: CondLike, Escape: '\\', Args: []*ProcessCond{col(pfUser), str("A%")}}, triTrue},
		{"USER LIKE 'ap'", &ProcessCond{Op: CondLike, Escape: '\\', Args: []*ProcessCond{col(pfUser), str("ap")}}, triFalse},
		{"COMMAND NOT LIKE 'Sl_ep'", &ProcessCond{Op: CondLike, Not: true, Escape: '\\', Args: []*ProcessCond{col(pfCommand), str("Sl_ep")}}, triFalse},
		{"INFO_BINARY LIKE 'select%'", &ProcessCond{Op: CondLike, Escape: '\\', Args: []*ProcessCond{col(pfInfoBinary), str("select%")}}, triFalse},
		{"TIME", col(pfTime), triFalse},
		{"ID", col(pfID), triTrue},
	}
	for _, tc := range tests {
		if got := tc.c.eval(row); got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCompareGeneralCI(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"a", "A", 0}, {"a", "a  ", 0}, {"a", "a\t", 1}, {"a", "ab", -1}, {"é", "E", 0},
		{"a b", "a", 1}, {"", " ", 0}, {"B", "a", 1},
	}
	for _, tc := range tests {
		got := compareGeneralCI([]byte(tc.a), []byte(tc.b))
		if (got > 0) != (tc.want > 0) || (got < 0) != (tc.want < 0) {
			t.Errorf("compare(%q, %q) = %d, want sign of %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestNumberValue(t *testing.T) {
	for s, ok := range map[string]bool{"42": true, " 42 ": true, "-1.5": true, "4.2e1": true, "": false, "42abc": false, "1/2": false, "0x10": false, "abc": false} {
		if _, got := NumberValue(s); got != ok {
			t.Errorf("NumberValue(%q) ok = %v, want %v", s, got, ok)
		}
	}
}
