package mysql

import (
	"errors"
	"fmt"

	"vitess.io/vitess/go/sqltypes"
)

// ResultWriter writes a result set the proxy composes from rows it read
// (RowStream) to a client: the column definitions (logical table names put
// back), rows in the client's protocol (text, or binary for
// COM_STMT_EXECUTE) either composed from values or passed as they arrived,
// and the terminator or an ERR.
//
//	w.Begin(defs, cols, visible, status)
//	w.Row(values) / w.Pass(stream) ...
//	w.End(warnings, status)  or  w.Fail(err)
type ResultWriter struct {
	Client      *Conn
	ClientCaps  uint32
	RenameTable TableRenamer
	Binary      bool
	// Info describes what the client got: Rows, Sent once anything
	// reached its output, Err after Fail.
	Info ResponseInfo

	// Hold, when set, keeps the rows instead of writing them: the rows
	// of a cursor the proxy serves itself (COM_STMT_FETCH).
	Hold *RowHold

	cols    []ColumnDef // the part rows' columns: how values are encoded
	visible int
	scratch []byte // a held row being built
}

// RowHold keeps the rows of a result (their packets' payloads) for a
// cursor the proxy serves: Limit bounds their bytes.
type RowHold struct {
	Limit int64
	buf   []byte
	ends  []int
	next  int // the next row FetchTo sends
}

// ErrHoldFull: a held result would take more than its RowHold's Limit.
var ErrHoldFull = errors.New("mysql: the rows held for a cursor exceed their limit")

// Reset empties h, keeping its buffers.
func (h *RowHold) Reset(limit int64) {
	h.Limit, h.buf, h.ends, h.next = limit, h.buf[:0], h.ends[:0], 0
}

func (h *RowHold) add(p []byte) error {
	if int64(len(h.buf)+len(p)+8*len(h.ends)) > h.Limit {
		return ErrHoldFull
	}
	h.buf = append(h.buf, p...)
	h.ends = append(h.ends, len(h.buf))
	return nil
}

// FetchTo writes up to n of the rows not sent yet to c, then the
// terminator a COM_STMT_FETCH answer ends with (status, with
// StatusCursorExists, and StatusLastRowSent once every row is out), in
// the form caps asks for, and flushes. It reports whether rows remain.
func (h *RowHold) FetchTo(c *Conn, n uint32, status uint16, caps uint32) (bool, error) {
	for ; n > 0 && h.next < len(h.ends); n-- {
		start := 0
		if h.next > 0 {
			start = h.ends[h.next-1]
		}
		if err := c.EndPacket(append(c.BeginPacket(), h.buf[start:h.ends[h.next]]...)); err != nil {
			return false, clientErr(err)
		}
		h.next++
	}
	more := h.next < len(h.ends)
	status |= StatusCursorExists
	if !more {
		status |= StatusLastRowSent
	}
	if err := c.WriteTerminator(0, status, caps); err != nil {
		return false, clientErr(err)
	}
	if err := c.Flush(); err != nil {
		return false, clientErr(err)
	}
	return more, nil
}

// Columns sets the part rows' columns and how many are visible, for rows
// held (Hold) before Begin writes the definitions.
func (w *ResultWriter) Columns(cols []ColumnDef, visible int) error {
	if visible <= 0 || len(cols) < visible {
		return fmt.Errorf("mysql: a merged result of %d visible columns from %d", visible, len(cols))
	}
	w.Info.reset()
	w.cols, w.visible = cols, visible
	return nil
}

// Begin writes the column count and the first visible of defs (their
// tables renamed to logical ones), then the EOF a client without
// DEPRECATE_EOF expects after them. cols describe the part rows' columns
// (visible and hidden), whose types binary rows are encoded by.
func (w *ResultWriter) Begin(defs [][]byte, cols []ColumnDef, visible int, status uint16) error {
	w.Info.reset()
	w.cols, w.visible = cols, visible
	if visible <= 0 || visible > len(defs) || len(cols) < visible {
		return fmt.Errorf("mysql: a merged result of %d visible columns from %d definitions", visible, len(defs))
	}
	w.Info.ResultSet, w.Info.Results, w.Info.Sent = true, 1, true
	if err := w.Client.EndPacket(AppendLenEncInt(w.Client.BeginPacket(), uint64(visible))); err != nil {
		return clientErr(err)
	}
	for _, d := range defs[:visible] {
		b := w.Client.BeginPacket()
		if cr, ok := w.renamed(d); ok {
			b = cr.appendTo(b, d)
		} else {
			b = append(b, d...)
		}
		if err := w.Client.EndPacket(b); err != nil {
			return clientErr(err)
		}
	}
	if w.ClientCaps&ClientDeprecateEOF == 0 {
		if err := w.Client.EndPacket(AppendEOF(w.Client.BeginPacket(), 0, status)); err != nil {
			return clientErr(err)
		}
	}
	return nil
}

