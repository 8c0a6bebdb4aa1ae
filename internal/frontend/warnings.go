package frontend

import (
	"bytes"
	"strconv"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
)

// partWarnings are the diagnostics of the previous statement when the
// session holds them rather than a backend connection (valid): those of
// a statement that ran in parts (a statement over several sub-tables),
// each part's read from its connection right after it, since one server
// would list them all for SHOW WARNINGS while each connection holds only
// its own part's; and those a statement that reads no table left in
// place while it ran on another connection than theirs (saveDiagnostics),
// none at all included.
//
// MariaDB's rules, found on the server: a statement that reads a table
// (its table list is not empty: FROM a table, a derived table, WITH, a
// sequence) replaces the diagnostics with its own, none included; one
// that reads no table (SELECT 1, SET, DO, BEGIN, COMMIT, USE…) leaves
// them as they are unless it raises a condition (a warning, a note, an
// error), which replaces them; SHOW WARNINGS, SHOW ERRORS, their
// COUNT(*) and GET DIAGNOSTICS leave them as they are. @@warning_count
// reads the count of those in place. Prepared statements follow the same
// rules, at COM_STMT_PREPARE and COM_STMT_EXECUTE alike.
type partWarnings struct {
	rows  [][]string // Level, Code, Message, part after part, max_error_count at most
	count int        // the warnings the parts raised, listed or not
	// held is the connection holding the previous statement's
	// diagnostics (pinHeld) while the current statement, which reads no
	// table, leaves them in place: read from it (saveDiagnostics) when
	// the statement goes on without it. heldCount is their count, as the
	// statement that raised them reported it.
	held      *backend.Conn
	heldCount uint16
	valid     bool // the session holds the previous statement's diagnostics
	// current: rows are the current statement's (collectWarnings adds
	// the next part's to them); else they are the previous statement's,
	// which the current one's first part replaces.
	current bool
}

// defaultMaxErrorCount is the server's max_error_count unless the session
// sets another: SHOW WARNINGS lists that many of a statement's
// diagnostics, @@warning_count counts them all.
const defaultMaxErrorCount = 64

// maxErrorCount is the most diagnostics the session's SHOW WARNINGS lists.
func (s *Session) maxErrorCount() int {
	if v, ok := s.vars.Get("max_error_count"); ok {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			return n
		}
	}
	return defaultMaxErrorCount
}

// collectWarnings adds the warnings c holds after a part of the current
// statement, which reported raised of them, their messages passed through
// rename unless it is nil; the list keeps the first max_error_count of all
// parts', as one server's. Reading them is a round trip, made only for
// parts that had warnings.
func (s *Session) collectWarnings(c *backend.Conn, raised int, rename func(string) string) {
	if !s.warns.valid || !s.warns.current {
		s.warns.rows, s.warns.count, s.warns.valid = s.warns.rows[:0], 0, true
		s.warns.current = true
	}
	rows, err := c.QueryRows("SHOW WARNINGS")
	if err != nil {
		c.Dirty = true
		return
	}
	s.warns.count += max(raised, len(rows))
	limit := s.maxErrorCount()
	for _, r := range rows {
		if len(s.warns.rows) >= limit {
			break
		}
		if rename != nil && len(r) == 3 {
			r[2] = rename(r[2])
		}
		s.warns.rows = append(s.warns.rows, r)
	}
	s.skipAffinity = true // SHOW WARNINGS replaced c's diagnostics
}

// ownWarnings makes the diagnostics of the statement about to run those
// the proxy collects for it (collectWarnings), none until it does: a
// statement the proxy answers from statements of its own (EXPLAIN's
// plan), which leaves the diagnostics of the session's connections, the
// previous statement's, as they were.
func (s *Session) ownWarnings() {
	s.warns.rows, s.warns.count, s.warns.valid = s.warns.rows[:0], 0, true
}

// diagnosticsBefore settles, before statement st runs, which diagnostics
// it reads or leaves in place, and reports whether the session answers
// it itself, from those it holds (answerDiagnostics: SHOW WARNINGS and
// the like). A statement that replaces them (keepsDiagnostics false)
// makes the session forget those it holds. One that keeps them keeps
// those the session holds, and those of the connection holding them
// (pinHeld), which it reads when the statement leaves that connection
// (saveDiagnostics); when there are none (the previous statement raised
// nothing), the session holds that there are none, since a statement
// that reads no table may run on a connection whose diagnostics are
// another statement's, another session's included, which it would leave
// in place for SHOW WARNINGS to read (GET DIAGNOSTICS excepted, which
// reads them where the previous statement ran, as before).
func (s *Session) diagnosticsBefore(st router.Stmt) bool {
	s.warns.current, s.warns.held = false, nil
	switch {
	case !keepsDiagnostics(st):
		s.warns.valid = false
		if st.Flags&diagnosticsFlags == 0 {
			s.forgetHeldDiagnostics()
		}
		return false
	case s.warns.valid:
	case s.pinned != nil && s.pins&pinHeld != 0:
		s.warns.held = s.pinned
		if readsCounts(st) && s.srv.keyspaces().Lookup(s.db) != nil {
			// @@warning_count: on a sharded schema the statement runs
			// on the default cluster, not where they are; the session
			// puts their count in its text (substitute).
			s.saveDiagnostics(s.pinned)
		}
		return false
	case getDiagnostics(st):
		// Read where the previous statement ran (reclaimPrevious): the
		// session could only refuse it (it sets user variables), and its
		// ROW_COUNT is that statement's.
		return false
	default:
		s.warns.rows, s.warns.count, s.warns.valid = s.warns.rows[:0], 0, true
	}
	return st.Kind == router.KindShow && st.Flags&router.FlagWarnings != 0
}

