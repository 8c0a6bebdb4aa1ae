package frontend

import (
	"encoding/binary"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/planner"
	"github.com/shardgate/shardgate/internal/router"
)

// Prepared statements on a sharded schema. PREPARE plans the statement
// once and prepares, for the client's answer, the text of one sub-table
// on its shard (planner.Binder.Prepare); each EXECUTE is bound to the
// sub-tables its parameters pick (planner.Binder.Execute), which run the
// server-side statements prepared from their texts (by the
// per-connection statement cache, keyed by text); the binary rows come
// back as the servers send them. What is the session's: the long data
// held until EXECUTE, the rows of a cursor over several shards, where the
// last cursor was opened, and sending the execution with its parameters
// in each backend statement's order.

// shardedStmt is what a statement prepared in a sharded schema keeps.
type shardedStmt struct {
	// prep is what its executions are bound by: the keyspace, the plan,
	// the client's text and shape, the parameters' order.
	prep planner.Prepared
	// outside: prep.KS is not the schema of the session's database at
	// PREPARE (the statement names it); db is then the database its
	// connections use, when not the session's (planner.Choice.DB).
	outside bool
	db      string

	// Long data (COM_STMT_SEND_LONG_DATA) is held here until EXECUTE,
	// when the sub-tables are known, and sent to each.
	long     [][]byte
	hasLong  []bool
	longSize int
	longErr  *mysql.SQLError

	// held are the rows of a cursor open over several shards, which the
	// proxy serves to COM_STMT_FETCH (engine.Cursor.KeepCursor).
	held *mysql.RowHold

	// The last cursor opened: its cluster and its backend statement's
	// text (the client's text when nil).
	curCl  *backend.Cluster
	curSQL []byte
}

// fetchHeld answers COM_STMT_FETCH p from the rows the proxy holds for
// ps's cursor over several shards.
func (s *Session) fetchHeld(ps *pstmt, p []byte) bool {
	n := uint32(0)
	if len(p) >= 9 {
		n = binary.LittleEndian.Uint32(p[5:])
	}
	more, err := ps.sh.held.FetchTo(s.client, n, s.status(), s.caps)
	if !more {
		ps.sh.held = nil
	}
	return err == nil
}

// keyspace is the sharded schema ps was prepared in, or nil.
func (ps *pstmt) keyspace() *planner.Keyspace {
	if ps.sh == nil {
		return nil
	}
	return ps.sh.prep.KS
}

// maxLongData bounds the long data the proxy holds for one execution.
const maxLongData = 64 << 20

// prepareSharded answers COM_STMT_PREPARE in a sharded schema, where
// planner.Binder.Prepare says: as written where the statement runs, as
// one sub-table's text on that sub-table's shard (so that the client sees
// a server's parameter count and column definitions, with logical table
// names), around the temporary tables of its evaluation, or refused with
// the error a server gives at PREPARE.
func (s *Session) prepareSharded(ks *planner.Keyspace, p []byte, st router.Stmt) bool {
	sh := &shardedStmt{outside: s.outsideFrom != nil, db: s.partDB}
	at := s.binder().Prepare(ks, st, p, s, &sh.prep)
	switch {
	case at.Err != nil:
		return s.writeErr(at.Err)
	case at.Evaluate != nil:
		// Prepared where it will be evaluated, over the temporary
		// tables: the definitions are one server's.
		return at.Evaluate.Prepare(s, func(ev *backend.Conn) (bool, bool, *mysql.ResponseInfo) { return s.prepareOn(ev, p, p, sh, st) })
	}
	q := p
	if at.Query != nil {
		q = at.Query
	}
	s.enter(at.Cluster)
	return s.prepare(p, q, sh, st)
}

// ExecuteParams implements planner.Session: it decodes the parameters of
// the COM_STMT_EXECUTE being planned into dst, noting where each value
// lies in the packet (shardWork.spans) for writeReordered. Nothing is
// allocated once the session's buffers have grown to the statement's
// parameters.
func (s *Session) ExecuteParams(dst *planner.ExecValues) error {
	ps, p := s.exec.ps, s.exec.packet
	sh := ps.sh
	n := int(ps.params)
	dst.ResetParams(n)
	w := s.shardWork()
	w.spans = w.spans[:0]
	if n == 0 {
		return nil
	}
	e, err := mysql.ParseExecuteParams(p, n)
	if err != nil {
		return err
	}
	if e.Types == nil {
		e.Types = ps.types // noteParamTypes checked there are as many
	}
	w.xparams = e
	off := 0
	for i := 0; i < n; i++ {
		start := off
		switch {
		case sh.hasLong != nil && sh.hasLong[i]:
			// The server takes long data over the NULL bit and the packet
			// holds no value for it.
			dst.SetString(i, sh.long[i], mysql.IsBlob(e.Types[2*i]))
		case e.Null(i):
			dst.SetNull(i)
		default:
			v, w, err := mysql.ReadParam(e.Values[off:], e.Types[2*i], e.Types[2*i+1]&0x80 != 0)
			if err != nil {
				return err
			}
			dst.SetParam(i, v)
			off += w
		}
		w.spans = append(w.spans, [2]int{start, off})
	}
	return nil
}

