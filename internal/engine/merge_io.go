package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
	"vitess.io/vitess/go/sqltypes"
)

// The I/O half of a Merge: every part runs at once, one connection per
// shard, and is read as a stream of rows (mysql.RowStream) that the row
// pipeline (run, merge_run.go) consumes; the answer is written by a
// mysql.ResultWriter. Memory stays flat: one row per part is buffered,
// and the client's output is flushed before any read that would wait, so
// a client that stops reading stops the merge, and TCP stops the shards.

// mergePart is a part being executed: its connection and its rows.
type mergePart struct {
	p    *Part
	conn *backend.Conn
	rows mysql.RowStream
	i    int
	sent bool // its command went out: it has an answer to read
}

// partError is the failure of one part's input, returned unchanged by
// run: the server's ERR (a *mysql.SQLError) or a failure to read (a
// *mysql.RelayError).
type partError struct {
	part int
	err  error
}

func (e *partError) Error() string { return e.err.Error() }
func (e *partError) Unwrap() error { return e.err }

// Next implements mergeInput.
func (mp *mergePart) Next() ([]sqltypes.Value, bool, error) {
	row, ok, err := mp.rows.Next()
	if err != nil {
		return nil, false, &partError{part: mp.i, err: err}
	}
	return row, ok, nil
}

// mergeSink is the merge as the row pipeline's output.
type mergeSink Merge

// Row implements mergeOutput.
func (s *mergeSink) Row(row []sqltypes.Value) error {
	if err := (*Merge)(s).begin(); err != nil {
		return err
	}
	return s.held(s.w.Row(row))
}

// held turns a full RowHold into the merge's memory error.
func (s *mergeSink) held(err error) error {
	if errors.Is(err, mysql.ErrHoldFull) {
		return outOfMemory(s.hold.Limit)
	}
	return err
}

// Pass implements mergeOutput.
func (s *mergeSink) Pass(i int) error {
	if err := (*Merge)(s).begin(); err != nil {
		return err
	}
	return s.held(s.w.Pass(&s.open[i].rows))
}

// begin sends the client the column definitions, once, when the first
// row goes out or the answer ends without rows: by then every part has
// been read up to its first row, and the definitions can be those of a
// part that read one sub-table and found rows. A server types some
// columns of a grouped result differently when it has no rows (flags of
// a temporary table's fields), and a UNION ALL's columns lose their
// tables: one server holding every row answers as such a part.
func (m *Merge) begin() error {
	if m.begun {
		return nil
	}
	m.begun = true
	if m.w.Hold != nil {
		// A cursor's columns go out with the answer (openCursor), once
		// its rows are held: an error until then is the whole answer.
		return m.w.Columns(m.cols, m.visible)
	}
	return m.w.Begin(m.clientDefs(), m.cols, m.visible, m.status)
}

// clientDefs chooses the column definitions the client gets: the client
// statement's (Columns, or probed), else those of the first part that
// read one sub-table and had rows, else of the first that read one
// sub-table, else the first part's.
func (m *Merge) clientDefs() [][]byte {
	if m.probeOK {
		return m.clientColumns()
	}
	plain := -1
	for i := range m.open {
		if m.Parts[i].Union {
			continue
		}
		if m.open[i].rows.Info.Rows > 0 {
			return m.open[i].rows.Defs
		}
		if plain < 0 {
			plain = i
		}
	}
	if plain >= 0 {
		return m.open[plain].rows.Defs
	}
	return m.open[0].rows.Defs
}

// mergeState is the I/O state of a Merge's execution, kept for the next
// one's buffers.
type mergeState struct {
	open   []mergePart
	order  []int // the parts in the order their connections are taken
	inputs []mergeInput
	w      mysql.ResultWriter
	// The probe's column definitions (Merge.Probe), copied out of the
	// first part's stream before it reads the part's own; probeRows: it
	// found a row (its definitions are then worth caching); probeOK: the
	// parts' columns agree with them.
	probe     [][]byte
	probeBuf  []byte
	probeRows bool
	probeOK   bool
	// probeRead: the probe's answer (Probe, before the first part's
	// own) has been read.
	probeRead bool
	// headerFailed: the execution ended before the column definitions
	// went out; whether the session goes on.
	headerFailed bool
	// What begin sends, once (begun).
	cols    []mysql.ColumnDef
	visible int
	status  uint16
	begun   bool
	// hold keeps a cursor's rows (ResultWriter.Hold).
	hold mysql.RowHold
	// runBuf is the row pipeline's state (merge_run.go).
	runBuf mergeRun
}

