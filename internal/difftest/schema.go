package difftest

import (
	"fmt"
	"strings"
)

// The schema the generator writes, as one unsharded server holds it (the
// reference) and as shardgate shards it (SchemaYAML):
//
//	sf_user   hash on id (INT)                       8 sub-tables (2 shards × 4)
//	sf_order  like sf_user, on user_id               PRIMARY KEY (user_id, order_no)
//	sf_city   reference                              a full copy on every shard
//	sf_tag    hash on name (VARCHAR utf8mb4_general_ci), so 'Red' and 'red ' are one key
//	sf_event  range on id (INT)                      [-∞,0) [0,100) [100,1000) [1000,∞)
//	sf_log    date_month on day (DATE)               2023-01..06, 2023-07..12, 2024-01..06, 2024-07..12
//	sf_note   unsharded, AUTO_INCREMENT id           lives on the default cluster
//	sf_member hash on name (VARCHAR utf8mb4_unicode_ci) 4 sub-tables, its strings in
//	          utf8mb4_unicode_ci, utf8mb4_unicode_520_ci, utf8mb4_bin and latin1_swedish_ci
//
// Every unique key of a sharded table contains its shard key: a proxy
// cannot enforce uniqueness across sub-tables, so a schema that asked it
// to would make the reference and the proxy differ by design.
const (
	tUser   = "sf_user"
	tOrder  = "sf_order"
	tCity   = "sf_city"
	tTag    = "sf_tag"
	tEvent  = "sf_event"
	tLog    = "sf_log"
	tNote   = "sf_note"
	tMember = "sf_member"
)

// Tables lists the generator's tables.
var Tables = []string{tUser, tOrder, tCity, tTag, tEvent, tLog, tNote, tMember}

const tableOptions = " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"

var createTables = []string{
	`CREATE TABLE sf_user (
  id INT NOT NULL,
  name VARCHAR(32) NOT NULL,
  email VARCHAR(64) NULL,
  balance DECIMAL(12,2) NULL,
  score DOUBLE NULL,
  born DATE NULL,
  created DATETIME NULL,
  city_id INT NULL,
  PRIMARY KEY (id),
  KEY name_idx (name)
)` + tableOptions,
	`CREATE TABLE sf_order (
  user_id INT NOT NULL,
  order_no INT NOT NULL,
  amount DECIMAL(10,2) NOT NULL,
  status VARCHAR(16) NOT NULL,
  ordered_at DATETIME NULL,
  note VARCHAR(64) NULL,
  PRIMARY KEY (user_id, order_no)
)` + tableOptions,
	`CREATE TABLE sf_city (
  id INT NOT NULL,
  name VARCHAR(32) NOT NULL,
  country CHAR(2) NOT NULL,
  PRIMARY KEY (id)
)` + tableOptions,
	`CREATE TABLE sf_tag (
  name VARCHAR(32) NOT NULL,
  uses INT NOT NULL,
  updated DATE NULL,
  PRIMARY KEY (name)
)` + tableOptions,
	`CREATE TABLE sf_event (
  id INT NOT NULL,
  kind VARCHAR(16) NOT NULL,
  amount DECIMAL(8,3) NULL,
  happened DATETIME NULL,
  PRIMARY KEY (id)
)` + tableOptions,
	`CREATE TABLE sf_log (
  day DATE NOT NULL,
  seq INT NOT NULL,
  msg VARCHAR(64) NOT NULL,
  level TINYINT NULL,
  PRIMARY KEY (day, seq)
)` + tableOptions,
	`CREATE TABLE sf_note (
  id INT NOT NULL AUTO_INCREMENT,
  body VARCHAR(64) NOT NULL,
  created DATETIME NULL,
  PRIMARY KEY (id)
)` + tableOptions,
	`CREATE TABLE sf_member (
  name VARCHAR(32) COLLATE utf8mb4_unicode_ci NOT NULL,
  id INT NOT NULL,
  city VARCHAR(24) COLLATE utf8mb4_unicode_520_ci NULL,
  code VARCHAR(16) COLLATE utf8mb4_bin NULL,
  nick VARCHAR(16) CHARACTER SET latin1 COLLATE latin1_swedish_ci NULL,
  age INT NULL,
  score DECIMAL(10,2) NULL,
  joined DATE NULL,
  seen DATETIME NULL,
  tag VARCHAR(16) COLLATE utf8mb4_nopad_bin NULL,
  PRIMARY KEY (name, id)
)` + tableOptions,
}

// Schema returns the DDL that creates the logical tables (dropping them
// first), in the database the connection uses. Sent to the reference it
// makes the unsharded tables; sent through shardgate, each fans out to the
// sub-tables.
func (g *Generator) Schema() []Statement {
	var out []Statement
	for _, t := range Tables {
		out = append(out, Statement{Kind: "ddl", SQL: "DROP TABLE IF EXISTS " + t, Ordered: true})
	}
	for i, ddl := range createTables {
		out = append(out, Statement{Kind: "ddl", SQL: ddl, Ordered: true, Writes: []string{Tables[i]}})
	}
	return out
}

// SchemaYAML returns the schemas: section of a shardgate configuration
// that shards the generator's tables over shards (two or more clusters,
// the first being the default cluster), indented for the top level.
func SchemaYAML(schema string, shards []string) (string, error) {
	list := "[" + strings.Join(shards, ", ") + "]"
	// range and date_month take one entry per sub-table: two per shard.
	ranges := []string{"[null, 0]", "[0, 100]", "[100, 1000]", "[1000, null]"}
	periods := []string{"2023-01..2023-06", "2023-07..2023-12", "2024-01..2024-06", "2024-07..2024-12"}
	perShard := len(ranges) / len(shards)
	if len(shards) < 2 || perShard*len(shards) != len(ranges) {
		return "", fmt.Errorf("schema YAML for %d shards: the range and date tables have 4 sub-tables, so 2 or 4 shards", len(shards))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "schemas:\n  - name: %s\n    default_cluster: %s\n    tables:\n", schema, shards[0])
	fmt.Fprintf(&b, "      - {name: sf_user, shard_key: id, rule: hash, shards: %s, sub_tables: 4}\n", list)
	fmt.Fprintf(&b, "      - {name: sf_order, shard_key: user_id, like: sf_user}\n")
	fmt.Fprintf(&b, "      - {name: sf_city, type: reference}\n")
	fmt.Fprintf(&b, "      - {name: sf_tag, shard_key: name, rule: hash, shards: %s, sub_tables: 2}\n", list)
	fmt.Fprintf(&b, "      - {name: sf_event, shard_key: id, rule: range, shards: %s, sub_tables: %d, ranges: [%s]}\n",
		list, perShard, strings.Join(ranges, ", "))
	fmt.Fprintf(&b, "      - {name: sf_log, shard_key: day, rule: date_month, shards: %s, sub_tables: %d, periods: [%s]}\n",
		list, perShard, strings.Join(periods, ", "))
	fmt.Fprintf(&b, "      - {name: sf_member, shard_key: name, rule: hash, shards: %s, sub_tables: %d}\n", list, perShard)
	return b.String(), nil
}
