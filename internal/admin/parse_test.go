package admin

import (
	"errors"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		sql  string
		want Statement
	}{
		{"SHOW BACKENDS", Statement{Kind: ShowBackends}},
		{"show backends;", Statement{Kind: ShowBackends}},
		{"  Show\n\tBackends ;  ", Statement{Kind: ShowBackends}},
		{"/* who is up */ SHOW /* really */ BACKENDS -- now\n", Statement{Kind: ShowBackends}},
		{"# a comment\nSHOW SESSIONS", Statement{Kind: ShowSessions}},
		{"SHOW SESSIONS --", Statement{Kind: ShowSessions}},
		{"SHOW QUERY DIGESTS", Statement{Kind: ShowDigests, Limit: -1}},
		{"show query digests order by count", Statement{Kind: ShowDigests, OrderBy: "count", Limit: -1}},
		{"SHOW QUERY DIGESTS ORDER BY P99_MS DESC LIMIT 10;", Statement{Kind: ShowDigests, OrderBy: "p99_ms", Desc: true, Limit: 10}},
		{"SHOW QUERY DIGESTS ORDER BY `total_ms` ASC", Statement{Kind: ShowDigests, OrderBy: "total_ms", Limit: -1}},
		{"SHOW QUERY DIGESTS LIMIT 0", Statement{Kind: ShowDigests, Limit: 0}},
		{"SHOW QUERY DIGESTS LIMIT 99999999999999", Statement{Kind: ShowDigests, Limit: 1<<31 - 1}},
		{"RESET QUERY DIGESTS", Statement{Kind: ResetDigests}},
		{"SHOW SHARDING", Statement{Kind: ShowSharding}},
		{"SHOW CONFIG", Statement{Kind: ShowConfig}},
		{"SHOW VERSION", Statement{Kind: ShowVersion}},
		{"SHOW STATUS", Statement{Kind: ShowStatus}},
		{"SET BACKEND main.127.0.0.1:3306 OFFLINE", Statement{Kind: SetBackend, Cluster: "main", Address: "127.0.0.1:3306", Offline: true}},
		{"set backend main.db-1.example.com:3306 online", Statement{Kind: SetBackend, Cluster: "main", Address: "db-1.example.com:3306"}},
		{"SET BACKEND `main`.`127.0.0.1:3306` OFFLINE", Statement{Kind: SetBackend, Cluster: "main", Address: "127.0.0.1:3306", Offline: true}},
		{"SET BACKEND main.`127.0.0.1:3306` ONLINE;", Statement{Kind: SetBackend, Cluster: "main", Address: "127.0.0.1:3306"}},
		{"SET BACKEND `my.cluster`.10.0.0.2:3306 OFFLINE", Statement{Kind: SetBackend, Cluster: "my.cluster", Address: "10.0.0.2:3306", Offline: true}},
		{"SET BACKEND main.[::1]:3306 OFFLINE", Statement{Kind: SetBackend, Cluster: "main", Address: "[::1]:3306", Offline: true}},
		{"KILL SESSION 42", Statement{Kind: KillSession, SessionID: 42}},
		{"kill session 4294967295;", Statement{Kind: KillSession, SessionID: 4294967295}},
		{"RELOAD CONFIG", Statement{Kind: ReloadConfig}},
		{"SET NAMES utf8mb4", Statement{Kind: SessionSet}},
		{"SET autocommit=1", Statement{Kind: SessionSet}},
		{"SHOW WARNINGS", Statement{Kind: SessionWarnings}},
		{"select @@version_comment limit 1", Statement{Kind: SessionSelect, Items: []SelectItem{{Name: "@@version_comment", Var: "version_comment"}}}},
		{"SELECT DATABASE()", Statement{Kind: SessionSelect, Items: []SelectItem{{Name: "DATABASE()", Func: "DATABASE"}}}},
		{"SELECT @@session.auto_increment_increment AS auto_increment_increment, 1, 'x' y",
			Statement{Kind: SessionSelect, Items: []SelectItem{
				{Name: "auto_increment_increment", Var: "auto_increment_increment"},
				{Name: "1", Literal: "1", Numeric: true},
				{Name: "y", Literal: "x"}}}},
	}
	for _, tt := range tests {
		got, err := Parse(tt.sql)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.sql, err)
			continue
		}
		if !reflect.DeepEqual(*got, tt.want) {
			t.Errorf("Parse(%q) = %+v, want %+v", tt.sql, *got, tt.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ sql, msg, near string }{
		{"SHOW TABLES", "unknown SHOW statement", "TABLES"},
		{"SELECT * FROM t", "unknown statement", "SELECT * FROM t"},
		{"DROP DATABASE x", "unknown statement", "DROP DATABASE x"},
		{"SHOW BACKENDS; SHOW SESSIONS", "unexpected text after the statement (one statement at a time)", "SHOW SESSIONS"},
		{"SHOW BACKENDS extra", "unexpected text after the statement (one statement at a time)", "extra"},
		{"SHOW QUERY", "expected DIGESTS", ""},
		{"SHOW QUERY DIGESTS ORDER count", "expected BY", "count"},
		{"SHOW QUERY DIGESTS ORDER BY", "expected a column after ORDER BY", ""},
		{"SHOW QUERY DIGESTS LIMIT -1", "LIMIT needs a non-negative integer", "-1"},
		{"SHOW QUERY DIGESTS LIMIT x", "LIMIT needs a non-negative integer", "x"},
		{"RESET DIGESTS", "expected QUERY", "DIGESTS"},
		{"SET BACKEND OFFLINE", "expected <cluster>.<host:port> after SET BACKEND", "OFFLINE"},
		{"SET BACKEND main OFFLINE", "expected <cluster>.<host:port> after SET BACKEND", "main OFFLINE"},
		{"SET BACKEND main.h:1", "expected OFFLINE or ONLINE", ""},
		{"SET BACKEND main.h:1 DOWN", "expected OFFLINE or ONLINE", "DOWN"},
		{"SET BACKEND", "expected <cluster>.<host:port> after SET BACKEND", ""},
		{"SET BACKEND `main`.", "expected <cluster>.<host:port> after SET BACKEND", "`main`."},
		{"KILL 5", "expected SESSION", "5"},
		{"KILL SESSION 0", "KILL SESSION needs a connection id from SHOW SESSIONS", "0"},
		{"KILL SESSION 4294967296", "KILL SESSION needs a connection id from SHOW SESSIONS", "4294967296"},
		{"KILL SESSION abc", "KILL SESSION needs a non-negative integer", "abc"},
		{"RELOAD", "expected CONFIG", ""},
		{"SHOW /* open", "unterminated comment", "/* open"},
		{"SET BACKEND `main.h:1 OFFLINE", "unterminated quote", "`main.h:1 OFFLINE"},
		{"SELECT @@", "expected a variable name after @@", "@@"},
		{"SELECT NOW(1)", "unknown statement", "SELECT NOW(1)"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.sql)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) = %v, want a ParseError", tt.sql, err)
			continue
		}
		if pe.Msg != tt.msg || pe.Near != tt.near {
			t.Errorf("Parse(%q): %q near %q, want %q near %q", tt.sql, pe.Msg, pe.Near, tt.msg, tt.near)
		}
		if !strings.Contains(pe.Error(), "SHOW BACKENDS") || !strings.Contains(pe.Error(), "RELOAD CONFIG") {
			t.Errorf("Parse(%q): message %q does not list the statements", tt.sql, pe.Error())
		}
	}
	for _, empty := range []string{"", "  ", ";", "-- nothing\n", "/* */"} {
		_, err := Parse(empty)
		var pe *ParseError
		if empty == ";" {
			if !errors.As(err, &pe) || pe.Empty {
				t.Errorf("Parse(%q) = %v, want an unknown statement", empty, err)
			}
			continue
		}
		if !errors.As(err, &pe) || !pe.Empty {
			t.Errorf("Parse(%q) = %v, want the empty query", empty, err)
		}
	}
}

