// Package planner turns a parsed statement on a sharded schema into a plan.
package planner

import (
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/sharding"
)

// Placement says where a statement runs.
type Placement uint8

const (
	// Unsharded statements touch no listed table, or read reference tables
	// together with unsharded ones: they run unchanged on Analysis.Cluster.
	Unsharded Placement = iota + 1
	// Reference statements touch only reference tables: a read runs on any
	// one shard, a write on every shard of the schema (Schema.Shards).
	Reference
	// Sharded statements touch sharded tables of one like-group (and
	// possibly reference tables): they run on the sub-tables Route returns,
	// or per row for INSERT and REPLACE (RowSubTables).
	Sharded
	// InfoSchema statements read information_schema's tables that list
	// the schema's tables: Keyspace.InfoSchema rewrites them to show the
	// logical tables.
	InfoSchema
)

func (p Placement) String() string {
	switch p {
	case Unsharded:
		return "unsharded"
	case Reference:
		return "reference"
	case Sharded:
		return "sharded"
	case InfoSchema:
		return "information_schema"
	}
	return "unknown"
}

// Analysis is what a statement needs from the schema. It is immutable once
// Analyze returns, holds no values of one execution, and is safe to cache
// with the statement's plan and to use from many sessions at once.
type Analysis struct {
	Placement Placement
	// Write is set for INSERT, REPLACE, UPDATE and DELETE.
	Write bool
	// Cluster is where an Unsharded statement runs: the schema's default
	// cluster.
	Cluster string
	// Tables lists the schema's listed tables (sharded and reference) the
	// statement names, each once, in the order they first appear. Renaming
	// them to sub-table i (sharding.SubTableName) gives the text for i.
	Tables []*sharding.SchemaTable
	// Group is the like-group of a Sharded statement's sharded tables.
	Group *sharding.Group
	// Merge lists the constructs that are only correct on one sub-table
	// and that no merge answers (those of subqueries and UNIONs, window
	// functions, UPDATE/DELETE … LIMIT…): Route refuses the statement
	// when it would run on more than one sub-table.
	Merge Constructs
	// TopMerge lists the Mergeable constructs of the statement's own
	// SELECT: across several sub-tables it is answered by a merge
	// (Plan.Merge), or refused when Plan.MergeErr says why not.
	TopMerge Constructs
	// GroupsOnKey: the statement's GROUP BY lists a shard key, so every
	// group is whole on one sub-table.
	GroupsOnKey bool
	// Insert is set for INSERT and REPLACE into a sharded table.
	Insert *InsertRoute

	classes []*keyClass
	// onDefault is set when a Sharded statement also names unsharded
	// tables: it may only run on the sub-tables of the default cluster
	// (onDefault[i]), and on one of them when it writes an unsharded table.
	onDefault       []bool
	unshardedName   string
	writesUnsharded bool
}

// InsertRoute describes the rows of an INSERT or REPLACE into a sharded
// table.
type InsertRoute struct {
	Table *sharding.SchemaTable
	// Kind is what the statement does with a row whose key exists (INSERT,
	// INSERT IGNORE, REPLACE, ON DUPLICATE KEY UPDATE).
	Kind mysql.InsertKind
	// Rows is the number of rows of its VALUES.
	Rows int
	// KeyColumn is the shard key's position in the column list, -1 when
	// the key column is omitted.
	KeyColumn int
	// NeedsSequence is set when the column list omits the shard key: every
	// row's key is generated (AUTO_INCREMENT), from the table's sequence.
	// (Rows that give NULL, DEFAULT or 0 for the key are found per
	// execution, by Keys.)
	NeedsSequence bool
	// SequenceColumn names the omitted key column.
	SequenceColumn string
	keys           []valRef // each row's key value, unless NeedsSequence
}

// Analyze resolves the tables of stmt (a SELECT, UNION, INSERT, REPLACE,
// UPDATE or DELETE) in schema, with db the session's current database,
// and decides where the statement may run. A statement that cannot be run
// with exactly the answer of one server gets a *mysql.SQLError naming
// what is not supported. Other statement types are refused: DDL, SHOW and
// session statements are routed without analysis.
func Analyze(stmt sqlparser.Statement, schema *sharding.Schema, db string) (*Analysis, error) {
	a := &analyzer{schema: schema, db: db}
	if err := a.statement(stmt); err != nil {
		return nil, err
	}
	return a.finish()
}

// inSchema reports whether the database name db is the schema's.
func inSchema(schema *sharding.Schema, db string) bool {
	return strings.EqualFold(db, schema.Name)
}