func (w *ResultWriter) renamed(d []byte) (colRename, bool) {
	if w.RenameTable == nil {
		return colRename{}, false
	}
	return colDefRename(d, w.RenameTable)
}

// Row writes a row of the visible columns' values in the text form,
// encoded for the client's protocol.
func (w *ResultWriter) Row(row []sqltypes.Value) error {
	if len(row) < w.visible {
		return fmt.Errorf("mysql: a merged row of %d values for %d columns", len(row), w.visible)
	}
	row = row[:w.visible]
	b := w.beginRow()
	if w.Binary {
		var err error
		if b, err = w.appendBinaryRow(b, row); err != nil {
			return err // the packet begun is dropped: EndPacket commits it
		}
	} else {
		for _, v := range row {
			if v.IsNull() {
				b = append(b, 0xfb)
			} else {
				b = AppendLenEncString(b, v.Raw())
			}
		}
	}
	return w.endRow(b)
}

// appendBinaryRow appends a binary row: header, NULL bitmap, values.
func (w *ResultWriter) appendBinaryRow(b []byte, row []sqltypes.Value) ([]byte, error) {
	b = append(b, 0)
	bitmap := len(b)
	for i := 0; i < (len(row)+7+2)/8; i++ {
		b = append(b, 0)
	}
	var err error
	for i, v := range row {
		if v.IsNull() {
			b[bitmap+(i+2)/8] |= 1 << ((i + 2) % 8)
			continue
		}
		if b, err = AppendTextAsBinary(b, v.Raw(), &w.cols[i]); err != nil {
			return b, fmt.Errorf("column %d of a merged row: %w", i+1, err)
		}
	}
	return b, nil
}

// beginRow starts a row's packet: in the client's output, or held.
func (w *ResultWriter) beginRow() []byte {
	if w.Hold != nil {
		return w.scratch[:0]
	}
	return w.Client.BeginPacket()
}

func (w *ResultWriter) endRow(b []byte) error {
	w.Info.Rows++
	if w.Hold != nil {
		w.scratch = b
		return w.Hold.add(b)
	}
	if err := w.Client.EndPacket(b); err != nil {
		return clientErr(err)
	}
	return nil
}

// Pass writes s's current row as it arrived, without its hidden columns:
// a text row's prefix, or a binary row with its NULL bitmap rebuilt for
// the visible columns.
func (w *ResultWriter) Pass(s *RowStream) error {
	if s.Opaque {
		// Not decoded: every column is visible.
		return w.endRow(append(w.beginRow(), s.raw...))
	}
	n := len(s.ends)
	if n < w.visible {
		return fmt.Errorf("mysql: a part row of %d columns for %d visible ones", n, w.visible)
	}
	end := s.ends[w.visible-1]
	b := w.beginRow()
	switch {
	case w.visible == n:
		b = append(b, s.raw...)
	case !s.Binary:
		b = append(b, s.raw[:end]...)
	default:
		nb := (n + 7 + 2) / 8
		b = append(b, 0)
		keep := (w.visible + 7 + 2) / 8
		bitmap := len(b)
		b = append(b, s.raw[1:1+keep]...)
		// Bits of hidden columns sharing the last byte are cleared.
		if last := (w.visible + 2) % 8; last != 0 {
			b[bitmap+keep-1] &= 1<<last - 1
		}
		b = append(b, s.raw[1+nb:end]...)
	}
	return w.endRow(b)
}

// End writes the terminator, with the parts' warnings summed and the
// status the answer ends with, and flushes.
func (w *ResultWriter) End(warnings, status uint16) error {
	w.Info.Status, w.Info.Warnings = status, warnings
	if err := w.Client.WriteTerminator(warnings, status, w.ClientCaps); err != nil {
		return clientErr(err)
	}
	return w.flush()
}

// Fail ends the result with e in place of the next row (the client sees
// an error, never partial rows as complete) and flushes.
func (w *ResultWriter) Fail(e *SQLError) error {
	w.Info.Err = e
	if err := w.Client.WriteErr(e); err != nil {
		return clientErr(err)
	}
	return w.flush()
}

func (w *ResultWriter) flush() error {
	if err := w.Client.Flush(); err != nil {
		return clientErr(err)
	}
	return nil
}

// SumWarnings adds n to a warning count, saturating at the 16 bits a
// packet carries.
func SumWarnings(w uint16, n uint16) uint16 { return addWarnings(w, uint64(n)) }