// budget is the memory the execution may hold: a cursor's rows.
func (m *Merge) budget() int64 {
	if m.Spec != nil && m.Spec.Budget > 0 {
		return m.Spec.Budget
	}
	return DefaultMergeBudget
}

// Execute implements Primitive.
func (m *Merge) Execute(c Cursor, q []byte) bool {
	binary := len(q) > 0 && q[0] == mysql.ComStmtExecute
	cursor := binary && len(q) > 5 && q[5] != mysql.CursorTypeNoCursor
	if cursor {
		// The parts run without one: their rows stream to the merge,
		// which holds the answer's for the client's cursor.
		q[5] = mysql.CursorTypeNoCursor
	}
	if len(m.Parts) == 0 {
		return c.Fail(mysql.NewError(mysql.ERUnknownError, mysql.StateGeneral, "shardgate: a multi-shard merge without parts"))
	}
	m.w, m.probeRead = mysql.ResultWriter{}, false
	m.resetParts()
	var r *mysql.Relay
	// Every part's command goes out before any answer is read: the
	// shards work in parallel. The connections are taken in the order of
	// their clusters' names, whatever the parts' order (which puts a
	// shard of one sub-table first): every merge waits for the pools in
	// one order, so that sessions holding one shard's connection while
	// waiting for another's never wait for each other (at 16 sessions
	// over pools of 8, they did, until the pools' wait timed out).
	m.order = acquireOrder(m.order[:0], m.Parts)
	for _, i := range m.order {
		p := &m.Parts[i]
		conn, ok := c.AcquireToSend(p.Cluster, m.ReplicaOK)
		if conn == nil {
			// The client has the error; the parts sent already stop.
			return m.abandon(c, -1, nil) && ok
		}
		r = c.Relay(conn)
		m.openPart(i, conn, r.Client, binary)
		if i == 0 && m.ProbeStmt != nil {
			continue // after the others (below): the probe is read first
		}
		if err := c.Send(conn, p, q); err != nil {
			return m.abandon(c, i, err)
		}
		m.open[i].sent = true
		// A command's write waits for the read of its reply
		// (FlushForReply), and the parts are read in turn: written now,
		// every shard starts at once, not when the parts before it have
		// answered. And at once, not after the next parts are written
		// (they may wait for a connection): a KILL QUERY meanwhile is sent
		// to the shards of the parts written, and a shard's thread that
		// has not read its command yet forgets it, then runs the command.
		if err := conn.Flush(); err != nil {
			return m.abandon(c, i, mysql.BackendError(err))
		}
	}
	if first := &m.open[0]; !first.sent {
		// A prepared statement's column probe, then its part.
		if err := m.probeStmt(c, first.conn, q); err != nil {
			return m.abandon(c, 0, err)
		}
		if err := c.Send(first.conn, first.p, q); err != nil {
			return m.abandon(c, 0, err)
		}
		first.sent = true
		if err := first.conn.Flush(); err != nil {
			return m.abandon(c, 0, mysql.BackendError(err))
		}
	}
	m.w = mysql.ResultWriter{Client: r.Client, ClientCaps: r.ClientCaps, RenameTable: r.RenameTable, Binary: binary}
	if cursor {
		// A cursor's rows are held and served to COM_STMT_FETCH, as the
		// server materializes a cursor's rows too.
		m.hold.Reset(m.budget())
		m.w.Hold = &m.hold
	}
	m.inputs = m.inputs[:0]
	opaque := m.Spec != nil && m.Spec.passesRows()
	for i := range m.open {
		m.open[i].rows.Opaque = opaque
		m.inputs = append(m.inputs, &m.open[i])
	}
	if !m.headers(c) {
		return m.headerFailed
	}
	if c.Killed() {
		// A KILL QUERY came while the parts went out. A shard whose
		// thread had not read its part's command when the kill reached it
		// let it pass (a thread between commands forgets a KILL QUERY)
		// and runs the part. Every part has answered now, so every
		// thread has its command: stopping the parts now (stop: KILL
		// QUERY) reaches them all, and the statement ends as killed.
		return m.abandon(c, -1, errInterrupted)
	}
	m.cols, m.begun, m.status = m.open[0].rows.Cols, false, c.Status()
	m.visible = len(m.cols)
	if m.Spec != nil {
		m.visible -= m.Spec.Hidden
	}
	if m.relays() {
		return m.end(c, m.relayAll(c))
	}
	err := m.run(m.cols, m.inputs, (*mergeSink)(m))
	if m.Fallback != nil && !m.begun && mysql.HasErrorCode(err, mysql.ERNotSupportedYet) {
		return m.fallBack(c, q)
	}
	return m.end(c, err)
}

