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
	Diagnostics  string // @@warning_count, @@error_count (any scope)
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
func Substitute(dst, sql []byte, sub *Substitutions) []byte {
	last := 0
	it := selectItem{commentStart: -1}
	inExec := false // inside an executable comment
	for i := 0; i < len(sql); {
		switch c := sql[i]; {
		case c == '\'' || c == '"' || c == '`':
			start := i
			i = skipQuotedRaw(sql, i)
			it.token(start, i, itemOther)
		case c == '#' || (c == '-' && i+2 < len(sql) && sql[i+1] == '-' && isSpaceByte(sql[i+2])):
			it.comment(i, false)
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			if isExecComment(sql, i) {
				// Executable: the marker and its version go, the rest is code.
				it.comment(i, true)
				inExec = true
				i = skipExecMarker(sql, i)
				continue
			}
			it.comment(i, false)
			i += 2
			for i+1 < len(sql) && !(sql[i] == '*' && sql[i+1] == '/') {
				i++
			}
			i += 2
		case c == '*' && inExec && i+1 < len(sql) && sql[i+1] == '/':
			inExec = false
			it.execEnd()
			i += 2
		case c == '@' && i+1 < len(sql) && sql[i+1] == '@':
			end, name := sysVarAt(sql, i+2)
			if v := sub.Diagnostics; v != "" && (eqFold(name, "WARNING_COUNT") || eqFold(name, "ERROR_COUNT")) {
				dst = append(dst, sql[last:i]...)
				dst = append(dst, v...)
				last = end
				it.substituted = true
			}
			it.token(i, end, itemValue)
			i = end
		case isIdentByte(c):
			start := i
			for i < len(sql) && isIdentByte(sql[i]) {
				i++
			}
			word := sql[start:i]
			if start > 0 && (sql[start-1] == '.' || sql[start-1] == '@') {
				it.token(start, i, numberOr(word, itemOther))
				continue
			}
			if v := sub.valueOf(word); v != "" {
				if end, ok := emptyCall(sql, i); ok {
					dst = append(dst, sql[last:start]...)
					dst = append(dst, v...)
					i, last = end, end
					it.substituted = true
					it.token(start, end, itemValue)
					continue
				}
			}
			if ends, next := it.word(start, i, word); ends {
				dst, last = it.name(dst, sql, last, next)
			}
		default:
			if ends, next := it.punct(c, i); ends {
				dst, last = it.name(dst, sql, last, next)
			}
			i++
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
	case isSpaceByte(c):
		return false, 0
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

// isExecComment reports an executable comment at i: "/*!" or "/*M!".
func isExecComment(sql []byte, i int) bool {
	return i+2 < len(sql) && (sql[i+2] == '!' || (sql[i+2] == 'M' && i+3 < len(sql) && sql[i+3] == '!'))
}

// skipExecMarker returns the end of the executable comment marker at i:
// "/*!" or "/*M!" and the version digits after it.
func skipExecMarker(sql []byte, i int) int {
	i += 3
	if sql[i-1] == 'M' {
		i++
	}
	for i < len(sql) && sql[i] >= '0' && sql[i] <= '9' {
		i++
	}
	return i
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

// NoDiagnosticsValue is @@warning_count or @@error_count = 0.
const NoDiagnosticsValue = "CAST(000000000000000000000 AS UNSIGNED)"

func (sub *Substitutions) valueOf(name []byte) string {
	switch {
	case sub.ConnectionID != "" && eqFold(name, "CONNECTION_ID"):
		return sub.ConnectionID
	case sub.FoundRows != "" && eqFold(name, "FOUND_ROWS"):
		return sub.FoundRows
	case sub.RowCount != "" && eqFold(name, "ROW_COUNT"):
		return sub.RowCount
	}
	return ""
}

// emptyCall matches "( )" after a function name at i and returns the end.
func emptyCall(sql []byte, i int) (int, bool) {
	for i < len(sql) && isSpaceByte(sql[i]) {
		i++
	}
	if i >= len(sql) || sql[i] != '(' {
		return 0, false
	}
	i++
	for i < len(sql) && isSpaceByte(sql[i]) {
		i++
	}
	if i >= len(sql) || sql[i] != ')' {
		return 0, false
	}
	return i + 1, true
}

// sysVarAt reads a system variable reference after "@@": an optional scope
// (session., local., global.) and a name. It returns the end and the name.
func sysVarAt(sql []byte, i int) (int, []byte) {
	start := i
	for i < len(sql) && isIdentByte(sql[i]) {
		i++
	}
	name := sql[start:i]
	if i < len(sql) && sql[i] == '.' && (eqFold(name, "SESSION") || eqFold(name, "LOCAL") || eqFold(name, "GLOBAL")) {
		i++
		start = i
		for i < len(sql) && isIdentByte(sql[i]) {
			i++
		}
		name = sql[start:i]
	}
	return i, name
}

func skipQuotedRaw(s []byte, i int) int {
	q := s[i]
	i++
	for i < len(s) {
		switch {
		case s[i] == '\\' && q != '`':
			i += 2
		case s[i] == q:
			if i+1 < len(s) && s[i+1] == q {
				i += 2
				continue
			}
			return i + 1
		default:
			i++
		}
	}
	return len(s)
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || (c|0x20 >= 'a' && c|0x20 <= 'z') || (c >= '0' && c <= '9')
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
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
