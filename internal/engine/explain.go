package engine

import "strconv"

// Step is one line of a plan's description: what runs where.
type Step struct {
	Primitive string // Route, Scatter, Fanout, Refuse …
	Shard     string // the cluster it runs on; "" for none
	Query     string // the SQL sent there, or the refusal's message
}

// Explain describes the plan p for the client command q without running
// it: one step per statement sent, in the order they would run.
func Explain(p Primitive, q []byte) []Step {
	text := func(b []byte) string {
		if len(b) == 0 {
			return ""
		}
		return string(b[1:]) // the command byte off
	}
	switch p := p.(type) {
	case *Route:
		return []Step{{Primitive: "Route", Shard: p.Cluster.Name, Query: text(queryOr(p.Query, q))}}
	case *Scatter:
		return partSteps("Scatter", p.Parts, q, text)
	case *Fanout:
		name := "Fanout"
		if p.OneServer {
			name = "Fanout (every shard, one server's answer)"
		}
		return partSteps(name, p.Parts, q, text)
	case *InsertSplit:
		return partSteps("InsertSplit", p.Parts, q, text)
	case *Metadata:
		return partSteps("Metadata", p.Parts, q, text)
	case *DDL:
		var steps []Step
		for _, st := range p.Steps {
			for i := range st.Parts {
				steps = append(steps, partSteps("DDL", []Part{st.Parts[i].Part}, q, text)...)
			}
		}
		return steps
	case *Refuse:
		return []Step{{Primitive: "Refuse", Query: strconv.Itoa(int(p.Err.Code)) + " (" + p.Err.State + "): " + p.Err.Message}}
	case EndTransaction:
		return []Step{{Primitive: "EndTransaction", Query: text(q)}}
	}
	return []Step{{Primitive: "unknown"}}
}

func partSteps(name string, parts []Part, q []byte, text func([]byte) string) []Step {
	steps := make([]Step, len(parts))
	for i := range parts {
		p := &parts[i]
		query := text(queryOr(p.Query, q))
		if p.Stmt != nil {
			query = string(p.Stmt) // a prepared statement's text on that sub-table
		}
		steps[i] = Step{Primitive: name, Shard: p.Cluster.Name, Query: query}
	}
	return steps
}

func queryOr(own, q []byte) []byte {
	if own != nil {
		return own
	}
	return q
}
