package planner

import (
	"strconv"
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/shardgate/shardgate/internal/router"
)

// Template is the SQL of a statement to send to one sub-table, compiled
// once per plan from the AST: Vitess writes the statement back, and the
// text is cut where a sharded table's name, a literal or a parameter
// goes. Executing it appends the pieces, the current statement's literals
// copied from the client's text (so they reach the server exactly as
// written), '?' for parameters and the sub-tables' names. A Template is
// immutable and safe for concurrent use.
type Template struct {
	text  string // the constant pieces, one after the other
	slots []slot // in text order
	// params[k] is the client's parameter (0-based) that the k-th '?' of
	// the text stands for: Vitess may reorder them (LIMIT ? OFFSET ? is
	// written LIMIT ?, ?, the offset first).
	params []int
}

type slotKind uint8

const (
	slotLit   slotKind = iota // literal n of the shape
	slotParam                 // a '?' parameter marker
	slotTable                 // sharded table n: head, the sub-table's suffix, tail
)

type slot struct {
	at   int // where the slot goes in text
	kind slotKind
	n    int
	// head and tail of a table slot: the logical name as Vitess writes
	// it, with its closing backquote, if any, in tail.
	head, tail string
}

// Rename says which table references a Template renames: the index of
// the sharded table qualifier.name (qualifier is "" when the statement
// does not name a database) in the caller's numbering, or -1 to leave it
// alone (unsharded and reference tables, other databases). Tables the
// caller numbers alike (a like: group on one sub-table) may share an index.
type Rename func(qualifier, name string) int

// NewTemplate compiles the statement p, parsed from a text of shape sh,
// renaming the table references rename picks and the column qualifiers
// that name them (t.col, db.t.col, t.*). It refuses, with
// ER_NOT_SUPPORTED_YET, statements that Vitess would not write back as
// they were sent (see checkFaithful) and statements in which an alias or
// a common table expression has the name of a table it renames (a column
// qualifier could then mean either).
func NewTemplate(p Parsed, sh *router.Shape, rename Rename) (*Template, error) {
	if err := checkFaithful(p.Stmt, sh); err != nil {
		return nil, err
	}
	b := templateBuilder{sh: sh, rename: rename, exposed: map[string]int{}, litSeen: make([]bool, len(sh.Lits)), paramSeen: make([]bool, len(sh.Params))}
	if err := b.collect(p.Stmt); err != nil {
		return nil, err
	}
	buf := sqlparser.NewTrackedBuffer(b.format)
	buf.Myprintf("%v", p.Stmt)
	if err := b.complete(p.Exact); err != nil {
		return nil, err
	}
	t := &Template{text: buf.String(), slots: b.slots}
	for _, s := range b.slots {
		if s.kind == slotParam {
			t.params = append(t.params, s.n)
		}
	}
	return t, nil
}

// Params returns, for each '?' of the text Append writes, in order, the
// client's parameter (0-based) it stands for: the values of a prepared
// statement's execution are sent to the sub-table in this order. Do not
// modify the result.
func (t *Template) Params() []int { return t.params }

// Append appends the statement's text for one sub-table to dst: sql and
// sh are the statement being executed (of the shape the Template was
// compiled for), sub[n] the sub-table number of table n (see Rename). It
// does not allocate beyond growing dst.
func (t *Template) Append(dst, sql []byte, sh *router.Shape, sub []int) []byte {
	last := 0
	for i := range t.slots {
		s := &t.slots[i]
		dst = append(dst, t.text[last:s.at]...)
		last = s.at
		switch s.kind {
		case slotLit:
			l := sh.Lits[s.n]
			dst = append(dst, sql[l.Start:l.End]...)
		case slotParam:
			dst = append(dst, '?')
		default:
			dst = append(dst, s.head...)
			dst = appendSubTableSuffix(dst, sub[s.n])
			dst = append(dst, s.tail...)
		}
	}
	return append(dst, t.text[last:]...)
}

