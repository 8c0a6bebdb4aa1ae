package config

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Schema is a logical database whose tables may be sharded (schemas[]).
// Its name is the database clients see and the database's name on every
// backend that holds a part of it.
type Schema struct {
	Name string `yaml:"name"`
	// DefaultCluster holds the tables not listed in Tables, unsharded.
	DefaultCluster string  `yaml:"default_cluster"`
	Tables         []Table `yaml:"tables" reload:"live,additems"`
	// CrossShardWrites says what a transaction that writes on a second
	// shard gets: refuse (an error before that write runs), allow (each
	// shard commits in turn, without atomicity across shards) or atomic
	// (two-phase commit over XA).
	CrossShardWrites string `yaml:"cross_shard_writes"`
	// MergeMemory bounds, in bytes, the rows a query across shards may
	// hold when it cannot stream them (a sort after GROUP BY without
	// LIMIT). 0: 64 MiB.
	MergeMemory int `yaml:"merge_memory"`
	// MergeOverflow is what such a query does past MergeMemory: spill
	// (its rows to a temporary file) or refuse (error 1038).
	MergeOverflow string `yaml:"merge_overflow"`
}

// Values of Schema.MergeOverflow.
const (
	MergeSpill  = "spill"
	MergeRefuse = "refuse"
)

// Values of Schema.CrossShardWrites.
const (
	CrossShardRefuse = "refuse"
	CrossShardAllow  = "allow"
	CrossShardAtomic = "atomic"
)

// Table is a listed table of a schema: sharded (by a rule, or like
// another table) or a reference table copied to every shard.
type Table struct {
	Name string `yaml:"name"`
	Type string `yaml:"type"` // sharded | reference
	// ShardKey is the column whose value places a row.
	ShardKey string `yaml:"shard_key"`
	// Like names a sharded table of the same schema whose rule and layout
	// this one shares, so equal keys of both live on the same sub-table
	// number of the same shard.
	Like string `yaml:"like"`
	Rule string `yaml:"rule"` // see Rules
	// Shards are the clusters holding the sub-tables, in order.
	Shards    []string  `yaml:"shards"`
	SubTables SubTables `yaml:"sub_tables"`
	// Ranges are the range rule's [start, end) per sub-table; null is
	// unbounded.
	Ranges [][]KeyValue `yaml:"ranges"`
	// Values are the list rule's keys per sub-table.
	Values [][]KeyValue `yaml:"values"`
	// Periods are the date rules' "FIRST..LAST" (or one period) per
	// sub-table.
	Periods []string `yaml:"periods"`
	// TableRowLimit is kingshard_range's keys per sub-table.
	TableRowLimit int `yaml:"table_row_limit"`
}

// Table types.
const (
	TableSharded   = "sharded"
	TableReference = "reference"
)

// rules lists the values of schemas[].tables[].rule.
var rules = []string{"hash", "mod", "range", "list", "date_year", "date_month", "date_day", "kingshard_hash", "kingshard_range"}

func (t *Table) setDefaults() { *t = Table{Type: TableSharded} }

// SubTables is sub_tables: an integer is the count on every shard, a list
// one count per shard in the order of shards (kingshard's locations).
// Absent, each shard holds one sub-table.
type SubTables struct {
	each   int
	counts []int
	set    bool
}

// isSet reports whether sub_tables was given.
func (s SubTables) isSet() bool { return s.set }

// Counts returns the sub-table count of each of n shards.
func (s SubTables) Counts(n int) []int {
	if s.counts != nil {
		return s.counts
	}
	each := s.each
	if !s.set {
		each = 1
	}
	out := make([]int, n)
	for i := range out {
		out[i] = each
	}
	return out
}

func (s SubTables) String() string {
	switch {
	case !s.set:
		return ""
	case s.counts != nil:
		return fmt.Sprint(s.counts)
	}
	return strconv.Itoa(s.each)
}

func (s *SubTables) decodeNode(n *yaml.Node) (string, bool) {
	const want = "an integer or a list of integers (one per shard)"
	switch {
	case isNull(n):
		return "", true
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int":
		i, err := strconv.Atoi(n.Value)
		*s = SubTables{each: i, set: err == nil}
		return want, err == nil
	case n.Kind == yaml.SequenceNode:
		counts := make([]int, 0, len(n.Content))
		for _, item := range n.Content {
			item = resolveAlias(item)
			i, err := strconv.Atoi(item.Value)
			if item.Kind != yaml.ScalarNode || item.ShortTag() != "!!int" || err != nil {
				return want, false
			}
			counts = append(counts, i)
		}
		*s = SubTables{counts: counts, set: true}
		return "", true
	}
	return want, false
}

// KeyValue is a range bound or a list value as written: a number, a date
// or null. It is typed when the rule is built (see ruleValue), since the
// key column's type is not known from the configuration.
type KeyValue struct {
	Text string
	Null bool
}

func (k KeyValue) String() string {
	if k.Null {
		return "null"
	}
	return k.Text
}

func (k *KeyValue) decodeNode(n *yaml.Node) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		return "a number, a date or null", false
	}
	*k = KeyValue{Text: n.Value, Null: isNull(n)}
	return "", true
}

// Table returns the listed table named name (in any case), or nil.
func (s *Schema) Table(name string) *Table {
	for i := range s.Tables {
		if strings.EqualFold(s.Tables[i].Name, name) {
			return &s.Tables[i]
		}
	}
	return nil
}

// RuleTable returns the table whose rule t uses: t itself, or the end of
// its like: chain. In a validated configuration it is never nil.
func (s *Schema) RuleTable(t *Table) *Table {
	for seen := 0; t != nil && t.Like != "" && seen <= len(s.Tables); seen++ {
		t = s.Table(t.Like)
	}
	if t != nil && t.Like != "" {
		return nil
	}
	return t
}
