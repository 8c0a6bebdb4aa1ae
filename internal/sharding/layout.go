package sharding

import "fmt"

// Layout places sub-tables on shards (clusters): shard j holds the next
// counts[j] sub-tables, so with shards [s0, s1] and 4 each, s0 holds
// sub-tables 0-3 and s1 holds 4-7.
type Layout struct {
	shards []string
	first  []int // first[j] is shard j's first sub-table; first[len] is the total
}

// NewLayout is shards × perShard sub-tables.
func NewLayout(shards []string, perShard int) (Layout, error) {
	counts := make([]int, len(shards))
	for i := range counts {
		counts[i] = perShard
	}
	return NewLayoutCounts(shards, counts)
}

// NewLayoutCounts gives each shard its own count (kingshard's locations).
func NewLayoutCounts(shards []string, counts []int) (Layout, error) {
	if len(shards) == 0 || len(shards) != len(counts) {
		return Layout{}, fmt.Errorf("layout needs one sub-table count per shard, got %d shards and %d counts", len(shards), len(counts))
	}
	seen := make(map[string]bool)
	first := []int{0}
	for j, s := range shards {
		if seen[s] {
			return Layout{}, fmt.Errorf("shard %q is listed twice", s)
		}
		seen[s] = true
		if counts[j] < 1 {
			return Layout{}, fmt.Errorf("shard %q: sub-tables per shard must be at least 1, got %d", s, counts[j])
		}
		first = append(first, first[j]+counts[j])
	}
	return Layout{shards: shards, first: first}, nil
}

// SubTables is the total number of sub-tables.
func (l Layout) SubTables() int { return l.first[len(l.shards)] }

// Shard returns the shard holding sub-table i.
func (l Layout) Shard(i int) string {
	for j := range l.shards {
		if i < l.first[j+1] {
			return l.shards[j]
		}
	}
	return ""
}

// Shards lists the shards holding the sub-tables in s, in layout order.
func (l Layout) Shards(s Set) []string {
	var out []string
	for j, name := range l.shards {
		for i := l.first[j]; i < l.first[j+1]; i++ {
			if s.Has(i) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// SubTableName is the backend name of a logical table's sub-table i.
func SubTableName(table string, i int) string { return fmt.Sprintf("%s_%04d", table, i) }

// Group is a rule with its layout; tables declared `like:` one another
// share one Group, so equal keys land on equally numbered sub-tables of
// the same shard and joins on the key stay on one server.
type Group struct {
	Rule   Rule
	Layout Layout
}

// NewGroup checks that rule and layout agree on the sub-table count.
func NewGroup(rule Rule, layout Layout) (*Group, error) {
	if rule.SubTables() != layout.SubTables() {
		return nil, fmt.Errorf("rule has %d sub-tables but the layout has %d", rule.SubTables(), layout.SubTables())
	}
	return &Group{Rule: rule, Layout: layout}, nil
}

// Table is a sharded logical table.
type Table struct {
	Name     string
	ShardKey string
	Group    *Group
}

// Like returns a table sharing t's rule and layout (`like: t`).
func (t Table) Like(name, shardKey string) Table {
	return Table{Name: name, ShardKey: shardKey, Group: t.Group}
}

// CoLocated reports whether equal keys of a and b always share a server.
func CoLocated(a, b Table) bool { return a.Group != nil && a.Group == b.Group }

// SubTable names a's sub-table i and the shard it lives on.
func (t Table) SubTable(i int) (name, shard string) {
	return SubTableName(t.Name, i), t.Group.Layout.Shard(i)
}

// LogicalName returns the logical table of a sub-table's name (the part
// before "_NNNN", four or more digits), as SubTableName names them.
func LogicalName(subTable []byte) ([]byte, bool) {
	i := len(subTable)
	for i > 0 && subTable[i-1] >= '0' && subTable[i-1] <= '9' {
		i--
	}
	if len(subTable)-i < 4 || i < 2 || subTable[i-1] != '_' {
		return nil, false
	}
	return subTable[:i-1], true
}
