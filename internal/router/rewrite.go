package router

import "fmt"

// Substitutions are values the proxy knows better than whichever backend
// connection runs a statement: its own connection id, and the previous
// statement's diagnostics when that statement ran on another connection.
// An empty field leaves its expression alone.
type Substitutions struct {
	ConnectionID string // CONNECTION_ID()
	FoundRows    string // FOUND_ROWS()
	RowCount     string // ROW_COUNT()
	LastInsertID string // LAST_INSERT_ID() without an argument
	WarningCount string // @@warning_count (any scope)
	ErrorCount   string // @@error_count (any scope)
	// WaitTimeout, InteractiveTimeout: @@wait_timeout and
	// @@interactive_timeout of the session (not @@global.).
	WaitTimeout, InteractiveTimeout string
}

// Substitute appends to dst the statement sql with the expressions named in
// sub replaced by their values, outside strings, quoted identifiers and
// comments. Executable comments (/*! … */) are code and are rewritten.
//
// A value would also change the name of the column it ends up in: the
// server names a column of a SELECT after its expression as written, and a
// client may read the column by name. So an item of the statement's select
// list that holds a substitution and has no alias gets its text as written
// for alias: SELECT CONNECTION_ID() + 0 is sent as
// SELECT 42 + 0 AS `CONNECTION_ID() + 0`.
//
// It reads the statement with the classifier's lexer, so that both agree
// on what is code: a call the classifier flags is the one replaced.
func Substitute(dst, sql []byte, sub *Substitutions) []byte {
	last := 0
	it := selectItem{commentStart: -1}
	l := lexer{s: sql}
	note := func(i int, k commentEvent) {
		switch k {
		case commentExecEnd:
			it.execEnd()
		default:
			it.comment(i, k == commentExecStart)
		}
	}
	var t token
	gapStart, exec := 0, false
	for {
		l.next(&t)
		exec = walkGap(sql, gapStart, t.start, exec, note)
		gapStart = t.end
		if t.kind == tEOF {
			break
		}
		switch t.kind {
		case tString, tQuoted, tUserVar:
			it.token(t.start, t.end, itemOther)
		case tSysVar:
			if v := sub.sysVarValue(sql[t.ns:t.ne], t.scope); v != "" {
				dst = append(dst, sql[last:t.start]...)
				dst = append(dst, v...)
				last = t.end
				it.substituted = true
			}
			it.token(t.start, t.end, itemValue)
		case tWord:
			word := sql[t.start:t.end]
			if t.start > 0 && sql[t.start-1] == '.' {
				it.token(t.start, t.end, numberOr(word, itemOther))
				continue
			}
			if v := sub.valueOf(word); v != "" {
				if end, ok := emptyCall(l); ok {
					dst = append(dst, sql[last:t.start]...)
					dst = append(dst, v...)
					last = end
					it.substituted = true
					it.token(t.start, end, itemValue)
					l.i, gapStart = end, end
					continue
				}
			}
			if ends, next := it.word(t.start, t.end, word); ends {
				dst, last = it.name(dst, sql, last, next)
			}
		default:
			if ends, next := it.punct(t.c, t.start); ends {
				dst, last = it.name(dst, sql, last, next)
			}
		}
	}
	dst, last = it.name(dst, sql, last, itemOutside)
	return append(dst, sql[last:]...)
}

// selectItem follows the items of a statement's select list for Substitute:
// where the current item starts and ends, what its last token is, and
// whether it holds a substitution.
type selectItem struct {
	state       uint8 // itemStatementStart, itemInList or itemOutside
	depth       int   // parenthesis depth
	started     bool  // the item has a token
	start, end  int   // of the item's text in sql
	lastKind    uint8 // of the item's last token
	substituted bool
	commented   bool // an executable comment in the item: leave it alone
	execEnded   bool // an executable comment ended after the item's last token
	// afterComma: the item follows a ','; commentStart is where the first
	// comment before its first token starts, or -1.
	afterComma   bool
	commentStart int
}

const (
	itemStatementStart uint8 = iota // no token of the statement yet
	itemInList                      // in the select list of a SELECT statement
	itemOutside                     // elsewhere in the statement
)

// Kinds of token, for whether an item ends in an alias.
const (
	itemOther uint8 = iota // a word, quoted identifier or string: perhaps an alias
	itemValue              // ')', a number, a substituted value or system variable
)

// token notes a token of the item.
func (it *selectItem) token(start, end int, kind uint8) {
	if it.state == itemStatementStart {
		it.state = itemOutside // the statement starts with something else than SELECT
	}
	if it.execEnded {
		it.commented = true
	}
	if !it.started {
		it.started, it.start = true, start
		if it.afterComma && it.commentStart >= 0 {
			it.start = it.commentStart
		}
	}
	it.end, it.lastKind = end, kind
}

