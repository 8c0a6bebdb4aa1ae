package planner

import (
	"strconv"
	"strings"
	"unicode/utf8"

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
	// ins is where the rows of an INSERT or REPLACE into a sharded table
	// are in the text, for AppendRows; nil for other statements.
	ins *insertLayout
	// selectItems: see SelectItems.
	selectItems int
}

// insertLayout locates the VALUES rows of an INSERT in a Template's text
// and slots, and each row's shard-key value, so that a part can be
// rendered with some of the rows and with generated keys.
type insertLayout struct {
	// cols is the end of the column list, before its ')': where an omitted
	// key column is added, as ", " + key.
	cols    mark
	key     string // the key column, quoted
	omitted bool   // the column list has no key column
	rows    []rowLayout
}

// mark is a position in a Template: an offset in its text and the number
// of slots before it.
type mark struct{ at, slot int }

// rowLayout is one row: "(" … ")" from start to end, its key value from
// keyStart to keyEnd (both before the ')' when the key is omitted).
type rowLayout struct {
	start, keyStart, keyEnd, end mark
	values                       int // the row's number of values
}

type slotKind uint8

const (
	slotLit   slotKind = iota // literal n of the shape
	slotParam                 // a '?' parameter marker
	slotTable                 // sharded table n: head, the sub-table's suffix, tail
	slotItem                  // " as `…`": select item n's text as the client wrote it
	slotLimit                 // " limit N" of a merge's pushed SELECT (AppendLimit), or nothing
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
	return newTemplate(p, sh, rename, "")
}

// NewInsertTemplate is NewTemplate for an INSERT or REPLACE … VALUES into
// a sharded table whose shard key is key: its rows are located, for
// AppendRows.
func NewInsertTemplate(p Parsed, sh *router.Shape, rename Rename, key string) (*Template, error) {
	return newTemplate(p, sh, rename, key)
}

func newTemplate(p Parsed, sh *router.Shape, rename Rename, key string) (*Template, error) {
	return newTemplateWith(p, sh, rename, templateOptions{insKey: key}, p.Stmt)
}

// templateOptions adapt a template to a statement the planner rewrote
// from the client's (a merge's pushed-down SELECT).
type templateOptions struct {
	insKey string
	// items maps the rewritten select list's items the server names by
	// their text to the client's items, of which there are itemCount
	// (nil: the statement's own list is the client's).
	items     map[*sqlparser.AliasedExpr]int
	itemCount int
	// limit is the LIMIT clause that becomes a limit slot
	// (AppendLimit).
	limit *sqlparser.Limit
	// dropped and droppedParams are the client's literals and
	// parameters the statement need not have.
	dropped, droppedParams []bool
}

// newTemplateWith compiles stmt, a statement written from p, the client's.
func newTemplateWith(p Parsed, sh *router.Shape, rename Rename, o templateOptions, stmt sqlparser.Statement) (*Template, error) {
	if err := checkFaithful(stmt, sh); err != nil {
		return nil, err
	}
	b := templateBuilder{sh: sh, rename: rename, exposed: map[string]int{}, litSeen: make([]bool, len(sh.Lits)), paramSeen: make([]bool, len(sh.Params)), insKey: o.insKey, limit: o.limit}
	if err := b.collect(stmt); err != nil {
		return nil, err
	}
	items := o.itemCount
	if o.items == nil {
		items = b.nameItems(stmt)
	} else if len(o.items) > 0 {
		b.items = o.items
	}
	buf := sqlparser.NewTrackedBuffer(b.format)
	buf.Myprintf("%v", stmt)
	for i, d := range o.dropped {
		b.litSeen[i] = b.litSeen[i] || d
	}
	for i, d := range o.droppedParams {
		b.paramSeen[i] = b.paramSeen[i] || d
	}
	if err := b.complete(p.Exact); err != nil {
		return nil, err
	}
	t := &Template{text: buf.String(), slots: b.slots, ins: b.ins}
	if len(b.items) > 0 {
		t.selectItems = items
	}
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
	return t.appendRange(dst, sql, sh, sub, mark{}, mark{len(t.text), len(t.slots)}, NoLimit)
}

// NoLimit renders a template's limit slot as nothing.
const NoLimit = ^uint64(0)

// AppendLimit is Append for a merge's pushed SELECT, whose limit slot
// becomes " limit n" (nothing for NoLimit).
func (t *Template) AppendLimit(dst, sql []byte, sh *router.Shape, sub []int, n uint64) []byte {
	return t.appendRange(dst, sql, sh, sub, mark{}, mark{len(t.text), len(t.slots)}, n)
}

// Rows returns the number of VALUES rows of an INSERT or REPLACE template
// (NewInsertTemplate), 0 for other statements.
func (t *Template) Rows() int {
	if t.ins == nil {
		return 0
	}
	return len(t.ins.rows)
}

