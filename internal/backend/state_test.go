package backend

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/testenv"
)

func varsOf(kv ...string) Vars {
	var vs Vars
	for i := 0; i < len(kv); i += 2 {
		vs.Set(kv[i], kv[i+1])
	}
	return vs
}

func TestVarsSetKeepsOrderAndReplaces(t *testing.T) {
	var vs Vars
	vs.Set("time_zone", "+00:00")
	vs.Set("autocommit", "OFF")
	vs.Set("sql_mode", "")
	vs.Set("lc_time_names", "de_DE")
	vs.Set("autocommit", "ON") // replaces
	vs.Set("wait_timeout", "60")
	vs.Set("a", "first")

	want := Vars{{"a", "first"}, {"autocommit", "ON"}, {"lc_time_names", "de_DE"},
		{"sql_mode", ""}, {"time_zone", "+00:00"}, {"wait_timeout", "60"}}
	if !slices.Equal(vs, want) {
		t.Fatalf("Set gave %q, want %q", vs, want)
	}
	for _, v := range want {
		if got, ok := vs.Get(v.Name); !ok || got != v.Value {
			t.Errorf("Get(%q) = %q, %v; want %q", v.Name, got, ok, v.Value)
		}
	}
	if _, ok := vs.Get("autocommi"); ok {
		t.Errorf("Get of a missing name reports it present")
	}
	if _, ok := vs.Get("zzz"); ok {
		t.Errorf("Get past the end reports a name present")
	}

	// Random insertion orders always give the sorted set, last value winning.
	r := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		var got Vars
		last := map[string]string{}
		for k := 0; k < 30; k++ {
			name := fmt.Sprintf("v%02d", r.IntN(15))
			val := fmt.Sprint(r.IntN(1000))
			got.Set(name, val)
			last[name] = val
		}
		if !sort.SliceIsSorted(got, func(i, j int) bool { return got[i].Name < got[j].Name }) {
			t.Fatalf("not sorted: %q", got)
		}
		if len(got) != len(last) {
			t.Fatalf("len %d, want %d distinct names: %q", len(got), len(last), got)
		}
		for n, v := range last {
			if g, _ := got.Get(n); g != v {
				t.Fatalf("%s = %q, want last value %q", n, g, v)
			}
		}
	}
}

func TestVarsEqualFingerprintClone(t *testing.T) {
	a := varsOf("sql_mode", "", "time_zone", "+00:00", "autocommit", "OFF")
	b := varsOf("autocommit", "OFF", "time_zone", "+00:00", "sql_mode", "")
	if !a.Equal(b) || a.Fingerprint() != b.Fingerprint() {
		t.Fatalf("same sets built in another order: Equal=%v fp %x vs %x", a.Equal(b), a.Fingerprint(), b.Fingerprint())
	}
	if (Vars{}).Fingerprint() != 0 || Vars(nil).Fingerprint() != 0 {
		t.Errorf("empty set fingerprint is not 0")
	}
	if a.Fingerprint() == 0 {
		t.Errorf("non-empty set has the empty set's fingerprint")
	}
	if !Vars(nil).Equal(Vars{}) {
		t.Errorf("nil and empty sets differ")
	}

	different := []Vars{
		varsOf("sql_mode", "", "time_zone", "+00:00", "autocommit", "ON"),                       // value
		varsOf("sql_mode", "", "time_zone", "+00:00"),                                           // fewer
		varsOf("sql_mode", "", "time_zone", "+00:00", "autocommit", "OFF", "wait_timeout", "1"), // more
		varsOf("sql_mode", "", "time_zone", "+00:00", "autocommits", "OFF"),                     // name
		varsOf("ab", "c"),
		varsOf("a", "bc"),
		varsOf("a", "b", "c", ""),
		varsOf("a", "", "b", "c"),
		{},
	}
	seen := map[uint64]int{a.Fingerprint(): -1}
	for i, d := range different {
		if a.Equal(d) || d.Equal(a) {
			t.Errorf("%q Equal %q", a, d)
		}
		fp := d.Fingerprint()
		if j, dup := seen[fp]; dup {
			t.Errorf("fingerprint of %q collides with set %d", d, j)
		}
		seen[fp] = i
	}

	c := a.Clone()
	c.Set("autocommit", "ON")
	c.Set("new", "1")
	if v, _ := a.Get("autocommit"); v != "OFF" || len(a) != 3 {
		t.Errorf("changing a clone changed the original: %q", a)
	}
}

