package difftest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
)

// Target is a server the harness talks to: the reference, or shardgate
// standing in front of the shards.
type Target struct {
	Name           string // in reports: "reference", "shardgate"
	Addr           string // host:port
	User, Password string
	Database       string // the schema's name, the same on both targets
}

// Client is one connection to a target that records every part of an
// answer. It is backend.Conn (the proxy's own client: dial, auth, framing)
// with result reading that keeps what the proxy's relay passes through
// without looking: every column-definition field, raw rows, OK fields.
type Client struct {
	conn   *backend.Conn
	target Target
}

// Dial connects and logs in to t with the utf8mb4_general_ci connection
// collation.
func Dial(ctx context.Context, t Target) (*Client, error) {
	dc := &backend.DialConfig{
		Addr: t.Addr, User: t.User, Password: t.Password, Database: t.Database,
		ConnectTimeout: 10 * time.Second, Charset: mysql.CollationUTF8MB4GeneralCI,
	}
	c, err := backend.Dial(ctx, dc, false)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name, err)
	}
	return &Client{conn: c, target: t}, nil
}

// Close ends the connection.
func (c *Client) Close() error { return c.conn.Close() }

// errAnswer is an Answer for a statement that failed with e.
func errAnswer(e *mysql.SQLError) Answer { return Answer{Err: e} }

// Query runs sql with COM_QUERY and returns its answer (all result sets of
// a multi-statement). The error is for a broken connection or a malformed
// answer; a server's ERR is part of the Answer.
func (c *Client) Query(sql string) (Answer, error) {
	if err := c.command(mysql.ComQuery, []byte(sql)); err != nil {
		return Answer{}, err
	}
	return c.readResults(false)
}

// command sends one command packet and flushes it.
func (c *Client) command(cmd byte, arg []byte) error {
	c.conn.ResetSeq()
	b := append(c.conn.BeginPacket(), cmd)
	b = append(b, arg...)
	if err := c.conn.EndPacket(b); err != nil {
		return fmt.Errorf("%s: send command: %w", c.target.Name, err)
	}
	if err := c.conn.FlushForReply(); err != nil {
		return fmt.Errorf("%s: send command: %w", c.target.Name, err)
	}
	return nil
}

func (c *Client) read() ([]byte, error) {
	p, err := c.conn.ReadPacket()
	if err != nil {
		return nil, fmt.Errorf("%s: read answer: %w", c.target.Name, err)
	}
	return p, nil
}

// readResults reads OK / ERR / result sets until no more results follow.
func (c *Client) readResults(binary bool) (Answer, error) {
	var a Answer
	for {
		res, more, serr, err := c.readResult(binary)
		if err != nil {
			return Answer{}, err
		}
		if res != nil {
			a.Results = append(a.Results, *res)
		}
		if serr != nil {
			a.Err = serr
			return a, nil
		}
		if !more {
			return a, nil
		}
	}
}

// readResult reads one result: an OK, an ERR, or a result set (whose rows
// are kept even when an ERR ends it).
func (c *Client) readResult(binary bool) (res *Result, more bool, serr *mysql.SQLError, err error) {
	p, err := c.read()
	if err != nil {
		return nil, false, nil, err
	}
	switch {
	case mysql.IsErr(p):
		return nil, false, mysql.ParseErr(p), nil
	case mysql.IsOK(p):
		r, err := c.okResult(p)
		if err != nil {
			return nil, false, nil, err
		}
		return r, r.Status&mysql.StatusMoreResultsExists != 0, nil, nil
	case len(p) > 0 && p[0] == mysql.HeaderLocalInfile:
		return nil, false, nil, fmt.Errorf("%s: LOAD DATA LOCAL request: the harness sends no files", c.target.Name)
	}
	n, _, _, ok := mysql.ReadLenEncInt(p)
	if !ok || n == 0 || n > 4096 {
		return nil, false, nil, fmt.Errorf("%s: column count: %w", c.target.Name, mysql.ErrMalformed)
	}
	r := &Result{Binary: binary}
	if r.Columns, err = c.readColumns(int(n)); err != nil {
		return nil, false, nil, err
	}
	for {
		p, err := c.read()
		if err != nil {
			return nil, false, nil, err
		}
		switch {
		case mysql.IsErr(p):
			return r, false, mysql.ParseErr(p), nil
		case mysql.IsEOF(p):
			if err := c.terminator(r, p); err != nil {
				return nil, false, nil, err
			}
			return r, r.Status&mysql.StatusMoreResultsExists != 0, nil, nil
		}
		row, err := parseRow(p, r.Columns, binary)
		if err != nil {
			return nil, false, nil, fmt.Errorf("%s: row %d: %w", c.target.Name, len(r.Rows)+1, err)
		}
		r.Rows = append(r.Rows, row)
	}
}