// fallBack stops every part, answering nothing, and runs m.Fallback.
func (m *Merge) fallBack(c Cursor, q []byte) bool {
	goOn := true
	for i := range m.open {
		mp := &m.open[i]
		if err := m.stop(mp); err != nil {
			goOn = c.Drop(mp.conn, err) && goOn
			continue
		}
		c.SkipWarnings()
		c.Done(mp.conn, &mp.rows.Info)
	}
	if !goOn {
		return false
	}
	return m.Fallback.Execute(c, q)
}

// relays reports a merge whose rows go to the client as they came, part
// after part, in runs rather than one by one (relayAll): nothing to
// order, combine or count, and no cursor to hold them. (Such a SELECT's
// column definitions do not depend on the rows found: begin needs none.)
func (m *Merge) relays() bool {
	return m.Spec != nil && m.Spec.passesRows() && !m.HasLimit && m.w.Hold == nil
}

// relayAll sends the column definitions, then every part's rows as its
// shard sent them (mysql.RowStream.RelayRows), part after part; the
// other parts' rows wait at their sockets meanwhile. A KILL QUERY that
// came meanwhile ends the rows with 1317, as one server ends a killed
// statement's, though the parts after may have sent all theirs already.
func (m *Merge) relayAll(c Cursor) error {
	if err := m.begin(); err != nil {
		return err
	}
	for i := range m.open {
		if i > 0 && c.Killed() {
			return errInterrupted
		}
		rows := &m.open[i].rows
		before := rows.Info.Rows
		err := rows.RelayRows(m.w.Client, m.w.ClientCaps)
		m.w.Info.Rows += rows.Info.Rows - before
		if err != nil {
			return &partError{part: i, err: err}
		}
	}
	return nil
}

// probeStmt runs the column probe of a prepared statement's execution
// (Merge.ProbeStmt) on conn, the first part's, and keeps its column
// definitions.
func (m *Merge) probeStmt(c Cursor, conn *backend.Conn, q []byte) error {
	first := &m.open[0]
	probe := Part{Cluster: first.p.Cluster, Stmt: m.ProbeStmt, Params: m.ProbeParams}
	if err := c.Send(conn, &probe, q); err != nil {
		return err
	}
	if err := first.rows.SkipProbeResult(); err != nil {
		return err
	}
	if e := first.rows.Info.Err; e != nil {
		// The server's ERR (the probe killed, say): the connection is
		// fine, and abandon answers it as a part's.
		return &partError{part: 0, err: e}
	}
	m.keepProbe(first.rows.Defs, first.rows.Info.Rows > 0)
	return nil
}

// openPart records part i, sent on conn, keeping the buffers of the
// previous execution's part i.
func (m *Merge) openPart(i int, conn *backend.Conn, client *mysql.Conn, binary bool) {
	mp := &m.open[i]
	mp.p, mp.conn, mp.i, mp.sent = &m.Parts[i], conn, i, false
	mp.rows.Reset(conn.Conn, conn.Caps, client, binary)
}

// resetParts makes m.open one unopened entry per part (conn nil),
// keeping the entries' buffers from earlier executions.
func (m *Merge) resetParts() {
	n := len(m.Parts)
	m.open = m.open[:min(n, cap(m.open))]
	for len(m.open) < n {
		m.open = append(m.open, mergePart{})
	}
	for i := range m.open {
		m.open[i].conn, m.open[i].sent = nil, false
	}
}

// acquireOrder appends to dst the indexes of parts ordered by their
// clusters' names (stable).
func acquireOrder(dst []int, parts []Part) []int {
	for i := range parts {
		dst = append(dst, i)
		j := len(dst) - 1
		for j > 0 && parts[dst[j-1]].Cluster.Name > parts[i].Cluster.Name {
			dst[j] = dst[j-1]
			j--
		}
		dst[j] = i
	}
	return dst
}

