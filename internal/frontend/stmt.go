package frontend

import (
	"encoding/binary"
	"errors"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
)

// pstmt is a prepared statement as the client knows it. Its id is the
// proxy's; on each backend connection it is prepared lazily under that
// connection's own id.
type pstmt struct {
	id      uint32
	sql     string
	text    []byte // sql, for telemetry
	db      string // database current at PREPARE: tables resolve there
	params  uint16
	columns uint16
	types   []byte // 2 bytes per parameter, as last bound by the client
	stmt    router.Stmt
	sh      *shardedStmt // set when prepared in a sharded schema (shards_stmt.go)
}

// ER_STMT_HAS_NO_OPEN_CURSOR.
const erStmtHasNoOpenCursor uint16 = 1421

func (s *Session) comStmtPrepare(p []byte) bool {
	if len(s.stmts) >= s.srv.opt.MaxStmtsPerSess {
		return s.writeErr(mysql.NewError(mysql.ERMaxPreparedStmt, mysql.StateSyntax,
			"Can't create more than max_prepared_stmt_count statements (current value: %d)", s.srv.opt.MaxStmtsPerSess))
	}
	st := router.Classify(p[1:])
	if e := s.refusePreparedProcesslist(st, p[1:]); e != nil {
		return s.writeErr(e)
	}
	// A prepare leaves the diagnostics in place or replaces them as the
	// statement would (partWarnings); a SHOW WARNINGS prepared is not
	// answered.
	s.diagnosticsBefore(st)
	ks := s.srv.keyspaces().Lookup(s.db)
	if s.namesSchema(st) || ks == nil && s.onInformationSchema() {
		var e *mysql.SQLError
		if ks, e = s.chooseKeyspace(ks, st, p); e != nil {
			return s.writeErr(e)
		}
	}
	if ks != nil {
		ok := s.prepareSharded(ks, p, st)
		if s.outsideFrom != nil {
			s.leaveOutside()
		}
		return ok
	}
	s.enter(s.home)
	return s.prepare(p, p, nil, st)
}

// prepare sends q, a COM_STMT_PREPARE, to the session's cluster and
// relays the answer (with logical table names) as that of the client's
// statement p (classified st), which gets a proxy statement id. q is p,
// or the statement the proxy prepares for it on a shard (sh).
func (s *Session) prepare(p, q []byte, sh *shardedStmt, st router.Stmt) bool {
	c, ok := s.borrow(0)
	if c == nil {
		return ok
	}
	goOn, gone, info := s.prepareOn(c, p, q, sh, st)
	if !gone {
		if info != nil && (info.Warnings > 0 || info.Err != nil) {
			// Its diagnostics, for the next statement, as after() keeps
			// those of a statement.
			s.diagnosticsAfter(info, st)
			s.pins |= pinHeld
		}
		s.release(c)
	}
	return goOn
}

// prepareOn is prepare on connection c, which it keeps unless it failed
// (gone: c was given up, and goOn says whether the session goes on);
// info is the server's answer.
func (s *Session) prepareOn(c *backend.Conn, p, q []byte, sh *shardedStmt, st router.Stmt) (goOn, gone bool, info *mysql.ResponseInfo) {
	if err := c.WriteCommand(q); err != nil {
		return s.backendFailed(c, err, false), true, nil
	}
	id := s.nextStmtID + 1
	r := c.Relay(s.client, s.caps)
	r.RenameTable = s.tableRenamer()
	backendID, cols, params, ok, err := r.Prepare(id)
	if err != nil {
		return s.relayFailed(c, err, r.Info.Sent), true, nil
	}
	if ok {
		s.nextStmtID = id
		sql := string(p[1:])
		ps := &pstmt{id: id, sql: sql, text: []byte(sql), db: s.connDB(), params: params, columns: cols, stmt: st, sh: sh}
		if s.stmts == nil {
			s.stmts = make(map[uint32]*pstmt)
		}
		s.stmts[id] = ps
		backendSQL := sql
		if len(q) != len(p) || &q[0] != &p[0] {
			backendSQL = string(q[1:])
		}
		if err := c.AddStmt(&backend.Stmt{SQL: backendSQL, DB: s.connDB(), ID: backendID, Params: params, Columns: cols}); err != nil {
			return s.backendFailed(c, err, true), true, nil
		}
	}
	return true, false, &r.Info
}

