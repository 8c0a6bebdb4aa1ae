package mysql

import (
	"fmt"
)

// One statement, several backends: a multi-shard SELECT whose rows are
// streamed to the client as one result set (Concat), and the OK packets of a
// write spread over several backends, read without relaying (PartOK) and
// combined into one (OKMerge, okmerge.go).

// Concat relays the result sets that one SELECT (COM_QUERY or
// COM_STMT_EXECUTE without a cursor) returns on several backends to a client
// as a single result set, part by part, memory flat:
//
//	c.Reset()
//	for each backend, in order: if err := c.Part(relay); err != nil || c.Info.Err != nil { stop }
//	c.Finish(status)
//
// The first part gives the client the column count and definitions (and
// the EOF after them, per the client's flags); later parts must have as many
// columns, of the same types, and have theirs skipped. Every part's rows are
// forwarded in runs, renumbered into the client's sequence. Part
// terminators are held back: Finish writes one for all, with the warnings
// summed and the status the caller chooses.
//
// When a part answers ERR, before or among its rows, that ERR goes to the
// client in place of the rest (Info.Err is set): the client sees an error,
// never partial rows presented as complete. The parts not yet read still
// hold their answers; their connections must be discarded or drained.
// A part that answers OK (no result set), or whose columns disagree with the
// first part's, is a backend error whose *SQLError says why; so is any
// failure to read a part. After any error from Part the part's connection
// must be discarded, and when Info.Sent the client's result set must be
// ended with an ERR.
type Concat struct {
	// Info describes the response the client gets: Rows summed over the
	// parts, Warnings summed (saturating), Status as written by Finish (the
	// last part's until then), Err when a part's ERR was relayed, Sent
	// once anything reached the client's output. SessionState stays
	// empty: each part's session-state changes are in its own Relay's Info,
	// for the bookkeeping of that part's connection.
	Info ResponseInfo

	client     *Conn
	clientCaps uint32
	parts      int
	sigs       []colSig // the first part's columns
	pendingEOF bool     // a column EOF owed to a non-DEPRECATE_EOF client
}

// Reset prepares c for a new result set, keeping its buffers.
func (c *Concat) Reset() {
	c.Info.reset()
	c.client, c.clientCaps, c.parts = nil, 0, 0
	c.sigs = c.sigs[:0]
	c.pendingEOF = false
}

// Part relays one backend's result set through r (its Backend and
// BackendCaps; Client, ClientCaps and RenameTable must be the same for
// every part). r.Info describes this part alone, as after Query.
func (c *Concat) Part(r *Relay) error {
	r.Info.reset()
	if c.parts == 0 {
		c.client, c.clientCaps = r.Client, r.ClientCaps
	}
	c.parts++
	r.pendingEOF, r.holdEnd = c.pendingEOF, true
	err := c.part(r)
	c.pendingEOF, r.pendingEOF, r.holdEnd = r.pendingEOF, false, false
	c.add(&r.Info)
	return err
}

func (c *Concat) part(r *Relay) error {
	p, more, err := r.readBackend()
	if err != nil {
		return err
	}
	r.Info.Results = 1
	if more || len(p) == 0 {
		return backendErr(fmt.Errorf("response header: %w", ErrMalformed))
	}
	switch p[0] {
	case HeaderErr:
		r.Info.Err = ParseErr(p)
		r.pendingEOF = false // as Query does for an ERR after the columns
		return r.forward(p)
	case HeaderOK, HeaderLocalInfile:
		return backendErr(NewError(ERUnknownError, StateGeneral,
			"part %d of a multi-shard result answered without a result set", c.parts))
	}
	cols, _, _, valid := ReadLenEncInt(p)
	if !valid || cols == 0 {
		return backendErr(fmt.Errorf("column count: %w", ErrMalformed))
	}
	r.Info.ResultSet = true
	if c.parts == 1 {
		err = c.firstColumns(r, p, cols)
	} else {
		err = c.skipColumns(r, cols)
	}
	if err != nil {
		return err
	}
	_, err = r.rows()
	return err
}

// firstColumns relays the first part's column count and definitions,
// noting each column's signature for the later parts.
func (c *Concat) firstColumns(r *Relay, count []byte, cols uint64) error {
	if err := r.forward(count); err != nil {
		return err
	}
	for i := uint64(0); i < cols; i++ {
		p, more, err := r.readColumn()
		if err != nil {
			return err
		}
		sig, ok := colDefSig(p)
		if !ok {
			return backendErr(fmt.Errorf("column definition: %w", ErrMalformed))
		}
		c.sigs = append(c.sigs, sig)
		if err := r.forwardColumn(p, more); err != nil {
			return err
		}
	}
	return r.columnsEnd()
}

// skipColumns reads a later part's column definitions, checking them
// against the first part's, and the EOF that may follow them.
func (c *Concat) skipColumns(r *Relay, cols uint64) error {
	if cols != uint64(len(c.sigs)) {
		return backendErr(NewError(ERWrongColumnCount, "21000",
			"part %d of a multi-shard result has %d columns, part 1 had %d", c.parts, cols, len(c.sigs)))
	}
	for i := range c.sigs {
		p, more, err := r.readColumn()
		if err != nil {
			return err
		}
		if sig, ok := colDefSig(p); !ok || sig != c.sigs[i] {
			return backendErr(NewError(ERUnknownError, StateGeneral,
				"part %d of a multi-shard result: column %d differs in type, character set or signedness from part 1 (sub-table definitions differ)", c.parts, i+1))
		}
		if err := r.skipRest(more); err != nil {
			return err
		}
	}
	if r.BackendCaps&ClientDeprecateEOF == 0 {
		p, _, err := r.readBackend()
		if err != nil {
			return err
		}
		if !IsEOF(p) {
			return backendErr(fmt.Errorf("expected EOF after column definitions: %w", ErrMalformed))
		}
	}
	return nil
}

