package planner

import (
	"fmt"
	"strings"

	"github.com/shardgate/shardgate/internal/sharding"
)

// keyClass is a set of sharded table references whose keys the statement
// equates (u.id = o.user_id): their rows meet only on equally numbered
// sub-tables, so one sub-table set serves them all.
type keyClass struct {
	id     int
	name   string                  // the first table, for error messages
	tables []*sharding.SchemaTable // distinct tables, whose key types must agree
	// preds constrain the class's rows: the key predicates of the scopes
	// holding its outermost members. Members in subqueries below them
	// only filter those rows; their predicates would be wrong under NOT
	// EXISTS. The rows of every sub-table the predicates allow may answer.
	preds []*pnode
}

// refsByKind splits the references by placement, each table once.
type refsByKind struct {
	sharded, reference, unsharded, other []*tableRef
}

func (a *analyzer) finish() (*Analysis, error) {
	for _, sc := range a.scopes {
		a.merge |= sc.constructs
	}
	an := &Analysis{Write: a.write, Cluster: a.schema.DefaultCluster, Merge: a.merge, TopMerge: a.top, GroupsOnKey: a.groupsOnKey, Insert: a.insert}
	var k refsByKind
	seen := make(map[*sharding.SchemaTable]bool)
	for _, r := range a.refs {
		switch r.kind {
		case refSharded:
			k.sharded = append(k.sharded, r)
		case refReference:
			k.reference = append(k.reference, r)
		case refUnsharded:
			k.unsharded = append(k.unsharded, r)
		case refOther:
			k.other = append(k.other, r)
		}
		if r.st != nil && !seen[r.st] {
			seen[r.st] = true
			an.Tables = append(an.Tables, r.st)
		}
	}
	if listing := a.tableListing(k.other); listing != nil {
		if len(a.refs) > len(k.other) {
			r := append(k.sharded, append(k.reference, k.unsharded...)...)[0]
			return nil, notSupported(fmt.Sprintf("a statement on information_schema.%s and on table %s of sharded schema %s",
				strings.ToUpper(listing.name), r.name, a.schema.Name))
		}
		an.Placement = InfoSchema
		return an, nil
	}
	if len(k.sharded) == 0 {
		return an, a.withoutSharded(an, k)
	}
	if err := a.checkSharded(an, k); err != nil {
		return nil, err
	}
	an.Placement, an.Group = Sharded, k.sharded[0].st.Group
	an.classes = a.keyClasses()
	return an, nil
}

// withoutSharded places a statement on unsharded and reference tables.
// Reference tables have a copy on the default cluster too, so reads that
// mix them with unsharded tables run there; a write to a reference table
// runs on every shard and may read only what every shard holds.
func (a *analyzer) withoutSharded(an *Analysis, k refsByKind) error {
	an.Placement = Unsharded
	if len(k.reference) == 0 {
		return nil
	}
	local := append(k.unsharded, k.other...)
	for _, r := range k.reference {
		if r.written && len(local) > 0 {
			return notSupported(fmt.Sprintf("a write to reference table %s that reads %s, which is not on every shard", r.name, local[0].display()))
		}
		if r.written {
			an.Placement = Reference
		}
	}
	if len(local) == 0 {
		an.Placement = Reference
	}
	return nil
}

func (a *analyzer) checkSharded(an *Analysis, k refsByKind) error {
	first := k.sharded[0]
	if len(k.other) > 0 {
		return notSupported(fmt.Sprintf("a statement on sharded table %s and on table %s of another database", first.name, k.other[0].display()))
	}
	for _, r := range k.sharded[1:] {
		if r.st.Group != first.st.Group {
			return notSupported(fmt.Sprintf("a join of %s and %s, sharded by different rules (not declared like: each other)", first.name, r.name))
		}
	}
	for _, r := range k.reference {
		if r.written {
			return notSupported(fmt.Sprintf("a write to reference table %s in a statement on sharded table %s", r.name, first.name))
		}
	}
	if a.insert != nil {
		// the rows are placed one by one; what they read must be on every shard
		if read := append(k.sharded[1:len(k.sharded):len(k.sharded)], k.unsharded...); len(read) > 0 {
			return notSupported(fmt.Sprintf("an INSERT into sharded table %s that reads table %s", first.name, read[0].name))
		}
	}
	if len(k.unsharded) > 0 {
		return a.withUnsharded(an, k)
	}
	return nil
}

// withUnsharded allows sharded and unsharded tables together only on the
// sub-tables that live on the default cluster, with the unsharded tables.
func (a *analyzer) withUnsharded(an *Analysis, k refsByKind) error {
	first, u := k.sharded[0], k.unsharded[0]
	layout := first.st.Group.Layout
	an.onDefault = make([]bool, layout.SubTables())
	any := false
	for i := range an.onDefault {
		an.onDefault[i] = layout.Shard(i) == a.schema.DefaultCluster
		any = any || an.onDefault[i]
	}
	if !any {
		return notSupported(fmt.Sprintf("a join of sharded table %s and unsharded table %s, which lives on %s where %s has no sub-table",
			first.name, u.name, a.schema.DefaultCluster, first.name))
	}
	an.unshardedName = u.name
	for _, r := range k.unsharded {
		an.writesUnsharded = an.writesUnsharded || r.written
	}
	return nil
}

// keyClasses groups the sharded references by equated keys and collects
// each class's predicates.
func (a *analyzer) keyClasses() []*keyClass {
	byRoot := make(map[int]*keyClass)
	minDepth := make(map[*keyClass]int)
	var classes []*keyClass
	for _, r := range a.refs {
		if r.kind != refSharded {
			continue
		}
		root := a.find(r.node)
		c := byRoot[root]
		if c == nil {
			c = &keyClass{id: len(classes), name: r.name}
			byRoot[root] = c
			classes = append(classes, c)
			minDepth[c] = r.scope.depth
		}
		r.class = c.id
		if !containsTable(c.tables, r.st) {
			c.tables = append(c.tables, r.st)
		}
		minDepth[c] = min(minDepth[c], r.scope.depth)
	}
	type scopeClass struct {
		s *scope
		c int
	}
	seen := make(map[scopeClass]bool)
	for _, r := range a.refs {
		if r.kind != refSharded || r.nullable {
			continue
		}
		c := classes[r.class]
		if k := (scopeClass{r.scope, c.id}); r.scope.depth == minDepth[c] && r.scope.pred != nil && !seen[k] {
			seen[k] = true
			c.preds = append(c.preds, r.scope.pred)
		}
	}
	return classes
}

func containsTable(ts []*sharding.SchemaTable, t *sharding.SchemaTable) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}
