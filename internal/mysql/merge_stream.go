package mysql

import (
	"fmt"

	"vitess.io/vitess/go/sqltypes"
	querypb "vitess.io/vitess/go/vt/proto/query"
)

// A statement whose rows the proxy merges (engine.Merge) reads each
// backend's result set as a stream of rows it decodes, not relays
// (RowStream), and writes the answer's rows itself (ResultWriter,
// merge_write.go). Rows are values in the text protocol's form typed by
// their column definitions (sqltypes.MakeTrusted: no copy); binary rows
// (COM_STMT_EXECUTE) are converted to that form (binrow.go) and encoded
// back on the way out.

// FlagZerofill is the column flag of ZEROFILL numbers: their text is
// padded with zeros to the column's length.
const FlagZerofill uint16 = 64

// RowStream reads one backend's result set row by row:
//
//	s.Start()        // column count and definitions; Info.Err: the server's ERR
//	for { row, ok, err := s.Next(); ... }
//
// Backend, BackendCaps, Client and Binary are set by the caller; the rest
// is the stream's. Output pending for Client is flushed before a read that
// would block, so that rows already composed reach a slow client while the
// backend works, and a client that stops reading stops the merge (and,
// through TCP, the backends) instead of filling memory.
type RowStream struct {
	Backend     *Conn
	BackendCaps uint32
	Client      *Conn
	// Binary: the rows are in the binary protocol (the answer to
	// COM_STMT_EXECUTE).
	Binary bool
	// Opaque: Next reads each row without decoding it (it returns a nil
	// row), for a merge that passes every row out as it came
	// (ResultWriter.Pass of all its columns).
	Opaque bool
	// Info describes the result set: Rows read, and from its terminator
	// Status and Warnings; Err is the server's ERR (before or among the
	// rows); ResultSet once the header was read.
	Info ResponseInfo
	// Defs are copies of the column definition payloads, Cols the same
	// parsed (aliasing Defs); valid until the next Start.
	Defs [][]byte
	Cols []ColumnDef

	types   []querypb.Type
	defBuf  []byte
	defEnds []int
	done    bool

	raw     []byte // the current row's payload, aliasing the read buffer
	row     []sqltypes.Value
	ends    []int      // the end in raw of each column's value (binary: -1 for NULL)
	cells   []cellSpan // binary: where each column's text is
	scratch []byte     // binary: the text of numbers and dates
}

// cellSpan is where a binary row's column has its text: in raw (strings,
// as they arrived) or in scratch (numbers and dates, converted).
type cellSpan struct {
	start, end int
	scratch    bool
	null       bool
}

// flushBeforeWait writes the client's pending output when the next read
// from the backend would wait: a slow part must not hold back rows
// already merged.
func (s *RowStream) flushBeforeWait() error {
	if s.Backend.Buffered() == 0 && s.Client != nil && s.Client.Pending() > 0 {
		if err := s.Client.Flush(); err != nil {
			return clientErr(err)
		}
	}
	return nil
}

// read reads one frame of the backend's answer, flushing the client's
// pending output first when the read would block.
func (s *RowStream) read() ([]byte, error) {
	if err := s.flushBeforeWait(); err != nil {
		return nil, err
	}
	p, more, err := s.Backend.ReadFrame()
	if err != nil {
		return nil, backendErr(err)
	}
	if more {
		return nil, backendErr(NewError(ERNetPacketTooLarge, StateConnFailure,
			"shardgate: a row of a multi-shard result is larger than 16 MB, which a merge does not support"))
	}
	if len(p) == 0 {
		return nil, backendErr(fmt.Errorf("empty packet in a result set: %w", ErrMalformed))
	}
	return p, nil
}

// Reset prepares s for a new answer from backend, keeping its buffers.
func (s *RowStream) Reset(backend *Conn, backendCaps uint32, client *Conn, binary bool) {
	s.Backend, s.BackendCaps, s.Client, s.Binary = backend, backendCaps, client, binary
	s.Info.reset()
	s.done = false
}

