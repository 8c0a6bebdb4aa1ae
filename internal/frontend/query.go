package frontend

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/planner"
	"github.com/shardgate/shardgate/internal/router"
)

// pinReason says why a session holds its backend connection between
// statements. The table in docs/compatibility.md mirrors these.
type pinReason uint16

const (
	pinTrx      pinReason = 1 << iota // a transaction is open (SERVER_STATUS_IN_TRANS)
	pinLock                           // LOCK TABLES / FLUSH TABLES WITH READ LOCK until UNLOCK TABLES
	pinSession                        // state only this connection has: user variables, GET_LOCK, temporary tables, text PREPARE, HANDLER, XA, session_track_* changes
	pinNextTrx                        // SET TRANSACTION applies to the next transaction on this connection
	pinCursor                         // an open prepared-statement cursor
	pinLongData                       // COM_STMT_SEND_LONG_DATA sent, awaiting EXECUTE
	pinHeld                           // the previous statement left warnings or SQL_CALC_FOUND_ROWS for the next one
)

// pinsThatDirty are held states that outlive a transaction, so the
// connection must be reset before anyone else uses it. An open transaction
// alone does not dirty it: COMMIT or ROLLBACK cleans it, and a session that
// ends inside one has its connection reset on close.
const pinsThatDirty = pinLock | pinSession | pinCursor | pinLongData | pinNextTrx

// relayKind selects how a command's response is relayed.
type relayKind uint8

const (
	relayQuery relayKind = iota
	relaySingle
	relayFieldList
	relayRows
)

func (s *Session) comQuery(p []byte) bool {
	st := router.Classify(p[1:])
	if s.stream != nil {
		if st.Flags&diagnosticsFlags != 0 || st.Processlist != 0 {
			// The proxy rewrites or answers these statements: it needs
			// them whole.
			if p = s.readWhole(p); p == nil {
				return false
			}
			st = router.Classify(p[1:])
		} else {
			// Classified by its head only: a write for routing, whatever
			// the rest holds.
			st.Flags |= router.FlagHintPrimary
		}
	}
	s.teleNote(st, p[1:])
	if s.trxAborted && st.Kind != router.KindBegin {
		return s.abortedTrx(st)
	}
	if s.trxAborted {
		s.rollbackHeld() // the parts on other shards end with it
	}
	s.trxAborted = false // BEGIN starts afresh, as after a deadlock
	if e := s.refuseQuery(st); e != nil {
		return s.writeErr(e)
	}
	if s.diagnosticsBefore(st) {
		return s.answerDiagnostics(p[1:], &s.warns)
	}
	if s.warns.valid && getDiagnostics(st) {
		return s.writeErr(errGetDiagnostics)
	}
	if st.Processlist != 0 && s.namesProcesslist(st) {
		// Before CONNECTION_ID() is rewritten: the proxy reads it itself.
		if handled, ok := s.processlist(st, p); handled {
			return ok
		}
	}
	if st.Kind == router.KindPrepare || st.Kind == router.KindExecute {
		if e := s.refuseTextPrepare(p[1:]); e != nil {
			return s.writeErr(e)
		}
	}
	if st.Flags&(diagnosticsFlags|router.FlagLastInsertID|router.FlagClientTimeout) != 0 {
		if st.Flags&diagnosticsFlags != 0 && !s.reclaimPrevious() {
			if st.Kind == router.KindShow && st.Flags&router.FlagWarnings != 0 {
				return s.answerNoDiagnostics(p[1:])
			}
		}
		p, st = s.substitute(p, st)
	}
	if st.Kind == router.KindKill {
		if handled, ok := s.kill(st); handled {
			return ok
		}
	}
	return s.statement(p, st)
}

