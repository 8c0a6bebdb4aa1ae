package planner

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
)

// processlistParser parses the queries on information_schema.PROCESSLIST.
var processlistParser = sync.OnceValue(NewParser)

// Processlist plans a statement that names the list of sessions
// (router.Stmt.Processlist), which the proxy answers with its own
// sessions (engine.Processlist): SHOW [FULL] PROCESSLIST, and a single
// SELECT on information_schema.PROCESSLIST alone, with any of its columns
// in the select list (aliased or not, or *), a WHERE the proxy evaluates
// (comparisons, IN, BETWEEN, LIKE, IS NULL, AND, OR, NOT over its columns
// and literals; CONNECTION_ID() is connID, DATABASE() db), ORDER BY
// columns, aliases or positions, and LIMIT. Anything else that reads the
// table is refused (1235): after the probe when it is a plain SELECT,
// so that the server's own errors (unknown column) come first, at once
// otherwise. It returns nil, nil for a statement that only describes the
// table (DESCRIBE, EXPLAIN, SHOW COLUMNS...), which runs as usual.
func Processlist(st router.Stmt, sql []byte, db string, connID uint32) (*engine.Processlist, error) {
	if st.Flags&router.FlagMultiStatement != 0 {
		return nil, processlistRefusal("SHOW PROCESSLIST or information_schema.PROCESSLIST in a multi-statement")
	}
	switch st.Kind {
	case router.KindShow:
		if st.Processlist&(router.ProcesslistShow|router.ProcesslistShowFull) == 0 {
			return nil, nil
		}
		return &engine.Processlist{Probe: comQuery(string(sql)), Show: true, Full: st.Processlist&router.ProcesslistShowFull != 0}, nil
	case router.KindAnalyze:
		if st.Flags&router.FlagAnalyzeExec == 0 {
			return nil, nil
		}
	case router.KindSelect:
		if f := st.Flags & probeUnsafe; f != 0 {
			return nil, processlistRefusal(probeUnsafeWhat(f) + " in a query on information_schema.PROCESSLIST")
		}
		return planProcesslistSelect(sql, db, connID)
	}
	return nil, processlistRefusal(fmt.Sprintf("%s reading information_schema.PROCESSLIST (only a SELECT is answered)", strings.ToUpper(st.Kind.String())))
}

// probeUnsafe are the flags of a SELECT whose probe (the statement with
// LIMIT 0) might still do something on the server: functions with
// effects, user variables, INTO, locks. Such a statement is refused
// before anything runs (the proxy would refuse it after the probe
// anyway).
const probeUnsafe = router.FlagSideEffectFunc | router.FlagGetLock | router.FlagUserVar | router.FlagSelectInto |
	router.FlagForUpdate | router.FlagCalcFoundRows | router.FlagLastInsertIDArg

// probeUnsafeWhat names the first of the probeUnsafe flags in f.
func probeUnsafeWhat(f router.Flags) string {
	switch {
	case f&router.FlagSelectInto != 0:
		return "SELECT … INTO"
	case f&router.FlagForUpdate != 0:
		return "a locking read"
	case f&router.FlagCalcFoundRows != 0:
		return "SQL_CALC_FOUND_ROWS"
	case f&router.FlagUserVar != 0:
		return "user variables"
	case f&router.FlagLastInsertIDArg != 0:
		return "LAST_INSERT_ID(expr)"
	}
	return "a function with effects (SLEEP, GET_LOCK, NEXTVAL…)"
}

// processlistRefusal is the 1235 for what the proxy does not answer of
// the list of sessions.
func processlistRefusal(what string) error {
	return notSupported(what + "; shardgate answers SHOW [FULL] PROCESSLIST and simple SELECTs on information_schema.PROCESSLIST with its own sessions")
}

// processlistSelect is a SELECT on information_schema.PROCESSLIST being
// planned.
type processlistSelect struct {
	sel    *sqlparser.Select
	db     string
	connID uint32
	plan   *engine.Processlist
	// aliases maps the select list's aliases (lower case) to the fields
	// they show, for ORDER BY.
	aliases map[string]int
}

