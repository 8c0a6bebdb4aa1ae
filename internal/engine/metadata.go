package engine

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/sharding"
)

// Metadata answers a statement about the tables of a sharded schema (SHOW
// TABLES, SHOW CREATE TABLE, information_schema…) as one server holding
// the logical tables would: it runs its parts, reads their answers (small:
// metadata) into memory, and Build rewrites them into the client's answer,
// where sub-tables appear as their logical table, once. A part's error is
// the client's.
type Metadata struct {
	Parts []Part
	// Build makes the answer from the parts' result sets, in part order.
	Build func(results []*mysql.ResultSet) (*mysql.ResultSet, error)
}

// Execute implements Primitive.
func (m *Metadata) Execute(c Cursor, q []byte) bool {
	results := make([]*mysql.ResultSet, len(m.Parts))
	for i := range m.Parts {
		p := &m.Parts[i]
		conn, ok := c.Acquire(p.Cluster, false)
		if conn == nil {
			return ok
		}
		if err := c.Send(conn, p, q); err != nil {
			return c.Failed(conn, err, false)
		}
		rs, serr, err := mysql.ReadResultSet(conn.Conn, conn.Caps)
		if err != nil {
			return c.Failed(conn, mysql.BackendError(err), false)
		}
		info := mysql.ResponseInfo{Results: 1, Err: serr}
		if rs != nil {
			info.ResultSet, info.Status, info.Warnings, info.Rows = true, rs.Status, rs.Warnings, uint64(len(rs.Rows))
		}
		c.Done(conn, &info)
		if serr != nil {
			return c.Fail(serr)
		}
		results[i] = rs
	}
	rs, err := m.Build(results)
	if err != nil {
		var se *mysql.SQLError
		if !errors.As(err, &se) {
			se = mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax, "shardgate: %v", err)
		}
		return c.Fail(se)
	}
	return c.AnswerResult(rs)
}

// subTable reports whether name is a sub-table of a sharded table of sch
// (as sharding.SubTableName names them) and which: the table and number.
func subTable(sch *sharding.Schema, name []byte) (*sharding.SchemaTable, int, bool) {
	logical, ok := sharding.LogicalName(name)
	if !ok {
		return nil, 0, false
	}
	t := sch.TableBytes(logical)
	if t == nil || t.Type != sharding.TableSharded || t.Name != string(logical) {
		return nil, 0, false
	}
	i, err := strconv.Atoi(string(name[len(logical)+1:]))
	if err != nil || i >= t.Group.Layout.SubTables() || sharding.SubTableName(t.Name, i) != string(name) {
		return nil, 0, false
	}
	return t, i, true
}

// TableList builds the answer to SHOW [FULL] TABLES or SHOW TABLE STATUS
// in schema sch. results[0] is the default cluster's answer to the
// statement as the client wrote it: its column definitions and the rows of
// the tables that are not sharded, filtered by the server. The other
// results are the unfiltered statement on each shard holding sub-tables:
// each sharded table gets one row, its sub-table 0's renamed (TABLE
// STATUS: with sizes summed over every sub-table, see statusTotals), kept
// when match accepts it (the statement's LIKE). Rows sort by name, as the
// server sorts them. The table named hidden (the proxy's own sequence
// counters) is left out.
func TableList(sch *sharding.Schema, status bool, match func(name []byte) bool, hidden ...string) func([]*mysql.ResultSet) (*mysql.ResultSet, error) {
	return func(results []*mysql.ResultSet) (*mysql.ResultSet, error) {
		out := &mysql.ResultSet{Columns: results[0].Columns, Warnings: results[0].Warnings}
		for _, row := range results[0].Rows {
			if slices.Contains(hidden, string(row[0])) {
				continue // the proxy's own tables, not the application's
			}
			if _, _, ok := subTable(sch, row[0]); !ok {
				out.Rows = append(out.Rows, row)
			}
		}
		logical := map[*sharding.SchemaTable][][]byte{}
		var subs map[*sharding.SchemaTable][][][]byte
		if status {
			subs = map[*sharding.SchemaTable][][][]byte{}
		}
		for _, rs := range results[1:] {
			for _, row := range rs.Rows {
				t, i, ok := subTable(sch, row[0])
				if !ok {
					continue
				}
				if i == 0 {
					row[0] = []byte(t.Name)
					logical[t] = row
				}
				if status {
					subs[t] = append(subs[t], row)
				}
			}
		}
		for t, row := range logical {
			if !match(row[0]) {
				continue
			}
			if status {
				statusTotals(results[1].Columns, row, subs[t], showStatus)
			}
			out.Rows = append(out.Rows, row)
		}
		slices.SortFunc(out.Rows, func(a, b [][]byte) int { return bytes.Compare(a[0], b[0]) })
		return out, nil
	}
}

// statusNames names the figures of a table's status: SHOW TABLE STATUS's
// columns or information_schema.TABLES'.
type statusNames struct {
	rows, avg, data string
	sum             []string // summed over the sub-tables
	max             string   // the highest of the sub-tables'
}

var showStatus = statusNames{rows: "Rows", avg: "Avg_row_length", data: "Data_length",
	sum: []string{"Rows", "Data_length", "Max_data_length", "Index_length", "Data_free"}, max: "Auto_increment"}