// statement plans and runs a client statement, COM_QUERY or
// COM_STMT_EXECUTE (s.exec set), once the command's own checks passed.
func (s *Session) statement(p []byte, st router.Stmt) bool {
	s.dropHeldElsewhere(st) // before planning: a connection it drops no longer pins
	s.cmd = command{st: st, n: needDB | lastIDNeeds(st, s.stream != nil)}
	s.rowsProbed = false // the previous statement's, which substitute has read
	if s.lastIDConn != nil && s.lastIDConn != s.pinned {
		s.lostLastID()
	}
	if st.Flags&router.FlagHintExplain != 0 && (s.srv.keyspaces().Lookup(s.db) != nil || s.explainsOutside(st, p)) {
		return s.explain(st, p)
	}
	s.tele.trace.st.StartPlan()
	prim := s.planFor(st, p)
	s.tele.trace.st.EndPlan()
	ok := prim.Execute(s, p)
	s.warns.held = nil // read, or still where they were
	if s.outsideFrom != nil {
		s.leaveOutside()
	}
	// At once, not at the next statement: the other shards' parts hold
	// locks another transaction may wait for.
	s.settleDoomed()
	s.beginTaken()
	s.endLastID()
	return ok
}

// plan returns the plan of statement p. A cursor pins its connection, so
// it is only ever opened on the writer.
func (s *Session) plan(st router.Stmt, p []byte) engine.Primitive {
	var prim engine.Primitive
	ks := s.srv.keyspaces().Lookup(s.db)
	if ps := s.exec.ps; ps != nil {
		ks = ps.keyspace() // where it was prepared, not the current database
		if e := s.outsidePrepared(ps); e != nil {
			return s.binder().Refuse(e)
		}
	} else if s.namesSchema(st) || ks == nil && s.onInformationSchema() {
		var e *mysql.SQLError
		if ks, e = s.chooseKeyspace(ks, st, p); e != nil {
			return s.binder().Refuse(e)
		}
	}
	if ks != nil {
		prim = s.planSharded(ks, st, p)
	} else {
		// DDL about a sharded schema from a session on another database.
		if prim = s.binder().SchemaDDL(st, p, s); prim == nil {
			prim = planner.PlanCluster(&s.planned, s.home, s.user.Policy(), st, s)
		}
	}
	if s.exec.cursor {
		s.planned.ReplicaOK = false
	}
	return prim
}

// command is the client command a plan runs: what its backend connection
// needs and the statement's classification.
type command struct {
	st router.Stmt
	n  needs
	// parts: the statement runs in parts (Scatter, Fanout…), each on
	// its own connection, so its warnings are collected (partWarnings);
	// skipWarns: but not the next part's (engine.Cursor.SkipWarnings).
	parts, skipWarns bool
	// renameWarns rewrites the next part's warning messages
	// (engine.Cursor.RenameWarnings).
	renameWarns func(string) string
	// lastID is the LAST_INSERT_ID() the statement's parts left
	// (lastIDSet: some part changed it), the session's when it ends.
	lastID    uint64
	lastIDSet bool
}

// Run implements engine.Cursor: it runs the current command (s.cmd) as
// r says.
func (s *Session) Run(r *engine.Route, q []byte) bool {
	s.exec.sql, s.exec.order = r.Stmt, r.Params
	return s.runOn(r.Cluster, r.ReplicaOK, q)
}

// runOn runs the current command (s.cmd) on cl, a prepared statement's
// execution as s.exec says.
func (s *Session) runOn(cl *backend.Cluster, replicaOK bool, q []byte) bool {
	s.enter(cl)
	s.joinTransaction(q)
	s.pinBefore(s.cmd.st)
	if e := s.routeQuery(replicaOK); e != nil {
		return s.writeErr(e)
	}
	return s.execute(q, s.cmd.n, relayQuery, s.cmd.st)
}

// abortedTrx answers a statement in a session whose transaction was lost
// with its backend connection. Nothing of it can be committed, and
// nothing may look as if it ran inside it: ROLLBACK ends the state with
// OK, COMMIT ends it with an error (nothing was committed), BEGIN starts a
// new transaction (as after a deadlock, which also rolls back; comQuery
// lets it through), anything else fails until then. The client keeps its
// connection, and its pool sees no dead one.
func (s *Session) abortedTrx(st router.Stmt) bool {
	switch st.Kind {
	case router.KindRollback:
		s.trxAborted = false
		s.rollbackHeld() // the parts of the transaction on other shards
		return s.writeOK(&mysql.OKPacket{Status: s.status()})
	case router.KindCommit:
		s.trxAborted = false
		s.rollbackHeld()
		return s.writeErr(mysql.NewError(mysql.ERConnectionKilled, mysql.StateConnFailure,
			"Transaction lost with its backend connection and rolled back: nothing was committed"))
	}
	return s.writeErr(errTrxAborted)
}

