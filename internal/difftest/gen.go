package difftest

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Generator makes random data and statements for the schema in schema.go,
// all determined by its seed: the same seed gives the same statements, so
// a difference is reproduced by running again with -difftest.seed. It
// never looks at answers, so both targets get exactly the same statements.
//
// Keys come from two disjoint sets per table: "existing" keys (the domain
// the initial data was drawn from, so a key may or may not be present) for
// reads, updates, deletes, REPLACE, INSERT IGNORE and ON DUPLICATE KEY
// UPDATE, and "fresh" keys (never generated before) for plain INSERTs. A
// plain multi-row INSERT therefore never fails on a duplicate: one server
// rolls such a statement back as a whole, which a proxy that split it
// across shards could not, and the issue does not ask it to.
type Generator struct {
	seed int64
	data *rand.Rand // the initial rows
	r    *rand.Rand // the statements

	freshUser, freshOrder, freshCity, freshTag, freshLog int
	freshEvent                                           [4]int
	// evalWrites counts the evaluated writes, whose rows carry it.
	evalWrites int

	// singleRowLoad makes Data load one row per INSERT (SingleRowLoad).
	singleRowLoad bool

	// trx: Next makes transactions too (Transactions); pending are the
	// rest of the one under way.
	trx     bool
	pending []Statement
}

// SingleRowLoad makes Data write one row per INSERT, for a target that
// does not split multi-row INSERTs across sub-tables yet. The rows are the
// same as without it; only how they are grouped into statements differs.
func (g *Generator) SingleRowLoad() { g.singleRowLoad = true }

// NewGenerator returns a generator for seed.
func NewGenerator(seed int64) *Generator {
	return &Generator{
		seed: seed,
		data: rand.New(rand.NewPCG(uint64(seed), 1)),
		r:    rand.New(rand.NewPCG(uint64(seed), 2)),
	}
}

// Seed returns the generator's seed.
func (g *Generator) Seed() int64 { return g.seed }

// Key domains of the "existing" keys.
const (
	userLo, userHi   = -20, 180 // sf_user.id, sf_order.user_id
	ordersPerUser    = 4        // sf_order.order_no 1..4
	cities           = 20       // sf_city.id 1..20
	eventLo, eventHi = -40, 1200
	logDays          = 731 // 2023-01-01 .. 2024-12-31
)

// eventRanges are sf_event's sub-table ranges (see SchemaYAML); fresh
// keys are odd numbers inside each, existing keys even ones.
var eventRanges = [4][2]int{{-1 << 31, 0}, {0, 100}, {100, 1000}, {1000, 1 << 31}}

// names are _ci strings with ties: case, trailing spaces (PAD SPACE),
// accents, and supplementary characters, which utf8mb4_general_ci holds
// all equal.
var names = []string{"alice", "Alice", "alice ", "ALICE", "bob", "Bob ", "bob  ", "carol", "Carol",
	"dave", "Ève", "ève", "zoë", "", "O'Brien", "o'brien ", "ß", "ss", "😀", "😁 ", "eve"}

var tagWords = []string{"red", "green", "blue", "cyan", "magenta", "yellow", "black", "white", "grey",
	"orange", "purple", "pink", "brown", "olive", "navy", "teal", "lime", "coral", "gold", "silver"}

var statuses = []string{"new", "New", "paid", "PAID", "shipped", "shipped ", "cancelled"}

var countries = []string{"DE", "FR", "de", "US", "JP"}

var floats = []string{"0", "1.5", "-2.25", "3.14159", "1e10", "0.1", "100", "-0.001"}

// ---- values ----

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func (g *Generator) maybeNull(r *rand.Rand, l lit) lit {
	if r.IntN(5) == 0 {
		return nullLit()
	}
	return l
}

// decimal is a random decimal with frac digits and at most whole digits
// before the point, as a literal.
func decimal(r *rand.Rand, whole, frac int) lit {
	scale := 1
	for range frac {
		scale *= 10
	}
	limit := scale
	for range whole {
		limit *= 10
	}
	v := r.IntN(2*limit-1) - (limit - 1)
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	return decLit(fmt.Sprintf("%s%d.%0*d", sign, v/scale, frac, v%scale))
}

var epoch = time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)

func randDate(r *rand.Rand) Date {
	t := epoch.AddDate(0, 0, r.IntN(logDays))
	return Date{t.Year(), int(t.Month()), t.Day()}
}

func randDatetime(r *rand.Rand) time.Time {
	return epoch.Add(time.Duration(r.IntN(logDays*86400)) * time.Second)
}

func caseVariant(r *rand.Rand, s string) string {
	switch r.IntN(4) {
	case 0:
		return strings.ToUpper(s)
	case 1:
		return strings.ToUpper(s[:1]) + s[1:]
	case 2:
		return s + strings.Repeat(" ", 1+r.IntN(2)) // PAD SPACE: still the same key
	}
	return s
}

// ---- keys ----

func (g *Generator) userKey() int { return userLo + g.r.IntN(userHi-userLo+1) }

