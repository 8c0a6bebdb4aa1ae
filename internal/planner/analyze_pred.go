package planner

import (
	"encoding/hex"
	"strconv"
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/shardgate/shardgate/internal/sharding"
)

// pop is a key predicate node's operator.
type pop uint8

const (
	pAll    pop = iota // no constraint on the key: every sub-table
	pEq                // key = vals[0] OR key = vals[1] … (=, IN); NULL matches nothing
	pSafeEq            // key <=> vals[0]: NULL matches the NULL key
	pIsNull            // key IS NULL
	pRange             // lo <(=) key <(=) hi
	pAnd
	pOr
)

// pnode is a predicate over the shard keys of a statement's tables. Leaves
// name the table reference whose key they constrain; which key class that
// is, is known only once every equality has been seen (finish).
type pnode struct {
	op             pop
	ref            *tableRef
	vals           []valRef // pEq, pSafeEq; pRange: lo, hi
	hasLo, hasHi   bool
	loIncl, hiIncl bool
	kids           []*pnode
}

var all = &pnode{op: pAll}

func and(x, y *pnode) *pnode {
	switch {
	case x == nil || x.op == pAll:
		return y
	case y == nil || y.op == pAll:
		return x
	}
	return &pnode{op: pAnd, kids: []*pnode{x, y}}
}

func or(x, y *pnode) *pnode {
	if x.op == pAll || y.op == pAll {
		return all
	}
	return &pnode{op: pOr, kids: []*pnode{x, y}}
}

// predicate builds the key predicate of e in sc, negated when neg is set.
// NOT is pushed down to the comparisons (De Morgan holds in SQL's
// three-valued logic); a negated equality or IN constrains nothing.
// Anything it does not understand is pAll: a superset is safe, a missed
// sub-table is not.
func (a *analyzer) predicate(sc *scope, e sqlparser.Expr, neg bool) *pnode {
	switch x := e.(type) {
	case *sqlparser.AndExpr:
		l, r := a.predicate(sc, x.Left, neg), a.predicate(sc, x.Right, neg)
		if neg {
			return or(l, r)
		}
		return and(l, r)
	case *sqlparser.OrExpr:
		l, r := a.predicate(sc, x.Left, neg), a.predicate(sc, x.Right, neg)
		if neg {
			return and(l, r)
		}
		return or(l, r)
	case *sqlparser.NotExpr:
		return a.predicate(sc, x.Expr, !neg)
	case *sqlparser.ComparisonExpr:
		return a.comparison(sc, x, neg)
	case *sqlparser.BetweenExpr:
		return a.between(sc, x, neg)
	case *sqlparser.IsExpr:
		ref := ownKey(sc, x.Left)
		if ref == nil {
			return all
		}
		if x.Right == sqlparser.IsNullOp && !neg || x.Right == sqlparser.IsNotNullOp && neg {
			return &pnode{op: pIsNull, ref: ref}
		}
	}
	return all
}

// ownKey returns the reference of sc whose shard key e is.
func ownKey(sc *scope, e sqlparser.Expr) *tableRef {
	c, ok := e.(*sqlparser.ColName)
	if !ok {
		return nil
	}
	if ref, own := sc.keyColumn(c); own {
		return ref
	}
	return nil
}

// flipped is the operator with its operands swapped: 5 < id is id > 5.
var flipped = map[sqlparser.ComparisonExprOperator]sqlparser.ComparisonExprOperator{
	sqlparser.LessThanOp: sqlparser.GreaterThanOp, sqlparser.GreaterThanOp: sqlparser.LessThanOp,
	sqlparser.LessEqualOp: sqlparser.GreaterEqualOp, sqlparser.GreaterEqualOp: sqlparser.LessEqualOp,
}

// negated is the comparison NOT (id op v) means: NOT (id < 5) is id >= 5
// (both are NULL for a NULL key).
var negated = map[sqlparser.ComparisonExprOperator]sqlparser.ComparisonExprOperator{
	sqlparser.LessThanOp: sqlparser.GreaterEqualOp, sqlparser.GreaterEqualOp: sqlparser.LessThanOp,
	sqlparser.GreaterThanOp: sqlparser.LessEqualOp, sqlparser.LessEqualOp: sqlparser.GreaterThanOp,
	sqlparser.EqualOp: sqlparser.NotEqualOp, sqlparser.NotEqualOp: sqlparser.EqualOp,
	sqlparser.InOp: sqlparser.NotInOp, sqlparser.NotInOp: sqlparser.InOp,
}

