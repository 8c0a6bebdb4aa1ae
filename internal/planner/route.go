package planner

import (
	"errors"
	"fmt"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/sharding"
)

// Values gives one execution's key values: literal i (1-based, in text
// order) of the normalized statement, which the parsed text holds as
// :sgl<i>, and prepared-statement parameter i (:sgp<i>). A literal must be
// passed as written: 0x2A and b'101010' as sharding.HexLit, X'2A' and quoted
// strings as sharding.StringLit, unquoted numbers as sharding.NumberLit.
// false means the value is not known; the key is then treated as inexact.
type Values interface {
	Lit(i int) (sharding.Literal, bool)
	Param(i int) (sharding.Literal, bool)
}

// Route returns the sub-tables a Sharded statement runs on for one
// execution. It never returns an empty set: a statement no row can
// satisfy (id = NULL, a key in a range gap) runs on one sub-table, which
// gives the right empty answer with the right column definitions. It
// refuses, with error 1235, what cannot be answered exactly: tables whose
// keys do not meet on one sub-table, Merge constructs across several
// sub-tables, unsharded tables with sub-tables off the default cluster.
// For INSERT and REPLACE it returns the union of the rows' sub-tables
// (RowSubTables gives each row's). It does not allocate for up to 256
// sub-tables on equality and IN predicates.
func (a *Analysis) Route(v Values) (Target, error) {
	if a.Placement != Sharded {
		return Target{}, fmt.Errorf("planner: Route on a %s statement", a.Placement)
	}
	if a.Insert != nil {
		return a.insertTarget(v)
	}
	rule := a.Group.Rule
	var t Target
	found := ""
	for _, c := range a.classes {
		if err := c.checkKeyTypes(); err != nil {
			return Target{}, err
		}
		s := c.eval(rule, v)
		if s.Len() == 0 {
			continue // no row of the class can answer: any sub-table will do
		}
		if found == "" {
			t, found = s, c.name
			continue
		}
		i, one := t.Single()
		if j, other := s.Single(); !one || !other || i != j {
			return Target{}, notSupported(fmt.Sprintf("a join of %s and %s across sub-tables (join them on their shard keys)", found, c.name))
		}
	}
	if found == "" {
		t = newTarget(rule.SubTables(), false)
		t.add(a.firstAllowed())
	}
	if err := a.checkUnsharded(t); err != nil {
		return Target{}, err
	}
	if t.Len() > 1 && a.Merge != 0 {
		return Target{}, notSupported(fmt.Sprintf("%s across several sub-tables of %s", a.Merge, a.classes[0].name))
	}
	return t, nil
}

// SampleSubTable is a sub-table the statement may run on whatever its
// values: where a prepared statement is prepared for the client's
// PREPARE answer (its parameter count and column definitions).
func (a *Analysis) SampleSubTable() int { return a.firstAllowed() }

// firstAllowed is the sub-table an empty answer runs on.
func (a *Analysis) firstAllowed() int {
	for i, ok := range a.onDefault {
		if ok {
			return i
		}
	}
	return 0
}

func (a *Analysis) checkUnsharded(t Target) error {
	if a.onDefault == nil {
		return nil
	}
	for i := t.Next(0); i >= 0; i = t.Next(i + 1) {
		if !a.onDefault[i] {
			return notSupported(fmt.Sprintf("a statement on sharded table %s and unsharded table %s that needs sub-tables outside cluster %s",
				a.classes[0].name, a.unshardedName, a.Cluster))
		}
	}
	if a.writesUnsharded && t.Len() > 1 {
		return notSupported(fmt.Sprintf("a write to unsharded table %s from several sub-tables of %s", a.unshardedName, a.classes[0].name))
	}
	return nil
}

// checkKeyTypes refuses a join of tables whose key columns compare
// differently: equal keys of different types are not placed alike.
func (c *keyClass) checkKeyTypes() error {
	if len(c.tables) < 2 {
		return nil
	}
	first, ok := c.tables[0].KeyType()
	for _, t := range c.tables[1:] {
		ct, known := t.KeyType()
		if ok && known && !sameKeyType(first, ct) {
			return notSupported(fmt.Sprintf("a join of %s and %s on shard keys of different types", c.tables[0].Name, t.Name))
		}
	}
	return nil
}

func sameKeyType(a, b sharding.ColumnType) bool {
	integer := func(c sharding.Class) bool { return c == sharding.ClassInt || c == sharding.ClassUint }
	if integer(a.Class) && integer(b.Class) {
		return true
	}
	return a.Class == b.Class && a.Collation == b.Collation
}

func (c *keyClass) eval(r sharding.Rule, v Values) Target {
	t := newTarget(r.SubTables(), true)
	for _, p := range c.preds {
		s := p.eval(c.id, r, v)
		t.and(&s)
	}
	return t
}

// RowSubTables appends to dst the sub-table of each row of an INSERT or
// REPLACE into a sharded table, in row order. A row whose key no
// sub-table holds gets error 1526 as from a partitioned table; a key that
// is not exactly one value of the column's type, or an omitted key (a
// generated AUTO_INCREMENT value), gets error 1235.
func (a *Analysis) RowSubTables(v Values, dst []int) ([]int, error) {
	ir := a.Insert
	if ir == nil {
		return dst, fmt.Errorf("planner: RowSubTables on a statement that is not an INSERT into a sharded table")
	}
	ct, err := ir.keyType()
	if err != nil {
		return dst, err
	}
	for _, k := range ir.keys {
		i, err := ir.rowIndex(a.Group.Rule, ct, k, v)
		if err != nil {
			return dst, err
		}
		dst = append(dst, i)
	}
	return dst, nil
}

