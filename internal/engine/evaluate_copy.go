package engine

import (
	"strings"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
)

// Copying an evaluated statement's tables: each fetch's rows streamed
// from its shard into INSERTs of at most evalBatch bytes on the
// evaluator (a semi-join's in batches of values), the fetches stopped
// (KILL QUERY, drained) when the copy fails or is interrupted.

// semiJoin copies t's rows whose key is among its source's values, in
// batches; false: the values are too many, or cannot be routed, and the
// table's own fetches must read it (nothing was copied).
func (e *Evaluate) semiJoin(c Cursor, ev *backend.Conn, t *EvalCopy) (bool, error) {
	r := t.Reduce
	rows, err := ev.QueryRows(r.values)
	if mysql.IsSQLError(err) {
		return false, nil // (a table that is not there: the statement says so)
	}
	if err != nil {
		return false, err
	}
	if len(rows) > MaxReduce {
		return false, nil
	}
	values := make([]string, len(rows))
	for i, row := range rows {
		values[i] = row[0]
	}
	var batches [][]Part
	for start := 0; start < len(values); start += reduceBatch {
		parts, ok := r.fetches(values[start:min(start+reduceBatch, len(values))])
		if !ok {
			return false, nil
		}
		batches = append(batches, parts)
	}
	if t.Like == "" {
		if err := e.create(c, ev, t); err != nil {
			return false, err
		}
	}
	for _, parts := range batches {
		if err := e.copyParts(c, ev, t, parts, false); err != nil {
			return false, err
		}
	}
	return true, nil
}

// copyParts copies the rows of fetches parts of table t into t's
// temporary table on ev, creating the table first (create) from the
// definition the first fetch's server shows. Every fetch is sent before
// any is read, so the shards work at once; their rows are then read in
// turn (the others wait at their sockets) and inserted a batch at a
// time. A failure stops the fetches not read yet (KILL QUERY, their
// rows drained), so that their connections, a transaction's included,
// stay usable.
//
// The fetches' connections are taken in the order of their clusters'
// names, as a merge takes its parts' (acquireOrder): a session holding
// one shard's connection while it waits for another's then never waits
// for a session that holds that one and waits for the first.
func (e *Evaluate) copyParts(c Cursor, ev *backend.Conn, t *EvalCopy, parts []Part, create bool) error {
	if err := e.interrupted(c); err != nil {
		return err
	}
	e.conns = e.conns[:0]
	for range parts {
		e.conns = append(e.conns, nil)
	}
	e.order = acquireOrder(e.order[:0], parts)
	for _, i := range e.order {
		f := &parts[i]
		if e.local(f) {
			continue // (copied by ev itself, below)
		}
		conn, ok := c.Acquire(f.Cluster, e.ReplicaOK)
		if conn == nil {
			return e.stopFetches(c, &answered{goOn: ok})
		}
		if i == 0 && create {
			if err := e.createFrom(conn, ev, t); err != nil {
				return e.stopFetches(c, e.partFailed(c, conn, f.Cluster.Name, err, false))
			}
		}
		if err := conn.WriteCommand(f.Query); err != nil {
			return e.stopFetches(c, e.partFailed(c, conn, f.Cluster.Name, mysql.BackendError(err), true))
		}
		if err := conn.Flush(); err != nil {
			return e.stopFetches(c, e.partFailed(c, conn, f.Cluster.Name, mysql.BackendError(err), true))
		}
		e.conns[i] = conn
	}
	flush := func(batch []byte) error {
		if err := e.interrupted(c); err != nil {
			return err
		}
		return ev.Exec(string(batch))
	}
	for i := range parts {
		if e.local(&parts[i]) {
			if err := e.copyLocal(ev, t, &parts[i]); err != nil {
				return e.stopFetches(c, err)
			}
			continue
		}
		conn := e.conns[i]
		e.rows.Reset(conn.Conn, conn.Caps, nil, false)
		err := e.rows.Start()
		if err == nil && e.rows.Info.Err != nil {
			err = e.rows.Info.Err
		}
		if err == nil {
			err = e.insertRows(t.Temp, flush)
		}
		if err == errInterrupted {
			// Interrupted between two batches (interrupted): this
			// fetch, unread, is stopped with the others.
			return e.stopFetches(c, err)
		}
		e.conns[i] = nil
		if err != nil {
			return e.stopFetches(c, e.partFailed(c, conn, parts[i].Cluster.Name, err, !e.rows.Done()))
		}
		c.SkipWarnings()
		e.rows.Info.SessionState = e.rows.Info.SessionState[:0] // (SET STATEMENT's, not the session's)
		c.Done(conn, &e.rows.Info)
	}
	return nil
}