func planProcesslistSelect(sql []byte, db string, connID uint32) (*engine.Processlist, error) {
	stmt, err := processlistParser().p.ParseStrictDDL(string(sql))
	if err != nil {
		return nil, processlistRefusal(fmt.Sprintf("this query on information_schema.PROCESSLIST (%v)", err))
	}
	sel, ok := stmt.(*sqlparser.Select)
	if !ok {
		return nil, processlistRefusal("this statement on information_schema.PROCESSLIST (a UNION or parenthesized SELECT)")
	}
	// What the probe must not run with: it would write or lock.
	switch {
	case sel.With != nil:
		return nil, processlistRefusal("WITH in a query on information_schema.PROCESSLIST")
	case sel.Into != nil:
		return nil, processlistRefusal("SELECT … INTO from information_schema.PROCESSLIST")
	case sel.Lock != sqlparser.NoLock:
		return nil, processlistRefusal("a locking read of information_schema.PROCESSLIST")
	case sel.SQLCalcFoundRows:
		return nil, processlistRefusal("SQL_CALC_FOUND_ROWS on information_schema.PROCESSLIST")
	}
	q := &processlistSelect{sel: sel, db: db, connID: connID, aliases: map[string]int{}, plan: &engine.Processlist{}}
	// The probe replaces the LIMIT: one the server would refuse must be
	// refused here.
	if what := q.limit(); what != "" {
		return nil, processlistRefusal(what)
	}
	probe, err := limitZero(sql)
	if err != nil {
		return nil, err
	}
	q.plan.Probe = comQuery(probe)
	if what := q.check(); what != "" {
		q.plan.Refusal = asSQLError(processlistRefusal(what))
	}
	return q.plan, nil
}

// limitZero is the probe of a SELECT: its text with LIMIT 0 in place of
// its own LIMIT (or added), so that the server checks it and gives its
// column definitions without reading a row.
func limitZero(sql []byte) (string, error) {
	cl := router.ScanClauses(sql, nil)
	if cl.End < 0 || int(cl.End) > len(sql) {
		return "", processlistRefusal("this query on information_schema.PROCESSLIST")
	}
	if cl.Limit.Start >= 0 {
		return string(sql[:cl.Limit.Start]) + "LIMIT 0" + string(sql[cl.Limit.End:cl.End]), nil
	}
	// On a line of its own: the text may end in a comment to the end of
	// the line (-- c, # c).
	return string(sql[:cl.End]) + "\nLIMIT 0", nil
}

// check reads the query into the plan; it returns what the proxy cannot
// answer, or "".
func (q *processlistSelect) check() string {
	s := q.sel
	if len(s.From) != 1 || !q.isProcesslist(s.From[0]) {
		return "information_schema.PROCESSLIST joined with other tables or in a subquery"
	}
	switch {
	case s.Distinct:
		return "DISTINCT on information_schema.PROCESSLIST"
	case s.GroupBy != nil || s.Having != nil || len(s.Windows) > 0:
		return "GROUP BY, HAVING or windows on information_schema.PROCESSLIST"
	}
	if what := q.selectList(); what != "" {
		return what
	}
	if s.Where != nil {
		if what := q.where(s.Where.Expr); what != "" {
			return what
		}
	}
	return q.orderBy()
}

// isProcesslist reports whether te is information_schema.PROCESSLIST
// (or PROCESSLIST while information_schema is the current database),
// plainly: no partitions, index hints or column aliases.
func (q *processlistSelect) isProcesslist(te sqlparser.TableExpr) bool {
	t, ok := te.(*sqlparser.AliasedTableExpr)
	if !ok || len(t.Partitions) > 0 || len(t.Hints) > 0 || len(t.Columns) > 0 {
		return false
	}
	tn, ok := t.Expr.(sqlparser.TableName)
	if !ok || !strings.EqualFold(tn.Name.String(), "PROCESSLIST") {
		return false
	}
	qual := tn.Qualifier.String()
	return strings.EqualFold(qual, "information_schema") || qual == "" && strings.EqualFold(q.db, "information_schema")
}

// field returns the field a column reference names. Its qualifier needs
// no check: the table is the query's only one, and the probe has the
// server refuse a wrong qualifier or an unknown column.
func field(c *sqlparser.ColName) (int, bool) {
	i, _, _, ok := engine.ProcessField(c.Name.String())
	return i, ok
}

