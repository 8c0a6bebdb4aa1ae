package proxy_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/testenv"
)

// Issue 20: a HAVING that compares an aggregate with a constant after the
// merge compared strings bytewise where the server compares them under
// the column's collation (utf8mb4_unicode_ci), with the coercibility
// MySQL resolves ('Zoë' > 'walter' is 1, 'Ünal' > 'walter' is 0). The
// layout is the issue's: sf_user hash-sharded on id over 2 shards × 4
// sub-tables, sf_order placed like it by user_id, sf_city a reference
// table; the rows are mixed-case, accented, non-Latin, with escapes.

const havingDB = "hv"

var havingDDL = []string{
	`CREATE TABLE sf_user (id BIGINT PRIMARY KEY, name VARCHAR(32), age INT, city VARCHAR(16),
  score DECIMAL(10,2), created DATETIME, note VARCHAR(64) NULL)
  ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`,
	`CREATE TABLE sf_order (order_id BIGINT PRIMARY KEY, user_id BIGINT, amount DECIMAL(12,2),
  status VARCHAR(8), created DATETIME, KEY(user_id)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`,
	`CREATE TABLE sf_city (id INT PRIMARY KEY, name VARCHAR(16)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`,
}

const havingTables = `    tables:
      - {name: sf_user, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: 4}
      - {name: sf_order, shard_key: user_id, like: sf_user}
      - {name: sf_city, type: reference}
`

// havingNames order differently under utf8mb4_unicode_ci and bytewise.
var havingNames = []string{"walter", "Walter", "WALTER ", "Zoë", "zoe", "ZOË", "Ünal", "unal", "çelik", "Çelik",
	"Ångström", "angstrom", `back\slash`, "O'Brien", "o'brien", "ß", "ss", "Straße", "STRASSE", "são paulo",
	"São Paulo", "ümlaut ärger", "中文", "日本", "Ωmega", "ωmega", "😀", "naïve", "Naive", "résumé", "Resume", "zz", "a", ""}

var havingCities = []string{"Köln", "koln", "KÖLN ", "Zürich", "zurich", "São Paulo", "sao paulo", "Ōsaka", "osaka",
	"Łódź", "lodz", "ß", "東京", "Århus", "aarhus", "Bern"}

var havingStatuses = []string{"new", "New", "NEW", "paid", "Paid ", "refund", "Refund", "réfund", "shipped", "ß"}

// sqlString is a MariaDB string literal (backslash escapes on).
func sqlString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// havingRows are the INSERTs of a few thousand users and orders, the same
// every run.
func havingRows() []difftest.Statement {
	r := rand.New(rand.NewPCG(20, 20))
	var out []difftest.Statement
	nullable := func(s string) string {
		if r.IntN(6) == 0 {
			return "NULL"
		}
		return s
	}
	for batch := 0; batch < 6; batch++ {
		var users, orders []string
		for i := 0; i < 500; i++ {
			id := batch*500 + i + 1
			users = append(users, fmt.Sprintf("(%d, %s, %s, %s, %s, %s, %s)", id,
				sqlString(havingNames[r.IntN(len(havingNames))]),
				nullable(fmt.Sprint(r.IntN(60))),
				sqlString(havingCities[r.IntN(len(havingCities))]),
				fmt.Sprintf("%d.%02d", r.IntN(50000), r.IntN(100)),
				nullable(fmt.Sprintf("'20%02d-%02d-%02d %02d:%02d:00'", 19+r.IntN(5), 1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60))),
				nullable(sqlString(havingNames[r.IntN(len(havingNames))]))))
			orders = append(orders, fmt.Sprintf("(%d, %d, %d.%02d, %s, '2021-%02d-01')", id, 1+r.IntN(3000),
				r.IntN(1000), r.IntN(100), sqlString(havingStatuses[r.IntN(len(havingStatuses))]), 1+r.IntN(12)))
		}
		out = append(out,
			write("sf_user", "INSERT INTO sf_user VALUES "+strings.Join(users, ", ")),
			write("sf_order", "INSERT INTO sf_order VALUES "+strings.Join(orders, ", ")))
	}
	for i, c := range havingCities {
		out = append(out, write("sf_city", fmt.Sprintf("INSERT INTO sf_city VALUES (%d, %s)", i+1, sqlString(c))))
	}
	return out
}