// keyLit spells an integer key the ways issue 13 lists, all equal to k
// on an INT column: 42, '42', 42.0, 0x2A, 42e0; the prepared form gets a
// parameter of the matching type.
func (g *Generator) keyLit(k int) lit {
	s := strconv.Itoa(k)
	switch g.r.IntN(8) {
	case 0:
		return lit{quote(s), s}
	case 1:
		return lit{s + ".0", Decimal(s + ".0")}
	case 2:
		if k >= 0 {
			return lit{fmt.Sprintf("0x%X", k), int64(k)}
		}
	case 3:
		return lit{s + "e0", float64(k)}
	}
	return intLit(k)
}

// dayLit spells a DATE key the ways a server takes as that date (or as
// a DATETIME on it): '2023-01-05', 20230105, '2023-1-5', '20230105',
// DATE'2023-01-05', '2023-01-05 00:00:00', and a later time that day,
// which no DATE equals.
func (g *Generator) dayLit(d Date) lit {
	switch g.r.IntN(9) {
	case 0:
		return intLit(d.Year*10000 + d.Month*100 + d.Day)
	case 1:
		s := fmt.Sprintf("%d-%d-%d", d.Year, d.Month, d.Day)
		return lit{quote(s), s}
	case 2:
		s := fmt.Sprintf("%04d%02d%02d", d.Year, d.Month, d.Day)
		return lit{quote(s), s}
	case 3:
		return lit{"DATE" + quote(d.String()), d}
	case 4:
		s := d.String() + " 00:00:00"
		return lit{quote(s), s}
	case 5:
		s := d.String() + " 10:30:00"
		return lit{quote(s), s}
	}
	return dateLit(d)
}

func (g *Generator) userKeys(n int) []lit {
	ls := make([]lit, n)
	for i := range ls {
		ls[i] = g.keyLit(g.userKey())
	}
	return ls
}

func (g *Generator) nextFreshUser() int {
	g.freshUser++
	if g.freshUser%2 == 0 {
		return -1000 - g.freshUser
	}
	return 1000 + g.freshUser
}

func (g *Generator) tagKey(r *rand.Rand) string { return caseVariant(r, pick(r, tagWords)) }

func (g *Generator) nextFreshTag() string {
	g.freshTag++
	return caseVariant(g.r, "tag"+strconv.Itoa(g.freshTag))
}

func (g *Generator) eventKey() int { return eventLo + 2*g.r.IntN((eventHi-eventLo)/2) }

// nextFreshEvent returns an unused odd key in sub-table range i, or in the
// last range (unbounded) once i's odd keys are used up.
func (g *Generator) nextFreshEvent(i int) int {
	if i == 0 {
		g.freshEvent[0]++
		return 1 - 2*g.freshEvent[0]
	}
	lo, hi := eventRanges[i][0], eventRanges[i][1]
	if k := lo + 1 + 2*g.freshEvent[i]; k < hi {
		g.freshEvent[i]++
		return k
	}
	return g.nextFreshEvent(len(eventRanges) - 1)
}

func (g *Generator) logKey(r *rand.Rand) (Date, int) { return randDate(r), 1 + r.IntN(3) }

// ---- rows ----

func (g *Generator) userRow(r *rand.Rand, id lit) []lit {
	return []lit{id, strLit(pick(r, names)),
		g.maybeNull(r, strLit(fmt.Sprintf("u%d@example.com", r.IntN(1000)))),
		g.maybeNull(r, decimal(r, 6, 2)),
		g.maybeNull(r, floatLit(pick(r, floats))),
		g.maybeNull(r, dateLit(randDate(r))),
		g.maybeNull(r, datetimeLit(randDatetime(r))),
		g.maybeNull(r, intLit(1+r.IntN(cities+2))), // a few point at no city
	}
}

const userCols = "(id, name, email, balance, score, born, created, city_id)"

func (g *Generator) orderRow(r *rand.Rand, user, no lit) []lit {
	return []lit{user, no, decimal(r, 4, 2), strLit(pick(r, statuses)),
		g.maybeNull(r, datetimeLit(randDatetime(r))),
		g.maybeNull(r, strLit(pick(r, names)))}
}

const orderCols = "(user_id, order_no, amount, status, ordered_at, note)"

func (g *Generator) tagRow(r *rand.Rand, name string) []lit {
	return []lit{strLit(name), intLit(r.IntN(50)), g.maybeNull(r, dateLit(randDate(r)))}
}

func (g *Generator) eventRow(r *rand.Rand, id lit) []lit {
	return []lit{id, strLit(caseVariant(r, pick(r, []string{"click", "view", "buy"}))),
		g.maybeNull(r, decimal(r, 4, 3)), g.maybeNull(r, datetimeLit(randDatetime(r)))}
}

func (g *Generator) logRow(r *rand.Rand, day Date, seq int) []lit {
	return []lit{dateLit(day), intLit(seq), strLit(pick(r, names) + " logged"), g.maybeNull(r, intLit(r.IntN(8)))}
}

// ---- initial data ----