// AppendRows is Append for an INSERT or REPLACE template with only the
// VALUES rows listed in rows (0-based, in the order given). When ids is
// not nil, a row r with ids[r] != 0 gets ids[r] as its shard key: in
// place of its own value, or, when the column list omits the key, in the
// key column added to the list and to every row (ids must then cover
// every row sent). It does not allocate beyond growing dst.
func (t *Template) AppendRows(dst, sql []byte, sh *router.Shape, sub []int, rows []int, ids []uint64) []byte {
	l := t.ins
	add := l.omitted && ids != nil
	dst = t.appendRange(dst, sql, sh, sub, mark{}, l.cols, NoLimit)
	if add {
		dst = append(dst, ", "...)
		dst = append(dst, l.key...)
	}
	dst = t.appendRange(dst, sql, sh, sub, l.cols, l.rows[0].start, NoLimit)
	for j, r := range rows {
		if j > 0 {
			dst = append(dst, ", "...)
		}
		row := &l.rows[r]
		if ids == nil || ids[r] == 0 {
			dst = t.appendRange(dst, sql, sh, sub, row.start, row.end, NoLimit)
			continue
		}
		dst = t.appendRange(dst, sql, sh, sub, row.start, row.keyStart, NoLimit)
		if add && row.values > 0 {
			dst = append(dst, ", "...)
		}
		dst = strconv.AppendUint(dst, ids[r], 10)
		dst = t.appendRange(dst, sql, sh, sub, row.keyEnd, row.end, NoLimit)
	}
	return t.appendRange(dst, sql, sh, sub, l.rows[len(l.rows)-1].end, mark{len(t.text), len(t.slots)}, NoLimit)
}

// AppendRowParams appends the client parameters (0-based) behind the '?'
// markers AppendRows writes for the same rows and ids, in their order: the
// parameters of a prepared INSERT's execution that a part with these rows
// takes.
func (t *Template) AppendRowParams(dst []int, rows []int, ids []uint64) []int {
	l := t.ins
	dst = t.rangeParams(dst, mark{}, l.rows[0].start)
	for _, r := range rows {
		row := &l.rows[r]
		if ids == nil || ids[r] == 0 {
			dst = t.rangeParams(dst, row.start, row.end)
			continue
		}
		dst = t.rangeParams(dst, row.start, row.keyStart)
		dst = t.rangeParams(dst, row.keyEnd, row.end)
	}
	return t.rangeParams(dst, l.rows[len(l.rows)-1].end, mark{len(t.text), len(t.slots)})
}

// rangeParams appends the parameters of the slots from a to b.
func (t *Template) rangeParams(dst []int, a, b mark) []int {
	for i := a.slot; i < b.slot; i++ {
		if t.slots[i].kind == slotParam {
			dst = append(dst, t.slots[i].n)
		}
	}
	return dst
}

