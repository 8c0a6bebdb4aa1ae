package frontend

import (
	"bytes"
	"encoding/binary"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/planner"
	"github.com/shardgate/shardgate/internal/router"
)

// Prepared statements on a sharded schema. PREPARE plans the statement
// once (the plan of its shape) and prepares, for the client's answer,
// the text of one sub-table on its shard. Each EXECUTE routes by the
// typed parameters it carries and runs, on every sub-table it picks, a
// server-side statement prepared from that sub-table's text (by the
// per-connection statement cache, keyed by text); the binary rows come
// back as the servers send them. Parameters are never pasted into SQL.

// shardedStmt is what a statement prepared in a sharded schema keeps.
type shardedStmt struct {
	ks *planner.Keyspace
	// outside: ks is not the schema of the session's database at PREPARE
	// (the statement names it); db is then the database its connections
	// use, when not the session's (planner.Choice.DB).
	outside bool
	db      string
	// plan is the statement's plan; nil for a statement that runs as
	// written on cl (a shard hint, BEGIN, SET …).
	plan *planner.Plan
	cl   *backend.Cluster
	// text and shape are the client's statement, whose literals the
	// sub-tables' texts copy.
	text  []byte
	shape router.Shape
	// order is Template.Params when it is not the identity: the client's
	// parameter each '?' of a sub-table's text stands for.
	order []int

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
	return ps.sh.ks
}

// maxLongData bounds the long data the proxy holds for one execution.
const maxLongData = 64 << 20

// prepareSharded answers COM_STMT_PREPARE in a sharded schema.
// Statements about the session and hinted ones are prepared as written
// where they will run; others are planned, their shape's refusals are
// the PREPARE's error (as a server refuses a statement at PREPARE), and
// a Sharded one is prepared as one sub-table's text on that sub-table's
// shard, so that the client sees a server's parameter count and column
// definitions (with logical table names).
func (s *Session) prepareSharded(ks *planner.Keyspace, p []byte, st router.Stmt) bool {
	sql := p[1:]
	sh := &shardedStmt{ks: ks, outside: s.outsideFrom != nil, db: s.partDB}
	switch st.Kind {
	case router.KindCommit, router.KindRollback, router.KindBegin, router.KindSet, router.KindSavepoint:
		sh.cl = s.cl
		return s.prepare(p, p, sh, st)
	}
	if st.Flags&router.FlagHintShard != 0 {
		if name, ok := router.ShardHint(sql); ok {
			if sh.cl = ks.Shard(name); sh.cl == nil {
				return s.writeErr(mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax,
					"shardgate: shard hint names %q, which is not a shard of schema %s", name, ks.Schema.Name))
			}
			s.enter(sh.cl)
			return s.prepare(p, p, sh, st)
		}
	}
	sh.text = bytes.Clone(sql)
	router.ScanShape(sh.text, &sh.shape)
	plan := ks.Plan(sh.text, &sh.shape, s.db)
	if plan.Err != nil {
		if prim := s.evaluate(ks, plan, st, sh.text, &sh.shape, nil, sh.text); prim != nil {
			// Prepared where it will be evaluated, over the temporary
			// tables: the definitions are one server's.
			sh.plan = plan
			return s.evaluation.Prepare(s, func(ev *backend.Conn) (bool, bool, *mysql.ResponseInfo) { return s.prepareOn(ev, p, p, sh, st) })
		}
		return s.writeErr(s.planRefusal(ks, plan, sh.text))
	}
	sh.plan = plan
	if plan.An.Placement == planner.InfoSchema {
		return s.writeErr(mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax, "This version of shardgate doesn't yet support '%s'",
			"prepared statements on information_schema's table listings on a sharded schema (send the query as text)"))
	}
	if plan.An.Placement != planner.Sharded {
		s.enter(ks.Default)
		return s.prepare(p, p, sh, st)
	}
	order := plan.Tmpl.Params()
	if len(order) != len(sh.shape.Params) {
		return s.writeErr(mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax,
			"This version of shardgate doesn't yet support '%s'", "a prepared statement whose parameters the SQL parser does not write back one for one, on sharded tables"))
	}
	for k, i := range order {
		if k != i {
			sh.order = order
			break
		}
	}
	i := plan.An.SampleSubTable()
	s.sub[0] = i
	q := plan.Tmpl.Append([]byte{mysql.ComStmtPrepare}, sh.text, &sh.shape, s.sub[:])
	s.enter(ks.Shard(plan.An.Group.Layout.Shard(i)))
	return s.prepare(p, q, sh, st)
}