// lookupStmt finds the client's statement named in a COM_STMT_* packet.
func (s *Session) lookupStmt(p []byte, cmd string) (*pstmt, *mysql.SQLError) {
	if len(p) < 5 {
		return nil, mysql.NewError(mysql.ERMalformedPacket, mysql.StateGeneral, "Malformed communication packet")
	}
	id := binary.LittleEndian.Uint32(p[1:])
	ps := s.stmts[id]
	if ps == nil {
		return nil, mysql.NewError(mysql.ERUnknownStmtHandler, mysql.StateGeneral,
			"Unknown prepared statement handler (%d) given to %s", id, cmd)
	}
	return ps, nil
}

// backendStmt returns the statement prepared on c for ps, preparing it there
// first when needed (under the database it was prepared in).
func (s *Session) backendStmt(c *backend.Conn, ps *pstmt) (*backend.Stmt, error) {
	if st := c.LookupStmt([]byte(ps.sql), ps.db); st != nil {
		return st, nil
	}
	return s.prepareBackend(c, ps.sql, ps.db)
}

// prepareBackend prepares sql on c under database db.
func (s *Session) prepareBackend(c *backend.Conn, sql, db string) (*backend.Stmt, error) {
	if db != c.DB && db != "" {
		if err := c.Exec(string(backend.AppendUseDB(nil, db))); err != nil {
			return nil, err
		}
		defer func() {
			if c.DB != "" {
				if err := c.Exec(string(backend.AppendUseDB(nil, c.DB))); err != nil {
					c.Dirty = true
				}
			}
		}()
	}
	return c.Prepare(sql, db)
}

func (s *Session) comStmtExecute(p []byte) bool {
	ps, e := s.lookupStmt(p, "mysqld_stmt_execute")
	if e != nil {
		return s.writeErr(e)
	}
	s.teleNote(ps.stmt, ps.text)
	if len(p) < 10 {
		return s.writeErr(mysql.NewError(mysql.ERMalformedPacket, mysql.StateGeneral, "Malformed communication packet"))
	}
	if s.trxAborted {
		return s.writeErr(errTrxAborted)
	}
	if s.diagnosticsBefore(ps.stmt) {
		// A SHOW WARNINGS the session would answer, had it come as
		// text: its server answers it.
		s.warns.valid = false
	}
	if s.stream != nil && len(p) < paramTypesEnd(ps) {
		// The head of a streamed packet ends inside the parameter types
		// (tens of thousands of parameters): they are needed whole.
		if p = s.readWhole(p); p == nil {
			return false
		}
	}
	bound, ok := s.noteParamTypes(ps, p)
	if !ok {
		return s.writeErr(mysql.NewError(mysql.ERWrongArguments, mysql.StateGeneral, "Incorrect arguments to mysqld_stmt_execute"))
	}
	if s.stream != nil && !bound {
		// The types the client left out go into the packet: it must be
		// rebuilt, so it is read whole.
		if p = s.readWhole(p); p == nil {
			return false
		}
	}
	cursor := p[5]&(mysql.CursorTypeReadOnly|mysql.CursorTypeForUpdate|mysql.CursorTypeScrollable) != 0
	if ps.sh != nil {
		ps.sh.held = nil // a new execution closes the statement's cursor
	}
	s.exec = stmtExec{ps: ps, packet: p, bound: bound, cursor: cursor}
	ok = s.statement(p, ps.stmt)
	s.exec = stmtExec{}
	if ps.sh != nil {
		ps.sh.dropLongData() // consumed by the execution, as on the server
	}
	return ok
}

// stmtExec is the COM_STMT_EXECUTE that execute is running, if any: it is
// sent with the backend connection's own statement id (prepared there
// first if need be) instead of as is.
type stmtExec struct {
	ps     *pstmt
	packet []byte // the client's COM_STMT_EXECUTE
	bound  bool   // the packet carries parameter types
	cursor bool   // the client asked for a cursor
	// sql is the text of the backend statement a sharded statement runs
	// as on the connection at hand (ps.sql when nil), and order the
	// client's parameter each of its '?' stands for (nil: in order).
	sql   []byte
	order []int
}

// sendExecute prepares the statement on c if it is not yet and sends the
// execution. A SQL error preparing it is the client's answer
// (*notRun); anything else is a backend failure.
func (s *Session) sendExecute(c *backend.Conn, p []byte) error {
	ps := s.exec.ps
	var bst *backend.Stmt
	var err error
	if s.exec.sql != nil {
		bst, err = s.shardStmt(c, ps, s.exec.sql)
	} else {
		bst, err = s.backendStmt(c, ps)
	}
	if err != nil {
		var se *mysql.SQLError
		if errors.As(err, &se) {
			return &notRun{se}
		}
		return mysql.BackendError(err)
	}
	if err := s.killedError(); err != nil {
		return err // killed while the statement was being prepared there
	}
	if ps.sh != nil {
		return s.writeShardExecute(c, p, ps, bst.ID)
	}
	return s.writeExecute(c, p, ps, bst.ID, s.exec.bound)
}

