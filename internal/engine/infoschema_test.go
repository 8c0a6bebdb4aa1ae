package engine

import (
	"fmt"
	"testing"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/sharding"
)

// infoSchema is schema shop with t sharded over 4 sub-tables.
func infoSchema(t *testing.T) *sharding.Schema {
	t.Helper()
	s := sharding.NewSchema("shop", "s0", []string{"s0", "s1"})
	h, err := sharding.NewHash(4)
	if err != nil {
		t.Fatal(err)
	}
	l, err := sharding.NewLayout([]string{"s0", "s1"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	g, err := sharding.NewGroup(h, l)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(&sharding.SchemaTable{Table: sharding.Table{Name: "t", ShardKey: "id", Group: g}, Type: sharding.TableSharded}); err != nil {
		t.Fatal(err)
	}
	return s
}

// isCol is the definition of column orgName of information_schema table
// (alias) as the server sends it: utf8mb3_general_ci strings, or
// unsigned BIGINT numbers.
func isCol(table, orgTable, name, orgName string, number bool) []byte {
	c := &mysql.Column{Name: name, Type: mysql.TypeVarString, Charset: 33, Length: 192}
	if number {
		c = &mysql.Column{Name: name, Type: mysql.TypeLongLong, Charset: 63, Length: 21, Flags: mysql.FlagUnsigned}
	}
	var b []byte
	for _, s := range []string{"def", "information_schema", table, orgTable, name, orgName} {
		b = mysql.AppendLenEncStr(b, s)
	}
	// AppendColumnDef writes the proxy's own (empty) table fields: keep its
	// fixed fields, after name and org_name.
	def := mysql.AppendColumnDef(nil, c)
	return append(b, def[len(def)-13:]...)
}

func rows(vals ...[]any) [][][]byte {
	var out [][][]byte
	for _, r := range vals {
		var row [][]byte
		for _, v := range r {
			if v == nil {
				row = append(row, nil)
			} else {
				row = append(row, []byte(fmt.Sprint(v)))
			}
		}
		out = append(out, row)
	}
	return out
}

func TestInfoSchemaBuild(t *testing.T) {
	sch := infoSchema(t)
	cols := [][]byte{
		isCol("TABLES", "TABLES", "TABLE_NAME", "TABLE_NAME", false),
		isCol("TABLES", "TABLES", "TABLE_ROWS", "TABLE_ROWS", true),
		isCol("TABLES", "TABLES", "shardgate_0", "ENGINE", false), // a hidden sort key
		isCol("TABLES", "TABLES", "shardgate_1", "TABLE_SCHEMA", false),
		isCol("TABLES", "TABLES", "shardgate_2", "TABLE_NAME", false),
	}
	def := &mysql.ResultSet{Columns: cols, Rows: rows(
		[]any{"b", 5, "InnoDB", "shop", "b"},
		[]any{"t_0000", 1, "InnoDB", "shop", "t_0000"}, // sub-table 0 on the default cluster
		[]any{"t_0000", 9, "Aria", "other", "t_0000"},  // another database's table of that name
		[]any{"A", nil, "InnoDB", "shop", "A"},
	)}
	s1 := &mysql.ResultSet{Columns: cols} // no sub-table 0 there
	sizeCols := [][]byte{}
	for _, n := range []string{"TABLE_NAME", "TABLE_ROWS", "AVG_ROW_LENGTH", "DATA_LENGTH", "MAX_DATA_LENGTH", "INDEX_LENGTH", "DATA_FREE", "AUTO_INCREMENT"} {
		sizeCols = append(sizeCols, isCol("TABLES", "TABLES", n, n, n != "TABLE_NAME"))
	}
	sizes0 := &mysql.ResultSet{Columns: sizeCols, Rows: rows(
		[]any{"t_0000", 1, 16384, 16384, 0, 0, 0, 10},
		[]any{"t_0001", 2, 8192, 16384, 0, 0, 0, 30},
	)}
	sizes1 := &mysql.ResultSet{Columns: sizeCols, Rows: rows(
		[]any{"t_0002", 3, 5461, 16384, 0, 0, 0, 20},
		[]any{"t_0003", 0, 0, 16384, 0, 0, 0, nil},
	)}
	for _, tc := range []struct {
		order         []OrderKey
		offset, count int64
		want          string
	}{
		{nil, 0, -1, "[[b 5] [t 6] [t_0000 9] [A <nil>]]"},
		// the ORDER BY of a utf8mb3_general_ci column: A < b < t < t_0000
		{[]OrderKey{{Name: "table_name"}}, 0, -1, "[[A <nil>] [b 5] [t 6] [t_0000 9]]"},
		{[]OrderKey{{Pos: 2, Desc: true}}, 0, -1, "[[t_0000 9] [t 6] [b 5] [A <nil>]]"},
		// a hidden sort key (ENGINE): Aria < InnoDB
		{[]OrderKey{{Hidden: true}, {Pos: 1, Desc: true}}, 0, -1, "[[t_0000 9] [t 6] [b 5] [A <nil>]]"},
		{[]OrderKey{{Pos: 1}}, 1, 2, "[[b 5] [t 6]]"},
		{[]OrderKey{{Pos: 1}}, 5, 2, "[]"},
	} {
		q := &InfoSchemaQuery{Schema: sch, Rows: 2, Refs: []InfoRef{{}}, Order: tc.order, Offset: tc.offset, Count: tc.count}
		clone := func(rs *mysql.ResultSet) *mysql.ResultSet {
			c := *rs
			c.Rows = nil
			for _, r := range rs.Rows {
				c.Rows = append(c.Rows, append([][]byte(nil), r...))
			}
			return &c
		}
		parts := []*mysql.ResultSet{clone(def), clone(s1), clone(sizes0), clone(sizes1)}
		if len(tc.order) == 0 || !tc.order[0].Hidden { // no sort key added: no ENGINE column
			for _, p := range parts[:2] {
				p.Columns = append(p.Columns[:2:2], p.Columns[3:]...)
				for i, r := range p.Rows {
					p.Rows[i] = append(r[:2:2], r[3:]...)
				}
			}
		}
		out, err := q.Build(parts)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Columns) != 2 {
			t.Errorf("%d columns, want the 2 the client asked for", len(out.Columns))
		}
		var got [][]any
		for _, r := range out.Rows {
			var row []any
			for _, v := range r {
				if v == nil {
					row = append(row, nil)
				} else {
					row = append(row, string(v))
				}
			}
			got = append(got, row)
		}
		if fmt.Sprint(got) != tc.want && !(tc.want == "[]" && len(got) == 0) {
			t.Errorf("order %+v limit %d, %d: %v, want %s", tc.order, tc.offset, tc.count, got, tc.want)
		}
	}
}

func TestDerivedName(t *testing.T) {
	q := &InfoSchemaQuery{Schema: infoSchema(t)}
	for in, want := range map[string]string{
		"t_0000_ibfk_1": "t_ibfk_1", "PRIMARY": "PRIMARY", "t_0001_ibfk_1": "t_0001_ibfk_1", "t_0000": "t_0000", "kv": "kv",
	} {
		if got := string(q.derivedName([]byte(in), []byte("t_0000"))); got != want {
			t.Errorf("derivedName(%q) = %q, want %q", in, got, want)
		}
	}
}
