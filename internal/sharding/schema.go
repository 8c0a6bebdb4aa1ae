package sharding

import (
	"fmt"
	"strings"
	"sync/atomic"
)

// Schema is one logical database whose tables may be sharded: the name
// clients see, which is also the database's name on every backend.
// Tables not listed live unsharded on DefaultCluster.
type Schema struct {
	Name           string
	DefaultCluster string
	// Shards lists every cluster that holds a part of the schema, default
	// cluster first: DDL on the database and reference tables go to all.
	Shards []string
	// CrossShardWrites says whether a transaction may write on several
	// shards, and how they commit.
	CrossShardWrites CrossShardMode
	// MergeMemory bounds the rows a merge across shards holds when it
	// cannot stream them, in bytes (0: the engine's default); past it a
	// final sort spills to a temporary file, unless MergeRefuse.
	MergeMemory int64
	MergeRefuse bool
	tables      map[string]*SchemaTable // by lower-cased name
}

// CrossShardMode is what a transaction that writes on a second shard
// gets.
type CrossShardMode uint8

const (
	CrossShardRefuse CrossShardMode = iota // the second shard's write is refused
	CrossShardAllow                        // each shard commits in turn, not atomically
	CrossShardAtomic                       // two-phase commit over XA (internal/xa)
)

// TableType says how a listed table is placed.
type TableType uint8

const (
	TableSharded   TableType = iota + 1 // rows spread over sub-tables by a rule
	TableReference                      // a full copy on every shard
)

// SchemaTable is a listed table of a schema.
type SchemaTable struct {
	Table // Name, ShardKey and Group (sharded tables only)
	Type  TableType

	// keyType is the shard key's column type, learnt from DDL or the
	// backends' information_schema; until then (nil) keys cannot be
	// converted and statements go to every sub-table that could hold them.
	keyType atomic.Pointer[ColumnType]
	// columns are the sub-tables' columns in order, learnt with the key
	// type: an INSERT without a column list gives its values in this
	// order.
	columns atomic.Pointer[[]string]
	// collations are the collations of its columns that hold character
	// strings, by lower-cased name ("": a collation not known), learnt
	// with columns; numeric, the columns that hold numbers (integers,
	// DECIMAL, FLOAT, DOUBLE).
	collations atomic.Pointer[map[string]string]
	numeric    atomic.Pointer[map[string]bool]
	// invisible: a column is INVISIBLE (MariaDB), which SELECT * leaves
	// out, learnt with the columns.
	invisible atomic.Bool
}

// NewSchema is an empty schema; tables are added with Add.
func NewSchema(name, defaultCluster string, shards []string) *Schema {
	return &Schema{Name: name, DefaultCluster: defaultCluster, Shards: shards, tables: make(map[string]*SchemaTable)}
}

// Add lists a table. Names are matched without regard to case, as MariaDB
// does with lower_case_table_names = 1 and as clients expect of a proxy
// that cannot know the backends' setting; a second table of the same name
// in any case is an error.
func (s *Schema) Add(t *SchemaTable) error {
	k := strings.ToLower(t.Name)
	if _, dup := s.tables[k]; dup {
		return fmt.Errorf("table %q is listed twice in schema %q", t.Name, s.Name)
	}
	s.tables[k] = t
	return nil
}

// Table returns the listed table named name, or nil for an unsharded one.
func (s *Schema) Table(name string) *SchemaTable {
	return s.tables[strings.ToLower(name)]
}

// TableBytes is Table for a name in a packet, without allocating when
// the name is in lower case.
func (s *Schema) TableBytes(name []byte) *SchemaTable {
	for _, c := range name {
		if 'A' <= c && c <= 'Z' {
			return s.Table(string(name))
		}
	}
	return s.tables[string(name)]
}

// Tables lists the listed tables in no particular order.
func (s *Schema) Tables() []*SchemaTable {
	out := make([]*SchemaTable, 0, len(s.tables))
	for _, t := range s.tables {
		out = append(out, t)
	}
	return out
}

// KeyType returns the shard key's column type, if known.
func (t *SchemaTable) KeyType() (ColumnType, bool) {
	ct := t.keyType.Load()
	if ct == nil {
		return ColumnType{}, false
	}
	return *ct, true
}

// ForgetKeyType makes the shard key's type unknown again: the table was
// created anew, and the type it had may not be its type now.
func (t *SchemaTable) ForgetKeyType() { t.keyType.Store(nil) }

// SetKeyType records the shard key's column type.
func (t *SchemaTable) SetKeyType(ct ColumnType) {
	t.keyType.Store(&ct)
}

// Columns returns the table's columns in order, if known.
func (t *SchemaTable) Columns() ([]string, bool) {
	c := t.columns.Load()
	if c == nil {
		return nil, false
	}
	return *c, true
}

// SetColumns records the table's columns in order.
func (t *SchemaTable) SetColumns(cols []string) { t.columns.Store(&cols) }

// SetCollations records which columns hold character strings, and their
// collations: by lower-cased name, "" for a collation not known.
func (t *SchemaTable) SetCollations(colls map[string]string) { t.collations.Store(&colls) }

// SetInvisible records whether a column of the table is INVISIBLE.
func (t *SchemaTable) SetInvisible(b bool) { t.invisible.Store(b) }

// Invisible reports whether a column of the table is known to be
// INVISIBLE.
func (t *SchemaTable) Invisible() bool { return t.invisible.Load() }

// SetNumeric records which columns hold numbers: lower-cased names.
func (t *SchemaTable) SetNumeric(names map[string]bool) { t.numeric.Store(&names) }

// Numeric reports whether column name holds numbers (an integer,
// DECIMAL, FLOAT or DOUBLE column), false when that is not known.
func (t *SchemaTable) Numeric(name string) bool {
	m := t.numeric.Load()
	return m != nil && (*m)[strings.ToLower(name)]
}

// Collated reports whether column name holds character strings (with a
// collation), and whether that is known.
func (t *SchemaTable) Collated(name string) (collated, known bool) {
	_, collated, known = t.Collation(name)
	return collated, known
}

// Collation is Collated with the column's collation ("": not known).
func (t *SchemaTable) Collation(name string) (coll string, collated, known bool) {
	m := t.collations.Load()
	if m == nil {
		return "", false, false
	}
	cols, _ := t.Columns()
	for _, c := range cols {
		if strings.EqualFold(c, name) {
			coll, collated = (*m)[strings.ToLower(name)]
			return coll, collated, true
		}
	}
	return "", false, false
}

// LearntFrom takes what was learnt of o, the same table in the schema this
// one replaces (a reload added tables to it): its key type, columns and
// their collations, without asking the backends again.
func (t *SchemaTable) LearntFrom(o *SchemaTable) {
	t.keyType.Store(o.keyType.Load())
	t.columns.Store(o.columns.Load())
	t.collations.Store(o.collations.Load())
	t.numeric.Store(o.numeric.Load())
	t.invisible.Store(o.invisible.Load())
}
