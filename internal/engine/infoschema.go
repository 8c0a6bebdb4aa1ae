package engine

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/sharding"
)

// InfoSchemaQuery builds the answer to a SELECT on information_schema
// tables that list tables (TABLES, COLUMNS, STATISTICS…) in a sharded
// schema, as one server holding the logical tables would answer it. The
// query ran on several servers (the planner rewrote it, see
// planner.Keyspace.InfoSchema): the default cluster for every table but
// the sharded ones, and the shard of each sharded table's sub-table 0 for
// that table's rows, each sub-table 0 read as its logical table (the
// other sub-tables are left out by the rewritten WHERE). Build puts the
// rows together, names sub-tables 0 by their logical names (and the
// constraint and index names derived from them), sets the sizes of
// information_schema.TABLES to those of all sub-tables, sorts the rows by
// the query's ORDER BY and cuts its LIMIT.
type InfoSchemaQuery struct {
	Schema *sharding.Schema
	// Rows is how many of the parts answer the query; the parts after them
	// give sizes (see Sizes).
	Rows int
	// Refs are the information_schema tables the query reads, in the order
	// of their hidden columns: each answer ends with the columns the
	// planner added to tell whose row it is (see InfoRef). Empty when the
	// query groups rows (DISTINCT, GROUP BY, aggregates), which must then
	// have run on one server: names are then renamed by their value.
	Refs []InfoRef
	// Order is the query's ORDER BY, applied to the rows put together.
	Order []OrderKey
	// Offset and Count are the query's LIMIT (Count < 0: none).
	Offset, Count int64
}

// InfoRef is an information_schema table of a query, and its hidden
// columns: its schema column (TABLE_SCHEMA, or CONSTRAINT_SCHEMA) and its
// TABLE_NAME as the server holds them, and for a table with a
// REFERENCED_TABLE_NAME, the referenced table's schema column.
type InfoRef struct {
	Referenced bool
}

// OrderKey is an ORDER BY item: a position (1-based), a result column's
// name, or (Hidden) a column the planner added after the select list,
// in the order of the keys, before the Refs' columns.
type OrderKey struct {
	Pos    int
	Name   string
	Hidden bool
	Desc   bool
}

// Sizes is the query each shard holding sub-tables answers for the
// figures of information_schema.TABLES that one server reports for all
// of a table's rows: its columns, in this order, then for each sub-table
// (named by the first column) its figures.
const Sizes = "TABLE_NAME, TABLE_ROWS, AVG_ROW_LENGTH, DATA_LENGTH, MAX_DATA_LENGTH, INDEX_LENGTH, DATA_FREE, AUTO_INCREMENT"

// infoStatus are the names of the figures of information_schema.TABLES,
// as statusTotals computes them.
var infoStatus = statusNames{rows: "TABLE_ROWS", avg: "AVG_ROW_LENGTH", data: "DATA_LENGTH",
	sum: []string{"TABLE_ROWS", "DATA_LENGTH", "MAX_DATA_LENGTH", "INDEX_LENGTH", "DATA_FREE"}, max: "AUTO_INCREMENT"}

// colRole is what Build does with a visible column's values.
type colRole uint8

const (
	roleKeep       colRole = iota
	roleTable              // TABLE_NAME: a sub-table 0 becomes its logical table
	roleReferenced         // REFERENCED_TABLE_NAME: a sub-table becomes its logical table
	roleDerived            // a constraint or index name derived from a sub-table 0's name
	roleSize               // a figure of information_schema.TABLES (infoStatus)
)

var nameRoles = map[string]colRole{
	"TABLE_NAME": roleTable, "REFERENCED_TABLE_NAME": roleReferenced,
	"CONSTRAINT_NAME": roleDerived, "INDEX_NAME": roleDerived, "UNIQUE_CONSTRAINT_NAME": roleDerived,
	"TABLE_ROWS": roleSize, "AVG_ROW_LENGTH": roleSize, "DATA_LENGTH": roleSize, "MAX_DATA_LENGTH": roleSize,
	"INDEX_LENGTH": roleSize, "DATA_FREE": roleSize, "AUTO_INCREMENT": roleSize,
}

// column is a visible column's role and the hidden columns of the table
// it comes from (ref < 0: unknown, the query groups rows).
type column struct {
	role colRole
	name string
	ref  int
}

