package router

// Clauses locates the clauses of a single SELECT's text (its outermost
// level: a statement without WITH, UNION or a parenthesised head), for
// rewriting it by inserting and cutting text, so that what the client
// wrote reaches the server as written (result column names are the items'
// texts). Offsets are into the text given to ScanClauses; -1 is absent.
type Clauses struct {
	// ItemsEnd is the end of the select list's last item.
	ItemsEnd int32
	// From is the FROM keyword's offset.
	From int32
	// Where is the WHERE clause's condition, after the keyword.
	Where Span
	// Tail is where the clauses after WHERE begin (GROUP BY, HAVING, ORDER
	// BY, LIMIT, FOR, LOCK, INTO…), or the end of the statement: where a
	// WHERE clause goes when there is none.
	Tail int32
	// OrderBy and Limit are the ORDER BY and LIMIT clauses, keywords
	// included, each up to the next clause or the end of the statement.
	OrderBy, Limit Span
	// End is the end of the statement, before a trailing ';'.
	End int32
	// Names are the references, between FROM and the end of WHERE (join
	// conditions and WHERE), to the columns named in ScanClauses' names.
	Names []NameRef
}

// NameRef is a column reference in a statement's text.
type NameRef struct {
	// Span covers the reference, qualifier included; Qual is its qualifier
	// up to and including the last '.' (Start -1 when unqualified).
	Span, Qual Span
	// Name is the index of the column's name in ScanClauses' names.
	Name int
	// Exact marks a reference compared for equality with one string
	// literal or DATABASE() (col = 'x', 'x' = col, col <=> 'x', col IN
	// ('x')) in a WHERE made only of AND-ed conditions: the server looks
	// such a name up rather than comparing it under its collation
	// (information_schema reads the one table of that exact name). Value
	// is then what it is compared with (see CompareValue).
	Exact bool
	Value Span
}

// CompareValue returns the value an Exact reference is compared with: a
// string literal's content, or, for DATABASE() and SCHEMA(), db.
func (r *NameRef) CompareValue(sql []byte, db string) string {
	v := sql[r.Value.Start:r.Value.End]
	if v[0] == '\'' || v[0] == '"' {
		return string(appendUnescaped(nil, v))
	}
	return db
}

// clauseWords end the WHERE clause (and start the tail) at the SELECT's
// own depth.
var clauseWords = []string{"GROUP", "HAVING", "WINDOW", "ORDER", "LIMIT", "FOR", "LOCK", "INTO", "PROCEDURE"}

// ScanClauses reads the clauses of a single SELECT and the references to
// the columns names (upper-case) in its FROM and WHERE clauses, with the
// classifier's lexer, so that comments and quoting are read alike.
func ScanClauses(sql []byte, names []string) Clauses {
	c := Clauses{ItemsEnd: -1, From: -1, Where: Span{-1, -1}, Tail: -1, OrderBy: Span{-1, -1}, Limit: Span{-1, -1}, End: int32(len(sql))}
	items := SelectItems(sql, nil)
	if len(items) > 0 {
		c.ItemsEnd = items[len(items)-1].End
	}
	l := lexer{s: sql}
	var toks []token
	for {
		var t token
		l.next(&t)
		if t.kind == tEOF {
			break
		}
		toks = append(toks, t)
	}
	if n := len(toks); n > 0 && toks[n-1].isPunct(';') {
		c.End = int32(toks[n-1].start)
		toks = toks[:n-1]
	}
	word := func(t *token, w string) bool { return t.kind == tWord && eqUpper(sql[t.ns:t.ne], w) }
	depth, whereAt := 0, -1
	for i := range toks {
		t := &toks[i]
		switch {
		case t.isPunct('('):
			depth++
		case t.isPunct(')'):
			depth--
		case depth != 0 || int32(t.start) < c.ItemsEnd:
		case c.From < 0 && word(t, "FROM"):
			c.From = int32(t.start)
		case c.From >= 0 && c.Where.Start < 0 && c.Tail < 0 && word(t, "WHERE"):
			c.Where.Start, whereAt = int32(t.end), i
		case c.From >= 0 && c.Tail < 0 && t.kind == tWord && anyWord(sql[t.ns:t.ne], clauseWords):
			c.Tail = int32(t.start)
		}
		if depth == 0 && c.Tail >= 0 && t.kind == tWord && anyWord(sql[t.ns:t.ne], clauseWords) {
			for _, sp := range []*Span{&c.OrderBy, &c.Limit} {
				if sp.Start >= 0 && sp.End < 0 {
					sp.End = int32(t.start)
				}
			}
			switch {
			case word(t, "ORDER") && c.OrderBy.Start < 0:
				c.OrderBy.Start = int32(t.start)
			case word(t, "LIMIT") && c.Limit.Start < 0:
				c.Limit.Start = int32(t.start)
			}
		}
	}
	if c.Tail < 0 {
		c.Tail = c.End
	}
	if c.Where.Start >= 0 {
		c.Where.End = c.Tail
	}
	for _, sp := range []*Span{&c.OrderBy, &c.Limit} {
		if sp.Start >= 0 && sp.End < 0 {
			sp.End = c.End
		}
	}
	if c.From < 0 {
		return c
	}
	for i := range toks {
		t := &toks[i]
		if int32(t.start) < c.From || int32(t.start) >= c.Tail {
			continue
		}
		n := nameIndex(sql, t, names)
		if n < 0 || i > 0 && word(&toks[i-1], "AS") || i+1 < len(toks) && toks[i+1].isPunct('(') {
			continue
		}
		ref := NameRef{Span: Span{int32(t.start), int32(t.end)}, Qual: Span{-1, -1}, Name: n, Value: Span{-1, -1}}
		for q := i; q >= 2 && toks[q-1].isPunct('.') && (toks[q-2].kind == tWord || toks[q-2].kind == tQuoted); q -= 2 {
			ref.Span.Start, ref.Qual = int32(toks[q-2].start), Span{int32(toks[q-2].start), int32(toks[i-1].end)}
		}
		if whereAt >= 0 && int32(t.start) > c.Where.Start && conjunct(sql, toks, whereAt, i, c.Tail) {
			ref.Value, ref.Exact = exactCompare(sql, toks, i, ref.Span.Start)
		}
		c.Names = append(c.Names, ref)
	}
	return c
}

