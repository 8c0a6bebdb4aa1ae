package frontend

import (
	"strconv"
	"time"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
)

// route picks the server of s.cl an unpinned statement runs on: a replica
// when the plan allows one (planner.ReplicaOK) and one is fit, else the
// writer. It sets s.waitGTID when the chosen replica must first catch up
// with the session's last write (see causalWait).
func (s *Session) route() (*backend.Server, *mysql.SQLError) {
	s.waitGTID = ""
	if s.replicaOK {
		if r := s.cl.Reader(s.user.Policy().MaxReplicaLag, s.avoid); r != nil {
			if s.needsCausalWait(r) {
				s.waitGTID = s.lastGTID
			}
			return r, nil
		}
	}
	return s.writer()
}

// DB is the session's current database. For planner.Session.
func (s *Session) DB() string { return s.db }

// Pinned reports whether the session's statements stay on the connection
// it holds (or is about to hold, see pinBefore). For planner.Session.
func (s *Session) Pinned() bool { return s.pinned != nil || s.pins != 0 }

// autocommit reports whether the session runs in autocommit mode: with it
// off, any statement opens a transaction, which belongs on the writer.
func (s *Session) autocommit() bool {
	if len(s.vars) == 0 {
		return true
	}
	v, ok := s.vars.Get("autocommit")
	return !ok || v == "ON" || v == "1"
}

// ReplicaReadsAllowed reports whether the session's mode lets an unpinned
// read (no transaction open) go to a replica: in autocommit mode, or with
// autocommit off when the policy lets a read that would start the implicit
// transaction run outside it (see endReplicaTrx). For planner.Session.
func (s *Session) ReplicaReadsAllowed() bool {
	return s.autocommit() || s.user.Policy().AutocommitOffReplicaReads
}

// endReplicaTrx ends the transaction a read opened on a replica, with
// autocommit off: the session must not stay there, where its next write
// would fail, and the read was routed as one outside any transaction. A
// read-only transaction, so it is rolled back at once, unless the read
// left diagnostics for the next statement to read: then the connection is
// reset when the session lets it go. The client saw the server's status
// (in a transaction), as it would on the primary; the proxy does not pin.
func (s *Session) endReplicaTrx(c *backend.Conn, info *mysql.ResponseInfo) {
	info.Status &^= mysql.StatusInTrans
	if info.Warnings > 0 || info.Err != nil {
		c.Dirty = true
		return
	}
	if err := c.Exec("ROLLBACK"); err != nil {
		c.Dirty = true
	}
	// The rollback replaced the read's diagnostics on c.
	s.skipAffinity = true
}

// writer returns the server of s.cl that takes writes, or the error for a
// cluster with no writable server, which names each server and why it is
// out.
func (s *Session) writer() (*backend.Server, *mysql.SQLError) {
	cl := s.cl
	if w := cl.Writer(); w != nil {
		return w, nil
	}
	return nil, mysql.NewError(backend.ErrCodeBackendUnavailable, mysql.StateGeneral,
		"shardgate: no writable server in cluster %s: %s", cl.Name, cl.DescribeUnwritable())
}

// ReadsOwnWritesOnPrimary reports whether the session's recent write keeps
// its reads on the primary: within the write window, under the window
// policy or under the causal one without a GTID to wait for. For
// planner.Session.
func (s *Session) ReadsOwnWritesOnPrimary() bool {
	if s.lastWrite.IsZero() {
		return false
	}
	p := s.user.Policy()
	switch p.Consistency {
	case router.ConsistencyNone:
		return false
	case router.ConsistencyCausal:
		if s.lastGTID != "" {
			return false
		}
	}
	if time.Since(s.lastWrite) < p.WriteWindow {
		return true
	}
	s.lastWrite = time.Time{} // past the window: no clock reads until the next write
	return false
}

// needsCausalWait reports whether a causal read on r must first wait for
// the session's last write: r's last health check did not yet see it.
func (s *Session) needsCausalWait(r *backend.Server) bool {
	if s.lastGTID == "" || s.user.Policy().Consistency != router.ConsistencyCausal {
		return false
	}
	return !backend.GTIDCovered(r.Health().GTIDPos, s.lastGTID)
}

// causalWait makes a replica connection wait until it has applied the
// session's last write, bounded by the causal wait timeout. false means it
// did not get there in time (or the wait failed): the connection has been
// given back and the read goes to the writer instead.
func (s *Session) causalWait(c *backend.Conn, gtid string) bool {
	timeout := s.user.Policy().CausalWaitTimeout.Seconds()
	rows, err := c.QueryRows("SELECT MASTER_GTID_WAIT('" + gtid + "', " +
		strconv.FormatFloat(timeout, 'f', 3, 64) + ")")
	// The wait replaced the previous statement's diagnostics on c.
	s.skipAffinity = true
	if err == nil && len(rows) == 1 && rows[0][0] == "0" {
		return true
	}
	if err != nil && !mysql.IsSQLError(err) {
		c.Pool().Discard(c, true)
	} else {
		c.Pool().Release(c)
	}
	return false
}

// wrote records a statement that may have written, for read-your-writes.
func (s *Session) wrote() {
	if s.user.Policy().Consistency != router.ConsistencyNone && len(s.cl.Servers()) > 1 {
		s.lastWrite = time.Now()
	}
}