// startHavingLayout is the layout through shardgate over two
// shards, and one reference server, holding havingRows.
func startHavingLayout(t *testing.T) *shardedDiff {
	t.Helper()
	srvs := testenv.StartN(t, 3, testenv.Options{})
	ref, s0, s1 := srvs[0], srvs[1], srvs[2]
	for _, s := range srvs {
		s.Exec(t, "CREATE DATABASE "+havingDB)
	}
	p := startProxy(t, parseConfig(t, twoShardYAML(havingDB, s0.Addr, s1.Addr, 4, havingTables, ""), "having.yaml"))
	d := &shardedDiff{
		ref:    difftest.ServerTarget("reference", ref, havingDB),
		got:    difftest.Target{Name: "shardgate", Addr: p.Addrs()[0], User: appUser, Password: appPass, Database: havingDB},
		shards: []*testenv.Server{s0, s1},
		proxy:  p,
	}
	var setup []difftest.Statement
	for i, ddl := range havingDDL {
		setup = append(setup, difftest.Statement{Kind: "ddl", SQL: ddl, Ordered: true, Writes: []string{[]string{"sf_user", "sf_order", "sf_city"}[i]}})
	}
	compareStatements(t, d, append(setup, havingRows()...))
	if t.Failed() {
		t.FailNow()
	}
	return d
}

// havingCase is a statement with its constants as parameters in the
// prepared form; fold are its columns compared under utf8mb4_unicode_ci.
type havingCase struct {
	text, prepared string
	args           []any
	ordered        bool
	fold           []int
}

func (c havingCase) statements() []difftest.Statement {
	st := difftest.Statement{Kind: "having_collation", SQL: c.text, Ordered: c.ordered, Fold: c.fold}
	for range c.fold {
		st.FoldAs = append(st.FoldAs, "utf8mb4_unicode_ci")
	}
	prep := st
	prep.Prepared, prep.Args = c.prepared, c.args
	return []difftest.Statement{st, prep}
}

func havingStatements(cases ...havingCase) []difftest.Statement {
	var out []difftest.Statement
	for _, c := range cases {
		out = append(out, c.statements()...)
	}
	return out
}

