package mysql

import "fmt"

// Whole text result sets held in memory: answers the proxy reads from a
// backend to rewrite them (metadata of sharded schemas: SHOW TABLES,
// information_schema…), which are small, and writes to a client in its
// format.

// ResultSet is a text-protocol result set. Columns are the column
// definition payloads as the server sent them; a nil value in a row is
// NULL.
type ResultSet struct {
	Columns  [][]byte
	Rows     [][][]byte
	Warnings uint16
	Status   uint16 // the terminator's server status
}

// maxBufferedColumns bounds the column count a buffered result may claim.
const maxBufferedColumns = 4096

// ReadResultSet reads the answer to a COM_QUERY from backend c (with
// capabilities caps) into memory: one result set, or the server's error
// (serr). An OK, several results or a malformed packet are errors.
func ReadResultSet(c *Conn, caps uint32) (rs *ResultSet, serr *SQLError, err error) {
	p, err := c.ReadPacket()
	if err != nil {
		return nil, nil, err
	}
	switch {
	case IsErr(p):
		return nil, ParseErr(p), nil
	case IsOK(p):
		return nil, nil, fmt.Errorf("an OK where a result set was expected: %w", ErrMalformed)
	}
	n, _, _, ok := ReadLenEncInt(p)
	if !ok || n == 0 || n > maxBufferedColumns {
		return nil, nil, fmt.Errorf("column count: %w", ErrMalformed)
	}
	rs = &ResultSet{Columns: make([][]byte, n)}
	for i := range rs.Columns {
		if p, err = c.ReadPacket(); err != nil {
			return nil, nil, err
		}
		rs.Columns[i] = append([]byte(nil), p...)
	}
	if caps&ClientDeprecateEOF == 0 {
		if _, err = c.ReadPacket(); err != nil {
			return nil, nil, err
		}
	}
	for {
		if p, err = c.ReadPacket(); err != nil {
			return nil, nil, err
		}
		if IsErr(p) {
			return nil, ParseErr(p), nil
		}
		if IsEOF(p) {
			return rs, nil, rs.end(p, caps)
		}
		row, err := parseTextRow(p, len(rs.Columns))
		if err != nil {
			return nil, nil, err
		}
		rs.Rows = append(rs.Rows, row)
	}
}

// end records the terminator p; a result followed by more is refused,
// since its reader takes one.
func (rs *ResultSet) end(p []byte, caps uint32) error {
	if caps&ClientDeprecateEOF != 0 {
		ok, valid := ParseOK(p, caps)
		if !valid {
			return fmt.Errorf("result terminator: %w", ErrMalformed)
		}
		rs.Warnings, rs.Status = ok.Warnings, ok.Status
	} else {
		w, st, ok := ParseEOF(p)
		if !ok {
			return fmt.Errorf("result terminator: %w", ErrMalformed)
		}
		rs.Warnings, rs.Status = w, st
	}
	if rs.Status&StatusMoreResultsExists != 0 {
		return fmt.Errorf("several results where one was expected: %w", ErrMalformed)
	}
	return nil
}

// parseTextRow splits a text-protocol row of n values (nil for NULL).
func parseTextRow(p []byte, n int) ([][]byte, error) {
	r := NewReader(p)
	row := make([][]byte, n)
	for i := range row {
		if rest := r.Rest(); len(rest) > 0 && rest[0] == 0xfb {
			r.Byte()
			continue
		}
		row[i] = append([]byte{}, r.LenEncString()...)
	}
	if !r.OK() || len(r.Rest()) != 0 {
		return nil, fmt.Errorf("row: %w", ErrMalformed)
	}
	return row, nil
}

// WriteResultSet queues rs for a client with capabilities caps, ending
// with status and rs's warnings.
func (c *Conn) WriteResultSet(rs *ResultSet, caps uint32, status uint16) error {
	if err := c.EndPacket(AppendLenEncInt(c.BeginPacket(), uint64(len(rs.Columns)))); err != nil {
		return err
	}
	for _, def := range rs.Columns {
		if err := c.EndPacket(append(c.BeginPacket(), def...)); err != nil {
			return err
		}
	}
	if caps&ClientDeprecateEOF == 0 {
		if err := c.EndPacket(AppendEOF(c.BeginPacket(), 0, status)); err != nil {
			return err
		}
	}
	for _, row := range rs.Rows {
		b := c.BeginPacket()
		for _, v := range row {
			if v == nil {
				b = append(b, 0xfb)
				continue
			}
			b = AppendLenEncString(b, v)
		}
		if err := c.EndPacket(b); err != nil {
			return err
		}
	}
	return c.WriteTerminator(rs.Warnings, status, caps)
}

// ColumnDefName returns the name (the alias the client sees) of a column
// definition payload.
func ColumnDefName(def []byte) []byte {
	r := NewReader(def)
	for i := 0; i < 4; i++ { // catalog, schema, table, org_table
		r.LenEncString()
	}
	name := r.LenEncString()
	if !r.OK() {
		return nil
	}
	return name
}

// ColumnDefType returns the type of a column definition payload.
func ColumnDefType(def []byte) byte {
	r := NewReader(def)
	for i := 0; i < 6; i++ {
		r.LenEncString()
	}
	r.LenEncInt()
	r.Uint16() // charset
	r.Uint32() // length
	return r.Byte()
}

// WithColumnDefName returns def with its name (not org_name) set to name.
func WithColumnDefName(def []byte, name string) []byte {
	r := NewReader(def)
	for i := 0; i < 4; i++ {
		r.LenEncString()
	}
	at := r.pos
	r.LenEncString()
	if !r.OK() {
		return def
	}
	b := append([]byte(nil), def[:at]...)
	b = AppendLenEncStr(b, name)
	return append(b, def[r.pos:]...)
}