// notRun: a statement was not sent on a connection, which stays fine:
// the server refused to prepare it there (a table dropped since, say), or
// a KILL QUERY came for the client's statement before this part of it
// was sent (killedError). The client gets the error.
type notRun struct{ *mysql.SQLError }

// killedError refuses a part of the client's statement after a KILL QUERY
// came for it: the parts running then were interrupted, and one server
// would not go on with the statement either. nil when none came.
func (s *Session) killedError() error {
	if !s.queryKilled.Load() {
		return nil
	}
	return &notRun{mysql.NewError(mysql.ERQueryInterrupted, mysql.StateQueryInterrupted, "Query execution was interrupted")}
}

// afterExecute records what a prepared statement's execution leaves: long
// data is consumed, and an open cursor pins the connection.
func (s *Session) afterExecute(c *backend.Conn, info *mysql.ResponseInfo) {
	s.pins &^= pinLongData
	if s.exec.cursor && info.Status&mysql.StatusCursorExists != 0 {
		s.pins |= pinCursor
		c.Dirty = true
		if sh := s.exec.ps.sh; sh != nil {
			sh.openedCursor(s.cl, s.exec.sql)
		}
	}
}

// noteParamTypes remembers the parameter types the client bound, since a
// later execute may omit them (new_params_bound_flag = 0) while running on a
// backend connection that never saw them. bound reports whether p carries
// types itself.
func (s *Session) noteParamTypes(ps *pstmt, p []byte) (bound, ok bool) {
	if ps.params == 0 {
		return true, true
	}
	nb := (int(ps.params) + 7) / 8
	off := 10 + nb
	if len(p) < off+1 {
		return false, false
	}
	if p[off] == 1 {
		types := p[off+1:]
		if len(types) < 2*int(ps.params) {
			return false, false
		}
		ps.types = append(ps.types[:0], types[:2*int(ps.params)]...)
		return true, true
	}
	return false, len(ps.types) == 2*int(ps.params)
}

// paramTypesEnd is where the parameter types of ps's COM_STMT_EXECUTE end
// when the packet carries them.
func paramTypesEnd(ps *pstmt) int {
	if ps.params == 0 {
		return 0
	}
	return 10 + (int(ps.params)+7)/8 + 1 + 2*int(ps.params)
}

// writeExecute sends COM_STMT_EXECUTE to c with the backend's statement id,
// adding the remembered parameter types when the client left them out.
func (s *Session) writeExecute(c *backend.Conn, p []byte, ps *pstmt, backendID uint32, bound bool) error {
	if bound {
		binary.LittleEndian.PutUint32(p[1:], backendID)
		return s.writeCommand(c, p)
	}
	nb := (int(ps.params) + 7) / 8
	off := 10 + nb
	c.ResetSeq()
	b := c.BeginPacket()
	b = append(b, p[:off]...)
	binary.LittleEndian.PutUint32(b[len(b)-off+1:], backendID)
	b = append(b, 1)
	b = append(b, ps.types...)
	b = append(b, p[off+1:]...)
	if err := c.EndPacket(b); err != nil {
		return mysql.BackendError(err)
	}
	if err := c.FlushForReply(); err != nil {
		return mysql.BackendError(err)
	}
	return nil
}

func (s *Session) comStmtSendLongData(p []byte) bool {
	ps, e := s.lookupStmt(p, "mysqld_stmt_send_long_data")
	if e != nil {
		// No response is defined for this command: the error surfaces at
		// EXECUTE, as on the server.
		return true
	}
	if ps.sh != nil {
		ps.sh.addLongData(p, int(ps.params))
		return true
	}
	s.pins |= pinLongData
	c, err := s.acquire(needDB)
	if err != nil {
		s.unpinAfterFailure()
		return true
	}
	if err := s.sync(c, needDB); err != nil {
		c.Dirty = true
		s.pins &^= pinLongData
		s.release(c)
		return true
	}
	bst, err := s.backendStmt(c, ps)
	if err != nil {
		s.pins &^= pinLongData
		if mysql.IsSQLError(err) {
			s.release(c)
			return true
		}
		return s.backendFailed(c, err, false)
	}
	c.Dirty = true
	binary.LittleEndian.PutUint32(p[1:], bst.ID)
	if err := c.WriteCommand(p); err != nil {
		return s.backendFailed(c, err, false)
	}
	s.pinned = c
	return true
}