// TestShardedHavingComparesUnderTheCollation replays the issue's
// statements, as text and prepared with the constants as parameters.
func TestShardedHavingComparesUnderTheCollation(t *testing.T) {
	d := startHavingLayout(t)

	t.Run("the merged maxima compared with a constant", func(t *testing.T) {
		compareStatements(t, d, havingStatements(
			havingCase{"SELECT age, MAX(name), MAX(name) > 'walter' FROM sf_user WHERE age IN (6, 42, 49) GROUP BY age ORDER BY age",
				"SELECT age, MAX(name), MAX(name) > ? FROM sf_user WHERE age IN (6, 42, 49) GROUP BY age ORDER BY age", []any{"walter"}, true, []int{1}},
			havingCase{"SELECT age, SUM(score) FROM sf_user GROUP BY age HAVING MAX(name) > 'walter'",
				"SELECT age, SUM(score) FROM sf_user GROUP BY age HAVING MAX(name) > ?", []any{"walter"}, false, nil},
			havingCase{"SELECT age, MIN(age), MAX(name) FROM sf_user GROUP BY age HAVING MAX(name) > 'Ångström'",
				"SELECT age, MIN(age), MAX(name) FROM sf_user GROUP BY age HAVING MAX(name) > ?", []any{"Ångström"}, false, []int{2}},
			havingCase{"SELECT YEAR(created) AS yr, COUNT(DISTINCT age) FROM sf_user GROUP BY YEAR(created) HAVING MAX(name) > 'çelik'",
				"SELECT YEAR(created) AS yr, COUNT(DISTINCT age) FROM sf_user GROUP BY YEAR(created) HAVING MAX(name) > ?", []any{"çelik"}, false, nil},
			havingCase{`SELECT name, MAX(age) AS va, MIN(score) FROM sf_user WHERE score > 25065.92 GROUP BY name HAVING MAX(name) > 'back\\slash' ORDER BY va, name LIMIT 5`,
				`SELECT name, MAX(age) AS va, MIN(score) FROM sf_user WHERE score > ? GROUP BY name HAVING MAX(name) > ? ORDER BY va, name LIMIT 5`, []any{"25065.92", `back\slash`}, true, []int{0}},
			havingCase{`SELECT note, COUNT(note) FROM sf_user WHERE name = 'back\\slash' GROUP BY note HAVING MAX(name) > 'O\'Brien'`,
				`SELECT note, COUNT(note) FROM sf_user WHERE name = ? GROUP BY note HAVING MAX(name) > ?`, []any{`back\slash`, "O'Brien"}, false, []int{0}},
		))
	})

	t.Run("functions, explicit collations, lists, patterns and other types", func(t *testing.T) {
		compareStatements(t, d, havingStatements(
			havingCase{"SELECT status, SUM(amount) FROM sf_order GROUP BY status HAVING MAX(UPPER(status)) >= 'new' OR STRCMP(MIN(status), 'refund') = -1",
				"SELECT status, SUM(amount) FROM sf_order GROUP BY status HAVING MAX(UPPER(status)) >= ? OR STRCMP(MIN(status), ?) = -1", []any{"new", "refund"}, false, []int{0}},
			havingCase{"SELECT age, name, COUNT(*) FROM sf_user GROUP BY age, name HAVING MAX(name COLLATE utf8mb4_bin) > 'Walter' AND MIN(name) >= 'unal'",
				"SELECT age, name, COUNT(*) FROM sf_user GROUP BY age, name HAVING MAX(name COLLATE utf8mb4_bin) > ? AND MIN(name) >= ?", []any{"Walter", "unal"}, false, []int{1}},
			havingCase{"SELECT name, SUM(score) FROM sf_user WHERE age IS NULL GROUP BY name HAVING MAX(note) IN ('são paulo', 'ümlaut ärger', 'o\\'brien')",
				"SELECT name, SUM(score) FROM sf_user WHERE age IS NULL GROUP BY name HAVING MAX(note) IN (?, ?, ?)", []any{"são paulo", "ümlaut ärger", "o'brien"}, false, []int{0}},
			havingCase{"SELECT city, note, MIN(age) FROM sf_user GROUP BY city, note HAVING MIN(city) NOT LIKE '%ö%'",
				"SELECT city, note, MIN(age) FROM sf_user GROUP BY city, note HAVING MIN(city) NOT LIKE ?", []any{"%ö%"}, false, []int{0, 1}},
			havingCase{"SELECT city, note, MIN(age), AVG(age) FROM sf_user GROUP BY city, note HAVING MAX(created) < 20210601",
				"SELECT city, note, MIN(age), AVG(age) FROM sf_user GROUP BY city, note HAVING MAX(created) < ?", []any{int64(20210601)}, false, []int{0, 1}},
			havingCase{"SELECT name, COUNT(DISTINCT city) FROM sf_user GROUP BY name HAVING MAX(city) > _utf8mb4'ß' COLLATE utf8mb4_general_ci",
				"SELECT name, COUNT(DISTINCT city) FROM sf_user GROUP BY name HAVING MAX(city) > _utf8mb4'ß' COLLATE utf8mb4_general_ci", nil, false, []int{0}},
		))
	})
}

