package proxy_test

// Real ORMs on a sharded schema (issue 22, Acceptance, "Real ORMs"): GORM
// (orm_gorm_test.go) and SQLAlchemy (orm_sqlalchemy_test.go with
// testdata/orm/sqlalchemy_orm.py) run the same ORM code against shardgate
// serving the schema below and against one reference server holding every
// row, and the answers are compared. This file holds what both share: the
// schema and its data, the comparison, and the one list of the refusals the
// tests expect (ormExpectedRefusals).

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"vitess.io/vitess/go/mysql/collations"
	"vitess.io/vitess/go/mysql/collations/colldata"

	sgmysql "github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/testenv"
)

// ormRefusal is a reason for which an ORM test expects shardgate to
// refuse (1235) queries: ORM is "gorm", "gorm-mysql" (GORM as on MySQL,
// without RETURNING) or "sqlalchemy"; Queries the test's names of the ORM
// calls refused; Reason a substring of the refusal's message (what follows
// "doesn't yet support"); Why the reason in words, for the reader of this
// table and of docs/compatibility.md.
type ormRefusal struct {
	ORM     string
	Queries []string
	Reason  string
	Why     string
}

// ormExpectedRefusals is every refusal the ORM tests expect, in one place.
// A refusal not listed here fails the test, and so does a listed one that
// is now answered: when shardgate learns to answer a query, delete its line
// (and its sentence in docs/compatibility.md, "ORMs").
var ormExpectedRefusals = []ormRefusal{
	// The parser.
	{ORM: "gorm", Queries: []string{"joins-alias-reserved-word"},
		Reason: "syntax error near 'Order'",
		Why:    "MariaDB takes the reserved word Order unquoted before a dot (Order.status: GORM names a join's alias after its relationship); the parser shardgate uses does not"},
	{ORM: "gorm", Queries: []string{"create", "create-batch", "create-in-batches", "create-with-associations", "save-new", "upsert-reference", "first-or-create", "transaction"},
		Reason: "syntax error near 'RETURNING'",
		Why:    "GORM's MySQL driver writes INSERT … RETURNING on MariaDB 10.5 and later, which the parser shardgate uses does not know"},
	// Writes that could move a row to another sub-table.
	{ORM: "gorm", Queries: []string{"create-order-for-customer"},
		Reason: "ON DUPLICATE KEY UPDATE of shard key column order_items.order_id",
		Why:    "GORM saves has-many associations with INSERT … ON DUPLICATE KEY UPDATE <foreign key> = VALUES(<foreign key>), here the shard key"},
	{ORM: "gorm-mysql", Queries: []string{"create-with-associations"},
		Reason: "ON DUPLICATE KEY UPDATE of shard key column orders.customer_id",
		Why:    "as above, for a customer's orders"},
	{ORM: "gorm-mysql", Queries: []string{"create-order-for-customer"},
		Reason: "ON DUPLICATE KEY UPDATE of shard key column order_items.order_id",
		Why:    "as above, for an order's items"},
	{ORM: "gorm", Queries: []string{"move-order-to-customer"},
		Reason: "UPDATE of shard key column orders.customer_id",
		Why:    "an UPDATE of the shard key would move the row to another sub-table"},
	{ORM: "gorm-mysql", Queries: []string{"move-order-to-customer"},
		Reason: "UPDATE of shard key column orders.customer_id",
		Why:    "as above"},

	// SQLAlchemy (testdata/orm/sqlalchemy_orm.py). (Its joins across
	// rules, derived tables, CTEs, correlated subqueries and window
	// functions are evaluated: issue 22.)
	{ORM: "sqlalchemy", Queries: []string{"add-all"},
		Reason: "syntax error near 'RETURNING'",
		Why:    "the unit of work inserts several new objects with server-generated keys as one INSERT … RETURNING on MariaDB 10.5 and later (insertmanyvalues), which the parser shardgate uses does not know"},
	{ORM: "sqlalchemy", Queries: []string{"move-order-to-customer"},
		Reason: "UPDATE of shard key column orders.customer_id",
		Why:    "an UPDATE of the shard key would move the row to another sub-table"},
	{ORM: "sqlalchemy", Queries: []string{"delete-object"},
		Reason: "outside XA, beside the shard that coordinates it",
		Why:    "PyMySQL, like every Python DB-API driver, opens transactions implicitly (autocommit=0, never BEGIN): a session whose first statement read every shard (get() by a column that is not the shard key) may write only on the shard that coordinates the transaction; with BEGIN (sqlalchemy-begin) it is answered"},
	{ORM: "sqlalchemy-begin", Queries: []string{"add-all"},
		Reason: "syntax error near 'RETURNING'",
		Why:    "as for sqlalchemy"},
	{ORM: "sqlalchemy-begin", Queries: []string{"move-order-to-customer"},
		Reason: "UPDATE of shard key column orders.customer_id",
		Why:    "as for sqlalchemy"},
}