func (q *processlistSelect) selectList() string {
	if q.sel.SelectExprs == nil {
		return "this select list on information_schema.PROCESSLIST"
	}
	for _, e := range q.sel.SelectExprs.Exprs {
		switch e := e.(type) {
		case *sqlparser.StarExpr:
		case *sqlparser.AliasedExpr:
			c, ok := e.Expr.(*sqlparser.ColName)
			if !ok {
				return fmt.Sprintf("the expression %s in the select list of a query on information_schema.PROCESSLIST (select its columns)", sqlparser.String(e.Expr))
			}
			f, ok := field(c)
			if !ok {
				return fmt.Sprintf("the column %s of information_schema.PROCESSLIST", sqlparser.String(c))
			}
			if !e.As.IsEmpty() {
				q.aliases[e.As.Lowered()] = f
			}
		default:
			return fmt.Sprintf("%s in the select list of a query on information_schema.PROCESSLIST", sqlparser.String(e))
		}
	}
	return ""
}

// where reads the WHERE condition into the plan (engine.ProcessCond),
// with CONNECTION_ID() and DATABASE() as their values for this session:
// the only functions it takes. Comparisons whose answer would hang on
// the server's loose conversions (a string column with a number) are
// refused: what is planned, the proxy evaluates as the server would.
func (q *processlistSelect) where(cond sqlparser.Expr) string {
	c, kind, what := q.cond(cond)
	if what == "" && (kind == engine.ValueText || kind == engine.ValueBinary) {
		what = fmt.Sprintf("the string %s as a condition", sqlparser.String(cond))
	}
	if what != "" {
		return what + " in the WHERE of a query on information_schema.PROCESSLIST"
	}
	q.plan.Where = c
	return ""
}

// cond compiles e: a condition, a column or a literal, and the kind of
// its value (a condition's is a number: 1, 0 or NULL). what says what
// cannot be evaluated exactly, when something cannot.
func (q *processlistSelect) cond(e sqlparser.Expr) (c *engine.ProcessCond, kind engine.ValueKind, what string) {
	num := engine.ValueNumber
	switch e := e.(type) {
	case *sqlparser.AndExpr:
		return q.logic(engine.CondAnd, e.Left, e.Right)
	case *sqlparser.OrExpr:
		return q.logic(engine.CondOr, e.Left, e.Right)
	case *sqlparser.XorExpr:
		return q.logic(engine.CondXor, e.Left, e.Right)
	case *sqlparser.NotExpr:
		return q.logic(engine.CondNot, e.Expr)
	case *sqlparser.ComparisonExpr:
		return q.comparison(e)
	case *sqlparser.BetweenExpr:
		c, what := q.operands(&engine.ProcessCond{Op: engine.CondBetween, Not: !e.IsBetween}, e.Left, e.From, e.To)
		return c, num, what
	case *sqlparser.IsExpr:
		c := &engine.ProcessCond{}
		switch e.Right {
		case sqlparser.IsNullOp, sqlparser.IsNotNullOp:
			c.Op, c.Not = engine.CondIsNull, e.Right == sqlparser.IsNotNullOp
			arg, _, what := q.cond(e.Left)
			c.Args = []*engine.ProcessCond{arg}
			return c, num, what
		case sqlparser.IsTrueOp, sqlparser.IsNotTrueOp:
			c.Op, c.Not = engine.CondIsTrue, e.Right == sqlparser.IsNotTrueOp
		default:
			c.Op, c.Not = engine.CondIsFalse, e.Right == sqlparser.IsNotFalseOp
		}
		arg, what := q.condition(e.Left)
		c.Args = []*engine.ProcessCond{arg}
		return c, num, what
	case *sqlparser.ColName:
		f, ok := field(e)
		if !ok {
			return nil, 0, fmt.Sprintf("the column %s", sqlparser.String(e))
		}
		return &engine.ProcessCond{Op: engine.CondField, Field: f}, engine.FieldKind(f), ""
	case *sqlparser.Literal:
		switch e.Type {
		case sqlparser.IntVal, sqlparser.DecimalVal:
			if r, ok := engine.NumberValue(e.Val); ok {
				return plLiteral(engine.PValue{Num: r}), num, ""
			}
		case sqlparser.StrVal:
			return plLiteral(engine.PValue{Str: []byte(e.Val)}), engine.ValueText, ""
		}
	case *sqlparser.NullVal:
		return plLiteral(engine.PValue{Null: true}), engine.ValueNull, ""
	case sqlparser.BoolVal:
		r := new(big.Rat)
		if e {
			r.SetInt64(1)
		}
		return plLiteral(engine.PValue{Num: r}), num, ""
	case *sqlparser.FuncExpr:
		if len(e.Exprs) > 0 {
			break
		}
		switch e.Name.Lowered() {
		case "connection_id":
			return plLiteral(engine.PValue{Num: new(big.Rat).SetInt64(int64(q.connID))}), num, ""
		case "database", "schema":
			if q.db == "" {
				return plLiteral(engine.PValue{Null: true}), engine.ValueNull, ""
			}
			return plLiteral(engine.PValue{Str: []byte(q.db)}), engine.ValueText, ""
		}
	}
	return nil, 0, sqlparser.String(e)
}

