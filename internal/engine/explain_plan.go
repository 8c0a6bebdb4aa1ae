package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
)

// ExplainPlan answers EXPLAIN (DESCRIBE) of a statement on a sharded
// schema with the plan the proxy would run for it, the statement not
// run: each step of the plan (Explain) with its primitive, shard and SQL,
// and, for each step that sends SQL to a server, that server's own
// EXPLAIN of it, asked with the client's head (EXTENDED, PARTITIONS,
// FORMAT=JSON). The shards' EXPLAINs run where the session reads
// (inspect): on the connection it holds there (its transaction's), else
// on one in step with its state; an evaluated statement's own SQL (the
// client's statement, a semi-join's values) is explained on the
// evaluator over its temporary tables created empty, as a PREPARE of it
// is (Evaluate.withEmptyCopies). Nothing else runs: no row is copied,
// written or read but by the servers' EXPLAINs.
//
// The answer is one result set. As a table: shardgate_step, primitive,
// shard, query, then the servers' EXPLAIN columns, one row per row of a
// step's EXPLAIN (NULL for a step that sends no SQL). With FORMAT=JSON:
// one row, one column EXPLAIN, holding {"shardgate": {"plan": [...]}},
// each step an object whose "explain" is its server's own document.
type ExplainPlan struct {
	// Head is the client's EXPLAIN and its options as written
	// ("EXPLAIN EXTENDED "), put before each step's SQL.
	Head string
	JSON bool
	// Plan is what the statement would run; Query the statement's
	// COM_QUERY packet.
	Plan  Primitive
	Query []byte
}

// Execute implements Primitive.
func (x *ExplainPlan) Execute(c Cursor, _ []byte) bool {
	steps := x.steps(c.Status()&mysql.StatusInTrans != 0)
	results := make([]*mysql.ResultSet, len(steps))
	if err := x.onShards(c, steps, results); err != nil {
		return answerFailure(c, err)
	}
	if err := x.onEvaluator(c, steps, results); err != nil {
		return answerFailure(c, err)
	}
	var rs *mysql.ResultSet
	if x.JSON {
		rs = explainJSON(steps, results)
	} else {
		rs = explainTable(steps, results)
	}
	return c.AnswerResult(rs)
}

// steps are the plan's steps, those that run only inside a transaction
// left out of a session outside one (inTrx false).
func (x *ExplainPlan) steps(inTrx bool) []Step {
	all := Explain(x.Plan, x.Query)
	steps := all[:0]
	for _, st := range all {
		if inTrx || !st.InTrx {
			steps = append(steps, st)
		}
	}
	return steps
}

// onShards runs the EXPLAIN of each step's SQL that is not the
// evaluator's into results, in step order.
func (x *ExplainPlan) onShards(c Cursor, steps []Step, results []*mysql.ResultSet) error {
	for i := range steps {
		st := &steps[i]
		if st.SQL == "" || st.Evaluator {
			continue
		}
		rs, err := inspect(c, st.Cluster, x.Head+st.SQL)
		if err != nil {
			return err
		}
		results[i] = rs
	}
	return nil
}

// onEvaluator runs the EXPLAIN of each step's SQL that reads an
// evaluated statement's temporary tables into results, on one evaluator
// connection holding them empty.
func (x *ExplainPlan) onEvaluator(c Cursor, steps []Step, results []*mysql.ResultSet) error {
	e, ok := x.Plan.(*Evaluate)
	if is, insert := x.Plan.(*InsertSelect); insert {
		e, ok = is.Eval, true
	}
	if !ok {
		return nil
	}
	var failed error
	err := e.withEmptyCopies(c, func(ev *backend.Conn) (gone bool) {
		gone, failed = x.explainOn(c, e, ev, steps, results)
		return gone
	})
	if err != nil {
		return err
	}
	return failed
}