// shardStmt returns the statement prepared on c from sql, a sub-table's
// text of ps, preparing it there first when needed.
func (s *Session) shardStmt(c *backend.Conn, ps *pstmt, sql []byte) (*backend.Stmt, error) {
	if st := c.LookupStmt(sql, ps.db); st != nil {
		return st, nil
	}
	return s.prepareBackend(c, string(sql), ps.db)
}

// writeShardExecute sends the execution of ps's backend statement id on
// c: its long data first, then COM_STMT_EXECUTE, its parameters in the
// order of the backend statement's text.
func (s *Session) writeShardExecute(c *backend.Conn, p []byte, ps *pstmt, id uint32) error {
	order := s.exec.order
	if s.exec.sql == nil {
		order = nil // the client's text: its own order
	}
	if err := s.writeLongData(c, ps.sh, order, id); err != nil {
		return mysql.BackendError(err)
	}
	if order == nil {
		return s.writeExecute(c, p, ps, id, s.exec.bound)
	}
	return s.writeReordered(c, p, id, order)
}

// writeLongData queues COM_STMT_SEND_LONG_DATA for each parameter that
// has long data (no answer; flushed with the execution).
func (s *Session) writeLongData(c *backend.Conn, sh *shardedStmt, order []int, id uint32) error {
	for i, has := range sh.hasLong {
		if !has {
			continue
		}
		k := i
		for j, ci := range order {
			if ci == i {
				k = j
			}
		}
		c.ResetSeq()
		b := append(c.BeginPacket(), mysql.ComStmtSendLongData)
		b = mysql.AppendUint32(b, id)
		b = append(b, byte(k), byte(k>>8))
		if err := c.EndPacket(append(b, sh.long[i]...)); err != nil {
			return err
		}
	}
	return nil
}

// writeReordered sends COM_STMT_EXECUTE of backend statement id with the
// client's parameters (decoded by ExecuteParams) in order: NULL bits, types
// and values moved to where the backend text has them.
func (s *Session) writeReordered(c *backend.Conn, p []byte, id uint32, order []int) error {
	w := s.shardWork()
	e := &w.xparams
	c.ResetSeq()
	b := append(c.BeginPacket(), mysql.ComStmtExecute)
	b = mysql.AppendUint32(b, id)
	b = append(b, p[5:10]...) // flags, iteration count
	nulls := len(b)
	for range (len(order) + 7) / 8 {
		b = append(b, 0)
	}
	for k, i := range order {
		if e.Null(i) {
			b[nulls+k/8] |= 1 << (k % 8)
		}
	}
	b = append(b, 1)
	for _, i := range order {
		b = append(b, e.Types[2*i], e.Types[2*i+1])
	}
	for _, i := range order {
		b = append(b, e.Values[w.spans[i][0]:w.spans[i][1]]...)
	}
	if err := c.EndPacket(b); err != nil {
		return mysql.BackendError(err)
	}
	if err := c.FlushForReply(); err != nil {
		return mysql.BackendError(err)
	}
	return nil
}

// addLongData holds the data of a COM_STMT_SEND_LONG_DATA packet p for a
// statement of n parameters. Errors are the next EXECUTE's answer, as on
// the server.
func (sh *shardedStmt) addLongData(p []byte, n int) {
	if sh.longErr != nil {
		return
	}
	if len(p) < 7 || int(binary.LittleEndian.Uint16(p[5:])) >= n {
		sh.longErr = mysql.NewError(mysql.ERWrongArguments, mysql.StateGeneral, "Incorrect arguments to mysqld_stmt_send_long_data")
		return
	}
	i, data := int(binary.LittleEndian.Uint16(p[5:])), p[7:]
	if sh.longSize+len(data) > maxLongData {
		sh.longErr = mysql.NewError(mysql.ERUnknownError, mysql.StateGeneral,
			"Parameter of prepared statement which is set through mysql_send_long_data() is longer than shardgate's %d bytes for a statement on a sharded schema", maxLongData)
		return
	}
	if sh.long == nil {
		sh.long, sh.hasLong = make([][]byte, n), make([]bool, n)
	}
	sh.long[i] = append(sh.long[i], data...)
	sh.hasLong[i] = true
	sh.longSize += len(data)
}

// dropLongData forgets the long data (and its error) after an execution
// or COM_STMT_RESET, keeping the buffers.
func (sh *shardedStmt) dropLongData() {
	for i := range sh.long {
		sh.long[i] = sh.long[i][:0]
		sh.hasLong[i] = false
	}
	sh.longSize, sh.longErr = 0, nil
}

// openedCursor records where an execution opened a cursor: on cl, for
// the backend statement of text sql (nil: the client's).
func (sh *shardedStmt) openedCursor(cl *backend.Cluster, sql []byte) {
	sh.curCl = cl
	if sql == nil {
		sh.curSQL = nil
		return
	}
	sh.curSQL = append(sh.curSQL[:0], sql...)
}

// enterCursor makes the cluster where ps's last cursor was opened the
// session's, so that FETCH, RESET and CLOSE find its connection. false:
// ps, prepared in a sharded schema, never opened one.
func (s *Session) enterCursor(ps *pstmt) bool {
	if ps.sh == nil {
		return true
	}
	if ps.sh.curCl == nil {
		return false
	}
	s.enter(ps.sh.curCl)
	return true
}