// TestShardedHavingOfSeveralAggregates: what the merge evaluates itself
// over several aggregates reads numbers only; over strings and dates the
// statement is evaluated: one server's answer either way.
func TestShardedHavingOfSeveralAggregates(t *testing.T) {
	d := startHavingLayout(t)
	compareStatements(t, d, havingStatements(
		havingCase{"SELECT city, SUM(score) - MIN(score), COUNT(*) FROM sf_user GROUP BY city HAVING SUM(score) > '100000.5' AND AVG(age) + 1 > 2",
			"SELECT city, SUM(score) - MIN(score), COUNT(*) FROM sf_user GROUP BY city HAVING SUM(score) > ? AND AVG(age) + 1 > ?", []any{"100000.5", int64(2)}, false, []int{0}},
		havingCase{"SELECT age, UPPER(MAX(name)), MAX(name) = 'zoe' FROM sf_user GROUP BY age ORDER BY UPPER(MAX(name)), age",
			"SELECT age, UPPER(MAX(name)), MAX(name) = ? FROM sf_user GROUP BY age ORDER BY UPPER(MAX(name)), age", []any{"zoe"}, true, []int{1}},
		// an item named by its text with a character beyond the BMP: the
		// server names it with a '?' for it and refuses it as an alias
		havingCase{"SELECT age, MAX(name) >= '😀', COUNT(*) FROM sf_user GROUP BY age",
			"SELECT age, MAX(name) >= ?, COUNT(*) FROM sf_user GROUP BY age", []any{"😀"}, false, nil},
		havingCase{"SELECT id, name >= '😀x', CONCAT('😀', name) FROM sf_user WHERE id = 7",
			"SELECT id, name >= ?, CONCAT('😀', name) FROM sf_user WHERE id = ?", []any{"😀x", int64(7)}, true, nil},
		havingCase{"SELECT status, COUNT(*) AS n, MAX(status) AS m FROM sf_order GROUP BY status HAVING m <> 'paid' AND n > 1",
			"SELECT status, COUNT(*) AS n, MAX(status) AS m FROM sf_order GROUP BY status HAVING m <> ? AND n > ?", []any{"paid", int64(1)}, false, []int{0, 2}},
	))
	// What the merge does not compute itself (strings and dates of
	// several aggregates, a string read as a number with a warning) it
	// hands, before any row went out, to the evaluation (issue 22): one
	// server's answer, never a refusal.
	compareStatements(t, d, havingStatements(
		havingCase{"SELECT user_id % 7, COUNT(*) FROM sf_order GROUP BY user_id % 7 HAVING MIN(status) = MAX(status)",
			"SELECT user_id % 7, COUNT(*) FROM sf_order GROUP BY user_id % 7 HAVING MIN(status) = MAX(status)", nil, false, nil},
		havingCase{"SELECT age FROM sf_user GROUP BY age HAVING MAX(name) > MIN(city)",
			"SELECT age FROM sf_user GROUP BY age HAVING MAX(name) > MIN(city)", nil, false, nil},
		havingCase{"SELECT age, CONCAT(MAX(name), MIN(city)) FROM sf_user GROUP BY age",
			"SELECT age, CONCAT(MAX(name), MIN(city)) FROM sf_user GROUP BY age", nil, false, nil},
		havingCase{"SELECT age FROM sf_user GROUP BY age HAVING MAX(created) > MIN(created) + INTERVAL 1 YEAR",
			"SELECT age FROM sf_user GROUP BY age HAVING MAX(created) > MIN(created) + INTERVAL 1 YEAR", nil, false, nil},
		havingCase{"SELECT status FROM sf_order GROUP BY status HAVING GROUP_CONCAT(status) LIKE '%A%'",
			"SELECT status FROM sf_order GROUP BY status HAVING GROUP_CONCAT(status) LIKE ?", []any{"%A%"}, false, []int{0}},
		// over no rows, a part grouped by the DISTINCT argument sends no
		// row to take MIN(created) <=> … from: one server's is 0
		havingCase{"SELECT COUNT(*), MIN(created) <=> '2024-06-17 03:00:00', SUM(DISTINCT age) FROM sf_user WHERE id > 100000 HAVING MAX(id) IS NULL",
			"SELECT COUNT(*), MIN(created) <=> ?, SUM(DISTINCT age) FROM sf_user WHERE id > ? HAVING MAX(id) IS NULL", []any{"2024-06-17 03:00:00", int64(100000)}, true, nil},
		// the server reads '1abc' as a number with a warning; the proxy
		// would read it without one
		havingCase{"SELECT city, COUNT(*) FROM sf_user GROUP BY city HAVING SUM(age) > '1abc'",
			"SELECT city, COUNT(*) FROM sf_user GROUP BY city HAVING SUM(age) > ?", []any{"1abc"}, false, []int{0}},
		havingCase{"SELECT age, IF(COUNT(*) > 50, 'many', 'few') = 'MANY ' FROM sf_user GROUP BY age",
			"SELECT age, IF(COUNT(*) > 50, ?, 'few') = 'MANY ' FROM sf_user GROUP BY age", []any{"many"}, false, nil},
	))
}