// headers reads every part's column definitions (the first part's probe
// first) and checks they agree; false: the client has been answered
// (headerFailed says whether the session goes on).
func (m *Merge) headers(c Cursor) bool {
	if m.Probe && m.ProbeStmt == nil {
		first := &m.open[0]
		m.probeRead = true
		if err := first.rows.SkipProbe(); err != nil || first.rows.Info.Err != nil {
			m.headerFailed = m.abandon(c, 0, m.partErr(0, err))
			return false
		}
		m.keepProbe(first.rows.Defs, first.rows.Info.Rows > 0)
	}
	m.probeOK = m.Probe || m.Columns != nil
	for i := range m.open {
		mp := &m.open[i]
		if err := mp.rows.Start(); err != nil || mp.rows.Info.Err != nil {
			m.headerFailed = m.abandon(c, i, m.partErr(i, err))
			return false
		}
		if i > 0 {
			if e := m.sameColumns(m.open[0].rows.Defs, i, "part 1"); e != nil {
				m.headerFailed = m.abandon(c, -1, e)
				return false
			}
		}
	}
	if m.probeOK && m.sameColumns(m.clientColumns(), 0, "") != nil {
		// The rewritten SELECT types a column otherwise than the client's:
		// the parts' definitions describe the rows sent.
		m.probeOK = false
		if m.Cache != nil {
			m.Cache.Forget()
		}
	}
	if m.Probe && m.probeOK && (m.probeRows || m.Spec != nil && m.Spec.passesRows()) && m.Cache != nil {
		m.Cache.Store(m.probe)
	}
	return true
}

// clientColumns are the definitions of the client's own statement: known
// (Columns) or probed.
func (m *Merge) clientColumns() [][]byte {
	if m.Columns != nil {
		return m.Columns
	}
	return m.probe
}

// partErr is part i's error: err, or the server's ERR it answered.
func (m *Merge) partErr(i int, err error) error {
	if err == nil {
		err = m.open[i].rows.Info.Err
	}
	return &partError{part: i, err: err}
}

// sameColumns checks part i's visible column definitions against want
// (what: part 1's): a client decodes every row by one set. The hidden
// columns' types may differ (a UNION's weight of an integer is typed
// otherwise than one SELECT's): each part's rows are read by its own
// definitions, and the merge compares them as bytes.
func (m *Merge) sameColumns(want [][]byte, i int, what string) *mysql.SQLError {
	got := m.open[i].rows.Defs
	if what == "" { // the client's statement's, which has no hidden columns
		if m.Spec != nil && len(got)-m.Spec.Hidden == len(want) {
			got = got[:len(want)]
		}
		if mysql.ColumnsDiffer(want, got) >= 0 || len(want) != len(got) {
			return mysql.NewError(mysql.ERUnknownError, mysql.StateGeneral, "columns differ")
		}
		return nil
	}
	if len(got) != len(want) {
		return mysql.NewError(mysql.ERWrongColumnCount, "21000",
			"shardgate: part %d of a multi-shard result (shard %s) has %d columns, %s had %d", i+1, m.open[i].p.Cluster.Name, len(got), what, len(want))
	}
	if m.Spec != nil {
		got, want = got[:len(got)-m.Spec.Hidden], want[:len(want)-m.Spec.Hidden]
	}
	if col := mysql.ColumnsDiffer(want, got); col >= 0 {
		return mysql.NewError(mysql.ERUnknownError, mysql.StateGeneral,
			"shardgate: part %d of a multi-shard result (shard %s): column %d differs in type, character set or signedness from %s (sub-table definitions differ)",
			i+1, m.open[i].p.Cluster.Name, col+1, what)
	}
	return nil
}

// keepProbe copies the probe's definitions out of the stream that will
// read the part's own; rows: the probe found a row.
func (m *Merge) keepProbe(defs [][]byte, rows bool) {
	m.probeRows = rows
	m.probeBuf, m.probe = m.probeBuf[:0], m.probe[:0]
	ends := make([]int, 0, len(defs))
	for _, d := range defs {
		m.probeBuf = append(m.probeBuf, d...)
		ends = append(ends, len(m.probeBuf))
	}
	start := 0
	for _, e := range ends {
		m.probe = append(m.probe, m.probeBuf[start:e:e])
		start = e
	}
}

