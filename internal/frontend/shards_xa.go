package frontend

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/planner"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sharding"
	"github.com/shardgate/shardgate/internal/xa"
)

// Atomic transactions across shards (cross_shard_writes: atomic): the
// shard a transaction opened on keeps an ordinary local transaction and
// coordinates; every shard it reaches after that opens its part as an XA
// branch, in the round trip that syncs the connection (XA START instead
// of BEGIN). A transaction that stays on one shard never sees XA. At
// COMMIT, when the coordinator and a branch (or several branches) wrote,
// the branches are prepared, the coordinator commits its writes with the
// decision row (internal/xa), then the branches commit. docs/sharding.md,
// "Atomic transactions", has the protocol and what recovery does after a
// crash at each step.

// xaState is the XA side of the session's transaction.
type xaState struct {
	trx      *xa.Trx // nil: no branch yet
	branches []xaBranch
	// doomed: a part of the transaction was rolled back by its server (a
	// deadlock); the rest is rolled back before the next statement, so
	// that, as on one server, nothing of the transaction survives.
	doomed bool
}

// xaBranch is a shard whose part of the transaction is an XA branch:
// its id, and that id as XA statements take it (made once).
type xaBranch struct {
	cl  *backend.Cluster
	xid xa.XID
	sql string
}

func (x *xaState) branch(cl *backend.Cluster) *xaBranch {
	for i := range x.branches {
		if x.branches[i].cl == cl {
			return &x.branches[i]
		}
	}
	return nil
}

// atomicKeyspace is the session's sharded schema when its transactions
// are atomic across shards.
func (s *Session) atomicKeyspace() *planner.Keyspace {
	ks := s.srv.keyspaces().Lookup(s.db)
	if ks == nil || ks.Schema.CrossShardWrites != sharding.CrossShardAtomic || s.srv.opt.XA == nil {
		return nil
	}
	return ks
}

// startBranch makes the part of the transaction that s.cl joins now an
// XA branch, when the schema is atomic and the transaction may write:
// appendBegin then opens it with XA START. The first branch registers
// the transaction, with its coordinator.
func (s *Session) startBranch() {
	if s.xa.branch(s.cl) != nil {
		return
	}
	ks := s.atomicKeyspace()
	if ks == nil || readOnlyBegin(s.beginSQL) {
		return
	}
	if s.xa.trx == nil {
		coord := s.coordinatorCandidate()
		if coord == nil {
			return
		}
		s.xa.trx = s.srv.opt.XA.Begin(s.id, coord.Name, ks.Schema.Name)
	}
	x := s.xa.trx.XID
	x.Branch = len(s.xa.branches) + 1
	s.xa.branches = append(s.xa.branches, xaBranch{cl: s.cl, xid: x, sql: x.SQL()})
	s.xa.trx.Join(s.cl.Name)
}

// coordinatorCandidate is the shard whose local transaction coordinates:
// the one that wrote, if any, else the first the transaction opened on.
func (s *Session) coordinatorCandidate() *backend.Cluster {
	for _, cl := range append(slices.Clip(s.trxWrote), s.trxWriter) {
		if cl != nil && cl != s.cl && s.localPart(cl) {
			return cl
		}
	}
	for _, h := range s.others {
		if h.pins&pinTrx != 0 && s.xa.branch(h.cl) == nil {
			return h.cl
		}
	}
	return nil
}

// localPart reports whether the transaction holds cl's part outside XA.
func (s *Session) localPart(cl *backend.Cluster) bool {
	if s.xa.branch(cl) != nil {
		return false
	}
	if cl == s.cl {
		return s.pins&pinTrx != 0
	}
	for _, h := range s.others {
		if h.cl == cl {
			return h.pins&pinTrx != 0
		}
	}
	return false
}

// readOnlyBegin reports a BEGIN that opens a read-only transaction: it
// cannot write, so it needs no XA (which has no READ ONLY form).
func readOnlyBegin(sql []byte) bool {
	f := strings.Fields(strings.ToUpper(strings.ReplaceAll(string(sql), ",", " ")))
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "READ" && f[i+1] == "ONLY" {
			return true
		}
	}
	return false
}