// Start reads the header of the backend's answer: the column count, the
// column definitions and (for a backend without DEPRECATE_EOF) the EOF
// after them. The server's ERR is Info.Err, with a nil error (the
// connection is fine); an OK in place of a result set, or a malformed
// header, is a backend *RelayError.
func (s *RowStream) Start() error {
	s.Info.reset()
	s.done = false
	s.Defs, s.Cols, s.types = s.Defs[:0], s.Cols[:0], s.types[:0]
	s.defBuf, s.defEnds = s.defBuf[:0], s.defEnds[:0]
	p, err := s.read()
	if err != nil {
		return err
	}
	s.Info.Results = 1
	switch p[0] {
	case HeaderErr:
		s.Info.Err, s.done = ParseErr(p), true
		return nil
	case HeaderOK, HeaderLocalInfile:
		return backendErr(NewError(ERUnknownError, StateGeneral,
			"shardgate: a part of a multi-shard read answered without a result set"))
	}
	n, _, _, ok := ReadLenEncInt(p)
	if !ok || n == 0 || n > 4096 {
		return backendErr(fmt.Errorf("column count: %w", ErrMalformed))
	}
	s.Info.ResultSet = true
	for i := uint64(0); i < n; i++ {
		if p, err = s.read(); err != nil {
			return err
		}
		if p[0] == HeaderErr {
			return backendErr(ParseErr(p))
		}
		s.defBuf = append(s.defBuf, p...)
		s.defEnds = append(s.defEnds, len(s.defBuf))
	}
	if err := s.parseDefs(); err != nil {
		return err
	}
	if s.BackendCaps&ClientDeprecateEOF == 0 {
		if p, err = s.read(); err != nil {
			return err
		}
		if !IsEOF(p) {
			return backendErr(fmt.Errorf("expected EOF after column definitions: %w", ErrMalformed))
		}
	}
	return nil
}

// parseDefs slices defBuf into Defs and parses each definition once, so
// that rows are typed without work per row.
func (s *RowStream) parseDefs() error {
	start := 0
	for _, end := range s.defEnds {
		d := s.defBuf[start:end:end]
		start = end
		cd, ok := ParseColumnDef(d)
		if !ok {
			return backendErr(fmt.Errorf("column definition: %w", ErrMalformed))
		}
		s.Defs = append(s.Defs, d)
		s.Cols = append(s.Cols, cd)
		s.types = append(s.types, ValueType(&cd))
	}
	return nil
}

// ValueType is the sqltypes type of a column's values.
func ValueType(d *ColumnDef) querypb.Type {
	t, err := sqltypes.MySQLToType(d.Type, int64(d.Flags))
	if err != nil {
		return sqltypes.VarBinary // a type Vitess does not know: compared as bytes
	}
	return t
}

// Next returns the next row, valid until the next call: every column, in
// the text protocol's form. ok is false after the terminator (Info holds
// its status and warnings). The server's ERR among the rows is returned as
// the *SQLError itself (Info.Err; the connection is fine); a failure to
// read is a *RelayError.
func (s *RowStream) Next() (row []sqltypes.Value, ok bool, err error) {
	if s.done {
		return nil, false, nil
	}
	p, err := s.read()
	if err != nil {
		return nil, false, err
	}
	switch {
	case p[0] == HeaderErr:
		s.Info.Err, s.done = ParseErr(p), true
		return nil, false, s.Info.Err
	case p[0] == HeaderEOF:
		s.done = true
		if err := s.terminator(p); err != nil {
			return nil, false, err
		}
		if s.Info.Status&(StatusMoreResultsExists|StatusCursorExists) != 0 {
			return nil, false, backendErr(fmt.Errorf("part of a multi-shard result announces more results or a cursor (status %#x): %w", s.Info.Status, ErrMalformed))
		}
		return nil, false, nil
	}
	s.raw = p
	switch {
	case s.Opaque:
		s.Info.Rows++
		return nil, true, nil
	case s.Binary:
		err = s.decodeBinary(p)
	default:
		err = s.decodeText(p)
	}
	if err != nil {
		return nil, false, backendErr(err)
	}
	s.Info.Rows++
	return s.row, true, nil
}

