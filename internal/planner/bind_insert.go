package planner

import (
	"strings"

	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sequence"
	"github.com/shardgate/shardgate/internal/sharding"
)

// An INSERT or REPLACE into a sharded table: the rows' keys (generated
// ones drawn from the table's sequence first), each row on its
// sub-table, one part per sub-table in the order of its first row. A
// statement whose rows all land on one sub-table and whose key the
// sub-tables do not generate runs there as written (a Route); any other
// runs as an engine.InsertSplit, which answers as one server would.

// insertRows is what the binder keeps from one INSERT on a sharded table
// to the next, so that splitting one allocates nothing once grown: the
// rows' keys, the generated ids by row, and the rows grouped by part.
type insertRows struct {
	keys     RowKeys
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

// insert binds an INSERT or REPLACE of text sql, of shape sh, whose
// values v gives: a text statement's, or a prepared statement's execution
// (prepared), whose parts are server-side statements taking the
// parameters of their rows (engine.Part.Params).
func (b *Binder) insert(ks *Keyspace, plan *Plan, st router.Stmt, sql []byte, sh *router.Shape, v Values, prepared bool, s Session) engine.Primitive {
	an, ins := plan.An, &b.ins
	k := &ins.keys
	if err := an.Keys(v, noAutoValueOnZero(s.SQLMode()), k); err != nil {
		return b.refuseErr(err)
	}
	first, err := drawKeys(ks, an.Insert.Table, an.Insert.Rows, b.bulkInsert, k, s)
	if err != nil {
		return b.refuseErr(err)
	}
	if err = an.Place(k, first); err != nil {
		return b.refuseErr(err)
	}
	if plan.Tmpl.Rows() != len(k.Sub) {
		return b.refuse("this form of INSERT on a sharded table")
	}
	if an.Insert.Kind == mysql.InsertIgnore {
		// Its duplicates are warnings, which one server lists in row order.
		ins.groupRuns()
	} else {
		ins.groupRows(an.Group.Rule.SubTables())
	}
	ids := ins.rowIDs(first)
	b.renderInsert(ks, plan, sql, sh, ids, prepared)
	if len(b.parts) == 1 && !k.AutoIncrement {
		prim := b.routeTo(b.parts[0].Cluster, st, s)
		if prim == engine.Primitive(&b.route) {
			b.route.Query, b.route.Stmt, b.route.Params = b.parts[0].Query, b.parts[0].Stmt, b.parts[0].Params
		}
		return prim
	}
	for _, p := range b.parts {
		if e := s.CrossShardWrite(p.Cluster, st); e != nil {
			return b.refuseErr(e)
		}
	}
	sp := &ins.split
	*sp = engine.InsertSplit{Parts: b.parts, Rows: ins.partLen, Kind: an.Insert.Kind,
		KeysGiven: k.AutoIncrement, LastKey: k.LastKey, LastKeyKnown: k.LastKeyKnown,
		Savepoint: len(b.parts) > 1 && (s.InTransaction() || !s.Autocommit())}
	if ids != nil {
		sp.Generated = first
	}
	return sp
}

// drawKeys reserves the ids of the rows whose AUTO_INCREMENT key the
// sequence generates, returning the first, and makes sure the sequence
// never hands out a key a row gives itself (Session.DrawKeys).
func drawKeys(ks *Keyspace, t *sharding.SchemaTable, rows int, bulk bool, k *RowKeys, s Session) (uint64, error) {
	if !k.AutoIncrement || len(k.Generate) == 0 && k.MaxExplicit == 0 {
		return 0, nil
	}
	seq := ks.Sequence(t)
	if seq == nil {
		if len(k.Generate) == 0 {
			return 0, nil
		}
		return 0, notSupported("generated keys on sharded table " + t.Name + " without a sequence store")
	}
	if len(k.Generate) == 0 {
		return s.DrawKeys(seq, k.MaxExplicit, 0) // only the keys given are observed
	}
	return drawInOrder(seq, rows, bulk, k, s)
}

// drawInOrder draws the generated keys as MySQL's counter gives them, row
// by row: the statement reserves an id for each of its rows, and a row
// giving a key at or above the next id moves the counter past it, the
// rows after it taking ids above it ([NULL, 8000, NULL] from 6005 gives
// 6005, 8000, 8001). The keys are consecutive (k.ids left empty) unless
// such a row comes between generated ones. Every key a row gives at or
// above the next id is observed, so that the sequence never hands it out.
// A bulk insert's rows (INSERT … SELECT: one server does not know their
// number ahead) reserve ids as MySQL's handler does for it, in intervals
// of 1, 2, 4, … (bulkSpan).
func drawInOrder(seq *sequence.Sequence, rows int, bulk bool, k *RowKeys, s Session) (uint64, error) {
	// reserve is the number of ids the rows from row on reserve, g of
	// the generated ones being before it.
	reserve := func(row, g int) int {
		if bulk {
			return bulkSpan(len(k.Generate) - g)
		}
		return rows - row
	}
	first, err := s.DrawKeys(seq, 0, reserve(0, 0))
	if err != nil {
		return 0, err
	}
	next, g, tail := first, 0, uint64(0)
	for i, val := range k.vals {
		if g < len(k.Generate) && k.Generate[g] == i {
			k.ids = append(k.ids, next)
			next++
			g++
			continue
		}
		v, ok := positiveKey(val)
		switch {
		case !ok || v < next:
			// (below the counter: taken already, or never handed out)
		case g == len(k.Generate):
			tail = max(tail, v) // after the last generated row: observed once
		default:
			if next, err = s.DrawKeys(seq, v, reserve(i+1, g)); err != nil {
				return 0, err
			}
		}
	}
	if tail > 0 {
		if _, err := s.DrawKeys(seq, tail, 0); err != nil {
			return 0, err
		}
	}
	first = k.ids[0] // (the statement's first generated key: its insert id)
	if k.ids[len(k.ids)-1] == first+uint64(len(k.ids)-1) {
		k.ids = k.ids[:0] // consecutive: first, first+1, …
	}
	return first, nil
}

// bulkSpan is the number of ids one server reserves for n generated
// rows of an insert whose row count it does not know: intervals of 1, 2,
// 4, … up to 65,536 ids each (handler::update_auto_increment), until
// they hold n.
func bulkSpan(n int) int {
	total, interval := 0, 1
	for total < n {
		total += interval
		interval = min(2*interval, 1<<16)
	}
	return total
}

// positiveKey is an explicit key as the counter compares it: a positive
// integer.
func positiveKey(val sharding.Value) (uint64, bool) {
	switch val.Kind() {
	case sharding.KindInt:
		return uint64(val.Int()), val.Int() > 0
	case sharding.KindUint:
		return val.Uint(), true
	}
	return 0, false
}

// groupRows groups the rows placed in ins.keys.Sub into parts: one per
// sub-table, in the order of its first row, each with its rows in order.
func (ins *insertRows) groupRows(subTables int) {
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

// groupRuns groups the rows placed in ins.keys.Sub into parts of
// consecutive rows on one sub-table, in row order: the parts' warnings,
// listed part after part, are then in the order one server lists them.
func (ins *insertRows) groupRuns() {
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
func (ins *insertRows) rowIDs(first uint64) []uint64 {
	gen := ins.keys.Generate
	if len(gen) == 0 {
		return nil
	}
	ins.ids = ins.ids[:0]
	for range ins.keys.Sub {
		ins.ids = append(ins.ids, 0)
	}
	for g, r := range gen {
		ins.ids[r] = ins.keys.generated(g, first)
	}
	return ins.ids
}

// renderInsert renders each part's statement, with its rows only, into
// b.parts, in one buffer: COM_QUERY packets, or for a prepared
// statement's execution the texts of the parts' server-side statements,
// each with the parameters of its rows (in one buffer too).
func (b *Binder) renderInsert(ks *Keyspace, plan *Plan, sql []byte, sh *router.Shape, ids []uint64, prepared bool) {
	ins := &b.ins
	buf := b.partSQL[:0]
	b.partEnds = b.partEnds[:0]
	b.parts = b.parts[:0]
	ins.params, ins.paramEnds = ins.params[:0], ins.paramEnds[:0]
	at := 0
	for p, sub := range ins.partSub {
		rows := ins.partRows[at : at+ins.partLen[p]]
		at += ins.partLen[p]
		if !prepared {
			buf = append(buf, mysql.ComQuery)
		}
		b.sub[0] = sub
		buf = plan.Tmpl.AppendRows(buf, sql, sh, b.sub[:], rows, ids)
		b.partEnds = append(b.partEnds, len(buf))
		if prepared {
			ins.params = plan.Tmpl.AppendRowParams(ins.params, rows, ids)
			ins.paramEnds = append(ins.paramEnds, len(ins.params))
		}
		b.parts = append(b.parts, engine.Part{Cluster: ks.Shard(plan.An.Group.Layout.Shard(sub))})
	}
	b.partSQL = buf
	start, pstart := 0, 0
	for j, end := range b.partEnds {
		if prepared {
			b.parts[j].Stmt = buf[start:end:end]
			pend := ins.paramEnds[j]
			b.parts[j].Params = ins.params[pstart:pend:pend]
			pstart = pend
		} else {
			b.parts[j].Query = buf[start:end:end]
		}
		start = end
	}
}

// noAutoValueOnZero reports whether sql_mode m, the session's as the
// client set it, has NO_AUTO_VALUE_ON_ZERO (0 in an AUTO_INCREMENT column
// is then a value). A session that never set sql_mode has the servers'
// default, which does not include it unless the servers are configured
// so.
func noAutoValueOnZero(m string) bool { return containsFold(m, "NO_AUTO_VALUE_ON_ZERO") }

func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}
