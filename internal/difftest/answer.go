package difftest

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"vitess.io/vitess/go/mysql/collations"
	"vitess.io/vitess/go/mysql/collations/charset"
	"vitess.io/vitess/go/mysql/collations/colldata"

	"github.com/shardgate/shardgate/internal/mysql"
)

// Answer is everything a client sees of one statement.
type Answer struct {
	// Prepare is the COM_STMT_PREPARE answer of a prepared statement (nil
	// for text statements and when the prepare failed: then Err is set).
	Prepare *PrepareInfo
	// Results are the OKs and result sets, in order (several for a
	// multi-statement); a result set cut short by an ERR is kept.
	Results []Result
	// Err is the ERR that ended the statement, if any.
	Err *mysql.SQLError
	// Warnings are SHOW WARNINGS's rows after the statement.
	Warnings []Warning
}

// PrepareInfo is what a prepare response describes.
type PrepareInfo struct {
	Params       int
	ParamColumns []Column // the servers send placeholder definitions
	Columns      []Column
	Warnings     uint16
}

// Result is one OK or one result set with its terminator.
type Result struct {
	Columns []Column // nil for an OK
	Rows    []Row
	Binary  bool // rows are in the binary protocol (COM_STMT_EXECUTE)
	// The OK packet's fields, or the result set terminator's (status and
	// warnings; under DEPRECATE_EOF the terminator is an OK and has all).
	AffectedRows uint64
	LastInsertID uint64
	Status       uint16
	Warnings     uint16
	Info         string
}

// Column is a protocol 4.1 column definition, every field of it.
type Column struct {
	Catalog, Schema, Table, OrgTable, Name, OrgName string
	Charset                                         uint16
	Length                                          uint32
	Type                                            byte
	Flags                                           uint16
	Decimals                                        byte
}

// Row is one row's values.
type Row []Value

// Value is one value of a row: in the text protocol the text as sent, in
// the binary protocol the raw encoding of the value (after the NULL
// bitmap; compared byte for byte, decoded per type only for reports).
type Value struct {
	Null  bool
	Bytes string
}

// Warning is one row of SHOW WARNINGS.
type Warning struct {
	Level   string
	Code    uint16
	Message string
}

// ignoredStatus are the status flags Diff does not compare:
//   - NO_INDEX_USED and NO_GOOD_INDEX_USED describe the optimizer's plan,
//     which depends on table statistics: a sub-table holding a quarter of
//     the rows may well be scanned where the whole table is not;
//   - QUERY_WAS_SLOW depends on timing;
//   - SESSION_STATE_CHANGED reports session tracking, which the harness's
//     connection turns on itself and a proxy answers for its own session.
//
// Every other flag (autocommit, in transaction, more results, cursor...)
// must be equal.
const ignoredStatus = mysql.StatusNoIndexUsed | mysql.StatusNoGoodIndexUsed |
	mysql.StatusQueryWasSlow | mysql.StatusSessionStateChange

// Diff compares got with the reference answer ref and describes every
// difference, one per line; "" means equal. Rows are compared in order when
// ordered (the statement's ORDER BY is total), as a multiset otherwise.
// Everything is compared exactly, error messages included, except the
// status flags in ignoredStatus. Refusals are the caller's business (see
// Options.Refusals): to Diff a refusal is a difference.
func Diff(ref, got Answer, ordered bool) string {
	return diff(ref, got, rowCompare{ordered: ordered}, true)
}

// DiffStatement is Diff comparing rows as st asks, st being a statement
// of database db: in order when st.Ordered, columns st.Fold under their
// collation, and, when st has a Superset, got's rows against superset,
// the reference's answer to it (nil: st failed on the reference, so got
// must fail too).
func DiffStatement(db string, ref, got Answer, st *Statement, superset *Answer) string {
	c := rowCompare{ordered: st.Ordered, fold: st.Fold, foldAs: foldCollations(st), merged: len(st.Constructs) > 0,
		planNotNull: st.PlanNotNull, derived: derivedNamesOf(st.SQL, db)}
	if st.Superset != nil && superset != nil {
		c.superset = true
		if len(superset.Results) > 0 {
			c.supersetRows = superset.Results[0].Rows
		}
	}
	return diff(ref, got, c, true)
}

