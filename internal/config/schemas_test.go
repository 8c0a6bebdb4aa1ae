package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/sharding"
)

// issueConfig is the configuration of issue 13, as written there.
const issueConfig = `users:
  - name: app
    password: app-pw
    default_database: shop      # no ` + "`cluster:`" + ` needed when schemas say where data lives
clusters:                       # each cluster is one shard: a primary plus optional replicas,
  - name: s0                    # with everything issue 4 built (splitting, lag, failover)
    user: shardgate
    password: sg-pw
    primary: { address: 127.0.0.1:3307 }
  - name: s1
    user: shardgate
    password: sg-pw
    primary: { address: 127.0.0.1:3308 }
schemas:
  - name: shop                  # the database clients see; same name on the backends
    default_cluster: s0         # tables not listed below live here, unsharded
    tables:
      - name: sf_user
        shard_key: id
        rule: hash              # hash | mod | range | list | date_year | date_month | date_day
        shards: [s0, s1]
        sub_tables: 4           # per shard: sf_user_0000..0003 on s0, sf_user_0004..0007 on s1
      - name: sf_order
        shard_key: user_id
        like: sf_user           # same rule and layout: equal keys live on the same sub-table,
                                # so joins on the shard key stay on one server
      - name: sf_city
        type: reference         # a full copy on every shard; reads anywhere, writes to all
`

func TestIssueSchemaConfig(t *testing.T) {
	cfg, err := Parse([]byte(issueConfig), "issue.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if u := cfg.Users[0]; u.Cluster != "" || u.DefaultDatabase != "shop" {
		t.Errorf("user = %+v, want no cluster and default database shop", u)
	}
	schemas, err := cfg.ShardingSchemas()
	if err != nil {
		t.Fatal(err)
	}
	if len(schemas) != 1 {
		t.Fatalf("%d schemas, want 1", len(schemas))
	}
	s := schemas[0]
	if s.Name != "shop" || s.DefaultCluster != "s0" || !reflect.DeepEqual(s.Shards, []string{"s0", "s1"}) {
		t.Errorf("schema %s default %s shards %v, want shop s0 [s0 s1]", s.Name, s.DefaultCluster, s.Shards)
	}
	user, order, city := s.Table("sf_user"), s.Table("SF_ORDER"), s.Table("sf_city")
	if user == nil || order == nil || city == nil || len(s.Tables()) != 3 {
		t.Fatalf("tables %v", s.Tables())
	}
	if user.Type != sharding.TableSharded || user.ShardKey != "id" || user.Group.Layout.SubTables() != 8 {
		t.Errorf("sf_user = %+v", user.Table)
	}
	for i, want := range []string{"s0", "s0", "s0", "s0", "s1", "s1", "s1", "s1"} {
		name, shard := user.SubTable(i)
		if name != sharding.SubTableName("sf_user", i) || shard != want {
			t.Errorf("sf_user sub-table %d: %s on %s, want on %s", i, name, shard, want)
		}
	}
	// The hash rule is the sharding package's, over the 8 sub-tables.
	h, _ := sharding.NewHash(8)
	for k := int64(-3); k < 20; k++ {
		got, err := user.Group.Rule.Index(sharding.IntValue(k))
		want, _ := h.Index(sharding.IntValue(k))
		if err != nil || got != want {
			t.Errorf("sf_user key %d: sub-table %d (%v), want %d", k, got, err, want)
		}
	}
	if order.Type != sharding.TableSharded || order.ShardKey != "user_id" || order.Group != user.Group || !sharding.CoLocated(user.Table, order.Table) {
		t.Errorf("sf_order does not share sf_user's group: %+v", order.Table)
	}
	if city.Type != sharding.TableReference || city.Group != nil {
		t.Errorf("sf_city = %+v, want a reference table", city.Table)
	}

	// Each call builds new Schemas: learnt key types are per proxy.
	again, _ := cfg.ShardingSchemas()
	if again[0].Table("sf_user") == user {
		t.Error("ShardingSchemas returned the same tables twice")
	}
}