func (a *Analysis) insertTarget(v Values) (Target, error) {
	ir := a.Insert
	ct, err := ir.keyType()
	if err != nil {
		return Target{}, err
	}
	t := newTarget(a.Group.Rule.SubTables(), false)
	for _, k := range ir.keys {
		i, err := ir.rowIndex(a.Group.Rule, ct, k, v)
		if err != nil {
			return Target{}, err
		}
		t.add(i)
	}
	return t, nil
}

func (ir *InsertRoute) keyType() (sharding.ColumnType, error) {
	if ir.NeedsSequence {
		return sharding.ColumnType{}, notSupported(fmt.Sprintf("an INSERT into sharded table %s that omits its shard key %s (a generated key across shards)", ir.Table.Name, ir.SequenceColumn))
	}
	ct, ok := ir.Table.KeyType()
	if !ok {
		return ct, notSupported(fmt.Sprintf("an INSERT into sharded table %s before the type of its shard key %s is known", ir.Table.Name, ir.Table.ShardKey))
	}
	return ct, nil
}

func (ir *InsertRoute) rowIndex(r sharding.Rule, ct sharding.ColumnType, k valRef, v Values) (int, error) {
	val, err := k.convert(ct, v)
	if err != nil {
		return 0, notSupported(fmt.Sprintf("an INSERT into sharded table %s whose shard key %s is not exactly one value of its type: %v", ir.Table.Name, ir.Table.ShardKey, err))
	}
	i, err := r.Index(val)
	if errors.Is(err, sharding.ErrNoSubTable) {
		return 0, noSubTableFor(val.String())
	}
	if err != nil {
		return 0, mysql.NewError(mysql.ERUnknownError, mysql.StateGeneral, "shardgate: sharded table %s: %v", ir.Table.Name, err)
	}
	return i, nil
}

var errNoValue = fmt.Errorf("%w: the value of a placeholder is not known", sharding.ErrInexact)

// convert turns the value into a key of type ct.
func (r valRef) convert(ct sharding.ColumnType, v Values) (sharding.Value, error) {
	lit, ok := r.lit, true
	switch {
	case r.src == srcLit && v != nil:
		lit, ok = v.Lit(r.idx)
	case r.src == srcParam && v != nil:
		lit, ok = v.Param(r.idx)
	case r.src != srcConst:
		ok = false
	}
	if ok && r.neg {
		lit, ok = lit.Neg()
	}
	if !ok || r.temporal && ct.Class != sharding.ClassDate && ct.Class != sharding.ClassDatetime {
		return sharding.Value{}, errNoValue
	}
	return sharding.Convert(ct, lit)
}

// eval returns the sub-tables whose rows of class cls may satisfy p. Every
// doubt (an inexact value, an unknown key type, an error from the rule)
// gives every sub-table.
func (p *pnode) eval(cls int, r sharding.Rule, v Values) Target {
	n := r.SubTables()
	switch p.op {
	case pAnd, pOr:
		t := p.kids[0].eval(cls, r, v)
		for _, k := range p.kids[1:] {
			s := k.eval(cls, r, v)
			if p.op == pAnd {
				t.and(&s)
			} else {
				t.or(&s)
			}
		}
		return t
	case pAll:
		return newTarget(n, true)
	}
	if p.ref.class != cls || p.ref.nullable {
		return newTarget(n, true)
	}
	ct, ok := p.ref.st.KeyType()
	if !ok {
		return newTarget(n, true)
	}
	if p.op == pRange {
		return p.evalRange(r, ct, v)
	}
	t := newTarget(n, false)
	if p.op == pIsNull {
		return t.index(r, sharding.Null())
	}
	for _, vr := range p.vals {
		val, err := vr.convert(ct, v)
		if err != nil {
			return newTarget(n, true)
		}
		if val.IsNull() && p.op == pEq {
			continue // = NULL matches no row
		}
		if t = t.index(r, val); t.Len() == n {
			break
		}
	}
	return t
}

// index adds the sub-table of key val; a key no sub-table holds adds none,
// an error from the rule gives every sub-table.
func (t Target) index(r sharding.Rule, val sharding.Value) Target {
	i, err := r.Index(val)
	switch {
	case errors.Is(err, sharding.ErrNoSubTable):
	case err != nil:
		return newTarget(t.n, true)
	default:
		t.add(i)
	}
	return t
}

func (p *pnode) evalRange(r sharding.Rule, ct sharding.ColumnType, v Values) Target {
	n := r.SubTables()
	iv := sharding.Interval{HasLo: p.hasLo, HasHi: p.hasHi, LoIncl: p.loIncl, HiIncl: p.hiIncl}
	var err error
	if p.hasLo {
		if iv.Lo, err = p.vals[0].convert(ct, v); err != nil {
			return newTarget(n, true)
		}
	}
	if p.hasHi {
		if iv.Hi, err = p.vals[1].convert(ct, v); err != nil {
			return newTarget(n, true)
		}
	}
	if p.hasLo && iv.Lo.IsNull() || p.hasHi && iv.Hi.IsNull() {
		return newTarget(n, false) // a comparison with NULL matches no row
	}
	s, err := r.Prune(iv)
	if err != nil {
		return newTarget(n, true)
	}
	t := newTarget(n, false)
	for i := 0; i < n; i++ {
		if s.Has(i) {
			t.add(i)
		}
	}
	return t
}