// Data returns the INSERTs that load the initial rows, multi-row and
// single-row, the same statements for both targets.
func (g *Generator) Data() []Statement {
	r := g.data
	var out []Statement
	emit := func(table, cols string, rows [][]lit) {
		for len(rows) > 0 {
			n := min(len(rows), 1+r.IntN(12))
			if g.singleRowLoad {
				n = 1
			}
			b := sql("INSERT INTO ", table, " ", cols, " VALUES ")
			for i, row := range rows[:n] {
				if i > 0 {
					b.add(", ")
				}
				b.row(row)
			}
			st := b.stmt("load")
			st.Writes = []string{table}
			out = append(out, st)
			rows = rows[n:]
		}
	}
	var users, orders, tags, events, logs, notes [][]lit
	for id := userLo; id <= userHi; id++ {
		if r.IntN(10) < 6 {
			users = append(users, g.userRow(r, intLit(id)))
		}
		if r.IntN(10) < 7 { // orders of absent users too: joins must not invent them
			for no := range 1 + r.IntN(ordersPerUser) {
				no++
				orders = append(orders, g.orderRow(r, intLit(id), intLit(no)))
			}
		}
	}
	var cityRows [][]lit
	for id := 1; id <= cities; id++ {
		cityRows = append(cityRows, []lit{intLit(id), strLit(pick(r, names) + " city"), strLit(pick(r, countries))})
	}
	for _, w := range tagWords {
		if r.IntN(10) < 7 {
			tags = append(tags, g.tagRow(r, caseVariant(r, w)))
		}
	}
	for id := eventLo; id < eventHi; id += 2 {
		if r.IntN(10) < 4 {
			events = append(events, g.eventRow(r, intLit(id)))
		}
	}
	seen := map[string]bool{}
	for len(logs) < 200 {
		day, seq := g.logKey(r)
		if k := fmt.Sprint(day, seq); !seen[k] {
			seen[k] = true
			logs = append(logs, g.logRow(r, day, seq))
		}
	}
	for range 10 {
		notes = append(notes, []lit{strLit(pick(r, names)), datetimeLit(randDatetime(r))})
	}
	emit(tUser, userCols, users)
	emit(tOrder, orderCols, orders)
	emit(tCity, "(id, name, country)", cityRows)
	emit(tTag, "(name, uses, updated)", tags)
	emit(tEvent, "(id, kind, amount, happened)", events)
	emit(tLog, "(day, seq, msg, level)", logs)
	emit(tNote, "(body, created)", notes)
	emit(tMember, memberCols, g.memberRows(r))
	return out
}

// ---- statements ----

// kind is a family of statements and how often Next picks it.
type kind struct {
	name   string
	weight int
	gen    func(*Generator) Statement
}

// kinds are every kind of statement issue 13 lists, then issue 14's
// merges (gen_merge.go), issue 20's comparisons (gen_collation.go) and
// issue 22's evaluated statements (gen_eval*.go), weighted so that a run
// of the default size (TestShardedDifferential) runs each construct of
// issues 14 and 20 about a hundred times or more and each of issue 22's
// scores of times. Issue 22's quarter of the run was taken from issue
// 13's reads (routed by key, each of its shapes still run scores of
// times) and the merges whose constructs other merges and the evaluated
// statements reach too (GROUP BY, aggregates, DISTINCT, UNION), so that
// the run keeps its size.
var kinds = []kind{
	{"point", 4, (*Generator).point},
	{"point_order", 2, (*Generator).pointOrder},
	{"in_list", 3, (*Generator).inList},
	{"range", 3, (*Generator).rangeSelect},
	{"bool_mix", 3, (*Generator).boolMix},
	{"join", 3, (*Generator).join},
	{"subquery", 2, (*Generator).subquery},
	{"scatter", 3, (*Generator).scatter},
	{"tag_point", 2, (*Generator).tagPoint},
	{"ref_read", 2, (*Generator).refRead},
	{"plain_read", 1, (*Generator).plainRead},
	{"refused", 3, (*Generator).refusedSelect},
	{"update_key", 4, (*Generator).updateKey},
	{"update_scatter", 2, (*Generator).updateScatter},
	{"delete_key", 2, (*Generator).deleteKey},
	{"delete_scatter", 1, (*Generator).deleteScatter},
	{"insert_single", 3, (*Generator).insertSingle},
	{"insert_multi", 4, (*Generator).insertMulti},
	{"replace", 2, (*Generator).replace},
	{"insert_ignore", 2, (*Generator).insertIgnore},
	{"upsert", 3, (*Generator).upsert},
	{"ref_write", 2, (*Generator).refWrite},
	{"plain_write", 2, (*Generator).plainWrite},
	{"refused_write", 2, (*Generator).refusedWrite},
	{"merge_order", 19, (*Generator).mergeOrder},
	{"merge_limit_any", 3, (*Generator).mergeLimitAny},
	{"merge_group", 12, (*Generator).mergeGroup},
	{"merge_aggregate", 5, (*Generator).mergeAggregate},
	{"merge_distinct", 5, (*Generator).mergeDistinct},
	{"merge_union", 6, (*Generator).mergeUnion},
	{"merge_join", 8, (*Generator).mergeJoin},
	{"merge_subquery", 19, (*Generator).mergeSubquery},
	{"merge_compare", 27, (*Generator).mergeCompare},
	{"merge_string_key", 5, (*Generator).memberPoint},
	{"cross_shard", 2, (*Generator).crossShard},
	{"eval_join", 11, (*Generator).evalJoin},
	{"eval_subquery", 14, (*Generator).evalSubquery},
	{"eval_derived", 9, (*Generator).evalDerived},
	{"eval_window", 8, (*Generator).evalWindow},
	{"eval_group", 7, (*Generator).evalGroup},
	{"eval_union", 6, (*Generator).evalUnion},
	{"eval_write", 6, (*Generator).evalWrite},
}