// end finishes the execution once run returned (err nil: the answer's
// rows are out): every part still running is stopped, every connection
// is done with, and the client gets the terminator, or an ERR that ends
// the result when anything failed.
func (m *Merge) end(c Cursor, err error) bool {

	broken, brokenErr := -1, error(nil)
	if err != nil { // (the error's look-ups allocate: not on success)
		if clientFailed(err) {
			return m.clientGone(c, err)
		}
		broken, brokenErr = brokenPart(err)
	}
	warnings, goOn := uint16(0), true
	for i := range m.open {
		mp := &m.open[i]
		if i == broken {
			continue
		}
		if serr := m.stop(mp); serr != nil {
			if broken < 0 {
				broken, brokenErr = i, serr
				continue
			}
			goOn = c.Drop(mp.conn, serr) && goOn
			continue
		}
		warnings = mysql.SumWarnings(warnings, mp.rows.Info.Warnings)
		c.Done(mp.conn, &mp.rows.Info)
	}
	if broken >= 0 {
		// Its connection's failure ends the result, naming its shard.
		return m.failed(c, &m.open[broken], brokenErr) && goOn
	}
	if err == nil {
		err = m.begin() // no row went out: the definitions still must
	}
	var werr error
	switch {
	case err == nil && m.w.Hold != nil:
		werr = m.openCursor(c, warnings)
	case err == nil:
		werr = m.w.End(warnings, c.Status())
	default:
		werr = m.w.Fail(m.answerErr(err))
	}
	c.Merged(&m.w.Info)
	return werr == nil && goOn
}

// openCursor answers a COM_STMT_EXECUTE that asked for a cursor, once its
// rows are held: the column definitions and the terminator saying a
// cursor is open; the session serves the rows to COM_STMT_FETCH.
func (m *Merge) openCursor(c Cursor, warnings uint16) error {
	status := c.Status() | mysql.StatusCursorExists
	m.w.Hold = nil
	if err := m.w.Begin(m.clientDefs(), m.cols, m.visible, status); err != nil {
		return err
	}
	if m.w.ClientCaps&mysql.ClientDeprecateEOF != 0 {
		if err := m.w.Client.WriteTerminator(warnings, status, m.w.ClientCaps); err != nil {
			return err
		}
	}
	held := m.hold // the session owns these rows now
	m.hold = mysql.RowHold{}
	c.KeepCursor(&held)
	return m.w.Client.Flush()
}

// answerErr is the error that ends the client's result: a part's ERR or
// the merge's own *SQLError as they are, anything else as an internal
// error that says what failed.
func (m *Merge) answerErr(err error) *mysql.SQLError {
	var se *mysql.SQLError
	if errors.As(err, &se) {
		return se
	}
	return mysql.NewError(mysql.ERUnknownError, mysql.StateGeneral, "shardgate: multi-shard merge failed: %v", err)
}

// failed answers for part mp, whose connection failed (err), with an error
// that names its shard, ending the result when the client has part of it.
func (m *Merge) failed(c Cursor, mp *mergePart, err error) bool {
	c.AnnotateErrors(func(e *mysql.SQLError) *mysql.SQLError {
		return &mysql.SQLError{Code: e.Code, State: e.State,
			Message: fmt.Sprintf("shardgate: shard %s failed during a multi-shard read: %s", mp.p.Cluster.Name, e.Message)}
	})
	defer c.AnnotateErrors(nil)
	return c.Failed(mp.conn, err, m.w.Info.Sent)
}

// abandon ends an execution before the client got anything: the open
// parts are stopped and done with, and the client gets err (nil: it has
// been answered already): a part's failure (*partError) names its shard
// when it is its connection's.
func (m *Merge) abandon(c Cursor, failedPart int, err error) bool {
	var pe *partError
	var re *mysql.RelayError
	switch {
	case errors.As(err, &re) && !re.Backend:
		return m.clientGone(c, err)
	case errors.As(err, &pe) && mysql.IsBackendError(pe.err):
		failedPart, err = pe.part, pe.err
	case errors.As(err, &pe):
		failedPart = -1 // a server's ERR: its connection is fine
	}
	goOn := true
	for i := range m.open {
		mp := &m.open[i]
		if mp.conn == nil || i == failedPart && err != nil {
			continue // (not opened: the parts' connections are taken in another order)
		}
		if serr := m.stop(mp); serr != nil {
			goOn = c.Drop(mp.conn, serr) && goOn
			continue
		}
		c.Done(mp.conn, &mp.rows.Info)
	}
	switch {
	case err == nil:
		return goOn
	case failedPart >= 0:
		return m.failed(c, &m.open[failedPart], err) && goOn
	}
	return c.Fail(m.answerErr(err)) && goOn
}

// clientFailed reports an error writing to or reading from the client.
func clientFailed(err error) bool {
	var re *mysql.RelayError
	return errors.As(err, &re) && !re.Backend
}

