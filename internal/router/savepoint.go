package router

import "strings"

// SavepointVerb is what a savepoint statement does.
type SavepointVerb uint8

const (
	SavepointSet      SavepointVerb = iota + 1 // SAVEPOINT x
	SavepointRollback                          // ROLLBACK [WORK] TO [SAVEPOINT] x
	SavepointRelease                           // RELEASE SAVEPOINT x
)

// Savepoint reads a statement Classify made KindSavepoint: what it does
// and the savepoint it names (as the server reads the identifier, quotes
// removed). ok is false for a text it does not read as one.
func Savepoint(sql []byte) (verb SavepointVerb, name string, ok bool) {
	l := lexer{s: sql}
	var t token
	word := func(w string) bool {
		return t.kind == tWord && eqUpper(sql[t.ns:t.ne], w)
	}
	l.next(&t)
	switch {
	case word("SAVEPOINT"):
		verb = SavepointSet
	case word("RELEASE"):
		verb = SavepointRelease
		if l.next(&t); !word("SAVEPOINT") {
			return 0, "", false
		}
	case word("ROLLBACK"):
		verb = SavepointRollback
		if l.next(&t); word("WORK") {
			l.next(&t)
		}
		if !word("TO") {
			return 0, "", false
		}
		if l.next(&t); !word("SAVEPOINT") {
			name, ok := savepointName(sql, &t, &l)
			return verb, name, ok
		}
	default:
		return 0, "", false
	}
	l.next(&t)
	name, ok = savepointName(sql, &t, &l)
	return verb, name, ok
}

// savepointName reads the name token t, the statement's last.
func savepointName(sql []byte, t *token, l *lexer) (string, bool) {
	var name string
	switch {
	case t.kind == tWord:
		name = string(sql[t.ns:t.ne])
	case t.kind == tQuoted && sql[t.start] == '`':
		name = strings.ReplaceAll(string(sql[t.ns:t.ne]), "``", "`")
	default:
		return "", false
	}
	if l.next(t); t.isPunct(';') {
		l.next(t)
	}
	return name, t.kind == tEOF
}

// IsUnlockTables reports whether a statement Classify made KindUnlock is
// UNLOCK TABLES (or TABLE), not MariaDB's BACKUP UNLOCK.
func IsUnlockTables(sql []byte) bool {
	l := lexer{s: sql}
	var t token
	l.next(&t)
	return t.kind == tWord && eqUpper(sql[t.ns:t.ne], "UNLOCK")
}