var totalWeight = func() int {
	n := 0
	for _, k := range kinds {
		n += k.weight
	}
	return n
}()

// Next returns the next random statement.
func (g *Generator) Next() Statement {
	if st, ok := g.nextInTrx(); ok {
		return st
	}
	k := g.pickKind()
	st := k.gen(g)
	st.Kind = k.name
	return st
}

// pickKind picks a kind of statement by the kinds' weights.
func (g *Generator) pickKind() kind {
	w := g.r.IntN(totalWeight)
	k := kinds[0]
	for _, k = range kinds {
		if w < k.weight {
			break
		}
		w -= k.weight
	}
	return k
}

// kindNamed is the kind called name.
func (g *Generator) kindNamed(name string) kind {
	for _, k := range kinds {
		if k.name == name {
			return k
		}
	}
	panic("difftest: no kind " + name) // a bug in the generator
}

func ordered(st Statement) Statement { st.Ordered = true; return st }

func writes(st Statement, tables ...string) Statement { st.Writes = tables; return st }

func refusable(st Statement) Statement { st.Refusable = true; return st }

func (g *Generator) point() Statement {
	k := g.keyLit(g.userKey())
	switch g.r.IntN(5) {
	case 0:
		return ordered(sql("SELECT * FROM sf_user WHERE id = ", k).stmt(""))
	case 1:
		return ordered(sql("SELECT u.id, u.name AS n, u.balance FROM sf_user AS u WHERE u.id = ", k).stmt(""))
	case 2:
		return ordered(sql("SELECT name, born, created FROM sf_user WHERE ", k, " = id").stmt(""))
	case 3:
		return ordered(sql("SELECT id, score FROM sf_user WHERE id <=> ", k).stmt(""))
	}
	return ordered(sql("SELECT sf_user.email, sf_user.city_id FROM sf_user WHERE sf_user.id = ", k, " AND sf_user.name <> ", strLit(pick(g.r, names))).stmt(""))
}

func (g *Generator) pointOrder() Statement {
	k := g.keyLit(g.userKey())
	switch g.r.IntN(3) {
	case 0:
		return ordered(sql("SELECT * FROM sf_order WHERE user_id = ", k, " ORDER BY order_no DESC").stmt(""))
	case 1:
		return ordered(sql("SELECT o.order_no, o.amount FROM sf_order o WHERE o.user_id = ", k, " ORDER BY o.amount, o.order_no LIMIT ", intLit(1+g.r.IntN(3))).stmt(""))
	}
	return ordered(sql("SELECT order_no, status FROM sf_order WHERE user_id = ", k, " AND status = ", strLit(pick(g.r, statuses)), " ORDER BY order_no").stmt(""))
}

func (g *Generator) inList() Statement {
	keys := g.userKeys(2 + g.r.IntN(6))
	switch g.r.IntN(3) {
	case 0:
		return sql("SELECT id, name, balance FROM sf_user WHERE id IN (", keys, ")").stmt("")
	case 1:
		return sql("SELECT * FROM sf_order WHERE user_id IN (", keys, ") AND amount > ", decimal(g.r, 3, 2)).stmt("")
	}
	return sql("SELECT id FROM sf_user WHERE id NOT IN (", keys, ") AND id BETWEEN ", intLit(userLo), " AND ", intLit(0)).stmt("")
}

func (g *Generator) rangeSelect() Statement {
	lo := g.userKey()
	switch g.r.IntN(6) {
	case 0:
		return sql("SELECT id, name FROM sf_user WHERE id BETWEEN ", g.keyLit(lo), " AND ", g.keyLit(lo+g.r.IntN(20))).stmt("")
	case 1:
		return sql("SELECT user_id, order_no FROM sf_order WHERE user_id >= ", intLit(lo), " AND user_id < ", intLit(lo+g.r.IntN(30))).stmt("")
	case 2:
		lo := g.eventKey()
		return sql("SELECT * FROM sf_event WHERE id BETWEEN ", intLit(lo), " AND ", intLit(lo+g.r.IntN(400))).stmt("")
	case 3:
		return sql("SELECT id, kind FROM sf_event WHERE id < ", intLit(g.eventKey()), " AND id >= ", intLit(eventLo+g.r.IntN(200))).stmt("")
	case 4:
		d := randDate(g.r)
		t := time.Date(d.Year, time.Month(d.Month), d.Day, 0, 0, 0, 0, time.UTC).AddDate(0, 0, g.r.IntN(90))
		return sql("SELECT * FROM sf_log WHERE day BETWEEN ", g.dayLit(d), " AND ", g.dayLit(Date{t.Year(), int(t.Month()), t.Day()})).stmt("")
	}
	day, seq := g.logKey(g.r)
	if g.r.IntN(3) == 0 {
		return sql("SELECT msg, level FROM sf_log WHERE day IN (", g.dayLit(day), ", ", g.dayLit(randDate(g.r)), ") AND seq <= ", intLit(seq)).stmt("")
	}
	return ordered(sql("SELECT msg, level FROM sf_log WHERE day = ", g.dayLit(day), " AND seq = ", intLit(seq)).stmt(""))
}