var errTrxAborted = mysql.NewError(mysql.ERConnectionKilled, mysql.StateConnFailure,
	"The transaction was lost with its backend connection; ROLLBACK to continue")

// routeQuery sets the server of s.cl an unpinned statement runs on
// (s.target). Pinned sessions (or about to be, see pinBefore) stay on their
// connection or go to the writer.
func (s *Session) routeQuery(replicaOK bool) *mysql.SQLError {
	s.avoid = nil
	s.replicaOK = replicaOK
	if s.Pinned() {
		return nil
	}
	srv, e := s.route()
	if e != nil {
		return e
	}
	s.target = srv
	return nil
}

// dropHeldElsewhere lets go of a connection held only for the previous
// statement's diagnostics when this statement does not read them and the
// connection is not on the writer (a read on a replica left warnings): a
// session is only ever pinned to the writer.
func (s *Session) dropHeldElsewhere(st router.Stmt) {
	if s.pinned == nil || s.pins != pinHeld || st.Flags&diagnosticsFlags != 0 {
		return
	}
	if s.pinned.Pool().Server() == s.cl.Writer() {
		return
	}
	c := s.pinned
	s.saveDiagnostics(c) // a statement reading no table leaves them in place
	s.pinned, s.pins = nil, 0
	s.release(c)
}

// diagnosticsFlags mark statements that read the previous statement's
// diagnostics.
const diagnosticsFlags = router.FlagConnectionID | router.FlagFoundRows | router.FlagRowCount | router.FlagWarnings

// reclaimPrevious makes the next statement run on the connection that ran
// the previous one, if that is still possible: it is pinned or held, or it
// sits idle and unused since. It reports whether the previous statement's
// diagnostics (warnings, FOUND_ROWS, ROW_COUNT) are there to read.
func (s *Session) reclaimPrevious() bool {
	if s.pinned != nil {
		return true
	}
	if s.last != nil && s.last.Pool().Reclaim(s.last, s.lastUses) {
		s.pinned = s.last
		s.pins |= pinHeld
		return true
	}
	return false
}

// substitute rewrites what the proxy knows better than the backend: its own
// connection id, the session's LAST_INSERT_ID() and idle timeouts always,
// and, when the previous statement's connection is gone, that statement's
// FOUND_ROWS(), ROW_COUNT() and diagnostics counts.
// A held connection means any warnings are still there to read, so when
// there is none the previous statement left no warnings or errors.
func (s *Session) substitute(p []byte, st router.Stmt) ([]byte, router.Stmt) {
	var sub router.Substitutions
	lastID := substitutesLastID(st, s.stream != nil)
	if lastID {
		// First: reading it may take a statement on the pinned connection,
		// whose ROW_COUNT() and FOUND_ROWS() the session then answers.
		s.resolveLastID()
	}
	switch {
	case st.Flags&router.FlagConnectionID == 0:
	case st.Kind == router.KindKill:
		sub.ConnectionID = strconv.FormatUint(uint64(s.id), 10) // the proxy's KILL takes a number
	default:
		sub.ConnectionID = router.ConnectionIDValue(s.id)
	}
	if s.pinned == nil || s.rowsProbed {
		if st.Flags&router.FlagFoundRows != 0 {
			sub.FoundRows = router.FoundRowsValue(s.lastFoundRows)
		}
		if st.Flags&router.FlagRowCount != 0 {
			sub.RowCount = router.RowCountValue(s.lastRowCount)
		}
	}
	if st.Flags&router.FlagWarnings != 0 {
		switch {
		case s.warns.valid:
			// The previous statement ran in parts: its warnings are the
			// ones the session collected, not one part's connection's.
			sub.WarningCount, sub.ErrorCount = s.warns.counts()
		case s.pinned == nil:
			sub.WarningCount = router.SessionVariableValue(0)
			sub.ErrorCount = sub.WarningCount
		}
	}
	if lastID {
		sub.LastInsertID = router.LastInsertIDValue(s.lastInsertID)
	}
	if st.Flags&router.FlagClientTimeout != 0 && readsInPlace(st, s.stream != nil) && st.Kind != router.KindSet {
		// Not in a SET, where Substitute would not tell the variable
		// assigned from the one read.
		s.clientTimeoutValues(&sub)
	}
	if sub == (router.Substitutions{}) {
		return p, st
	}
	s.rewrite = append(s.rewrite[:0], mysql.ComQuery)
	s.rewrite = router.Substitute(s.rewrite, p[1:], &sub)
	rst := router.Classify(s.rewrite[1:])
	if sub.LastInsertID != "" {
		// Routed as it was: a read of LAST_INSERT_ID() right after the
		// session's INSERT goes to the primary, not to a replica that
		// would wait to catch up with that write.
		rst.Flags |= router.FlagHintPrimary
	}
	return s.rewrite, rst
}

