package planner

import (
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
)

func planPL(t *testing.T, sql, db string) (*engine.Processlist, error) {
	t.Helper()
	return Processlist(router.Classify([]byte(sql)), []byte(sql), db, 42)
}

func TestProcesslistPlans(t *testing.T) {
	tests := []struct {
		sql, db string
		probe   string // "": no plan (nil, nil), or refused when refused is set
		refused string // refused at once (1235 naming it); "later:" prefix: after the probe
		show    bool
	}{
		{sql: "SHOW PROCESSLIST", probe: "SHOW PROCESSLIST", show: true},
		{sql: "show full processlist", probe: "show full processlist", show: true},
		{sql: "SHOW COLUMNS FROM information_schema.PROCESSLIST"},
		{sql: "DESCRIBE information_schema.PROCESSLIST"},
		{sql: "EXPLAIN SELECT * FROM information_schema.PROCESSLIST"},
		{sql: "SELECT * FROM information_schema.PROCESSLIST", probe: "SELECT * FROM information_schema.PROCESSLIST\nLIMIT 0"},
		{sql: "SELECT * FROM information_schema.PROCESSLIST -- c", probe: "SELECT * FROM information_schema.PROCESSLIST -- c\nLIMIT 0"},
		{sql: "SELECT * FROM information_schema.PROCESSLIST # c\n;", probe: "SELECT * FROM information_schema.PROCESSLIST # c\n\nLIMIT 0"},
		{sql: "SELECT ID FROM information_schema.PROCESSLIST LIMIT 3;", probe: "SELECT ID FROM information_schema.PROCESSLIST LIMIT 0"},
		{sql: "SELECT ID FROM information_schema.PROCESSLIST ORDER BY ID LIMIT 1, 3 -- c", probe: "SELECT ID FROM information_schema.PROCESSLIST ORDER BY ID LIMIT 0"},
		{sql: "SELECT ID FROM PROCESSLIST", db: "INFORMATION_SCHEMA", probe: "SELECT ID FROM PROCESSLIST\nLIMIT 0"},
		{sql: "SELECT COUNT(*) FROM information_schema.PROCESSLIST", refused: "later:count(*)"},
		{sql: "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = 0", refused: "later:a number with a string"},
		{sql: "SELECT ID FROM information_schema.PROCESSLIST WHERE ID = '4x'", refused: "later:a number with a string"},
		{sql: "SELECT ID FROM information_schema.PROCESSLIST WHERE USER", refused: "later:as a condition"},
		{sql: "SELECT ID FROM information_schema.PROCESSLIST WHERE ID = ID + 1", refused: "later:ID + 1"},
		{sql: "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = CURRENT_USER()", refused: "later:CURRENT_USER()"},
		{sql: "SELECT ID FROM information_schema.PROCESSLIST WHERE ID LIKE '4%'", refused: "later:LIKE on the number"},
		{sql: "SELECT ID FROM information_schema.PROCESSLIST ORDER BY RAND()", refused: "later:ORDER BY RAND()"},
		{sql: "SELECT ID FROM information_schema.PROCESSLIST, t", refused: "later:joined"},
		{sql: "SELECT * FROM t WHERE a IN (SELECT ID FROM information_schema.PROCESSLIST)", refused: "later:joined"},
		{sql: "SELECT DISTINCT USER FROM information_schema.PROCESSLIST", refused: "later:DISTINCT"},
		{sql: "SELECT ID FROM information_schema.PROCESSLIST WHERE USER LIKE 'a' ESCAPE CONCAT('|')", refused: "later:ESCAPE"},
		{sql: "SELECT ID FROM information_schema.PROCESSLIST WHERE USER LIKE 'a' ESCAPE 'ab'", refused: "later:ESCAPE"},
		{sql: "SELECT ID FROM information_schema.PROCESSLIST WHERE USER LIKE USER", refused: "later:a string pattern only"},
		{sql: "SELECT ID FROM information_schema.PROCESSLIST WHERE ID = ?", refused: "later:in the WHERE"},
		{sql: "SELECT ID FROM information_schema.PROCESSLIST WHERE ID = @v", refused: "user variables"},
		{sql: "SELECT ID, SLEEP(1) FROM information_schema.PROCESSLIST", refused: "a function with effects"},
		{sql: "SELECT ID, GET_LOCK('x', 0) FROM information_schema.PROCESSLIST", refused: "a function with effects"},
		{sql: "SELECT ID FROM information_schema.PROCESSLIST WHERE ID IN (SELECT 1)", refused: "later:"},
		{sql: "SELECT ID FROM information_schema.PROCESSLIST LIMIT 1 + 1", refused: "LIMIT"},
		{sql: "SELECT ID FROM information_schema.PROCESSLIST FOR UPDATE", refused: "locking read"},
		{sql: "SELECT ID INTO @x FROM information_schema.PROCESSLIST", refused: "INTO"},
		{sql: "SELECT ID FROM information_schema.PROCESSLIST UNION SELECT 1", refused: "UNION"},
		{sql: "WITH p AS (SELECT ID FROM information_schema.PROCESSLIST) SELECT * FROM p", refused: "WITH"},
		{sql: "INSERT INTO t SELECT ID FROM information_schema.PROCESSLIST", refused: "INSERT"},
		{sql: "CREATE VIEW v AS SELECT ID FROM information_schema.PROCESSLIST", refused: "CREATE"},
		{sql: "DO 1; SHOW PROCESSLIST", refused: "multi-statement"},
	}
	for _, tc := range tests {
		plan, err := planPL(t, tc.sql, tc.db)
		now, later := tc.refused != "" && !strings.HasPrefix(tc.refused, "later:"), strings.TrimPrefix(tc.refused, "later:")
		switch {
		case now:
			se, ok := err.(*mysql.SQLError)
			if !ok || se.Code != mysql.ERNotSupportedYet || !strings.Contains(se.Message, tc.refused) || !strings.Contains(se.Message, "PROCESSLIST") {
				t.Errorf("%s: %v, want 1235 naming %q", tc.sql, err, tc.refused)
			}
			continue
		case err != nil:
			t.Errorf("%s: %v", tc.sql, err)
			continue
		case tc.probe == "" && tc.refused == "":
			if plan != nil {
				t.Errorf("%s: planned, want it to run as usual", tc.sql)
			}
			continue
		case plan == nil:
			t.Errorf("%s: no plan", tc.sql)
			continue
		}
		if tc.refused != "" {
			if plan.Refusal == nil || !strings.Contains(plan.Refusal.Message, later) {
				t.Errorf("%s: refusal after the probe %v, want one naming %q", tc.sql, plan.Refusal, later)
			}
			continue
		}
		if plan.Refusal != nil || string(plan.Probe[1:]) != tc.probe || plan.Probe[0] != mysql.ComQuery || plan.Show != tc.show {
			t.Errorf("%s: probe %q, show %v, refusal %v; want %q, %v", tc.sql, plan.Probe[1:], plan.Show, plan.Refusal, tc.probe, tc.show)
		}
	}
}

