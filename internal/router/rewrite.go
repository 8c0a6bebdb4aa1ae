package router

import "strconv"

// ReplaceConnectionID appends to dst the statement sql with every call of
// CONNECTION_ID() (outside strings, quoted identifiers and comments)
// replaced by id, so a client sees the proxy's connection id, the one KILL
// accepts, rather than whichever backend thread runs the statement.
func ReplaceConnectionID(dst, sql []byte, id uint64) []byte {
	const name = "CONNECTION_ID"
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
		case isIdentByte(c):
			start := i
			for i < len(sql) && isIdentByte(sql[i]) {
				i++
			}
			if i-start != len(name) || !eqFold(sql[start:i], name) || (start > 0 && sql[start-1] == '.') {
				continue
			}
			j := i
			for j < len(sql) && isSpaceByte(sql[j]) {
				j++
			}
			if j >= len(sql) || sql[j] != '(' {
				continue
			}
			j++
			for j < len(sql) && isSpaceByte(sql[j]) {
				j++
			}
			if j >= len(sql) || sql[j] != ')' {
				continue
			}
			dst = append(dst, sql[last:start]...)
			dst = strconv.AppendUint(dst, id, 10)
			i = j + 1
			last = i
		default:
			i++
		}
	}
	return append(dst, sql[last:]...)
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

func eqFold(b []byte, upperName string) bool {
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