// explainOn runs on ev, e's evaluator connection, the EXPLAIN of each
// step's SQL that reads e's temporary tables, into results; gone: ev
// failed and was given up.
func (x *ExplainPlan) explainOn(c Cursor, e *Evaluate, ev *backend.Conn, steps []Step, results []*mysql.ResultSet) (gone bool, err error) {
	for i := range steps {
		st := &steps[i]
		if st.SQL == "" || !st.Evaluator {
			continue
		}
		rs, err := ev.QueryResultSet(x.Head + st.SQL)
		if err != nil && !mysql.IsSQLError(err) {
			c.ReleaseAside(ev, true)
			return true, evaluatorFailed(e.Evaluator, err)
		}
		if err != nil {
			return false, err
		}
		if rs.Warnings > 0 {
			c.TakeWarnings(ev, &mysql.ResponseInfo{Warnings: rs.Warnings})
		}
		results[i] = rs
	}
	return false, nil
}

// inspect runs sql, a statement of the proxy's own that reads and
// changes nothing (EXPLAIN, SHOW CREATE TABLE), on cl where the session
// reads: on the connection it holds there (Cursor.Held: its
// transaction's, its locks'), else on one in step with its state
// outside its transaction (Aside), so that it opens no transaction on a
// shard the session's has not reached. Its warnings become the
// statement's. A server's error is returned as it is; a connection that
// fails is dropped (a held one as Drop drops it: answered when the
// session cannot go on) and the error names its cluster.
func inspect(c Cursor, cl *backend.Cluster, sql string) (*mysql.ResultSet, error) {
	conn := c.Held(cl)
	held := conn != nil
	if !held {
		var err error
		if conn, err = c.Aside(cl); err != nil {
			return nil, fmt.Errorf("cluster %s: %w", cl.Name, err)
		}
	}
	rs, err := conn.QueryResultSet(sql)
	broken := err != nil && !mysql.IsSQLError(err)
	if err == nil && rs.Warnings > 0 {
		c.TakeWarnings(conn, &mysql.ResponseInfo{Warnings: rs.Warnings})
	}
	switch {
	case !held:
		c.ReleaseAside(conn, broken)
	case broken && !c.Drop(conn, err):
		return nil, &answered{goOn: false}
	}
	if broken {
		return nil, fmt.Errorf("cluster %s failed: %w", cl.Name, err)
	}
	return rs, err
}

// explainColumns are the definitions of the leading columns of an
// EXPLAIN's table: which step of the plan a row is about.
var explainColumns = func() [][]byte {
	text := func(name string, length uint32, flags uint16) []byte {
		return mysql.AppendColumnDef(nil, &mysql.Column{Name: name, Type: mysql.TypeVarString,
			Charset: uint16(mysql.CollationUTF8MB4GeneralCI), Length: length, Flags: flags, Expression: true})
	}
	return [][]byte{
		mysql.AppendColumnDef(nil, &mysql.Column{Name: "shardgate_step", Type: mysql.TypeLongLong,
			Charset: uint16(mysql.CollationBinary), Length: 10, Flags: mysql.FlagNotNull | mysql.FlagUnsigned | mysql.FlagBinary | flagNum, Expression: true}),
		text("primitive", 1024, mysql.FlagNotNull),
		text("shard", 256, 0),
		text("query", 1<<20, mysql.FlagNotNull),
	}
}()

// flagNum is NUM_FLAG, which a server sets on numeric columns.
const flagNum uint16 = 32768