// appendRange appends the text from a to b with the slots between them.
func (t *Template) appendRange(dst, sql []byte, sh *router.Shape, sub []int, a, b mark, limit uint64) []byte {
	if t.selectItems > 0 && len(sh.Items) == 0 {
		sh.Items = router.SelectItems(sql, sh.Items)
	}
	last := a.at
	for i := a.slot; i < b.slot; i++ {
		s := &t.slots[i]
		dst = append(dst, t.text[last:s.at]...)
		last = s.at
		switch s.kind {
		case slotLit:
			l := sh.Lits[s.n]
			dst = append(dst, sql[l.Start:l.End]...)
		case slotParam:
			dst = append(dst, '?')
		case slotItem:
			if len(sh.Items) == t.selectItems {
				dst = appendItemAlias(dst, sql, sh.Items[s.n])
			}
		case slotLimit:
			if limit != NoLimit {
				dst = append(dst, " limit "...)
				dst = strconv.AppendUint(dst, limit, 10)
			}
		default:
			dst = append(dst, s.head...)
			dst = appendSubTableSuffix(dst, sub[s.n])
			dst = append(dst, s.tail...)
		}
	}
	return append(dst, t.text[last:b.at]...)
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
		case slotItem:
			b.WriteString("{as item " + strconv.Itoa(s.n) + "}")
		case slotLimit:
			b.WriteString("{limit}")
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
	// insKey is the shard key of the sharded table an INSERT writes
	// (NewInsertTemplate), and ins the layout of its rows.
	insKey string
	ins    *insertLayout
	// items are the outermost select list's expressions that the server
	// names by their text (no alias, not a column or literal), by their
	// position in the list (nameItems).
	items map[*sqlparser.AliasedExpr]int
	// limit becomes a limit slot (templateOptions.limit).
	limit *sqlparser.Limit
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
	case *sqlparser.Insert:
		if rows, ok := n.Rows.(sqlparser.Values); ok && b.insKey != "" && b.ins == nil && len(n.Columns) > 0 && len(rows) > 0 {
			b.insert(buf, n, rows)
			return
		}
	case *sqlparser.Argument:
		if b.placeholder(buf, n.Name) {
			return
		}
	case *sqlparser.Limit:
		if n != nil && n == b.limit {
			b.slots = append(b.slots, slot{at: buf.Len(), kind: slotLimit})
			return
		}
	case *sqlparser.AliasedExpr:
		if i, ok := b.items[n]; ok {
			buf.Myprintf("%v", n.Expr)
			b.slots = append(b.slots, slot{at: buf.Len(), kind: slotItem, n: i})
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

// insert writes an INSERT or REPLACE … VALUES as Insert.Format does,
// recording where its column list ends and where its rows and their keys
// are.
func (b *templateBuilder) insert(buf *sqlparser.TrackedBuffer, n *sqlparser.Insert, rows sqlparser.Values) {
	l := &insertLayout{key: "`" + strings.ReplaceAll(b.insKey, "`", "``") + "`"}
	b.ins = l
	verb := sqlparser.InsertStr
	if n.Action == sqlparser.ReplaceAct {
		verb = sqlparser.ReplaceStr
	}
	buf.Myprintf("%s %v%sinto %v%v(", verb, n.Comments, n.Ignore.ToString(), n.Table.Expr, n.Partitions)
	key := -1
	for i, c := range n.Columns {
		if i > 0 {
			buf.WriteString(", ")
		}
		buf.Myprintf("%v", c)
		if key < 0 && strings.EqualFold(c.String(), b.insKey) {
			key = i
		}
	}
	l.omitted = key < 0
	l.cols = b.mark(buf)
	buf.WriteString(") values ")
	for i, row := range rows {
		if i > 0 {
			buf.WriteString(", ")
		}
		r := rowLayout{start: b.mark(buf), values: len(row)}
		buf.WriteByte('(')
		for j, e := range row {
			if j > 0 {
				buf.WriteString(", ")
			}
			if j == key {
				r.keyStart = b.mark(buf)
			}
			buf.Myprintf("%v", e)
			if j == key {
				r.keyEnd = b.mark(buf)
			}
		}
		if key < 0 || key >= len(row) {
			r.keyStart = b.mark(buf)
			r.keyEnd = r.keyStart
		}
		buf.WriteByte(')')
		r.end = b.mark(buf)
		l.rows = append(l.rows, r)
	}
	buf.Myprintf("%v%v", n.RowAlias, n.OnDup)
}

func (b *templateBuilder) mark(buf *sqlparser.TrackedBuffer) mark {
	return mark{at: buf.Len(), slot: len(b.slots)}
}

// nameItems finds the items of the statement's outermost select list
// (the first SELECT of a UNION) that the server names by their text as
// written: expressions without an alias that are neither a column nor a
// literal. Vitess writes them back in its own spelling (count(x) for
// COUNT(x), null for NULL), so the template gives each an alias with the
// client's text, read per execution (router.SelectItems). It returns the
// number of items in the list.
func (b *templateBuilder) nameItems(stmt sqlparser.Statement) int {
	sel := firstSelect(stmt)
	if sel == nil {
		return 0
	}
	for i, e := range sel.SelectExprs.Exprs {
		ae, ok := e.(*sqlparser.AliasedExpr)
		if !ok || !ae.As.IsEmpty() {
			continue
		}
		switch ae.Expr.(type) {
		case *sqlparser.ColName, *sqlparser.Literal, *sqlparser.Argument:
			continue
		}
		if b.items == nil {
			b.items = map[*sqlparser.AliasedExpr]int{}
		}
		b.items[ae] = i
	}
	return len(sel.SelectExprs.Exprs)
}

// firstSelect is the SELECT whose list names a statement's result
// columns: the statement's own, or a UNION's first.
func firstSelect(stmt sqlparser.Statement) *sqlparser.Select {
	for {
		switch s := stmt.(type) {
		case *sqlparser.Select:
			return s
		case *sqlparser.Union:
			stmt = s.Left
		default:
			return nil
		}
	}
}

// SelectItems is the number of items in the statement's outermost select
// list when some are named by their text (slotItem), else 0. Append reads
// the items' spans into the shape (router.SelectItems) when it has none;
// a caller should check that it finds this many (they then get no alias).
func (t *Template) SelectItems() int { return t.selectItems }

// appendItemAlias appends " as `text`", the select item's text as the
// client wrote it, quoted as a name. A name holds no character beyond
// the BMP (utf8mb3's): the server names an item with one by its text with
// a '?' for each (MAX(name) >= '?' for MAX(name) >= '😀'), and refuses
// such an alias (1300).
func appendItemAlias(dst, sql []byte, sp router.Span) []byte {
	dst = append(dst, " as `"...)
	text := sql[sp.Start:sp.End]
	for i := 0; i < len(text); {
		_, n := utf8.DecodeRune(text[i:])
		switch {
		case text[i] == '`':
			dst = append(dst, '`', '`')
		case n == 4:
			dst = append(dst, '?')
		default:
			dst = append(dst, text[i:i+n]...)
		}
		i += n
	}
	return append(dst, '`')
}
