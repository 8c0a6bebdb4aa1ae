package frontend

import (
	"bytes"
	"strconv"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
)

// partWarnings are the warnings of the previous statement when it ran in
// parts (a statement over several sub-tables), each part's read from its
// connection right after it: one server would list them all for SHOW
// WARNINGS, while each connection holds only its own part's.
type partWarnings struct {
	rows  [][]string // Level, Code, Message, part after part, max_error_count at most
	count int        // the warnings the parts raised, listed or not
	valid bool       // the previous statement ran in parts
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
	if !s.warns.valid {
		s.warns.rows, s.warns.count, s.warns.valid = s.warns.rows[:0], 0, true
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

// readsPartWarnings reports whether st reads the diagnostics a statement
// in parts left as a SHOW, which the session answers itself
// (answerDiagnostics). A SELECT of @@warning_count or @@error_count gets
// their counts (substitute) and, as on one server, where a statement that
// reads no table leaves the diagnostics alone, keeps them for the next
// statement. Any other statement forgets them.
func (s *Session) readsPartWarnings(st router.Stmt) bool {
	if !s.warns.valid || st.Flags&router.FlagWarnings != 0 && st.Kind == router.KindSelect {
		return false
	}
	if st.Kind == router.KindShow && st.Flags&router.FlagWarnings != 0 {
		return true
	}
	s.warns.valid = false
	return false
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
		// As the server defines them: no original names, the strings'
		// decimals 39 (NOT_FIXED_DEC).
		cols = []mysql.Column{
			{Name: "Level", Type: mysql.TypeVarString, Charset: uint16(mysql.CollationUTF8MB4GeneralCI), Length: 28, Flags: mysql.FlagNotNull, Decimals: 39, Expression: true},
			{Name: "Code", Type: mysql.TypeLong, Charset: uint16(mysql.CollationBinary), Length: 4, Flags: mysql.FlagUnsigned | mysql.FlagNotNull | mysql.FlagBinary, Expression: true},
			{Name: "Message", Type: mysql.TypeVarString, Charset: uint16(mysql.CollationUTF8MB4GeneralCI), Length: 2048, Flags: mysql.FlagNotNull, Decimals: 39, Expression: true},
		}
	}
	s.lastRowCount = -1 // a result set; diagnostic SHOWs leave FOUND_ROWS() alone
	if err := s.client.WriteTextResult(cols, rows, s.caps, s.status()); err != nil {
		return false
	}
	return s.client.Flush() == nil
}
