package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shardgate/shardgate/internal/sharding"
)

// ShardingSchemas builds the placement model of schemas[], one
// sharding.Schema per schema in file order. Each call builds new Schemas,
// so two proxies never share the key types they learn. Parse has already
// built them once to validate, so an error here means the Config was
// changed or made in code; it still says what is wrong.
func (c *Config) ShardingSchemas() ([]*sharding.Schema, error) {
	var problems []Problem
	out := buildSchemas(c.Schemas, c.Clusters, func(path, format string, args ...any) {
		problems = append(problems, Problem{File: c.File, Key: path, Reason: fmt.Sprintf(format, args...)})
	})
	if len(problems) > 0 {
		return nil, &ValidationError{Problems: problems}
	}
	return out, nil
}

// failFunc reports a problem with the value at a key path.
type failFunc func(path, format string, args ...any)

// schemaBuilder turns schemas[] into sharding.Schemas, reporting every
// problem through fail. Placement is the sharding package's: the builder
// only types the parameters and calls its constructors, whose errors
// (overlapping ranges, duplicate list values) it reports at the key.
type schemaBuilder struct {
	fail     failFunc
	clusters []string
}

func buildSchemas(schemas []Schema, clusters []Cluster, fail failFunc) []*sharding.Schema {
	b := schemaBuilder{fail: fail}
	for _, c := range clusters {
		b.clusters = append(b.clusters, c.Name)
	}
	seen := map[string]int{}
	out := make([]*sharding.Schema, 0, len(schemas))
	for i := range schemas {
		s := &schemas[i]
		p := fmt.Sprintf("schemas[%d]", i)
		if b.nameOf(p+".name", s.Name) {
			if j, dup := seen[strings.ToLower(s.Name)]; dup {
				fail(p+".name", "duplicate schema name %q (also schemas[%d]; names are compared without regard to case)", s.Name, j)
			}
			seen[strings.ToLower(s.Name)] = i
		}
		out = append(out, b.schema(p, s))
	}
	return out
}

func (b *schemaBuilder) nameOf(path, name string) bool {
	if name == "" {
		b.fail(path, "required")
		return false
	}
	return true
}

// cluster reports whether name is a defined cluster, complaining at path
// when it is not.
func (b *schemaBuilder) cluster(path, name string) bool {
	switch {
	case name == "":
		b.fail(path, "required")
	case !slices.Contains(b.clusters, name):
		b.fail(path, "unknown cluster %q (defined: %s)", name, strings.Join(b.clusters, ", "))
	default:
		return true
	}
	return false
}

func (b *schemaBuilder) schema(p string, s *Schema) *sharding.Schema {
	b.cluster(p+".default_cluster", s.DefaultCluster)
	switch s.CrossShardWrites {
	case "", CrossShardRefuse, CrossShardAllow, CrossShardAtomic:
	default:
		b.fail(p+".cross_shard_writes", "must be %s, %s or %s, got %q", CrossShardRefuse, CrossShardAllow, CrossShardAtomic, s.CrossShardWrites)
	}
	switch s.MergeOverflow {
	case "", MergeSpill, MergeRefuse:
	default:
		b.fail(p+".merge_overflow", "must be %s or %s, got %q", MergeSpill, MergeRefuse, s.MergeOverflow)
	}
	if s.MergeMemory < 0 {
		b.fail(p+".merge_memory", "must be a number of bytes, 0 for the default (64 MiB), got %d", s.MergeMemory)
	}
	byName := map[string]int{}
	for j, t := range s.Tables {
		tp := fmt.Sprintf("%s.tables[%d]", p, j)
		if !b.nameOf(tp+".name", t.Name) {
			continue
		}
		if k, dup := byName[strings.ToLower(t.Name)]; dup {
			b.fail(tp+".name", "duplicate table %q (also %s.tables[%d]; names are compared without regard to case)", t.Name, p, k)
			continue
		}
		byName[strings.ToLower(t.Name)] = j
	}

	// Tables with a rule first: like: tables share their groups.
	built := make([]sharding.Table, len(s.Tables))
	shards := []string{s.DefaultCluster}
	for j := range s.Tables {
		t := &s.Tables[j]
		if t.Type == TableSharded && t.Like == "" {
			built[j] = sharding.Table{Name: t.Name, ShardKey: t.ShardKey,
				Group: b.group(fmt.Sprintf("%s.tables[%d]", p, j), t)}
			for _, c := range t.Shards {
				if !slices.Contains(shards, c) {
					shards = append(shards, c)
				}
			}
		}
	}

	out := sharding.NewSchema(s.Name, s.DefaultCluster, shards)
	switch s.CrossShardWrites {
	case CrossShardAllow:
		out.CrossShardWrites = sharding.CrossShardAllow
	case CrossShardAtomic:
		out.CrossShardWrites = sharding.CrossShardAtomic
	}
	out.MergeMemory = int64(s.MergeMemory)
	out.MergeRefuse = s.MergeOverflow == MergeRefuse
	for j := range s.Tables {
		t := &s.Tables[j]
		tp := fmt.Sprintf("%s.tables[%d]", p, j)
		st := &sharding.SchemaTable{Table: built[j], Type: sharding.TableSharded}
		switch t.Type {
		case TableReference:
			b.reference(tp, t)
			st = &sharding.SchemaTable{Table: sharding.Table{Name: t.Name}, Type: sharding.TableReference}
		case TableSharded:
			if t.ShardKey == "" {
				b.fail(tp+".shard_key", "required: the column whose value places a row")
			}
			if t.Like != "" {
				b.likeOnly(tp, t)
				if root := b.likeRoot(tp, s, j, byName); root >= 0 {
					st.Table = built[root].Like(t.Name, t.ShardKey)
				}
			}
		default:
			b.fail(tp+".type", "must be one of %s, %s (got %q)", TableSharded, TableReference, t.Type)
		}
		if k, listed := byName[strings.ToLower(t.Name)]; listed && k == j {
			_ = out.Add(st) // cannot fail: byName holds each name once
		}
	}
	return out
}

