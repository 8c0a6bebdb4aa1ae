package proxy_test

import (
	"fmt"
	"strings"
	"testing"
)

// A reload adds a sharded table to a running schema and a new schema: the
// changes are applied live, the new tables are created through the proxy
// (DDL fanned out to their sub-tables) and their rows land where the rule
// puts them, read back by key and merged; the existing table keeps
// routing by key. Changing an existing table's rule is a restart key and
// changes nothing.
func TestReloadAddsShardedTablesAndSchemas(t *testing.T) {
	const db, db2 = "rsh", "rsh_new"
	p, p0, p1, s0, s1, proxyDB := shardedPairProxy(t, db)
	for _, s := range []interface{ Exec(testing.TB, ...string) }{s0, s1} {
		s.Exec(t, "DROP DATABASE IF EXISTS "+db2)
	}
	tables := `    tables:
      - {name: t, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: 2}
      - {name: city, type: reference}
`
	added := tables + `      - {name: u, shard_key: id, rule: mod, shards: [s0, s1], sub_tables: 1}
  - name: ` + db2 + `
    default_cluster: s0
    tables:
      - {name: w, shard_key: k, rule: mod, shards: [s0, s1], sub_tables: 2}
`
	changes, err := p.Reload(parseConfig(t, twoShardYAML(db, s0.Addr, s1.Addr, 4, added, ""), "added.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"schemas[rsh].tables[u]": false, "schemas[rsh_new]": false}
	for _, c := range changes {
		if r, ok := want[c.Key]; ok && !r {
			if c.Restart {
				t.Errorf("%s needs a restart, want it applied live", c.Key)
			}
			want[c.Key] = true
		}
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("reload did not report %s: %+v", k, changes)
		}
	}

	c := proxyDB("")
	for _, stmt := range []string{
		"CREATE TABLE u (id INT PRIMARY KEY, v VARCHAR(10))",
		"INSERT INTO u VALUES (1, 'one'), (2, 'two'), (3, 'three'), (4, 'four')",
		"CREATE DATABASE " + db2,
		"CREATE TABLE " + db2 + ".w (k INT PRIMARY KEY, v INT)",
		"INSERT INTO " + db2 + ".w VALUES (10, 1), (11, 2), (12, 3), (13, 4)",
		"INSERT INTO t VALUES (5, 50)",
	} {
		if _, err := c.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	// mod over two shards of one sub-table each: even ids on s0 (u_0000),
	// odd on s1 (u_0001).
	if got := queryString(t, p0, "SELECT GROUP_CONCAT(id ORDER BY id) FROM u_0000"); got != "2,4" {
		t.Errorf("u_0000 on s0 holds %s, want 2,4", got)
	}
	if got := queryString(t, p1, "SELECT GROUP_CONCAT(id ORDER BY id) FROM u_0001"); got != "1,3" {
		t.Errorf("u_0001 on s1 holds %s, want 1,3", got)
	}
	// mod over four sub-tables, two per shard: k % 4.
	for sub, want := range map[int]string{0: "12", 1: "13", 2: "10", 3: "11"} {
		srv := p0
		if sub >= 2 {
			srv = p1
		}
		got := queryString(t, srv, fmt.Sprintf("SELECT GROUP_CONCAT(k) FROM %s.w_%04d", db2, sub))
		if got != want {
			t.Errorf("%s.w_%04d holds %s, want %s", db2, sub, got, want)
		}
	}
	if got := queryString(t, c, "SELECT v FROM u WHERE id = 3"); got != "three" {
		t.Errorf("u by key: %q", got)
	}
	if got := queryString(t, c, "SELECT GROUP_CONCAT(k ORDER BY k) FROM "+db2+".w"); got != "10,11,12,13" {
		t.Errorf("%s.w merged: %q", db2, got)
	}
	if got := queryString(t, c, "SELECT v FROM t WHERE id = 5"); got != "50" {
		t.Errorf("the table listed before the reload, by key: %q", got)
	}

	// Changing a running table's rule needs a restart: nothing changes.
	changed := strings.Replace(added, "{name: u, shard_key: id, rule: mod", "{name: u, shard_key: v, rule: mod", 1)
	changes, err = p.Reload(parseConfig(t, twoShardYAML(db, s0.Addr, s1.Addr, 4, changed, ""), "changed.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ch := range changes {
		if ch.Key == "schemas[rsh].tables[u].shard_key" {
			found = true
			if !ch.Restart {
				t.Errorf("a running table's shard key applied live: %+v", ch)
			}
		}
	}
	if !found {
		t.Errorf("the shard key change was not reported: %+v", changes)
	}
	if got := queryString(t, c, "SELECT v FROM u WHERE id = 4"); got != "four" {
		t.Errorf("u by key after a refused change: %q", got)
	}
}