func (s *Session) comStmtClose(p []byte) bool {
	ps, e := s.lookupStmt(p, "mysqld_stmt_close")
	if e != nil {
		return true // no response for COM_STMT_CLOSE
	}
	delete(s.stmts, ps.id)
	if ps.sh != nil {
		ps.sh.held = nil
	}
	if !s.enterCursor(ps) {
		return true
	}
	if s.pins&(pinCursor|pinLongData) != 0 && s.pinned != nil {
		// Close the cursor or drop the long data on the backend, which keeps
		// the statement itself for reuse.
		if bst := s.lookupBackendStmt(s.pinned, ps); bst != nil {
			if err := s.resetBackendStmt(s.pinned, bst.ID); err != nil {
				return s.backendFailed(s.pinned, err, false)
			}
		}
		s.pins &^= pinCursor | pinLongData
		s.release(s.pinned)
	}
	return true
}

// resetBackendStmt sends COM_STMT_RESET and reads its reply.
func (s *Session) resetBackendStmt(c *backend.Conn, id uint32) error {
	var pkt [5]byte
	pkt[0] = mysql.ComStmtReset
	binary.LittleEndian.PutUint32(pkt[1:], id)
	if err := c.WriteCommand(pkt[:]); err != nil {
		return err
	}
	return c.DrainResponse()
}

func (s *Session) comStmtReset(p []byte) bool {
	ps, e := s.lookupStmt(p, "mysqld_stmt_reset")
	if e != nil {
		return s.writeErr(e)
	}
	if ps.sh != nil {
		ps.sh.dropLongData()
		ps.sh.held = nil
	}
	if s.enterCursor(ps) && s.pinned != nil && s.pins&(pinCursor|pinLongData) != 0 {
		if bst := s.lookupBackendStmt(s.pinned, ps); bst != nil {
			binary.LittleEndian.PutUint32(p[1:], bst.ID)
			s.pins &^= pinCursor | pinLongData
			return s.execute(p, 0, relaySingle, router.Stmt{})
		}
	}
	// Nothing of this statement lives on a backend connection right now.
	return s.writeOK(&mysql.OKPacket{Status: s.status()})
}

func (s *Session) comStmtFetch(p []byte) bool {
	ps, e := s.lookupStmt(p, "mysqld_stmt_fetch")
	if e != nil {
		return s.writeErr(e)
	}
	if ps.sh != nil && ps.sh.held != nil {
		return s.fetchHeld(ps, p)
	}
	if !s.enterCursor(ps) || s.pins&pinCursor == 0 || s.pinned == nil {
		return s.writeErr(mysql.NewError(erStmtHasNoOpenCursor, mysql.StateGeneral, "The statement (%d) has no open cursor.", ps.id))
	}
	c := s.pinned
	bst := s.lookupBackendStmt(c, ps)
	if bst == nil {
		return s.writeErr(mysql.NewError(erStmtHasNoOpenCursor, mysql.StateGeneral, "The statement (%d) has no open cursor.", ps.id))
	}
	binary.LittleEndian.PutUint32(p[1:], bst.ID)
	s.setRunning(c)
	if err := c.WriteCommand(p); err != nil {
		s.setRunning(nil)
		return s.backendFailed(c, err, false)
	}
	r := c.Relay(s.client, s.caps)
	err := r.Rows()
	s.setRunning(nil)
	s.teleFetched(ps, r.Info.Rows)
	if err != nil {
		return s.relayFailed(c, err, r.Info.Sent)
	}
	if r.Info.Err != nil || r.Info.Status&mysql.StatusLastRowSent != 0 || r.Info.Status&mysql.StatusCursorExists == 0 {
		s.pins &^= pinCursor
	}
	s.release(c)
	return true
}

// lookupBackendStmt returns the statement prepared on c that ps's open
// cursor or long data lives on, if any.
func (s *Session) lookupBackendStmt(c *backend.Conn, ps *pstmt) *backend.Stmt {
	if ps.sh != nil && ps.sh.curSQL != nil {
		return c.LookupStmt(ps.sh.curSQL, ps.db)
	}
	return c.LookupStmt([]byte(ps.sql), ps.db)
}