// forgetHeldDiagnostics lets go of the connections held for the
// diagnostics of the statements before (pinHeld, on any shard), which a
// statement that reads a table replaces with its own: held, one of them
// that a later statement reading no table ran on would still have them,
// and a SHOW WARNINGS or @@warning_count after it would read them as the
// session's. (The statement's own connection is held again if it raises
// any.)
func (s *Session) forgetHeldDiagnostics() {
	kept := s.others[:0]
	for _, h := range s.others {
		if h.pins&pinHeld != 0 {
			if h.pins &^= pinHeld; h.pins == 0 {
				s.releaseHeld(h.conn)
				continue
			}
		}
		kept = append(kept, h)
	}
	clear(s.others[len(kept):])
	s.others = kept
	if c := s.pinned; c != nil && s.pins&pinHeld != 0 {
		if s.pins &^= pinHeld; s.pins == 0 {
			s.release(c)
		}
	}
}

// releaseHeld gives back to its pool a connection the session held on
// another cluster for nothing but diagnostics.
func (s *Session) releaseHeld(c *backend.Conn) {
	if c.Dirty {
		s.releaseDirty(c)
		return
	}
	c.Pool().Release(c)
}

// keepsDiagnostics reports whether st leaves the previous statement's
// diagnostics in place unless it raises a condition (partWarnings): it
// reads no table, or it is SHOW WARNINGS, SHOW ERRORS, their COUNT(*) or
// GET DIAGNOSTICS. A SELECT reading @@warning_count from a table clears
// them first, as any statement reading a table (it reads 0).
func keepsDiagnostics(st router.Stmt) bool {
	return st.NoTable || st.Flags&router.FlagWarnings != 0 && (st.Kind == router.KindShow || getDiagnostics(st))
}

// readsCounts reports a statement reading @@warning_count or
// @@error_count, whose values the session puts in its text when it
// holds the diagnostics (substitute).
func readsCounts(st router.Stmt) bool {
	return st.Flags&router.FlagWarnings != 0 && st.Kind != router.KindShow && !getDiagnostics(st)
}

// getDiagnostics reports GET [CURRENT|STACKED] DIAGNOSTICS, the statement
// of kind Other the classifier flags as reading the diagnostics (with a
// compound statement reading @@warning_count, which the session cannot
// answer either).
func getDiagnostics(st router.Stmt) bool {
	return st.Kind == router.KindOther && st.Flags&router.FlagWarnings != 0
}

// errGetDiagnostics refuses GET DIAGNOSTICS while the session holds the
// diagnostics it would read: no connection holds them, and the session
// does not set the user variables it assigns.
var errGetDiagnostics = mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax,
	"This version of shardgate doesn't yet support 'GET DIAGNOSTICS after a statement answered in parts, or after a statement reading no table that ran on another connection than the diagnostics before it (SHOW WARNINGS reads them)'")

// saveDiagnostics makes the diagnostics c holds the session's when c is
// the connection holding those the current statement leaves in place
// (partWarnings.held) and the statement goes on without it (to another
// shard, or c given up): one round trip, SHOW WARNINGS on c. c's pinHeld
// is the caller's to drop.
func (s *Session) saveDiagnostics(c *backend.Conn) {
	if c == nil || c != s.warns.held {
		return
	}
	s.warns.held = nil
	s.collectWarnings(c, int(s.warns.heldCount), nil)
	s.warns.current = false // the current statement's own replace them
}

// diagnosticsAfter records what statement st, answered info on a
// connection, did to the diagnostics: one that raised a condition leaves
// its own on its connection, held for the next statement (the caller's
// pinHeld), and, unless it ran in parts (whose warnings the session
// collects), those the session holds are no longer the diagnostics; one
// that read a table left none.
func (s *Session) diagnosticsAfter(info *mysql.ResponseInfo, st router.Stmt) {
	switch {
	case info.Warnings > 0 || info.Err != nil:
		s.warns.heldCount = info.Warnings
		if !s.cmd.parts {
			s.warns.valid = false
		}
	case !keepsDiagnostics(st):
		s.warns.heldCount = 0
	}
}