// readsInPlace reports whether a value the session knows may replace a
// call or variable in st's text (substitute): a statement whole (not
// streamed), not a multi-statement (whose later statements may see the
// earlier ones change it), of a kind that does not store its text (CREATE
// VIEW, PROCEDURE, TRIGGER..., where it must stay a call).
func readsInPlace(st router.Stmt, streamed bool) bool {
	if streamed || st.Flags&router.FlagMultiStatement != 0 {
		return false
	}
	switch st.Kind {
	case router.KindSelect, router.KindInsert, router.KindReplace, router.KindUpdate, router.KindDelete,
		router.KindDo, router.KindSet, router.KindValues:
		return true
	}
	return false
}

// answerNoDiagnostics answers SHOW WARNINGS / SHOW ERRORS / SHOW COUNT(*)
// ... when the previous statement left none (otherwise its connection would
// have been held for this statement).
func (s *Session) answerNoDiagnostics(sql []byte) bool {
	return s.answerDiagnostics(sql, nil)
}

// refuseQuery returns the error for statements refused before they reach a
// backend, as the server would refuse them.
func (s *Session) refuseQuery(st router.Stmt) *mysql.SQLError {
	if st.Flags&router.FlagMultiStatement != 0 && !s.multiStatementsOn() {
		return errMultiStatementsOff
	}
	if st.Flags&router.FlagLocal != 0 && s.caps&mysql.ClientLocalFiles == 0 {
		return mysql.NewError(mysql.ERNotAllowedCommand, mysql.StateSyntax,
			"The used command is not allowed because the client did not enable LOCAL INFILE")
	}
	return nil
}

func (s *Session) multiStatementsOn() bool {
	return s.multiStmts
}

// pinBefore pins the session for statements whose effect lives on the
// connection that runs them. Pinning happens before execution so the
// statement itself runs on the connection that will be kept.
func (s *Session) pinBefore(st router.Stmt) {
	f := st.Flags
	if f&(router.FlagUserVar|router.FlagGetLock|router.FlagTempTable) != 0 {
		s.pins |= pinSession
	}
	switch st.Kind {
	case router.KindLock:
		s.pins |= pinLock
	case router.KindPrepare, router.KindExecute, router.KindDeallocate, router.KindHandler, router.KindXA:
		s.pins |= pinSession
	case router.KindFlush:
		// FLUSH TABLES ... WITH READ LOCK / FOR EXPORT hold a lock until
		// UNLOCK TABLES; the classifier does not tell FLUSH forms apart, so
		// every FLUSH holds its connection until then.
		s.pins |= pinLock
	}
	if f&router.FlagTrxIsolationSet != 0 {
		s.pins |= pinNextTrx
	}
}

