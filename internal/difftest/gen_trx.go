package difftest

import (
	"slices"
	"strconv"
)

// Transactions over several shards (issue 21): with Generator.Transactions,
// Next now and then returns, one statement per call, a transaction —
// BEGIN, writes of which at least one lands on the shard of the lowest
// sub-tables of sf_event and sf_log and one on the shard of their highest
// (whatever the number of shards, SchemaYAML puts those on different
// ones), other statements of the usual mix, sometimes a SAVEPOINT with a
// later ROLLBACK TO or RELEASE, then COMMIT or ROLLBACK. One server runs
// it as one transaction; shardgate under cross_shard_writes: atomic must
// give the same answers and the same rows after every statement, the
// ROLLBACKs included. Under cross_shard_writes: refuse, a write inside
// such a transaction may be refused (Options.TrxRefusals).

// KindTransaction is the kind of the statements that begin and end a
// transaction or set, roll back to or release a savepoint; the
// statements inside keep their own kinds (and have Statement.InTrx), but
// the writes that make sure of both shards, "trx_side".
const KindTransaction = "transaction"

// trxEvery: a transaction starts at one Next in trxEvery.
const trxEvery = 20

// Transactions makes Next put some of its statements in transactions
// over several shards (about half the writes). Without it, Next draws no
// more random numbers than before transactions existed: a seed gives the
// statements it always gave.
func (g *Generator) Transactions() { g.trx = true }

// nextInTrx returns the next statement of the transaction under way, or
// starts one now and then; ok is false when Next should pick a statement
// as usual.
func (g *Generator) nextInTrx() (st Statement, ok bool) {
	if len(g.pending) == 0 && (!g.trx || g.r.IntN(trxEvery) != 0) {
		return Statement{}, false
	}
	if len(g.pending) == 0 {
		g.pending = g.transaction()
	}
	st, g.pending = g.pending[0], g.pending[1:]
	return st, true
}

// trxWriteKinds are the kinds of writes a transaction's body draws from.
var trxWriteKinds = []string{"update_key", "update_scatter", "delete_key", "delete_scatter", "insert_single", "insert_multi",
	"replace", "insert_ignore", "upsert", "ref_write", "plain_write", "refused_write"}

// transaction is one transaction's statements, BEGIN to COMMIT or
// ROLLBACK.
func (g *Generator) transaction() []Statement {
	body := []Statement{g.onSide(false), g.onSide(true)}
	for range g.r.IntN(5) {
		var k kind
		if g.r.IntN(4) != 0 {
			k = g.kindNamed(pick(g.r, trxWriteKinds))
		} else {
			k = g.pickKind()
			for k.name == "eval_write" { // (refused inside a transaction)
				k = g.pickKind()
			}
		}
		st := k.gen(g)
		st.Kind = k.name
		body = append(body, st)
	}
	g.r.Shuffle(len(body), func(i, j int) { body[i], body[j] = body[j], body[i] })

	out := []Statement{control(pick(g.r, []string{"BEGIN", "START TRANSACTION", "BEGIN WORK", "START TRANSACTION READ WRITE"}), true)}
	var written []string
	write := func(st Statement) {
		st.InTrx = true
		out = append(out, st)
		for _, w := range st.Writes {
			if !slices.Contains(written, w) {
				written = append(written, w)
			}
		}
	}
	// A savepoint after some of the body, rolled back to (or released)
	// after more of it.
	sp, end := -1, -1
	if g.r.IntN(3) == 0 {
		sp = g.r.IntN(len(body))
		end = sp + 1 + g.r.IntN(len(body)-sp)
	}
	name := "sp" + strconv.Itoa(1+g.r.IntN(3))
	for i, st := range body {
		if i == sp {
			out = append(out, control("SAVEPOINT "+name, false))
		}
		write(st)
		if i+1 == end {
			switch g.r.IntN(4) {
			case 0:
				out = append(out, control("RELEASE SAVEPOINT "+name, false))
			case 1:
				out = append(out, writes(control("ROLLBACK TO "+name, false), written...))
			default:
				out = append(out, writes(control("ROLLBACK TO SAVEPOINT "+name, false), written...))
			}
		}
	}
	last := pick(g.r, []string{"COMMIT", "COMMIT", "COMMIT WORK", "ROLLBACK", "ROLLBACK WORK"})
	return append(out, writes(control(last, true), written...))
}

// control is a statement that begins or ends a transaction or sets a
// savepoint: text only, or prepared too (prepared: shardgate refuses a
// prepared savepoint statement in a transaction over several shards).
func control(sql string, prepared bool) Statement {
	st := Statement{Kind: KindTransaction, SQL: sql, Ordered: true}
	if prepared {
		st.Prepared = sql
	}
	return st
}

// onSide is a write to the lowest sub-tables of sf_event or sf_log (high:
// the highest), which SchemaYAML puts on different shards: keys below 100
// or above, days of 2023 or of 2024.
func (g *Generator) onSide(high bool) Statement {
	ranges := []int{0} // unbounded below: fresh keys never run out
	if high {
		ranges = []int{2, 3}
	}
	event := func() int {
		// an existing key (even) of the side's ranges
		for {
			if k := g.eventKey(); (k >= eventRanges[2][0]) == high {
				return k
			}
		}
	}
	day := func() Date {
		d := g.r.IntN(365)
		if high {
			d = 365 + g.r.IntN(logDays-365)
		}
		t := epoch.AddDate(0, 0, d)
		return Date{t.Year(), int(t.Month()), t.Day()}
	}
	var st Statement
	switch g.r.IntN(6) {
	case 0:
		st = writes(sql("UPDATE sf_event SET amount = ", g.maybeNull(g.r, decimal(g.r, 4, 3)), ", kind = ", strLit(pick(g.r, []string{"click", "view", "buy"})), " WHERE id = ", intLit(event())).stmt(""), tEvent)
	case 1:
		st = writes(sql("INSERT INTO sf_event (id, kind, amount, happened) VALUES ").row(g.eventRow(g.r, intLit(g.nextFreshEvent(pick(g.r, ranges))))).stmt(""), tEvent)
	case 2:
		st = writes(sql("DELETE FROM sf_event WHERE id = ", intLit(event())).stmt(""), tEvent)
	case 3:
		st = writes(sql("UPDATE sf_log SET level = ", g.maybeNull(g.r, intLit(g.r.IntN(8))), " WHERE day = ", g.dayLit(day()), " AND seq = ", intLit(1+g.r.IntN(3))).stmt(""), tLog)
	case 4:
		g.freshLog++
		st = writes(sql("INSERT INTO sf_log (day, seq, msg, level) VALUES ").row(g.logRow(g.r, day(), 100+g.freshLog)).stmt(""), tLog)
	default:
		st = writes(sql("DELETE FROM sf_log WHERE day = ", dateLit(day()), " AND seq = ", intLit(1+g.r.IntN(3))).stmt(""), tLog)
	}
	st.Kind = "trx_side"
	return st
}