// atomicWrite refuses a write on cl that the transaction could not
// commit atomically: on a shard whose part is a local transaction other
// than the coordinator's (autocommit=0 with a first statement over
// several shards opens one on each).
func (s *Session) atomicWrite(cl *backend.Cluster) *mysql.SQLError {
	switch {
	case !s.localPart(cl):
		return nil // an XA branch, or a shard the transaction joins as one
	case s.xa.trx != nil && s.xa.trx.XID.Coordinator == cl.Name:
		return nil
	case s.xa.trx == nil && !s.otherLocalWrote(cl):
		return nil // it will coordinate
	}
	return mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax,
		"shardgate: this transaction opened on shard %s outside XA, beside the shard that coordinates it; it cannot write there atomically (cross_shard_writes: atomic). Start transactions with BEGIN, or COMMIT or ROLLBACK first",
		cl.Name)
}

// otherLocalWrote reports whether the transaction wrote on a shard other
// than cl whose part is a local transaction. A shard written but not
// joined yet (an earlier part of the statement being planned) joins as
// an XA branch, so it is no coordinator cl would write beside.
func (s *Session) otherLocalWrote(cl *backend.Cluster) bool {
	return slices.ContainsFunc(append(slices.Clip(s.trxWrote), s.trxWriter), func(w *backend.Cluster) bool {
		return w != nil && w != cl && s.localPart(w)
	})
}

// appendXAStart appends the XA START of the branch s.cl joins with, if
// it is one, and reports whether it did.
func (s *Session) appendXAStart(b []byte) ([]byte, bool) {
	br := s.xa.branch(s.cl)
	if br == nil {
		return b, false
	}
	b = append(b, "XA START "...)
	return append(b, br.sql...), true
}

// xaRefusal refuses, with XA branches open, the statements that would
// commit the transaction on one shard only: BEGIN and SET autocommit
// commit it implicitly.
func (s *Session) xaRefusal(st router.Stmt) *mysql.SQLError {
	if s.xa.trx == nil {
		return nil
	}
	switch {
	case st.Kind == router.KindBegin:
		return mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax,
			"shardgate: BEGIN inside a transaction over several shards (cross_shard_writes: atomic) would commit it shard by shard; COMMIT or ROLLBACK first")
	case st.Kind == router.KindSet && st.Flags&router.FlagAutocommit != 0:
		return mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax,
			"shardgate: SET autocommit inside a transaction over several shards (cross_shard_writes: atomic) would commit it shard by shard; COMMIT or ROLLBACK first")
	}
	return nil
}

// noteXAError notes an error that rolled back a part of the transaction,
// or that must end it: a lock wait timeout (1205) rolls back only the
// statement, but a deadlock across shards is seen by no server, each
// transaction waiting for the other until innodb_lock_wait_timeout, and
// only rolling one back releases the locks the other waits for (a retry
// of the statement alone would wait again): as innodb_rollback_on_timeout
// does on one server.
func (s *Session) noteXAError(e *mysql.SQLError) {
	switch e.Code {
	case erDeadlock, erXARBRollback, erXARBTimeout, erXARBDeadlock, mysql.ERLockWaitTimeout:
		s.xa.doomed = true
	}
}

// Server errors that roll a transaction back: a deadlock, and XA's
// XA_RBROLLBACK .. XA_RBDEADLOCK for a branch.
const (
	erDeadlock     = 1213
	erXARBRollback = 1402
	erXARBTimeout  = 1613
	erXARBDeadlock = 1614
)

// settleDoomed rolls back every part of a transaction a server had
// already rolled back in part (or a lock wait timeout ended), right after
// the statement that failed; the statement that comes next runs outside
// it, as after a deadlock on one server.
func (s *Session) settleDoomed() {
	if s.xa.doomed {
		s.resolveLastID() // before its connection goes back to the pool
		s.rollbackHeld()
	}
}