// Build implements Metadata.Build.
func (q *InfoSchemaQuery) Build(results []*mysql.ResultSet) (*mysql.ResultSet, error) {
	first := results[0]
	sorting := 0
	for _, o := range q.Order {
		if o.Hidden {
			sorting++
		}
	}
	var refAt []int // the first hidden column of each ref, after the sort keys
	refCols := 0
	for _, r := range q.Refs {
		refAt = append(refAt, refCols)
		refCols += 2
		if r.Referenced {
			refCols++
		}
	}
	hidden := sorting + refCols
	visible := len(first.Columns) - hidden
	if visible <= 0 {
		return nil, fmt.Errorf("information_schema query answered %d columns, %d of them added", len(first.Columns), hidden)
	}
	defs := make([]mysql.ColumnDef, len(first.Columns))
	for i, c := range first.Columns {
		d, ok := mysql.ParseColumnDef(c)
		if !ok {
			return nil, fmt.Errorf("information_schema query: malformed column definition %d", i)
		}
		defs[i] = d
	}
	shown := visible + sorting // the columns whose values are renamed
	cols, err := q.roles(defs, shown, refAt)
	if err != nil {
		return nil, err
	}
	totals, err := q.totals(results[q.Rows:])
	if err != nil {
		return nil, err
	}
	out := &mysql.ResultSet{Columns: first.Columns[:visible], Warnings: first.Warnings, Status: first.Status}
	for _, rs := range results[:q.Rows] {
		if len(rs.Columns) != len(first.Columns) {
			return nil, fmt.Errorf("information_schema query: shards answered %d and %d columns", len(first.Columns), len(rs.Columns))
		}
		for _, row := range rs.Rows {
			q.rename(row, cols, shown, refAt, totals)
			out.Rows = append(out.Rows, row)
		}
	}
	if err := q.sort(out.Rows, defs[:shown], visible); err != nil {
		return nil, err
	}
	out.Rows = q.limit(out.Rows)
	for i, row := range out.Rows {
		out.Rows[i] = row[:visible:visible]
	}
	return out, nil
}

// roles says what to do with each visible column: information_schema's
// name and size columns, told by their definitions (org_table and
// org_name survive aliases), each tied to its table's hidden columns by
// the definitions' table (the alias or name the query gives it).
func (q *InfoSchemaQuery) roles(defs []mysql.ColumnDef, shown int, refAt []int) ([]column, error) {
	cols := make([]column, shown)
	for i, d := range defs[:shown] {
		cols[i].ref = -1
		if !strings.EqualFold(string(d.Schema), "information_schema") || len(d.OrgTable) == 0 {
			continue
		}
		role := nameRoles[strings.ToUpper(string(d.OrgName))]
		if role == roleSize && !strings.EqualFold(string(d.OrgTable), "TABLES") {
			role = roleKeep
		}
		cols[i] = column{role: role, name: strings.ToUpper(string(d.OrgName)), ref: -1}
		for j, at := range refAt {
			if bytes.Equal(defs[shown+at].Table, d.Table) {
				cols[i].ref = j
			}
		}
		if role != roleKeep && cols[i].ref < 0 && len(refAt) > 0 {
			return nil, fmt.Errorf("information_schema query: column %s of %s is of no table the query names", d.Name, d.Table)
		}
	}
	return cols, nil
}

// rename rewrites the visible values of row that name sub-tables.
func (q *InfoSchemaQuery) rename(row [][]byte, cols []column, shown int, refAt []int, totals map[string]map[string][]byte) {
	for i, c := range cols {
		v := row[i]
		if c.role == roleKeep || v == nil {
			continue
		}
		var schema, table, refSchema []byte
		if c.ref >= 0 {
			h := row[shown+refAt[c.ref]:]
			schema, table = h[0], h[1]
			if q.Refs[c.ref].Referenced {
				refSchema = h[2]
			}
		}
		mine := func(s []byte) bool { return c.ref < 0 || string(s) == q.Schema.Name }
		switch c.role {
		case roleTable:
			if t := q.subTableZero(v); t != nil && mine(schema) {
				row[i] = []byte(t.Name)
			}
		case roleReferenced:
			if t, _, ok := subTable(q.Schema, v); ok && mine(refSchema) {
				row[i] = []byte(t.Name)
			}
		case roleDerived:
			if mine(schema) {
				row[i] = q.derivedName(v, table)
			}
		case roleSize:
			if t := q.subTableZero(table); t != nil && mine(schema) {
				if f, ok := totals[t.Name][c.name]; ok {
					row[i] = f
				}
			}
		}
	}
}

// subTableZero returns the sharded table whose sub-table 0 is named name.
func (q *InfoSchemaQuery) subTableZero(name []byte) *sharding.SchemaTable {
	if t, i, ok := subTable(q.Schema, name); ok && i == 0 {
		return t
	}
	return nil
}

// derivedName renames a constraint or index name that starts with the
// name of a sub-table 0 (a foreign key's t_0000_ibfk_1) to start with its
// logical table's (t_ibfk_1), as the server names them for the logical
// table. table is the row's table (empty when unknown: any sub-table 0).
func (q *InfoSchemaQuery) derivedName(v, table []byte) []byte {
	for _, t := range q.Schema.Tables() {
		if t.Type != sharding.TableSharded {
			continue
		}
		sub := sharding.SubTableName(t.Name, 0)
		if len(table) > 0 && string(table) != sub {
			continue
		}
		if len(v) > len(sub) && string(v[:len(sub)]) == sub && v[len(sub)] == '_' {
			return append([]byte(t.Name), v[len(sub):]...)
		}
	}
	return v
}

