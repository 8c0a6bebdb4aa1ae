package proxy_test

import (
	"database/sql"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestShardedWarningCountAfterMultiShardRead: after a read over several
// shards whose parts left warnings, @@warning_count, @@error_count and
// SHOW COUNT(*) WARNINGS count the warnings SHOW WARNINGS lists for the
// statement, those of every part, as one server holding every row counts
// them; before, @@warning_count read one backend connection's count (or
// none). Each read of the diagnostics comes right after the statement and
// after the reads before it (reading them clears nothing).
func TestShardedWarningCountAfterMultiShardRead(t *testing.T) {
	_, _, px, ref := startRefPair(t, "warn_sharded", "",
		"{name: t, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: 2}")
	for _, c := range []*sql.Conn{ref, px} {
		mustExec(t, c, "CREATE TABLE t (id INT NOT NULL PRIMARY KEY, v VARCHAR(10) NOT NULL)",
			"INSERT INTO t VALUES (1, '1x'), (2, '2x'), (3, '3'), (4, '4x'), (5, '5'), (6, '6x'), (7, '7x'), (8, '8')")
	}
	reads := []struct {
		sql string
		// asReference: the shards evaluate what one server does, so the
		// warnings are the reference's; a grouped read's shards evaluate
		// the grouping expression their own number of times.
		asReference bool
	}{
		{"SELECT id, CAST(v AS SIGNED) FROM t", true},
		{"SELECT id, CAST(v AS SIGNED) FROM t ORDER BY id", true},
		{"SELECT SUM(CAST(v AS SIGNED)) FROM t", true},
		{"SELECT id, CAST(v AS SIGNED) FROM t WHERE id IN (1, 2, 4, 6, 7) ORDER BY id LIMIT 10", true},
		{"SELECT id, v FROM t", true}, // no warnings
		{"SELECT CAST(v AS SIGNED) % 2 AS k, COUNT(*) FROM t GROUP BY k ORDER BY k", false},
	}
	diagnostics := []string{
		"SELECT @@warning_count",
		"SELECT @@session.warning_count, @@error_count",
		"SHOW COUNT(*) WARNINGS",
		"SHOW WARNINGS",
		"SELECT @@warning_count",
		"SHOW COUNT(*) ERRORS",
	}
	for _, r := range reads {
		read := r.sql
		want, got := stepAnswer(ref, qa(read)), stepAnswer(px, qa(read))
		if !sameRowSet(got, want) {
			t.Fatalf("%s: shardgate %q, the reference %q", read, got, want)
		}
		listed := -1
		for _, d := range diagnostics {
			want, got := stepAnswer(ref, qa(d)), stepAnswer(px, qa(d))
			if r.asReference && !sameRowSet(got, want) {
				t.Fatalf("after %s, %s: shardgate %q, the reference %q", read, d, got, want)
			}
			if d == "SHOW WARNINGS" {
				listed = strings.Count(got, "|")
			}
		}
		if listed < 1 && read != "SELECT id, v FROM t" {
			t.Fatalf("after %s: SHOW WARNINGS listed %d: the read tests nothing", read, listed)
		}
		// The count is what SHOW WARNINGS lists through shardgate, also
		// inside a transaction, where the session holds the shards'
		// connections.
		if got := queryRowOf(t, px, read, "SELECT @@warning_count"); got != strconv.Itoa(listed) {
			t.Fatalf("after %s: @@warning_count %s, SHOW WARNINGS listed %d", read, got, listed)
		}
		mustExec(t, px, "BEGIN")
		if got := queryRowOf(t, px, read, "SELECT @@warning_count"); got != strconv.Itoa(listed) {
			t.Fatalf("in a transaction, after %s: @@warning_count %s, SHOW WARNINGS listed %d", read, got, listed)
		}
		mustExec(t, px, "COMMIT")
	}
	// The columns are the server's.
	const cols = "SELECT @@warning_count, @@session.error_count"
	stepAnswer(ref, qa(reads[0].sql))
	stepAnswer(px, qa(reads[0].sql))
	if got, want := columnTypes(t, px, cols), columnTypes(t, ref, cols); got != want {
		t.Fatalf("%s: columns %s, the server's %s", cols, got, want)
	}
}

// sameRowSet compares two answers of stepAnswer as sets of rows: the parts'
// rows and warnings come in shard order, one server's in its own.
func sameRowSet(a, b string) bool {
	split := func(s string) []string {
		head, rows, _ := strings.Cut(s, ": ")
		r := strings.Split(rows, "|")
		slices.Sort(r)
		return append(r, head)
	}
	return slices.Equal(split(a), split(b))
}

// queryRowOf runs first, then returns the single value of then.
func queryRowOf(t *testing.T, c *sql.Conn, first, then string) string {
	t.Helper()
	stepAnswer(c, qa(first))
	return queryString(t, c, then)
}

// diagnosticsReads read the previous statement's diagnostics, and leave
// them in place.
var diagnosticsReads = []string{
	"SHOW WARNINGS",
	"SELECT @@warning_count, @@error_count",
	"SHOW COUNT(*) WARNINGS",
	"SHOW ERRORS",
	"SHOW COUNT(*) ERRORS",
	"SHOW WARNINGS",
}

// TestShardedDiagnosticsAfterStatementsReadingNoTable: MariaDB leaves a
// statement's diagnostics in place through the statements after it that
// read no table and raise nothing (SELECT 1, SELECT @@warning_count, SET,
// DO, BEGIN, COMMIT…), and through SHOW WARNINGS and the like; a
// statement that raises a condition, or that reads a table, replaces
// them. After a statement answered in parts (a merge, a scatter, an
// evaluation) or on another shard than the next statement's, shardgate
// answers every read of them as the reference does. Before, such a
// statement forgot the parts' warnings, and the reads then got one
// backend connection's (a part's, or none).
func TestShardedDiagnosticsAfterStatementsReadingNoTable(t *testing.T) {
	_, _, px, ref := startRefPair(t, "warn_keep", "",
		"{name: t, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: 2}")
	for _, c := range []*sql.Conn{ref, px} {
		mustExec(t, c, "CREATE TABLE t (id INT NOT NULL PRIMARY KEY, v VARCHAR(10) NOT NULL)",
			"INSERT INTO t VALUES (1, '1x'), (2, '2x'), (3, '3'), (4, '4x'), (5, '5'), (6, '6x'), (7, '7x'), (8, '8')")
	}
	raising := []string{
		"SELECT id, CAST(v AS SIGNED) FROM t ORDER BY id",                                     // a merge
		"SELECT id, CAST(v AS SIGNED) FROM t",                                                 // a scatter
		"SELECT d.id, d.c FROM (SELECT id, CAST(v AS SIGNED) c FROM t ORDER BY id LIMIT 5) d", // an evaluation
		"SELECT CAST(v AS SIGNED) FROM t WHERE id = 1",                                        // one sub-table on s1; SELECT 1 runs on s0
		"SELECT id + 'x' FROM t WHERE id IN (1, 2, 3, 4) ORDER BY id",                         // the same warning from each row
		"SELECT 1/0",                      // one connection, no table
		"SELECT id, v FROM t ORDER BY id", // no warnings: the diagnostics are none
	}
	between := [][]string{
		nil,
		{"SELECT 1"},
		{"SELECT 1 FROM DUAL", "SELECT @@warning_count"},
		{"SHOW WARNINGS", "DO 1", "SET @x = 1"},
		{"SET NAMES utf8mb4", "SELECT 'a' = 'A'"},
		{"BEGIN", "SELECT 2", "COMMIT"},
		{"SELECT 1/0"},                   // raises its own: replaces them
		{"SELECT nosuch()"},              // an error replaces them
		{"SELECT v FROM t WHERE id = 3"}, // reads a table: replaces them with none
		{"SELECT v FROM t WHERE id = 6"}, // the same on the other shard
	}
	for _, r := range raising {
		for _, b := range between {
			steps := append(append([]string{r}, b...), diagnosticsReads...)
			for i, q := range steps {
				want, got := stepAnswer(ref, qa(q)), stepAnswer(px, qa(q))
				if !sameRowSet(got, want) {
					t.Fatalf("%s, step %d %s: shardgate %q, the reference %q", strings.Join(steps, "; "), i+1, q, got, want)
				}
			}
		}
	}
	t.Run("LIMIT", func(t *testing.T) {
		// The same warning from every row: which rows a LIMIT keeps does
		// not depend on the order the parts raised them.
		steps := []string{"SELECT id, id + 'x' FROM t ORDER BY id", "SELECT 1",
			"SHOW WARNINGS LIMIT 2", "SHOW WARNINGS LIMIT 1, 3", "SHOW WARNINGS LIMIT 3 OFFSET 6", "SHOW WARNINGS LIMIT 0",
			"SHOW ERRORS LIMIT 1", "SHOW COUNT(*) WARNINGS"}
		sameAnswersInTurn(t, ref, px, steps)
	})
	t.Run("in a transaction", func(t *testing.T) {
		sameAnswersInTurn(t, ref, px, []string{"BEGIN", raising[0], "SELECT 1", "SHOW WARNINGS",
			"SELECT @@warning_count", "COMMIT", "SHOW WARNINGS", "SELECT @@warning_count"})
	})
	t.Run("a refusal", func(t *testing.T) {
		// An error shardgate answers with is the diagnostics, as one
		// server's error is; a statement reading no table keeps it.
		stepAnswer(px, qa(raising[0]))
		if got := stepAnswer(px, xa("UPDATE t SET id = 9 WHERE id = 1")); got != "error 1235" {
			t.Fatalf("UPDATE of the shard key: %s, want error 1235", got)
		}
		for _, q := range []string{"SHOW ERRORS", "SELECT 1", "SHOW WARNINGS"} {
			if got := stepAnswer(px, qa(q)); q != "SELECT 1" && (!strings.HasPrefix(got, "Level,Code,Message: Error 1235 ") || strings.Count(got, "|") != 1) {
				t.Fatalf("%s after the refusal: %q, want the refusal alone", q, got)
			}
		}
	})
	t.Run("GET DIAGNOSTICS", func(t *testing.T) {
		// The session holds the parts' diagnostics, and no connection
		// does: refused (1235), and, as any error the client gets, the
		// refusal is then the diagnostics.
		stepAnswer(px, qa(raising[0]))
		got := stepAnswer(px, xa("GET DIAGNOSTICS @n = NUMBER"))
		if got != "error 1235" {
			t.Fatalf("GET DIAGNOSTICS after a merge: %s, want error 1235", got)
		}
		if got := stepAnswer(px, qa("SHOW WARNINGS")); !strings.HasPrefix(got, "Level,Code,Message: Error 1235 ") || strings.Count(got, "|") != 1 {
			t.Fatalf("SHOW WARNINGS after the refusal: %q, want the refusal alone", got)
		}
		if got := stepAnswer(px, qa("SELECT @@warning_count, @@error_count")); got != "@@warning_count,@@error_count: 1 1 |" {
			t.Fatalf("@@warning_count, @@error_count after the refusal: %q, want 1 1", got)
		}
	})
}

// sameAnswersInTurn runs steps on the reference and through shardgate,
// in turn, and fails at the first whose answers (stepAnswer, its rows as
// a set) differ.
func sameAnswersInTurn(t *testing.T, ref, px *sql.Conn, steps []string) {
	t.Helper()
	for i, q := range steps {
		if want, got := stepAnswer(ref, qa(q)), stepAnswer(px, qa(q)); !sameRowSet(got, want) {
			t.Fatalf("step %d, %s: shardgate %q, the reference %q", i+1, q, got, want)
		}
	}
}