// explainTable is the EXPLAIN's answer as a table: for each step, a row
// per row of its server's EXPLAIN (results[i], nil for a step that sends
// no SQL, which gets one row of NULLs), after the step's number,
// primitive, shard and query. The servers' columns are those of the
// first result, each result's values placed by column name (a server
// could order them otherwise).
func explainTable(steps []Step, results []*mysql.ResultSet) *mysql.ResultSet {
	out := &mysql.ResultSet{Columns: append([][]byte(nil), explainColumns...)}
	var names []string
	for _, rs := range results {
		if rs != nil {
			out.Columns = append(out.Columns, rs.Columns...)
			names = columnNames(rs.Columns)
			break
		}
	}
	for i, st := range steps {
		lead := [][]byte{[]byte(strconv.Itoa(i + 1)), []byte(st.Primitive), nullIfEmpty(st.Shard), []byte(st.Query)}
		rs := results[i]
		if rs == nil || len(rs.Rows) == 0 {
			out.Rows = append(out.Rows, append(lead, make([][]byte, len(names))...))
			continue
		}
		at := columnPlaces(names, rs.Columns)
		for _, r := range rs.Rows {
			row := append(append([][]byte(nil), lead...), make([][]byte, len(names))...)
			for k, v := range r {
				if at[k] >= 0 {
					row[len(lead)+at[k]] = v
				}
			}
			out.Rows = append(out.Rows, row)
		}
		out.Warnings = addWarnings(out.Warnings, rs.Warnings)
	}
	return out
}

// columnNames are the names of column definitions cols.
func columnNames(cols [][]byte) []string {
	names := make([]string, len(cols))
	for i, def := range cols {
		names[i] = string(mysql.ColumnDefName(def))
	}
	return names
}

// columnPlaces is, for each column of cols, the index of the column of
// its name among names, -1 when none.
func columnPlaces(names []string, cols [][]byte) []int {
	at := make([]int, len(cols))
	for k, def := range cols {
		at[k] = -1
		name := string(mysql.ColumnDefName(def))
		for j, n := range names {
			if n == name {
				at[k] = j
				break
			}
		}
	}
	return at
}

func nullIfEmpty(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// addWarnings is a + b, at most what a terminator can say.
func addWarnings(a, b uint16) uint16 {
	return uint16(min(int(a)+int(b), 0xffff))
}

// explainStep is a step of the EXPLAIN FORMAT=JSON document.
type explainStep struct {
	Step      int             `json:"step"`
	Primitive string          `json:"primitive"`
	Shard     string          `json:"shard,omitempty"`
	Query     string          `json:"query"`
	Explain   json.RawMessage `json:"explain,omitempty"`
}

// explainJSON is the EXPLAIN FORMAT=JSON's answer: one row, one column
// EXPLAIN, the document {"shardgate": {"plan": [steps]}}, each step
// holding its server's own EXPLAIN document (results[i]'s one value),
// embedded as JSON, not as a string (one that is not valid JSON is a
// string).
func explainJSON(steps []Step, results []*mysql.ResultSet) *mysql.ResultSet {
	plan := make([]explainStep, len(steps))
	var warnings uint16
	for i, st := range steps {
		plan[i] = explainStep{Step: i + 1, Primitive: st.Primitive, Shard: st.Shard, Query: st.Query}
		rs := results[i]
		if rs == nil || len(rs.Rows) == 0 || len(rs.Rows[0]) == 0 {
			continue
		}
		doc := rs.Rows[0][0]
		if !json.Valid(doc) {
			doc, _ = json.Marshal(string(doc))
		}
		plan[i].Explain = doc
		warnings = addWarnings(warnings, rs.Warnings)
	}
	var doc struct {
		Shardgate struct {
			Plan []explainStep `json:"plan"`
		} `json:"shardgate"`
	}
	doc.Shardgate.Plan = plan
	// As the servers write theirs: indented, '<' and '>' as they are
	// ("<union1,2>").
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil { // (strings and valid documents only: it cannot fail)
		buf.Reset()
		buf.WriteString(strconv.Quote(err.Error()))
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	col := mysql.AppendColumnDef(nil, &mysql.Column{Name: "EXPLAIN", Type: mysql.TypeVarString,
		Charset: uint16(mysql.CollationUTF8MB4GeneralCI), Length: uint32(min(len(b)*4, 1<<24)), Flags: mysql.FlagNotNull, Decimals: 39, Expression: true})
	return &mysql.ResultSet{Columns: [][]byte{col}, Rows: [][][]byte{{b}}, Warnings: warnings}
}