// ---------------------------------------------------------------------------
// The schema

// ormDB is the sharded schema's name (and the reference's database).
const ormDB = "ormshop"

// ormSchemaYAML is the schema's tables: customers hash-sharded on id,
// orders placed like customers by customer_id, order_items range-sharded
// on order_id (1 sub-table on s0, 2 on s1), products a reference table,
// categories unlisted (unsharded, on the default cluster s0). Writes may
// span shards (atomic): an ORM writes a customer, its orders and their
// items in one transaction.
const ormSchemaYAML = `    cross_shard_writes: atomic
    tables:
      - {name: customers, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: 2}
      - {name: orders, shard_key: customer_id, like: customers}
      - {name: order_items, shard_key: order_id, rule: range, shards: [s0, s1], sub_tables: [1, 2], ranges: [[null, 1050], [1050, 1100], [1100, null]]}
      - {name: products, type: reference}
`

// ormDDL creates the tables: through shardgate (fanned out to the
// sub-tables) and directly on the reference. customers.id is
// AUTO_INCREMENT and the shard key: rows created without an id get one
// from shardgate's sequence. orders.id and order_items.id are not the
// shard key: an AUTO_INCREMENT there would be generated by each sub-table
// on its own, so the application gives them (docs/sharding.md, Sequences).
var ormDDL = []string{
	`CREATE TABLE categories (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL, parent_id INT NULL)`,
	`CREATE TABLE products (id INT PRIMARY KEY, sku VARCHAR(20) NOT NULL, name VARCHAR(60) NOT NULL,
	  category_id INT NULL, price DECIMAL(10,2) NOT NULL, active TINYINT(1) NOT NULL DEFAULT 1, UNIQUE KEY (sku))`,
	`CREATE TABLE customers (id BIGINT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(60) NOT NULL,
	  email VARCHAR(80) NULL, country CHAR(2) NULL, joined_at DATETIME NOT NULL, KEY (country))`,
	`CREATE TABLE orders (id BIGINT PRIMARY KEY, customer_id BIGINT NOT NULL, status VARCHAR(20) NOT NULL,
	  total DECIMAL(12,2) NOT NULL, placed_at DATETIME NOT NULL, note VARCHAR(100) NULL, KEY (customer_id))`,
	`CREATE TABLE order_items (id BIGINT PRIMARY KEY, order_id BIGINT NOT NULL, product_id INT NOT NULL,
	  qty INT NOT NULL, unit_price DECIMAL(10,2) NOT NULL, KEY (order_id))`,
}

// Sizes of the data: customers 1..ormCustomers (the last four without
// orders), orders 1001..1000+ormOrders, categories 1..5 (the last one
// without products).
const (
	ormCustomers = 40
	ormOrders    = 150
	ormProducts  = 24
)

