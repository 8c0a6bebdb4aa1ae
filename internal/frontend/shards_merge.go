package frontend

import (
	"strconv"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/planner"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sharding"
)

// A SELECT over several sub-tables whose answer needs a merge (ORDER BY,
// GROUP BY, aggregates, DISTINCT, LIMIT): one part per shard, the shard's
// sub-tables read by one statement (a UNION ALL of them, ordered as the
// merge needs), merged by engine.Merge.

// drainRows bounds the rows per shard (the shards' LIMIT) that a merge
// stopped by its LIMIT reads to their end; past it the shards' queries
// are killed (a KILL costs a connection to the server).
const drainRows = 10000

// mergeShard is one shard's sub-tables in a merge.
type mergeShard struct {
	cl   *backend.Cluster
	subs []int
}

// planMerge plans the merge of plan's SELECT over target's sub-tables,
// for a text statement (vals: its literals) or an execution of a prepared
// one (prepared; vals: its literals and parameters).
func (s *Session) planMerge(ks *planner.Keyspace, plan *planner.Plan, sql []byte, sh *router.Shape, target planner.Target, st router.Stmt, vals planner.Values, prepared bool) engine.Primitive {
	mp := plan.Merge
	if mp == nil {
		var stmt []byte
		if prepared {
			stmt = sql
		}
		return s.evaluateOr(ks, plan, st, sql, sh, vals, stmt, plan.MergeErr)
	}
	offset, count, err := mp.Limit.Values(vals)
	if err != nil {
		return s.refuseErr(err)
	}
	pushed := planner.NoLimit
	if mp.Limit.Push {
		pushed = offset + count
		if pushed < offset {
			pushed = planner.NoLimit - 1
		}
	}
	shards := s.mergeShards(ks, plan, target)
	if e := s.lockedUnion(plan, shards); e != nil {
		return s.refuseErr(e)
	}
	cached := mp.Columns.Load()
	probe := cached == nil && mp.Probe != nil
	b := s.partSQL[:0]
	s.partEnds = s.partEnds[:0]
	s.parts = s.parts[:0]
	s.mergeParams = s.mergeParams[:0]
	for j, m := range shards {
		if !prepared {
			b = append(b, mysql.ComQuery)
		}
		if j == 0 && probe && !prepared {
			s.sub[0] = m.subs[0]
			b = mp.Probe.Append(b, sql, sh, s.sub[:])
			b = append(b, ';')
		}
		b = s.appendShardSelect(b, mp, sql, sh, m.subs, pushed)
		s.partEnds = append(s.partEnds, len(b))
		s.parts = append(s.parts, engine.Part{Cluster: m.cl, Union: len(m.subs) > 1})
	}
	probeAt := len(b)
	if probe && prepared {
		s.sub[0] = shards[0].subs[0]
		b = mp.Probe.Append(b, sql, sh, s.sub[:])
	}
	s.partSQL = b
	start := 0
	for j, end := range s.partEnds {
		if prepared {
			s.parts[j].Stmt = b[start:end:end]
			s.parts[j].Params = s.unionParams(mp, len(shards[j].subs))
		} else {
			s.parts[j].Query = b[start:end:end]
		}
		start = end
	}
	// Field by field: the merge keeps its buffers from one execution to
	// the next.
	m := &s.merge
	m.Parts, m.Spec, m.Offset, m.Count, m.HasLimit, m.Bounded = s.parts, mp.Spec, offset, count, mp.Limit.Has, pushed <= drainRows
	m.Probe, m.Columns, m.Cache, m.ProbeStmt, m.ProbeParams = probe, cached, &mp.Columns, nil, nil
	m.ReplicaOK = planner.ReplicaOK(s.parts[0].Cluster, s.user.Policy(), st, s)
	if probe && prepared {
		m.ProbeStmt, m.ProbeParams = b[probeAt:], mp.Probe.Params()
	}
	m.Fallback = nil
	if plan.Eval != nil {
		var stmt []byte
		if prepared {
			stmt = sql
		}
		s.fallback = evalFallback{ks: ks, plan: plan, st: st, sql: sql, sh: sh, vals: vals, stmt: stmt}
		m.Fallback = &s.fallback
	}
	return m
}

