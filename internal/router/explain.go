package router

// ExplainHead is what precedes the statement of an EXPLAIN (DESCRIBE,
// DESC) or an ANALYZE of a statement, as ReadExplain reads it.
type ExplainHead struct {
	// Stmt is where the statement explained starts in the text; the text
	// before it is the head as the client wrote it ("EXPLAIN EXTENDED "),
	// which a server given the head and another statement reads alike.
	Stmt int
	// JSON: FORMAT=JSON. Format is a format name other than JSON and
	// TRADITIONAL, as written, which MariaDB refuses (1791).
	JSON   bool
	Format string
	// Analyze: MariaDB's ANALYZE <statement> or MySQL's EXPLAIN ANALYZE,
	// both of which run the statement.
	Analyze bool
}

// ReadExplain reads the head of an EXPLAIN, DESCRIBE or DESC of a
// statement (with EXTENDED, PARTITIONS or ANALYZE, then FORMAT [=] name),
// or of an ANALYZE [FORMAT [=] name] of one: a SELECT, WITH, a
// parenthesized SELECT, INSERT, REPLACE, UPDATE or DELETE. ok is false
// for any other text, DESCRIBE t, EXPLAIN FOR CONNECTION and ANALYZE
// TABLE among them, and for a statement that starts inside an
// executable comment (its head would not be a head without it). It
// reads the statement's first keywords only: a statement on a sharded
// schema that Classify made KindAnalyze goes through it, off the hot
// path.
func ReadExplain(sql []byte) (h ExplainHead, ok bool) {
	l := lexer{s: sql}
	var t token
	word := func(w string) bool { return t.kind == tWord && eqUpper(sql[t.ns:t.ne], w) }
	l.next(&t)
	switch {
	case word("EXPLAIN"), word("DESCRIBE"), word("DESC"):
		l.next(&t)
		switch {
		case word("EXTENDED"), word("PARTITIONS"):
			l.next(&t)
		case word("ANALYZE"):
			h.Analyze = true
			l.next(&t)
		}
	case word("ANALYZE"):
		h.Analyze = true
		l.next(&t)
	default:
		return h, false
	}
	if word("FORMAT") {
		if l.next(&t); t.isPunct('=') {
			l.next(&t)
		}
		if t.kind != tWord && t.kind != tString {
			return h, false
		}
		switch name := sql[t.ns:t.ne]; {
		case eqUpper(name, "JSON"):
			h.JSON = true
		case !eqUpper(name, "TRADITIONAL"):
			h.Format = string(name)
		}
		l.next(&t)
	}
	if l.exec || !(t.isPunct('(') || word("SELECT") || word("WITH") || word("INSERT") ||
		word("REPLACE") || word("UPDATE") || word("DELETE")) {
		return h, false
	}
	h.Stmt = t.start
	return h, true
}