// ormData is the INSERT statements of the data, the same every run: names
// differing only in case and accents (the columns are _ci), NULLs, equal
// timestamps, customers without orders, orders without items.
func ormData() []string {
	r := rand.New(rand.NewPCG(22, 7))
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	var out []string
	out = append(out, `INSERT INTO categories VALUES (1, 'Books', NULL), (2, 'Games', NULL), (3, 'Kitchen', NULL), (4, 'Board games', 2), (5, 'Empty', NULL)`)

	var b strings.Builder
	prices := make([]string, ormProducts+1)
	b.WriteString("INSERT INTO products VALUES ")
	for i := 1; i <= ormProducts; i++ {
		cat := "NULL"
		if i%7 != 0 {
			cat = fmt.Sprint(i%4 + 1)
		}
		prices[i] = fmt.Sprintf("%d.%02d", 2+r.IntN(120), r.IntN(100))
		names := []string{"pen", "Pen", "mug", "Mug", "chess set", "Échecs", "dice", "novel"}
		if i > 1 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%d, %s, %s, %s, %s, %d)", i, q(fmt.Sprintf("SKU-%03d", i)), q(fmt.Sprintf("%s %d", names[i%len(names)], i/3)), cat, prices[i], 1-i%5/4)
	}
	out = append(out, b.String())

	b.Reset()
	b.WriteString("INSERT INTO customers (id, name, email, country, joined_at) VALUES ")
	names := []string{"alice", "Alice", "Bob", "bob", "Émile", "emile", "Zoë", "zoe", "Ünal", "walter", "Mallory", "trent"}
	countries := []string{"'GB'", "'FR'", "'DE'", "'US'", "NULL", "'GB'", "'fr'"}
	for i := 1; i <= ormCustomers; i++ {
		email := "NULL"
		if i%6 != 0 {
			email = q(fmt.Sprintf("c%d@example.org", i))
		}
		if i > 1 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%d, %s, %s, %s, '2024-%02d-%02d 10:00:00')", i, q(names[r.IntN(len(names))]), email,
			countries[r.IntN(len(countries))], 1+i%12, 1+i/12*7)
	}
	out = append(out, b.String())

	statuses := []string{"pending", "paid", "shipped", "cancelled", "paid", "shipped"}
	b.Reset()
	var items strings.Builder
	items.WriteString("INSERT INTO order_items VALUES ")
	item := 0
	b.WriteString("INSERT INTO orders VALUES ")
	for i := 1; i <= ormOrders; i++ {
		id := 1000 + i
		note := "NULL"
		if r.IntN(3) == 0 {
			note = q([]string{"gift", "Gift", "leave at door", "fragile"}[r.IntN(4)])
		}
		if i > 1 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%d, %d, %s, %d.%02d, '2025-%02d-%02d %02d:00:00', %s)", id, 1+r.IntN(ormCustomers-4),
			q(statuses[r.IntN(len(statuses))]), r.IntN(400), r.IntN(100), 1+r.IntN(12), 1+r.IntN(28), r.IntN(3)*6, note)
		for range r.IntN(5) {
			item++
			if item > 1 {
				items.WriteString(", ")
			}
			p := 1 + r.IntN(ormProducts)
			fmt.Fprintf(&items, "(%d, %d, %d, %d, %s)", item, id, p, 1+r.IntN(6), prices[p])
		}
	}
	return append(out, b.String(), items.String())
}

// ormEnv is shardgate over two shards serving ormDB (ormSchemaYAML), and
// a reference server holding the same rows in one database.
type ormEnv struct {
	proxy  *proxy.Proxy
	ref    *testenv.Server
	shards []*testenv.Server
	// go-sql-driver clients of shardgate and of the reference
	pxDB, refDB *sql.DB
}

func startORMEnv(t *testing.T) *ormEnv {
	t.Helper()
	srvs := testenv.StartN(t, 3, testenv.Options{})
	for _, s := range srvs {
		s.Exec(t, "CREATE DATABASE "+ormDB)
	}
	e := &ormEnv{ref: srvs[0], shards: srvs[1:]}
	e.proxy = startProxy(t, parseConfig(t, twoShardYAML(ormDB, e.shards[0].Addr, e.shards[1].Addr, 8, ormSchemaYAML, ""), "orm.yaml"))
	e.pxDB = openDB(t, e.proxyDSN(""))
	e.refDB = openDB(t, e.refDSN(""))
	for _, stmt := range append(append([]string{}, ormDDL...), ormData()...) {
		mustExec(t, e.refDB, stmt)
		mustExec(t, e.pxDB, stmt)
	}
	return e
}

// proxyDSN is a go-sql-driver DSN for shardgate's schema, with params.
func (e *ormEnv) proxyDSN(params string) string {
	return proxyDSN(e.proxy, appUser, appPass, ormDB, params)
}

// refDSN is a go-sql-driver DSN for the reference's database, with params.
func (e *ormEnv) refDSN(params string) string {
	dsn := e.ref.DSN(ormDB)
	if params != "" {
		dsn += "&" + params
	}
	return dsn
}