// execute runs a client command on a backend connection and relays the
// response. A read outside any transaction whose server failed before a
// byte of its answer reached the client is retried on another server
// (maxReadRetries times); anything else gets the error, never a replay.
func (s *Session) execute(p []byte, n needs, rk relayKind, st router.Stmt) bool {
	if s.pipelinable(p, n, rk, st) {
		if handled, ok := s.runPipelined(p, st); handled {
			s.target = nil // one statement's (acquire clears it otherwise)
			return ok
		}
	}
	if rk == relayQuery && len(p) > 0 && p[0] == mysql.ComQuery {
		n |= s.foldable() // run writes p right after borrow
	}
	resends := 0
	for attempt := 0; ; attempt++ {
		c, ok := s.borrow(n)
		if c == nil {
			s.teleRan(s.cl, nil) // its cluster's, though no server ran it
			return ok
		}
		srv := c.Pool().Server()
		srv.Begin()
		s.traceBackend(s.cl, c)
		info, err := s.run(c, p, rk)
		s.traceBackendDone(c, err)
		srv.End()
		s.teleRan(s.cl, c) // failed or not: its cluster's and server's
		if err == nil {
			s.teleResult(info)
		}
		if pf := asNotRun(err); pf != nil {
			s.release(c)
			return s.writeErr(pf.SQLError)
		}
		sent := info != nil && info.Sent
		if err == nil && info.Err != nil && mysql.ClosesConnection(info.Err.Code) {
			return s.backendClosed(c, info.Err)
		}
		if err == nil {
			srv.StatementOK()
			if isReadOnlyRefusal(info.Err) && srv == s.cl.Writer() {
				// read_only turned on since the last check: no more writes
				// go there until a check says otherwise.
				srv.MarkReadOnly()
				s.cl.UpdateTopology()
			}
			inTrx := s.pins&pinTrx != 0
			if info.Status&mysql.StatusInTrans != 0 && !inTrx && srv != s.cl.Writer() {
				s.endReplicaTrx(c, info)
			}
			s.after(c, info, st)
			if rk == relayQuery && (router.IsWrite(st) || (inTrx && s.pins&pinTrx == 0)) {
				// A write, or the end of a transaction (by a statement that
				// commits implicitly, such as SET autocommit = 1, too).
				s.wrote()
			}
			if s.exec.ps != nil {
				s.afterExecute(c, info)
			}
			s.release(c)
			return true
		}
		if s.streamed {
			if handled, ok := s.streamAborted(c, err); handled {
				return ok
			}
		}
		if !mysql.IsBackendError(err) {
			return s.relayFailed(c, err, sent)
		}
		if !sent && !s.streamed && resends < maxResends && s.unreceived(c, err) {
			resends++
			s.resend(c, srv, err)
			continue
		}
		if !mysql.IsSQLError(err) {
			// Not when the server said why it closed the connection (1153
			// for a client's oversized packet): that is no sign of a sick
			// server, and one client must not take it out for others.
			srv.StatementFailed(time.Now())
		}
		if sent || attempt >= maxReadRetries || !s.retryable(c, st) {
			return s.relayFailed(c, err, sent)
		}
		s.logger().Info("retrying a read on another server", "failed", srv.Addr(), "err", err)
		s.client.DiscardOutput()
		c.Pool().Discard(c, true)
		s.avoid = srv
		if e := s.reroute(); e != nil {
			return s.writeErr(e)
		}
	}
}

// isReadOnlyRefusal reports ER_OPTION_PREVENTS_STATEMENT (1290) for the
// read-only option, what a read_only server answers to a write (the same
// code also covers --secure-file-priv and others).
func isReadOnlyRefusal(e *mysql.SQLError) bool {
	return e != nil && e.Code == 1290 && (strings.Contains(e.Message, "read-only") || strings.Contains(e.Message, "read_only"))
}

// asNotRun unwraps a *notRun. The target escapes to the heap
// in errors.As, so the common nil case must not get there (the hot path
// does not allocate).
func asNotRun(err error) *notRun {
	if err == nil {
		return nil
	}
	var pf *notRun
	if errors.As(err, &pf) {
		return pf
	}
	return nil
}

// maxReadRetries bounds how often one read moves to another server.
const maxReadRetries = 2

