package proxy_test

import (
	"database/sql"
	"fmt"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/sharding"
	"github.com/shardgate/shardgate/internal/testenv"
)

// charsetEnv is a proxy over two shards with schema ocs, where person is
// sharded by name, a utf8mb4_general_ci string (4 sub-tables), and word
// by name under utf8mb4_unicode_ci; and a reference server holding both.
// subTable is where a utf8mb4 string key of person goes.
func charsetEnv(t *testing.T) (p0, p1 *sql.DB, ref, got difftest.Target, proxyDB func(params string) *sql.DB, subTable func(coll, key string) int) {
	t.Helper()
	const db = "ocs"
	srvs := testenv.StartN(t, 2, testenv.Options{})
	s0, s1, rs := testenv.Shared(t), srvs[0], srvs[1]
	person := "(name VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL PRIMARY KEY, n INT)"
	word := "(name VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL PRIMARY KEY, n INT)"
	lword := "(name VARCHAR(20) CHARACTER SET latin1 COLLATE latin1_swedish_ci NOT NULL PRIMARY KEY, n INT)"
	for _, s := range []*testenv.Server{s0, s1, rs} {
		s.Exec(t, "DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db+" CHARACTER SET utf8mb4")
	}
	rs.Exec(t, "CREATE TABLE ocs.person "+person, "CREATE TABLE ocs.word "+word, "CREATE TABLE ocs.lword "+lword)
	for i, s := range []*testenv.Server{s0, s0, s1, s1} {
		s.Exec(t, fmt.Sprintf("CREATE TABLE ocs.person_%04d %s", i, person), fmt.Sprintf("CREATE TABLE ocs.word_%04d %s", i, word),
			fmt.Sprintf("CREATE TABLE ocs.lword_%04d %s", i, lword))
	}
	cfg := parseConfig(t, twoShardYAML(db, s0.Addr, s1.Addr, 16, `    tables:
      - {name: person, shard_key: name, rule: hash, shards: [s0, s1], sub_tables: 2}
      - {name: word, shard_key: name, rule: hash, shards: [s0, s1], sub_tables: 2}
      - {name: lword, shard_key: name, rule: hash, shards: [s0, s1], sub_tables: 2}
`, ""), "charset.yaml")
	p := startProxy(t, cfg)
	h, err := sharding.NewHash(4)
	if err != nil {
		t.Fatal(err)
	}
	subTable = func(collName, key string) int {
		t.Helper()
		coll, err := sharding.LookupCollation(collName)
		if err != nil {
			t.Fatal(err)
		}
		v, err := sharding.Convert(sharding.ColumnType{Class: sharding.ClassString, Collation: coll}, sharding.StringLit(key))
		if err != nil {
			t.Fatal(err)
		}
		i, err := h.Index(v)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	ref = difftest.ServerTarget("reference", rs, db)
	got = difftest.Target{Name: "shardgate", Addr: p.Addrs()[0], User: appUser, Password: appPass, Database: db}
	return openDB(t, s0.DSN(db)), openDB(t, s1.DSN(db)), ref, got, func(params string) *sql.DB {
		return openDB(t, proxyDSN(p, appUser, appPass, db, params))
	}, subTable
}

// TestStringKeysReadInTheClientCharset: a string key written by a client
// whose character set is latin1 (SET NAMES latin1, or latin1 at the
// handshake) is read in latin1 before it is hashed: 'Zoë' sent as latin1
// bytes finds and places the row where the utf8mb4 'Zoë' does, and latin1
// bytes that happen to be UTF-8 ('Ã«', C3 AB) are the two characters they
// are in latin1, not 'ë'. Introducers (_latin1, _utf8mb4, _binary, X'…',
// N'…') and prepared statements' string parameters likewise. Before, the
// latin1 'Zoë' was refused in an INSERT (1235) and 'Ã«' was stored on the
// sub-table of 'ë', where a utf8mb4 client looking for 'Ã«' did not find
// it.
func TestStringKeysReadInTheClientCharset(t *testing.T) {
	p0, p1, _, _, proxyDB, subTable := charsetEnv(t)
	direct := []*sql.DB{p0, p0, p1, p1}
	// rowOn checks that the row with key (as utf8mb4) is on its sub-table
	// of table and only there.
	rowOn := func(table, coll, key string, n int) {
		t.Helper()
		want := subTable(coll, key)
		for i, d := range direct {
			got := queryString(t, d, fmt.Sprintf("SELECT GROUP_CONCAT(n) FROM %s_%04d WHERE name = ?", table, i), key)
			if i == want && got != fmt.Sprint(n) || i != want && got != "" {
				t.Errorf("%s %q: n %q in %s_%04d; want %d there, and only in %s_%04d", table, key, got, table, i, n, table, want)
			}
		}
	}
	utf8 := proxyDB("")
	for name, params := range map[string]string{"SET NAMES latin1": "charset=latin1", "latin1 at the handshake": "collation=latin1_swedish_ci"} {
		t.Run(name, func(t *testing.T) {
			mustExec(t, utf8, "DELETE FROM person", "DELETE FROM word", "DELETE FROM lword")
			c := oneConn(t, proxyDB(params))
			if got := queryString(t, c, "SELECT @@character_set_client"); got != "latin1" {
				t.Fatalf("character_set_client %q", got)
			}
			// Text: latin1 bytes, and latin1 bytes that are also UTF-8.
			mustExec(t, c, "INSERT INTO person VALUES ('Zo\xc3\xab', 2)")
			rowOn("person", "utf8mb4_general_ci", "ZoÃ«", 2)
			mustExec(t, c, "INSERT INTO person VALUES ('Zo\xeb', 1)", "INSERT INTO word VALUES ('Stra\xdfe', 3)")
			rowOn("person", "utf8mb4_general_ci", "Zoë", 1)
			rowOn("word", "utf8mb4_unicode_ci", "Straße", 3)
			mustExec(t, c, "INSERT INTO lword VALUES ('\xc5sa', 6), (X'5A6FC3AB', 7)")
			rowOn("lword", "latin1_swedish_ci", "Åsa", 6)
			rowOn("lword", "latin1_swedish_ci", "ZoÃ«", 7)
			for q, want := range map[string]string{
				"SELECT n FROM person WHERE name = 'ZO\xcb'":             "1",
				"SELECT n FROM person WHERE name = 'Zo\xc3\xab'":         "2",
				"SELECT n FROM person WHERE name = _utf8mb4'zo\xc3\xab'": "1",
				"SELECT n FROM person WHERE name = _latin1'zo\xeb'":      "1",
				"SELECT n FROM person WHERE name = _binary'Zo\xc3\xab'":  "1",
				"SELECT n FROM person WHERE name = X'5A6FC3AB'":          "1",
				"SELECT n FROM person WHERE name = N'zo\xc3\xab'":        "1",
				"SELECT n FROM word WHERE name = 'STRASSE'":              "3",
			} {
				if got := queryString(t, c, q); got != want {
					t.Errorf("%q: %q, want %s", q, got, want)
				}
			}
			if _, err := c.ExecContext(t.Context(), "INSERT INTO person VALUES ('ZO\xcb', 9)"); mysqlErrCode(err) != 1062 {
				t.Errorf("INSERT of 'ZOË' after 'Zoë': %v, want a duplicate key (1062) from the same sub-table", err)
			}
			// A utf8mb4 client finds both where they are.
			for key, want := range map[string]string{"zoë": "1", "ZoÃ«": "2"} {
				if got := queryString(t, utf8, "SELECT n FROM person WHERE name = '"+key+"'"); got != want {
					t.Errorf("utf8mb4 client, name = %q: %q, want %s", key, got, want)
				}
			}
			// Prepared: string parameters are latin1 too.
			if _, err := c.ExecContext(t.Context(), "INSERT INTO person VALUES (?, ?)", "J\xf6rg", 4); err != nil {
				t.Fatal(err)
			}
			rowOn("person", "utf8mb4_general_ci", "Jörg", 4)
			for key, want := range map[string]string{"j\xf6rg": "4", "zo\xeb": "1", "Zo\xc3\xab": "2"} {
				if got := queryString(t, c, "SELECT n FROM person WHERE name = ?", key); got != want {
					t.Errorf("prepared, name = %q: %q, want %s", key, got, want)
				}
			}
		})
	}
}

// TestStringKeysInTheClientCharsetAsOneServer compares, statement by
// statement, a latin1 session's answers through the proxy with the
// reference's: text and prepared, introducers, case and accents under
// the keys' collations, string and BLOB parameters.
func TestStringKeysInTheClientCharsetAsOneServer(t *testing.T) {
	_, _, ref, got, _, _ := charsetEnv(t)
	rc, pc := metaDial(t, ref), metaDial(t, got)
	stmts := []string{
		"SET NAMES latin1",
		"INSERT INTO person VALUES ('Zo\xeb', 1), ('\xdcnal', 2), ('Stra\xdfe', 3), ('strasse', 4), ('Zo\xc3\xab', 5)",
		"INSERT INTO word VALUES ('Stra\xdfe', 1), ('\xc9clair', 2), ('na\xefve', 3)",
		"INSERT INTO lword VALUES ('Zo\xeb', 1), ('Zo\xc3\xab', 2), ('\xc5sa', 3)",
		"SELECT n FROM lword WHERE name = 'zo\xcb'", "SELECT n FROM lword WHERE name = 'Zo\xc3\xab'", "SELECT n FROM lword WHERE name = X'7A6FEB'",
		"SELECT n FROM lword WHERE name = _utf8mb4'\xc3\x85SA'", "SELECT n FROM lword WHERE name = _binary'\xe5sa'",
		"SELECT n FROM person WHERE name = 'zo\xeb'", "SELECT n FROM person WHERE name = 'ZO\xcb  '",
		"SELECT n FROM person WHERE name = 'Zo\xc3\xab'", "SELECT n FROM person WHERE name = '\xfcnal'",
		"SELECT n FROM person WHERE name IN ('STRA\xdfE', 'STRASSE') ORDER BY n",
		"SELECT n FROM person WHERE name = _latin1'ZO\xcb'", "SELECT n FROM person WHERE name = _utf8mb4'\xc3\x9cNAL'",
		"SELECT n FROM person WHERE name = _binary'zo\xc3\xab'", "SELECT n FROM person WHERE name = X'7A6FC3AB'",
		"SELECT n FROM person WHERE name = N'\xc3\xbcnal'",
		"SELECT n FROM word WHERE name = 'STRASSE'", "SELECT n FROM word WHERE name = 'eclair'", "SELECT n FROM word WHERE name = 'NA\xcfVE'",
		"UPDATE person SET n = n + 10 WHERE name = 'zo\xeb'", "SELECT name, n FROM person WHERE name = 'Zo\xeb'",
		"DELETE FROM person WHERE name = '\xdcNAL'", "SELECT name, n FROM person ORDER BY n",
		"INSERT INTO person VALUES ('zo\xeb', 9)",
		"SET NAMES utf8mb4", "SELECT n FROM person WHERE name = 'ZoÃ«'", "SELECT n FROM person WHERE name = _latin1'ZO\xcb'",
		"SELECT n FROM lword WHERE name = 'zoë'", "SELECT n FROM lword WHERE name = 'ZoÃ«'", "SELECT n FROM lword WHERE name = X'7A6FC3AB'",
		"SELECT n FROM lword WHERE name = '中'",
	}
	for _, q := range stmts {
		ra, err := rc.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		ga, err := pc.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		if d := difftest.Diff(ra, ga, true); d != "" {
			t.Errorf("%q:\n%s", q, d)
		}
	}
	metaQuery(t, rc, "SET NAMES latin1")
	metaQuery(t, pc, "SET NAMES latin1")
	q := "SELECT n FROM person WHERE name = ?"
	rs, _, err := rc.Prepare(q)
	if err != nil || rs == nil {
		t.Fatal(err)
	}
	gs, _, err := pc.Prepare(q)
	if err != nil || gs == nil {
		t.Fatal(err)
	}
	for _, arg := range []any{"zo\xeb", "ZO\xcb", "Zo\xc3\xab", []byte("zo\xc3\xab"), []byte("ZoÃ«"), "stra\xdfe", "\xfcnal"} {
		ra, err := rs.Execute(arg)
		if err != nil {
			t.Fatal(err)
		}
		ga, err := gs.Execute(arg)
		if err != nil {
			t.Fatal(err)
		}
		if d := difftest.Diff(ra, ga, true); d != "" {
			t.Errorf("EXECUTE with %q (%T):\n%s", arg, arg, d)
		}
	}
}