func plLiteral(v engine.PValue) *engine.ProcessCond {
	return &engine.ProcessCond{Op: engine.CondLiteral, Value: v}
}

// logic compiles AND, OR, XOR or NOT over conditions.
func (q *processlistSelect) logic(op engine.CondOp, args ...sqlparser.Expr) (*engine.ProcessCond, engine.ValueKind, string) {
	c := &engine.ProcessCond{Op: op}
	for _, a := range args {
		arg, what := q.condition(a)
		if what != "" {
			return nil, 0, what
		}
		c.Args = append(c.Args, arg)
	}
	return c, engine.ValueNumber, ""
}

// condition compiles e where a truth value is wanted: a condition, or a
// number (true unless 0); a string there would be read as a number by
// the server, with warnings: refused.
func (q *processlistSelect) condition(e sqlparser.Expr) (*engine.ProcessCond, string) {
	c, kind, what := q.cond(e)
	if what == "" && (kind == engine.ValueText || kind == engine.ValueBinary) {
		what = fmt.Sprintf("the string %s as a condition", sqlparser.String(e))
	}
	return c, what
}

// comparisonOps are the comparison operators the proxy evaluates.
var comparisonOps = map[sqlparser.ComparisonExprOperator]string{
	sqlparser.EqualOp: engine.CmpEQ, sqlparser.NotEqualOp: engine.CmpNE, sqlparser.LessThanOp: engine.CmpLT,
	sqlparser.LessEqualOp: engine.CmpLE, sqlparser.GreaterThanOp: engine.CmpGT, sqlparser.GreaterEqualOp: engine.CmpGE,
	sqlparser.NullSafeEqualOp: engine.CmpNullEQ,
}

func (q *processlistSelect) comparison(e *sqlparser.ComparisonExpr) (*engine.ProcessCond, engine.ValueKind, string) {
	num := engine.ValueNumber
	if cmp, ok := comparisonOps[e.Operator]; ok {
		c, what := q.operands(&engine.ProcessCond{Op: engine.CondCompare, Cmp: cmp}, e.Left, e.Right)
		return c, num, what
	}
	switch e.Operator {
	case sqlparser.InOp, sqlparser.NotInOp:
		list, ok := e.Right.(sqlparser.ValTuple)
		if !ok {
			return nil, 0, sqlparser.String(e)
		}
		c, what := q.operands(&engine.ProcessCond{Op: engine.CondIn, Not: e.Operator == sqlparser.NotInOp}, append([]sqlparser.Expr{e.Left}, list...)...)
		return c, num, what
	case sqlparser.LikeOp, sqlparser.NotLikeOp:
		v, kind, what := q.cond(e.Left)
		if what != "" {
			return nil, 0, what
		}
		if kind == num {
			return nil, 0, fmt.Sprintf("LIKE on the number %s", sqlparser.String(e.Left))
		}
		pat, ok := e.Right.(*sqlparser.Literal)
		if !ok || pat.Type != sqlparser.StrVal {
			return nil, 0, fmt.Sprintf("LIKE %s (a string pattern only)", sqlparser.String(e.Right))
		}
		c := &engine.ProcessCond{Op: engine.CondLike, Not: e.Operator == sqlparser.NotLikeOp, Escape: '\\',
			Args: []*engine.ProcessCond{v, plLiteral(engine.PValue{Str: []byte(pat.Val)})}}
		if e.Escape != nil {
			esc, ok := e.Escape.(*sqlparser.Literal)
			if !ok || esc.Type != sqlparser.StrVal || utf8.RuneCountInString(esc.Val) != 1 {
				return nil, 0, fmt.Sprintf("ESCAPE %s (one character only)", sqlparser.String(e.Escape))
			}
			c.Escape, _ = utf8.DecodeRuneInString(esc.Val)
		}
		return c, num, ""
	}
	return nil, 0, sqlparser.String(e)
}

