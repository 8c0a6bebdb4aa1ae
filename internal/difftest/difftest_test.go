package difftest_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

const db = "shop"

// TestHarnessAgainstTwoServers runs the harness with two real servers, the
// second standing in for shardgate: equal data gives zero differences;
// each way of altering the second server's data is reported.
func TestHarnessAgainstTwoServers(t *testing.T) {
	srvs := testenv.StartN(t, 2, testenv.Options{})
	for _, s := range srvs {
		s.Exec(t, "CREATE DATABASE "+db)
	}
	ref := difftest.ServerTarget("reference", srvs[0], db)
	got := difftest.ServerTarget("second", srvs[1], db)
	seed := difftest.Seed()

	t.Run("equal", func(t *testing.T) {
		gen := difftest.NewGenerator(seed)
		gen.Transactions() // one server runs them as it runs the reference's
		difftest.Load(t, ref, got, gen)
		rep := difftest.Run(t, ref, got, gen, difftest.Count(3000))
		checkCoverage(t, rep)
	})

	t.Run("refusals", func(t *testing.T) { testRefusals(t, srvs) })

	// The alterations run with a fixed seed: whether a random statement
	// happens to read the altered row is up to the seed, and these tests
	// check the harness, not the generator's luck.
	const alterSeed = 13
	alterations := []struct {
		name  string
		alter []string
		// want are substrings some difference must contain.
		want []string
		// table must show a contents difference before the first
		// statement ("": none, MariaDB reports a view's own name).
		table string
	}{
		{"row changed", []string{"UPDATE sf_user SET balance = 0.01 ORDER BY id LIMIT 1"},
			[]string{`only in reference: ("-20",`, `only in got:       ("-20",`}, "sf_user"},
		{"row missing", []string{"DELETE FROM sf_order ORDER BY user_id, order_no LIMIT 1"},
			[]string{"only in reference: (", "only in got:       (none)"}, "sf_order"},
		// The charset of a column definition is the connection's result
		// charset; a _bin collation shows as the BINARY flag (0x80).
		{"collation changed", []string{"ALTER TABLE sf_tag MODIFY name VARCHAR(32) COLLATE utf8mb4_bin NOT NULL"},
			[]string{"column 1 (name): flags: reference 0x5003, got 0x5083", "[tag_point]"}, "sf_tag"},
		{"type changed", []string{"ALTER TABLE sf_event MODIFY amount DOUBLE NULL"},
			[]string{"column 3 (amount): type: reference 246, got 5", "[range]"}, "sf_event"},
		{"table renamed", []string{"RENAME TABLE sf_city TO sf_city_0001", "CREATE VIEW sf_city AS SELECT * FROM sf_city_0001"},
			[]string{`org_table: reference "sf_city", got "sf_city_0001"`, "[ref_read]"}, ""},
	}
	for _, a := range alterations {
		t.Run(a.name, func(t *testing.T) {
			gen := difftest.NewGenerator(alterSeed)
			srvs[1].Exec(t, "DROP VIEW IF EXISTS "+db+".sf_city", "DROP TABLE IF EXISTS "+db+".sf_city_0001")
			difftest.Load(t, ref, got, gen)
			srvs[1].Exec(t, append([]string{"USE " + db}, a.alter...)...)
			rep, err := difftest.Check(ref, got, gen, 300, difftest.DefaultOptions())
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			checkReported(t, rep, a.want, a.table)
		})
	}
}

// checkReported requires a contents difference of table before the first
// statement and each of want in some difference.
func checkReported(t *testing.T, rep *difftest.Report, want []string, table string) {
	t.Helper()
	var all strings.Builder
	initial := false
	for _, d := range rep.Differences {
		s := d.String()
		all.WriteString(s + "\n")
		if d.Index == 0 && d.Table == table {
			initial = true
		}
		if !strings.Contains(s, fmt.Sprintf("seed %d statement #%d", rep.Seed, d.Index)) {
			t.Errorf("difference does not say how to reproduce it: %s", s)
		}
	}
	if table != "" && !initial {
		t.Errorf("no difference in the contents of %s before the first statement", table)
	}
	for _, w := range want {
		if !strings.Contains(all.String(), w) {
			t.Errorf("no difference mentions %q", w)
		}
	}
	if t.Failed() {
		t.Logf("seed %d, differences:\n%s", rep.Seed, all.String())
	}
}

// checkCoverage requires every kind of statement, in both protocols, and
// no reference error a generator bug would cause.
// bothProtocolsFrom is the number of a kind's statements from which
// both protocols must have run: a kind's statements alternate between
// them by position, so fewer than 2^-11 seeds miss one.
const bothProtocolsFrom = 12

func checkCoverage(t *testing.T, rep *difftest.Report) {
	t.Helper()
	for _, k := range difftest.Kinds() {
		c := rep.Kinds[k]
		switch {
		case c == nil || c.Text+c.Prepared == 0:
			t.Errorf("kind %s: never run (%+v)", k, c)
		case c.Text+c.Prepared >= bothProtocolsFrom && (c.Text == 0 || c.Prepared == 0):
			// The seed is random: a kind of a handful of statements
			// may fall on one protocol by chance (5 did, 1 time in 16).
			t.Errorf("kind %s: not run in both protocols (%+v)", k, c)
		}
	}
	for code, n := range rep.ErrorCodes {
		switch code {
		case 1062: // duplicate key: inserts with existing keys, key updates
		default:
			t.Errorf("the reference answered %d statements with error %d: a generator bug", n, code)
		}
	}
}