// boolMix mixes AND, OR and NOT so that routing by the wrong precedence
// (peers' bug) gives other rows.
func (g *Generator) boolMix() Statement {
	a, b := g.keyLit(g.userKey()), g.keyLit(g.userKey())
	name := strLit(pick(g.r, names))
	switch g.r.IntN(6) {
	case 0:
		return sql("SELECT id, name FROM sf_user WHERE id = ", a, " OR id = ", b, " AND name = ", name).stmt("")
	case 1:
		return sql("SELECT id, name FROM sf_user WHERE (id = ", a, " OR id = ", b, ") AND balance > ", decimal(g.r, 3, 2)).stmt("")
	case 2:
		return sql("SELECT id FROM sf_user WHERE id = ", a, " AND (name = ", name, " OR NOT id = ", b, ")").stmt("")
	case 3:
		return sql("SELECT id, name FROM sf_user WHERE NOT (id <> ", a, ")").stmt("")
	case 4:
		return sql("SELECT id FROM sf_user WHERE name = ", name, " AND id = ", a, " OR id = ", b).stmt("")
	}
	return sql("SELECT user_id, order_no FROM sf_order WHERE NOT (user_id <> ", a, " AND user_id <> ", b, ") AND order_no < ", intLit(3)).stmt("")
}

// join joins on the shard key, in either FROM order, with and without
// aliases; a single key keeps it on one shard, where ORDER BY t.col is fine.
func (g *Generator) join() Statement {
	k := g.keyLit(g.userKey())
	switch g.r.IntN(6) {
	case 0:
		return ordered(sql("SELECT u.id, u.name, o.order_no, o.amount FROM sf_user u JOIN sf_order o ON u.id = o.user_id WHERE u.id = ", k, " ORDER BY o.order_no").stmt(""))
	case 1:
		return ordered(sql("SELECT o.order_no, o.status, u.name FROM sf_order AS o INNER JOIN sf_user AS u ON o.user_id = u.id WHERE o.user_id = ", k, " ORDER BY o.order_no DESC").stmt(""))
	case 2:
		return ordered(sql("SELECT sf_user.name, sf_order.amount FROM sf_user, sf_order WHERE sf_user.id = sf_order.user_id AND sf_user.id = ", k, " ORDER BY sf_order.order_no").stmt(""))
	case 3:
		return sql("SELECT u.id, o.order_no, c.name FROM sf_user u JOIN sf_order o ON o.user_id = u.id LEFT JOIN sf_city c ON c.id = u.city_id WHERE u.id IN (", g.userKeys(3), ")").stmt("")
	case 4:
		return ordered(sql("SELECT u.id, COUNT(o.order_no), SUM(o.amount) FROM sf_user u LEFT JOIN sf_order o ON o.user_id = u.id WHERE u.id = ", k, " GROUP BY u.id").stmt(""))
	}
	return ordered(sql("SELECT o.user_id, o.order_no, u.email FROM sf_order o LEFT JOIN sf_user u ON u.id = o.user_id WHERE o.user_id = ", k, " ORDER BY o.order_no").stmt(""))
}

func (g *Generator) subquery() Statement {
	k := g.userKey()
	switch g.r.IntN(5) {
	case 0:
		return sql("SELECT id, name FROM sf_user WHERE id = ", g.keyLit(k), " AND city_id IN (SELECT id FROM sf_city WHERE country = ", strLit(pick(g.r, countries)), ")").stmt("")
	case 1:
		return sql("SELECT u.id, u.name FROM sf_user u WHERE u.id = ", g.keyLit(k), " AND EXISTS (SELECT 1 FROM sf_order o WHERE o.user_id = u.id AND o.amount > ", decimal(g.r, 3, 2), ")").stmt("")
	case 2:
		return ordered(sql("SELECT order_no, amount FROM sf_order WHERE user_id = ", g.keyLit(k), " AND amount >= (SELECT AVG(amount) FROM sf_order WHERE user_id = ", g.keyLit(k), ") ORDER BY order_no").stmt(""))
	case 3:
		return sql("SELECT * FROM (SELECT id, name, balance FROM sf_user WHERE id = ", g.keyLit(k), ") AS t").stmt("")
	}
	return sql("SELECT id FROM sf_user WHERE id = ", g.keyLit(k), " AND id IN (SELECT user_id FROM sf_order WHERE user_id = ", g.keyLit(k), ")").stmt("")
}

