package router

import (
	"strings"
	"testing"
)

// TestDigestEqual: statements that differ only in literal values,
// whitespace, keyword case, comments or the length of a list of
// literals share a digest.
func TestDigestEqual(t *testing.T) {
	groups := [][]string{
		{"SELECT c FROM sbtest1 WHERE id=5000", "select c from sbtest1 where id = 42", "SELECT  c\n FROM sbtest1 /* x */ WHERE id=-7 -- tail\n", "SELECT c FROM sbtest1 WHERE id=?", "# lead\nSELECT c FROM sbtest1 WHERE id = 1.5e-3;", "SELECT c FROM sbtest1 WHERE id='a''b\\'c'", "SELECT c FROM sbtest1 WHERE id=0x2A", "SELECT c FROM sbtest1 WHERE id=X'2a'", "SELECT c FROM sbtest1 WHERE id=b'01'", "SELECT c FROM sbtest1 WHERE id=N'x'", "SELECT c FROM sbtest1 WHERE id=_utf8mb4'x'", "SELECT c FROM sbtest1 WHERE id=.5", "SELECT c FROM sbtest1 WHERE id=- 5", "SELECT c FROM sbtest1 WHERE id=0b11"},
		{"SELECT * FROM t WHERE a IN (1,2)", "SELECT * FROM t WHERE a IN (1, 2, 3, 4)", "select * from t where a in ('x','y',?)", "SELECT * FROM t WHERE a IN (-1, +2.5)"},
		{"INSERT INTO t (a, b) VALUES (1, 'x')", "INSERT INTO t (a, b) VALUES (2, 'y'), (3, 'z')", "insert into t (a,b) values (?,?),(?,?),(?,?)", "INSERT INTO t (a, b) VALUES (1, 'x'), (NOW(), (SELECT 1))"},
		{"INSERT INTO t (a, b) VALUES (1, NOW())", "INSERT INTO t (a, b) VALUES (2, NOW()), (3, NOW())"},
		{"SELECT a - 1 FROM t", "SELECT a - 2 FROM t", "SELECT a-3 FROM t"},
		{"SELECT /*+ MAX_EXECUTION_TIME(100) */ a FROM t", "select /*+  MAX_EXECUTION_TIME(100)*/ a from t"},
		{"SELECT /*!50000 SQL_NO_CACHE */ a FROM t WHERE x = 1", "SELECT SQL_NO_CACHE a FROM t WHERE x = 2"},
		{"SELECT 1", "SELECT 2;", "/* c */ SELECT 'x'"},
		// A sign after a keyword that is no operand there is the literal's.
		{"SELECT x FROM t WHERE value = -1", "SELECT x FROM t WHERE value = 2", "SELECT x FROM t WHERE value=+3"},
		{"INSERT INTO t VALUES (-1)", "INSERT INTO t VALUES (2)", "INSERT INTO t VALUES (+3)"},
		{"CREATE TABLE t (a INT DEFAULT -1)", "CREATE TABLE t (a INT DEFAULT 1)"},
		{"SELECT ALL -1", "SELECT ALL 2"},
		{"DO -1", "DO 1"},
		// shardgate's hints route; the statement's shape is the same.
		{"SELECT x FROM t", "SELECT /*+ shardgate:shard=s1 */ x FROM t", "SELECT /*+ SHARDGATE:SHARD=s2 */ x FROM t",
			"SELECT /* shardgate:shard=s3 */ x FROM t", "/*+ shardgate:primary */ SELECT x FROM t", "SELECT /*+shardgate:explain*/ x FROM t"},
		{"SELECT /*+ A */ /*+ B(t) */ x FROM t", "SELECT /*+ A */ /* c */ -- c\n /*+ B(t) */ x FROM t",
			"SELECT /*+ A */ /*+ shardgate:shard=s1 */ /*+ B(t) */ x FROM t"},
	}
	for _, g := range groups {
		want := Classify([]byte(g[0])).Digest
		for _, q := range g[1:] {
			if got := Classify([]byte(q)).Digest; got != want {
				t.Errorf("digest of %q (%s) differs from %q (%s)", q, DigestText([]byte(q)), g[0], DigestText([]byte(g[0])))
			}
		}
	}
}

