package difftest

import "strconv"

// Issue 22's writes that read across shards, which shardgate evaluates:
// INSERT … SELECT into the unsharded table from joins, derived tables
// and aggregates of sharded ones (plain, IGNORE, ON DUPLICATE KEY
// UPDATE), UPDATE and DELETE of the unsharded table whose subquery or
// join reads sharded rows (on the default cluster, as one statement),
// and INSERT … SELECT into sharded tables of every layout (through the
// evaluator's twin, text only: the prepared form is refused). The rows
// an INSERT into a sharded table writes carry ids or names of their own
// (eval_write's counter), so that no part of it meets a duplicate: a
// part failing after others were applied outside a transaction is a
// documented difference from one server, not a finding.

// Construct names of the evaluated writes.
const (
	cWriteInsertPlain   = "write_insert_select_unsharded"
	cWriteInsertSharded = "write_insert_select_sharded"
	cWriteUpdate        = "write_update_reading_shards"
	cWriteDelete        = "write_delete_reading_shards"
	cWriteUpsert        = "write_upsert_select"
)

// writeConstructs are the evaluated writes' construct names.
var writeConstructs = []string{cWriteInsertPlain, cWriteInsertSharded, cWriteUpdate, cWriteDelete, cWriteUpsert}

// evalWrite makes one evaluated write.
func (g *Generator) evalWrite() Statement {
	g.evalWrites++
	n := g.evalWrites
	var st Statement
	switch g.r.IntN(6) {
	case 0:
		st = g.insertSelectPlain()
	case 1:
		st = g.upsertSelect()
	case 2:
		st = writes(sql("UPDATE sf_note SET body = CONCAT(body, '*') WHERE id IN (SELECT o.order_no FROM sf_order o WHERE o.amount > ", decimal(g.r, 3, 2), ")").stmt(""), tNote)
		st.Constructs = []string{cWriteUpdate}
	case 3:
		if g.r.IntN(2) == 0 {
			st = writes(sql("DELETE FROM sf_note WHERE id IN (SELECT city_id FROM sf_user WHERE balance < ", decimal(g.r, 3, 2), ")").stmt(""), tNote)
		} else {
			st = writes(sql("DELETE n FROM sf_note n JOIN sf_order o ON o.order_no = n.id WHERE o.status = ", strLit(pick(g.r, statuses))).stmt(""), tNote)
		}
		st.Constructs = []string{cWriteDelete}
	default:
		st = g.insertSelectSharded(n)
	}
	st.Ordered = true
	return st
}

// insertSelectPlain inserts rows of a join or a derived table of sharded
// tables into the unsharded table, its id generated.
func (g *Generator) insertSelectPlain() Statement {
	var b *builder
	switch g.r.IntN(3) {
	case 0:
		b = sql("INSERT INTO sf_note (body, created) SELECT CONCAT(u.name, '/', o.status), o.ordered_at FROM sf_user u JOIN sf_order o ON o.order_no = u.city_id WHERE o.amount > ", decimal(g.r, 3, 2),
			" ORDER BY u.id, o.user_id, o.order_no LIMIT ", intLit(1+g.r.IntN(8)))
	case 1:
		b = sql("INSERT INTO sf_note (body) SELECT t.name FROM (SELECT id, name FROM sf_user ORDER BY balance DESC, id LIMIT ", intLit(1+g.r.IntN(6)), ") t ORDER BY t.id")
	default:
		b = sql("INSERT INTO sf_note (body, created) SELECT status, MAX(ordered_at) FROM sf_order WHERE user_id > ", intLit(g.userKey()), " GROUP BY status ORDER BY status")
	}
	st := writes(b.stmt(""), tNote)
	st.Constructs = []string{cWriteInsertPlain}
	return st
}

// upsertSelect writes rows keyed by sharded ids into the unsharded
// table: IGNORE, or ON DUPLICATE KEY UPDATE, meeting the rows before.
func (g *Generator) upsertSelect() Statement {
	b := sql("INSERT IGNORE INTO sf_note (id, body) SELECT id + 1000, name FROM sf_user WHERE city_id = ", intLit(g.r.IntN(10)), " ORDER BY id")
	if g.r.IntN(2) == 0 {
		b = sql("INSERT INTO sf_note (id, body) SELECT user_id + 1000, status FROM sf_order WHERE order_no = ", intLit(1+g.r.IntN(ordersPerUser)),
			" ORDER BY user_id ON DUPLICATE KEY UPDATE body = CONCAT(LEFT(sf_note.body, 40), '+')")
	}
	st := writes(b.stmt(""), tNote)
	st.Constructs = []string{cWriteUpsert}
	return st
}

// insertSelectSharded inserts into a sharded table of one layout or
// another from sharded rows, under ids or names of the statement's own
// (n), as text.
func (g *Generator) insertSelectSharded(n int) Statement {
	base := strconv.Itoa(1_000_000 + 1_000*n)
	var st Statement
	switch g.r.IntN(3) {
	case 0:
		st = writes(sql("INSERT INTO sf_event (id, kind, amount, happened) SELECT u.id + "+base+", LEFT(u.name, 16), u.balance / 3, o.ordered_at FROM sf_user u LEFT JOIN sf_order o ON o.user_id = u.id AND o.order_no = 1 WHERE u.balance BETWEEN -9999 AND ",
			decimal(g.r, 3, 2)).stmt(""), tEvent)
	case 1:
		st = writes(sql("INSERT INTO sf_tag (name, uses, updated) SELECT CONCAT('w"+strconv.Itoa(n)+"-', LOWER(TRIM(u.name))), COUNT(o.order_no), MAX(u.born) FROM sf_user u JOIN sf_order o ON o.user_id = u.city_id GROUP BY LOWER(TRIM(u.name))").stmt(""), tTag)
	default:
		st = writes(sql("INSERT INTO sf_log (day, seq, msg, level) SELECT born, id + "+base+", name, city_id % 100 FROM sf_user WHERE born BETWEEN '2023-01-01' AND '2024-12-31' AND balance > ", decimal(g.r, 3, 2)).stmt(""), tLog)
	}
	st.Prepared, st.Args = "", nil // (refused prepared)
	st.Constructs = []string{cWriteInsertSharded}
	return st
}