// run writes the command to c and relays the answer. info is nil when the
// command could not even be written.
func (s *Session) run(c *backend.Conn, p []byte, rk relayKind) (info *mysql.ResponseInfo, err error) {
	s.setRunning(c)
	defer s.setRunning(nil)
	if err := s.killedError(); err != nil {
		return nil, err // killed once listed as running, before it was sent
	}
	if s.exec.ps != nil {
		if err := s.sendExecute(c, p); err != nil {
			return nil, err
		}
	} else if err := s.writeCommand(c, p); err != nil {
		return nil, err
	}
	r := c.Relay(s.client, s.caps)
	r.RenameTable = s.tableRenamer()
	switch rk {
	case relaySingle:
		err = r.Single()
	case relayFieldList:
		err = r.FieldList()
	case relayRows:
		err = r.Rows()
	default:
		err = r.Query()
	}
	if err != nil && !r.Info.Sent {
		// The command's write may have failed inside the read of its
		// reply (FlushForReply).
		err = withServerError(c, err)
	}
	return &r.Info, err
}

// writeCommand sends the client's command to c: as it is, or head first
// and the rest as it arrives when it is too large to hold (s.stream).
// Errors come classified: a *mysql.RelayError says which side failed.
func (s *Session) writeCommand(c *backend.Conn, p []byte) error {
	if s.stream != nil {
		return s.writeStream(c, p)
	}
	if err := c.WriteCommand(p); err != nil {
		return withServerError(c, mysql.BackendError(err))
	}
	return nil
}

// errMultiStatementsOff refuses a second statement from a client that did
// not enable multi-statements.
var errMultiStatementsOff = mysql.NewError(mysql.ERParse, mysql.StateSyntax,
	"You have an error in your SQL syntax: multi-statements are not enabled for this connection")

// writeStream streams the current packet to c. A client without
// multi-statements is checked for a second statement in the part the head
// did not show, before each piece is sent.
func (s *Session) writeStream(c *backend.Conn, head []byte) error {
	st := s.stream
	s.streamed = true
	c.ResetSeq()
	var check func([]byte, bool) error
	if head[0] == mysql.ComQuery && !s.multiStatementsOn() {
		var z router.StreamScanner
		z.Feed(head[1:])
		check = func(chunk []byte, last bool) error {
			z.Feed(chunk)
			if z.Multi() || (last && z.End()) {
				return errMultiStatementsOff
			}
			return nil
		}
	}
	if err := st.WriteTo(c.Conn, head, check); err != nil {
		return withServerError(c, err)
	}
	s.stream = nil
	if err := c.FlushForReply(); err != nil {
		return mysql.BackendError(err)
	}
	return nil
}

// streamAborted handles a statement whose streaming to c stopped half-way
// (c holds part of a packet): refused for a second statement, over
// max_allowed_packet, or the client went away. It reports whether it
// handled err, and then whether the session goes on.
func (s *Session) streamAborted(c *backend.Conn, err error) (handled, ok bool) {
	var ce *mysql.StreamCheckError
	var tl *mysql.TooLargeError
	switch {
	case errors.As(err, &ce):
		lost := s.dropBackend(c, err)
		if !s.writeErr(errMultiStatementsOff) {
			return true, false
		}
		return true, !lost
	case errors.As(err, &tl):
		s.dropBackend(c, mysql.PacketTooLargeError()) // the server's word: no purge
		s.stream = nil
		s.readFailed(err)
		return true, false
	case !mysql.IsBackendError(err): // the client's side
		s.stream = nil
		s.relayFailed(c, err, false)
		s.streamReadFailed(err)
		return true, false
	}
	return false, false // a backend failure: handled as any other
}

// withServerError returns, for a failure on the backend side, the error
// the server sent before it closed c (backend.Conn.ErrorBeforeClose) when
// there is one: a server refuses a packet over its max_allowed_packet with
// 1153 and closes, which the write of the rest runs into. Otherwise err.
func withServerError(c *backend.Conn, err error) error {
	if mysql.IsBackendError(err) {
		if se := c.ErrorBeforeClose(); se != nil {
			return mysql.BackendError(se)
		}
	}
	return err
}

// retryable reports whether a failed statement may run again elsewhere: a
// replica-eligible read on a connection that held no session state (not
// pinned, so no transaction either).
func (s *Session) retryable(c *backend.Conn, st router.Stmt) bool {
	if s.pins&^pinHeld != 0 || len(s.cl.Servers()) < 2 || s.exec.cursor || s.streamed {
		return false
	}
	return router.IsReadOnly(st) || (st.Flags&router.FlagHintReplica != 0 && s.user.Policy().ReplicaEligible(st, s.db))
}