// TestDigestDiffer: statements of different shapes get different
// digests.
func TestDigestDiffer(t *testing.T) {
	qs := []string{
		"SELECT c FROM sbtest1 WHERE id=1",
		"SELECT c FROM sbtest2 WHERE id=1",
		"SELECT d FROM sbtest1 WHERE id=1",
		"SELECT c FROM sbtest1 WHERE id>1",
		"SELECT c FROM sbtest1 WHERE id>=1",
		"SELECT c FROM sbtest1 WHERE id=1 AND k=2",
		"SELECT c FROM sbtest1 WHERE id=a",
		"SELECT c FROM sbtest1 WHERE id=`a`",
		"SELECT c FROM sbtest1 WHERE id=@a",
		"SELECT c FROM sbtest1 WHERE id=@@a",
		"SELECT c FROM sbtest1",
		"SELECT * FROM t WHERE a IN (1)",
		"SELECT * FROM t WHERE a IN (1, 2)",
		"SELECT * FROM t WHERE a IN (1, b)",
		"SELECT * FROM t WHERE a IN (b, 1)",
		"SELECT a - 1 FROM t",
		"SELECT a, 1 FROM t",
		"SELECT t.5 FROM t",
		"SELECT t.6 FROM t",
		"SELECT /*+ BKA(t) */ a FROM t",
		"SELECT a FROM t",
		"SELECT /*+ BKA(t) */ /*+ NO_ICP(t) */ a FROM t",
		"SELECT /*+ NO_ICP(t) */ a FROM t",
		"SELECT /*+ NO_ICP(t) */ a FROM t /*+ BKA(t) */ WHERE x",
		"SELECT /*+ BKA(t) NO_ICP(t) */ a FROM t WHERE x",
		"SELECT a FROM t WHERE x",
		// A column named like a keyword is an operand: the sign after it
		// is an operator.
		"UPDATE kv SET value = value + 1",
		"UPDATE kv SET value = value - 1",
		"UPDATE kv SET value = value * 1",
		"SELECT t.value - 1 FROM t",
		"SELECT t.value + 1 FROM t",
		"SELECT x FROM t WHERE any - 1 > 0",
		"SELECT x FROM t WHERE any + 1 > 0",
		"SELECT value, some - 1 FROM t",
		"SELECT value, some + 1 FROM t",
		"SELECT 1; SELECT 2",
		"INSERT INTO t VALUES (1), (2) ON DUPLICATE KEY UPDATE a = VALUES(a)",
		"INSERT INTO t VALUES (1)",
		"UPDATE t SET a = 1 WHERE id = 2",
		"DELETE FROM t WHERE id = 2",
	}
	seen := map[uint64]string{}
	for _, q := range qs {
		d := Classify([]byte(q)).Digest
		if prev, ok := seen[d]; ok {
			t.Errorf("%q and %q share a digest (%s | %s)", q, prev, DigestText([]byte(q)), DigestText([]byte(prev)))
		}
		seen[d] = q
	}
}

func TestDigestText(t *testing.T) {
	for _, tc := range []struct{ sql, want string }{
		{"select c from sbtest1 where id=5000", "SELECT c FROM sbtest1 WHERE id = ?"},
		{"SELECT c FROM sbtest1 WHERE id=?", "SELECT c FROM sbtest1 WHERE id = ?"},
		{"SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN 1 AND 100 ORDER BY c", "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c"},
		{"select * from t where a in (1,2,3) and b in ('x')", "SELECT * FROM t WHERE a IN (...) AND b IN (?)"},
		{"INSERT INTO sbtest1 (id, k, c, pad) VALUES (0, 5015, 'a', 'b'), (1, 2, 'c', 'd')", "INSERT INTO sbtest1 (id, k, c, pad) VALUES (...)"},
		{"INSERT INTO t(a,b) VALUES (1, NOW()),(2,NOW())", "INSERT INTO t(a, b) VALUES (?, NOW())"},
		{"UPDATE sbtest1 SET k=k+1 WHERE id=-3", "UPDATE sbtest1 SET k = k + ? WHERE id = ?"},
		{"SELECT count(*) FROM `t` WHERE a>=1 AND b<>'x' /* c */", "SELECT count(*) FROM `t` WHERE a >= ? AND b <> ?"},
		{"SELECT /*+ MAX_EXECUTION_TIME(1000) */ a.b, @v, @@session.x FROM a", "SELECT /*+ MAX_EXECUTION_TIME(1000) */ a.b, @v, @@session.x FROM a"},
		{"SELECT SLEEP(0.2);", "SELECT SLEEP(?)"},
		{"SELECT 1; SELECT 'x'", "SELECT ?; SELECT ?"},
		{"UPDATE kv SET value = value - 1", "UPDATE kv SET value = value - ?"},
		{"UPDATE kv SET value=VALUE+1 WHERE value=-1", "UPDATE kv SET value = VALUE + ? WHERE value = ?"},
		{"CREATE TABLE t (a INT DEFAULT -1)", "CREATE TABLE t (a INT DEFAULT ?)"},
		{"SELECT /*+ A */ /* c */ /*+ B */ x FROM t", "SELECT /*+ A */ /*+ B */ x FROM t"},
		{"SELECT /*+ shardgate:shard=s1 */ /*+ BKA(t) */ x FROM t", "SELECT /*+ BKA(t) */ x FROM t"},
	} {
		if got := DigestText([]byte(tc.sql)); got != tc.want {
			t.Errorf("DigestText(%q) = %q, want %q", tc.sql, got, tc.want)
		}
	}
}

// TestDigestTextMatches: equal texts for equal digests, over the
// classifier's test statements.
func TestDigestTextMatches(t *testing.T) {
	byDigest := map[uint64]string{}
	byText := map[string]uint64{}
	for _, tc := range classifyCases {
		d := Classify([]byte(tc.sql)).Digest
		txt := DigestText([]byte(tc.sql))
		if prev, ok := byText[txt]; ok && prev != d && !strings.Contains(txt, "`") {
			t.Errorf("text %q from two digests", txt)
		}
		byText[txt] = d
		byDigest[d] = txt
	}
}