func (a *analyzer) comparison(sc *scope, c *sqlparser.ComparisonExpr, neg bool) *pnode {
	if c.Modifier != sqlparser.Missing {
		return all // = ANY (subquery), = ALL (subquery)
	}
	op, col, val := c.Operator, c.Left, c.Right
	ref := ownKey(sc, col)
	if ref == nil {
		if f, ok := flipped[op]; ok || op == sqlparser.EqualOp || op == sqlparser.NullSafeEqualOp || op == sqlparser.NotEqualOp {
			if ok {
				op = f
			}
			col, val = c.Right, c.Left
			ref = ownKey(sc, col)
		}
		if ref == nil {
			return all
		}
	}
	if neg {
		n, ok := negated[op]
		if !ok {
			return all // NOT (id <=> 1), NOT LIKE …
		}
		op = n
	}
	switch op {
	case sqlparser.EqualOp, sqlparser.NullSafeEqualOp:
		v, ok := valueOf(val)
		if !ok {
			return all
		}
		p := &pnode{op: pEq, ref: ref, vals: []valRef{v}}
		if op == sqlparser.NullSafeEqualOp {
			p.op = pSafeEq
		}
		return p
	case sqlparser.InOp:
		tuple, ok := val.(sqlparser.ValTuple)
		if !ok {
			return all // IN (subquery), IN ::list
		}
		p := &pnode{op: pEq, ref: ref, vals: make([]valRef, 0, len(tuple))}
		for _, e := range tuple {
			v, ok := valueOf(e)
			if !ok {
				return all
			}
			p.vals = append(p.vals, v)
		}
		return p
	case sqlparser.LessThanOp, sqlparser.LessEqualOp:
		return rangeNode(ref, val, false, op == sqlparser.LessEqualOp)
	case sqlparser.GreaterThanOp, sqlparser.GreaterEqualOp:
		return rangeNode(ref, val, true, op == sqlparser.GreaterEqualOp)
	}
	return all
}

// rangeNode is key > v (lower) or key < v, inclusive or not.
func rangeNode(ref *tableRef, val sqlparser.Expr, lower, incl bool) *pnode {
	v, ok := valueOf(val)
	if !ok {
		return all
	}
	p := &pnode{op: pRange, ref: ref, vals: []valRef{v, v}}
	if lower {
		p.hasLo, p.loIncl = true, incl
	} else {
		p.hasHi, p.hiIncl = true, incl
	}
	return p
}

func (a *analyzer) between(sc *scope, b *sqlparser.BetweenExpr, neg bool) *pnode {
	ref := ownKey(sc, b.Left)
	if ref == nil {
		return all
	}
	if b.IsBetween == neg { // NOT BETWEEN: key < from OR key > to
		return or(rangeNode(ref, b.From, false, false), rangeNode(ref, b.To, true, false))
	}
	lo, lok := valueOf(b.From)
	hi, hok := valueOf(b.To)
	if !lok || !hok {
		return all
	}
	return &pnode{op: pRange, ref: ref, vals: []valRef{lo, hi}, hasLo: true, hasHi: true, loIncl: true, hiIncl: true}
}

// valSrc says where a key value comes from at execution.
type valSrc uint8

const (
	srcConst valSrc = iota // a literal of the parsed text
	srcLit                 // :sgl<i>, literal i of the normalized statement
	srcParam               // :sgp<i> (or Vitess's :v<i>), prepared-statement parameter i
)

// valRef is one key value of the statement: a constant, or a placeholder
// resolved through Values at each execution.
type valRef struct {
	src valSrc
	idx int
	lit sharding.Literal
	neg bool // unary minus applied
	// temporal is set for DATE'…' and TIMESTAMP'…' literals: exact only on
	// a date or datetime key (other columns compare them otherwise).
	temporal bool
	// dflt is an INSERT row's DEFAULT: a generated key for an
	// AUTO_INCREMENT column, else a value the proxy does not know.
	dflt bool
	// intro: a character set introducer (_latin1'…', N'…') gives the
	// value's character set, cs. client: a string literal held as
	// written, in the session's character set.
	intro, client bool
	cs            sharding.Charset
}