// comment notes a comment starting at i. The server names a column after
// its item's text from the first token on, except that after a ',' the
// comments before the first token count too; comments inside the item
// count, trailing ones do not. How it would name an item with an
// executable comment inside is not worth guessing: such an item is left
// alone.
func (it *selectItem) comment(i int, executable bool) {
	switch {
	case executable && (it.started || it.afterComma):
		it.commented = true
	case !it.started && it.afterComma && it.commentStart < 0:
		it.commentStart = i
	}
}

// execEnd notes the end of an executable comment: one that ends inside an
// item counts as a comment inside it.
func (it *selectItem) execEnd() {
	it.execEnded = it.started
}

// word notes a word outside quotes. ends reports that it ends an item of
// the select list, and next what follows.
func (it *selectItem) word(start, end int, w []byte) (ends bool, next uint8) {
	switch it.state {
	case itemStatementStart:
		if it.depth == 0 && eqFold(w, "SELECT") {
			it.state = itemInList
			return false, 0
		}
	case itemInList:
		if it.depth == 0 {
			if !it.started && isSelectModifier(w) {
				return false, 0
			}
			if endsSelectList(w) {
				return true, itemOutside
			}
		}
	}
	it.token(start, end, numberOr(w, itemOther))
	return false, 0
}

// punct notes a character that is neither in a word, a quote nor a
// comment. ends reports that it ends an item of the select list, and next
// what follows.
func (it *selectItem) punct(c byte, i int) (ends bool, next uint8) {
	switch {
	case c == '(':
		it.token(i, i+1, itemOther)
		it.depth++
		return false, 0
	case c == ')':
		it.depth--
		it.token(i, i+1, itemValue)
		return false, 0
	case c == ',' && it.depth == 0 && it.state == itemInList:
		return true, itemInList
	case c == ';' && it.depth <= 0:
		if it.state == itemInList {
			return true, itemStatementStart
		}
		*it = selectItem{commentStart: -1}
		return false, 0
	}
	it.token(i, i+1, itemOther)
	return false, 0
}

// name ends the current item, which next follows. When the item holds a
// substitution and ends in an expression (not in an alias), it appends to
// dst what is left of sql up to the item's end and an alias naming the
// column as the server would have. It returns dst and how far sql has been
// copied.
func (it *selectItem) name(dst, sql []byte, last int, next uint8) ([]byte, int) {
	if it.state == itemInList && it.substituted && it.lastKind == itemValue && !it.commented &&
		it.end >= last && !containsByte(sql[it.start:it.end], 0) {
		dst = append(dst, sql[last:it.end]...)
		dst = appendAlias(dst, sql[it.start:it.end])
		last = it.end
	}
	depth := it.depth
	if next == itemStatementStart {
		depth = 0
	}
	*it = selectItem{state: next, depth: depth, afterComma: next == itemInList, commentStart: -1}
	return dst, last
}

// appendAlias appends " AS `text`", backquotes in text doubled.
func appendAlias(dst, text []byte) []byte {
	dst = append(dst, " AS `"...)
	for _, c := range text {
		if c == '`' {
			dst = append(dst, '`')
		}
		dst = append(dst, c)
	}
	return append(dst, '`')
}

// numberOr returns itemValue for a numeric literal (123, 0x1f, 0b101, 1e5)
// and kind for anything else, such as a name that starts with a digit.
func numberOr(w []byte, kind uint8) uint8 {
	if len(w) == 0 || w[0] < '0' || w[0] > '9' {
		return kind
	}
	if len(w) > 2 && w[0] == '0' && (w[1] == 'x' || w[1] == 'X' || w[1] == 'b' || w[1] == 'B') {
		for _, c := range w[2:] {
			if !isHexByte(c) {
				return kind
			}
		}
		return itemValue
	}
	exp := false
	for j, c := range w {
		switch {
		case c >= '0' && c <= '9':
		case (c == 'e' || c == 'E') && !exp && j > 0 && j+1 < len(w):
			exp = true
		default:
			return kind
		}
	}
	return itemValue
}

func isHexByte(c byte) bool {
	return (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'f')
}

func containsByte(b []byte, x byte) bool {
	for _, c := range b {
		if c == x {
			return true
		}
	}
	return false
}

