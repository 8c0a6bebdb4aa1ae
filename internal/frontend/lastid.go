package frontend

import (
	"strconv"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
)

// The session's LAST_INSERT_ID().
//
// It is not the OK packet's insert id. MariaDB reports there the first id
// a statement generated, or, when it generated none, the AUTO_INCREMENT
// value of the last row written, one the client gave itself (INSERT
// ... (id) VALUES (100) says 100); LAST_INSERT_ID() changes only when an
// id is generated (or set: LAST_INSERT_ID(expr), SET last_insert_id, a
// procedure doing either, whose CALL's OK says 0). The packet does not say
// which, and neither does session tracking. Only the connection that ran
// the statement knows, by its own LAST_INSERT_ID(): the session reads it
// there (backend.Conn.TakeLastInsertID), once the client has the answer,
// after the statements that may have changed it, and then replays the
// value wherever the session reads it next.
//
// The read is decisive because of what the connection held before: its
// value is known (backend.Conn.LastInsertID) and, before a statement that
// may generate ids, made to be 0 or the session's own value (sync): after
// the statement it is then either unchanged (nothing generated: the
// session's value is unchanged) or the id the statement generated last.
// A read leaves the connection at 0, so the pool's connections are at 0
// and the condition costs nothing in the common case. A statement that
// sets the value exactly (LAST_INSERT_ID(expr), CALL) starts from the
// session's own value, so the read is the session's value whatever it is.
// An UPDATE's OK packet says the value LAST_INSERT_ID(expr) set, so it is
// read only when the packet says 0 (expr was 0, or no row was matched and
// the value is unchanged: told apart by starting from a value other
// than 0).
//
// A statement that reads LAST_INSERT_ID() gets the session's value as a
// literal (substitute), so no connection needs to be set for it; those
// the proxy cannot rewrite (a prepared statement, a multi-statement, a
// streamed one) have their connection set first (needLastID).
//
// The read waits while the session keeps the connection (a transaction,
// say): only the session's statements run there, so the connection keeps
// the answer through any number of INSERTs (lastIDConn). It is read once,
// when the session needs the value (a statement reading it, or one that
// depends on it, on any connection) or the connection leaves the session
// (release, another shard): one read per transaction, not per INSERT.

// lastIDNeeds says what st needs of its connection's LAST_INSERT_ID()
// before it runs. Most statements need nothing.
func lastIDNeeds(st router.Stmt, streamed bool) needs {
	f := st.Flags
	if streamed || f&(router.FlagLastInsertID|router.FlagLastInsertIDArg) == router.FlagLastInsertID {
		// It reads the value (a streamed statement may, past its head);
		// not substituted (substitutesLastID), or it would not be flagged.
		return needLastID
	}
	switch {
	case f&router.FlagLastInsertIDArg != 0 && (st.Kind == router.KindUpdate || st.Kind == router.KindDelete) && f&router.FlagMultiStatement == 0:
		return needLastIDNonZero
	case setsLastIDExactly(st):
		return needLastID
	case mayGenerateIDs(st):
		return needLastIDBase
	}
	return 0
}

// substitutesLastID reports whether st's LAST_INSERT_ID() calls are
// replaced by the session's value (substitute): in a statement that only
// reads it (no LAST_INSERT_ID(expr) setting it on the way) and
// readsInPlace.
func substitutesLastID(st router.Stmt, streamed bool) bool {
	return st.Flags&(router.FlagLastInsertID|router.FlagLastInsertIDArg) == router.FlagLastInsertID && readsInPlace(st, streamed)
}

// setsLastIDExactly reports statements that may set LAST_INSERT_ID() to
// any value, 0 included: LAST_INSERT_ID(expr), a procedure's.
func setsLastIDExactly(st router.Stmt) bool {
	return st.Flags&router.FlagLastInsertIDArg != 0 || st.Kind == router.KindCall || st.Kind == router.KindExecute
}

// mayGenerateIDs reports statements that may generate AUTO_INCREMENT
// values: inserts of any form, and a multi-statement, whose later
// statements the classifier does not tell apart. (CREATE TABLE ... SELECT
// may too, rarely enough: its OK's insert id has it read, from wherever
// the connection's value was.)
func mayGenerateIDs(st router.Stmt) bool {
	if st.Flags&router.FlagMultiStatement != 0 {
		return true
	}
	switch st.Kind {
	case router.KindInsert, router.KindReplace, router.KindLoadData:
		return true
	case router.KindSet:
		return st.Flags&router.FlagSetNotVariable != 0 // SET STATEMENT ... FOR <statement>
	}
	return false
}

// lastIDInStep reports whether c's LAST_INSERT_ID() is as the statement
// needs it (n: lastIDNeeds).
func (s *Session) lastIDInStep(c *backend.Conn, n needs) bool {
	if s.lastIDConn != nil {
		if c == s.lastIDConn && n&lastIDNeedsMask == needLastIDBase {
			return true // one more statement that may generate ids: c keeps the answer
		}
		s.resolveLastID() // the value is needed, or c is another connection
	}
	if c.LastInsertIDUnknown {
		return false
	}
	v := c.LastInsertID
	switch {
	case n&needLastID != 0:
		return v == s.lastInsertID
	case n&needLastIDBase != 0:
		return v == 0 || v == s.lastInsertID
	case n&needLastIDNonZero != 0:
		return v != 0 || v == s.lastInsertID
	}
	return true
}

