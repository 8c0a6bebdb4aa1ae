package planner

import (
	"errors"
	"fmt"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/sequence"
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
	// ClientCharset is the character set of the statement's string
	// literals (the session's), for those the plan holds as written.
	ClientCharset() sharding.Charset
}

// Route returns the sub-tables a Sharded statement runs on for one
// execution. It never returns an empty set: a statement no row can
// satisfy (id = NULL, a key in a range gap) runs on one sub-table, which
// gives the right empty answer with the right column definitions. It
// refuses, with error 1235, what cannot be answered exactly: tables whose
// keys do not meet on one sub-table, Merge constructs across several
// sub-tables, unsharded tables with sub-tables off the default cluster.
// For INSERT and REPLACE it returns the union of the rows' sub-tables,
// refusing generated keys (Keys and Place give each row's). It does not allocate for up to 256
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
		if a.TopMerge&MergeUnion != 0 {
			t.or(&s) // each sub-table runs the whole UNION
			continue
		}
		i, one := t.Single()
		if j, other := s.Single(); !one || !other || i != j {
			return Target{}, classesApart(a.Merge, found, c.name)
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

// classesApart refuses tables whose keys do not meet on one sub-table,
// naming what brought them together: a UNION of their rows is not a join.
func classesApart(merge Constructs, a, b string) error {
	if merge&MergeUnion != 0 {
		return notSupported(fmt.Sprintf("UNION of %s and %s across several sub-tables", a, b))
	}
	return notSupported(fmt.Sprintf("a join of %s and %s across sub-tables (join them on their shard keys)", a, b))
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

// RowKeys is one execution's shard keys of the rows of an INSERT or
// REPLACE into a sharded table: Keys reads them, the caller draws the
// generated ones from the table's sequence, Place puts each row on its
// sub-table. The caller keeps a RowKeys from one statement to the next, so
// that this allocates nothing once its slices have grown.
type RowKeys struct {
	// Sub is each row's sub-table, in row order (Place).
	Sub []int
	// Generate lists the rows (0-based, ascending) whose key the table's
	// sequence generates: the key is the table's AUTO_INCREMENT column and
	// the row omits it, or gives NULL, DEFAULT, or 0 without
	// NO_AUTO_VALUE_ON_ZERO, as MySQL decides (sequence.Generates).
	Generate []int
	// AutoIncrement: the key is the sub-tables' AUTO_INCREMENT column.
	AutoIncrement bool
	// MaxExplicit is the largest positive key a row gives itself when the
	// key is AUTO_INCREMENT (for Sequence.Observe), else 0.
	MaxExplicit uint64
	// LastKey is the last row's key, as the server reports it in the OK
	// packet of an INSERT whose rows all give their AUTO_INCREMENT key
	// (two's complement for a negative one); LastKeyKnown says whether the
	// last row gives an integer key.
	LastKey      uint64
	LastKeyKnown bool
	vals         []sharding.Value // each row's key; generated rows' unset
	// ids are the generated keys, by generated row, when they are not
	// first, first+1, … (a row giving a key above the counter between
	// them: drawInOrder); empty otherwise.
	ids []uint64
}

// generated is the key of the g-th generated row, the first being first.
func (k *RowKeys) generated(g int, first uint64) uint64 {
	if len(k.ids) == len(k.Generate) {
		return k.ids[g]
	}
	return first + uint64(g)
}

// Keys reads the shard key of each row of an INSERT or REPLACE into a
// sharded table into k. A key that is not exactly one value of the
// column's type, a DEFAULT or omitted key that is not AUTO_INCREMENT, and
// a table whose key type is not known yet get error 1235.
// noAutoValueOnZero is the session's sql_mode flag of that name.
func (a *Analysis) Keys(v Values, noAutoValueOnZero bool, k *RowKeys) error {
	ir := a.Insert
	if ir == nil {
		return fmt.Errorf("planner: Keys on a statement that is not an INSERT into a sharded table")
	}
	*k = RowKeys{Sub: k.Sub[:0], Generate: k.Generate[:0], vals: k.vals[:0], ids: k.ids[:0]}
	ct, ok := ir.Table.KeyType()
	if !ok {
		return notSupported(fmt.Sprintf("an INSERT into sharded table %s before the type of its shard key %s is known", ir.Table.Name, ir.Table.ShardKey))
	}
	k.AutoIncrement = ct.AutoIncrement
	if ir.NeedsSequence {
		if !ct.AutoIncrement {
			return notSupported(fmt.Sprintf("an INSERT into sharded table %s that omits its shard key %s, which is not AUTO_INCREMENT (give the key in every row)", ir.Table.Name, ir.SequenceColumn))
		}
		for i := 0; i < ir.Rows; i++ {
			k.Generate = append(k.Generate, i)
			k.vals = append(k.vals, sharding.Value{})
		}
		return nil
	}
	for i, r := range ir.keys {
		if r.dflt && ct.AutoIncrement {
			k.Generate = append(k.Generate, i)
			k.vals = append(k.vals, sharding.Value{})
			continue
		}
		val, err := r.convert(ct, v)
		if err != nil {
			return notSupported(fmt.Sprintf("an INSERT into sharded table %s whose shard key %s is not exactly one value of its type: %v", ir.Table.Name, ir.Table.ShardKey, err))
		}
		isZero := val.Kind() == sharding.KindInt && val.Int() == 0
		if ct.AutoIncrement && sequence.Generates(val.IsNull(), isZero, noAutoValueOnZero) {
			k.Generate = append(k.Generate, i)
			k.vals = append(k.vals, sharding.Value{})
			continue
		}
		k.vals = append(k.vals, val)
		if !ct.AutoIncrement {
			continue
		}
		switch val.Kind() {
		case sharding.KindInt:
			if val.Int() > 0 {
				k.MaxExplicit = max(k.MaxExplicit, uint64(val.Int()))
			}
		case sharding.KindUint:
			k.MaxExplicit = max(k.MaxExplicit, val.Uint())
		}
	}
	if last := len(k.vals) - 1; last >= 0 && (len(k.Generate) == 0 || k.Generate[len(k.Generate)-1] != last) {
		switch val := k.vals[last]; val.Kind() {
		case sharding.KindInt, sharding.KindUint:
			k.LastKey, k.LastKeyKnown = val.Uint(), true
		}
	}
	return nil
}

// Place puts each row read by Keys on its sub-table (k.Sub), the rows of
// k.Generate with the keys first, first+1, …, in order. A key no
// sub-table holds gets error 1526, as from a partitioned table.
func (a *Analysis) Place(k *RowKeys, first uint64) error {
	ir, rule := a.Insert, a.Group.Rule
	k.Sub = k.Sub[:0]
	g := 0
	for i, val := range k.vals {
		if g < len(k.Generate) && k.Generate[g] == i {
			val = sharding.UintValue(k.generated(g, first))
			g++
		}
		sub, err := ir.index(rule, val)
		if err != nil {
			return err
		}
		k.Sub = append(k.Sub, sub)
	}
	return nil
}

func (a *Analysis) insertTarget(v Values) (Target, error) {
	ir := a.Insert
	ct, err := ir.keyType()
	if err != nil {
		return Target{}, err
	}
	t := newTarget(a.Group.Rule.SubTables(), false)
	for _, k := range ir.keys {
		val, err := k.convert(ct, v)
		if err != nil {
			return Target{}, notSupported(fmt.Sprintf("an INSERT into sharded table %s whose shard key %s is not exactly one value of its type: %v", ir.Table.Name, ir.Table.ShardKey, err))
		}
		i, err := ir.index(a.Group.Rule, val)
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

// index is the sub-table of a row whose key is val.
func (ir *InsertRoute) index(r sharding.Rule, val sharding.Value) (int, error) {
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
	switch {
	case !ok:
	case r.intro: // _latin1'…', _binary'…', N'…'
		lit = lit.InCharset(r.cs)
	case r.client && v != nil: // a string literal of the plan, in the session's character set
		lit = lit.InCharset(v.ClientCharset())
	}
	if ok && r.neg {
		lit, ok = lit.Neg()
	}
	if !ok || r.dflt || r.temporal && ct.Class != sharding.ClassDate && ct.Class != sharding.ClassDatetime {
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
