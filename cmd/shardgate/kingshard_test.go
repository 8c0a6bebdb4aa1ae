package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/sharding"
)

// issueConfig is issue 13's configuration, passwords as written there.
const issueConfig = `users:
  - name: app
    password: app-pw
    default_database: shop
clusters:
  - name: s0
    user: shardgate
    password: sg-pw
    primary: { address: 127.0.0.1:3307 }
  - name: s1
    user: shardgate
    password: sg-pw
    primary: { address: 127.0.0.1:3308 }
schemas:
  - name: shop
    default_cluster: s0
    tables:
      - name: sf_user
        shard_key: id
        rule: hash
        shards: [s0, s1]
        sub_tables: 4
      - name: sf_order
        shard_key: user_id
        like: sf_user
      - name: sf_city
        type: reference
      - name: sf_log
        shard_key: id
        rule: range
        shards: [s1]
        sub_tables: 2
        ranges: [[null, 100], [100, 200.5]]
`

func TestCheckConfigPrintsLayout(t *testing.T) {
	file := filepath.Join(t.TempDir(), "shop.yaml")
	if err := os.WriteFile(file, []byte(issueConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"check-config", file}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	want := file + `: OK (1 listener(s), 1 user(s), 2 cluster(s), 1 schema(s))
schema shop: unlisted tables unsharded on s0; shards s0, s1
  shop.sf_user   hash(id)                    s0: sf_user_0000..sf_user_0003  s1: sf_user_0004..sf_user_0007
  shop.sf_order  hash(user_id) like sf_user  s0: sf_order_0000..sf_order_0003  s1: sf_order_0004..sf_order_0007
  shop.sf_city   reference                   s0, s1
  shop.sf_log    range(id)                   s1: sf_log_0000..sf_log_0001
    sf_log_0000 on s1: id in [-inf, 100)
    sf_log_0001 on s1: id in [100, 200.5)
`
	if stdout.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), want)
	}
	if !strings.Contains(stderr.String(), "warning: "+file+":3: users[0] (app): plaintext password") {
		t.Errorf("stderr lacks the plaintext password warning:\n%s", stderr.String())
	}
}

// convert runs import-kingshard on a file and returns its exit code,
// stdout and stderr.
func convert(t *testing.T, file string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run([]string{"import-kingshard", file}, nil, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// checkConverted parses import-kingshard's output as check-config does and
// returns the configuration and its schemas by name.
func checkConverted(t *testing.T, out string) (*config.Config, map[string]*sharding.Schema) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "converted.yaml")
	if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"check-config", file}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("check-config of the converted file: exit %d\n%s%s\n%s", code, stdout.String(), stderr.String(), out)
	}
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := cfg.ShardingSchemas()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*sharding.Schema{}
	for _, s := range schemas {
		byName[s.Name] = s
	}
	return cfg, byName
}

// place returns the sub-table and shard of an integer key.
func place(t *testing.T, s *sharding.Schema, table string, key int64) (string, string) {
	t.Helper()
	tbl := s.Table(table)
	if tbl == nil {
		t.Fatalf("no table %s in schema %s", table, s.Name)
	}
	i, err := tbl.Group.Rule.Index(sharding.IntValue(key))
	if err != nil {
		t.Fatalf("%s key %d: %v", table, key, err)
	}
	return tbl.SubTable(i)
}

