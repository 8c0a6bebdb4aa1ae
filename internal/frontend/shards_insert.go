package frontend

import (
	"strings"

	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/planner"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sharding"
)

// insertRows is what the session keeps from one INSERT on a sharded table
// to the next, so that splitting one allocates nothing once grown: the
// rows' keys, the generated ids by row, and the rows grouped by part.
type insertRows struct {
	keys     planner.RowKeys
	ids      []uint64 // by row: the generated key, 0 for a row that gives its own
	partSub  []int    // each part's sub-table
	partRows []int    // the rows of every part, part after part
	partLen  []int    // each part's number of rows
	subPart  []int    // by sub-table: its part, -1 when none (kept all -1 between statements)
	// A prepared execution's parts: the parameters of every part, part
	// after part, and where each part's end.
	params, paramEnds []int
	split             engine.InsertSplit
}

// planInsert plans an INSERT or REPLACE into a sharded table: the rows'
// keys (generated ones drawn from the table's sequence first), each row
// on its sub-table, one part per sub-table in the order of its first row.
// A statement whose rows all land on one sub-table and whose key the
// sub-tables do not generate runs there as written (a Route); any other
// runs as an engine.InsertSplit, which answers as one server would.
func (s *Session) planInsert(ks *planner.Keyspace, plan *planner.Plan, st router.Stmt, sql []byte) engine.Primitive {
	return s.insertParts(ks, plan, st, sql, &s.shape, &s.vals, false)
}

// insertParts plans an INSERT or REPLACE of text sql, of shape sh, whose
// values v gives: a text statement's, or a prepared statement's execution
// (prepared), whose parts are server-side statements taking the
// parameters of their rows (engine.Part.Params).
func (s *Session) insertParts(ks *planner.Keyspace, plan *planner.Plan, st router.Stmt, sql []byte, sh *router.Shape, v planner.Values, prepared bool) engine.Primitive {
	an, ins := plan.An, &s.ins
	k := &ins.keys
	if err := an.Keys(v, s.noAutoValueOnZero(), k); err != nil {
		return s.refuseErr(err)
	}
	first, err := s.drawKeys(ks, an.Insert.Table, an.Insert.Rows, k)
	if err != nil {
		return s.refuseErr(err)
	}
	if err = an.Place(k, first); err != nil {
		return s.refuseErr(err)
	}
	if plan.Tmpl.Rows() != len(k.Sub) {
		return s.refuse1235("This version of shardgate doesn't yet support '%s'", "this form of INSERT on a sharded table")
	}
	if an.Insert.Kind == mysql.InsertIgnore {
		// Its duplicates are warnings, which one server lists in row order.
		s.groupRuns()
	} else {
		s.groupRows(an.Group.Rule.SubTables())
	}
	ids := s.rowIDs(first)
	s.renderInsert(ks, plan, sql, sh, ids, prepared)
	if len(s.parts) == 1 && !k.AutoIncrement {
		prim := s.routeToShard(s.parts[0].Cluster, st)
		if prim == engine.Primitive(&s.planned) {
			s.planned.Query, s.planned.Stmt, s.planned.Params = s.parts[0].Query, s.parts[0].Stmt, s.parts[0].Params
		}
		return prim
	}
	for _, p := range s.parts {
		if e := s.crossShardWrite(p.Cluster, st); e != nil {
			return s.refuseErr(e)
		}
	}
	sp := &ins.split
	*sp = engine.InsertSplit{Parts: s.parts, Rows: ins.partLen, Kind: an.Insert.Kind,
		KeysGiven: k.AutoIncrement, LastKey: k.LastKey, LastKeyKnown: k.LastKeyKnown,
		Savepoint: len(s.parts) > 1 && s.inTransaction()}
	if ids != nil {
		sp.Generated = first
	}
	return sp
}

// drawKeys reserves the ids of the rows whose AUTO_INCREMENT key the
// sequence generates, returning the first, and makes sure the sequence
// never hands out a key a row gives itself.
func (s *Session) drawKeys(ks *planner.Keyspace, t *sharding.SchemaTable, rows int, k *planner.RowKeys) (uint64, error) {
	if !k.AutoIncrement || len(k.Generate) == 0 && k.MaxExplicit == 0 {
		return 0, nil
	}
	seq := ks.Sequence(t)
	if seq == nil {
		if len(k.Generate) == 0 {
			return 0, nil
		}
		return 0, mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax,
			"This version of shardgate doesn't yet support '%s'", "generated keys on sharded table "+t.Name+" without a sequence store")
	}
	if len(k.Generate) == 0 {
		rows = 0
	}
	return s.DrawKeys(seq, k.MaxExplicit, rows)
}