// errorDiagnostics makes e, an error the session answers the client
// with, the diagnostics, as one server's error replaces them: SHOW
// WARNINGS lists it, @@error_count counts it. Added to the current
// statement's parts' own, unless they have it already (renamed).
func (s *Session) errorDiagnostics(e *mysql.SQLError) {
	code := strconv.Itoa(int(e.Code))
	if !s.warns.valid || !s.warns.current {
		s.warns.rows, s.warns.count = s.warns.rows[:0], 0
		s.warns.valid, s.warns.current = true, true
	}
	for _, r := range s.warns.rows {
		if len(r) == 3 && r[0] == "Error" && r[1] == code {
			return
		}
	}
	s.warns.count++
	if len(s.warns.rows) < s.maxErrorCount() {
		s.warns.rows = append(s.warns.rows, []string{"Error", code, e.Message})
	}
}

// counts are @@warning_count and @@error_count of the warnings collected
// (as SHOW COUNT(*) WARNINGS and SHOW COUNT(*) ERRORS count them), as
// values for substitute.
func (w *partWarnings) counts() (warnings, errs string) {
	n := 0
	for _, r := range w.rows {
		if len(r) > 0 && r[0] == "Error" {
			n++
		}
	}
	return router.SessionVariableValue(uint64(w.count)), router.SessionVariableValue(uint64(n))
}

// answerDiagnostics answers SHOW WARNINGS, SHOW ERRORS and SHOW COUNT(*)
// WARNINGS/ERRORS with rows, as the server answers them.
func (s *Session) answerDiagnostics(sql []byte, w *partWarnings) bool {
	var rows [][]string
	count := 0
	if w != nil {
		rows, count = w.rows, w.count
	}
	up := bytes.ToUpper(sql)
	errorsOnly := bytes.Contains(up, []byte("ERRORS"))
	if errorsOnly {
		var errs [][]string
		for _, r := range rows {
			if len(r) > 0 && r[0] == "Error" {
				errs = append(errs, r)
			}
		}
		rows, count = errs, len(errs)
	}
	var cols []mysql.Column
	if bytes.Contains(up, []byte("COUNT")) {
		name := "@@session.warning_count"
		if errorsOnly {
			name = "@@session.error_count"
		}
		cols = []mysql.Column{{Name: name, Type: mysql.TypeLongLong, Charset: uint16(mysql.CollationBinary), Length: 21, Flags: mysql.FlagUnsigned | mysql.FlagBinary, Expression: true}}
		rows = [][]string{{strconv.Itoa(count)}}
	} else {
		rows = diagnosticsLimit(up, rows)
		// As the server defines them: no original names, the strings'
		// decimals 39 (NOT_FIXED_DEC).
		cols = []mysql.Column{
			{Name: "Level", Type: mysql.TypeVarString, Charset: uint16(mysql.CollationUTF8MB4GeneralCI), Length: 28, Flags: mysql.FlagNotNull, Decimals: 39, Expression: true},
			{Name: "Code", Type: mysql.TypeLong, Charset: uint16(mysql.CollationBinary), Length: 4, Flags: mysql.FlagUnsigned | mysql.FlagNotNull | mysql.FlagBinary, Expression: true},
			{Name: "Message", Type: mysql.TypeVarString, Charset: uint16(mysql.CollationUTF8MB4GeneralCI), Length: 2048, Flags: mysql.FlagNotNull, Decimals: 39, Expression: true},
		}
	}
	s.lastRowCount = -1 // a result set; diagnostic SHOWs leave FOUND_ROWS() alone
	// No connection ran it: the previous statement's holds their values
	// from before, so the next statement's ROW_COUNT() and FOUND_ROWS()
	// are the session's (substitute).
	s.rowsProbed = true
	if err := s.client.WriteTextResult(cols, rows, s.caps, s.status()); err != nil {
		return false
	}
	return s.client.Flush() == nil
}

// diagnosticsLimit is rows cut by the LIMIT [offset,] count (or LIMIT
// count OFFSET offset) of SHOW WARNINGS or SHOW ERRORS, whose text in
// upper case is up, as the server cuts them.
func diagnosticsLimit(up []byte, rows [][]string) [][]string {
	i := bytes.LastIndex(up, []byte("LIMIT"))
	if i < 0 {
		return rows
	}
	f := bytes.FieldsFunc(up[i+len("LIMIT"):], func(r rune) bool { return r == ' ' || r == ',' || r == '\t' || r == '\n' || r == '\r' || r == ';' })
	var nums []int
	offsetLast := false
	for _, w := range f {
		if string(w) == "OFFSET" {
			offsetLast = true
			continue
		}
		n, err := strconv.Atoi(string(w))
		if err != nil || n < 0 {
			return rows
		}
		nums = append(nums, n)
	}
	offset, count := 0, 0
	switch {
	case len(nums) == 1:
		count = nums[0]
	case len(nums) == 2 && offsetLast:
		count, offset = nums[0], nums[1]
	case len(nums) == 2:
		offset, count = nums[0], nums[1]
	default:
		return rows
	}
	if offset >= len(rows) {
		return nil
	}
	return rows[offset:min(len(rows), offset+count)]
}