// isSelectModifier reports the words that may follow SELECT before its
// first item.
func isSelectModifier(w []byte) bool {
	for _, m := range [...]string{"ALL", "DISTINCT", "DISTINCTROW", "HIGH_PRIORITY", "STRAIGHT_JOIN",
		"SQL_SMALL_RESULT", "SQL_BIG_RESULT", "SQL_BUFFER_RESULT", "SQL_NO_CACHE", "SQL_CACHE", "SQL_CALC_FOUND_ROWS"} {
		if eqFold(w, m) {
			return true
		}
	}
	return false
}

// endsSelectList reports the words that end a select list.
func endsSelectList(w []byte) bool {
	for _, m := range [...]string{"FROM", "INTO", "WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "UNION",
		"EXCEPT", "INTERSECT", "WINDOW", "FOR", "LOCK", "PROCEDURE", "OFFSET", "FETCH"} {
		if eqFold(w, m) {
			return true
		}
	}
	return false
}

// Values for Substitutions that give the column the type the server gives
// the expression they replace, as MariaDB types an integer literal by its
// digits, leading zeros included: CONNECTION_ID() is an INT UNSIGNED of
// display width 10, FOUND_ROWS() and ROW_COUNT() are BIGINTs of width 21,
// @@warning_count and @@error_count BIGINT UNSIGNED. (In KILL, which takes
// a plain number, pass the id as is.)

// ConnectionIDValue is CONNECTION_ID() = id.
func ConnectionIDValue(id uint32) string {
	return fmt.Sprintf("CAST(%010d AS UNSIGNED)", id)
}

// FoundRowsValue is FOUND_ROWS() = n.
func FoundRowsValue(n uint64) string {
	return fmt.Sprintf("CAST(%021d AS SIGNED)", n)
}

// RowCountValue is ROW_COUNT() = n.
func RowCountValue(n int64) string {
	if n < 0 {
		return fmt.Sprintf("CAST(-%019d AS SIGNED)", uint64(-n))
	}
	return fmt.Sprintf("CAST(%021d AS SIGNED)", n)
}

// LastInsertIDValue is LAST_INSERT_ID() = n: BIGINT UNSIGNED, 21 wide,
// NOT NULL, as the function's column.
func LastInsertIDValue(n uint64) string {
	return fmt.Sprintf("CAST(%021d AS UNSIGNED)", n)
}

// SessionVariableValue is a BIGINT UNSIGNED session variable (such as
// @@wait_timeout, @@warning_count) = n: 21 wide and nullable, as the
// variable's column (NULLIF(x, NULL) is x, nullable).
func SessionVariableValue(n uint64) string {
	return fmt.Sprintf("NULLIF(CAST(%021d AS UNSIGNED), NULL)", n)
}

// sysVarValue is the value of system variable name of the given scope, or
// "" when it is not substituted.
func (sub *Substitutions) sysVarValue(name []byte, scope uint8) string {
	switch {
	case sub.WarningCount != "" && eqFold(name, "WARNING_COUNT"):
		return sub.WarningCount
	case sub.ErrorCount != "" && eqFold(name, "ERROR_COUNT"):
		return sub.ErrorCount
	case scope == scopeGlobal:
		return ""
	case sub.WaitTimeout != "" && eqFold(name, "WAIT_TIMEOUT"):
		return sub.WaitTimeout
	case sub.InteractiveTimeout != "" && eqFold(name, "INTERACTIVE_TIMEOUT"):
		return sub.InteractiveTimeout
	}
	return ""
}

func (sub *Substitutions) valueOf(name []byte) string {
	switch {
	case sub.ConnectionID != "" && eqFold(name, "CONNECTION_ID"):
		return sub.ConnectionID
	case sub.FoundRows != "" && eqFold(name, "FOUND_ROWS"):
		return sub.FoundRows
	case sub.RowCount != "" && eqFold(name, "ROW_COUNT"):
		return sub.RowCount
	case sub.LastInsertID != "" && eqFold(name, "LAST_INSERT_ID"):
		return sub.LastInsertID
	}
	return ""
}

// emptyCall reports whether the lexer l stands before "()" (comments and
// whitespace allowed, as the server allows them) and where that ends.
// l is a copy: the caller's cursor does not move.
func emptyCall(l lexer) (int, bool) {
	var t token
	if l.next(&t); !t.isPunct('(') {
		return 0, false
	}
	if l.next(&t); !t.isPunct(')') {
		return 0, false
	}
	return t.end, true
}

// eqFold compares b with an upper-case ASCII name.
func eqFold(b []byte, upperName string) bool {
	if len(b) != len(upperName) {
		return false
	}
	for i := range b {
		c := b[i]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != upperName[i] {
			return false
		}
	}
	return true
}
