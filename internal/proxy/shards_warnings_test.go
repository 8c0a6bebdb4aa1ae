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