// reroute picks the server for a retry, avoiding the one that failed.
func (s *Session) reroute() *mysql.SQLError {
	if s.pinned != nil {
		s.pinned, s.pins = nil, 0
	}
	srv, e := s.route()
	if e != nil {
		return e
	}
	if srv == s.avoid {
		return lostBackendError()
	}
	s.target = srv
	return nil
}

// relayFailed ends a command whose relay failed on either side.
func (s *Session) relayFailed(c *backend.Conn, err error, sent bool) bool {
	if mysql.IsBackendError(err) {
		return s.backendFailed(c, err, sent)
	}
	// The client went away mid-response: the rest is unread, drop the conn.
	s.pinned, s.pins = nil, 0
	c.Pool().Discard(c, false)
	return false
}

// unpinAfterFailure drops pin reasons that were set in anticipation of a
// statement that never ran (the connection was not obtained).
func (s *Session) unpinAfterFailure() {
	if s.pinned == nil {
		s.pins = 0
	}
}

// after learns the session's new state from a statement's response: session
// tracking data, transaction status, diagnostics left for the next statement.
func (s *Session) after(c *backend.Conn, info *mysql.ResponseInfo, st router.Stmt) {
	if info.Err != nil && s.xa.trx != nil {
		s.noteXAError(info.Err)
	}
	if len(info.SessionState) > 0 && s.applyStateChanges(c, info.SessionState) {
		s.learnCollation(c, info)
	}
	s.noteRowCounts(info)
	inTrx := info.Status&mysql.StatusInTrans != 0
	if info.Err != nil && info.Results <= 1 {
		// An error response carries no status; the transaction state is
		// what it was.
		inTrx = s.pins&pinTrx != 0
	}
	if inTrx {
		s.pins |= pinTrx
	} else {
		if s.pins&pinTrx != 0 {
			s.pins &^= pinNextTrx // the next transaction came and went
		}
		s.pins &^= pinTrx
		if s.heldPins()&pinTrx == 0 {
			s.savepoints = s.savepoints[:0] // they ended with the transaction
			s.trxCharSQL = s.trxCharSQL[:0]
		}
	}
	if st.Kind == router.KindUnlock {
		s.pins &^= pinLock
	}
	held := s.pins & pinHeld
	s.pins &^= pinHeld
	s.diagnosticsAfter(info, st)
	switch {
	case info.Warnings > 0 || info.Err != nil || st.Flags&router.FlagCalcFoundRows != 0:
		// The next statement may read these diagnostics (SHOW WARNINGS,
		// FOUND_ROWS()): keep the connection until it has run.
		s.pins |= pinHeld
	case keepsDiagnostics(st):
		// It left the diagnostics before it in place: those the
		// connection holds, if it held them, still are the session's.
		s.pins |= held
	}
	if s.pins&pinsThatDirty != 0 {
		c.Dirty = true
	}
	if mayChangeLastID(info, st) {
		s.learnLastID(c, info, st) // last: whether c stays pinned decides when
	}
}

// noteRowCounts keeps the ROW_COUNT() and FOUND_ROWS() a statement
// answered info leaves, for when the next statement runs elsewhere.
func (s *Session) noteRowCounts(info *mysql.ResponseInfo) {
	switch {
	case info.ResultSet:
		s.lastRowCount, s.lastFoundRows = -1, info.Rows
	case info.Err == nil:
		s.lastRowCount = int64(info.AffectedRows)
	default:
		s.lastRowCount = -1 // ROW_COUNT() after an error
	}
}

// learnCollation records the connection collation after a statement that
// changed the connection character set. The server reports only variables
// assigned directly, not the collation SET NAMES x COLLATE y (or a bare
// character set) implies, and replaying the character set alone would give
// its default collation. Reading it back costs a round trip only on such
// rare statements.
func (s *Session) learnCollation(c *backend.Conn, info *mysql.ResponseInfo) {
	if info.Warnings > 0 || info.Err != nil {
		return // keep the diagnostics for SHOW WARNINGS; the collation stays as tracked
	}
	rows, err := c.QueryRows("SELECT @@session.collation_connection")
	if err != nil || len(rows) != 1 {
		c.Dirty = true // state unknown: reset before anyone else uses it
		return
	}
	s.vars.Set("collation_connection", rows[0][0])
	c.Vars.Set("collation_connection", rows[0][0])
	s.varsFP = s.vars.Fingerprint()
	c.VarsFP = s.varsFP
	// The look-up replaced the previous statement's FOUND_ROWS() and
	// ROW_COUNT() on c: answer those from what the session recorded.
	s.skipAffinity = true
}