// mayChangeLastID reports, after st ran with answer info, whether the
// connection's LAST_INSERT_ID() may have changed: the cheap test that
// keeps learnLastID off the path of other statements.
func mayChangeLastID(info *mysql.ResponseInfo, st router.Stmt) bool {
	return info.LastInsertID != 0 || setsLastIDExactly(st) || info.Err != nil && mayGenerateIDs(st)
}

// learnLastID learns the session's LAST_INSERT_ID() after st ran on c
// with answer info (mayChangeLastID), reading c's when its answer does not
// tell. In a statement that runs in parts the statement's value is the
// first part's generated id (or the last value set), taken when the
// statement ends (endLastID).
func (s *Session) learnLastID(c *backend.Conn, info *mysql.ResponseInfo, st router.Stmt) {
	if s.lastIDConn != nil && s.lastIDConn != c {
		s.resolveLastID() // the value st started from is that connection's
	}
	before, known := c.LastInsertID, !c.LastInsertIDUnknown
	exact := setsLastIDExactly(st)
	id := info.LastInsertID
	var v uint64
	switch {
	case exact && (st.Kind == router.KindUpdate || st.Kind == router.KindDelete) && st.Flags&router.FlagMultiStatement == 0 && id != 0:
		// The OK says the value LAST_INSERT_ID(expr) set.
		s.lastIDConn = nil // what c held before does not matter any more
		c.LastInsertID, c.LastInsertIDUnknown = id, false
		s.setLastID(id, true)
		return
	case s.lastIDConn == c:
		// c keeps the answer of the statements before and this one's (a
		// statement setting it exactly had it read before, lastIDInStep).
		if id != 0 {
			s.lastIDGuess = id
		}
		return
	case !exact && id != 0 && known && id == s.lastInsertID && before == id:
		return // unchanged whether generated or not
	case known && !s.cmd.parts && s.pins != 0:
		// c stays the session's: read it when needed (resolveLastID).
		s.lastIDConn, s.lastIDBase, s.lastIDGuess = c, before, id
		c.LastInsertIDUnknown = true
		return
	}
	got, err := c.TakeLastInsertID()
	s.rowsProbed, s.skipAffinity = true, true
	if err != nil {
		s.logger().Warn("could not read the session's LAST_INSERT_ID() after a statement; it may be wrong until the next one sets it",
			"backend", c.Pool().Addr(), "err", err)
		if !mysql.IsSQLError(err) {
			c.Dirty = true // broken: the release resets or discards it
		}
		if id != 0 {
			s.setLastID(id, false)
		}
		return
	}
	switch {
	case exact, got != before:
		v = got // set, or generated
	default:
		v = s.lastInsertID // unchanged
	}
	if !known {
		v = got
	}
	s.setLastID(v, exact)
}

// resolveLastID reads the session's LAST_INSERT_ID() from the connection
// that keeps it (lastIDConn), if any. The connection's value before the
// statements it ran (lastIDBase) was 0 or the session's, so a value other
// than that one is the last id generated (or set), and that one means none
// was.
func (s *Session) resolveLastID() {
	c := s.lastIDConn
	if c == nil {
		return
	}
	s.lastIDConn = nil
	got, err := c.TakeLastInsertID()
	s.rowsProbed, s.skipAffinity = true, true
	if err != nil {
		s.logger().Warn("could not read the session's LAST_INSERT_ID() from its connection; it may be wrong until the next statement sets it",
			"backend", c.Pool().Addr(), "err", err)
		if !mysql.IsSQLError(err) {
			c.Dirty = true // broken: its release resets or discards it
		}
		if s.lastIDGuess != 0 {
			s.lastInsertID = s.lastIDGuess
		}
		return
	}
	if got != s.lastIDBase {
		s.lastInsertID = got
	}
}

// lostLastID forgets a LAST_INSERT_ID() kept by a connection the session
// lost (its transaction went with it) before it was read: the last insert
// id an OK reported there stands in for it.
func (s *Session) lostLastID() {
	s.logger().Warn("the connection keeping the session's LAST_INSERT_ID() was lost before it was read; it may be wrong until the next statement sets it")
	if s.lastIDGuess != 0 {
		s.lastInsertID = s.lastIDGuess
	}
	s.lastIDConn = nil
}

// setLastID makes v the session's LAST_INSERT_ID(), or, in a statement in
// parts, a part's value (exact: set rather than generated).
func (s *Session) setLastID(v uint64, exact bool) {
	if !s.cmd.parts {
		s.lastInsertID = v
		return
	}
	if v == s.lastInsertID && !exact {
		return // this part generated nothing
	}
	if !s.cmd.lastIDSet || exact {
		s.cmd.lastID, s.cmd.lastIDSet = v, true
	}
}

// endLastID makes the value a statement in parts learnt the session's.
func (s *Session) endLastID() {
	if s.cmd.lastIDSet {
		s.lastInsertID = s.cmd.lastID
	}
}

// setLastIDVariable records SET last_insert_id (or identity) = value,
// which session tracking reports.
func (s *Session) setLastIDVariable(c *backend.Conn, value []byte) {
	v, err := strconv.ParseUint(string(value), 10, 64)
	if err != nil {
		c.LastInsertIDUnknown = true
		return
	}
	if s.lastIDConn == c {
		s.lastIDConn = nil // what it kept is replaced
	}
	s.lastInsertID = v
	c.LastInsertID, c.LastInsertIDUnknown = v, false
}
