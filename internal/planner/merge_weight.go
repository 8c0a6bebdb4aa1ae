package planner

import (
	"fmt"
	"strings"
	"sync"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/shardgate/shardgate/internal/engine"
)

// Comparing strings across shards: the shards compute each string
// value's weight under its own collation (WEIGHT_STRING) in hidden
// columns, which the merge compares as bytes.

// addWeights adds, for each column the merge compares (sort and group
// keys, DISTINCT arguments, MIN and MAX), a hidden column with its
// collation weight computed by the shard: a column definition names the
// connection's character set, not the column's collation, so the proxy
// cannot know how a string compares (a utf8mb4_bin column reads as
// utf8mb4_general_ci). The weight string of the value, with trailing
// spaces trimmed for PAD SPACE collations, compares as the collation
// does, byte by byte, for every collation the server has. Values that
// are not strings ignore it; columns the merge computes itself have none.
func (b *mergeBuilder) addWeights() error {
	var cols []int
	for _, ks := range [][]engine.SortKey{b.spec.Order, b.spec.Final} {
		for _, k := range ks {
			cols = append(cols, k.Col)
		}
	}
	for _, a := range b.spec.Aggregates {
		switch a.Kind {
		case engine.AggMin, engine.AggMax:
			cols = append(cols, a.Col)
		case engine.AggCountDistinct, engine.AggSumDistinct:
			cols = append(cols, a.Arg)
		case engine.AggGroupConcat:
			for _, k := range a.Keys {
				cols = append(cols, k.Col)
			}
		}
	}
	computed := map[int]bool{}
	for _, c := range b.spec.Computed {
		computed[c.Col] = true
	}
	weights := map[int]int{}
	for _, c := range cols {
		if _, done := weights[c]; done || computed[c] {
			continue
		}
		e := b.columnExpr(c)
		if e == nil || notString(e) {
			continue
		}
		coll, collated, found := b.resolve(e)
		if found && !collated {
			continue // numbers, dates, binary strings: compared as they are
		}
		w, space, err := weightExprs(e, coll)
		if err != nil {
			return err
		}
		weights[c] = b.addHidden(w)
		b.addHidden(space)
		if a := b.takenWith(c); a != nil {
			a.With = append(a.With, weights[c], weights[c]+1) // the winner's value's weight
		}
	}
	if len(weights) == 0 {
		return nil
	}
	b.spec.Weights = make([]int, b.visible+len(b.hidden))
	for i := range b.spec.Weights {
		b.spec.Weights[i] = -1
	}
	for c, w := range weights {
		b.spec.Weights[c] = w
	}
	return nil
}

// columnExpr is the expression of a column of the pushed rows.
func (b *mergeBuilder) columnExpr(c int) sqlparser.Expr {
	if c >= b.visible {
		return b.hidden[c-b.visible]
	}
	if ae, ok := b.push.SelectExprs.Exprs[c].(*sqlparser.AliasedExpr); ok {
		return ae.Expr
	}
	return nil
}

// resolve finds the column e names among the FROM's tables: found when
// it is a column of exactly one of them, which is learnt (a column no
// learnt table has, or that a table not learnt may have, is not found).
// A column found to hold no character strings (numbers, dates, binary
// strings) is compared as it is, without weights; coll is the collation
// of one that does, "" when not known (nor for a column not found).
func (b *mergeBuilder) resolve(e sqlparser.Expr) (coll string, collated, found bool) {
	c, ok := e.(*sqlparser.ColName)
	if !ok || b.collation == nil {
		return "", false, false
	}
	tables, ok := b.fromTables()
	if !ok {
		return "", false, false
	}
	for _, t := range tables {
		if !c.Qualifier.IsEmpty() && !strings.EqualFold(c.Qualifier.Name.String(), t.exposed) {
			continue
		}
		tc, tcollated, known := b.collation(t.name, c.Name.String())
		switch {
		case known && found:
			return "", false, false // (ambiguous: the server refuses it)
		case known:
			coll, collated, found = tc, tcollated, true
		case !c.Qualifier.IsEmpty() || len(tables) == 1:
			return "", false, false // the table is not known
		}
	}
	return coll, collated, found
}

// notString reports expressions whose value is never a string: their
// comparisons need no weight.
func notString(e sqlparser.Expr) bool {
	switch e := e.(type) {
	case *sqlparser.CountStar, *sqlparser.Count, *sqlparser.Sum, *sqlparser.Avg,
		*sqlparser.BitAnd, *sqlparser.BitOr, *sqlparser.BitXor:
		return true
	case *sqlparser.Literal:
		return e.Type == sqlparser.IntVal || e.Type == sqlparser.DecimalVal || e.Type == sqlparser.FloatVal
	case *sqlparser.BinaryExpr:
		return true // arithmetic and bit operators give numbers
	}
	return false
}

// weightTemplate is a value X's weight string, and spaceTemplate the
// weight of a space under X's collation: the shorter of two weights
// compares as if padded with it, as PAD SPACE collations compare ('a' =
// 'a ', 'a\t' < 'a'). The weight leaves out trailing spaces under a PAD
// SPACE collation, so that values the collation holds equal have equal
// weights (a SELECT DISTINCT with it keeps its rows, a set of weights
// counts each value once). Binary strings and NO PAD collations have no
// space weight and keep their spaces. The shards test X's collation per
// row; for a column whose collation the proxy learnt (resolve) the test is made once, by the planner, and the shards compute the
// weights alone (the pad… or noPad… templates).
const (
	noPad          = "collation(X) = 'binary' or collation(X) like '%nopad%' or collation(X) like '%0900%'"
	weightTemplate = "weight_string(if(" + noPad + ", X, trim(trailing ' ' from X)))"
	spaceTemplate  = "if(" + noPad + ", '', weight_string(concat(left(X, 0), ' ')))"

	padWeightTemplate   = "weight_string(trim(trailing ' ' from X))"
	padSpaceTemplate    = "weight_string(concat(left(X, 0), ' '))"
	noPadWeightTemplate = "weight_string(X)"
	noPadSpaceTemplate  = "''"
)

// isNoPad reports whether collation coll compares trailing spaces: the
// shards' test noPad, made on its name.
func isNoPad(coll string) bool {
	coll = strings.ToLower(coll)
	return coll == "binary" || strings.Contains(coll, "nopad") || strings.Contains(coll, "0900")
}

// weightExprs are the weight and space columns of a value e (see
// MergeSpec.Weights), whose collation is coll ("": not known, tested by
// the shards).
func weightExprs(e sqlparser.Expr, coll string) (weight, space sqlparser.Expr, err error) {
	wt, st := weightTemplate, spaceTemplate
	switch {
	case coll == "":
	case isNoPad(coll):
		wt, st = noPadWeightTemplate, noPadSpaceTemplate
	default:
		wt, st = padWeightTemplate, padSpaceTemplate
	}
	x := sqlparser.String(e)
	if weight, err = weightParser().ParseExpr(strings.ReplaceAll(wt, "X", x)); err == nil {
		space, err = weightParser().ParseExpr(strings.ReplaceAll(st, "X", x))
	}
	if err != nil {
		return nil, nil, notSupported(fmt.Sprintf("comparing %s across shards (%v)", x, err))
	}
	return weight, space, nil
}

var weightParser = sync.OnceValue(func() *sqlparser.Parser { return sqlparser.NewTestParser() })
