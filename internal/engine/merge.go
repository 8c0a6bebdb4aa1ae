package engine

import (
	"sync/atomic"

	"vitess.io/vitess/go/sqltypes"
	"vitess.io/vitess/go/vt/vtgate/evalengine"
)

// Merge answers a SELECT whose rows live on several shards with exactly
// the result one server holding every row would give: each shard runs a
// pushed-down statement (Parts, one per shard: the shard's sub-tables
// read through one statement, a UNION ALL when there are several) whose
// rows arrive sorted by Spec.Order; the merge combines the streams
// (k-way, one buffered row per shard), groups and aggregates, filters
// (HAVING), orders again when the final order differs, removes
// duplicates, skips Offset rows and stops after Count.
//
// Column definitions are the first part's (logical table names put back),
// the Spec.Hidden trailing columns dropped: the shards type every column
// as one server would, so the client sees the server's types even for
// values the merge computes.
type Merge struct {
	Parts     []Part
	ReplicaOK bool
	Spec      *MergeSpec
	// Offset and Count are this execution's LIMIT (HasLimit false: none).
	// Bounded: the parts' statements have LIMIT offset+count, so a part
	// stopped early is read to its end rather than killed.
	Offset, Count uint64
	HasLimit      bool
	Bounded       bool
	// The column definitions the client gets are those of the client's
	// own statement on one sub-table: the parts run a rewritten SELECT
	// (hidden columns, other grouping, a UNION ALL of a shard's
	// sub-tables), which MariaDB may type with other flags and lengths,
	// or without their tables. Columns holds them when known (Cache);
	// else Probe is set: the first part's command is two statements, the
	// client's statement as written on one sub-table, whose definitions
	// the client gets (its rows are read and dropped), then the part's
	// own. For a prepared statement's execution ProbeStmt is the probe,
	// executed on the first part's connection before the part (one round
	// trip). A probe that found a row fills Cache for later executions.
	Columns     [][]byte
	Cache       *ColumnCache
	Probe       bool
	ProbeStmt   []byte
	ProbeParams []int
	// Fallback answers the statement when the merge, having seen the
	// parts' columns or first rows, refuses it before anything reached
	// the client (a comparison of strings or dates the proxy does not
	// compute): the parts are stopped and Fallback runs (an Evaluate).
	// nil: the refusal is the answer.
	Fallback Primitive

	mergeState // an execution's I/O state (merge_io.go)
}

// ColumnCache keeps the column definitions of a statement shape's
// merges, learnt by a probe: safe for concurrent use.
type ColumnCache struct{ defs atomic.Pointer[[][]byte] }

// Load returns the definitions, nil until learnt. Do not modify them.
func (c *ColumnCache) Load() [][]byte {
	if p := c.defs.Load(); p != nil {
		return *p
	}
	return nil
}

// Store keeps a copy of defs.
func (c *ColumnCache) Store(defs [][]byte) {
	cp := make([][]byte, len(defs))
	for i, d := range defs {
		cp[i] = append([]byte(nil), d...)
	}
	c.defs.Store(&cp)
}

// Forget drops the definitions (a part's columns disagreed with them).
func (c *ColumnCache) Forget() { c.defs.Store(nil) }

// MergeSpec is the plan-time half of a Merge, shared by every execution
// of a statement shape: immutable.
type MergeSpec struct {
	// Hidden is how many trailing columns of the parts' rows the client
	// does not see: sort keys, group keys and aggregate components the
	// planner added to the select list.
	Hidden int
	// Order is the order the parts' rows arrive in, by columns of the
	// part rows (0-based, visible or hidden), and the order the merge
	// keeps. Values compare as MySQL compares them: numbers as numbers,
	// strings by the column's collation (from its definition), NULL
	// first ascending.
	Order []SortKey
	// Groups > 0: the query groups (GROUP BY, or aggregates without GROUP
	// BY when Order is empty), and the first Groups keys of Order are the
	// group keys: consecutive rows whose group keys compare equal are one
	// group, combined by Aggregates. An aggregate query without GROUP BY
	// has Groups = -1: every row is one group, and zero rows still make
	// one group (COUNT 0, SUM NULL), as one server answers.
	Groups int
	// Aggregates combine the rows of a group, column by column; a
	// column of the part rows no aggregate names keeps the group's first
	// row's value (the group keys, and computed columns before Computed).
	// For COUNT(DISTINCT x) and SUM(DISTINCT x) the parts group by the
	// group keys and x, Order lists x right after the group keys, and
	// rows of a group with equal x are one value.
	Aggregates []Aggregate
	// Having filters the combined rows (nil: every row). Its columns
	// are offsets in the combined row (every part column, visible and
	// hidden, after aggregation).
	Having         evalengine.Expr
	HavingOperands Operands
	// Computed are visible columns whose value is an expression over the
	// combined row (SUM(a) - SUM(b), AVG's SUM / COUNT), formatted to the
	// column's definition (type, decimals).
	Computed []ComputedColumn
	// Final, when set, is the order of the answer after grouping (ORDER
	// BY an aggregate): the combined rows are sorted again, within the
	// memory budget (a bounded heap of Offset+Count rows under a LIMIT).
	Final []SortKey
	// Weights[c], when Weights is set and it is not -1, is the column
	// holding the weight string of column c's value (WEIGHT_STRING, which
	// the planner adds for every key, MIN/MAX and DISTINCT argument that
	// may be a string), and the column after it the weight of a space
	// under the same collation (empty for binary strings and NO PAD
	// collations): strings compare by their weights' bytes, the shorter
	// padded with the space's, as PAD SPACE compares. A column
	// definition names the connection's character set, not the column's
	// collation, so a string column without a weight compares exactly
	// only when it is binary (charset 63).
	Weights []int
	// Budget bounds the memory the merge holds for rows it cannot stream
	// (Final without LIMIT): past it the query fails with a clear error,
	// or, when Spill is set, the final sort writes its rows to a
	// temporary file. 0 is DefaultMergeBudget.
	Budget int64
	Spill  bool
}