// realign makes the next customer id generated through shardgate (its
// sequence) and on the reference (AUTO_INCREMENT) the same before the
// n-th write: a write refused by shardgate does not run on the reference
// and one that failed after an INSERT may have used an id on one side
// only; a sequence also promises increasing ids, not consecutive ones
// across statements (docs/sharding.md, Sequences). A row with an explicit
// id moves both past it (as MySQL's counter does); it is then deleted.
func (e *ormEnv) realign(t *testing.T, n int) {
	t.Helper()
	id := ormRealignBase + ormRealignStep*n
	for _, db := range []*sql.DB{e.pxDB, e.refDB} {
		mustExec(t, db, fmt.Sprintf("INSERT INTO customers (id, name, joined_at) VALUES (%d, 'realign', '2000-01-01')", id),
			fmt.Sprintf("DELETE FROM customers WHERE id = %d", id))
	}
}

// Customer ids realign uses: well above the data's ids, and apart by more
// than the ids one write creates.
const (
	ormRealignBase = 100
	ormRealignStep = 20
)

// ormTableDump reads every table of the schema, ordered by id, from db:
// what both sides must hold after the writes.
func ormTableDump(t *testing.T, db *sql.DB) string {
	t.Helper()
	var b strings.Builder
	for _, tb := range []string{"categories", "products", "customers", "orders", "order_items"} {
		rows, err := db.Query("SELECT * FROM " + tb + " ORDER BY id")
		if err != nil {
			t.Fatalf("dump %s: %v", tb, err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals, err := scanNullStrings(rows, len(cols))
			if err != nil {
				t.Fatal(err)
			}
			b.WriteString(tb)
			for _, v := range vals {
				if v.Valid {
					b.WriteString("\t" + v.String)
				} else {
					b.WriteString("\tNULL")
				}
			}
			b.WriteString("\n")
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("dump %s: %v", tb, err)
		}
		rows.Close()
	}
	return b.String()
}

// ---------------------------------------------------------------------------
// Comparing answers

// ormOrder says which order of a query's answer is promised.
type ormOrder int

const (
	// ormUnordered: no order; every list in the answer is compared as a
	// multiset.
	ormUnordered ormOrder = iota
	// ormTopOrdered: the answer's own rows come in a total order, the
	// lists nested in them (loaded relationships) in none.
	ormTopOrdered
	// ormOrdered: every list in the answer is totally ordered.
	ormOrdered
)

func (o ormOrder) String() string {
	return [...]string{"unordered", "top-ordered", "ordered"}[o]
}

// ormCanonical is the JSON text v marshals to, with the lists o does not
// promise the order of sorted and the fields named in fold folded, for
// comparing two answers.
func ormCanonical(v any, o ormOrder, fold []string) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return ormCanonicalJSON(raw, o, fold)
}

// ormCanonicalJSON is ormCanonical of an answer already in JSON.
func ormCanonicalJSON(raw []byte, o ormOrder, fold []string) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return "", err
	}
	c := ormCanon{keep: o == ormOrdered, fold: fold}
	x = c.canon(x, o == ormTopOrdered)
	out, err := json.MarshalIndent(x, "", " ")
	return string(out), err
}

// ormCanon canonicalizes a decoded JSON answer.
type ormCanon struct {
	// keep: every list's order is promised; else lists are sorted by their
	// elements' JSON text (but the top one when keepTop).
	keep bool
	// fold: the fields (any case) whose strings are compared by their
	// weight under utf8mb4_general_ci. A group key or DISTINCT value of a
	// _ci column is any one of the values the collation holds equal
	// ('FR', 'fr'): one server returns the first it reads, a merge the
	// first shard's.
	fold []string
}

var ormGeneralCI = colldata.Lookup(collations.ID(sgmysql.CollationUTF8MB4GeneralCI))

func (c ormCanon) canon(x any, keepTop bool) any {
	switch v := x.(type) {
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok && slices.ContainsFunc(c.fold, func(f string) bool { return strings.EqualFold(f, k) }) {
				v[k] = fmt.Sprintf("weight %x", ormGeneralCI.WeightString(nil, []byte(s), 0))
				continue
			}
			v[k] = c.canon(e, false)
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = c.canon(e, false)
		}
		if c.keep || keepTop {
			return v
		}
		keys := make([]string, len(v))
		for i, e := range v {
			b, _ := json.Marshal(e)
			keys[i] = string(b)
		}
		idx := make([]int, len(v))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return keys[idx[a]] < keys[idx[b]] })
		out := make([]any, len(v))
		for i, j := range idx {
			out[i] = v[j]
		}
		return out
	}
	return x
}