func (c *Client) okResult(p []byte) (*Result, error) {
	ok, valid := mysql.ParseOK(p, c.conn.Caps)
	if !valid {
		return nil, fmt.Errorf("%s: OK packet: %w", c.target.Name, mysql.ErrMalformed)
	}
	return &Result{AffectedRows: ok.AffectedRows, LastInsertID: ok.LastInsertID, Status: ok.Status,
		Warnings: ok.Warnings, Info: string(ok.Info)}, nil
}

// terminator reads the end of a result set into r: an OK with the 0xfe
// header under DEPRECATE_EOF, else a classic EOF.
func (c *Client) terminator(r *Result, p []byte) error {
	if c.conn.Caps&mysql.ClientDeprecateEOF != 0 {
		ok, valid := mysql.ParseOK(p, c.conn.Caps)
		if !valid {
			return fmt.Errorf("%s: result terminator: %w", c.target.Name, mysql.ErrMalformed)
		}
		r.AffectedRows, r.LastInsertID, r.Status, r.Warnings, r.Info = ok.AffectedRows, ok.LastInsertID, ok.Status, ok.Warnings, string(ok.Info)
		return nil
	}
	w, st, valid := mysql.ParseEOF(p)
	if !valid {
		return fmt.Errorf("%s: result terminator: %w", c.target.Name, mysql.ErrMalformed)
	}
	r.Warnings, r.Status = w, st
	return nil
}

// readColumns reads n column definitions and, without DEPRECATE_EOF, the
// EOF after them.
func (c *Client) readColumns(n int) ([]Column, error) {
	cols := make([]Column, n)
	for i := range cols {
		p, err := c.read()
		if err != nil {
			return nil, err
		}
		if cols[i], err = parseColumn(p); err != nil {
			return nil, fmt.Errorf("%s: column %d: %w", c.target.Name, i+1, err)
		}
	}
	if c.conn.Caps&mysql.ClientDeprecateEOF == 0 {
		if _, err := c.read(); err != nil {
			return nil, err
		}
	}
	return cols, nil
}

// parseColumn decodes a protocol 4.1 column definition.
func parseColumn(p []byte) (Column, error) {
	r := mysql.NewReader(p)
	col := Column{
		Catalog: string(r.LenEncString()), Schema: string(r.LenEncString()),
		Table: string(r.LenEncString()), OrgTable: string(r.LenEncString()),
		Name: string(r.LenEncString()), OrgName: string(r.LenEncString()),
	}
	r.LenEncInt() // length of the fixed fields, 0x0c
	col.Charset = r.Uint16()
	col.Length = r.Uint32()
	col.Type = r.Byte()
	col.Flags = r.Uint16()
	col.Decimals = r.Byte()
	if !r.OK() {
		return Column{}, mysql.ErrMalformed
	}
	return col, nil
}

// parseRow splits a row packet into its values: text values as sent, binary
// values as their raw encoding (see Value).
func parseRow(p []byte, cols []Column, binary bool) (Row, error) {
	if binary {
		return parseBinaryRow(p, cols)
	}
	r := mysql.NewReader(p)
	row := make(Row, len(cols))
	for i := range row {
		if rest := r.Rest(); len(rest) > 0 && rest[0] == 0xfb {
			r.Byte()
			row[i] = Value{Null: true}
			continue
		}
		row[i] = Value{Bytes: string(r.LenEncString())}
	}
	if !r.OK() || r.Len() != 0 {
		return nil, mysql.ErrMalformed
	}
	return row, nil
}

// parseBinaryRow splits a binary-protocol row: 0x00, the NULL bitmap (two
// bits of offset), then the non-NULL values, each sized by its column type.
func parseBinaryRow(p []byte, cols []Column) (Row, error) {
	r := mysql.NewReader(p)
	if r.Byte() != 0 {
		return nil, fmt.Errorf("binary row header: %w", mysql.ErrMalformed)
	}
	bitmap := r.Bytes((len(cols) + 7 + 2) / 8)
	row := make(Row, len(cols))
	for i, col := range cols {
		bit := i + 2
		if bitmap != nil && bitmap[bit/8]&(1<<(bit%8)) != 0 {
			row[i] = Value{Null: true}
			continue
		}
		row[i] = Value{Bytes: string(binaryValue(&r, col.Type))}
	}
	if !r.OK() || r.Len() != 0 {
		return nil, fmt.Errorf("binary row: %w", mysql.ErrMalformed)
	}
	return row, nil
}