// skipRest reads and drops the continuation frames of a packet.
func (r *Relay) skipRest(more bool) error {
	for more {
		_, m, err := r.readBackend()
		if err != nil {
			return err
		}
		more = m
	}
	return nil
}

// add folds a part's response into the combined one.
func (c *Concat) add(part *ResponseInfo) {
	c.Info.Results = 1
	c.Info.Rows += part.Rows
	c.Info.Warnings = addWarnings(c.Info.Warnings, uint64(part.Warnings))
	c.Info.Sent = c.Info.Sent || part.Sent
	if part.Err != nil {
		c.Info.Err, c.Info.ResultSet = part.Err, false
		return
	}
	c.Info.ResultSet = part.ResultSet
	c.Info.Status = part.Status
}

// addWarnings adds n to a warning count, saturating at the 16 bits a
// packet carries.
func addWarnings(w uint16, n uint64) uint16 {
	if sum := uint64(w) + n; sum < 1<<16 {
		return uint16(sum)
	}
	return 1<<16 - 1
}

// partEnd records the terminator of one part's rows, which the client does
// not see. A part that announces more results or an open cursor leaves its
// connection in a state a part cannot have.
func (r *Relay) partEnd(p []byte) error {
	if r.BackendCaps&ClientDeprecateEOF != 0 {
		ok, valid := ParseOK(p, r.BackendCaps)
		if !valid {
			return backendErr(fmt.Errorf("terminator: %w", ErrMalformed))
		}
		r.noteOK(&ok)
	} else {
		warnings, status, valid := ParseEOF(p)
		if !valid {
			return backendErr(fmt.Errorf("EOF packet: %w", ErrMalformed))
		}
		r.Info.Status, r.Info.Warnings = status, warnings
	}
	if r.Info.Status&(StatusMoreResultsExists|StatusCursorExists) != 0 {
		return backendErr(fmt.Errorf("part of a multi-shard result announces more results or a cursor (status %#x): %w", r.Info.Status, ErrMalformed))
	}
	return nil
}

// Finish ends the combined result set with one terminator carrying the
// parts' warnings and status, and flushes the client output. After a
// relayed ERR it only flushes: the ERR ended the response.
func (c *Concat) Finish(status uint16) error {
	if c.client == nil {
		return fmt.Errorf("mysql: Concat.Finish without a part")
	}
	if c.Info.Err == nil {
		c.Info.Sent = true
		c.Info.Status = status
		if c.pendingEOF {
			// No part had a row: the owed column EOF comes first.
			c.pendingEOF = false
			if err := c.client.EndPacket(AppendEOF(c.client.BeginPacket(), 0, status)); err != nil {
				return clientErr(err)
			}
		}
		if err := c.client.WriteTerminator(c.Info.Warnings, status, c.clientCaps); err != nil {
			return clientErr(err)
		}
	}
	if err := c.client.Flush(); err != nil {
		return clientErr(err)
	}
	return nil
}

// PartOK reads, without relaying it, one backend's answer to its part of a
// write the proxy spread over several backends (a split multi-row INSERT,
// an UPDATE or DELETE on every sub-table, DDL on every sub-table): the
// client gets one OK for all of them (OKMerge). r.Info records the answer
// as Query would (status, warnings, the session-state changes the
// connection's bookkeeping needs). The returned OK's Info and SessionState
// alias the backend's read buffer: feed it to an OKMerge before the next
// read. An ERR is not relayed either: it is r.Info.Err, with a zero OK and
// a nil error, for the caller to report. A result set, a LOAD DATA LOCAL
// request or an OK announcing more results is a backend error. r.Client
// must be set: output pending for it is flushed before a read would block.
func (r *Relay) PartOK() (OKPacket, error) {
	r.Info.reset()
	p, more, err := r.readBackend()
	if err != nil {
		return OKPacket{}, err
	}
	r.Info.Results = 1
	switch {
	case more || len(p) == 0:
		return OKPacket{}, backendErr(fmt.Errorf("response header: %w", ErrMalformed))
	case p[0] == HeaderErr:
		r.Info.Err = ParseErr(p)
		return OKPacket{}, nil
	case p[0] != HeaderOK:
		return OKPacket{}, backendErr(NewError(ERUnknownError, StateGeneral,
			"a write's part answered with a result set or a file request, not OK"))
	}
	ok, valid := ParseOK(p, r.BackendCaps)
	if !valid {
		return OKPacket{}, backendErr(fmt.Errorf("OK packet: %w", ErrMalformed))
	}
	r.noteOK(&ok)
	if ok.Status&StatusMoreResultsExists != 0 {
		return OKPacket{}, backendErr(fmt.Errorf("a write's part announces more results: %w", ErrMalformed))
	}
	return ok, nil
}