// PlanFlags are the column flags MariaDB sets by its plan for a
// statement, not by the column: the key flags and AUTO_INCREMENT of a
// table's field, which a temporary table's field (a sort, a grouping, a
// join buffered for an ORDER BY) does not have (seed 1795872948058684403
// statement #4512: 0x4203 reading sf_note first, 0x0001 under the
// STRAIGHT_JOIN reading it second, on the same rows), and NUM_FLAG,
// which such fields have; and NO_DEFAULT_VALUE, which a MIN or MAX read by a loose index scan takes
// from the table's field and one computed in a temporary table does not
// (its string then has decimals 39, NOT_FIXED_DEC, against 0). A merge
// takes its columns from the client's statement on one sub-table, whose
// plan may differ from one server's over every row; the differential test
// does not compare them for merged statements (docs/compatibility.md).
const PlanFlags = 0x0002 | 0x0004 | 0x0008 | 0x0200 | 0x1000 | 0x4000 | 0x8000

const (
	binaryCharset = 63
	binaryFlag    = 0x0080
	notFixedDec   = 39
)

// rowCompare is how rows are compared.
type rowCompare struct {
	// merged: the statement may be answered by a merge across shards.
	merged bool
	// planNotNull: NOT_NULL is a plan flag too (Statement.PlanNotNull).
	planNotNull bool
	// derived: the statement's derived tables, whose columns' schema and
	// org_table are the plan's (derivedNames).
	derived derivedNames
	ordered bool
	fold    []int // columns compared by their weight under foldAs
	foldAs  []colldata.Collation
	// superset: got's rows (of the first result) must be supersetRows'
	// sub-multiset, as many as the reference's.
	superset     bool
	supersetRows []Row
}

// generalCI is the collation of the generator's strings.
var generalCI = colldata.Lookup(collations.ID(mysql.CollationUTF8MB4GeneralCI))

// foldCollations are the collations of st's Fold columns, by position:
// utf8mb4_general_ci unless FoldAs names another.
func foldCollations(st *Statement) []colldata.Collation {
	out := make([]colldata.Collation, len(st.Fold))
	for i := range out {
		out[i] = generalCI
		if i < len(st.FoldAs) && st.FoldAs[i] != "" {
			out[i] = lookupCollation(st.FoldAs[i])
		}
	}
	return out
}

// inCharset is s, as the connection's utf8mb4 sends it, in coll's
// character set (latin1's, say), for its weights.
func inCharset(coll colldata.Collation, s string) []byte {
	cs := coll.Charset()
	if _, utf8 := cs.(charset.Charset_utf8mb4); utf8 {
		return []byte(s)
	}
	b, err := charset.Convert(nil, cs, []byte(s), charset.Charset_utf8mb4{})
	if err != nil {
		return []byte(s) // not in the set: compared as it is
	}
	return b
}

// lookupCollation is the collation named as MariaDB names it; a name
// Vitess does not know is a bug of the statement that uses it.
func lookupCollation(name string) colldata.Collation {
	c := colldata.Lookup(collations.MySQL8().LookupByName(name))
	if c == nil {
		panic("difftest: unknown collation " + name)
	}
	return c
}