// tableKey is a key of a listed table with a test of whether it was given.
type tableKey struct {
	name  string
	given func(*Table) bool
}

var (
	keyShardKey  = tableKey{"shard_key", func(t *Table) bool { return t.ShardKey != "" }}
	keyLike      = tableKey{"like", func(t *Table) bool { return t.Like != "" }}
	keyRule      = tableKey{"rule", func(t *Table) bool { return t.Rule != "" }}
	keyShards    = tableKey{"shards", func(t *Table) bool { return t.Shards != nil }}
	keySubTables = tableKey{"sub_tables", func(t *Table) bool { return t.SubTables.isSet() }}
	keyRanges    = tableKey{"ranges", func(t *Table) bool { return t.Ranges != nil }}
	keyValues    = tableKey{"values", func(t *Table) bool { return t.Values != nil }}
	keyPeriods   = tableKey{"periods", func(t *Table) bool { return t.Periods != nil }}
	keyRowLimit  = tableKey{"table_row_limit", func(t *Table) bool { return t.TableRowLimit != 0 }}

	// ruleKeys are the keys that define a rule and its layout.
	ruleKeys = []tableKey{keyRule, keyShards, keySubTables, keyRanges, keyValues, keyPeriods, keyRowLimit}
)

// reference refuses the keys of sharded tables on a reference table.
func (b *schemaBuilder) reference(tp string, t *Table) {
	for _, k := range append([]tableKey{keyShardKey, keyLike}, ruleKeys...) {
		if k.given(t) {
			b.fail(tp+"."+k.name, "a reference table has no %s: it is a full copy on every shard of the schema", k.name)
		}
	}
}

// likeOnly refuses rule keys on a like: table: they come from its target.
func (b *schemaBuilder) likeOnly(tp string, t *Table) {
	for _, k := range ruleKeys {
		if k.given(t) {
			b.fail(tp+"."+k.name, "comes from like: %s; remove it", t.Like)
		}
	}
}

// likeRoot follows table j's like: chain to the table with a rule and
// returns its index, or -1 after reporting why there is none. A broken
// link further down the chain is reported at its own table.
func (b *schemaBuilder) likeRoot(tp string, s *Schema, j int, byName map[string]int) int {
	chain := []string{s.Tables[j].Name}
	visited := map[int]bool{j: true}
	for k := j; ; {
		next, ok := byName[strings.ToLower(s.Tables[k].Like)]
		switch {
		case !ok:
			if k == j {
				b.fail(tp+".like", "no table %q is listed in schema %q", s.Tables[k].Like, s.Name)
			}
			return -1
		case s.Tables[next].Type != TableSharded:
			if k == j {
				b.fail(tp+".like", "%q is a %s table; like: needs a sharded table", s.Tables[next].Name, s.Tables[next].Type)
			}
			return -1
		case visited[next]:
			chain = append(chain, s.Tables[next].Name)
			b.fail(tp+".like", "the chain %s never reaches a table with a rule", strings.Join(chain, " -> "))
			return -1
		case s.Tables[next].Like == "":
			return next
		}
		chain = append(chain, s.Tables[next].Name)
		visited[next] = true
		k = next
	}
}

