package difftest

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Statement is one generated statement with what the runner needs to
// compare its answers.
type Statement struct {
	Kind string // for per-kind counts: "point", "join", "insert_multi", ...
	SQL  string // text form, literals inline
	// Prepared is the same statement with ? placeholders, and Args their
	// values (see Stmt.Execute); "" when there is no prepared form (DDL).
	Prepared string
	Args     []any
	// Ordered: the statement's ORDER BY is total (or it returns at most
	// one row), so rows are compared in order; otherwise as a multiset.
	Ordered bool
	// Refusable: shardgate may refuse it with the documented 1235 (a merge
	// across shards, an update of a shard key) and that is not a difference.
	Refusable bool
	// Writes are the tables the statement may change; the runner compares
	// their contents after it.
	Writes []string
	// Constructs are the constructs of issue 14 (merges across shards) the
	// statement exercises, counted per construct (Report.Constructs).
	Constructs []string
	// Fold are the columns (from 0) compared under their collation, as
	// weight strings: a _ci group key, MIN/MAX or DISTINCT value, whose
	// spelling ('a' or 'A ') a server may take from any row of the group.
	// FoldAs names the collation of each (by position; missing or "":
	// utf8mb4_general_ci, the generator's default).
	Fold   []int
	FoldAs []string
	// Superset is set for a LIMIT without a total order: the same
	// statement without the LIMIT. The rows got must be a sub-multiset of
	// the reference's rows for it, as many as the reference's answer with
	// the LIMIT has; everything else is compared as usual.
	Superset *Statement
	// PlanNotNull: the NOT_NULL flag of its columns depends on MariaDB's
	// plan, so it is not compared: a column of a table on the NULL side of
	// an outer join is NOT NULL when the plan reads that table through an
	// index the ON compares the column by, nullable when it scans it (the
	// same rows with other statistics, as the reference's tables and the
	// evaluator's temporary copies have, can give either).
	PlanNotNull bool
	// InTrx: the statement is inside a transaction the generator began
	// (Generator.Transactions); a write may be refused for it
	// (Options.TrxRefusals).
	InTrx bool
}

// lit is a literal of a generated statement: its spelling in the text form
// and the parameter that stands for it in the prepared form.
type lit struct {
	text string
	arg  any
}

func intLit(n int) lit      { return lit{strconv.Itoa(n), int64(n)} }
func strLit(s string) lit   { return lit{quote(s), s} }
func decLit(s string) lit   { return lit{s, Decimal(s)} }
func nullLit() lit          { return lit{"NULL", nil} }
func dateLit(d Date) lit    { return lit{quote(d.String()), d} }
func floatLit(f string) lit { v, _ := strconv.ParseFloat(f, 64); return lit{f, v} }

func datetimeLit(t time.Time) lit {
	return lit{quote(t.Format("2006-01-02 15:04:05")), t}
}

// quote is a SQL string literal under MariaDB's default sql_mode, where a
// backslash escapes.
func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", "''").Replace(s) + "'"
}

// builder writes the text and the prepared form of a statement side by
// side: strings are SQL, lits are literals in the text and ? in the
// prepared form.
type builder struct {
	text, prep strings.Builder
	args       []any
}

func (b *builder) add(parts ...any) *builder {
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			b.text.WriteString(v)
			b.prep.WriteString(v)
		case lit:
			b.text.WriteString(v.text)
			b.prep.WriteByte('?')
			b.args = append(b.args, v.arg)
		case []lit:
			b.list(v)
		default:
			panic(fmt.Sprintf("difftest: builder part %T", p)) // a bug in the generator
		}
	}
	return b
}

// list adds lits separated by commas.
func (b *builder) list(ls []lit) *builder {
	for i, l := range ls {
		if i > 0 {
			b.add(", ")
		}
		b.add(l)
	}
	return b
}

// row adds a parenthesised row of values.
func (b *builder) row(ls []lit) *builder { return b.add("(").list(ls).add(")") }

func (b *builder) stmt(kind string) Statement {
	return Statement{Kind: kind, SQL: b.text.String(), Prepared: b.prep.String(), Args: b.args}
}

// sql starts a builder with parts.
func sql(parts ...any) *builder { return new(builder).add(parts...) }