// The plans' WHERE, ORDER BY and LIMIT, run over sessions.
func TestProcesslistPlanAnswers(t *testing.T) {
	now := time.Now()
	procs := []engine.Process{
		{ID: 42, User: "app", Command: "Query", Info: []byte("q"), Self: true, DB: "shop"},
		{ID: 7, User: "App ", Command: "Sleep"},
		{ID: 9, User: "ops", Command: "Sleep", DB: "shop"},
	}
	tests := []struct {
		sql, db string
		want    string // the rows' first column, space-separated
	}{
		{"SELECT ID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()", "", "42"},
		{"SELECT ID FROM information_schema.PROCESSLIST WHERE ID = '7'", "", "7"},
		{"SELECT ID FROM information_schema.PROCESSLIST WHERE USER = 'APP'", "", "42 7"},
		{"SELECT ID FROM information_schema.PROCESSLIST WHERE DB = DATABASE() ORDER BY ID", "shop", "9 42"},
		{"SELECT ID FROM information_schema.PROCESSLIST WHERE DB = DATABASE()", "", ""},
		{"SELECT ID FROM information_schema.PROCESSLIST WHERE DB IS NULL OR (COMMAND = 'query' AND NOT ID IN (1, 2))", "", "42 7"},
		{"SELECT ID FROM information_schema.PROCESSLIST WHERE ID BETWEEN '8' AND 50 ORDER BY ID DESC", "", "42 9"},
		{"SELECT ID FROM information_schema.PROCESSLIST WHERE USER LIKE 'a%' AND COMMAND NOT LIKE 'Q%'", "", "7"},
		{"SELECT ID FROM information_schema.PROCESSLIST WHERE USER LIKE 'o|%' ESCAPE '|'", "", ""},
		{"SELECT ID AS USER FROM information_schema.PROCESSLIST ORDER BY USER", "", "7 9 42"},
		{"SELECT ID AS u FROM information_schema.PROCESSLIST p ORDER BY p.USER DESC, 1 LIMIT 2", "", "9 7"},
		{"SELECT ID FROM information_schema.PROCESSLIST ORDER BY ID LIMIT 1 OFFSET 2", "", "42"},
		{"SELECT ID FROM information_schema.PROCESSLIST WHERE TRUE XOR ID = 7", "", "42 9"},
	}
	for _, tc := range tests {
		plan, err := planPL(t, tc.sql, tc.db)
		if err != nil || plan == nil || plan.Refusal != nil {
			t.Errorf("%s: %v %v", tc.sql, err, plan)
			continue
		}
		def := mysql.AppendLenEncStr(nil, "def")
		for _, f := range []string{"information_schema", "PROCESSLIST", "PROCESSLIST", "ID", "ID"} {
			def = mysql.AppendLenEncStr(def, f)
		}
		def = append(def, 0x0c, 63, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0)
		rs, err := plan.Answer([][]byte{def}, 0, procs, now)
		if err != nil {
			t.Errorf("%s: %v", tc.sql, err)
			continue
		}
		var ids []string
		for _, r := range rs.Rows {
			ids = append(ids, string(r[0]))
		}
		if got := strings.Join(ids, " "); got != tc.want {
			t.Errorf("%s: ids %q, want %q", tc.sql, got, tc.want)
		}
	}
}