// RelayRows sends the rest of the result set's rows to client as they
// arrived, in runs copied from the backend's read buffer and renumbered
// (Relay's rows), rows of 16 MB and more included: for a merge that
// passes every row whole, part after part, with nothing to order or
// count. It ends as Next does after the last row: Info holds the rows,
// the terminator's status and warnings, or the server's ERR, returned
// as the *SQLError and not forwarded (the merge answers it).
func (s *RowStream) RelayRows(client *Conn, clientCaps uint32) error {
	if s.done {
		return nil
	}
	r := Relay{Client: client, Backend: s.Backend, ClientCaps: clientCaps, BackendCaps: s.BackendCaps, holdEnd: true, holdErr: true}
	_, err := r.rows()
	s.Info.Rows += r.Info.Rows
	s.Info.Sent = s.Info.Sent || r.Info.Sent
	if err != nil {
		return err
	}
	s.done = true
	if r.Info.Err != nil {
		s.Info.Err = r.Info.Err
		return r.Info.Err
	}
	s.Info.Status, s.Info.Warnings = r.Info.Status, r.Info.Warnings
	return nil
}

// terminator records the status and warnings of the packet that ends
// the rows.
func (s *RowStream) terminator(p []byte) error {
	if s.BackendCaps&ClientDeprecateEOF != 0 {
		ok, valid := ParseOK(p, s.BackendCaps)
		if !valid {
			return backendErr(fmt.Errorf("terminator: %w", ErrMalformed))
		}
		s.Info.Status, s.Info.Warnings = ok.Status, ok.Warnings
		if len(ok.SessionState) > 0 {
			s.Info.SessionState = AppendLenEncString(s.Info.SessionState, ok.SessionState)
		}
	} else {
		warnings, status, valid := ParseEOF(p)
		if !valid {
			return backendErr(fmt.Errorf("EOF packet: %w", ErrMalformed))
		}
		s.Info.Status, s.Info.Warnings = status, warnings
	}
	return nil
}

// Done reports whether the result set has been read to its end (its
// terminator or an ERR).
func (s *RowStream) Done() bool { return s.done }

// SkipProbe reads a result set the client does not get as rows: the
// probe a merge's first part answers before its rows (zero rows, a
// terminator announcing the next result). Its definitions stay in Defs
// until the next Start.
func (s *RowStream) SkipProbe() error {
	return s.skipProbe(true)
}

// SkipProbeResult reads a column probe sent as a statement of its own
// (a prepared statement's LIMIT 0 execution), whose result ends the
// answer: Defs and Cols describe it until the next Start.
func (s *RowStream) SkipProbeResult() error {
	return s.skipProbe(false)
}

func (s *RowStream) skipProbe(followed bool) error {
	if err := s.Start(); err != nil || s.Info.Err != nil {
		return err
	}
	more := false
	for {
		if err := s.flushBeforeWait(); err != nil {
			return err
		}
		p, m, err := s.Backend.ReadFrame()
		if err != nil {
			return backendErr(err)
		}
		last := more
		more = m
		switch {
		case last: // a later frame of a row larger than one frame
			continue
		case len(p) == 0:
			return backendErr(fmt.Errorf("empty packet in a result set: %w", ErrMalformed))
		case m || p[0] != HeaderEOF && p[0] != HeaderErr:
			s.Info.Rows++ // a row of the probe, dropped
			continue
		case p[0] == HeaderErr:
			s.Info.Err, s.done = ParseErr(p), true
			return nil
		}
		if err := s.terminator(p); err != nil {
			return err
		}
		if (s.Info.Status&StatusMoreResultsExists != 0) != followed {
			return backendErr(fmt.Errorf("the column probe of a merge is not followed by the part's rows, or is: %w", ErrMalformed))
		}
		return nil
	}
}

// decodeText types the columns of a text row, aliasing p.
func (s *RowStream) decodeText(p []byte) error {
	s.row, s.ends = s.row[:0], s.ends[:0]
	pos := 0
	for i := range s.types {
		if pos >= len(p) {
			return fmt.Errorf("text row: %w", ErrMalformed)
		}
		if p[pos] == 0xfb {
			pos++
			s.row = append(s.row, sqltypes.NULL)
			s.ends = append(s.ends, pos)
			continue
		}
		n, ln, _, ok := ReadLenEncInt(p[pos:])
		if !ok || uint64(len(p)-pos-ln) < n {
			return fmt.Errorf("text row: %w", ErrMalformed)
		}
		v := p[pos+ln : pos+ln+int(n)]
		pos += ln + int(n)
		s.row = append(s.row, sqltypes.MakeTrusted(s.types[i], v))
		s.ends = append(s.ends, pos)
	}
	if pos != len(p) {
		return fmt.Errorf("text row longer than its columns: %w", ErrMalformed)
	}
	return nil
}