// applyStateChanges records what the server said changed: variables and
// schema become session state (replayed on other connections); anything
// else (user variables, temporary tables...) pins the session. It reports
// whether the connection character set changed.
func (s *Session) applyStateChanges(c *backend.Conn, blocks []byte) (charsetChanged bool) {
	r := mysql.NewReader(blocks)
	varsChanged := false
	for r.Len() > 0 {
		block := r.LenEncString()
		if !r.OK() {
			return charsetChanged
		}
		other := false
		known := false
		mysql.StateChanges(block, func(ch mysql.StateChange) {
			switch ch.Type {
			case mysql.TrackSystemVariables:
				known = true
				name := string(ch.Name)
				if backend.ProxyOwned(name) {
					s.pins |= pinSession
					return
				}
				if name == "last_gtid" {
					if g := string(ch.Value); backend.ValidGTID(g) {
						s.lastGTID = g
					}
					return
				}
				if name == "last_insert_id" || name == "identity" {
					s.setLastIDVariable(c, ch.Value) // SET last_insert_id = N
					return
				}
				if backend.Untracked(name) {
					return
				}
				if clientTimeout(name) {
					s.setClientTimeout(name, ch.Value)
					c.Dirty = true // reset before anyone else uses it
					return
				}
				s.vars.Set(name, string(ch.Value))
				c.Vars.Set(name, string(ch.Value))
				varsChanged = true
				if name == "character_set_connection" {
					charsetChanged = true
				}
			case mysql.TrackSchema:
				known = true
				s.db = string(ch.Name)
				c.DB = s.db
			case mysql.TrackStateChange:
				other = true
			}
		})
		if other && !known {
			// Something changed that is neither a variable nor the schema:
			// user variables, temporary tables, prepared statements.
			s.pins |= pinSession
		}
	}
	if varsChanged {
		s.varsFP = s.vars.Fingerprint()
		c.VarsFP = s.varsFP
		s.noteCharset()
	}
	return charsetChanged
}

// forward runs a non-query command (COM_FIELD_LIST, COM_STATISTICS) on a
// backend connection.
func (s *Session) forward(p []byte, n needs, rk relayKind) bool {
	return s.execute(p, n, rk, router.Stmt{})
}

func (s *Session) comInitDB(p []byte) bool {
	return s.execute(p, 0, relaySingle, router.Stmt{Kind: router.KindUse})
}

// comSetOption toggles multi-statements for this session; backend
// connections always allow them, so the proxy enforces the client's choice.
func (s *Session) comSetOption(p []byte) bool {
	if len(p) < 3 {
		return s.writeErr(mysql.NewError(mysql.ERMalformedPacket, mysql.StateGeneral, "Malformed communication packet"))
	}
	switch uint16(p[1]) | uint16(p[2])<<8 {
	case 0:
		s.multiStmts = true
	case 1:
		s.multiStmts = false
	default:
		return s.writeErr(mysql.NewError(mysql.ERUnknownCom, mysql.StateConnFailure, "Unknown option for COM_SET_OPTION"))
	}
	return s.writeEOF()
}

// writeEOF sends the EOF a server sends for COM_SET_OPTION.
func (s *Session) writeEOF() bool {
	var err error
	if s.caps&mysql.ClientDeprecateEOF != 0 {
		ok := mysql.OKPacket{Status: s.status()}
		err = s.client.EndPacket(mysql.AppendOK(s.client.BeginPacket(), mysql.HeaderEOF, &ok, s.caps))
	} else {
		err = s.client.EndPacket(mysql.AppendEOF(s.client.BeginPacket(), 0, s.status()))
	}
	if err != nil {
		return false
	}
	return s.client.Flush() == nil
}
