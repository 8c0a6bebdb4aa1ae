package engine

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
)

// Step is one line of a plan's description: what runs where.
type Step struct {
	Primitive string // Route, Scatter, Fanout, Refuse …
	Shard     string // the cluster it runs on; "" for none
	Query     string // the SQL sent there, or the refusal's message
	// SQL is the statement the step sends, as an EXPLAIN of it reads it
	// (a fetch's SELECT without its SET STATEMENT), and Cluster where it
	// goes; SQL is "" for a step that sends none an EXPLAIN reads: a
	// merge of the parts' rows, a temporary table's creation or drop, a
	// semi-join's batches (their values are known only as it runs), a
	// column probe, a prepared statement's text, DDL, SHOW.
	SQL     string
	Cluster *backend.Cluster
	// Evaluator: SQL reads the evaluated statement's temporary tables,
	// which its EXPLAIN finds created empty (ExplainPlan). InTrx: the
	// step runs only inside a transaction.
	Evaluator, InTrx bool
}

// Explain describes the plan p for the client command q without running
// it: one step per statement sent, in the order they would run.
func Explain(p Primitive, q []byte) []Step {
	switch p := p.(type) {
	case *Route:
		return []Step{{Primitive: "Route", Shard: p.Cluster.Name, Query: text(queryOr(p.Query, q)),
			SQL: explainable(queryOr(p.Query, q), p.Stmt), Cluster: p.Cluster}}
	case *Scatter:
		return partSteps("Scatter", p.Parts, q, true)
	case *Fanout:
		name := "Fanout"
		if p.OneServer {
			name = "Fanout (every shard, one server's answer)"
		}
		return partSteps(name, p.Parts, q, true)
	case *Merge:
		steps := partSteps("Merge", p.Parts, q, true)
		if p.Probe && len(steps) > 0 {
			steps[0].SQL = "" // the client's statement on one sub-table ahead of the part's own
		}
		return append(steps, Step{Primitive: "Merge", Query: p.describe()})
	case *InsertSplit:
		return partSteps("InsertSplit", p.Parts, q, true)
	case *Metadata:
		return partSteps("Metadata", p.Parts, q, false)
	case *DDL:
		var steps []Step
		for _, st := range p.Steps {
			for i := range st.Parts {
				steps = append(steps, partSteps("DDL", []Part{st.Parts[i].Part}, q, false)...)
			}
		}
		return steps
	case *Evaluate:
		return p.explain(q)
	case *InsertSelect:
		return p.explain(q)
	case *ExplainPlan:
		return Explain(p.Plan, p.Query)
	case *Refuse:
		return []Step{{Primitive: "Refuse", Query: strconv.Itoa(int(p.Err.Code)) + " (" + p.Err.State + "): " + p.Err.Message}}
	case EndTransaction:
		return []Step{{Primitive: "EndTransaction", Query: text(q)}}
	case Savepoint:
		return []Step{{Primitive: "Savepoint (every shard in the transaction)", Query: text(q)}}
	}
	return []Step{{Primitive: "unknown"}}
}

// text is the SQL of a command packet, the command byte off.
func text(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return string(b[1:])
}

// explainable is the SQL of command q when an EXPLAIN can read it: a
// text statement (COM_QUERY), not a prepared statement's text (stmt),
// whose parameters only an execution has; "" otherwise.
func explainable(q, stmt []byte) string {
	if stmt != nil || len(q) == 0 || q[0] != mysql.ComQuery {
		return ""
	}
	return strings.TrimPrefix(string(q[1:]), FetchPrefix)
}

// partSteps describes parts, each a step of primitive name; explain:
// their SQL is what an EXPLAIN reads (not DDL or SHOW).
func partSteps(name string, parts []Part, q []byte, explain bool) []Step {
	steps := make([]Step, len(parts))
	for i := range parts {
		p := &parts[i]
		query := text(queryOr(p.Query, q))
		if p.Stmt != nil {
			query = string(p.Stmt) // a prepared statement's text on that sub-table
		}
		steps[i] = Step{Primitive: name, Shard: p.Cluster.Name, Query: query, Cluster: p.Cluster}
		if explain {
			steps[i].SQL = explainable(queryOr(p.Query, q), p.Stmt)
		}
	}
	return steps
}

func queryOr(own, q []byte) []byte {
	if own != nil {
		return own
	}
	return q
}

// describe says what a merge does with the parts' rows, by column
// (1-based, as the parts' ORDER BY positions).
func (m *Merge) describe() string {
	s := m.Spec
	var parts []string
	add := func(f string, a ...any) { parts = append(parts, fmt.Sprintf(f, a...)) }
	if len(s.Order) > 0 {
		add("merge by %s", sortKeys(s.Order))
	}
	switch {
	case s.Groups > 0:
		add("group by the first %d", s.Groups)
	case s.Groups < 0:
		add("one group")
	}
	for _, a := range s.Aggregates {
		add("%s of column %d", aggNames[a.Kind], a.Col+1)
		if len(a.With) > 0 {
			add("columns %s from its row", columnList(a.With))
		}
	}
	if len(s.Computed) > 0 {
		add("%d computed column(s)", len(s.Computed))
	}
	if s.Having != nil {
		add("HAVING")
	}
	if len(s.Final) > 0 {
		add("then sort by %s", sortKeys(s.Final))
	}
	if m.HasLimit {
		add("rows %d to %d", m.Offset+1, m.Offset+m.Count)
	}
	if s.Hidden > 0 {
		add("%d hidden column(s)", s.Hidden)
	}
	if s.passesRows() && !m.HasLimit {
		add("rows passed on as they come, shard after shard")
	}
	return strings.Join(parts, "; ")
}

// columnList lists columns 1-based: "3, 5".
func columnList(cols []int) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = strconv.Itoa(c + 1)
	}
	return strings.Join(names, ", ")
}

var aggNames = map[AggKind]string{AggCount: "COUNT", AggSum: "SUM", AggMin: "MIN", AggMax: "MAX",
	AggBitAnd: "BIT_AND", AggBitOr: "BIT_OR", AggBitXor: "BIT_XOR", AggCountDistinct: "COUNT(DISTINCT)",
	AggSumDistinct: "SUM(DISTINCT)", AggGroupConcat: "GROUP_CONCAT"}

func sortKeys(keys []SortKey) string {
	var s []string
	for _, k := range keys {
		d := strconv.Itoa(k.Col + 1)
		if k.Desc {
			d += " DESC"
		}
		s = append(s, d)
	}
	return strings.Join(s, ", ")
}
