package router

// This file finds the databases a statement names: the classifier sets
// Stmt.Schemas, a 64-bit filter of the names it saw qualify another name
// (db.t, `db`.`t`, db.t.col) and, in SHOW statements, every name (SHOW
// TABLES FROM db, SHOW COLUMNS FROM t IN db). A session compares it with
// the filter of the sharded schemas' names (SchemaBits): a statement whose
// bits miss every schema names none of them, and costs nothing more; one
// whose bits meet a schema's is read again by Qualifiers, which finds the
// names exactly.

// SchemaBits is the filter of the database name: the bits a statement
// naming it sets in Stmt.Schemas. The filter ignores ASCII case (the
// exact comparison is the caller's).
func SchemaBits(name string) uint64 {
	h := uint32(hashOffset)
	for i := 0; i < len(name); i++ {
		h = hashByte(h, name[i])
	}
	return hashBits(h)
}

// hashBits is the two bits of a name whose lexer hash is h.
func hashBits(h uint32) uint64 { return 1<<(h&63) | 1<<(h>>6&63) }

// noteSchema adds the name token p, which qualifies another name or is
// a SHOW statement's, to the statement's filter. A word of digits alone
// is a number (1.5), never an unquoted name.
func (c *classifier) noteSchema(p *token) {
	switch p.kind {
	case tQuoted:
	case tWord:
		if allDigits(c.lx.s[p.ns:p.ne]) {
			return
		}
	default:
		return
	}
	c.st.Schemas |= hashBits(p.h)
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c-'0' > 9 {
			return false
		}
	}
	return true
}

// Qualifiers calls fn with each name of sql that qualifies another name
// (db in db.t, `db`.t, db.t.col, as written inside the quotes), and, when
// sql is a SHOW statement, each name right after FROM or IN (SHOW TABLES
// FROM db, SHOW COLUMNS FROM t IN db), in text order, until fn returns
// false. Table aliases qualify column names too (o.id): the names are
// candidates, which the caller checks. It lexes as Classify does and
// allocates nothing.
func Qualifiers(sql []byte, fn func(name []byte) bool) {
	l := lexer{s: sql}
	var prev, t token
	show, first := false, true
	for {
		l.next(&t)
		if t.kind == tEOF {
			return
		}
		if first {
			show = t.kind == tWord && eqUpper(sql[t.ns:t.ne], "SHOW")
			first = false
		}
		switch {
		case t.isPunct('.') && (prev.kind == tWord && !allDigits(sql[prev.ns:prev.ne]) || prev.kind == tQuoted):
			if !fn(sql[prev.ns:prev.ne]) {
				return
			}
		case t.isPunct(';'):
			first = true
		case show && (t.kind == tWord || t.kind == tQuoted) && prev.kind == tWord &&
			(eqUpper(sql[prev.ns:prev.ne], "FROM") || eqUpper(sql[prev.ns:prev.ne], "IN")):
			if !fn(sql[t.ns:t.ne]) {
				return
			}
		}
		prev = t
	}
}