// endXA ends a transaction with XA branches: ROLLBACK rolls every part
// back; COMMIT commits in one phase when only one part wrote, in two
// phases otherwise.
func (s *Session) endXA(q []byte) bool {
	t := s.xa.trx
	commit := s.cmd.st.Kind == router.KindCommit
	if commit && chainOrRelease(q) {
		return s.writeErr(mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax,
			"shardgate: COMMIT AND CHAIN or RELEASE of a transaction over several shards (cross_shard_writes: atomic); COMMIT, then BEGIN"))
	}
	wrote := append(slices.Clip(s.trxWrote), s.trxWriter)
	s.trxWriter, s.trxWrote = nil, s.trxWrote[:0]
	defer s.forgetXA()
	coord := s.heldCluster(t.XID.Coordinator)
	if coord == nil {
		// The coordinator's connection was lost with its transaction.
		s.rollbackHeld()
		return s.writeErr(mysql.NewError(mysql.ERConnectionKilled, mysql.StateConnFailure,
			"Transaction lost with its backend connection to shard %s and rolled back: nothing was committed", t.XID.Coordinator))
	}
	s.enter(coord) // the branches are all in s.others now
	coordWrote := slices.Contains(wrote, coord)

	// Parts that only read end first, as without XA.
	var writers []heldConn
	for i := 0; i < len(s.others); {
		h := s.others[i]
		br := s.xa.branch(h.cl)
		if h.pins&pinTrx == 0 {
			i++
			continue
		}
		s.others = append(s.others[:i], s.others[i+1:]...)
		if commit && br != nil && slices.Contains(wrote, h.cl) {
			writers = append(writers, h)
			continue
		}
		var err error
		switch {
		case br == nil:
			err = s.endHeld(h, s.endStatement())
		case commit:
			err = s.endBranch(h, "XA END "+br.sql+";XA COMMIT "+br.sql+" ONE PHASE")
		default:
			err = s.endBranch(h, "XA END "+br.sql+";XA ROLLBACK "+br.sql)
		}
		if err != nil && !commit {
			s.logger().Warn("rolling back a part of a transaction over several shards failed; the server rolls it back with the connection", "shard", h.cl.Name, "err", err)
		}
	}
	switch {
	case !commit || len(writers) == 0:
		if commit {
			s.count("one_phase")
		}
		return s.runOn(coord, false, q)
	case len(writers) == 1 && !coordWrote:
		return s.commitOnePhase(coord, writers[0], q)
	}
	return s.commitTwoPhase(t, writers)
}

// commitOnePhase commits a transaction whose one writing part is the XA
// branch w: in one phase, then the coordinator's part, which only read
// and whose answer the client gets.
func (s *Session) commitOnePhase(coord *backend.Cluster, w heldConn, q []byte) bool {
	x := s.xa.branch(w.cl).sql
	if err := s.endBranch(w, "XA END "+x+";XA COMMIT "+x+" ONE PHASE"); err != nil {
		s.endCurrent("ROLLBACK")
		return s.writeErr(commitError(err, "COMMIT failed on shard "+w.cl.Name+", the only one that wrote; nothing was committed"))
	}
	s.count("one_phase")
	return s.runOn(coord, false, q)
}