// valueOf recognizes a key value: a literal, a placeholder, NULL, TRUE or
// FALSE, possibly under unary minus or a character set introducer
// (_latin1'…', _binary'…', N'…'). Anything else is an expression, which
// constrains nothing.
func valueOf(e sqlparser.Expr) (valRef, bool) {
	switch x := e.(type) {
	case *sqlparser.Argument:
		return argument(x.Name)
	case *sqlparser.Literal:
		return literal(x)
	case *sqlparser.NullVal:
		return valRef{lit: sharding.NullLit()}, true
	case sqlparser.BoolVal:
		if x {
			return valRef{lit: sharding.NumberLit("1")}, true
		}
		return valRef{lit: sharding.NumberLit("0")}, true
	case *sqlparser.UnaryExpr:
		switch x.Operator {
		case sqlparser.UMinusOp:
			v, ok := valueOf(x.Expr)
			v.neg = !v.neg
			return v, ok && !v.temporal
		case sqlparser.NStringOp: // N'…' as written: _utf8mb3'…'
			return introduced(x.Expr, sharding.CharsetUTF8MB3)
		}
	case *sqlparser.IntroducerExpr:
		return introduced(x.Expr, sharding.LookupCharset(strings.TrimPrefix(x.CharacterSet, "_")))
	}
	return valRef{}, false
}

// introduced is the value e, a string or a 0x… literal (or a placeholder
// for one) whose bytes an introducer says are in character set cs.
func introduced(e sqlparser.Expr, cs sharding.Charset) (valRef, bool) {
	v, ok := valueOf(e)
	if !ok || v.neg || v.temporal || v.src == srcConst && v.lit.Kind() != sharding.LitString && v.lit.Kind() != sharding.LitHex {
		return valRef{}, false
	}
	v.intro, v.client, v.cs = true, false, cs
	return v, true
}

// argument decodes the normalizer's placeholders.
func argument(name string) (valRef, bool) {
	for _, p := range []struct {
		prefix string
		src    valSrc
	}{{"sgl", srcLit}, {"sgp", srcParam}, {"v", srcParam}} {
		if rest, ok := strings.CutPrefix(name, p.prefix); ok {
			if i, err := strconv.Atoi(rest); err == nil && i > 0 && rest[0] != '0' {
				return valRef{src: p.src, idx: i}, true
			}
		}
	}
	return valRef{}, false
}

func literal(l *sqlparser.Literal) (valRef, bool) {
	switch l.Type {
	case sqlparser.StrVal:
		return valRef{lit: sharding.StringLit(l.Val), client: true}, true
	case sqlparser.IntVal, sqlparser.DecimalVal, sqlparser.FloatVal:
		return valRef{lit: sharding.NumberLit(l.Val)}, true
	case sqlparser.HexNum: // 0x2A: a number in numeric context
		b, err := hex.DecodeString(evenHex(strings.TrimPrefix(strings.ToLower(l.Val), "0x")))
		return valRef{lit: sharding.HexLit(string(b))}, err == nil
	case sqlparser.HexVal: // X'2A': a binary string
		b, err := hex.DecodeString(l.Val)
		return valRef{lit: sharding.StringLitIn(string(b), sharding.CharsetBinary)}, err == nil
	case sqlparser.BitNum: // b'101010', written 0b101010 by Vitess
		b, ok := bitBytes(strings.TrimPrefix(l.Val, "0b"))
		return valRef{lit: sharding.HexLit(b)}, ok
	case sqlparser.DateVal, sqlparser.TimestampVal:
		return valRef{lit: sharding.StringLit(l.Val), temporal: true}, true
	}
	return valRef{}, false
}

func evenHex(s string) string {
	if len(s)%2 == 1 {
		return "0" + s
	}
	return s
}

// bitBytes packs a string of binary digits into big-endian bytes.
func bitBytes(bits string) (string, bool) {
	if bits == "" {
		return "", false
	}
	out := make([]byte, (len(bits)+7)/8)
	for i := 0; i < len(bits); i++ {
		c := bits[len(bits)-1-i]
		if c != '0' && c != '1' {
			return "", false
		}
		if c == '1' {
			out[len(out)-1-i/8] |= 1 << (i % 8)
		}
	}
	return string(out), true
}