// key encodes a row unambiguously (lengths prefix the values), the fold
// columns as their weight strings under PAD SPACE: equal for values the
// collation holds equal ('a', 'A ', and every supplementary character).
func (c *rowCompare) key(r Row) string {
	var b strings.Builder
	for i, v := range r {
		if v.Null {
			b.WriteString("N;")
			continue
		}
		s := v.Bytes
		if j := slices.Index(c.fold, i); j >= 0 {
			coll := generalCI
			if j < len(c.foldAs) {
				coll = c.foldAs[j]
			}
			s = "w" + string(coll.WeightString(nil, inCharset(coll, strings.TrimRight(s, " ")), 0))
		}
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	return b.String()
}

// diff is Diff; without counts, row differences leave out the row counts,
// so that the difference of a table's contents stays the same while rows
// are added elsewhere in the table.
func diff(ref, got Answer, rc rowCompare, counts bool) string {
	d := differ{counts: counts, rc: rc}
	d.errors(ref.Err, got.Err)
	d.prepare(ref.Prepare, got.Prepare)
	if len(ref.Results) != len(got.Results) {
		d.addf("results: %d in reference, %d in got", len(ref.Results), len(got.Results))
	}
	for i := range min(len(ref.Results), len(got.Results)) {
		d.result(fmt.Sprintf("result %d: ", i+1), &ref.Results[i], &got.Results[i], i == 0)
	}
	d.warnings(ref.Warnings, got.Warnings)
	return strings.Join(d.lines, "\n")
}

type differ struct {
	lines  []string
	counts bool
	rc     rowCompare
}

func (d *differ) addf(format string, args ...any) {
	d.lines = append(d.lines, fmt.Sprintf(format, args...))
}

func (d *differ) errors(ref, got *mysql.SQLError) {
	switch {
	case ref == nil && got == nil:
	case ref == nil:
		d.addf("error: reference succeeded, got %v", got)
	case got == nil:
		d.addf("error: reference failed with %v, got succeeded", ref)
	case *ref != *got:
		d.addf("error: reference %v, got %v", ref, got)
	}
}

func (d *differ) prepare(ref, got *PrepareInfo) {
	switch {
	case ref == nil && got == nil:
		return
	case ref == nil || got == nil:
		d.addf("prepare: reference %s, got %s", describePrepare(ref), describePrepare(got))
		return
	}
	if ref.Params != got.Params {
		d.addf("prepare: %d parameters in reference, %d in got", ref.Params, got.Params)
	}
	if ref.Warnings != got.Warnings {
		d.addf("prepare: %d warnings in reference, %d in got", ref.Warnings, got.Warnings)
	}
	d.columns("prepare parameter ", ref.ParamColumns, got.ParamColumns)
	d.columns("prepare ", ref.Columns, got.Columns)
}

func describePrepare(p *PrepareInfo) string {
	if p == nil {
		return "no prepare answer"
	}
	return fmt.Sprintf("%d parameters, %d columns", p.Params, len(p.Columns))
}

func (d *differ) result(at string, ref, got *Result, first bool) {
	if (ref.Columns == nil) != (got.Columns == nil) {
		d.addf("%sreference is %s, got %s", at, describeResult(ref), describeResult(got))
		return
	}
	d.columns(at, ref.Columns, got.Columns)
	if ref.Binary != got.Binary {
		d.addf("%sreference rows binary=%v, got binary=%v", at, ref.Binary, got.Binary)
	}
	if first && d.rc.superset {
		d.subset(at, ref, got)
	} else {
		d.rows(at, ref, got)
	}
	if ref.AffectedRows != got.AffectedRows {
		d.addf("%saffected rows: reference %d, got %d", at, ref.AffectedRows, got.AffectedRows)
	}
	if ref.LastInsertID != got.LastInsertID {
		d.addf("%slast insert id: reference %d, got %d", at, ref.LastInsertID, got.LastInsertID)
	}
	if rs, gs := ref.Status&^ignoredStatus, got.Status&^ignoredStatus; rs != gs {
		d.addf("%sstatus flags: reference 0x%04x, got 0x%04x", at, rs, gs)
	}
	if ref.Warnings != got.Warnings {
		d.addf("%swarning count: reference %d, got %d", at, ref.Warnings, got.Warnings)
	}
	if ref.Info != got.Info {
		d.addf("%sinfo: reference %q, got %q", at, ref.Info, got.Info)
	}
}

func describeResult(r *Result) string {
	if r.Columns == nil {
		return "an OK"
	}
	return fmt.Sprintf("a result set of %d columns", len(r.Columns))
}

func (d *differ) columns(at string, ref, got []Column) {
	if len(ref) != len(got) {
		d.addf("%scolumns: %d in reference, %d in got", at, len(ref), len(got))
		return
	}
	for i := range ref {
		r, g := ref[i], got[i]
		// (the plan's variants are told by the definitions as sent)
		tempField := planTempField(&ref[i], &got[i]) || planTempField(&got[i], &ref[i])
		if d.rc.planNotNull {
			r.Flags &^= mysql.FlagNotNull
			g.Flags &^= mysql.FlagNotNull
		}
		if d.rc.derived.planVariant(&r, &g) {
			g.Schema, g.OrgTable = r.Schema, r.OrgTable
		}
		if d.rc.merged {
			r.Flags &^= PlanFlags
			g.Flags &^= PlanFlags
			if r.Charset == binaryCharset && g.Charset == binaryCharset {
				// BINARY on a number or a date: a temporary table's
				// field has it, a table's does not.
				r.Flags &^= binaryFlag
				g.Flags &^= binaryFlag
			}
			if r.Charset != binaryCharset && isString(r.Type) && r.Decimals+g.Decimals == notFixedDec && r.Decimals*g.Decimals == 0 {
				g.Decimals = r.Decimals // a temporary table's string field, or the table's
			}
			if planOrgName(&r) && planOrgName(&g) && r.OrgName != g.OrgName {
				// one side's plan read the expression from a temporary
				// table's field, whose length its type rounds
				g.OrgName, g.Length = r.OrgName, r.Length
			}
			if tempField {
				g.OrgTable, g.OrgName = r.OrgTable, r.OrgName
				g.Flags = g.Flags&^mysql.FlagNotNull | r.Flags&mysql.FlagNotNull
			}
		}
		for _, f := range columnDiff(&r, &g) {
			d.addf("%scolumn %d (%s): %s", at, i+1, ref[i].Name, f)
		}
	}
}

// planOrgName reports whether c is an expression's column (no table)
// whose org_name MariaDB sets by its plan: its name when the plan reads
// it from a temporary table's field (GROUP BY u.city_id % 3 through a
// temporary table), empty when it computes it as the rows come (the same
// statement on the same rows, seed 158463291).
func planOrgName(c *Column) bool {
	return c.OrgTable == "" && (c.OrgName == "" || c.OrgName == c.Name)
}

// planTempField reports whether t is the column a that one plan reads
// from its table's field, read by another plan from a temporary table's
// (GROUP BY … WITH ROLLUP after a join, by the join order: the same
// statement on the same rows, seed 6): no org_table, its name as
// org_name, and not NOT_NULL.
func planTempField(a, t *Column) bool {
	return a.OrgTable != "" && t.OrgTable == "" && t.OrgName == t.Name && a.Name == t.Name &&
		a.Table == t.Table && a.Type == t.Type && t.Flags&mysql.FlagNotNull == 0
}

// columnDiff lists the fields of two column definitions that differ.
func columnDiff(r, g *Column) []string {
	var out []string
	str := func(name, a, b string) {
		if a != b {
			out = append(out, fmt.Sprintf("%s: reference %q, got %q", name, a, b))
		}
	}
	num := func(name string, a, b uint64) {
		if a != b {
			out = append(out, fmt.Sprintf("%s: reference %d, got %d", name, a, b))
		}
	}
	str("catalog", r.Catalog, g.Catalog)
	str("schema", r.Schema, g.Schema)
	str("table", r.Table, g.Table)
	str("org_table", r.OrgTable, g.OrgTable)
	str("name", r.Name, g.Name)
	str("org_name", r.OrgName, g.OrgName)
	num("charset", uint64(r.Charset), uint64(g.Charset))
	num("length", uint64(r.Length), uint64(g.Length))
	num("type", uint64(r.Type), uint64(g.Type))
	if r.Flags != g.Flags {
		out = append(out, fmt.Sprintf("flags: reference 0x%04x, got 0x%04x", r.Flags, g.Flags))
	}
	num("decimals", uint64(r.Decimals), uint64(g.Decimals))
	return out
}

// maxRowsShown bounds the rows a difference lists.
const maxRowsShown = 5

func (d *differ) rows(at string, ref, got *Result) {
	if d.rc.ordered {
		for i := range max(len(ref.Rows), len(got.Rows)) {
			if i < len(ref.Rows) && i < len(got.Rows) && d.rc.key(ref.Rows[i]) == d.rc.key(got.Rows[i]) {
				continue
			}
			d.addf("%srows differ (in order) from row %d: reference %d rows, got %d\n  reference: %s\n  got:       %s",
				at, i+1, len(ref.Rows), len(got.Rows), rowAt(ref, i), rowAt(got, i))
			return
		}
		return
	}
	onlyRef, onlyGot := d.rc.multisetDiff(ref.Rows, got.Rows)
	if len(onlyRef) == 0 && len(onlyGot) == 0 {
		return
	}
	counts := ""
	if d.counts {
		counts = fmt.Sprintf(": reference %d rows, got %d", len(ref.Rows), len(got.Rows))
	}
	d.addf("%srows differ (as a multiset)%s\n  only in reference: %s\n  only in got:       %s",
		at, counts, formatRows(ref, onlyRef), formatRows(got, onlyGot))
}

// subset checks a LIMIT without a total order: as many rows as the
// reference's, each a row of the statement without the LIMIT.
func (d *differ) subset(at string, ref, got *Result) {
	if len(ref.Rows) != len(got.Rows) {
		d.addf("%srows: reference %d, got %d (a LIMIT without a total order)", at, len(ref.Rows), len(got.Rows))
	}
	if _, extra := d.rc.multisetDiff(d.rc.supersetRows, got.Rows); len(extra) > 0 {
		d.addf("%srows not in the answer without LIMIT (%d rows): %s", at, len(d.rc.supersetRows), formatRows(got, extra))
	}
}

func rowAt(r *Result, i int) string {
	if i >= len(r.Rows) {
		return "(none)"
	}
	return FormatRow(r.Columns, r.Rows[i], r.Binary)
}

func formatRows(r *Result, rows []Row) string {
	if len(rows) == 0 {
		return "(none)"
	}
	var parts []string
	for i, row := range rows {
		if i == maxRowsShown {
			parts = append(parts, fmt.Sprintf("… %d more", len(rows)-i))
			break
		}
		parts = append(parts, FormatRow(r.Columns, row, r.Binary))
	}
	return strings.Join(parts, " ")
}

// multisetDiff returns the rows of a missing from b and of b missing from a,
// counting duplicates.
func (c *rowCompare) multisetDiff(a, b []Row) (onlyA, onlyB []Row) {
	count := make(map[string]int, len(a))
	for _, r := range a {
		count[c.key(r)]++
	}
	for _, r := range b {
		k := c.key(r)
		if count[k] > 0 {
			count[k]--
			continue
		}
		onlyB = append(onlyB, r)
	}
	for _, r := range a {
		k := c.key(r)
		if count[k] > 0 {
			count[k]--
			onlyA = append(onlyA, r)
		}
	}
	return onlyA, onlyB
}

func (d *differ) warnings(ref, got []Warning) {
	if slices.Equal(ref, got) || capped(ref) && len(got) == len(ref) && slices.Equal(warningKinds(ref), warningKinds(got)) {
		return
	}
	d.addf("warnings: reference %s, got %s", formatWarnings(ref), formatWarnings(got))
}

// maxErrorCount is the server's default max_error_count: SHOW WARNINGS
// lists that many of a statement's warnings, the first it raised.
const maxErrorCount = 64

// capped reports a list of warnings cut at max_error_count: which ones it
// holds depends on the order the server read the rows in, which a scan of
// several shards does not share; their kinds and number must agree.
func capped(ws []Warning) bool { return len(ws) == maxErrorCount }

// warningKinds are the levels and codes of ws, sorted.
func warningKinds(ws []Warning) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = fmt.Sprintf("%s %d", w.Level, w.Code)
	}
	slices.Sort(out)
	return out
}