// statusTotals sets the status row of a sharded table (its sub-table 0's,
// with columns cols named as in names) to what one server holding every
// row would report, as nearly as the sub-tables tell (the server's own
// figures are estimates too): rows and sizes summed, the average row
// length recomputed, and the AUTO_INCREMENT counter the highest of the
// sub-tables' (the next id above every row).
func statusTotals(cols [][]byte, row [][]byte, subs [][][]byte, names statusNames) {
	for j, def := range cols {
		switch name := string(mysql.ColumnDefName(def)); {
		case slices.Contains(names.sum, name):
			row[j] = sumColumn(subs, j)
		case name == names.max:
			row[j] = maxColumn(subs, j)
		}
	}
	for j, def := range cols {
		if string(mysql.ColumnDefName(def)) == names.avg {
			row[j] = avgRowLength(cols, row, names)
		}
	}
}

func sumColumn(rows [][][]byte, j int) []byte {
	var sum uint64
	null := true
	for _, r := range rows {
		if n, err := strconv.ParseUint(string(r[j]), 10, 64); err == nil && r[j] != nil {
			sum += n
			null = false
		}
	}
	if null {
		return nil
	}
	return strconv.AppendUint(nil, sum, 10)
}

func maxColumn(rows [][][]byte, j int) []byte {
	var best []byte
	var max uint64
	for _, r := range rows {
		if n, err := strconv.ParseUint(string(r[j]), 10, 64); err == nil && r[j] != nil && (best == nil || n > max) {
			best, max = r[j], n
		}
	}
	return best
}

// avgRowLength is the data length divided by the rows, as InnoDB
// computes it (0 without rows).
func avgRowLength(cols [][]byte, row [][]byte, names statusNames) []byte {
	var rows, data uint64
	for j, def := range cols {
		switch string(mysql.ColumnDefName(def)) {
		case names.rows:
			rows, _ = strconv.ParseUint(string(row[j]), 10, 64)
		case names.data:
			data, _ = strconv.ParseUint(string(row[j]), 10, 64)
		}
	}
	if rows == 0 {
		return []byte("0")
	}
	return strconv.AppendUint(nil, data/rows, 10)
}

// SubTableAnswer builds the answer to a statement about one sharded
// table (SHOW COLUMNS, SHOW INDEX, DESCRIBE) run on its sub-table 0: the
// values of the columns named "Table" that name the sub-table name the
// logical table instead.
func SubTableAnswer(logical, sub string) func([]*mysql.ResultSet) (*mysql.ResultSet, error) {
	return func(results []*mysql.ResultSet) (*mysql.ResultSet, error) {
		rs := results[0]
		for j, def := range rs.Columns {
			if string(mysql.ColumnDefName(def)) != "Table" {
				continue
			}
			for _, row := range rs.Rows {
				if string(row[j]) == sub {
					row[j] = []byte(logical)
				}
			}
		}
		return rs, nil
	}
}

// CreateTable builds the answer to SHOW CREATE TABLE of a sharded table:
// results[0] is its sub-table 0's, the others each shard's highest
// AUTO_INCREMENT counter among the table's sub-tables (one value, NULL
// when none has one). The DDL names the logical table, and its
// AUTO_INCREMENT= option gives the highest counter of all sub-tables, as
// one server holding every row would (its next id is above every row).
func CreateTable(logical, sub string) func([]*mysql.ResultSet) (*mysql.ResultSet, error) {
	return func(results []*mysql.ResultSet) (*mysql.ResultSet, error) {
		rs := results[0]
		if len(rs.Rows) != 1 || len(rs.Columns) < 2 {
			return nil, fmt.Errorf("SHOW CREATE TABLE %s: %d rows of %d columns", sub, len(rs.Rows), len(rs.Columns))
		}
		var counters [][][]byte
		for _, r := range results[1:] {
			counters = append(counters, r.Rows...)
		}
		row := rs.Rows[0]
		row[0] = []byte(logical)
		ddl, err := renameCreate(row[1], sub, logical)
		if err != nil {
			return nil, err
		}
		row[1] = withAutoIncrement(ddl, maxColumn(counters, 0))
		return rs, nil
	}
}

// renameCreate renames the table in the head of a CREATE TABLE text, its
// name quoted or bare (sql_quote_show_create).
func renameCreate(ddl []byte, sub, logical string) ([]byte, error) {
	for _, q := range []string{"`", ""} {
		head := "CREATE TABLE " + q + sub + q
		if bytes.HasPrefix(ddl, []byte(head)) {
			return append([]byte("CREATE TABLE "+q+logical+q), ddl[len(head):]...), nil
		}
	}
	return nil, fmt.Errorf("SHOW CREATE TABLE %s answered a text that does not start with its name", sub)
}

// withAutoIncrement sets the AUTO_INCREMENT= table option of a CREATE
// TABLE text to counter, adding it after ENGINE= when the text has none
// (a counter of 1 is never shown, as the server omits it).
func withAutoIncrement(ddl, counter []byte) []byte {
	if counter == nil || string(counter) == "1" {
		return ddl
	}
	opts := bytes.LastIndex(ddl, []byte("\n)"))
	if opts < 0 {
		return ddl
	}
	const key = " AUTO_INCREMENT="
	if i := bytes.Index(ddl[opts:], []byte(key)); i >= 0 {
		start := opts + i + len(key)
		end := start
		for end < len(ddl) && ddl[end] >= '0' && ddl[end] <= '9' {
			end++
		}
		return slices.Concat(ddl[:start], counter, ddl[end:])
	}
	i := bytes.Index(ddl[opts:], []byte(" ENGINE="))
	if i < 0 {
		return ddl
	}
	end := opts + i + len(" ENGINE=")
	for end < len(ddl) && ddl[end] != ' ' {
		end++
	}
	return slices.Concat(ddl[:end], []byte(key), counter, ddl[end:])
}