// shardgateRefusal returns the reason of shardgate's 1235 in err (what
// follows "doesn't yet support"), if err is one.
func shardgateRefusal(err error) (string, bool) {
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1235 {
		return ormRefusalReason(me.Message), true
	}
	return "", false
}

// ormRefusalReason is the reason in a 1235 message: what follows
// "This version of shardgate doesn't yet support", unquoted, with a
// parser's error position left out (so that refusals group by reason).
func ormRefusalReason(msg string) string {
	const prefix = "This version of shardgate doesn't yet support "
	r := strings.TrimPrefix(msg, prefix)
	if len(r) >= 2 && r[0] == '\'' && r[len(r)-1] == '\'' && !strings.Contains(r[1:len(r)-1], "'") {
		r = r[1 : len(r)-1]
	}
	return ormPosition.ReplaceAllString(r, "syntax error near")
}

var ormPosition = regexp.MustCompile(`syntax error at position \d+ near`)

// ormLedger keeps what one ORM's queries did through shardgate: answered,
// or refused and why, and checks the refusals against ormExpectedRefusals.
type ormLedger struct {
	t        *testing.T
	orm      string
	ran      []string
	answered int
	refused  map[string][]string // reason → queries
	seen     map[string]bool
}

func newORMLedger(t *testing.T, orm string) *ormLedger {
	return &ormLedger{t: t, orm: orm, refused: map[string][]string{}, seen: map[string]bool{}}
}

// expected returns the listed refusal of query, if any.
func (l *ormLedger) expected(query string) (ormRefusal, bool) {
	for _, r := range ormExpectedRefusals {
		if r.ORM == l.orm && slices.Contains(r.Queries, query) {
			return r, true
		}
	}
	return ormRefusal{}, false
}

// start notes that query runs; a query name is used once.
func (l *ormLedger) start(query string) {
	l.t.Helper()
	if l.seen[query] {
		l.t.Fatalf("%s: query name %q used twice", l.orm, query)
	}
	l.seen[query] = true
	l.ran = append(l.ran, query)
}

// answer records that shardgate answered query (the caller compares the
// answer): an error when the list says it is refused.
func (l *ormLedger) answer(query string) {
	l.t.Helper()
	l.answered++
	if r, ok := l.expected(query); ok {
		l.t.Errorf("%s %s: answered, but ormExpectedRefusals lists it as refused (%q): remove it there (orm_test.go) and from docs/compatibility.md",
			l.orm, query, r.Reason)
	}
}

// refuse records that shardgate refused query with reason, sql being the
// statement refused: an error unless the list names it with that reason.
func (l *ormLedger) refuse(query, reason, sql string) {
	l.t.Helper()
	l.refused[reason] = append(l.refused[reason], query)
	r, ok := l.expected(query)
	switch {
	case !ok:
		l.t.Errorf("%s %s: refused, and not in ormExpectedRefusals: %q\n  statement: %s\n  list it if that is expected: {ORM: %q, Queries: []string{%q}, Reason: %q, Why: \"…\"}",
			l.orm, query, reason, sql, l.orm, query, reason)
	case !strings.Contains(reason, r.Reason):
		l.t.Errorf("%s %s: refused with %q, but ormExpectedRefusals expects %q\n  statement: %s", l.orm, query, reason, r.Reason, sql)
	default:
		l.t.Logf("%s %s: refused as expected (%s)\n  statement: %s", l.orm, query, reason, sql)
	}
}

// finish checks that every refusal listed for the ORM names a query that
// ran, and logs the summary: queries run, answered, refused by reason.
func (l *ormLedger) finish() {
	l.t.Helper()
	for _, r := range ormExpectedRefusals {
		for _, q := range r.Queries {
			if r.ORM == l.orm && !l.seen[q] {
				l.t.Errorf("ormExpectedRefusals lists %s %s, which no longer runs: remove it", r.ORM, q)
			}
		}
	}
	var b strings.Builder
	nRefused := 0
	reasons := make([]string, 0, len(l.refused))
	for reason, qs := range l.refused {
		reasons = append(reasons, reason)
		nRefused += len(qs)
	}
	sort.Strings(reasons)
	fmt.Fprintf(&b, "%s: %d queries run, %d answered, %d refused", l.orm, len(l.ran), l.answered, nRefused)
	for _, reason := range reasons {
		fmt.Fprintf(&b, "\n  %d refused: %s: %s", len(l.refused[reason]), reason, strings.Join(l.refused[reason], ", "))
	}
	l.t.Log(b.String())
}