// group builds the rule and layout of a table with a rule, or returns nil
// after reporting what is wrong.
func (b *schemaBuilder) group(tp string, t *Table) *sharding.Group {
	if !slices.Contains(rules, t.Rule) {
		if t.Rule == "" {
			b.fail(tp+".rule", "required (or like: a sharded table); one of %s", strings.Join(rules, ", "))
		} else {
			b.fail(tp+".rule", "must be one of %s (got %q)", strings.Join(rules, ", "), t.Rule)
		}
		return nil
	}
	b.ruleParams(tp, t)
	layout, ok := b.layout(tp, t)
	if !ok {
		return nil
	}
	rule, ok := b.rule(tp, t, layout.SubTables())
	if !ok {
		return nil
	}
	g, err := sharding.NewGroup(rule, layout)
	if err != nil {
		b.fail(tp+".sub_tables", "%v", err)
		return nil
	}
	return g
}

// ruleParams refuses parameters of other rules, which would be ignored.
func (b *schemaBuilder) ruleParams(tp string, t *Table) {
	owner := map[string]tableKey{"range": keyRanges, "list": keyValues, "date_year": keyPeriods,
		"date_month": keyPeriods, "date_day": keyPeriods, "kingshard_range": keyRowLimit}
	for _, k := range []tableKey{keyRanges, keyValues, keyPeriods, keyRowLimit} {
		if k.given(t) && owner[t.Rule].name != k.name {
			b.fail(tp+"."+k.name, "rule %s takes no %s", t.Rule, k.name)
		}
	}
}

func (b *schemaBuilder) layout(tp string, t *Table) (sharding.Layout, bool) {
	if len(t.Shards) == 0 {
		b.fail(tp+".shards", "required: the clusters that hold the sub-tables, e.g. [s0, s1]")
		return sharding.Layout{}, false
	}
	ok := true
	for k, c := range t.Shards {
		path := fmt.Sprintf("%s.shards[%d]", tp, k)
		if !b.cluster(path, c) {
			ok = false
		} else if slices.Index(t.Shards, c) < k {
			b.fail(path, "cluster %q is listed twice", c)
			ok = false
		}
	}
	counts := t.SubTables.Counts(len(t.Shards))
	if len(counts) != len(t.Shards) {
		b.fail(tp+".sub_tables", "has %d counts for %d shards: give one per shard, or one integer for every shard", len(counts), len(t.Shards))
		return sharding.Layout{}, false
	}
	for _, n := range counts {
		if n < 1 {
			b.fail(tp+".sub_tables", "must be >= 1 (got %d)", n)
			return sharding.Layout{}, false
		}
	}
	if !ok {
		return sharding.Layout{}, false
	}
	l, err := sharding.NewLayoutCounts(t.Shards, counts)
	if err != nil {
		b.fail(tp+".shards", "%v", err)
		return sharding.Layout{}, false
	}
	return l, true
}

func (b *schemaBuilder) rule(tp string, t *Table, n int) (sharding.Rule, bool) {
	var r sharding.Rule
	var err error
	param := "rule"
	switch t.Rule {
	case "hash":
		r, err = sharding.NewHash(n)
	case "mod":
		r, err = sharding.NewMod(n)
	case "kingshard_hash":
		r, err = sharding.NewKingshardHash(n)
	case "kingshard_range":
		param = "table_row_limit"
		if t.TableRowLimit < 1 {
			b.fail(tp+".table_row_limit", "required for rule kingshard_range: keys per sub-table, > 0 (got %d)", t.TableRowLimit)
			return nil, false
		}
		r, err = sharding.NewKingshardRange(n, int64(t.TableRowLimit))
	case "range":
		param = "ranges"
		if !b.perSubTable(tp, param, len(t.Ranges), n) {
			return nil, false
		}
		r, err = b.rangeRule(tp, t.Ranges)
	case "list":
		param = "values"
		if !b.perSubTable(tp, param, len(t.Values), n) {
			return nil, false
		}
		r, err = b.listRule(tp, t.Values)
	case "date_year", "date_month", "date_day":
		param = "periods"
		if !b.perSubTable(tp, param, len(t.Periods), n) {
			return nil, false
		}
		r, err = b.dateRule(tp, t.Rule, t.Periods)
	}
	if err != nil {
		b.fail(tp+"."+param, "%v", err)
		return nil, false
	}
	return r, r != nil
}