// commitTwoPhase commits the coordinator's part (s.pinned) and the
// writing branches: XA PREPARE on each, the coordinator's COMMIT with the
// decision row, XA COMMIT on each.
func (s *Session) commitTwoPhase(t *xa.Trx, writers []heldConn) bool {
	m := s.srv.opt.XAMetrics
	coord := s.cl
	t.SetState(xa.StatePreparing)
	start := time.Now()
	for i, h := range writers {
		x := s.xa.branch(h.cl).sql
		if err := s.execBranch(h, "XA END "+x+";XA PREPARE "+x); err != nil {
			// A branch that failed to prepare is rolled back by its server
			// (or with its connection, dropped by execBranch: not again).
			if mysql.IsSQLError(err) {
				_ = s.endBranch(h, "XA ROLLBACK "+x)
			}
			// The coordinator's part too: left open, the client's next
			// statements would run in it and its next BEGIN commit it.
			s.endCurrent("ROLLBACK")
			s.abortTwoPhase(writers[:i], writers[i+1:])
			return s.writeErr(commitError(err, "XA PREPARE failed on shard "+h.cl.Name+"; the transaction was rolled back on every shard"))
		}
		if i == 0 {
			xa.Failpoint(xa.AfterFirstPrepare)
		}
	}
	xa.Failpoint(xa.AfterPrepares)
	decided := time.Now()
	if m != nil {
		m.Prepare.Observe(decided.Sub(start).Seconds())
	}
	t.SetState(xa.StateDeciding)
	if err := s.decide(t); err != nil {
		if !mysql.IsSQLError(err) {
			// The decision may or may not have committed: the branches stay
			// prepared for recovery, which reads it on the coordinator.
			s.endCurrentLost(err)
			for _, h := range writers {
				s.dropBranch(h)
			}
			s.logger().Error("the coordinator shard of a two-phase commit failed at the decision; recovery settles the transaction from the decision row",
				"coordinator", coord.Name, "xid", t.XID.Gtrid(), "err", err)
			return s.writeErr(mysql.NewError(mysql.ERErrorDuringCommit, mysql.StateGeneral,
				"shardgate: COMMIT outcome unknown: coordinator shard %s failed while committing the decision (%v); the other shards stay prepared until recovery commits them if the decision was recorded there, or rolls them back", coord.Name, err))
		}
		s.endCurrent("ROLLBACK")
		s.abortTwoPhase(writers, nil)
		if mysql.HasErrorCode(err, erDupEntry) {
			// Recovery recorded the abort first: it took the transaction
			// for abandoned (transactions.abandon_after).
			return s.writeErr(mysql.NewError(erXARBRollback, "XA100",
				"shardgate: XA recovery had decided to roll this transaction back (its commit came after transactions.abandon_after); it was rolled back on every shard"))
		}
		return s.writeErr(commitError(err, "COMMIT failed on coordinator shard "+coord.Name+"; the transaction was rolled back on every shard"))
	}
	s.endCurrent("")
	xa.Failpoint(xa.AfterDecision)
	t.SetState(xa.StateCommitting)
	for i, h := range writers {
		x := s.xa.branch(h.cl).sql
		if err := s.endBranch(h, "XA COMMIT "+x); err != nil {
			s.logger().Warn("XA COMMIT of a prepared branch failed after the commit decision; recovery commits it",
				"shard", h.cl.Name, "xid", t.XID.Gtrid(), "err", err)
		}
		if i == 0 {
			xa.Failpoint(xa.AfterFirstCommit)
		}
	}
	if m != nil {
		m.Commit.Observe(time.Since(decided).Seconds())
	}
	s.count("two_phase")
	s.lastRowCount = 0
	return s.writeOK(&mysql.OKPacket{Status: s.status()})
}

// decide commits the coordinator's part with the decision row. A
// decision table not created yet (recovery creates them at start, in the
// background) is created on a connection of its own, and the decision
// made again: the failed INSERT left the transaction open.
func (s *Session) decide(t *xa.Trx) error {
	decision := string(xa.AppendCommitDecision(nil, t.XID)) + ";COMMIT"
	err := s.pinned.Exec(decision)
	if !mysql.HasErrorCode(err, erNoSuchTable) || s.srv.opt.XA.Tables == nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if cerr := s.srv.opt.XA.Tables(ctx, t.XID.Coordinator, t.XID.Schema); cerr != nil {
		s.logger().Error("could not create the XA decision table", "err", cerr)
		return err
	}
	return s.pinned.Exec(decision)
}

// Server errors of the decision: no decision table yet, or the row
// already there (recovery's abort).
const (
	erNoSuchTable = 1146
	erDupEntry    = 1062
)

// abortTwoPhase rolls back the prepared branches and those not prepared
// yet, after a failed two-phase commit.
func (s *Session) abortTwoPhase(prepared, active []heldConn) {
	for _, h := range prepared {
		_ = s.endBranch(h, "XA ROLLBACK "+s.xa.branch(h.cl).sql)
	}
	for _, h := range active {
		x := s.xa.branch(h.cl).sql
		_ = s.endBranch(h, "XA END "+x+";XA ROLLBACK "+x)
	}
	if m := s.srv.opt.XAMetrics; m != nil {
		m.Aborts.Inc()
	}
}

func (s *Session) count(kind string) {
	if m := s.srv.opt.XAMetrics; m != nil {
		m.Commits.WithLabelValues(kind).Inc()
	}
}

// commitError is the client's error for a commit that failed with err:
// the server's code and state (a deadlock stays 1213, which clients
// retry), with what happened to the transaction.
func commitError(err error, what string) *mysql.SQLError {
	var se *mysql.SQLError
	if errors.As(err, &se) {
		return mysql.NewError(se.Code, se.State, "shardgate: %s: %s", what, se.Message)
	}
	return mysql.NewError(mysql.ERErrorDuringCommit, mysql.StateGeneral, "shardgate: %s: %v", what, err)
}

// execBranch runs sql on a branch's connection, which the session keeps.
// A connection that fails is dropped: the server rolls back a branch
// that is not prepared with it, and recovery settles one that is.
func (s *Session) execBranch(h heldConn, sql string) error {
	err := h.conn.Exec(sql)
	if err != nil && !mysql.IsSQLError(err) {
		s.dropBranch(h)
	}
	return err
}