// scatter reads without the key: every sub-table, no merge needed.
func (g *Generator) scatter() Statement {
	switch g.r.IntN(6) {
	case 0:
		return sql("SELECT * FROM sf_order WHERE amount > ", decimal(g.r, 4, 2)).stmt("")
	case 1:
		return sql("SELECT id, name FROM sf_user WHERE name = ", strLit(pick(g.r, names))).stmt("")
	case 2:
		return sql("SELECT id, born FROM sf_user WHERE born < ", dateLit(randDate(g.r)), " OR balance IS NULL").stmt("")
	case 3:
		return sql("SELECT * FROM sf_tag WHERE uses > ", intLit(g.r.IntN(50))).stmt("")
	case 4:
		return sql("SELECT id, amount FROM sf_event WHERE kind = ", strLit(caseVariant(g.r, "view"))).stmt("")
	}
	return sql("SELECT day, seq FROM sf_log WHERE level = ", intLit(g.r.IntN(8))).stmt("")
}

// tagPoint looks up the string key in other case and with trailing
// spaces: equal under utf8mb4_general_ci, so the same sub-table.
func (g *Generator) tagPoint() Statement {
	if g.r.IntN(3) == 0 {
		return sql("SELECT * FROM sf_tag WHERE name IN (", strLit(g.tagKey(g.r)), ", ", strLit(g.tagKey(g.r)), ")").stmt("")
	}
	return ordered(sql("SELECT name, uses FROM sf_tag WHERE name = ", strLit(g.tagKey(g.r))).stmt(""))
}

func (g *Generator) refRead() Statement {
	switch g.r.IntN(4) {
	case 0:
		return ordered(sql("SELECT * FROM sf_city WHERE id = ", g.keyLit(1+g.r.IntN(cities))).stmt(""))
	case 1:
		return ordered(sql("SELECT * FROM sf_city ORDER BY id").stmt(""))
	case 2:
		return sql("SELECT country, COUNT(*) FROM sf_city GROUP BY country").stmt("")
	}
	return ordered(sql("SELECT id, name FROM sf_city WHERE country = ", strLit(pick(g.r, countries)), " ORDER BY id LIMIT ", intLit(1+g.r.IntN(5))).stmt(""))
}

func (g *Generator) plainRead() Statement {
	switch g.r.IntN(3) {
	case 0:
		return ordered(sql("SELECT * FROM sf_note ORDER BY id").stmt(""))
	case 1:
		return ordered(sql("SELECT COUNT(*), MAX(id) FROM sf_note").stmt(""))
	}
	return ordered(sql("SELECT LAST_INSERT_ID()").stmt(""))
}

// refusedSelect needs a merge across shards; shardgate refuses it with
// 1235 until the next issue merges.
func (g *Generator) refusedSelect() Statement {
	var st Statement
	switch g.r.IntN(9) {
	case 0:
		st = ordered(sql("SELECT id, name FROM sf_user WHERE id IN (", g.userKeys(4), ") ORDER BY id").stmt(""))
	case 1:
		st = ordered(sql("SELECT * FROM sf_order WHERE amount > ", decimal(g.r, 4, 2), " ORDER BY user_id, order_no").stmt(""))
	case 2:
		st = sql("SELECT city_id, COUNT(*) FROM sf_user GROUP BY city_id").stmt("")
	case 3:
		lo := g.userKey()
		st = ordered(sql("SELECT COUNT(*), SUM(balance), MIN(born) FROM sf_user WHERE id BETWEEN ", intLit(lo), " AND ", intLit(lo+g.r.IntN(100))).stmt(""))
	case 4:
		st = sql("SELECT DISTINCT city_id FROM sf_user").stmt("")
	case 5:
		st = ordered(sql("SELECT id FROM sf_user ORDER BY id LIMIT ", intLit(1+g.r.IntN(10))).stmt(""))
	case 6:
		st = sql("SELECT id FROM sf_user WHERE id < ", intLit(0), " UNION SELECT user_id FROM sf_order WHERE amount > ", decimal(g.r, 4, 2)).stmt("")
	case 7:
		st = sql("SELECT user_id, SUM(amount) FROM sf_order GROUP BY user_id HAVING SUM(amount) > ", decimal(g.r, 4, 2)).stmt("")
	default:
		st = ordered(sql("SELECT day, seq FROM sf_log ORDER BY day, seq LIMIT ", intLit(1+g.r.IntN(5))).stmt(""))
	}
	return refusable(st)
}

func (g *Generator) updateKey() Statement {
	k := g.keyLit(g.userKey())
	switch g.r.IntN(5) {
	case 0:
		return writes(sql("UPDATE sf_user SET balance = balance + ", decimal(g.r, 2, 2), ", name = ", strLit(pick(g.r, names)), " WHERE id = ", k).stmt(""), tUser)
	case 1:
		return writes(sql("UPDATE sf_order SET status = ", strLit(pick(g.r, statuses)), " WHERE user_id = ", k, " AND order_no = ", intLit(1+g.r.IntN(ordersPerUser))).stmt(""), tOrder)
	case 2:
		return writes(sql("UPDATE sf_user u SET u.score = ", g.maybeNull(g.r, floatLit(pick(g.r, floats))), ", u.born = ", dateLit(randDate(g.r)), " WHERE u.id = ", k).stmt(""), tUser)
	case 3:
		return writes(sql("UPDATE sf_tag SET uses = uses + 1 WHERE name = ", strLit(g.tagKey(g.r))).stmt(""), tTag)
	}
	day, seq := g.logKey(g.r)
	return writes(sql("UPDATE sf_log SET level = ", g.maybeNull(g.r, intLit(g.r.IntN(8))), " WHERE day = ", g.dayLit(day), " AND seq = ", intLit(seq)).stmt(""), tLog)
}

