package sharding

import "testing"

func TestKeyColumnType(t *testing.T) {
	for _, tc := range []struct {
		in   ColumnInfo
		want ColumnType
		err  bool
	}{
		{ColumnInfo{DataType: "int", ColumnType: "int(11)"}, ColumnType{Class: ClassInt, Bits: 32}, false},
		{ColumnInfo{DataType: "bigint", ColumnType: "bigint(20) unsigned"}, ColumnType{Class: ClassUint, Bits: 64}, false},
		{ColumnInfo{DataType: "bigint", ColumnType: "bigint(20) unsigned", Extra: "auto_increment"}, ColumnType{Class: ClassUint, Bits: 64, AutoIncrement: true}, false},
		{ColumnInfo{DataType: "tinyint", ColumnType: "tinyint(4)"}, ColumnType{Class: ClassInt, Bits: 8}, false},
		{ColumnInfo{DataType: "decimal", ColumnType: "decimal(10,2)", Precision: 10, Scale: 2}, ColumnType{Class: ClassDecimal, Precision: 10, Scale: 2}, false},
		{ColumnInfo{DataType: "varchar", ColumnType: "varchar(20)", Collation: "utf8mb4_general_ci"}, ColumnType{Class: ClassString, Collation: CollationUTF8MB4GeneralCI}, false},
		{ColumnInfo{DataType: "varbinary", ColumnType: "varbinary(20)"}, ColumnType{Class: ClassString, Collation: CollationBinary}, false},
		{ColumnInfo{DataType: "datetime", ColumnType: "datetime(3)", Scale: 3}, ColumnType{Class: ClassDatetime, Scale: 3}, false},
		{ColumnInfo{DataType: "date", ColumnType: "date"}, ColumnType{Class: ClassDate}, false},
		{ColumnInfo{DataType: "float", ColumnType: "float"}, ColumnType{}, true},
		{ColumnInfo{DataType: "timestamp", ColumnType: "timestamp"}, ColumnType{}, true},
		{ColumnInfo{DataType: "varchar", ColumnType: "varchar(20)", Collation: "latin1_swedish_ci"}, ColumnType{Class: ClassString, Collation: mustCollation(t, "latin1_swedish_ci")}, false},
		{ColumnInfo{DataType: "char", ColumnType: "char(20)", Collation: "utf8mb4_unicode_ci"}, ColumnType{Class: ClassString, Collation: mustCollation(t, "utf8mb4_unicode_ci")}, false},
		{ColumnInfo{DataType: "varchar", ColumnType: "varchar(20)", Collation: "utf8mb4_uca1400_ai_ci"}, ColumnType{}, true},
		{ColumnInfo{DataType: "varchar", ColumnType: "varchar(20)", Collation: "utf8mb4_general_nopad_ci"}, ColumnType{}, true},
	} {
		got, err := KeyColumnType(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("KeyColumnType(%+v) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func mustCollation(t *testing.T, name string) Collation {
	t.Helper()
	c, err := LookupCollation(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