// evalFallback is a merge's Fallback: the statement evaluated, planned
// only when the merge refuses it.
type evalFallback struct {
	ks   *planner.Keyspace
	plan *planner.Plan
	st   router.Stmt
	sql  []byte
	sh   *router.Shape
	vals planner.Values
	stmt []byte
}

// Execute implements engine.Primitive.
func (f *evalFallback) Execute(c engine.Cursor, q []byte) bool {
	s := c.(*Session)
	prim := s.evaluate(f.ks, f.plan, f.st, f.sql, f.sh, f.vals, f.stmt)
	if prim == nil {
		return c.Fail(asSQLError(f.plan.MergeErr))
	}
	return prim.Execute(c, q)
}

// mergeShards groups target's sub-tables by shard, a shard with a single
// sub-table first when there is one: its column definitions are a plain
// SELECT's, the client's when a probe cannot give them.
func (s *Session) mergeShards(ks *planner.Keyspace, plan *planner.Plan, target planner.Target) []mergeShard {
	shards := s.mergeBy[:0]
	layout := plan.An.Group.Layout
	for i := target.Next(0); i >= 0; i = target.Next(i + 1) {
		cl := ks.Shard(layout.Shard(i))
		k := 0
		for k < len(shards) && shards[k].cl != cl {
			k++
		}
		if k == len(shards) {
			if k < cap(shards) { // reuse the sub-table lists of earlier statements
				shards = shards[:k+1]
				shards[k].cl, shards[k].subs = cl, shards[k].subs[:0]
			} else {
				shards = append(shards, mergeShard{cl: cl})
			}
		}
		shards[k].subs = append(shards[k].subs, i)
	}
	for k := range shards {
		if len(shards[k].subs) == 1 {
			shards[0], shards[k] = shards[k], shards[0]
			break
		}
	}
	s.mergeBy = shards
	return shards
}

// appendShardSelect appends the pushed SELECT of one shard's sub-tables:
// one SELECT, or their UNION ALL ordered as the merge needs.
func (s *Session) appendShardSelect(b []byte, mp *planner.MergePlan, sql []byte, sh *router.Shape, subs []int, limit uint64) []byte {
	if len(subs) == 1 {
		s.sub[0] = subs[0]
		return mp.Tmpl.AppendLimit(b, sql, sh, s.sub[:], limit)
	}
	for k, sub := range subs {
		if k > 0 {
			b = append(b, " union all "...)
		}
		b = append(b, '(')
		at := len(b)
		s.sub[0] = sub
		b = mp.Tmpl.AppendLimit(b, sql, sh, s.sub[:], limit)
		if k > 0 {
			router.BlankUnionFirstOnly(b[at:])
		}
		b = append(b, ')')
	}
	b = append(b, mp.ShardOrder...)
	if limit != planner.NoLimit && mp.Spec.Groups == 0 {
		// (Grouped rows of several sub-tables may be one group: each
		// sub-table's SELECT is limited, their UNION ALL is not.)
		b = append(b, " limit "...)
		b = strconv.AppendUint(b, limit, 10)
	}
	return b
}

// unionParams is the client's parameter behind each '?' of a UNION ALL
// of n sub-tables' SELECTs (n = 1: one SELECT): the template's, n times.
func (s *Session) unionParams(mp *planner.MergePlan, n int) []int {
	start := len(s.mergeParams)
	order := mp.Tmpl.Params()
	for k := 0; k < n; k++ {
		s.mergeParams = append(s.mergeParams, order...)
	}
	return s.mergeParams[start:len(s.mergeParams):len(s.mergeParams)]
}

// lockedUnion refuses, while the session holds table locks, a merge that
// reads a shard's sub-tables as a UNION ALL of SELECTs that each read a
// reference table: the server wants a lock per reference, and a table is
// locked once under its name.
func (s *Session) lockedUnion(plan *planner.Plan, shards []mergeShard) error {
	if s.heldPins()&pinLock == 0 {
		return nil
	}
	union := false
	for _, m := range shards {
		union = union || len(m.subs) > 1
	}
	if !union {
		return nil
	}
	for _, t := range plan.An.Tables {
		if t.Type == sharding.TableReference {
			return mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax,
				"This version of shardgate doesn't yet support 'a statement merging several sub-tables of a shard and reading reference table %s while LOCK TABLES holds (UNLOCK TABLES first)'", t.Name)
		}
	}
	return nil
}
