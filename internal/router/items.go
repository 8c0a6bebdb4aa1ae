package router

// Span is a byte range [Start, End) of a statement's text.
type Span struct{ Start, End int32 }

// selectOptions may open a select list; they are no item.
var selectOptions = []string{"ALL", "DISTINCT", "DISTINCTROW", "HIGH_PRIORITY", "STRAIGHT_JOIN",
	"SQL_SMALL_RESULT", "SQL_BIG_RESULT", "SQL_BUFFER_RESULT", "SQL_CACHE", "SQL_NO_CACHE", "SQL_CALC_FOUND_ROWS"}

// selectListEnds are the words that end a select list at its own depth.
var selectListEnds = []string{"FROM", "INTO", "WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "UNION",
	"EXCEPT", "INTERSECT", "FOR", "LOCK", "WINDOW", "PROCEDURE"}

// SelectItems appends to dst the spans of the select-list items of a
// statement's outermost SELECT (the first one, or after WITH … the main
// one), each from its first token to its last, as the server names a
// result column it has no alias for: by the item's text as written. It
// reads the text with the classifier's lexer, so comments and quoting are
// read alike; it does not allocate beyond growing dst.
func SelectItems(sql []byte, dst []Span) []Span {
	l := lexer{s: sql}
	var t token
	depth, base := 0, -1
	with, first := false, true
	start, end := -1, -1
	flush := func() {
		if start >= 0 {
			dst = append(dst, Span{int32(start), int32(end)})
		}
		start, end = -1, -1
	}
	for {
		l.next(&t)
		if t.kind == tEOF {
			break
		}
		word := t.kind == tWord
		if base < 0 { // looking for the SELECT whose items name the result
			switch {
			case t.isPunct('('):
				depth++
			case t.isPunct(')'):
				depth--
			case word && first && eqUpper(sql[t.ns:t.ne], "WITH"):
				with = true
			case word && eqUpper(sql[t.ns:t.ne], "SELECT") && (!with || depth == 0):
				base = depth
			}
			first = false
			continue
		}
		if depth == base {
			switch {
			case t.isPunct(')'), t.isPunct(';'):
				flush()
				return dst
			case t.isPunct(','):
				flush()
				continue
			case word && start < 0 && len(dst) == 0 && anyWord(sql[t.ns:t.ne], selectOptions):
				continue
			case word && anyWord(sql[t.ns:t.ne], selectListEnds):
				flush()
				return dst
			}
		}
		switch {
		case t.isPunct('('):
			depth++
		case t.isPunct(')'):
			depth--
		}
		if start < 0 {
			start = t.start
		}
		end = t.end
	}
	flush()
	return dst
}

func anyWord(w []byte, words []string) bool {
	for _, s := range words {
		if len(w) == len(s) && eqUpper(w, s) {
			return true
		}
	}
	return false
}

// unionFirstOnly are the select options MariaDB accepts in a UNION's first
// SELECT only (error 1234, "Incorrect usage/placement", in a later one).
// None of them changes the rows or the columns.
var unionFirstOnly = []string{"SQL_CACHE", "SQL_NO_CACHE", "HIGH_PRIORITY", "SQL_BUFFER_RESULT"}

// BlankUnionFirstOnly overwrites with spaces, in place, the options of
// sel's SELECT that only a UNION's first SELECT may have, so that sel can
// be a later SELECT of one: a shard's sub-tables read as a UNION ALL of
// the client's SELECT. It finds them as the server does, inside
// executable comments too (mysqldump's /*!40001 SQL_NO_CACHE */); a text
// that is not a SELECT is left alone.
func BlankUnionFirstOnly(sel []byte) {
	l := lexer{s: sel}
	var t token
	l.next(&t)
	if t.kind != tWord || !eqUpper(sel[t.ns:t.ne], "SELECT") {
		return
	}
	for {
		l.next(&t)
		if t.kind != tWord || !anyWord(sel[t.ns:t.ne], selectOptions) {
			return
		}
		if anyWord(sel[t.ns:t.ne], unionFirstOnly) {
			for i := t.start; i < t.end; i++ {
				sel[i] = ' '
			}
		}
	}
}