// interrupted is the error an evaluation stops with, checked between
// batches of its copies and before its statement: a KILL QUERY came, or
// the client went away (WatchClient), and the statements running then on
// the shards and the evaluator were interrupted on their servers, but a
// statement the evaluation sends next would run on (1317). Nil: go on.
func (e *Evaluate) interrupted(c Cursor) error {
	if c.Killed() {
		return errInterrupted
	}
	return nil
}

// stopFetches ends the fetches sent and not read (e.conns) after err:
// each is interrupted and its answer drained, its diagnostics cleared,
// and its connection done with (discarded if that fails). It returns
// err.
func (e *Evaluate) stopFetches(c Cursor, err error) error {
	var rs mysql.RowStream
	for _, conn := range e.conns {
		if conn == nil {
			continue // (not sent, or read already)
		}
		killQuery(conn)
		rs.Reset(conn.Conn, conn.Caps, nil, false)
		serr := rs.Start()
		if serr == nil && !rs.Done() {
			_, serr = rs.Drain(true)
		}
		if serr == nil {
			serr = conn.Exec(clearDiagnostics)
		}
		if serr != nil {
			if !c.Drop(conn, serr) {
				err = &answered{goOn: false}
			}
			continue
		}
		c.SkipWarnings()
		c.Done(conn, &mysql.ResponseInfo{Status: c.Status()})
	}
	e.conns = e.conns[:0]
	return err
}

// insertRows reads the fetch's rows (e.rows) to their end and hands the
// INSERTs of them into temp to flush, in batches. The INSERTs take every
// value as a binary string, which the server converts to the column's
// type as it converts the text the shard sent (strings come in their
// column's character set: the fetch's character_set_results is binary);
// sql_mode is empty for them, so that a value a stricter mode would
// refuse now (a zero date) is copied as the shard holds it.
func (e *Evaluate) insertRows(temp string, flush func(batch []byte) error) error {
	prefix := e.insertPrefix(temp)
	e.batch = append(e.batch[:0], prefix...)
	for {
		row, ok, err := e.rows.Next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if len(e.batch) > len(prefix) {
			e.batch = append(e.batch, ',')
		}
		e.batch = append(e.batch, '(')
		for i, v := range row {
			if i > 0 {
				e.batch = append(e.batch, ',')
			}
			if v.IsNull() {
				e.batch = append(e.batch, "NULL"...)
				continue
			}
			e.batch = appendBinaryLiteral(e.batch, v.Raw())
		}
		e.batch = append(e.batch, ')')
		if len(e.batch) >= evalBatch {
			if err := flush(e.batch); err != nil {
				return err
			}
			e.batch = append(e.batch[:0], prefix...)
		}
	}
	if len(e.batch) > len(prefix) {
		return flush(e.batch)
	}
	return nil
}

// insertPrefix is the INSERT of rows into temp, naming the fetch's
// columns.
func (e *Evaluate) insertPrefix(temp string) string {
	var b strings.Builder
	b.WriteString("SET STATEMENT sql_mode='' FOR INSERT INTO ")
	b.WriteString(temp)
	b.WriteString(" (")
	for i, col := range e.rows.Cols {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(quoteIdent(string(col.Name)))
	}
	b.WriteString(") VALUES ")
	return b.String()
}

// appendBinaryLiteral appends v as _binary'…', escaped as the server
// reads a quoted string without NO_BACKSLASH_ESCAPES (the copies' own
// sql_mode).
func appendBinaryLiteral(b, v []byte) []byte {
	return appendQuoted(append(b, "_binary"...), v)
}

// appendQuoted appends v quoted, escaped as the server reads a quoted
// string without NO_BACKSLASH_ESCAPES (a mode refused on sharded
// schemas).
func appendQuoted(b, v []byte) []byte {
	b = append(b, '\'')
	for _, c := range v {
		switch c {
		case 0:
			b = append(b, '\\', '0')
		case '\'', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case 0x1a:
			b = append(b, '\\', 'Z')
		default:
			b = append(b, c)
		}
	}
	return append(b, '\'')
}