// nameIndex is the index in names of the identifier t, or -1.
func nameIndex(sql []byte, t *token, names []string) int {
	if t.kind != tWord && t.kind != tQuoted {
		return -1
	}
	for i, n := range names {
		if eqUpper(sql[t.ns:t.ne], n) {
			return i
		}
	}
	return -1
}

// exactCompare returns the value the reference ending at token i
// (starting at offset start) is compared with for equality when it is a
// whole condition's side compared with one string literal or DATABASE():
// col = v, v = col, col <=> v, col IN (v).
func exactCompare(sql []byte, toks []token, i int, start int32) (Span, bool) {
	at := func(j int) *token {
		if j < 0 || j >= len(toks) {
			return &token{}
		}
		return &toks[j]
	}
	isWord := func(j int, w string) bool { return at(j).kind == tWord && eqUpper(sql[at(j).ns:at(j).ne], w) }
	first := i
	for first > 0 && int32(toks[first].start) > start {
		first--
	}
	opens := func(j int) bool { // a condition starts after token j
		return at(j).isPunct('(') || isWord(j, "WHERE") || isWord(j, "AND")
	}
	closes := func(j int) bool { // a condition ends before token j
		n := at(j)
		return n.kind == tEOF || n.isPunct(')') || n.isPunct(';') || isWord(j, "AND") || n.kind == tWord && anyWord(sql[n.ns:n.ne], clauseWords)
	}
	// value returns the tokens [j, end) of a value starting at j, or end < 0.
	value := func(j int) (end int) {
		switch {
		case at(j).kind == tString:
			return j + 1
		case (isWord(j, "DATABASE") || isWord(j, "SCHEMA")) && at(j+1).isPunct('(') && at(j+2).isPunct(')'):
			return j + 3
		}
		return -1
	}
	span := func(j, end int) Span { return Span{int32(toks[j].start), int32(toks[end-1].end)} }
	if opens(first - 1) {
		switch {
		case at(i + 1).isPunct('='):
			if end := value(i + 2); end > 0 && closes(end) {
				return span(i+2, end), true
			}
		case at(i+1).isPunct('<') && at(i+2).isPunct('=') && at(i+3).isPunct('>'):
			if end := value(i + 4); end > 0 && closes(end) {
				return span(i+4, end), true
			}
		case isWord(i+1, "IN") && at(i+2).isPunct('('):
			if end := value(i + 3); end > 0 && at(end).isPunct(')') && closes(end+1) {
				return span(i+3, end), true
			}
		}
	}
	if !at(first-1).isPunct('=') || !closes(i+1) {
		return Span{-1, -1}, false
	}
	for j := first - 2; j >= 0 && j >= first-4; j-- {
		if end := value(j); end == first-1 && opens(j-1) {
			return span(j, end), true
		}
	}
	return Span{-1, -1}, false
}

// conjunct reports whether token i of a WHERE clause (from token where to
// offset end) is under AND-ed conditions only: no OR, XOR, || or NOT
// connective joins the conditions around it, and each parenthesis around
// it groups conditions rather than calls a function or holds a list.
func conjunct(sql []byte, toks []token, where, i int, end int32) bool {
	var open, at []int         // the parentheses open at token j, and at token i
	enclosing := func() bool { // open is a prefix of at
		if len(open) > len(at) {
			return false
		}
		for k := range open {
			if open[k] != at[k] {
				return false
			}
		}
		return true
	}
	for j := where + 1; j < len(toks) && int32(toks[j].start) < end; j++ {
		t := &toks[j]
		if j == i {
			at = append([]int(nil), open...)
			for _, o := range open {
				p := &toks[o-1]
				if !(o-1 == where || p.isPunct('(') || p.kind == tWord && eqUpper(sql[p.ns:p.ne], "AND")) {
					return false
				}
			}
		}
		switch {
		case t.isPunct('('):
			open = append(open, j)
		case t.isPunct(')') && len(open) > 0:
			open = open[:len(open)-1]
		}
	}
	open = open[:0]
	for j := where + 1; j < len(toks) && int32(toks[j].start) < end; j++ {
		t := &toks[j]
		p := &toks[j-1]
		connective := t.kind == tWord && (eqUpper(sql[t.ns:t.ne], "OR") || eqUpper(sql[t.ns:t.ne], "XOR")) ||
			t.isPunct('|') && j+1 < len(toks) && toks[j+1].isPunct('|') ||
			(t.kind == tWord && eqUpper(sql[t.ns:t.ne], "NOT") || t.isPunct('!')) &&
				(j-1 == where || p.isPunct('(') || p.kind == tWord && (eqUpper(sql[p.ns:p.ne], "AND") || eqUpper(sql[p.ns:p.ne], "OR")))
		if connective && enclosing() {
			return false
		}
		switch {
		case t.isPunct('('):
			open = append(open, j)
		case t.isPunct(')') && len(open) > 0:
			open = open[:len(open)-1]
		}
	}
	return true
}