// String shows the template with its slots as {lit 0}, {param 0},
// {table 0: name}; for tests and EXPLAIN-like output.
func (t *Template) String() string {
	var b strings.Builder
	last := 0
	for _, s := range t.slots {
		b.WriteString(t.text[last:s.at])
		last = s.at
		switch s.kind {
		case slotLit:
			b.WriteString("{lit " + strconv.Itoa(s.n) + "}")
		case slotParam:
			b.WriteString("{param " + strconv.Itoa(s.n) + "}")
		default:
			b.WriteString("{table " + strconv.Itoa(s.n) + ": " + s.head + s.tail + "}")
		}
	}
	b.WriteString(t.text[last:])
	return b.String()
}

// appendSubTableSuffix appends "_%04d" of i, as sharding.SubTableName
// names sub-tables.
func appendSubTableSuffix(dst []byte, i int) []byte {
	dst = append(dst, '_')
	for d := 1000; d > 1 && i < d; d /= 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, int64(i), 10)
}

// checkFaithful refuses what Vitess reads or writes back differently from
// MariaDB, so that no changed statement runs: MariaDB's /*M! */ comments
// (dropped or kept as a comment whose code never reaches the template's
// slots), /*!NNNNN */ comments of a version Vitess does not run, user
// variables named by strings (@'x' comes back as @`'x'`), an explicit
// session scope (@@session.x comes back as @@x, which MariaDB also reads
// as the global value of a global-only variable) and NEXT VALUE FOR (comes
// back as "next 1 values from").
func checkFaithful(stmt sqlparser.Statement, sh *router.Shape) error {
	switch {
	case sh.Flags&router.ShapeMariaDBComment != 0:
		return notSupported("MariaDB executable comments /*M! */ on sharded tables")
	case sh.ExecVersion > vitessVersionNumber:
		return notSupported("executable comments /*!NNNNN */ for versions after " + strconv.Itoa(vitessVersionNumber) + " on sharded tables")
	case sh.Flags&router.ShapeQuotedUserVar != 0:
		return notSupported("user variables named by a string (@'x') on sharded tables; write @x or @`x`")
	case sh.Flags&router.ShapeSessionScope != 0:
		return notSupported("@@SESSION. and @@LOCAL. on sharded tables; write @@x")
	}
	var err error
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		if _, ok := n.(*sqlparser.Nextval); ok {
			err = notSupported("NEXT VALUE FOR on sharded tables; use NEXTVAL()")
		}
		return err == nil, nil
	}, stmt)
	return err
}

// templateBuilder formats a statement into a Template.
type templateBuilder struct {
	sh     *router.Shape
	rename Rename
	// exposed maps the lower-cased names of renamed tables, which a
	// column qualifier without database may use, to their index.
	exposed            map[string]int
	slots              []slot
	litSeen, paramSeen []bool
	// inQualifier: formatting the qualifier of a column or star that is
	// not renamed, which is no table reference.
	inQualifier bool
}

// collect finds the renamed tables' names and refuses aliases and common
// table expressions that shadow them.
func (b *templateBuilder) collect(stmt sqlparser.Statement) error {
	var aliases []string
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		switch n := n.(type) {
		case *sqlparser.ColName, *sqlparser.StarExpr:
			return false, nil // qualifiers, not references
		case sqlparser.TableName:
			if i := b.rename(n.Qualifier.String(), n.Name.String()); i >= 0 {
				b.exposed[strings.ToLower(n.Name.String())] = i
			}
		case *sqlparser.AliasedTableExpr:
			if !n.As.IsEmpty() {
				aliases = append(aliases, n.As.String())
			}
		case *sqlparser.CommonTableExpr:
			aliases = append(aliases, n.ID.String())
		}
		return true, nil
	}, stmt)
	for _, a := range aliases {
		if _, ok := b.exposed[strings.ToLower(a)]; ok {
			return notSupported("an alias or WITH name equal to the sharded table " + a)
		}
	}
	return nil
}

