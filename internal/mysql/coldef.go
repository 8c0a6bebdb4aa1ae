package mysql

// Column definitions as a relay rewrites or checks them: logical table names
// in place of a shard's physical ones, and the facts that decide how a
// client decodes a column's values.

// TableRenamer maps the physical table a backend names in a column
// definition (its schema and org_table fields) to the logical table the
// client must see, reporting ok=false for a table it does not know. It is
// called once per column definition, so it must not allocate.
type TableRenamer func(schema, orgTable []byte) (logical []byte, ok bool)

// colDefTables locates the table and org_table fields of a ColumnDefinition41
// payload (catalog, schema, table, org_table, name, org_name, fixed fields):
// p[tableAt:orgAt] is the length-encoded table, p[orgAt:orgEnd] the
// length-encoded org_table. ok is false for a payload too short to hold them.
func colDefTables(p []byte) (schema, table, orgTable []byte, tableAt, orgAt, orgEnd int, ok bool) {
	r := NewReader(p)
	r.LenEncString() // catalog
	schema = r.LenEncString()
	tableAt = r.pos
	table = r.LenEncString()
	orgAt = r.pos
	orgTable = r.LenEncString()
	return schema, table, orgTable, tableAt, orgAt, r.pos, r.OK()
}

// colRename is a column definition's table fields to be rewritten.
type colRename struct {
	logical                []byte
	tableAt, orgAt, orgEnd int
	alias                  bool // table is an alias, kept as the client wrote it
}

// colDefRename reports how to rewrite the column definition p, or false
// when it names no table rename knows.
func colDefRename(p []byte, rename TableRenamer) (colRename, bool) {
	schema, table, orgTable, tableAt, orgAt, orgEnd, ok := colDefTables(p)
	if !ok || len(orgTable) == 0 {
		return colRename{}, false
	}
	logical, ok := rename(schema, orgTable)
	if !ok {
		return colRename{}, false
	}
	return colRename{logical: logical, tableAt: tableAt, orgAt: orgAt, orgEnd: orgEnd,
		alias: string(table) != string(orgTable)}, true
}

// appendTo appends p rewritten: org_table logical, and table too unless it
// is an alias.
func (cr *colRename) appendTo(b, p []byte) []byte {
	b = append(b, p[:cr.tableAt]...)
	if cr.alias {
		b = append(b, p[cr.tableAt:cr.orgAt]...)
	} else {
		b = AppendLenEncString(b, cr.logical)
	}
	b = AppendLenEncString(b, cr.logical)
	return append(b, p[cr.orgEnd:]...)
}

// colSig is what of a column definition decides how a client decodes the
// column's values: type, character set and the UNSIGNED flag. Parts of one
// result set must agree on it; lengths, names and other flags may differ.
// The character string types CHAR, VARCHAR and VAR_STRING are one type
// here (sigType): a value of any of them is the same length-encoded string
// in the text and the binary protocol alike. MariaDB types a column of
// one statement either way depending on its plan: MIN() of a CHAR column
// read from a derived table is a VARCHAR, the same in each SELECT of a
// UNION ALL a CHAR (seed 987654321, statement #3182 of the differential
// test), and a merge that took that for a difference sent the UNION's
// definitions, without their table, instead of the client statement's.
// The BLOB types (TINY, MEDIUM, LONG) are one type for the same reason:
// a GROUP_CONCAT in a derived table is a BLOB, the same in a UNION ALL a
// LONG BLOB (seed 4242 after sf_member.tag was added, statement #2070).
type colSig uint32

// colDefSig returns the signature of a column definition payload.
func colDefSig(p []byte) (colSig, bool) {
	r := NewReader(p)
	for i := 0; i < 6; i++ { // catalog, schema, table, org_table, name, org_name
		r.LenEncString()
	}
	r.LenEncInt() // length of the fixed fields
	charset := r.Uint16()
	r.Uint32() // column length
	typ := r.Byte()
	flags := r.Uint16()
	if !r.OK() {
		return 0, false
	}
	return colSig(sigType(typ)) | colSig(charset)<<8 | colSig(flags&FlagUnsigned)<<24, true
}

// sigType is typ as colSig compares it: the character string types as
// one (VAR_STRING), the BLOB types as one (BLOB), every other type as
// itself.
func sigType(typ byte) byte {
	switch typ {
	case TypeString, TypeVarchar:
		return TypeVarString
	case TypeTinyBlob, TypeMediumBlob, TypeLongBlob:
		return TypeBlob
	}
	return typ
}

// ColumnDef is what a column definition says about where a column comes
// from and how its values compare.
type ColumnDef struct {
	Schema, Table, OrgTable, Name, OrgName []byte
	Charset                                uint16 // the collation id
	Length                                 uint32
	Type                                   byte
	Flags                                  uint16
	Decimals                               byte
}

// ParseColumnDef reads a ColumnDefinition41 payload; its byte fields
// alias p. ok is false for a payload too short to hold them.
func ParseColumnDef(p []byte) (d ColumnDef, ok bool) {
	r := NewReader(p)
	r.LenEncString() // catalog
	d.Schema = r.LenEncString()
	d.Table = r.LenEncString()
	d.OrgTable = r.LenEncString()
	d.Name = r.LenEncString()
	d.OrgName = r.LenEncString()
	r.LenEncInt() // length of the fixed fields
	d.Charset = r.Uint16()
	d.Length = r.Uint32()
	d.Type = r.Byte()
	d.Flags = r.Uint16()
	d.Decimals = r.Byte()
	return d, r.OK()
}