// groupRows groups the rows placed in s.ins.keys.Sub into parts: one per
// sub-table, in the order of its first row, each with its rows in order.
func (s *Session) groupRows(subTables int) {
	ins := &s.ins
	for len(ins.subPart) < subTables {
		ins.subPart = append(ins.subPart, -1)
	}
	ins.partSub, ins.partLen = ins.partSub[:0], ins.partLen[:0]
	for _, sub := range ins.keys.Sub {
		p := ins.subPart[sub]
		if p < 0 {
			p = len(ins.partSub)
			ins.subPart[sub] = p
			ins.partSub = append(ins.partSub, sub)
			ins.partLen = append(ins.partLen, 0)
		}
		ins.partLen[p]++
	}
	// Each part's rows start where the previous part's end; fill counts
	// each part's rows placed so far, in partLen's place, restored below.
	n := len(ins.keys.Sub)
	if cap(ins.partRows) < 2*n {
		ins.partRows = make([]int, 2*n)
	}
	ins.partRows = ins.partRows[:n]
	start := ins.partRows[n : 2*n : 2*n][:0]
	at := 0
	for _, l := range ins.partLen {
		start = append(start, at)
		at += l
	}
	for r, sub := range ins.keys.Sub {
		p := ins.subPart[sub]
		ins.partRows[start[p]] = r
		start[p]++
	}
	for _, sub := range ins.partSub {
		ins.subPart[sub] = -1
	}
}

// groupRuns groups the rows placed in s.ins.keys.Sub into parts of
// consecutive rows on one sub-table, in row order: the parts' warnings,
// listed part after part, are then in the order one server lists them.
func (s *Session) groupRuns() {
	ins := &s.ins
	ins.partSub, ins.partLen, ins.partRows = ins.partSub[:0], ins.partLen[:0], ins.partRows[:0]
	for r, sub := range ins.keys.Sub {
		if n := len(ins.partSub); n == 0 || ins.partSub[n-1] != sub {
			ins.partSub = append(ins.partSub, sub)
			ins.partLen = append(ins.partLen, 0)
		}
		ins.partLen[len(ins.partLen)-1]++
		ins.partRows = append(ins.partRows, r)
	}
}

// rowIDs returns each row's generated key (0 for a row that gives its
// own), or nil when no row's key is generated.
func (s *Session) rowIDs(first uint64) []uint64 {
	ins := &s.ins
	gen := ins.keys.Generate
	if len(gen) == 0 {
		return nil
	}
	ins.ids = ins.ids[:0]
	for range ins.keys.Sub {
		ins.ids = append(ins.ids, 0)
	}
	for g, r := range gen {
		ins.ids[r] = first + uint64(g)
	}
	return ins.ids
}

// renderInsert renders each part's statement, with its rows only, into
// s.parts, in one buffer: COM_QUERY packets, or for a prepared statement's
// execution the texts of the parts' server-side statements, each with the
// parameters of its rows (in one buffer too).
func (s *Session) renderInsert(ks *planner.Keyspace, plan *planner.Plan, sql []byte, sh *router.Shape, ids []uint64, prepared bool) {
	ins := &s.ins
	b := s.partSQL[:0]
	s.partEnds = s.partEnds[:0]
	s.parts = s.parts[:0]
	ins.params, ins.paramEnds = ins.params[:0], ins.paramEnds[:0]
	at := 0
	for p, sub := range ins.partSub {
		rows := ins.partRows[at : at+ins.partLen[p]]
		at += ins.partLen[p]
		if !prepared {
			b = append(b, mysql.ComQuery)
		}
		s.sub[0] = sub
		b = plan.Tmpl.AppendRows(b, sql, sh, s.sub[:], rows, ids)
		s.partEnds = append(s.partEnds, len(b))
		if prepared {
			ins.params = plan.Tmpl.AppendRowParams(ins.params, rows, ids)
			ins.paramEnds = append(ins.paramEnds, len(ins.params))
		}
		s.parts = append(s.parts, engine.Part{Cluster: ks.Shard(plan.An.Group.Layout.Shard(sub))})
	}
	s.partSQL = b
	start, pstart := 0, 0
	for j, end := range s.partEnds {
		if prepared {
			s.parts[j].Stmt = b[start:end:end]
			pend := ins.paramEnds[j]
			s.parts[j].Params = ins.params[pstart:pend:pend]
			pstart = pend
		} else {
			s.parts[j].Query = b[start:end:end]
		}
		start = end
	}
}

// inTransaction reports whether the session's statements run inside a
// transaction: one is open, or autocommit is off.
func (s *Session) inTransaction() bool {
	return s.inTrx() || !s.autocommit()
}

// noAutoValueOnZero reports whether the session's sql_mode has
// NO_AUTO_VALUE_ON_ZERO (0 in an AUTO_INCREMENT column is then a value).
// A session that never set sql_mode has the servers' default, which does
// not include it unless the servers are configured so.
func (s *Session) noAutoValueOnZero() bool {
	v, ok := s.vars.Get("sql_mode")
	return ok && containsFold(v, "NO_AUTO_VALUE_ON_ZERO")
}

func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}