// operands compiles the operands of c, which compare with its first
// one (=, IN, BETWEEN): numbers with numbers, strings with strings; a
// string literal that is a number whole compares with a number as one.
// A string column compared with a number, or a number column with a
// string that is not one, is refused: the server would convert it with
// warnings.
func (q *processlistSelect) operands(c *engine.ProcessCond, args ...sqlparser.Expr) (*engine.ProcessCond, string) {
	kinds := make([]engine.ValueKind, len(args))
	for i, a := range args {
		arg, kind, what := q.cond(a)
		if what != "" {
			return nil, what
		}
		c.Args, kinds[i] = append(c.Args, arg), kind
	}
	for b := 1; b < len(args); b++ {
		ka, kb := kinds[0], kinds[b]
		if ka == engine.ValueNull || kb == engine.ValueNull || (ka == engine.ValueNumber) == (kb == engine.ValueNumber) {
			continue
		}
		// A number meets a string: only a literal string that is a number.
		str := b
		if kb == engine.ValueNumber {
			str = 0
		}
		if lit := c.Args[str]; lit.Op == engine.CondLiteral {
			if r, ok := engine.NumberValue(string(lit.Value.Str)); ok {
				c.Args[str], kinds[str] = plLiteral(engine.PValue{Num: r}), engine.ValueNumber
				continue
			}
		}
		return nil, fmt.Sprintf("comparing %s with %s (a number with a string)", sqlparser.String(args[0]), sqlparser.String(args[b]))
	}
	return c, ""
}

// orderBy reads ORDER BY: a name is a select-list alias first, then a
// column, as the server reads it; a number is a position.
func (q *processlistSelect) orderBy() string {
	for _, o := range q.sel.OrderBy {
		key := engine.ProcessOrder{Field: -1, Desc: o.Direction == sqlparser.DescOrder}
		switch e := o.Expr.(type) {
		case *sqlparser.Literal:
			n, err := strconv.Atoi(e.Val)
			if e.Type != sqlparser.IntVal || err != nil || n < 1 {
				return fmt.Sprintf("ORDER BY %s on information_schema.PROCESSLIST", sqlparser.String(e))
			}
			key.Pos = n
		case *sqlparser.ColName:
			f, ok := q.aliases[e.Name.Lowered()]
			if !ok || !e.Qualifier.IsEmpty() {
				if f, ok = field(e); !ok {
					return fmt.Sprintf("ORDER BY %s on information_schema.PROCESSLIST", sqlparser.String(e))
				}
			}
			key.Field = f
		default:
			return fmt.Sprintf("ORDER BY %s on information_schema.PROCESSLIST (order by columns)", sqlparser.String(e))
		}
		q.plan.Order = append(q.plan.Order, key)
	}
	return ""
}

// limit reads LIMIT [offset,] count and LIMIT count OFFSET offset.
func (q *processlistSelect) limit() string {
	l := q.sel.Limit
	if l == nil {
		return ""
	}
	count, ok := uintLiteral(l.Rowcount)
	if !ok {
		return "this LIMIT on information_schema.PROCESSLIST"
	}
	var offset uint64
	if l.Offset != nil {
		if offset, ok = uintLiteral(l.Offset); !ok {
			return "this LIMIT on information_schema.PROCESSLIST"
		}
	}
	q.plan.HasLimit, q.plan.Limit, q.plan.Offset = true, count, offset
	return ""
}

func uintLiteral(e sqlparser.Expr) (uint64, bool) {
	l, ok := e.(*sqlparser.Literal)
	if !ok || l.Type != sqlparser.IntVal {
		return 0, false
	}
	n, err := strconv.ParseUint(l.Val, 10, 64)
	return n, err == nil
}

// asSQLError is the *mysql.SQLError an error of this package is.
func asSQLError(err error) *mysql.SQLError {
	se, ok := err.(*mysql.SQLError)
	if !ok {
		se = mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax, "shardgate: %v", err)
	}
	return se
}