// ruleHeader precedes the schemas of the rule and problem tests; their
// schemas start on line 6.
const ruleHeader = `users: [{name: app, password_hash: "*6C7A370C07660BC788681B3238D93E08BD74303C"}]
clusters:
  - {name: s0, user: u, primary: {address: "h:1"}}
  - {name: s1, user: u, primary: {address: "h:2"}}
schemas:
`

func TestSchemaRulesPlaceKeys(t *testing.T) {
	cfg, err := Parse([]byte(ruleHeader+`  - name: db
    default_cluster: s1
    tables:
      - {name: r, shard_key: k, rule: range, shards: [s0, s1], sub_tables: [1, 2], ranges: [[null, 0], [0, "10.5"], [100, null]]}
      - {name: d, shard_key: k, rule: range, shards: [s0], ranges: [["2024-01-01", "2024-07-01 12:00:00"]]}
      - {name: l, shard_key: k, rule: list, shards: [s0, s1], values: [[1, 2.5, null], ["3", 2024-01-02]]}
      - {name: m, shard_key: k, rule: date_month, shards: [s0, s1], periods: ["2024-01..2024-06", "2024-07"]}
      - {name: y, shard_key: k, rule: date_year, shards: [s0], periods: ["2020 .. 2029"]}
      - {name: dd, shard_key: k, rule: date_day, shards: [s0], periods: ["2024-02-28..2024-03-01"]}
      - {name: md, shard_key: k, rule: mod, shards: [s0, s1], sub_tables: 2}
      - {name: kh, shard_key: k, rule: kingshard_hash, shards: [s0, s1], sub_tables: [4, 4]}
      - {name: kr, shard_key: k, rule: kingshard_range, shards: [s0, s1], sub_tables: 2, table_row_limit: 100}
      - {name: kr2, shard_key: k2, like: kr}
      - {name: kr3, shard_key: k3, like: kr2}
`), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := cfg.ShardingSchemas()
	if err != nil {
		t.Fatal(err)
	}
	s := schemas[0]
	if !reflect.DeepEqual(s.Shards, []string{"s1", "s0"}) {
		t.Errorf("shards %v, want the default cluster first: [s1 s0]", s.Shards)
	}
	date := func(y, m, d int) sharding.Value {
		v, err := sharding.DatetimeValue(sharding.Datetime{Year: y, Month: m, Day: d})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	dec := func(text string) sharding.Value {
		v, err := sharding.Convert(sharding.ColumnType{Class: sharding.ClassDecimal, Precision: 10, Scale: 2}, sharding.NumberLit(text))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		table string
		key   sharding.Value
		want  int // -1: no sub-table
	}{
		{"r", sharding.IntValue(-5), 0},
		{"r", sharding.IntValue(0), 1},
		{"r", dec("10.49"), 1},
		{"r", dec("10.5"), -1}, // the end is excluded; 10.5..100 is a gap
		{"r", sharding.IntValue(100), 2},
		{"r", sharding.Null(), 0},
		{"d", date(2024, 7, 1), 0},
		{"d", date(2024, 7, 2), -1},
		{"l", sharding.IntValue(1), 0},
		{"l", sharding.IntValue(2), -1},
		{"l", dec("2.50"), 0},
		{"l", sharding.Null(), 0},
		{"l", sharding.IntValue(3), 1},
		{"l", date(2024, 1, 2), 1},
		{"l", sharding.IntValue(4), -1},
		{"m", date(2024, 6, 30), 0},
		{"m", date(2024, 7, 31), 1},
		{"m", date(2024, 8, 1), -1},
		{"y", date(2029, 12, 31), 0},
		{"dd", date(2024, 2, 29), 0},
		{"dd", date(2024, 3, 2), -1},
		{"md", sharding.IntValue(-1), 3},
		{"kh", sharding.IntValue(-1), int(uint64(1<<64-1) % 8)},
		{"kr", sharding.IntValue(399), 3},
		{"kr3", sharding.IntValue(250), 2},
	}
	for _, tt := range tests {
		tbl := s.Table(tt.table)
		got, err := tbl.Group.Rule.Index(tt.key)
		if tt.want < 0 {
			if err == nil {
				t.Errorf("%s: key %s on sub-table %d, want none", tt.table, tt.key, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: key %s on sub-table %d (%v), want %d", tt.table, tt.key, got, err, tt.want)
		}
	}
	if _, shard := s.Table("r").SubTable(2); shard != "s1" {
		t.Errorf("r_0002 on %s, want s1 (sub_tables [1, 2])", shard)
	}
	if kr, kr3 := s.Table("kr"), s.Table("kr3"); kr3.Group != kr.Group || kr3.ShardKey != "k3" {
		t.Error("a like: chain does not share its end's group")
	}
}

func TestSchemaProblems(t *testing.T) {
	const f = "s.yaml"
	tests := []struct {
		name string
		src  string // after ruleHeader: starts on line 6
		want []string
	}{
		{"unknown clusters", `  - name: shop
    default_cluster: s9
    tables:
      - name: t
        shard_key: id
        rule: hash
        shards: [s0, s7]
`, []string{
			`:7: schemas[0].default_cluster: unknown cluster "s9" (defined: s0, s1)`,
			`:12: schemas[0].tables[0].shards[1]: unknown cluster "s7" (defined: s0, s1)`}},
		{"schema keys", `  - tables: []
  - {name: a, default_cluster: s0}
  - {name: A, default_cluster: s0, tabels: []}
`, []string{
			`:6: schemas[0].name: required`,
			`:6: schemas[0].default_cluster: required`,
			`:8: schemas[2].tabels: unknown key (did you mean "tables"?)`,
			`:8: schemas[2].name: duplicate schema name "A" (also schemas[1]; names are compared without regard to case)`}},
		{"like", `  - name: shop
    default_cluster: s0
    tables:
      - {name: a, shard_key: id, like: nowhere}
      - {name: r, type: reference}
      - {name: b, shard_key: id, like: r}
      - {name: c, shard_key: id, like: d}
      - {name: d, shard_key: id, like: c}
      - {name: e, shard_key: id, like: a, rule: hash, sub_tables: 2}
      - {name: f, shard_key: id, like: f}
      - {name: g, like: e}
`, []string{
			`:9: schemas[0].tables[0].like: no table "nowhere" is listed in schema "shop"`,
			`:11: schemas[0].tables[2].like: "r" is a reference table; like: needs a sharded table`,
			`:12: schemas[0].tables[3].like: the chain c -> d -> c never reaches a table with a rule`,
			`:13: schemas[0].tables[4].like: the chain d -> c -> d never reaches a table with a rule`,
			`:14: schemas[0].tables[5].rule: comes from like: a; remove it`,
			`:14: schemas[0].tables[5].sub_tables: comes from like: a; remove it`,
			`:15: schemas[0].tables[6].like: the chain f -> f never reaches a table with a rule`,
			`:16: schemas[0].tables[7].shard_key: required: the column whose value places a row`}},
		{"tables", `  - name: shop
    default_cluster: s0
    tables:
      - {name: t, rule: hash, shards: [s0]}
      - {name: T, shard_key: id, rule: hash, shards: [s0]}
      - {name: r, type: reference, shard_key: id, rule: hash, shards: [s0], sub_tables: 2}
      - {name: x, type: copy}
      - {name: n, shard_key: id, shards: [s0]}
      - {name: o, shard_key: id, rule: crc, shards: [s0]}
      - {name: p, shard_key: id, rule: hash}
      - {shard_key: id, rule: hash, shards: [s0, s0]}
`, []string{
			`:9: schemas[0].tables[0].shard_key: required: the column whose value places a row`,
			`:10: schemas[0].tables[1].name: duplicate table "T" (also schemas[0].tables[0]; names are compared without regard to case)`,
			`:11: schemas[0].tables[2].shard_key: a reference table has no shard_key: it is a full copy on every shard of the schema`,
			`:11: schemas[0].tables[2].rule: a reference table has no rule: it is a full copy on every shard of the schema`,
			`:11: schemas[0].tables[2].shards: a reference table has no shards: it is a full copy on every shard of the schema`,
			`:11: schemas[0].tables[2].sub_tables: a reference table has no sub_tables: it is a full copy on every shard of the schema`,
			`:12: schemas[0].tables[3].type: must be one of sharded, reference (got "copy")`,
			`:13: schemas[0].tables[4].rule: required (or like: a sharded table); one of hash, mod, range, list, date_year, date_month, date_day, kingshard_hash, kingshard_range`,
			`:14: schemas[0].tables[5].rule: must be one of hash, mod, range, list, date_year, date_month, date_day, kingshard_hash, kingshard_range (got "crc")`,
			`:15: schemas[0].tables[6].shards: required: the clusters that hold the sub-tables, e.g. [s0, s1]`,
			`:16: schemas[0].tables[7].name: required`,
			`:16: schemas[0].tables[7].shards[1]: cluster "s0" is listed twice`}},
		{"sub_tables", `  - name: shop
    default_cluster: s0
    tables:
      - {name: a, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: 0}
      - {name: b, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: [4]}
      - {name: c, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: [4, -1]}
      - {name: d, shard_key: id, rule: hash, shards: [s0], sub_tables: four}
      - {name: e, shard_key: id, rule: kingshard_range, shards: [s0]}
      - {name: f, shard_key: id, rule: hash, shards: [s0], table_row_limit: 5, periods: ["2024"]}
`, []string{
			`:9: schemas[0].tables[0].sub_tables: must be >= 1 (got 0)`,
			`:10: schemas[0].tables[1].sub_tables: has 1 counts for 2 shards: give one per shard, or one integer for every shard`,
			`:11: schemas[0].tables[2].sub_tables: must be >= 1 (got -1)`,
			`:12: schemas[0].tables[3].sub_tables: expected an integer or a list of integers (one per shard), got string "four"`,
			`:13: schemas[0].tables[4].table_row_limit: required for rule kingshard_range: keys per sub-table, > 0 (got 0)`,
			`:14: schemas[0].tables[5].periods: rule hash takes no periods`,
			`:14: schemas[0].tables[5].table_row_limit: rule hash takes no table_row_limit`}},
		{"ranges", `  - name: shop
    default_cluster: s0
    tables:
      - name: a
        shard_key: id
        rule: range
        shards: [s0, s1]
        ranges: [[0, 1000], [500, 2000]]
      - name: b
        shard_key: id
        rule: range
        shards: [s0, s1]
        sub_tables: 2
        ranges: [[0, 10], [10, 20], [20, 30]]
      - name: c
        shard_key: id
        rule: range
        shards: [s0]
        ranges:
          - [0, abc]
      - {name: d, shard_key: id, rule: range, shards: [s0, s1], ranges: [[0], [5, 1]]}
      - {name: e, shard_key: id, rule: range, shards: [s0]}
      - {name: f, shard_key: id, rule: range, shards: [s0, s1], ranges: [[1, 2], ["2024-01-01", null]]}
`, []string{
			`:13: schemas[0].tables[0].ranges: ranges of sub-tables 0 and 1 overlap`,
			`:19: schemas[0].tables[1].ranges: has 3 entries for 4 sub-tables (sub_tables on every shard, summed): give one per sub-table`,
			`:25: schemas[0].tables[2].ranges[0]: end: "abc" is neither a number nor a date YYYY-MM-DD[ hh:mm:ss[.ffffff]]`,
			`:26: schemas[0].tables[3].ranges[0]: want [start, end] (start included, end excluded; null for unbounded), got 1 values`,
			`:27: schemas[0].tables[4].ranges: required: one entry per sub-table (1)`,
			`:28: schemas[0].tables[5].ranges: cannot order 2024-01-01 00:00:00.000000 and 1`}},
		{"start not below end", `  - {name: shop, default_cluster: s0, tables: [{name: a, shard_key: id, rule: range, shards: [s0], ranges: [[5, 1]]}]}
`, []string{
			`:6: schemas[0].tables[0].ranges: sub-table 0: range start 5 is not below its end 1`}},
		{"lists and periods", `  - name: shop
    default_cluster: s0
    tables:
      - name: a
        shard_key: k
        rule: list
        shards: [s0, s1]
        values: [[1, 2], [2.0, 3]]
      - name: b
        shard_key: k
        rule: list
        shards: [s0, s1]
        values: [[us, 1], []]
      - name: d
        shard_key: k
        rule: date_month
        shards: [s0, s1]
        periods: ["2024-01..2024-06", "2024-06..2024-12"]
      - {name: e, shard_key: k, rule: date_year, shards: [s0], periods: ["2024-01"]}
      - {name: g, shard_key: k, rule: date_day, shards: [s0, s1], periods: ["2024-01-01"]}
`, []string{
			`:13: schemas[0].tables[0].values: value 2 is listed for sub-tables 0 and 1`,
			`:18: schemas[0].tables[1].values[0]: "us" is neither a number nor a date YYYY-MM-DD[ hh:mm:ss[.ffffff]]; string values are not accepted yet: matching them needs the key column's collation`,
			`:18: schemas[0].tables[1].values[1]: lists no value: the sub-table would hold no row`,
			`:23: schemas[0].tables[2].periods: ranges of sub-tables 0 and 1 overlap`,
			`:24: schemas[0].tables[3].periods[0]: "2024-01" is not FIRST..LAST or one period of date_year, such as "2024..2025"`,
			`:25: schemas[0].tables[4].periods: has 1 entries for 2 sub-tables (sub_tables on every shard, summed): give one per sub-table`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(ruleHeader+tt.src), f)
			got := problemsOf(t, err)
			want := make([]string, len(tt.want))
			for i, w := range tt.want {
				want[i] = f + w
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("problems:\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
			}
		})
	}
}

// users[].cluster may be left out when schemas exist, but a user whose
// default database is on no schema and no cluster can reach nothing.
func TestUserClusterWithSchemas(t *testing.T) {
	const rest = `clusters:
  - {name: s0, user: u, primary: {address: "h:1"}}
  - {name: s1, user: u, primary: {address: "h:2"}}
schemas: [{name: shop, default_cluster: s0}]
`
	tests := []struct {
		users string
		want  []string
	}{
		{`[{name: a, password: x, default_database: shop}, {name: b, password: x}, {name: c, password: x, default_database: SHOP}]`, nil},
		{`[{name: a, password: x, default_database: other}, {name: b, password: x, default_database: other, cluster: s1}]`, []string{
			`u.yaml:1: users[0].cluster: required: default_database "other" is not one of the schemas, so name the cluster that holds it`}},
	}
	for _, tt := range tests {
		cfg, err := Parse([]byte("users: "+tt.users+"\n"+rest), "u.yaml")
		if tt.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tt.users, err)
			} else if cfg.Users[1].Cluster != "" {
				t.Errorf("user b got cluster %q", cfg.Users[1].Cluster)
			}
			continue
		}
		if got := problemsOf(t, err); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %q\nwant %q", tt.users, got, tt.want)
		}
	}
}

// A schema change is a restart change, down to a table's sub_tables.
func TestSchemaDiffNeedsRestart(t *testing.T) {
	old, err := Parse([]byte(issueConfig), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	changed, err := Parse([]byte(strings.Replace(issueConfig, "sub_tables: 4", "sub_tables: [4, 2]", 1)), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{{Key: "schemas[shop].tables[sf_user].sub_tables", Old: "4", New: "[4 2]", Restart: true}}
	if got := Diff(old, changed); !reflect.DeepEqual(got, want) {
		t.Errorf("Diff = %+v, want %+v", got, want)
	}
}
