package router

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
func Substitute(dst, sql []byte, sub *Substitutions) []byte {
	last := 0
	for i := 0; i < len(sql); {
		switch c := sql[i]; {
		case c == '\'' || c == '"' || c == '`':
			i = skipQuotedRaw(sql, i)
		case c == '#' || (c == '-' && i+2 < len(sql) && sql[i+1] == '-' && isSpaceByte(sql[i+2])):
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*' && !(i+2 < len(sql) && (sql[i+2] == '!' || sql[i+2] == 'M')):
			i += 2
			for i+1 < len(sql) && !(sql[i] == '*' && sql[i+1] == '/') {
				i++
			}
			i += 2
		case c == '@' && i+1 < len(sql) && sql[i+1] == '@':
			end, name := sysVarAt(sql, i+2)
			if v := sub.Diagnostics; v != "" && (eqFold(name, "WARNING_COUNT") || eqFold(name, "ERROR_COUNT")) {
				dst = append(dst, sql[last:i]...)
				dst = append(dst, v...)
				last = end
			}
			i = end
		case isIdentByte(c):
			start := i
			for i < len(sql) && isIdentByte(sql[i]) {
				i++
			}
			if start > 0 && (sql[start-1] == '.' || sql[start-1] == '@') {
				continue
			}
			v := sub.valueOf(sql[start:i])
			if v == "" {
				continue
			}
			end, ok := emptyCall(sql, i)
			if !ok {
				continue
			}
			dst = append(dst, sql[last:start]...)
			dst = append(dst, v...)
			i, last = end, end
		default:
			i++
		}
	}
	return append(dst, sql[last:]...)
}

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
