package proxy_test

import (
	"database/sql"
	"fmt"
	"testing"

	"github.com/shardgate/shardgate/internal/sharding"
	"github.com/shardgate/shardgate/internal/testenv"
)

// TestUnicodeCIStringKeyRoutesAsTheServerCompares: a table sharded on a
// utf8mb4_unicode_ci column over two shards. Spellings MariaDB calls equal
// under that collation ('Straße' and 'STRASSE ', 'Éclair' and 'eclair')
// reach the one sub-table holding the row: a duplicate key is reported,
// the point read finds the row, and the row lies where the hash of the
// collation's weight string says.
func TestUnicodeCIStringKeyRoutesAsTheServerCompares(t *testing.T) {
	const db = "sucoll"
	s0, s1 := testenv.Shared(t), testenv.Start(t, testenv.Options{})
	shards := []*testenv.Server{s0, s0, s1, s1}
	for _, s := range []*testenv.Server{s0, s1} {
		s.Exec(t, "DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db+" CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci")
	}
	for i, s := range shards {
		s.Exec(t, fmt.Sprintf("CREATE TABLE %s.word_%04d (name VARCHAR(32) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL PRIMARY KEY, n INT)", db, i))
	}
	cfg := parseConfig(t, twoShardYAML(db, s0.Addr, s1.Addr, 4, `    tables:
      - {name: word, shard_key: name, rule: hash, shards: [s0, s1], sub_tables: 2}
`, ""), "sharded.yaml")
	p := startProxy(t, cfg)
	proxied := openDB(t, proxyDSN(p, appUser, appPass, db, ""))
	direct := []*sql.DB{openDB(t, s0.DSN(db)), openDB(t, s0.DSN(db)), openDB(t, s1.DSN(db)), openDB(t, s1.DSN(db))}

	coll, err := sharding.LookupCollation("utf8mb4_unicode_ci")
	if err != nil {
		t.Fatal(err)
	}
	h, _ := sharding.NewHash(4)
	subTable := func(s string) int {
		v, err := sharding.Convert(sharding.ColumnType{Class: sharding.ClassString, Collation: coll}, sharding.StringLit(s))
		if err != nil {
			t.Fatal(err)
		}
		i, _ := h.Index(v)
		return i
	}
	used := map[int]bool{}
	for n, w := range []struct{ stored, other string }{
		{"Straße", "STRASSE "}, {"Éclair", "eclair"}, {"Ärger", "arger"}, {"中文", "中文  "}, {"x😀", "X😺"}, {"ǅemal", "džemal"},
	} {
		if _, err := proxied.Exec("INSERT INTO word VALUES (?, ?)", w.stored, n); err != nil {
			t.Fatalf("INSERT %q: %v", w.stored, err)
		}
		want := subTable(w.stored)
		used[want] = true
		if subTable(w.other) != want {
			t.Fatalf("%q and %q have different keys", w.stored, w.other)
		}
		for i, d := range direct {
			got := queryString(t, d, fmt.Sprintf("SELECT COUNT(*) FROM word_%04d WHERE name = ?", i), w.stored)
			if (got == "1") != (i == want) {
				t.Errorf("%q: %s rows in word_%04d, want it only in word_%04d", w.stored, got, i, want)
			}
		}
		if got := queryString(t, proxied, "SELECT n FROM word WHERE name = ?", w.other); got != fmt.Sprint(n) {
			t.Errorf("SELECT … WHERE name = %q (prepared) = %q, want %d", w.other, got, n)
		}
		if got := queryString(t, proxied, fmt.Sprintf("SELECT n FROM word WHERE name = '%s'", w.other)); got != fmt.Sprint(n) {
			t.Errorf("SELECT … WHERE name = '%s' = %q, want %d", w.other, got, n)
		}
		if _, err := proxied.Exec(fmt.Sprintf("INSERT INTO word VALUES ('%s', 99)", w.other)); mysqlErrCode(err) != 1062 {
			t.Errorf("INSERT of %q after %q: %v, want a duplicate key (1062) from the same sub-table", w.other, w.stored, err)
		}
	}
	if len(used) < 2 {
		t.Fatalf("every word hashed to one sub-table %v: the test proves no routing", used)
	}
}
