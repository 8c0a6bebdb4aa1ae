package engine

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"vitess.io/vitess/go/sqltypes"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
)

// InsertSelect runs an INSERT … SELECT into a sharded table whose
// SELECT no route answers (see planner.EvalInto), in two steps:
//
//  1. On the evaluator (Evaluate's connection of the proxy's own), the
//     SELECT's tables copied as for an evaluated read, the client's
//     statement runs as sent into Twin, an empty temporary table of the
//     target's name and definition. Its answer is one server's: an
//     error ends the statement with nothing written; its OK gives the
//     row count, the "Records: …" text and the warnings (kept for SHOW
//     WARNINGS), and Twin holds the rows as the target's columns hold
//     them.
//  2. Twin's rows, read back (at most MaxRows), become one INSERT …
//     VALUES into the target, which Write binds as the client's own
//     multi-row INSERT is bound (keys routed, generated ones drawn from
//     the table's sequence, a split per sub-table under the rules of
//     cross-shard writes) and which runs with the session's cursor, its
//     OK completed with step 1's text and warnings.
//
// Twin's AUTO_INCREMENT column, when the statement gives it, is made a
// plain NULL-able column first, so that the rows whose key the target
// must generate (NULL, 0) reach step 2 as they are.
type InsertSelect struct {
	Eval    *Evaluate
	Twin    EvalCopy
	Table   string   // the target's name, for errors
	Columns []string // the statement's column list; nil: the table's
	MaxRows uint64
	Write   func(stmt []byte) Primitive
	// Buf holds step 2's statement, kept between executions.
	Buf []byte

	dry  mysql.OKPacket
	info []byte
}

// Execute implements Primitive.
func (s *InsertSelect) Execute(c Cursor, q []byte) bool {
	defer c.WatchClient()()
	e := s.Eval
	ev, err := c.Aside(e.Evaluator)
	if err != nil {
		return c.Fail(evaluatorFailed(e.Evaluator, err))
	}
	if err := e.copyAll(c, ev); err != nil {
		return e.fail(c, ev, err)
	}
	if err := e.create(c, ev, &s.Twin); err != nil {
		return e.fail(c, ev, err)
	}
	cols, err := s.prepareTwin(ev)
	if err != nil {
		return e.fail(c, ev, err)
	}
	final := Part{Cluster: e.Evaluator}
	okp, r, err := writePart(c, ev, &final, q)
	if err != nil {
		c.ReleaseAside(ev, true) // (its temporary tables go with it)
		if clientFailed(err) {
			return false
		}
		return c.Fail(evaluatorFailed(e.Evaluator, err))
	}
	if r.Info.Err != nil {
		c.TakeWarnings(ev, &r.Info)
		return e.fail(c, ev, r.Info.Err)
	}
	s.info = append(s.info[:0], okp.Info...)
	s.dry = mysql.OKPacket{AffectedRows: okp.AffectedRows, Warnings: okp.Warnings, Info: s.info}
	c.TakeWarnings(ev, &r.Info)
	if s.dry.AffectedRows > s.MaxRows {
		return e.fail(c, ev, mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax,
			"This version of shardgate doesn't yet support 'INSERT … SELECT of more than %d rows into sharded table %s' (it wrote nothing; copy the rows in parts, e.g. by ranges of a key)", s.MaxRows, s.Table))
	}
	if s.dry.AffectedRows == 0 {
		c.ReleaseAside(ev, e.drop(ev) != nil)
		ok := s.dry
		ok.Status = c.Status()
		return c.Answer(&ok)
	}
	err = s.readBack(ev, cols)
	c.ReleaseAside(ev, err != nil || e.drop(ev) != nil)
	if err != nil {
		return c.Fail(asClientError(fmt.Errorf("reading back the rows of INSERT … SELECT into %s: %w", s.Table, err)))
	}
	return s.Write(s.Buf).Execute(&insertSelectCursor{Cursor: c, dry: &s.dry}, q)
}

// twinColumn is a column of the twin, as SHOW COLUMNS shows it.
type twinColumn struct {
	name, typ      string
	auto, computed bool
}

// prepareTwin returns the columns step 2 writes (the statement's, else
// the table's, less generated ones), after making Twin's AUTO_INCREMENT
// column, when among them, a plain NULL-able column without keys.
func (s *InsertSelect) prepareTwin(ev *backend.Conn) ([]twinColumn, error) {
	rows, err := ev.QueryRows("SHOW COLUMNS FROM " + s.Twin.Temp)
	if err != nil {
		return nil, err
	}
	var all, cols []twinColumn
	for _, r := range rows {
		if len(r) < 6 {
			return nil, fmt.Errorf("SHOW COLUMNS FROM %s: %d columns", s.Twin.Temp, len(r))
		}
		extra := strings.ToUpper(r[5])
		all = append(all, twinColumn{name: r[0], typ: r[1], auto: strings.Contains(extra, "AUTO_INCREMENT"),
			computed: strings.Contains(extra, "GENERATED") || strings.Contains(extra, "INVISIBLE")})
	}
	for _, c := range all {
		if c.computed || s.Columns != nil && !slices.ContainsFunc(s.Columns, func(n string) bool { return strings.EqualFold(n, c.name) }) {
			continue
		}
		cols = append(cols, c)
		if c.auto {
			if err := s.plainAuto(ev, c); err != nil {
				return nil, err
			}
		}
	}
	return cols, nil
}

