package planner

import (
	"strconv"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sharding"
)

// A SELECT over several sub-tables whose answer needs a merge (ORDER BY,
// GROUP BY, aggregates, DISTINCT, LIMIT), or a read that needs none but
// whose shards run at once: one part per shard, the shard's sub-tables
// read by one statement (a UNION ALL of them, ordered as the merge
// needs), merged by engine.Merge.

// drainRows bounds the rows per shard (the shards' LIMIT) that a merge
// stopped by its LIMIT reads to their end; past it the shards' queries
// are killed (a KILL costs a connection to the server).
const drainRows = 10000

// mergeShard is one shard's sub-tables in a merge.
type mergeShard struct {
	cl   *backend.Cluster
	subs []int
}

// mergeOf binds the merge of plan's SELECT over target's sub-tables, for
// a text statement (vals: its literals) or an execution of a prepared
// one (prepared; vals: its literals and parameters).
func (b *Binder) mergeOf(ks *Keyspace, plan *Plan, sql []byte, sh *router.Shape, target Target, st router.Stmt, vals Values, prepared bool, s Session) engine.Primitive {
	mp := plan.Merge
	var stmt []byte // the client's text of a prepared statement, for an evaluation
	if prepared {
		stmt = sql
	}
	if mp == nil {
		return b.evaluateOr(ks, plan, st, sql, sh, vals, stmt, plan.MergeErr, s)
	}
	offset, count, err := mp.Limit.Values(vals)
	if err != nil {
		return b.refuseErr(err)
	}
	pushed := NoLimit
	if mp.Limit.Push {
		pushed = offset + count
		if pushed < offset {
			pushed = NoLimit - 1
		}
	}
	shards := b.mergeShards(ks, plan, target)
	if e := lockedUnion(plan, shards, s); e != nil {
		return b.refuseErr(e)
	}
	cached := mp.Columns.Load()
	probe := cached == nil && mp.Probe != nil && !b.explaining
	buf := b.partSQL[:0]
	b.partEnds = b.partEnds[:0]
	b.parts = b.parts[:0]
	b.mergeParams = b.mergeParams[:0]
	for j, m := range shards {
		if !prepared {
			buf = append(buf, mysql.ComQuery)
		}
		if j == 0 && probe && !prepared {
			b.sub[0] = m.subs[0]
			buf = mp.Probe.Append(buf, sql, sh, b.sub[:])
			buf = append(buf, ';')
		}
		buf = b.appendShardSelect(buf, mp, sql, sh, m.subs, pushed)
		b.partEnds = append(b.partEnds, len(buf))
		b.parts = append(b.parts, engine.Part{Cluster: m.cl, Union: len(m.subs) > 1})
	}
	probeAt := len(buf)
	if probe && prepared {
		b.sub[0] = shards[0].subs[0]
		buf = mp.Probe.Append(buf, sql, sh, b.sub[:])
	}
	b.partSQL = buf
	start := 0
	for j, end := range b.partEnds {
		if prepared {
			b.parts[j].Stmt = buf[start:end:end]
			b.parts[j].Params = b.unionParams(mp, len(shards[j].subs))
		} else {
			b.parts[j].Query = buf[start:end:end]
		}
		start = end
	}
	// Field by field: the merge keeps its buffers from one execution to
	// the next.
	m := &b.merge
	m.Parts, m.Spec, m.Offset, m.Count, m.HasLimit, m.Bounded = b.parts, mp.Spec, offset, count, mp.Limit.Has, pushed <= drainRows
	m.Probe, m.Columns, m.Cache, m.ProbeStmt, m.ProbeParams = probe, cached, &mp.Columns, nil, nil
	m.ReplicaOK = ReplicaOK(b.parts[0].Cluster, s.Policy(), st, s)
	if probe && prepared {
		m.ProbeStmt, m.ProbeParams = buf[probeAt:], mp.Probe.Params()
	}
	m.Fallback = nil
	if plan.Eval != nil {
		b.fallback = evalFallback{b: b, s: s, ks: ks, plan: plan, st: st, sql: sql, sh: sh, vals: vals, stmt: stmt}
		m.Fallback = &b.fallback
	}
	return m
}

// mergeShards groups target's sub-tables by shard, a shard with a single
// sub-table first when there is one: its column definitions are a plain
// SELECT's, the client's when a probe cannot give them.
func (b *Binder) mergeShards(ks *Keyspace, plan *Plan, target Target) []mergeShard {
	shards := b.mergeBy[:0]
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
	b.mergeBy = shards
	return shards
}

// appendShardSelect appends the pushed SELECT of one shard's sub-tables:
// one SELECT, or their UNION ALL ordered as the merge needs.
func (b *Binder) appendShardSelect(buf []byte, mp *MergePlan, sql []byte, sh *router.Shape, subs []int, limit uint64) []byte {
	if len(subs) == 1 {
		b.sub[0] = subs[0]
		return mp.Tmpl.AppendLimit(buf, sql, sh, b.sub[:], limit)
	}
	for k, sub := range subs {
		if k > 0 {
			buf = append(buf, " union all "...)
		}
		buf = append(buf, '(')
		at := len(buf)
		b.sub[0] = sub
		buf = mp.Tmpl.AppendLimit(buf, sql, sh, b.sub[:], limit)
		if k > 0 {
			router.BlankUnionFirstOnly(buf[at:])
		}
		buf = append(buf, ')')
	}
	buf = append(buf, mp.ShardOrder...)
	if limit != NoLimit && mp.Spec.Groups == 0 {
		// (Grouped rows of several sub-tables may be one group: each
		// sub-table's SELECT is limited, their UNION ALL is not.)
		buf = append(buf, " limit "...)
		buf = strconv.AppendUint(buf, limit, 10)
	}
	return buf
}

// unionParams is the client's parameter behind each '?' of a UNION ALL
// of n sub-tables' SELECTs (n = 1: one SELECT): the template's, n times.
func (b *Binder) unionParams(mp *MergePlan, n int) []int {
	start := len(b.mergeParams)
	order := mp.Tmpl.Params()
	for k := 0; k < n; k++ {
		b.mergeParams = append(b.mergeParams, order...)
	}
	return b.mergeParams[start:len(b.mergeParams):len(b.mergeParams)]
}

// lockedUnion refuses, while the session holds table locks, a merge that
// reads a shard's sub-tables as a UNION ALL of SELECTs that each read a
// reference table: the server wants a lock per reference, and a table is
// locked once under its name.
func lockedUnion(plan *Plan, shards []mergeShard, s Session) error {
	if !s.LocksTables() {
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