// brokenPart is the part whose connection failed, and how, or -1.
func brokenPart(err error) (int, error) {
	var pe *partError
	if errors.As(err, &pe) && mysql.IsBackendError(pe.err) {
		return pe.part, pe.err
	}
	return -1, nil
}

// clientGone ends an execution whose client failed: every part still
// running is interrupted, so that no shard keeps working for nobody, and
// its connection discarded (its answer is unread).
func (m *Merge) clientGone(c Cursor, err error) bool {
	for i := range m.open {
		mp := &m.open[i]
		if mp.conn == nil {
			continue
		}
		if !mp.rows.Done() {
			killQuery(mp.conn)
		}
		c.Failed(mp.conn, err, true)
	}
	return false
}

// stop ends part mp's use of its connection without reading its rows:
// what the server already sent is read; a part still running is
// interrupted with KILL QUERY, and what it had sent before stopping is
// read and dropped. A KILL costs a connection to the server, but the
// part's own connection stays usable (its transaction, if any, too),
// where closing it would cost a new one for the pool and, inside a
// transaction, the transaction. A part that never answered (Send
// failed) is dropped by the caller; its error is returned.
func (m *Merge) stop(mp *mergePart) error {
	if mp.rows.Done() || !mp.sent {
		return nil // nothing to read: done, or never sent
	}
	mp.rows.Client = nil // the client's answer is not this read's concern
	if mp.i == 0 && m.Probe && m.ProbeStmt == nil && !m.probeRead {
		// The part's command is "probe; part": the probe's answer comes
		// first, and the part's after it must be read too, or the next
		// statement on the connection would read it as its own.
		m.probeRead = true
		if err := mp.rows.SkipProbe(); err != nil || mp.rows.Info.Err != nil {
			return err // (an ERR ends the statements: the part did not run)
		}
		mp.rows.Info.Results = 0
	}
	if mp.rows.Info.Results == 0 {
		// The header was never read: read it first, so that what follows
		// is rows.
		if err := mp.rows.Start(); err != nil {
			return err
		}
		if mp.rows.Done() {
			return nil
		}
	}
	if m.Bounded {
		// Its rows are few (the shards' LIMIT): reading them costs less
		// than a KILL's connection to the server.
		_, err := mp.rows.Drain(true)
		return err
	}
	if done, err := mp.rows.Drain(false); done || err != nil {
		return err
	}
	killQuery(mp.conn)
	_, err := mp.rows.Drain(true)
	// The part ends as the kill made it (ERR 1317, or rows ending with
	// its warning): the proxy's doing, which one server stopping at the
	// same row would not report. Nothing holds the connection for it,
	// and a statement that reads a table (one that does not leaves them
	// alone) clears the server's diagnostics, which a SHOW WARNINGS sent
	// to the pool (by this session or the next to borrow the connection)
	// would read.
	errEnded := mp.rows.Info.Err != nil
	mp.rows.Info.Err, mp.rows.Info.Warnings = nil, 0
	if err == nil {
		err = mp.conn.Exec(clearDiagnostics)
	}
	if err == nil && errEnded {
		// An ERR carries no server status, and a part done with neither
		// error nor status would say the transaction it ran in had ended
		// (Cursor.Done): the session then let go of the shard's part of
		// it, an XA branch left ACTIVE on a pooled connection, and its
		// next statement there opened it again (1399 XAER_RMFAIL, 1400
		// XAER_OUTSIDE: differential test, seed 987654321, statement
		// #502, a merge that fell back to evaluation). The kill leaves the
		// transaction as it was; the statement after it reports it.
		mp.rows.Info.Status = mp.conn.Status
	}
	return err
}

// clearDiagnostics is the cheapest statement that clears a connection's
// diagnostics: it reads a table, every user may, and it finds no row.
const clearDiagnostics = "SELECT 1 FROM information_schema.ENGINES LIMIT 0"

// errInterrupted is what a statement a KILL QUERY interrupted ends with,
// as the server says it.
var errInterrupted = mysql.NewError(mysql.ERQueryInterrupted, mysql.StateQueryInterrupted, "Query execution was interrupted")

// killQuery interrupts the statement running on c with KILL QUERY over a
// connection of its own.
func killQuery(c *backend.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	_ = c.Pool().KillQuery(ctx, c.ThreadID)
}

// killTimeout bounds the KILL QUERY of a part a merge stops.
const killTimeout = 5 * time.Second