// endBranch runs sql, which ends a branch, and lets its connection go. A
// connection whose XA statement failed is closed rather than reused: the
// server rolls back what is left of a branch not prepared with it.
func (s *Session) endBranch(h heldConn, sql string) error {
	if err := h.conn.Exec(sql); err != nil {
		s.dropBranch(h)
		return err
	}
	return s.finishHeld(h, nil)
}

// dropBranch closes a branch's connection: a prepared branch is then
// left, detached, to recovery.
func (s *Session) dropBranch(h heldConn) {
	if h.pins&^(pinTrx|pinNextTrx|pinHeld) != 0 {
		s.logger().Warn("closing a backend connection that held session state besides an XA branch", "shard", h.cl.Name)
	}
	h.conn.Pool().Discard(h.conn, false)
}

// endCurrent ends the transaction on the current cluster's connection
// (the coordinator's) with sql, or only forgets it when sql is empty (it
// has just committed), and releases the connection unless other state
// keeps it.
func (s *Session) endCurrent(sql string) {
	if s.pinned == nil {
		return
	}
	h := heldConn{cl: s.cl, conn: s.pinned, pins: s.pins}
	s.pinned, s.pins = nil, 0
	if sql == "" {
		_ = s.finishHeld(h, nil) // it has just committed
	} else {
		_ = s.endHeld(h, append([]byte{mysql.ComQuery}, sql...))
	}
	s.repinCurrent()
}

// endCurrentLost drops the current cluster's connection, which failed
// with err.
func (s *Session) endCurrentLost(err error) {
	if s.pinned == nil {
		return
	}
	c := s.pinned
	s.pinned, s.pins = nil, 0
	if s.last == c {
		s.last = nil
	}
	s.srv.opt.Metrics.BackendErrors.Inc()
	s.logger().Warn("backend connection failed ending a transaction", "backend", c.Pool().Addr(), "err", err)
	c.Pool().Discard(c, true)
}

// heldCluster is the cluster named name among those the session holds
// a transaction part on.
func (s *Session) heldCluster(name string) *backend.Cluster {
	if s.cl != nil && s.cl.Name == name && s.pins&pinTrx != 0 {
		return s.cl
	}
	for _, h := range s.others {
		if h.cl.Name == name && h.pins&pinTrx != 0 {
			return h.cl
		}
	}
	return nil
}

// rollbackHeld rolls back every part of the session's transaction still
// held: branches with XA ROLLBACK, local parts with ROLLBACK.
func (s *Session) rollbackHeld() {
	if s.pinned != nil && s.pins&pinTrx != 0 {
		s.others = append(s.others, heldConn{cl: s.cl, conn: s.pinned, pins: s.pins})
		s.pinned, s.pins = nil, 0
	}
	for i := 0; i < len(s.others); {
		h := s.others[i]
		if h.pins&pinTrx == 0 {
			i++
			continue
		}
		s.others = append(s.others[:i], s.others[i+1:]...)
		if br := s.xa.branch(h.cl); br != nil {
			_ = s.endBranch(h, "XA END "+br.sql+";XA ROLLBACK "+br.sql)
		} else {
			_ = s.endHeld(h, []byte("\x03ROLLBACK"))
		}
	}
	s.repinCurrent()
	s.trxWriter, s.trxWrote = nil, s.trxWrote[:0]
	s.forgetXA()
}

// forgetXA ends the session's XA state: nothing of the transaction is
// left prepared by this session (committed, rolled back, or dropped for
// recovery).
func (s *Session) forgetXA() {
	if s.xa.trx != nil {
		s.srv.opt.XA.End(s.xa.trx)
	}
	s.xa.trx, s.xa.doomed = nil, false
	s.xa.branches = s.xa.branches[:0]
}

// chainOrRelease reports COMMIT AND CHAIN or COMMIT RELEASE (and NO
// CHAIN, NO RELEASE, which change nothing, are not).
func chainOrRelease(q []byte) bool {
	if q[0] != mysql.ComQuery {
		return false
	}
	f := strings.Fields(strings.ToUpper(string(q[1:])))
	for i, w := range f {
		if (w == "CHAIN" || w == "RELEASE") && (i == 0 || f[i-1] != "NO") {
			return true
		}
	}
	return false
}