// FuzzProcesslist: no input makes planning or answering panic.
func FuzzProcesslist(f *testing.F) {
	for _, s := range []string{
		"SELECT * FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID() ORDER BY 2 DESC LIMIT 1",
		"SELECT ID, USER u FROM information_schema.PROCESSLIST WHERE USER LIKE 'a%' ESCAPE '|' OR NOT (DB IS NULL) XOR TIME BETWEEN '1' AND 2",
		"SHOW FULL PROCESSLIST", "SELECT ID FROM PROCESSLIST WHERE ID IN ('1', NULL, 3.5)",
		"SELECT ID FROM information_schema.PROCESSLIST WHERE (ID = 1) = (USER = 'x') IS NOT TRUE",
	} {
		f.Add(s)
	}
	procs := []engine.Process{{ID: 1, User: "a", Command: "Sleep"}, {ID: 2, User: "b", Command: "Query", Info: []byte("x"), Self: true, DB: "d"}}
	f.Fuzz(func(t *testing.T, sql string) {
		st := router.Classify([]byte(sql))
		plan, err := Processlist(st, []byte(sql), "information_schema", 2)
		if err != nil || plan == nil || plan.Refusal != nil || plan.Show {
			return
		}
		def := mysql.AppendLenEncStr(nil, "def")
		for _, f := range []string{"information_schema", "PROCESSLIST", "PROCESSLIST", "ID", "ID"} {
			def = mysql.AppendLenEncStr(def, f)
		}
		def = append(def, 0x0c, 63, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0)
		_, _ = plan.Answer([][]byte{def, def}, 0, procs, time.Now())
	})
}