// plainAuto makes Twin's AUTO_INCREMENT column c a NULL-able column of
// its type, in no key: a NULL or 0 the statement gives stays so in
// Twin, for the target to generate the key.
func (s *InsertSelect) plainAuto(ev *backend.Conn, c twinColumn) error {
	rows, err := ev.QueryRows("SHOW INDEX FROM " + s.Twin.Temp)
	if err != nil {
		return err
	}
	var alter []string
	for _, r := range rows {
		if len(r) < 5 || !strings.EqualFold(r[4], c.name) {
			continue
		}
		if r[2] == "PRIMARY" {
			alter = append(alter, "DROP PRIMARY KEY")
		} else {
			alter = append(alter, "DROP KEY "+quoteIdent(r[2]))
		}
	}
	alter = append(alter, "MODIFY "+quoteIdent(c.name)+" "+c.typ+" NULL")
	return ev.Exec("ALTER TABLE " + s.Twin.Temp + " " + strings.Join(alter, ", "))
}

// readBack writes into Buf the INSERT … VALUES of Twin's rows, each
// value a literal the target's column takes as it is: numbers as
// written, FLOATs through DOUBLE (whose text is exact), dates and times
// quoted, binary strings (and BIT) in hexadecimal, character strings as
// utf8mb4 (the read's character set, which holds any).
func (s *InsertSelect) readBack(ev *backend.Conn, cols []twinColumn) error {
	var sel, names strings.Builder
	for i, c := range cols {
		if i > 0 {
			sel.WriteByte(',')
			names.WriteByte(',')
		}
		names.WriteString(quoteIdent(c.name))
		if strings.HasPrefix(strings.ToLower(c.typ), "float") {
			sel.WriteString("CAST(" + quoteIdent(c.name) + " AS DOUBLE)")
		} else {
			sel.WriteString(quoteIdent(c.name))
		}
	}
	if err := ev.WriteCommand(append([]byte{mysql.ComQuery}, "SET STATEMENT character_set_results=utf8mb4 FOR SELECT "+sel.String()+" FROM "+s.Twin.Temp...)); err != nil {
		return err
	}
	if err := ev.Flush(); err != nil {
		return err
	}
	rs := &s.Eval.rows
	rs.Reset(ev.Conn, ev.Caps, nil, false)
	if err := rs.Start(); err != nil {
		return err
	}
	if rs.Info.Err != nil {
		return rs.Info.Err
	}
	b := append(s.Buf[:0], "INSERT INTO "+s.Twin.Temp+" ("+names.String()+") VALUES "...)
	first := true
	for {
		row, ok, err := rs.Next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '(')
		for i, v := range row {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendTargetLiteral(b, &rs.Cols[i], v)
		}
		b = append(b, ')')
	}
	s.Buf = b
	return nil
}

// appendTargetLiteral appends v, a value of column d read back from
// Twin, as the literal step 2 gives the target's column.
func appendTargetLiteral(b []byte, d *mysql.ColumnDef, v sqltypes.Value) []byte {
	if v.IsNull() {
		return append(b, "NULL"...)
	}
	raw := v.Raw()
	switch d.Type {
	case mysql.TypeTiny, mysql.TypeShort, mysql.TypeLong, mysql.TypeLongLong, mysql.TypeInt24,
		mysql.TypeDecimal, mysql.TypeNewDecimal, mysql.TypeFloat, mysql.TypeDouble, mysql.TypeYear:
		return append(b, raw...)
	case mysql.TypeDate, mysql.TypeDateTime, mysql.TypeTimestamp, mysql.TypeTime:
		b = append(b, '\'')
		b = append(b, raw...)
		return append(b, '\'')
	}
	if d.Charset == uint16(mysql.CollationBinary) || d.Type == mysql.TypeBit {
		b = append(b, "X'"...)
		b = hex.AppendEncode(b, raw)
		return append(b, '\'')
	}
	b = append(b, "_utf8mb4"...)
	return appendQuoted(b, raw)
}

// insertSelectCursor is the session's cursor for step 2 of an
// InsertSelect: its parts' warnings are left out (step 1's are the
// statement's), and its OK takes step 1's text and warning count.
type insertSelectCursor struct {
	Cursor
	dry *mysql.OKPacket
}

func (c *insertSelectCursor) Done(conn *backend.Conn, info *mysql.ResponseInfo) {
	c.Cursor.SkipWarnings()
	c.Cursor.Done(conn, info)
}

func (c *insertSelectCursor) AnswerInsert(ok *mysql.OKPacket, generated uint64) bool {
	ok.Info, ok.Warnings = c.dry.Info, c.dry.Warnings
	return c.Cursor.AnswerInsert(ok, generated)
}

// quoteIdent is `name`.
func quoteIdent(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// explain describes the two steps: the evaluation into Twin (its
// statement not EXPLAINed: Twin is not among the empty copies), then the
// write of its rows.
func (s *InsertSelect) explain(q []byte) []Step {
	var steps []Step
	for _, st := range s.Eval.explain(q) {
		if st.Primitive != "Evaluate: the statement" {
			steps = append(steps, st)
			continue
		}
		ev := s.Eval.Evaluator.Name
		steps = append(steps,
			Step{Primitive: "InsertSelect: create", Shard: ev, Query: "CREATE TEMPORARY TABLE " + s.Twin.Temp + " (the target's twin, like its sub-tables)"},
			Step{Primitive: "InsertSelect: the statement, into the twin", Shard: ev, Query: st.Query},
			Step{Primitive: "InsertSelect: read back", Shard: ev, Query: "SELECT the statement's columns FROM " + s.Twin.Temp + " (at most " + strconv.FormatUint(s.MaxRows, 10) + " rows)"},
			Step{Primitive: "InsertSelect: write", Query: "INSERT INTO " + s.Twin.Temp + " (…) VALUES (the twin's rows), bound as a multi-row INSERT: one part per sub-table"})
	}
	return steps
}