func (g *Generator) updateScatter() Statement {
	switch g.r.IntN(3) {
	case 0:
		return writes(sql("UPDATE sf_order SET note = ", strLit(pick(g.r, names)), " WHERE amount > ", decimal(g.r, 4, 2)).stmt(""), tOrder)
	case 1:
		return writes(sql("UPDATE sf_user SET email = NULL WHERE name = ", strLit(pick(g.r, names))).stmt(""), tUser)
	}
	lo := g.eventKey()
	return writes(sql("UPDATE sf_event SET amount = -amount WHERE id BETWEEN ", intLit(lo), " AND ", intLit(lo+g.r.IntN(300))).stmt(""), tEvent)
}

func (g *Generator) deleteKey() Statement {
	switch g.r.IntN(4) {
	case 0:
		return writes(sql("DELETE FROM sf_user WHERE id = ", g.keyLit(g.userKey())).stmt(""), tUser)
	case 1:
		return writes(sql("DELETE FROM sf_order WHERE user_id = ", g.keyLit(g.userKey()), " AND order_no = ", intLit(1+g.r.IntN(ordersPerUser))).stmt(""), tOrder)
	case 2:
		return writes(sql("DELETE FROM sf_tag WHERE name = ", strLit(g.tagKey(g.r))).stmt(""), tTag)
	}
	return writes(sql("DELETE FROM sf_event WHERE id = ", intLit(g.eventKey())).stmt(""), tEvent)
}

func (g *Generator) deleteScatter() Statement {
	if g.r.IntN(2) == 0 {
		return writes(sql("DELETE FROM sf_order WHERE status = ", strLit(pick(g.r, statuses)), " AND amount < ", decimal(g.r, 3, 2)).stmt(""), tOrder)
	}
	d := randDate(g.r)
	return writes(sql("DELETE FROM sf_log WHERE day = ", dateLit(d), " OR level = ", intLit(7)).stmt(""), tLog)
}

// insertSingle inserts one row, sometimes with an existing key (a
// duplicate-key error on one shard is an error like the reference's).
func (g *Generator) insertSingle() Statement {
	switch g.r.IntN(4) {
	case 0:
		return writes(sql("INSERT INTO sf_user "+userCols+" VALUES ").row(g.userRow(g.r, g.keyLit(g.userKey()))).stmt(""), tUser)
	case 1:
		return writes(sql("INSERT INTO sf_order "+orderCols+" VALUES ").row(g.orderRow(g.r, g.keyLit(g.userKey()), intLit(1+g.r.IntN(ordersPerUser)))).stmt(""), tOrder)
	case 2:
		return writes(sql("INSERT INTO sf_tag (name, uses, updated) VALUES ").row(g.tagRow(g.r, g.tagKey(g.r))).stmt(""), tTag)
	}
	day, seq := g.logKey(g.r)
	return writes(sql("INSERT INTO sf_log (day, seq, msg, level) VALUES ").row(g.logRow(g.r, day, seq)).stmt(""), tLog)
}

// insertMulti inserts rows with fresh keys on every shard.
func (g *Generator) insertMulti() Statement {
	n := 2 + g.r.IntN(7)
	b := new(builder)
	var table string
	switch g.r.IntN(5) {
	case 0:
		table = tUser
		b.add("INSERT INTO sf_user " + userCols + " VALUES ")
		g.rows(b, n, func() []lit { return g.userRow(g.r, g.keyLit(g.nextFreshUser())) })
	case 1:
		table = tOrder
		b.add("INSERT INTO sf_order " + orderCols + " VALUES ")
		g.rows(b, n, func() []lit {
			g.freshOrder++
			return g.orderRow(g.r, g.keyLit(g.userKey()), intLit(1000+g.freshOrder))
		})
	case 2:
		table = tEvent
		b.add("INSERT INTO sf_event (id, kind, amount, happened) VALUES ")
		g.rows(b, n, func() []lit { return g.eventRow(g.r, intLit(g.nextFreshEvent(g.r.IntN(len(eventRanges))))) })
	case 3:
		table = tLog
		b.add("INSERT INTO sf_log (day, seq, msg, level) VALUES ")
		g.rows(b, n, func() []lit { g.freshLog++; return g.logRow(g.r, randDate(g.r), 100+g.freshLog) })
	default:
		table = tTag
		b.add("INSERT INTO sf_tag (name, uses, updated) VALUES ")
		g.rows(b, n, func() []lit { return g.tagRow(g.r, g.nextFreshTag()) })
	}
	return writes(b.stmt(""), table)
}

func (g *Generator) rows(b *builder, n int, row func() []lit) {
	for i := range n {
		if i > 0 {
			b.add(", ")
		}
		b.row(row())
	}
}