// perSubTable checks that a rule parameter has one entry per sub-table.
func (b *schemaBuilder) perSubTable(tp, param string, got, n int) bool {
	switch {
	case got == 0:
		b.fail(tp+"."+param, "required: one entry per sub-table (%d)", n)
	case got != n:
		b.fail(tp+"."+param, "has %d entries for %d sub-tables (sub_tables on every shard, summed): give one per sub-table", got, n)
	default:
		return true
	}
	return false
}

func (b *schemaBuilder) rangeRule(tp string, ranges [][]KeyValue) (sharding.Rule, error) {
	bounds := make([]sharding.Bound, len(ranges))
	ok := true
	for i, r := range ranges {
		path := fmt.Sprintf("%s.ranges[%d]", tp, i)
		if len(r) != 2 {
			b.fail(path, "want [start, end] (start included, end excluded; null for unbounded), got %d values", len(r))
			ok = false
			continue
		}
		var err error
		if !r[0].Null {
			bounds[i].HasStart = true
			if bounds[i].Start, err = orderedValue(r[0]); err != nil {
				b.fail(path, "start: %v", err)
				ok = false
			}
		}
		if !r[1].Null {
			bounds[i].HasEnd = true
			if bounds[i].End, err = orderedValue(r[1]); err != nil {
				b.fail(path, "end: %v", err)
				ok = false
			}
		}
	}
	if !ok {
		return nil, nil // reported entry by entry
	}
	return sharding.NewRange(bounds)
}

func (b *schemaBuilder) listRule(tp string, values [][]KeyValue) (sharding.Rule, error) {
	typed := make([][]sharding.Value, len(values))
	ok := true
	for i, vs := range values {
		path := fmt.Sprintf("%s.values[%d]", tp, i)
		if len(vs) == 0 {
			b.fail(path, "lists no value: the sub-table would hold no row")
			ok = false
		}
		for _, kv := range vs {
			if kv.Null {
				typed[i] = append(typed[i], sharding.Null())
				continue
			}
			v, err := orderedValue(kv)
			if err != nil {
				b.fail(path, "%v; string values are not accepted yet: matching them needs the key column's collation", err)
				ok = false
				continue
			}
			typed[i] = append(typed[i], v)
		}
	}
	if !ok {
		return nil, nil // reported entry by entry
	}
	return sharding.NewList(typed)
}

var dateUnits = map[string]sharding.DateUnit{"date_year": sharding.Year, "date_month": sharding.Month, "date_day": sharding.Day}

func (b *schemaBuilder) dateRule(tp, rule string, periods []string) (sharding.Rule, error) {
	unit := dateUnits[rule]
	runs := make([]sharding.Periods, len(periods))
	ok := true
	for i, s := range periods {
		first, last, isRun := strings.Cut(s, "..")
		if !isRun {
			last = first
		}
		var err1, err2 error
		runs[i].First, err1 = sharding.ParsePeriod(unit, strings.TrimSpace(first))
		runs[i].Last, err2 = sharding.ParsePeriod(unit, strings.TrimSpace(last))
		if err1 != nil || err2 != nil {
			b.fail(fmt.Sprintf("%s.periods[%d]", tp, i), "%q is not FIRST..LAST or one period of %s, such as %q", s, rule, periodExamples[unit])
			ok = false
		}
	}
	if !ok {
		return nil, nil // reported entry by entry
	}
	return sharding.NewDate(unit, runs)
}

var periodExamples = map[sharding.DateUnit]string{sharding.Year: "2024..2025", sharding.Month: "2024-01..2024-06", sharding.Day: "2024-01-01..2024-01-31"}

// orderedValue types a range bound or list value: a number (integer or
// decimal, as MySQL's exact literals; an exponent makes it a double) or a
// date 'YYYY-MM-DD[ hh:mm:ss[.ffffff]]'. Values of a numeric key column
// compare with numbers of any class, and dates with datetimes, exactly as
// the converted keys do.
func orderedValue(kv KeyValue) (sharding.Value, error) {
	if v, err := sharding.Convert(sharding.ColumnType{Class: sharding.ClassDecimal}, sharding.NumberLit(kv.Text)); err == nil {
		return v, nil
	}
	if v, err := sharding.Convert(sharding.ColumnType{Class: sharding.ClassDatetime, Scale: 6}, sharding.StringLit(kv.Text)); err == nil {
		return v, nil
	}
	return sharding.Value{}, fmt.Errorf("%q is neither a number nor a date YYYY-MM-DD[ hh:mm:ss[.ffffff]]", kv.Text)
}
