package mysql

import (
	"bytes"
	"testing"
)

// renameShop knows the sub-tables sf_user_0000..0007 of database shop.
func renameShop(schema, table []byte) ([]byte, bool) {
	if string(schema) != "shop" || len(table) != len("sf_user_0000") || string(table[:8]) != "sf_user_" {
		return nil, false
	}
	return table[:7], true
}

// colDef is a ColumnDefinition41 payload with the given table fields; tail
// stands for what follows org_name (the fixed fields, and a COM_FIELD_LIST
// default value).
func colDef(schema, table, orgTable, name string, tail []byte) []byte {
	var b []byte
	for _, s := range []string{"def", schema, table, orgTable, name, name} {
		b = AppendLenEncStr(b, s)
	}
	return append(b, tail...)
}

// fixedFields are the fields after org_name: a VARCHAR(80) utf8mb4 column.
var fixedFields = []byte{0x0c, 45, 0, 80, 0, 0, 0, TypeVarString, 0, 0, 0, 0, 0}

func TestColumnDefinitionRename(t *testing.T) {
	long := string(bytes.Repeat([]byte("x"), 300)) // a length prefix of 3 bytes
	for _, tc := range []struct {
		name string
		in   []byte
		want []byte // nil: passes unchanged
	}{
		{name: "sub-table", in: colDef("shop", "sf_user_0003", "sf_user_0003", "id", fixedFields),
			want: colDef("shop", "sf_user", "sf_user", "id", fixedFields)},
		{name: "alias kept", in: colDef("shop", "u", "sf_user_0003", "id", fixedFields),
			want: colDef("shop", "u", "sf_user", "id", fixedFields)},
		{name: "alias that is another sub-table's name kept", in: colDef("shop", "sf_user_0001", "sf_user_0003", "id", fixedFields),
			want: colDef("shop", "sf_user_0001", "sf_user", "id", fixedFields)},
		{name: "field list default value kept", in: colDef("shop", "sf_user_0007", "sf_user_0007", long, append(fixedFields[:len(fixedFields):len(fixedFields)], 3, 'a', 'b', 'c')),
			want: colDef("shop", "sf_user", "sf_user", long, append(fixedFields[:len(fixedFields):len(fixedFields)], 3, 'a', 'b', 'c'))},
		{name: "unsharded table", in: colDef("shop", "sf_city", "sf_city", "id", fixedFields)},
		{name: "other database", in: colDef("other", "sf_user_0003", "sf_user_0003", "id", fixedFields)},
		{name: "expression", in: colDef("", "", "", "COUNT(*)", fixedFields)},
		{name: "derived table", in: colDef("", "t", "", "id", fixedFields)},
		{name: "truncated", in: colDef("shop", "sf_user_0003", "sf_user_0003", "id", nil)[:12]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			in := stream(1, tc.in)
			r := &Relay{Client: NewConn(&memConn{w: &out}), Backend: NewConn(&memConn{r: bytes.NewReader(in)}), RenameTable: renameShop}
			r.Client.SetSeq(1)
			p, more, err := r.readColumn()
			if err != nil {
				t.Fatal(err)
			}
			if err := r.forwardColumn(p, more); err != nil {
				t.Fatal(err)
			}
			if err := r.Client.Flush(); err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if want == nil {
				want = tc.in
			}
			if got := out.Bytes(); !bytes.Equal(got, frame(1, want)) {
				t.Fatalf("got\n%q\nwant\n%q", got, frame(1, want))
			}
		})
	}
}