// ormDiff shows the first lines where got (shardgate's) differs from
// want (the reference's), at most five.
func ormDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	n := 0
	for i := 0; (i < len(wl) || i < len(gl)) && n < 5; i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			fmt.Fprintf(&b, "  line %d:\n    reference: %s\n    shardgate: %s\n", i+1, w, g)
			n++
		}
	}
	if n == 0 {
		return "  no difference\n"
	}
	return b.String()
}

// ormReplayed is a statement's rows, or its error, when an ORM's
// statement is run again as a plain one.
type ormReplayed struct {
	Rows  []map[string]any `json:"rows,omitempty"`
	Error []any            `json:"error,omitempty"` // [code, message]
}

// code is the error's code, 0 without one.
func (r ormReplayed) code() int {
	if len(r.Error) == 0 {
		return 0
	}
	switch c := r.Error[0].(type) {
	case float64:
		return int(c)
	case int:
		return c
	case json.Number:
		n, _ := c.Int64()
		return int(n)
	}
	return -1
}

// compareReplayed compares what a statement an ORM call (query) sent
// through shardgate answered when run again on both sides: every row, as
// a multiset, fold's columns under their collation. The ORM's own answer
// may hide rows (GORM's Count and First, SQLAlchemy's scalar() read one).
func compareReplayed(t *testing.T, query, stmt string, got, want ormReplayed, fold []string) {
	t.Helper()
	if got.code() != 0 || want.code() != 0 {
		if got.code() != want.code() {
			t.Errorf("%s: the statement it sent, run again: shardgate's error %v, the reference's %v\n  %s", query, got.Error, want.Error, stmt)
		}
		return
	}
	g, err := ormCanonical(got.Rows, ormUnordered, fold)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ormCanonical(want.Rows, ormUnordered, fold)
	if err != nil {
		t.Fatal(err)
	}
	if g != w {
		t.Errorf("%s: the statement it sent, run again, answers other rows through shardgate than on the reference (%d rows, reference %d)\n  %s\n%s",
			query, len(got.Rows), len(want.Rows), stmt, ormDiff(w, g))
	}
}

// replay runs again each SELECT of stmts (what an ORM call sent through
// shardgate) through go-sql-driver on both sides and compares their rows
// (compareReplayed).
func (e *ormEnv) replay(t *testing.T, query string, stmts []string, fold []string) {
	t.Helper()
	for _, stmt := range stmts {
		head := strings.ToUpper(strings.TrimSpace(stmt))
		if !strings.HasPrefix(head, "SELECT") && !strings.HasPrefix(head, "WITH") {
			continue
		}
		compareReplayed(t, query, stmt, ormQueryRows(e.pxDB, stmt), ormQueryRows(e.refDB, stmt), fold)
	}
}

// ormQueryRows is every row stmt answers on db, by column name (a name
// met again gets its position appended), values as text.
func ormQueryRows(db *sql.DB, stmt string) ormReplayed {
	rows, err := db.Query(stmt)
	if err != nil {
		return ormReplayedError(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c
		if slices.Contains(names[:i], c) {
			names[i] = fmt.Sprintf("%s#%d", c, i)
		}
	}
	out := ormReplayed{Rows: []map[string]any{}}
	for rows.Next() {
		vals, err := scanNullStrings(rows, len(cols))
		if err != nil {
			return ormReplayedError(err)
		}
		r := map[string]any{}
		for i, v := range vals {
			if v.Valid {
				r[names[i]] = v.String
			} else {
				r[names[i]] = nil
			}
		}
		out.Rows = append(out.Rows, r)
	}
	if err := rows.Err(); err != nil {
		return ormReplayedError(err)
	}
	return out
}

func ormReplayedError(err error) ormReplayed {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return ormReplayed{Error: []any{int(me.Number), me.Message}}
	}
	return ormReplayed{Error: []any{-1, err.Error()}}
}