func syncSQL(cur, want Vars) string {
	c := &Conn{Vars: cur}
	return string(c.AppendSync(nil, want))
}

func TestAppendSync(t *testing.T) {
	tests := []struct {
		name      string
		cur, want Vars
		sql       string
	}{
		{"both empty", nil, nil, ""},
		{"identical", varsOf("autocommit", "OFF", "sql_mode", "ANSI_QUOTES"), varsOf("sql_mode", "ANSI_QUOTES", "autocommit", "OFF"), ""},
		{"additions", nil, varsOf("time_zone", "+00:00", "autocommit", "OFF"),
			"SET @@session.autocommit = 'OFF', @@session.time_zone = '+00:00'"},
		{"addition among kept", varsOf("a", "1", "c", "3"), varsOf("a", "1", "b", "x", "c", "3"),
			"SET @@session.b = 'x'"},
		{"removals", varsOf("sql_mode", "", "time_zone", "+01:00", "max_join_size", "10"), nil,
			"SET @@session.max_join_size = DEFAULT, @@session.sql_mode = DEFAULT, @@session.time_zone = DEFAULT"},
		{"handshake charset removals",
			varsOf("character_set_client", "latin1", "character_set_connection", "latin1",
				"character_set_results", "", "collation_connection", "latin1_swedish_ci",
				"character_set_database", "latin1", "collation_database", "latin1_bin"), nil,
			"SET @@session.character_set_client = 'utf8mb4', @@session.character_set_connection = 'utf8mb4', " +
				"@@session.character_set_database = DEFAULT, @@session.character_set_results = 'utf8mb4', " +
				"@@session.collation_connection = 'utf8mb4_general_ci', @@session.collation_database = DEFAULT"},
		{"changed", varsOf("autocommit", "OFF", "sql_mode", "", "time_zone", "SYSTEM"),
			varsOf("autocommit", "OFF", "sql_mode", "ANSI", "time_zone", "+00:00"),
			"SET @@session.sql_mode = 'ANSI', @@session.time_zone = '+00:00'"},
		{"mixed", varsOf("a", "1", "b", "2", "d", "4"), varsOf("b", "20", "c", "3", "d", "4", "e", "5"),
			"SET @@session.a = DEFAULT, @@session.b = 20, @@session.c = 3, @@session.e = 5"},
		{"numbers bare", nil, varsOf("max_join_size", "18446744073709551615", "long_query_time", "2.500000",
			"div_precision_increment", "-1", "wait_timeout", "0"),
			"SET @@session.div_precision_increment = -1, @@session.long_query_time = 2.500000, " +
				"@@session.max_join_size = 18446744073709551615, @@session.wait_timeout = 0"},
		{"not numbers quoted", nil, varsOf("a", "1.", "b", ".5", "c", "-", "d", "1.2.3", "e", "1e3", "f", "+1", "g", "12a", "h", "1-2"),
			"SET @@session.a = '1.', @@session.b = '.5', @@session.c = '-', @@session.d = '1.2.3', " +
				"@@session.e = '1e3', @@session.f = '+1', @@session.g = '12a', @@session.h = '1-2'"},
		{"quotes and backslashes", nil, varsOf("x", `it's a\b''`),
			`SET @@session.x = 'it''s a\\b'''''`},
		{"no backslash escapes", varsOf("sql_mode", "ANSI_QUOTES,NO_BACKSLASH_ESCAPES"),
			varsOf("sql_mode", "ANSI_QUOTES,NO_BACKSLASH_ESCAPES", "x", `it's a\b`),
			`SET @@session.x = 'it''s a\b'`},
		{"escaping follows the current sql_mode, not the wanted one", nil,
			varsOf("sql_mode", "NO_BACKSLASH_ESCAPES", "x", `a\b`),
			`SET @@session.sql_mode = 'NO_BACKSLASH_ESCAPES', @@session.x = 'a\\b'`},
		{"leaving NO_BACKSLASH_ESCAPES still parses under it", varsOf("sql_mode", "NO_BACKSLASH_ESCAPES"),
			varsOf("x", `a\b`),
			`SET @@session.sql_mode = DEFAULT, @@session.x = 'a\b'`},
		{"empty strings", nil, varsOf("character_set_results", "", "sql_mode", "", "lc_time_names", "en_US"),
			"SET @@session.character_set_results = NULL, @@session.lc_time_names = 'en_US', @@session.sql_mode = ''"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			curBefore := tt.cur.Clone()
			if got := syncSQL(tt.cur, tt.want); got != tt.sql {
				t.Errorf("AppendSync\n got: %s\nwant: %s", got, tt.sql)
			}
			if !tt.cur.Equal(curBefore) {
				t.Errorf("AppendSync changed the connection's Vars: %q", tt.cur)
			}
			// It appends: an existing prefix is kept, and nothing is added
			// when nothing differs.
			c := &Conn{Vars: tt.cur}
			got := string(c.AppendSync([]byte("USE `x`; "), tt.want))
			if got != "USE `x`; "+tt.sql {
				t.Errorf("AppendSync with a prefix gave %q", got)
			}
		})
	}
}

