package planner

import (
	"strings"

	"github.com/shardgate/shardgate/internal/mysql"
)

// erNoPartitionForValue is MySQL's ER_NO_PARTITION_FOR_GIVEN_VALUE: what a
// partitioned table answers for a row no partition holds, and what a
// sharded table answers for a row no sub-table holds.
const erNoPartitionForValue uint16 = 1526

// notSupported is error 1235 (42000) in MySQL's own words for
// ER_NOT_SUPPORTED_YET, naming what shardgate does not support.
func notSupported(what string) error {
	return mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax, "This version of shardgate doesn't yet support '%s'", what)
}

func noSubTableFor(value string) error {
	return mysql.NewError(erNoPartitionForValue, mysql.StateGeneral, "Table has no partition for value %s", value)
}

// Constructs is a set of SQL constructs whose answer is only correct when
// one sub-table answers: across several they need a merge (issue 14).
type Constructs uint16

const (
	MergeOrderBy Constructs = 1 << iota
	MergeGroupBy
	MergeAggregate
	MergeDistinct
	MergeLimit
	MergeHaving
	MergeUnion
	MergeWindow
	MergeCalcFoundRows
	MergeInto
	MergeUpdateOrderBy
	MergeUpdateLimit
	MergeDeleteOrderBy
	MergeDeleteLimit
	// MergeRowsElsewhere: a SELECT whose rows are not a sharded table's
	// (it reads reference or unsharded tables, or none, with the sharded
	// table only in a subquery or on the NULL side of an outer join):
	// each sub-table would give every one of its rows again.
	MergeRowsElsewhere
)

// Mergeable are the constructs of a statement's own SELECT that a merge
// of the sub-tables' rows answers (engine.Merge).
const Mergeable = MergeOrderBy | MergeGroupBy | MergeAggregate | MergeDistinct | MergeLimit | MergeHaving | MergeUnion

var constructNames = []string{
	"ORDER BY", "GROUP BY", "aggregate functions", "DISTINCT", "LIMIT", "HAVING", "UNION",
	"window functions", "SQL_CALC_FOUND_ROWS", "SELECT … INTO",
	"UPDATE … ORDER BY", "UPDATE … LIMIT", "DELETE … ORDER BY", "DELETE … LIMIT",
	"rows of reference tables with a sharded table in a subquery or an outer join",
}

// String names the constructs in c, joined by ", ".
func (c Constructs) String() string {
	var names []string
	for i, name := range constructNames {
		if c&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	return strings.Join(names, ", ")
}