// Whatever the input, Parse returns a statement or an error, quickly.
func TestParsePathological(t *testing.T) {
	inputs := []string{
		strings.Repeat("SHOW ", 10000),
		strings.Repeat("/*", 5000),
		strings.Repeat("`", 4001),
		strings.Repeat("'", 4001),
		"SET BACKEND " + strings.Repeat("a.", 20000) + " OFFLINE",
		"SELECT " + strings.Repeat("@@x, ", 10000) + "1",
		strings.Repeat("x", maxStatement+1),
		"SHOW\x00BACKENDS",
		"SHOW BACKENDS\xff\xfe",
		"SET BACKEND \xff.\xfe OFFLINE",
		"KILL SESSION 99999999999999999999999999",
	}
	r := rand.New(rand.NewSource(1))
	alphabet := []byte("SHOWBACKENDSsessions `'\"@.;:-#/*()0123456789\n\t\\")
	for range 2000 {
		b := make([]byte, r.Intn(60))
		for i := range b {
			b[i] = alphabet[r.Intn(len(alphabet))]
		}
		inputs = append(inputs, string(b))
	}
	for _, in := range inputs {
		st, err := Parse(in)
		if (st == nil) == (err == nil) {
			t.Errorf("Parse(%.60q) = %v, %v: want exactly one", in, st, err)
		}
	}
}

func TestParseOrder(t *testing.T) {
	for in, want := range map[string]struct {
		col  string
		desc bool
	}{"count": {"count", false}, "P99_MS desc": {"p99_ms", true}, " last_seen ASC ": {"last_seen", false}} {
		col, desc, err := ParseOrder(in)
		if err != nil || col != want.col || desc != want.desc {
			t.Errorf("ParseOrder(%q) = %q, %v, %v", in, col, desc, err)
		}
	}
	for _, bad := range []string{"", "count desc x", "(", "count,desc"} {
		if _, _, err := ParseOrder(bad); err == nil {
			t.Errorf("ParseOrder(%q) accepted", bad)
		}
	}
}
