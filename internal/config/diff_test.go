package config

import (
	"reflect"
	"strings"
	"testing"
)

const diffBase = `
listeners:
  - address: 127.0.0.1:6033
users:
  - name: app
    password: pw1
  - name: gone
    password: x
clusters:
  - name: main
    user: sg
    password: secret1
    pool:
      max_open: 8
    primary:
      address: 10.0.0.1:3306
    replicas:
      - address: 10.0.0.2:3306
      - address: 10.0.0.3:3306
`

const diffNext = `
listeners:
  - address: 127.0.0.1:7033
log:
  level: debug
users:
  - name: app
    password: pw2
    cluster: main
  - name: new
    password: y
    cluster: main
clusters:
  - name: main
    user: sg
    password: secret2
    pool:
      max_open: 4
    primary:
      address: 10.0.0.1:3306
    replicas:
      - address: 10.0.0.3:3306
        weight: 2
      - address: 10.0.0.4:3306
  - name: other
    user: sg
    primary:
      address: 10.0.1.1:3306
`

func TestDiff(t *testing.T) {
	old, err := Parse([]byte(diffBase), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	next, err := Parse([]byte(diffNext), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{
		{Key: "listeners[0].address", Old: "127.0.0.1:6033", New: "127.0.0.1:7033", Restart: true},
		{Key: "log.level", Old: "info", New: "debug"},
		{Key: "users[app].password", Old: "***", New: "***"},
		{Key: "users[new]", Old: "(none)", New: "(added)"},
		{Key: "users[gone]", Old: "(present)", New: "(removed)"},
		{Key: "clusters[main].password", Old: "***", New: "***", Restart: true},
		{Key: "clusters[main].pool.max_open", Old: "8", New: "4"},
		{Key: "clusters[main].pool.max_idle", Old: "8", New: "4"},
		{Key: "clusters[main].pool.min_idle", Old: "8", New: "4"},
		{Key: "clusters[main].replicas[10.0.0.3:3306].weight", Old: "1", New: "2"},
		{Key: "clusters[main].replicas[10.0.0.4:3306]", Old: "(none)", New: "(added)"},
		{Key: "clusters[main].replicas[10.0.0.2:3306]", Old: "(present)", New: "(removed)"},
		{Key: "clusters[other]", Old: "(none)", New: "(added)"},
	}
	if got := Diff(old, next); !reflect.DeepEqual(got, want) {
		t.Errorf("Diff:\n got %+v\nwant %+v", got, want)
	}
	// Removing a cluster needs a restart; adding one does not.
	back := Diff(next, old)
	for _, c := range back {
		if c.Key == "clusters[other]" && (!c.Restart || c.New != "(removed)") {
			t.Errorf("removed cluster: %+v", c)
		}
	}
	if got := Diff(old, old); len(got) != 0 {
		t.Errorf("Diff of a configuration with itself: %+v", got)
	}
}

// Settings lists every key with its value, list items named as Diff
// names them, and masks every secret.
func TestSettingsMaskSecrets(t *testing.T) {
	cfg, err := Parse([]byte(`admin:
  sql: 127.0.0.1:0
  users: [{name: ops, password: adminpw}]
users: [{name: app, password: apppw}]
clusters:
  - {name: main, user: sg, password: clusterpw, primary: {address: "h:1"}, replicas: [{address: "r:2", weight: 3}]}
`), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range Settings(cfg) {
		got[s.Key] = s.Value
		for _, secret := range []string{"adminpw", "apppw", "clusterpw"} {
			if strings.Contains(s.Value, secret) {
				t.Errorf("%s = %s shows a secret", s.Key, s.Value)
			}
		}
	}
	for key, want := range map[string]string{
		"admin.sql": "127.0.0.1:0", "admin.users[ops].password": "***", "admin.users[ops].password_hash": "",
		"users[app].password": "***", "clusters[main].password": "***", "clusters[main].replicas[r:2].weight": "3",
		"listeners[0].address": "127.0.0.1:6033", "clusters[main].pool.wait_timeout": "5s", "schemas": "(none)",
	} {
		if got[key] != want {
			t.Errorf("%s = %q, want %q", key, got[key], want)
		}
	}
}

// Schemas and their tables may be added live; what changes or removes a
// running one needs a restart.
func TestDiffSchemasAddLive(t *testing.T) {
	base := diffBase + `schemas:
  - name: shop
    default_cluster: main
    tables:
      - {name: t, shard_key: id, rule: hash, shards: [main], sub_tables: 2}
      - {name: gone, shard_key: id, rule: hash, shards: [main], sub_tables: 2}
`
	next := diffBase + `schemas:
  - name: shop
    default_cluster: main
    cross_shard_writes: allow
    tables:
      - {name: t, shard_key: v, rule: hash, shards: [main], sub_tables: 2}
      - {name: u, shard_key: id, rule: mod, shards: [main], sub_tables: 1}
  - name: shop2
    default_cluster: main
`
	a, err := Parse([]byte(base), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse([]byte(next), "b.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{ // key -> needs a restart
		"schemas[shop].cross_shard_writes":  true,
		"schemas[shop].tables[t].shard_key": true,
		"schemas[shop].tables[u]":           false,
		"schemas[shop].tables[gone]":        true,
		"schemas[shop2]":                    false,
	}
	got := map[string]bool{}
	for _, c := range Diff(a, b) {
		if strings.HasPrefix(c.Key, "schemas") {
			got[c.Key] = c.Restart
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("schema changes (key: restart) = %v, want %v", got, want)
	}
}
