package planner

import (
	"fmt"
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/sharding"
)

func (a *analyzer) updateStmt(u *sqlparser.Update) error {
	a.write = true
	sc := a.newScope(nil, 0)
	if err := a.with(sc, u.With); err != nil {
		return err
	}
	if err := a.from(sc, u.TableExprs); err != nil {
		return err
	}
	if u.Where != nil {
		a.condition(sc, u.Where.Expr, true)
	}
	for _, ue := range u.Exprs {
		if err := a.assigned(sc, ue.Name); err != nil {
			return err
		}
	}
	if err := a.subqueries(sc, u.Exprs, u.Where, u.OrderBy, u.Limit); err != nil {
		return err
	}
	if len(u.OrderBy) > 0 {
		a.merge |= MergeUpdateOrderBy
	}
	if u.Limit != nil {
		a.merge |= MergeUpdateLimit
	}
	return nil
}

// assigned marks the table an UPDATE assigns col of as written and
// refuses an assignment to a shard key: the row would have to move to
// another sub-table. An unqualified column of a multi-table UPDATE may
// belong to any of its tables.
func (a *analyzer) assigned(sc *scope, col *sqlparser.ColName) error {
	for _, r := range sc.refs {
		if !col.Qualifier.IsEmpty() && !r.matches(col.Qualifier) {
			continue
		}
		r.written = true
		if r.kind == refSharded && strings.EqualFold(col.Name.String(), r.st.ShardKey) {
			return notSupported(fmt.Sprintf("UPDATE of shard key column %s.%s", r.st.Name, r.st.ShardKey))
		}
	}
	return nil
}

func (a *analyzer) deleteStmt(d *sqlparser.Delete) error {
	a.write = true
	sc := a.newScope(nil, 0)
	if err := a.with(sc, d.With); err != nil {
		return err
	}
	if err := a.from(sc, d.TableExprs); err != nil {
		return err
	}
	if d.Where != nil {
		a.condition(sc, d.Where.Expr, true)
	}
	if err := a.subqueries(sc, d.Where, d.OrderBy, d.Limit); err != nil {
		return err
	}
	a.deleted(sc, d.Targets)
	if len(d.OrderBy) > 0 {
		a.merge |= MergeDeleteOrderBy
	}
	if d.Limit != nil {
		a.merge |= MergeDeleteLimit
	}
	return nil
}

// deleted marks the tables a DELETE deletes from: its targets, or its one
// table.
func (a *analyzer) deleted(sc *scope, targets sqlparser.TableNames) {
	if len(targets) == 0 {
		for _, r := range sc.refs {
			r.written = true
		}
		return
	}
	for _, t := range targets {
		for _, r := range sc.refs {
			if r.matches(t) || r.alias == "" && strings.EqualFold(r.name, t.Name.String()) && t.Qualifier.IsEmpty() {
				r.written = true
			}
		}
	}
}

func (a *analyzer) insertStmt(ins *sqlparser.Insert) error {
	a.write = true
	verb := "INSERT"
	if ins.Action == sqlparser.ReplaceAct {
		verb = "REPLACE"
	}
	sc := a.newScope(nil, 0)
	tn, ok := ins.Table.Expr.(sqlparser.TableName)
	if !ok {
		return notSupported(verb + " into a derived table")
	}
	target := a.tableName(sc, tn)
	target.written = true
	sc.refs = append(sc.refs, target)
	switch rows := ins.Rows.(type) {
	case sqlparser.Values:
		if err := a.subqueries(sc, rows); err != nil {
			return err
		}
		if target.kind == refSharded {
			if err := a.insertRows(verb, ins, target, rows); err != nil {
				return err
			}
		}
	case sqlparser.TableStatement:
		if target.kind == refSharded {
			return notSupported(fmt.Sprintf("%s … SELECT into sharded table %s", verb, target.st.Name))
		}
		// The SELECT's rows are the statement's row source; a SELECT of
		// several sub-tables into one unsharded table is refused by finish.
		if _, err := a.tableStatement(rows, sc, 0); err != nil {
			return err
		}
	default:
		return notSupported(fmt.Sprintf("%s with %s", verb, kindOf(rows)))
	}
	for _, ue := range ins.OnDup {
		if target.kind == refSharded && strings.EqualFold(ue.Name.Name.String(), target.st.ShardKey) {
			return notSupported(fmt.Sprintf("ON DUPLICATE KEY UPDATE of shard key column %s.%s", target.st.Name, target.st.ShardKey))
		}
	}
	return a.subqueries(sc, ins.OnDup)
}

// insertKind is what the statement does with a row whose key exists.
func insertKind(ins *sqlparser.Insert) mysql.InsertKind {
	switch {
	case len(ins.OnDup) > 0:
		return mysql.InsertUpdate
	case ins.Action == sqlparser.ReplaceAct:
		return mysql.InsertReplace
	case bool(ins.Ignore):
		return mysql.InsertIgnore
	}
	return mysql.InsertPlain
}

// insertRows records each row's key value. The key's position comes from
// the column list, which the planner fills in from the table's learnt
// columns when the statement has none (Keyspace.build). A row with the
// wrong number of values gets the server's error, since the rows are
// split before any server sees them: one server refuses the whole
// statement, a sub-table would refuse its part only.
func (a *analyzer) insertRows(verb string, ins *sqlparser.Insert, target *tableRef, rows sqlparser.Values) error {
	st, cols := target.st, ins.Columns
	if len(cols) == 0 {
		return notSupported(fmt.Sprintf("%s into sharded table %s without a column list before its columns are known", verb, st.Name))
	}
	for i, row := range rows {
		if len(row) != len(cols) {
			return mysql.NewError(erWrongValueCountOnRow, stateWrongValueCount, "Column count doesn't match value count at row %d", i+1)
		}
	}
	ir := &InsertRoute{Table: st, Kind: insertKind(ins), Rows: len(rows), KeyColumn: -1}
	a.insert = ir
	for i, c := range cols {
		if strings.EqualFold(c.String(), st.ShardKey) {
			ir.KeyColumn = i
		}
	}
	if ir.KeyColumn < 0 {
		ir.NeedsSequence, ir.SequenceColumn = true, st.ShardKey
		return nil
	}
	ir.keys = make([]valRef, len(rows))
	for i, row := range rows {
		e := row[ir.KeyColumn]
		if _, ok := e.(*sqlparser.Default); ok {
			ir.keys[i] = valRef{lit: sharding.NullLit(), dflt: true}
			continue
		}
		v, ok := valueOf(e)
		if !ok {
			return notSupported(fmt.Sprintf("%s into sharded table %s whose shard key %s in row %d is an expression, not a value",
				verb, st.Name, st.ShardKey, i+1))
		}
		ir.keys[i] = v
	}
	return nil
}

// The server's error for a row with the wrong number of values.
const (
	erWrongValueCountOnRow = 1136
	stateWrongValueCount   = "21S01"
)