// TestAppendSyncOnServer runs generated statements on a real connection and
// checks the server ends up with exactly the wanted values, then that
// syncing back to the empty set restores a fresh connection's values.
func TestAppendSyncOnServer(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	dc := dialConfig(srv)
	c := dialT(t, dc, false)

	isolation := "transaction_isolation"
	if queryOne(t, c, "SELECT COUNT(*) FROM information_schema.SESSION_VARIABLES WHERE VARIABLE_NAME = 'TRANSACTION_ISOLATION'") == "0" {
		isolation = "tx_isolation" // MariaDB before 11.1
	}
	names := []string{"sql_mode", "time_zone", "autocommit", isolation, "character_set_results",
		"max_join_size", "lc_time_names", "character_set_client", "character_set_connection",
		"collation_connection", "default_master_connection"}

	fresh := sessionVars(t, c, names)
	if fresh["character_set_client"] != "utf8mb4" || fresh["collation_connection"] != "utf8mb4_general_ci" {
		t.Fatalf("a fresh connection does not have the handshake charset: %v", fresh)
	}

	steps := []Vars{
		varsOf("sql_mode", "STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION", "time_zone", "+00:00",
			"autocommit", "OFF", isolation, "READ-COMMITTED", "character_set_results", "",
			"max_join_size", "1000000", "lc_time_names", "de_DE",
			"default_master_connection", `it's a\b`),
		// Changes, one removal, one addition; NO_BACKSLASH_ESCAPES is
		// turned on in the same statement that sets a backslash value.
		varsOf("sql_mode", "NO_BACKSLASH_ESCAPES", "time_zone", "-05:30",
			"autocommit", "OFF", isolation, "SERIALIZABLE", "character_set_results", "latin1",
			"lc_time_names", "fr_FR", "default_master_connection", `x\'y`,
			"character_set_client", "latin1", "character_set_connection", "latin1",
			"collation_connection", "latin1_swedish_ci"),
		// Under NO_BACKSLASH_ESCAPES now: backslashes are literal.
		varsOf("sql_mode", "NO_BACKSLASH_ESCAPES", "time_zone", "+00:00",
			"default_master_connection", `\\n'\`, "character_set_results", ""),
		nil, // back to a fresh connection's state
	}
	for i, want := range steps {
		stmt := c.AppendSync(nil, want)
		if len(stmt) == 0 {
			t.Fatalf("step %d: nothing to sync from %q to %q", i, c.Vars, want)
		}
		if err := c.Exec(string(stmt)); err != nil {
			t.Fatalf("step %d: %s: %v", i, stmt, err)
		}
		c.Vars = want.Clone()
		got := sessionVars(t, c, names)
		for _, n := range names {
			exp, set := want.Get(n)
			if !set {
				exp = fresh[n]
			}
			if got[n] != exp {
				t.Errorf("step %d: after %s\n@@session.%s = %q, want %q", i, stmt, n, got[n], exp)
			}
		}
		if again := c.AppendSync(nil, want); len(again) != 0 {
			t.Errorf("step %d: in sync, yet AppendSync gives %s", i, again)
		}
	}
}

// learnState runs stmts on a fresh connection and records the variables
// the server reports changed, as the frontend does from session tracking.
// It returns that record and the server's resulting values of names.
func learnState(t *testing.T, dc *DialConfig, names []string, stmts ...string) (Vars, map[string]string) {
	t.Helper()
	c := dialT(t, dc, false)
	defer c.Close()
	for _, st := range stmts {
		if err := c.WriteCommand(append([]byte{mysql.ComQuery}, st...)); err != nil {
			t.Fatal(err)
		}
		p, err := c.ReadPacket()
		if err != nil {
			t.Fatal(err)
		}
		if !mysql.IsOK(p) {
			t.Fatalf("%s: %x", st, p)
		}
		ok, valid := mysql.ParseOK(p, c.Caps)
		if !valid || ok.Status&mysql.StatusSessionStateChange == 0 {
			t.Fatalf("%s: no session state change reported", st)
		}
		c.ApplyStateChanges(ok.SessionState)
	}
	return c.Vars.Clone(), sessionVars(t, c, names)
}

// TestAppendSyncBetweenTrackedStates moves a connection between session
// states that clients reached with ordinary SET statements, recorded the
// way the proxy records them (session tracking), and checks the server ends
// up exactly where the client that set the target state was.
func TestAppendSyncBetweenTrackedStates(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	dc := dialConfig(srv)
	names := []string{"character_set_client", "character_set_connection", "character_set_results",
		"collation_connection", "sql_mode", "time_zone", "autocommit"}
	type state struct {
		name  string
		stmts []string
		vars  Vars
		ref   map[string]string
	}
	states := []*state{
		{name: "fresh"},
		{name: "names latin1", stmts: []string{"SET NAMES latin1"}},
		{name: "collation utf8mb4_bin", stmts: []string{"SET collation_connection = utf8mb4_bin"}},
		{name: "connection charset latin1", stmts: []string{"SET character_set_connection = latin1"}},
		{name: "names latin1, collation latin1_bin", stmts: []string{"SET NAMES latin1", "SET collation_connection = latin1_bin"}},
		{name: "results NULL", stmts: []string{"SET character_set_results = NULL"}},
		{name: "modes", stmts: []string{"SET sql_mode = 'NO_BACKSLASH_ESCAPES,ANSI_QUOTES', time_zone = '+02:00', autocommit = 0"}},
	}
	for _, s := range states {
		s.vars, s.ref = learnState(t, dc, names, s.stmts...)
	}
	c := dialT(t, dc, false)
	check := func(what string, stmt []byte, want *state) {
		t.Helper()
		got := sessionVars(t, c, names)
		for _, n := range names {
			if got[n] != want.ref[n] {
				t.Errorf("%s: after %q\n  @@session.%s = %q, but the client that set %q has %q",
					what, stmt, n, got[n], want.vars, want.ref[n])
			}
		}
	}
	for _, from := range states {
		for _, to := range states {
			if from == to {
				continue
			}
			// Put c in from's state (from a fresh connection's state), then
			// move it to to's.
			mustExec(t, c, "SET NAMES utf8mb4 COLLATE utf8mb4_general_ci, sql_mode = DEFAULT, time_zone = DEFAULT, autocommit = DEFAULT")
			c.Vars = nil
			if stmt := c.AppendSync(nil, from.vars); len(stmt) > 0 {
				mustExec(t, c, string(stmt))
				check("fresh -> "+from.name, stmt, from)
			}
			c.Vars = from.vars.Clone()
			stmt := c.AppendSync(nil, to.vars)
			if len(stmt) > 0 {
				mustExec(t, c, string(stmt))
			}
			c.Vars = to.vars.Clone()
			check(from.name+" -> "+to.name, stmt, to)
		}
	}
}
