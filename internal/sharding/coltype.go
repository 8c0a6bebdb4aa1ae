package sharding

import (
	"fmt"
	"strings"
)

// ColumnInfo is a column as information_schema.COLUMNS describes it.
type ColumnInfo struct {
	DataType   string // DATA_TYPE: int, varchar, decimal …
	ColumnType string // COLUMN_TYPE: int(11) unsigned …
	Precision  int    // NUMERIC_PRECISION
	Scale      int    // NUMERIC_SCALE, or DATETIME_PRECISION for datetimes
	Collation  string // COLLATION_NAME; "" for non-strings
	Extra      string // EXTRA: auto_increment …
}

// KeyColumnType returns the shard-key type of a column, or an error for
// a type that cannot be a shard key (FLOAT compares inexactly, TIMESTAMP
// depends on the session's time zone, and string keys need a collation
// this package implements).
func KeyColumnType(c ColumnInfo) (ColumnType, error) {
	ct, err := keyColumnType(c)
	ct.AutoIncrement = err == nil && strings.Contains(strings.ToLower(c.Extra), "auto_increment")
	return ct, err
}

func keyColumnType(c ColumnInfo) (ColumnType, error) {
	unsigned := strings.Contains(strings.ToLower(c.ColumnType), "unsigned")
	switch dt := strings.ToLower(c.DataType); dt {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint":
		bits := map[string]int{"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "integer": 32, "bigint": 64}[dt]
		if unsigned {
			return ColumnType{Class: ClassUint, Bits: bits}, nil
		}
		return ColumnType{Class: ClassInt, Bits: bits}, nil
	case "decimal", "numeric":
		return ColumnType{Class: ClassDecimal, Precision: c.Precision, Scale: c.Scale}, nil
	case "double", "real":
		return ColumnType{Class: ClassDouble}, nil
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext":
		coll, err := LookupCollation(c.Collation)
		if err != nil {
			return ColumnType{}, err
		}
		return ColumnType{Class: ClassString, Collation: coll}, nil
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		return ColumnType{Class: ClassString, Collation: CollationBinary}, nil
	case "date":
		return ColumnType{Class: ClassDate}, nil
	case "datetime":
		return ColumnType{Class: ClassDatetime, Scale: c.Scale}, nil
	}
	return ColumnType{}, fmt.Errorf("a %s column cannot be a shard key (supported: integers, DECIMAL, DOUBLE, strings, DATE, DATETIME)", c.ColumnType)
}
