package router

// PreparedText returns the statement a text PREPARE name FROM 'text' or
// MariaDB's EXECUTE IMMEDIATE 'text' prepares or runs, unescaped (several
// adjacent string literals joined, as the server joins them), read with
// the classifier's lexer. ok is false for any other statement, and for
// one whose text is not a literal (FROM @v): the proxy cannot see it.
// It allocates the text; it is meant for those statements only.
func PreparedText(sql []byte) (text []byte, ok bool) {
	l := lexer{s: sql}
	var t token
	word := func(w string) bool {
		l.next(&t)
		return t.kind == tWord && eqUpper(sql[t.ns:t.ne], w)
	}
	switch {
	case word("PREPARE"):
		if l.next(&t); t.kind != tWord && t.kind != tQuoted { // the statement's name
			return nil, false
		}
		if !word("FROM") {
			return nil, false
		}
	case t.kind == tWord && eqUpper(sql[t.ns:t.ne], "EXECUTE"):
		if !word("IMMEDIATE") {
			return nil, false
		}
	default:
		return nil, false
	}
	for l.next(&t); t.kind == tString; l.next(&t) {
		text, ok = appendUnescaped(text, sql[t.start:t.end]), true
	}
	return text, ok
}
