package router

import "testing"

func TestSavepoint(t *testing.T) {
	for _, c := range []struct {
		sql  string
		verb SavepointVerb
		name string
		ok   bool
	}{
		{"SAVEPOINT sp", SavepointSet, "sp", true},
		{"savepoint `a b`;", SavepointSet, "a b", true},
		{"SAVEPOINT `x``y`", SavepointSet, "x`y", true},
		{"ROLLBACK TO SAVEPOINT sp", SavepointRollback, "sp", true},
		{"/* c */ rollback work to sp", SavepointRollback, "sp", true},
		{"ROLLBACK TO `sp`", SavepointRollback, "sp", true},
		{"RELEASE SAVEPOINT sp2", SavepointRelease, "sp2", true},
		{"RELEASE sp", 0, "", false},
		{"SAVEPOINT sp extra", SavepointSet, "", false},
		{"SAVEPOINT 'sp'", SavepointSet, "", false},
		{"ROLLBACK", 0, "", false},
	} {
		verb, name, ok := Savepoint([]byte(c.sql))
		if ok != c.ok || ok && (verb != c.verb || name != c.name) {
			t.Errorf("Savepoint(%q) = %v, %q, %v; want %v, %q, %v", c.sql, verb, name, ok, c.verb, c.name, c.ok)
		}
	}
}

func TestIsUnlockTables(t *testing.T) {
	for sql, want := range map[string]bool{"UNLOCK TABLES": true, "/* x */ unlock table": true, "BACKUP UNLOCK": false} {
		if got := IsUnlockTables([]byte(sql)); got != want {
			t.Errorf("IsUnlockTables(%q) = %v, want %v", sql, got, want)
		}
	}
}