// kingshard's own sample (etc/ks.yaml) without its date rules: two nodes,
// hash and range rules with locations [4,4], two users, a weighted slave.
func TestImportKingshardHashRange(t *testing.T) {
	code, out, errOut := convert(t, "testdata/kingshard/ks_hash_range.yaml")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, note := range []string{"web_addr is not carried over", "log_sql is not carried over",
		"node node1: down_after_noalive is not carried over", "prometheus_addr 0.0.0.0:7080 became admin.http"} {
		if !strings.Contains(errOut, note) {
			t.Errorf("stderr lacks %q:\n%s", note, errOut)
		}
	}
	cfg, schemas := checkConverted(t, out)

	users := map[string]config.User{}
	for _, u := range cfg.Users {
		users[u.Name] = u
	}
	if u := users["kingshard"]; u.Password != "kingshard" || u.Cluster != "node1" {
		t.Errorf("user kingshard = %+v, want its password and its schema's default node", u)
	}
	if u := users["root"]; u.Password != "root" || u.Cluster != "node1" {
		t.Errorf("user root = %+v", u)
	}
	n1 := cfg.Cluster("node1")
	if n1 == nil || n1.User != "root" || n1.Password != "root" || n1.Primary.Address != "127.0.0.1:3306" || n1.Pool.MaxOpen != 32 {
		t.Fatalf("cluster node1 = %+v", n1)
	}
	if got := []config.Backend{{Address: "127.0.0.1:3307", Weight: 2, State: "online"}, {Address: "127.0.0.1:3308", Weight: 1, State: "online"}}; !reflect.DeepEqual(n1.Replicas, got) {
		t.Errorf("node1 replicas = %+v, want %+v", n1.Replicas, got)
	}
	if cfg.Listeners[0].Address != "0.0.0.0:9696" || cfg.Admin.HTTP != "0.0.0.0:7080" || cfg.Log.Level != "debug" {
		t.Errorf("listener %s admin %s log %s", cfg.Listeners[0].Address, cfg.Admin.HTTP, cfg.Log.Level)
	}

	ks, hidb := schemas["kingshard"], schemas["hidb"]
	if ks == nil || hidb == nil || ks.DefaultCluster != "node1" || !reflect.DeepEqual(ks.Shards, []string{"node1", "node2"}) {
		t.Fatalf("schemas %v", schemas)
	}
	// Where kingshard puts these keys: HashShard is key mod 8 over
	// locations [4,4]; NumRangeShard is key / 10000.
	tests := []struct {
		schema      *sharding.Schema
		table       string
		key         int64
		sub, server string
	}{
		{ks, "test_shard_hash", 13, "test_shard_hash_0005", "node2"},
		{ks, "test_shard_hash", 3, "test_shard_hash_0003", "node1"},
		{ks, "test_shard_hash", -1, "test_shard_hash_0007", "node2"},
		{ks, "test_shard_range", 9999, "test_shard_range_0000", "node1"},
		{ks, "test_shard_range", 45000, "test_shard_range_0004", "node2"},
		{ks, "test_shard_time", 6, "test_shard_time_0002", "node2"},
		{hidb, "test_hash", 12, "test_hash_0004", "node2"},
	}
	for _, tt := range tests {
		if sub, server := place(t, tt.schema, tt.table, tt.key); sub != tt.sub || server != tt.server {
			t.Errorf("%s key %d: %s on %s, want %s on %s", tt.table, tt.key, sub, server, tt.sub, tt.server)
		}
	}
	if tbl := ks.Table("test_shard_range"); tbl.Group.Layout.SubTables() != 8 {
		t.Errorf("test_shard_range has %d sub-tables, want 8", tbl.Group.Layout.SubTables())
	}
	if _, err := ks.Table("test_shard_range").Group.Rule.Index(sharding.IntValue(80000)); err == nil {
		t.Error("a key past kingshard's last range has a sub-table")
	}
}

// The older form: one user, password and schema at the top level.
func TestImportKingshardOlderForm(t *testing.T) {
	code, out, errOut := convert(t, "testdata/kingshard/ks_old.yaml")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "allow_ips is not carried over") {
		t.Errorf("stderr lacks the allow_ips note:\n%s", errOut)
	}
	cfg, schemas := checkConverted(t, out)
	if len(cfg.Users) != 1 || cfg.Users[0].Name != "kingshard" || cfg.Users[0].Password != "kingshard" || cfg.Users[0].Cluster != "node1" {
		t.Errorf("users = %+v", cfg.Users)
	}
	if sub, server := place(t, schemas["kingshard"], "test_shard_hash", 4); sub != "test_shard_hash_0004" || server != "node2" {
		t.Errorf("test_shard_hash key 4: %s on %s", sub, server)
	}
}