// mixedUsers is n sf_user rows, existing keys and fresh ones mixed, no
// key twice (a key repeated within one statement is a duplicate on one
// server, the same on both, but it makes REPLACE's count depend on order).
func (g *Generator) mixedUsers(b *builder, n int) {
	seen := map[int]bool{}
	g.rows(b, n, func() []lit {
		k := g.userKey()
		if g.r.IntN(3) == 0 || seen[k] {
			k = g.nextFreshUser()
		}
		seen[k] = true
		return g.userRow(g.r, intLit(k))
	})
}

func (g *Generator) replace() Statement {
	b := sql("REPLACE INTO sf_user " + userCols + " VALUES ")
	g.mixedUsers(b, 2+g.r.IntN(5))
	return writes(b.stmt(""), tUser)
}

func (g *Generator) insertIgnore() Statement {
	if g.r.IntN(3) == 0 {
		b := sql("INSERT IGNORE INTO sf_tag (name, uses, updated) VALUES ")
		seen := map[string]bool{}
		g.rows(b, 2+g.r.IntN(4), func() []lit {
			name := g.tagKey(g.r)
			if seen[strings.ToLower(strings.TrimRight(name, " "))] {
				name = g.nextFreshTag()
			}
			seen[strings.ToLower(strings.TrimRight(name, " "))] = true
			return g.tagRow(g.r, name)
		})
		return writes(b.stmt(""), tTag)
	}
	b := sql("INSERT IGNORE INTO sf_user " + userCols + " VALUES ")
	g.mixedUsers(b, 2+g.r.IntN(5))
	return writes(b.stmt(""), tUser)
}

func (g *Generator) upsert() Statement {
	if g.r.IntN(2) == 0 {
		b := sql("INSERT INTO sf_user " + userCols + " VALUES ")
		g.mixedUsers(b, 1+g.r.IntN(5))
		b.add(" ON DUPLICATE KEY UPDATE balance = VALUES(balance), name = CONCAT(LEFT(name, 20), '+')")
		return writes(b.stmt(""), tUser)
	}
	b := sql("INSERT INTO sf_order " + orderCols + " VALUES ")
	g.rows(b, 1+g.r.IntN(5), func() []lit {
		g.freshOrder++
		no := 1000 + g.freshOrder
		if g.r.IntN(2) == 0 {
			no = 1 + g.r.IntN(ordersPerUser)
		}
		return g.orderRow(g.r, intLit(g.userKey()), intLit(no))
	})
	b.add(" ON DUPLICATE KEY UPDATE amount = amount + ", decimal(g.r, 2, 2), ", status = VALUES(status)")
	return writes(b.stmt(""), tOrder)
}

// refWrite writes the reference table: every shard gets it, the client
// sees one server's answer.
func (g *Generator) refWrite() Statement {
	switch g.r.IntN(3) {
	case 0:
		g.freshCity++
		return writes(sql("INSERT INTO sf_city (id, name, country) VALUES (", intLit(100+g.freshCity), ", ", strLit(pick(g.r, names)), ", ", strLit(pick(g.r, countries)), ")").stmt(""), tCity)
	case 1:
		return writes(sql("UPDATE sf_city SET name = CONCAT(LEFT(name, 20), '!') WHERE country = ", strLit(pick(g.r, countries))).stmt(""), tCity)
	}
	return writes(sql("DELETE FROM sf_city WHERE id = ", intLit(100+g.r.IntN(g.freshCity+1))).stmt(""), tCity)
}

// plainWrite writes the unsharded table; its AUTO_INCREMENT ids come from
// the one server that holds it, so LAST_INSERT_ID must match.
func (g *Generator) plainWrite() Statement {
	if g.r.IntN(3) == 0 {
		return writes(sql("UPDATE sf_note SET body = ", strLit(pick(g.r, names)), " WHERE id = ", intLit(1+g.r.IntN(20))).stmt(""), tNote)
	}
	b := sql("INSERT INTO sf_note (body, created) VALUES ")
	g.rows(b, 1+g.r.IntN(3), func() []lit { return []lit{strLit(pick(g.r, names)), g.maybeNull(g.r, datetimeLit(randDatetime(g.r)))} })
	return writes(b.stmt(""), tNote)
}

// refusedWrite changes a shard key or limits a write across shards.
func (g *Generator) refusedWrite() Statement {
	var st Statement
	switch g.r.IntN(4) {
	case 0:
		st = writes(sql("UPDATE sf_user SET id = id + 100000 WHERE id = ", g.keyLit(g.userKey())).stmt(""), tUser)
	case 1:
		st = writes(sql("UPDATE sf_order SET user_id = ", intLit(g.userKey()), " WHERE user_id = ", g.keyLit(g.userKey()), " AND order_no = ", intLit(1+g.r.IntN(ordersPerUser))).stmt(""), tOrder)
	case 2:
		st = writes(sql("UPDATE sf_order SET note = 'limited' WHERE amount > ", decimal(g.r, 4, 2), " ORDER BY user_id, order_no LIMIT ", intLit(1+g.r.IntN(3))).stmt(""), tOrder)
	default:
		st = writes(sql("DELETE FROM sf_order WHERE status = ", strLit(pick(g.r, statuses)), " ORDER BY user_id, order_no LIMIT 1").stmt(""), tOrder)
	}
	return refusable(st)
}

// Kinds returns the names of every kind of statement Next makes.
func Kinds() []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = k.name
	}
	return out
}