// totals sums the figures of each sharded table's sub-tables from the
// size parts' answers (columns as Sizes), by logical table and column.
func (q *InfoSchemaQuery) totals(parts []*mysql.ResultSet) (map[string]map[string][]byte, error) {
	if len(parts) == 0 {
		return nil, nil
	}
	cols := parts[0].Columns
	subs := map[*sharding.SchemaTable][][][]byte{}
	zero := map[*sharding.SchemaTable][][]byte{}
	for _, rs := range parts {
		for _, row := range rs.Rows {
			if len(row) != len(cols) {
				return nil, fmt.Errorf("information_schema sizes: %d values for %d columns", len(row), len(cols))
			}
			t, i, ok := subTable(q.Schema, row[0])
			if !ok {
				continue
			}
			subs[t] = append(subs[t], row)
			if i == 0 {
				zero[t] = slices.Clone(row)
			}
		}
	}
	out := make(map[string]map[string][]byte, len(zero))
	for t, row := range zero {
		statusTotals(cols, row, subs[t], infoStatus)
		figures := make(map[string][]byte, len(cols))
		for j, def := range cols[1:] {
			figures[strings.ToUpper(string(mysql.ColumnDefName(def)))] = row[j+1]
		}
		out[t.Name] = figures
	}
	return out, nil
}

// sort orders rows by the query's ORDER BY, as the server compares the
// columns' values: NULL first, numbers as numbers, strings under their
// collation. Rows equal by every key keep their order (the parts'
// natural order: ORDER BY was left out of them). defs are the visible
// columns', then the hidden sort keys'.
func (q *InfoSchemaQuery) sort(rows [][][]byte, defs []mysql.ColumnDef, visible int) error {
	if len(q.Order) == 0 {
		return nil
	}
	keys := make([]int, len(q.Order))
	hidden := visible
	for k, o := range q.Order {
		switch {
		case o.Hidden:
			keys[k] = hidden
			hidden++
		case o.Pos > 0:
			if o.Pos > visible { // the server, which ran the ORDER BY, refuses it first
				return fmt.Errorf("ORDER BY %d of %d columns", o.Pos, visible)
			}
			keys[k] = o.Pos - 1
		default:
			keys[k] = -1
			for i, d := range defs[:visible] {
				if strings.EqualFold(string(d.Name), o.Name) {
					keys[k] = i
					break
				}
			}
			if keys[k] < 0 {
				return fmt.Errorf("ORDER BY %s: no such result column", o.Name)
			}
		}
	}
	slices.SortStableFunc(rows, func(a, b [][]byte) int {
		for k, i := range keys {
			c := compareValues(a[i], b[i], &defs[i])
			if q.Order[k].Desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return 0
	})
	return nil
}

// compareValues compares two text-protocol values of a column.
func compareValues(a, b []byte, d *mysql.ColumnDef) int {
	switch {
	case a == nil || b == nil:
		return boolCmp(a != nil, b != nil)
	case numeric(d.Type):
		return compareNumbers(a, b, d.Flags&mysql.FlagUnsigned != 0)
	}
	if c, ok := sharding.CollationByID(d.Charset); ok {
		if r, ok := c.Compare(string(a), string(b)); ok {
			return r
		}
	}
	return bytes.Compare(a, b)
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func numeric(t byte) bool {
	switch t {
	case mysql.TypeTiny, mysql.TypeShort, mysql.TypeLong, mysql.TypeLongLong, mysql.TypeInt24, mysql.TypeYear,
		mysql.TypeFloat, mysql.TypeDouble, mysql.TypeDecimal, mysql.TypeNewDecimal:
		return true
	}
	return false
}

// compareNumbers compares integers exactly, other numbers as doubles.
func compareNumbers(a, b []byte, unsigned bool) int {
	if unsigned {
		x, errx := strconv.ParseUint(string(a), 10, 64)
		y, erry := strconv.ParseUint(string(b), 10, 64)
		if errx == nil && erry == nil {
			return cmpOrdered(x, y)
		}
	}
	x, errx := strconv.ParseInt(string(a), 10, 64)
	y, erry := strconv.ParseInt(string(b), 10, 64)
	if errx == nil && erry == nil {
		return cmpOrdered(x, y)
	}
	f, _ := strconv.ParseFloat(string(a), 64)
	g, _ := strconv.ParseFloat(string(b), 64)
	return cmpOrdered(f, g)
}

func cmpOrdered[T int64 | uint64 | float64](x, y T) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// limit cuts rows to the query's LIMIT.
func (q *InfoSchemaQuery) limit(rows [][][]byte) [][][]byte {
	if q.Count < 0 {
		return rows
	}
	if q.Offset >= int64(len(rows)) {
		return rows[:0]
	}
	rows = rows[q.Offset:]
	if q.Count < int64(len(rows)) {
		rows = rows[:q.Count]
	}
	return rows
}