// decodeBinary converts a binary row to the text form: strings alias p,
// numbers and dates are printed into the stream's scratch buffer as the
// server prints them in text rows.
func (s *RowStream) decodeBinary(p []byte) error {
	n := len(s.types)
	nb := (n + 7 + 2) / 8
	if p[0] != 0 || len(p) < 1+nb {
		return fmt.Errorf("binary row header: %w", ErrMalformed)
	}
	nulls := p[1 : 1+nb]
	pos := 1 + nb
	s.cells, s.ends, s.scratch = s.cells[:0], s.ends[:0], s.scratch[:0]
	for i := 0; i < n; i++ {
		if nulls[(i+2)/8]&(1<<((i+2)%8)) != 0 {
			s.cells = append(s.cells, cellSpan{null: true})
			s.ends = append(s.ends, pos)
			continue
		}
		d := &s.Cols[i]
		size, str, err := binaryValueSize(p[pos:], d.Type)
		if err != nil {
			return err
		}
		if str >= 0 {
			s.cells = append(s.cells, cellSpan{start: pos + str, end: pos + size})
		} else {
			start := len(s.scratch)
			s.scratch, err = AppendBinaryAsText(s.scratch, p[pos:pos+size], d)
			if err != nil {
				return err
			}
			s.cells = append(s.cells, cellSpan{start: start, end: len(s.scratch), scratch: true})
		}
		pos += size
		s.ends = append(s.ends, pos)
	}
	if pos != len(p) {
		return fmt.Errorf("binary row longer than its columns: %w", ErrMalformed)
	}
	s.row = s.row[:0]
	for i, c := range s.cells {
		switch {
		case c.null:
			s.row = append(s.row, sqltypes.NULL)
		case c.scratch:
			s.row = append(s.row, sqltypes.MakeTrusted(s.types[i], s.scratch[c.start:c.end]))
		default:
			s.row = append(s.row, sqltypes.MakeTrusted(s.types[i], p[c.start:c.end]))
		}
	}
	return nil
}

// Drain reads and drops the rest of the result set, without flushing the
// client (which may be gone): all of it, or (all false) only the frames
// already buffered, so that a part the merge stops reading costs no wait.
// done reports the end was reached (Info then holds the terminator's
// status, or the ERR a KILL QUERY caused); a failure to read is a backend
// *RelayError.
//
// Without all it stops at a frame that is only partly buffered: reading
// it would read the connection, and buffer more frames, partial again at
// their end more often than not, so that a reader slower than the server
// (a loaded proxy) read a stopped part's megabytes to their end instead of
// interrupting it (TestMergeLimitStopsTheOtherParts under -race).
func (s *RowStream) Drain(all bool) (done bool, err error) {
	more := false
	for !s.done {
		if !all && !s.Backend.FrameBuffered() {
			return false, nil
		}
		p, m, err := s.Backend.ReadFrame()
		if err != nil {
			return false, backendErr(err)
		}
		last := more
		more = m
		if last || m || len(p) == 0 {
			continue // a frame of a row larger than one frame
		}
		switch p[0] {
		case HeaderErr:
			s.Info.Err, s.done = ParseErr(p), true
		case HeaderEOF:
			s.done = true
			if err := s.terminator(p); err != nil {
				return false, err
			}
		default:
			s.Info.Rows++
		}
	}
	return true, nil
}

// ColumnsDiffer returns the first column (0-based) whose definition in b
// makes a client decode its values otherwise than a's (type, character
// set, signedness), or -1 when every column agrees. Definitions that
// cannot be read differ.
func ColumnsDiffer(a, b [][]byte) int {
	for i := range a {
		if i >= len(b) {
			return i
		}
		sa, okA := colDefSig(a[i])
		sb, okB := colDefSig(b[i])
		if !okA || !okB || sa != sb {
			return i
		}
	}
	if len(b) > len(a) {
		return len(a)
	}
	return -1
}