// binaryValue reads one binary-protocol value of type typ.
func binaryValue(r *mysql.Reader, typ byte) []byte {
	switch typ {
	case mysql.TypeNull:
		return nil
	case mysql.TypeTiny:
		return r.Bytes(1)
	case mysql.TypeShort, mysql.TypeYear:
		return r.Bytes(2)
	case mysql.TypeLong, mysql.TypeInt24, mysql.TypeFloat:
		return r.Bytes(4)
	case mysql.TypeLongLong, mysql.TypeDouble:
		return r.Bytes(8)
	case mysql.TypeDate, mysql.TypeDateTime, mysql.TypeTimestamp, mysql.TypeTime:
		n := r.Byte()
		return append([]byte{n}, r.Bytes(int(n))...)
	}
	return r.LenEncString()
}

// Warnings runs SHOW WARNINGS and returns its rows.
func (c *Client) Warnings() ([]Warning, error) {
	a, err := c.Query("SHOW WARNINGS")
	if err != nil {
		return nil, err
	}
	if a.Err != nil {
		return nil, fmt.Errorf("%s: SHOW WARNINGS: %w", c.target.Name, a.Err)
	}
	if len(a.Results) != 1 || len(a.Results[0].Columns) != 3 {
		return nil, fmt.Errorf("%s: SHOW WARNINGS: unexpected answer shape", c.target.Name)
	}
	var ws []Warning
	for _, row := range a.Results[0].Rows {
		var code int
		if _, err := fmt.Sscan(row[1].Bytes, &code); err != nil {
			return nil, fmt.Errorf("%s: SHOW WARNINGS code %q: %w", c.target.Name, row[1].Bytes, err)
		}
		ws = append(ws, Warning{Level: row[0].Bytes, Code: uint16(code), Message: row[2].Bytes})
	}
	return ws, nil
}

// Stmt is a statement prepared on a Client.
type Stmt struct {
	c      *Client
	id     uint32
	params int
}

// Prepare prepares sql with COM_STMT_PREPARE. The answer records the
// prepare response (parameter count, column definitions) or its ERR; the
// statement is nil when the server refused it.
func (c *Client) Prepare(sql string) (*Stmt, Answer, error) {
	if err := c.command(mysql.ComStmtPrepare, []byte(sql)); err != nil {
		return nil, Answer{}, err
	}
	p, err := c.read()
	if err != nil {
		return nil, Answer{}, err
	}
	if mysql.IsErr(p) {
		return nil, errAnswer(mysql.ParseErr(p)), nil
	}
	ok, err := backend.ParsePrepareOK(p)
	if err != nil {
		return nil, Answer{}, fmt.Errorf("%s: %w", c.target.Name, err)
	}
	pi := &PrepareInfo{Params: int(ok.Params)}
	if len(p) >= 12 {
		pi.Warnings = uint16(p[10]) | uint16(p[11])<<8
	}
	if ok.Params > 0 {
		if pi.ParamColumns, err = c.readColumns(int(ok.Params)); err != nil {
			return nil, Answer{}, err
		}
	}
	if ok.Columns > 0 {
		if pi.Columns, err = c.readColumns(int(ok.Columns)); err != nil {
			return nil, Answer{}, err
		}
	}
	st := &Stmt{c: c, id: ok.ID, params: int(ok.Params)}
	return st, Answer{Prepare: pi}, nil
}

// Execute runs the statement with COM_STMT_EXECUTE (no cursor) and binary
// parameters (see appendParams for the Go types accepted).
func (s *Stmt) Execute(args ...any) (Answer, error) {
	if len(args) != s.params {
		return Answer{}, fmt.Errorf("execute: %d arguments for %d parameters", len(args), s.params)
	}
	b := []byte{0, 0, 0, 0, mysql.CursorTypeNoCursor, 1, 0, 0, 0}
	b[0], b[1], b[2], b[3] = byte(s.id), byte(s.id>>8), byte(s.id>>16), byte(s.id>>24)
	b, err := appendParams(b, args)
	if err != nil {
		return Answer{}, err
	}
	if err := s.c.command(mysql.ComStmtExecute, b); err != nil {
		return Answer{}, err
	}
	return s.c.readResults(true)
}

// Close deallocates the statement on the server (COM_STMT_CLOSE has no
// answer).
func (s *Stmt) Close() error {
	c := s.c.conn
	c.ResetSeq()
	b := append(c.BeginPacket(), mysql.ComStmtClose)
	b = mysql.AppendUint32(b, s.id)
	if err := c.EndPacket(b); err != nil {
		return err
	}
	return c.Flush()
}

// Decimal is a DECIMAL parameter, sent as MYSQL_TYPE_NEWDECIMAL with its
// text, as connectors send exact decimals.
type Decimal string

// Date is a DATE parameter (MYSQL_TYPE_DATE); time.Time is sent as a
// DATETIME.
type Date struct {
	Year       int
	Month, Day int
}