// format is the TrackedBuffer's node formatter: it writes every node as
// Vitess does, except renamed table names, their column qualifiers and
// the placeholders, which become slots.
func (b *templateBuilder) format(buf *sqlparser.TrackedBuffer, node sqlparser.SQLNode) {
	switch n := node.(type) {
	case *sqlparser.Argument:
		if b.placeholder(buf, n.Name) {
			return
		}
	case sqlparser.TableName:
		if b.inQualifier {
			break
		}
		if i := b.rename(n.Qualifier.String(), n.Name.String()); i >= 0 {
			b.table(buf, n, i)
			return
		}
	case *sqlparser.ColName:
		if i := b.qualifier(n.Qualifier); i >= 0 {
			b.table(buf, n.Qualifier, i)
			buf.Myprintf(".%v", n.Name)
			return
		}
		b.inQualifier = true
		n.Format(buf)
		b.inQualifier = false
		return
	case *sqlparser.StarExpr:
		if i := b.qualifier(n.TableName); i >= 0 {
			b.table(buf, n.TableName, i)
			buf.WriteString(".*")
			return
		}
		b.inQualifier = true
		n.Format(buf)
		b.inQualifier = false
		return
	}
	node.Format(buf)
}

// qualifier returns the index of the renamed table a column qualifier
// names, or -1.
func (b *templateBuilder) qualifier(q sqlparser.TableName) int {
	switch {
	case q.IsEmpty():
		return -1
	case q.Qualifier.NotEmpty():
		return b.rename(q.Qualifier.String(), q.Name.String())
	}
	if i, ok := b.exposed[strings.ToLower(q.Name.String())]; ok {
		return i
	}
	return -1
}

// table writes the database qualifier of tn, if any, and a slot for the
// sub-table of renamed table i.
func (b *templateBuilder) table(buf *sqlparser.TrackedBuffer, tn sqlparser.TableName, i int) {
	if tn.Qualifier.NotEmpty() {
		buf.Myprintf("%v.", tn.Qualifier)
	}
	name := sqlparser.String(tn.Name)
	s := slot{at: buf.Len(), kind: slotTable, n: i, head: name}
	if strings.HasPrefix(name, "`") {
		s.head, s.tail = name[:len(name)-1], "`"
	}
	b.slots = append(b.slots, s)
}

// placeholder makes a slot of the Argument :sgl<i> or :sgp<i>, reporting
// whether name is one.
func (b *templateBuilder) placeholder(buf *sqlparser.TrackedBuffer, name string) bool {
	var kind slotKind
	var digits string
	switch {
	case strings.HasPrefix(name, router.LitPrefix):
		kind, digits = slotLit, name[len(router.LitPrefix):]
	case strings.HasPrefix(name, router.ParamPrefix):
		kind, digits = slotParam, name[len(router.ParamPrefix):]
	default:
		return false
	}
	i, err := strconv.Atoi(digits)
	if err != nil || i < 1 {
		return false
	}
	i--
	switch {
	case kind == slotLit && i < len(b.litSeen):
		b.litSeen[i] = true
	case kind == slotParam && i < len(b.paramSeen):
		b.paramSeen[i] = true
	default:
		return false
	}
	b.slots = append(b.slots, slot{at: buf.Len(), kind: kind, n: i})
	return true
}

// complete checks that every literal and parameter of the statement has a
// slot: Vitess might drop some (inside a comment it does not keep, say),
// and the template would then send another statement. (An Exact parse
// has its literals in the AST, not in slots.)
func (b *templateBuilder) complete(exact bool) error {
	for i, seen := range b.litSeen {
		if !seen && !exact {
			return notSupported("a statement the SQL parser does not write back whole (literal " + strconv.Itoa(i+1) + "), on sharded tables")
		}
	}
	for i, seen := range b.paramSeen {
		if !seen {
			return notSupported("a statement the SQL parser does not write back whole (parameter " + strconv.Itoa(i+1) + "), on sharded tables")
		}
	}
	return nil
}