func formatWarnings(ws []Warning) string {
	if len(ws) == 0 {
		return "none"
	}
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = fmt.Sprintf("[%s %d %q]", w.Level, w.Code, w.Message)
	}
	return strings.Join(parts, " ")
}

// FormatRow renders a row for a report: text values quoted as sent, binary
// values decoded per column type.
func FormatRow(cols []Column, row Row, binaryRow bool) string {
	parts := make([]string, len(row))
	for i, v := range row {
		switch {
		case v.Null:
			parts[i] = "NULL"
		case binaryRow && i < len(cols):
			parts[i] = decodeBinary(cols[i], []byte(v.Bytes))
		default:
			parts[i] = strconv.Quote(v.Bytes)
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// decodeBinary renders a binary-protocol value. Temporal values show their
// encoded length too ("/7"), since servers may encode the same time with
// or without its zero fraction and the comparison is of bytes.
func decodeBinary(col Column, b []byte) string {
	unsigned := col.Flags&mysql.FlagUnsigned != 0
	le := binary.LittleEndian
	switch col.Type {
	case mysql.TypeTiny:
		if unsigned {
			return strconv.FormatUint(uint64(b[0]), 10)
		}
		return strconv.FormatInt(int64(int8(b[0])), 10)
	case mysql.TypeShort, mysql.TypeYear:
		if unsigned {
			return strconv.FormatUint(uint64(le.Uint16(b)), 10)
		}
		return strconv.FormatInt(int64(int16(le.Uint16(b))), 10)
	case mysql.TypeLong, mysql.TypeInt24:
		if unsigned {
			return strconv.FormatUint(uint64(le.Uint32(b)), 10)
		}
		return strconv.FormatInt(int64(int32(le.Uint32(b))), 10)
	case mysql.TypeLongLong:
		if unsigned {
			return strconv.FormatUint(le.Uint64(b), 10)
		}
		return strconv.FormatInt(int64(le.Uint64(b)), 10)
	case mysql.TypeFloat:
		return strconv.FormatFloat(float64(math.Float32frombits(le.Uint32(b))), 'g', -1, 32)
	case mysql.TypeDouble:
		return strconv.FormatFloat(math.Float64frombits(le.Uint64(b)), 'g', -1, 64)
	case mysql.TypeDate, mysql.TypeDateTime, mysql.TypeTimestamp:
		return decodeDateTime(b)
	case mysql.TypeTime:
		return decodeTime(b)
	}
	return strconv.Quote(string(b))
}

func decodeDateTime(b []byte) string {
	n := int(b[0])
	v := make([]int, 7) // year month day hour minute second microsecond
	if n >= 4 {
		v[0], v[1], v[2] = int(binary.LittleEndian.Uint16(b[1:])), int(b[3]), int(b[4])
	}
	if n >= 7 {
		v[3], v[4], v[5] = int(b[5]), int(b[6]), int(b[7])
	}
	if n >= 11 {
		v[6] = int(binary.LittleEndian.Uint32(b[8:]))
	}
	return fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d.%06d/%d", v[0], v[1], v[2], v[3], v[4], v[5], v[6], n)
}

func decodeTime(b []byte) string {
	n := int(b[0])
	if n < 8 {
		return fmt.Sprintf("00:00:00/%d", n)
	}
	sign := ""
	if b[1] == 1 {
		sign = "-"
	}
	days := binary.LittleEndian.Uint32(b[2:])
	micro := uint32(0)
	if n >= 12 {
		micro = binary.LittleEndian.Uint32(b[9:])
	}
	return fmt.Sprintf("%s%dd %02d:%02d:%02d.%06d/%d", sign, days, b[6], b[7], b[8], micro, n)
}

// isString reports whether a column of type t holds strings.
func isString(t byte) bool {
	switch t {
	case mysql.TypeVarchar, mysql.TypeVarString, mysql.TypeString, mysql.TypeBlob, mysql.TypeTinyBlob, mysql.TypeMediumBlob, mysql.TypeLongBlob:
		return true
	}
	return false
}