func (d Date) String() string { return fmt.Sprintf("%04d-%02d-%02d", d.Year, d.Month, d.Day) }

// appendParams appends the NULL bitmap, the types and the values of args:
// nil (NULL), int64, int, uint64, float64, string, []byte, Decimal, Date
// and time.Time.
func appendParams(b []byte, args []any) ([]byte, error) {
	if len(args) == 0 {
		return b, nil
	}
	bitmap := make([]byte, (len(args)+7)/8)
	types := make([]byte, 0, 2*len(args))
	var values []byte
	for i, a := range args {
		typ, unsigned, v, err := encodeParam(values, a)
		if err != nil {
			return nil, fmt.Errorf("parameter %d: %w", i+1, err)
		}
		if a == nil {
			bitmap[i/8] |= 1 << (i % 8)
		}
		values = v
		flag := byte(0)
		if unsigned {
			flag = 0x80
		}
		types = append(types, typ, flag)
	}
	b = append(b, bitmap...)
	b = append(b, 1) // new-params-bound: the types follow
	b = append(b, types...)
	return append(b, values...), nil
}

func encodeParam(b []byte, a any) (typ byte, unsigned bool, out []byte, err error) {
	switch v := a.(type) {
	case nil:
		return mysql.TypeNull, false, b, nil
	case int:
		return mysql.TypeLongLong, false, appendUint64(b, uint64(v)), nil
	case int64:
		return mysql.TypeLongLong, false, appendUint64(b, uint64(v)), nil
	case uint64:
		return mysql.TypeLongLong, true, appendUint64(b, v), nil
	case float64:
		return mysql.TypeDouble, false, appendUint64(b, math.Float64bits(v)), nil
	case string:
		return mysql.TypeVarString, false, mysql.AppendLenEncStr(b, v), nil
	case []byte:
		return mysql.TypeBlob, false, mysql.AppendLenEncString(b, v), nil
	case Decimal:
		return mysql.TypeNewDecimal, false, mysql.AppendLenEncStr(b, string(v)), nil
	case Date:
		b = append(b, 4)
		b = mysql.AppendUint16(b, uint16(v.Year))
		return mysql.TypeDate, false, append(b, byte(v.Month), byte(v.Day)), nil
	case time.Time:
		b = append(b, 11)
		b = mysql.AppendUint16(b, uint16(v.Year()))
		b = append(b, byte(v.Month()), byte(v.Day()), byte(v.Hour()), byte(v.Minute()), byte(v.Second()))
		return mysql.TypeDateTime, false, mysql.AppendUint32(b, uint32(v.Nanosecond()/1000)), nil
	}
	return 0, false, nil, fmt.Errorf("unsupported parameter type %T", a)
}

func appendUint64(b []byte, v uint64) []byte {
	return mysql.AppendUint32(mysql.AppendUint32(b, uint32(v)), uint32(v>>32))
}

// Run executes st, as text or prepared (prepare, execute, close), then SHOW
// WARNINGS, and returns the whole answer. A statement without a prepared
// form runs as text.
func (c *Client) Run(st *Statement, prepared bool) (Answer, error) {
	var a Answer
	var err error
	if prepared && st.Prepared != "" {
		a, err = c.runPrepared(st)
	} else {
		a, err = c.Query(st.SQL)
	}
	if err != nil {
		return Answer{}, err
	}
	if a.Warnings, err = c.Warnings(); err != nil {
		return Answer{}, err
	}
	return a, nil
}

func (c *Client) runPrepared(st *Statement) (Answer, error) {
	s, a, err := c.Prepare(st.Prepared)
	if err != nil || s == nil {
		return a, err
	}
	ex, err := s.Execute(st.Args...)
	if err != nil {
		return Answer{}, errors.Join(err, s.Close())
	}
	ex.Prepare = a.Prepare
	return ex, s.Close()
}

// FieldList sends COM_FIELD_LIST for table with wildcard and returns the
// column definitions, or the server's error.
func (c *Client) FieldList(table, wildcard string) ([]Column, *mysql.SQLError, error) {
	arg := append(append([]byte(table), 0), wildcard...)
	if err := c.command(mysql.ComFieldList, arg); err != nil {
		return nil, nil, err
	}
	var cols []Column
	for {
		p, err := c.read()
		if err != nil {
			return nil, nil, err
		}
		switch {
		case mysql.IsErr(p):
			return nil, mysql.ParseErr(p), nil
		case mysql.IsEOF(p):
			return cols, nil, nil
		}
		col, err := parseColumn(p)
		if err != nil {
			return nil, nil, err
		}
		cols = append(cols, col)
	}
}
