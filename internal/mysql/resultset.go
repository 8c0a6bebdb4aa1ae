package mysql

// Result sets the proxy composes itself (answers it gives without a
// backend), in the client's format.

// Column describes a result column.
type Column struct {
	Name     string
	Type     byte
	Charset  uint16
	Length   uint32
	Flags    uint16
	Decimals byte
	// Expression: the column of an expression, which has no original
	// name (a server's @@session.warning_count).
	Expression bool
}

// Column flags used by the proxy's own results.
const (
	FlagNotNull  uint16 = 1
	FlagUnsigned uint16 = 32
	FlagBinary   uint16 = 128
	FlagEnum     uint16 = 256
	FlagSet      uint16 = 2048
)

// AppendColumnDef appends a protocol 4.1 column definition.
func AppendColumnDef(b []byte, c *Column) []byte {
	b = AppendLenEncStr(b, "def")
	b = AppendLenEncStr(b, "") // schema
	b = AppendLenEncStr(b, "") // table
	b = AppendLenEncStr(b, "") // original table
	b = AppendLenEncStr(b, c.Name)
	if c.Expression {
		b = AppendLenEncStr(b, "")
	} else {
		b = AppendLenEncStr(b, c.Name)
	}
	b = append(b, 0x0c)
	b = AppendUint16(b, c.Charset)
	b = AppendUint32(b, c.Length)
	b = append(b, c.Type)
	b = AppendUint16(b, c.Flags)
	b = append(b, c.Decimals, 0, 0)
	return b
}

// WriteTextResult queues a whole text-protocol result set for a client with
// capabilities caps, ending with status.
func (c *Conn) WriteTextResult(cols []Column, rows [][]string, caps uint32, status uint16) error {
	if err := c.writeColumns(cols, caps, status); err != nil {
		return err
	}
	for _, row := range rows {
		b := c.BeginPacket()
		for _, v := range row {
			b = AppendLenEncStr(b, v)
		}
		if err := c.EndPacket(b); err != nil {
			return err
		}
	}
	return c.WriteTerminator(0, status, caps)
}

// WriteTextResultNullable is WriteTextResult for rows with NULLs: a nil
// value is NULL.
func (c *Conn) WriteTextResultNullable(cols []Column, rows [][]*string, caps uint32, status uint16) error {
	if err := c.writeColumns(cols, caps, status); err != nil {
		return err
	}
	for _, row := range rows {
		b := c.BeginPacket()
		for _, v := range row {
			if v == nil {
				b = append(b, 0xfb)
				continue
			}
			b = AppendLenEncStr(b, *v)
		}
		if err := c.EndPacket(b); err != nil {
			return err
		}
	}
	return c.WriteTerminator(0, status, caps)
}

// writeColumns queues a text result set's column count and definitions,
// and the EOF after them for a client without CLIENT_DEPRECATE_EOF.
func (c *Conn) writeColumns(cols []Column, caps uint32, status uint16) error {
	if err := c.EndPacket(AppendLenEncInt(c.BeginPacket(), uint64(len(cols)))); err != nil {
		return err
	}
	for i := range cols {
		if err := c.EndPacket(AppendColumnDef(c.BeginPacket(), &cols[i])); err != nil {
			return err
		}
	}
	if caps&ClientDeprecateEOF == 0 {
		return c.EndPacket(AppendEOF(c.BeginPacket(), 0, status))
	}
	return nil
}

// WriteTerminator queues the packet that ends a result set's rows in the
// form a client with capabilities caps expects: an OK with the 0xfe header
// under CLIENT_DEPRECATE_EOF, a classic EOF otherwise.
func (c *Conn) WriteTerminator(warnings, status uint16, caps uint32) error {
	if caps&ClientDeprecateEOF != 0 {
		ok := OKPacket{Status: status, Warnings: warnings}
		return c.EndPacket(AppendOK(c.BeginPacket(), HeaderEOF, &ok, caps))
	}
	return c.EndPacket(AppendEOF(c.BeginPacket(), warnings, status))
}