// planExecute plans an execution of ps, prepared in sharded schema ks,
// as planStatement plans a text statement, the key values coming from
// the parameters bound.
func (s *Session) planExecute(ks *planner.Keyspace, ps *pstmt, st router.Stmt, p []byte) engine.Primitive {
	sh := ps.sh
	if sh.longErr != nil {
		s.refusal = engine.Refuse{Err: sh.longErr}
		return &s.refusal
	}
	if sh.plan == nil {
		return s.routeToShard(sh.cl, st)
	}
	if s.stream != nil {
		return s.refuse1235("This version of shardgate doesn't yet support '%s'", "statements larger than the packet buffer on a sharded schema (send long values with COM_STMT_SEND_LONG_DATA)")
	}
	if sh.plan.An == nil { // evaluated (prepareSharded)
		if err := s.bindParams(ps, p); err != nil {
			return s.refuseErr(mysql.NewError(mysql.ERWrongArguments, mysql.StateGeneral, "Incorrect arguments to mysqld_stmt_execute"))
		}
		return s.evaluateOr(ks, sh.plan, st, sh.text, &sh.shape, &s.xvals, sh.text, sh.plan.Err)
	}
	if sh.plan.An.Placement != planner.Sharded {
		return s.placeWhole(ks, sh.plan.An, st)
	}
	if st.Flags&router.FlagUserVar != 0 {
		return s.refuseUserVars()
	}
	return s.executeSharded(ks, ps, st, p)
}

// executeSharded plans an execution of a statement on sharded tables on
// the sub-tables its parameters pick.
func (s *Session) executeSharded(ks *planner.Keyspace, ps *pstmt, st router.Stmt, p []byte) engine.Primitive {
	sh := ps.sh
	if err := s.bindParams(ps, p); err != nil {
		return s.refuseErr(mysql.NewError(mysql.ERWrongArguments, mysql.StateGeneral, "Incorrect arguments to mysqld_stmt_execute"))
	}
	an := sh.plan.An
	if an.Insert != nil {
		return s.insertParts(ks, sh.plan, st, sh.text, &sh.shape, &s.xvals, true)
	}
	target, err := an.Route(&s.xvals)
	if err != nil {
		return s.evaluateOr(ks, sh.plan, st, sh.text, &sh.shape, &s.xvals, sh.text, err)
	}
	sh.held = nil // a new execution closes the statement's cursor
	if target.Len() > 1 && s.merges(sh.plan) {
		// Merged; a cursor's rows are held by the merge and served by
		// the proxy (a Scatter cannot hold them).
		return s.planMerge(ks, sh.plan, sh.text, &sh.shape, target, st, &s.xvals, true)
	}
	s.renderParts(ks, sh.plan, sh.text, &sh.shape, target, true, sh.order)
	return s.subTables(ks, sh.plan, st)
}

// bindParams decodes the parameters of the COM_STMT_EXECUTE of ps into
// s.xvals (ExecuteParams).
func (s *Session) bindParams(ps *pstmt, p []byte) error {
	s.xvals.Reset(ps.sh.text, &ps.sh.shape)
	return s.ExecuteParams(&s.xvals)
}

// ExecuteParams implements planner.Session: it decodes the parameters of
// the COM_STMT_EXECUTE being planned into dst, noting where each value
// lies in the packet (s.spans) for writeReordered. Nothing is allocated
// once the session's buffers have grown to the statement's parameters.
func (s *Session) ExecuteParams(dst *planner.ExecValues) error {
	ps, p := s.exec.ps, s.exec.packet
	sh := ps.sh
	n := int(ps.params)
	dst.ResetParams(n)
	s.spans = s.spans[:0]
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
	s.xparams = e
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
		s.spans = append(s.spans, [2]int{start, off})
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
// client's parameters (decoded by bindParams) in order: NULL bits, types
// and values moved to where the backend text has them.
func (s *Session) writeReordered(c *backend.Conn, p []byte, id uint32, order []int) error {
	e := &s.xparams
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
		b = append(b, e.Values[s.spans[i][0]:s.spans[i][1]]...)
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