// passesRows reports a merge that sends the parts' rows on as they come,
// whole: nothing to order, group, combine, filter or hide (a read that
// needs no merge, run as one so that its shards run at once). Its rows
// need not be decoded, and the column definitions of its statement do
// not depend on the rows found.
func (s *MergeSpec) passesRows() bool {
	return len(s.Order) == 0 && s.Groups == 0 && len(s.Aggregates) == 0 && len(s.Computed) == 0 &&
		s.Having == nil && len(s.Final) == 0 && s.Hidden == 0
}

// SortKey is one ORDER BY key: a column of the part rows and its
// direction.
type SortKey struct {
	Col  int
	Desc bool
}

// AggKind is how the parts' values of one aggregate column combine.
type AggKind uint8

const (
	AggCount         AggKind = iota + 1 // COUNT(*) and COUNT(x): the parts' counts summed
	AggSum                              // SUM(x): exact (DECIMAL) sum; NULL when every part's is
	AggMin                              // MIN(x)
	AggMax                              // MAX(x)
	AggBitAnd                           // BIT_AND(x)
	AggBitOr                            // BIT_OR(x)
	AggBitXor                           // BIT_XOR(x)
	AggCountDistinct                    // COUNT(DISTINCT x): distinct non-NULL values of Arg counted
	AggSumDistinct                      // SUM(DISTINCT x): distinct non-NULL values of Arg summed
	AggGroupConcat                      // GROUP_CONCAT: the values of Arg, in the rows' order, joined by Sep
)

// Aggregate combines column Col of the rows of one group. For the
// DISTINCT kinds, Arg is the column holding x (a hidden group key of the
// part rows).
//
// MIN(x) and MAX(x) take the values of With, columns the shards compute
// from the aggregate alone (and the group's constants), from the part
// row whose value wins: their value for the merged aggregate is exactly
// the server's (MAX(name) > 'walter' under the column's collation,
// UPPER(MIN(x)), MAX(created) < 20210601), as one server computes it
// from that very value.
//
// GROUP_CONCAT(x ORDER BY o SEPARATOR s): the parts group by the group
// keys, o and CONCAT(x) (Arg), each row with how many rows it stands for
// (the column Count, COUNT(*)); Keys are the columns of o and Arg, the
// order it joins values in: when Order lists them right after the group
// keys the rows arrive in it and are joined as they stream, else the
// group's rows are sorted at its end, within the budget. MaxLen is the
// column holding the session's group_concat_max_len. Distinct: each
// value of Arg once.
type Aggregate struct {
	Kind     AggKind
	Col      int
	With     []int
	Arg      int
	Count    int
	MaxLen   int
	Keys     []SortKey
	Sep      string
	Distinct bool
}

// ComputedColumn is a visible column whose value the merge computes from
// the combined row.
type ComputedColumn struct {
	Col      int
	Expr     evalengine.Expr
	Operands Operands
}

// Operands are the columns an expression the merge evaluates reads.
// Vitess's evalengine agrees with the server on
// numbers, but not on strings (it compares utf8mb4_unicode_ci NO PAD)
// nor on dates (a DATETIME compared with an integer): an expression
// reading another type is refused when the columns' types are known.
// (What the merge would compute from one MIN or MAX alone, the shards
// compute; see Aggregate.With.)
type Operands struct {
	Cols []Operand
}

// Operand is a column an evaluated expression reads, named for a refusal
// by Text (an aggregate's, a constant's). Loose: a constant (a literal, a
// parameter) that an arithmetic or comparison operator reads as a number,
// whatever its type.
type Operand struct {
	Col   int
	Text  string
	Loose bool
}

// mergeInput is one part's rows, in Spec.Order: the I/O side of a Merge
// (merge_io.go) reads them from a shard's connection.
type mergeInput interface {
	// Next returns the part's next row: every column, visible and
	// hidden, in the text protocol's form typed by its column definition
	// (sqltypes.MakeTrusted(sqltypes.MySQLToType(type, flags), text);
	// NULL is sqltypes.NULL). The row is valid until the next call; ok
	// is false after the last row.
	Next() (row []sqltypes.Value, ok bool, err error)
}

// mergeOutput receives the answer's rows.
type mergeOutput interface {
	// Row sends a row the merge composed: the visible columns, in the
	// text form (re-encoded for a binary-protocol client).
	Row(row []sqltypes.Value) error
	// Pass sends input i's current row as it arrived (its visible
	// columns): rows a merge passes unchanged cost no conversion.
	Pass(i int) error
}

// The two halves of Merge.Execute meet here: the I/O side (merge_io.go)
// opens the parts, sends the client the visible column definitions, and
// calls
//
//	m.run(cols, inputs, out)
//
// (merge_run.go) with every part column's definition (the first part's);
// run returns once the answer's rows are out: after the last row, or
// early once LIMIT's rows are out (the I/O side then stops the parts
// still running). A *mysql.SQLError from run (a memory budget exceeded,
// a value the merge cannot combine exactly) goes to the client as is;
// an input's error is returned unchanged.