// TestRenameInEveryResponse: result sets (text or binary), prepare responses
// and COM_FIELD_LIST all carry the logical names, and renaming costs no
// allocation, whether a name matches or not.
func TestRenameInEveryResponse(t *testing.T) {
	phys := func(table string) []byte { return colDef("shop", table, "sf_user_0002", "id", fixedFields) }
	logical := func(table string) []byte { return colDef("shop", table, "sf_user", "id", fixedFields) }
	city := colDef("shop", "sf_city", "sf_city", "name", fixedFields)
	ok := AppendOK(nil, HeaderEOF, &OKPacket{Status: StatusAutocommit}, 0)
	prepareOK := []byte{HeaderOK, 7, 0, 0, 0, 2, 0, 1, 0, 0, 0, 0}
	param := colDef("", "", "", "?", fixedFields)
	for _, tc := range []struct {
		name     string
		in, want []byte
		run      func(r *Relay) error
	}{
		{
			name: "result set",
			in:   stream(1, []byte{3}, phys("sf_user_0002"), phys("u"), city, AppendLenEncStr(nil, "1"), ok),
			want: stream(1, []byte{3}, logical("sf_user"), logical("u"), city, AppendLenEncStr(nil, "1"), ok),
			run:  func(r *Relay) error { return r.Query() },
		},
		{
			name: "prepare",
			in:   stream(1, prepareOK, param, phys("sf_user_0002"), city),
			want: stream(1, prepareOK, param, logical("sf_user"), city),
			run:  func(r *Relay) error { _, _, _, _, err := r.Prepare(7); return err },
		},
		{
			name: "field list",
			in:   stream(1, phys("sf_user_0002"), city, ok),
			want: stream(1, logical("sf_user"), city, ok),
			run:  func(r *Relay) error { return r.FieldList() },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			src := bytes.NewReader(tc.in)
			r := &Relay{Client: NewConn(&memConn{w: &out}), Backend: NewConn(&memConn{r: src}),
				ClientCaps: capsWith(true), BackendCaps: capsWith(true), RenameTable: renameShop}
			run := func() {
				src.Reset(tc.in)
				out.Reset()
				r.Client.SetSeq(1)
				r.Backend.SetSeq(1)
				if err := tc.run(r); err != nil {
					t.Fatal(err)
				}
			}
			run()
			if !bytes.Equal(out.Bytes(), tc.want) {
				t.Fatalf("got\n%q\nwant\n%q", out.Bytes(), tc.want)
			}
			if allocs := testing.AllocsPerRun(50, run); allocs != 0 {
				t.Fatalf("%v allocations per response, want 0", allocs)
			}
		})
	}
}

// TestColumnsDifferStringTypes: CHAR, VARCHAR and VAR_STRING columns of
// one character set decode alike (MariaDB types MIN() of a CHAR column as
// either, by its plan), while another character set, another type or
// signedness still differ.
func TestColumnsDifferStringTypes(t *testing.T) {
	with := func(typ byte, charset uint16, flags uint16) [][]byte {
		return [][]byte{columnDef("id", TypeLong), AppendColumnDef(nil, &Column{Name: "c", Type: typ, Charset: charset, Flags: flags})}
	}
	const utf8, bin = uint16(CollationUTF8MB4GeneralCI), uint16(CollationBinary)
	for _, tc := range []struct {
		name string
		a, b [][]byte
		want int
	}{
		{"CHAR and VAR_STRING", with(TypeString, utf8, 0), with(TypeVarString, utf8, 0), -1},
		{"VARCHAR and CHAR", with(TypeVarchar, utf8, 0), with(TypeString, utf8, 0), -1},
		{"CHAR of another character set", with(TypeString, utf8, 0), with(TypeVarString, bin, 0), 1},
		{"CHAR and BLOB", with(TypeString, utf8, 0), with(TypeBlob, utf8, 0), 1},
		{"BLOB and LONG BLOB", with(TypeBlob, utf8, 0), with(TypeLongBlob, utf8, 0), -1},
		{"TINY BLOB and MEDIUM BLOB", with(TypeTinyBlob, bin, 0), with(TypeMediumBlob, bin, 0), -1},
		{"LONG BLOB of another character set", with(TypeBlob, utf8, 0), with(TypeLongBlob, bin, 0), 1},
		{"INT and BIGINT", with(TypeLong, bin, 0), with(TypeLongLong, bin, 0), 1},
		{"signedness", with(TypeLong, bin, 0), with(TypeLong, bin, FlagUnsigned), 1},
	} {
		if got := ColumnsDiffer(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: ColumnsDiffer = %d, want %d", tc.name, got, tc.want)
		}
	}
}