// kingshard's unmodified sample has date rules, whose sub-tables are named
// by date: each is reported, and nothing is printed.
func TestImportKingshardRefusesDateRules(t *testing.T) {
	code, out, errOut := convert(t, "testdata/kingshard/ks.yaml")
	if code != 1 || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	for _, want := range []string{
		"testdata/kingshard/ks.yaml: cannot convert:",
		"schema_list[1].shard[4] (kingshard.test_shard_month): rule date_month cannot be converted: kingshard names its sub-tables by date (test_shard_month_201603)",
		"schema_list[1].shard[5] (kingshard.test_shard_day): rule date_day cannot be converted",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

const ksNodes = `nodes:
  - {name: n1, user: u, password: "p@ss: w", master: "10.0.0.1:3306"}
  - {name: n2, user: u, password: "123", master: "10.0.0.2:3306"}
  - {name: n3, user: u, password: "", master: "10.0.0.3:3306"}
`

func TestImportKingshardCases(t *testing.T) {
	tests := []struct {
		name string
		src  string
		code int
		want []string // in stdout when code is 0, else in stderr
	}{
		{"empty location kept out", ksNodes + `user_list: [{user: a, password: "007"}]
schema_list:
  - user: a
    nodes: [n1, n2, n3]
    default: n3
    shard:
      - {db: d, table: t, key: ID, nodes: [n1, n2, n3], type: hash, locations: [2, 0, 1]}
`, 0, []string{`password: "007"`, `password: 'p@ss: w'`, `password: "123"`, "cluster: n3",
			"shard_key: id", "shards: [n1, n3]", "sub_tables: [2, 1]", "default_cluster: n3"}},
		{"users disagree", ksNodes + `user_list: [{user: a, password: x}, {user: b, password: y}]
schema_list:
  - {user: a, nodes: [n1, n2], default: n1, shard: [{db: d, table: t, key: id, nodes: [n1, n2], type: hash, locations: [1, 1]}]}
  - {user: b, nodes: [n1, n2], default: n1, shard: [{db: d, table: t, key: id, nodes: [n1, n2], type: hash, locations: [2, 2]}]}
`, 1, []string{"schema_list[1].shard[0] (d.t): another user shards d.t differently"}},
		{"users agree", ksNodes + `user_list: [{user: a, password: x}, {user: b, password: y}]
schema_list:
  - {user: a, nodes: [n1, n2], default: n1, shard: [{db: d, table: t, key: id, nodes: [n1, n2], type: range, locations: [1, 1], table_row_limit: 5}]}
  - {user: b, nodes: [n1, n2], default: n1, shard: [{db: d, table: t, key: id, nodes: [n1, n2], type: range, locations: [1, 1], table_row_limit: 5}]}
`, 0, []string{"rule: kingshard_range", "table_row_limit: 5"}},
		{"bad rules", ksNodes + `user_list: [{user: a, password: x}]
schema_list:
  - user: a
    nodes: [n1, n2]
    default: n1
    shard:
      - {db: d, table: t1, key: id, nodes: [n1, n2], type: hash, locations: [4]}
      - {db: d, table: t2, key: id, nodes: [n1, n3], type: hash, locations: [1, 1]}
      - {db: d, table: t3, key: id, nodes: [n1], type: range, locations: [1]}
      - {db: d, table: t4, key: id, nodes: [n1], type: mod, locations: [1]}
      - {db: d, table: t5, key: id, nodes: [n1], type: date_year, date_range: [2015-2016]}
`, 1, []string{
			"schema_list[0].shard[0] (d.t1): locations [4] needs one count per node of [n1 n2]",
			`schema_list[0].shard[1] (d.t2): node "n3" is not in the schema's nodes [n1 n2]`,
			"schema_list[0].shard[2] (d.t3): a range rule needs table_row_limit > 0",
			`schema_list[0].shard[3] (d.t4): unknown rule type "mod"`,
			"schema_list[0].shard[4] (d.t5): rule date_year cannot be converted"}},
		{"unknown key", ksNodes + "user_list: [{user: a, password: x, role: admin}]\n", 1, []string{
			"not a kingshard configuration", "field role not found"}},
		{"user without schema", ksNodes + "user_list: [{user: a, password: x}]\nschema_list: [{user: b, nodes: [n1], default: n9}]\n", 1, []string{
			"user a has no entry in schema_list", "schema_list[0]: user b is not in user_list"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "ks.yaml")
			if err := os.WriteFile(file, []byte(tt.src), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := convert(t, file)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.code, out, errOut)
			}
			where := errOut
			if code == 0 {
				where = out
				checkConverted(t, out)
			} else if out != "" {
				t.Errorf("printed a configuration despite errors:\n%s", out)
			}
			for _, w := range tt.want {
				if !strings.Contains(where, w) {
					t.Errorf("lacks %q:\n%s", w, where)
				}
			}
		})
	}
}
