package admin

import (
	"errors"
	"log/slog"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/frontend"
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
		{"show transactions", Statement{Kind: ShowTransactions}},
		{"SHOW PROXIES", Statement{Kind: ShowProxies}},
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
		{"SET NAMES 'utf8mb4' COLLATE 'utf8mb4_general_ci'", Statement{Kind: SessionSet}},
		{"SET NAMES DEFAULT", Statement{Kind: SessionSet}},
		{"SET CHARACTER SET utf8", Statement{Kind: SessionSet}},
		{"SET CHARSET 'latin1'", Statement{Kind: SessionSet}},
		{"SET autocommit=1", Statement{Kind: SessionSet}},
		{"SET AUTOCOMMIT = 0", Statement{Kind: SessionSet}},
		{"SET character_set_results = NULL", Statement{Kind: SessionSet}},
		{"SET sql_mode='STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION'", Statement{Kind: SessionSet}},
		{"SET SESSION sql_mode = CONCAT(@@sql_mode, ',STRICT_TRANS_TABLES')", Statement{Kind: SessionSet}},
		{"SET @@session.autocommit = ON, @@GLOBAL.x = -1, LOCAL y = DEFAULT, `z` = 'v'", Statement{Kind: SessionSet}},
		{"set time_zone = '+00:00', net_write_timeout=600;", Statement{Kind: SessionSet}},
		{"SET TRANSACTION ISOLATION LEVEL READ COMMITTED", Statement{Kind: SessionSet}},
		{"SET SESSION TRANSACTION READ ONLY, ISOLATION LEVEL REPEATABLE READ", Statement{Kind: SessionSet}},
		{"SET GLOBAL TRANSACTION ISOLATION LEVEL SERIALIZABLE", Statement{Kind: SessionSet}},
		{"SELECT 1 FROM DUAL", Statement{Kind: SessionSelect, Items: []SelectItem{{Name: "1", Literal: "1", Numeric: true}}}},
		{"SHOW WARNINGS", Statement{Kind: SessionWarnings}},
		{"select @@version_comment limit 1", Statement{Kind: SessionSelect, Items: []SelectItem{{Name: "@@version_comment", Var: "version_comment"}}}},
		{"SELECT DATABASE()", Statement{Kind: SessionSelect, Items: []SelectItem{{Name: "DATABASE()", Func: "DATABASE"}}}},
		{"SELECT @@session.auto_increment_increment AS auto_increment_increment, 1, 'x' y",
			Statement{Kind: SessionSelect, Items: []SelectItem{
				{Name: "auto_increment_increment", Var: "auto_increment_increment"},
				{Name: "1", Literal: "1", Numeric: true},
				{Name: "y", Literal: "x"}}}},
	}
	tests = append(tests, connectorJ...)
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

// connectorJ are the statements MySQL Connector/J sends on connecting
// (8.x and 9.x; 5.1 asks for a few other variables the same way).
var connectorJ = []struct {
	sql  string
	want Statement
}{
	{"/* mysql-connector-j-9.5.0 (Revision: a7b3c94f50efbddb9f0dd69b3e0d1aaa25305cd6) */SELECT @@session.auto_increment_increment AS auto_increment_increment, " +
		"@@character_set_client AS character_set_client, @@character_set_connection AS character_set_connection, " +
		"@@character_set_results AS character_set_results, @@character_set_server AS character_set_server, " +
		"@@collation_server AS collation_server, @@collation_connection AS collation_connection, @@init_connect AS init_connect, " +
		"@@interactive_timeout AS interactive_timeout, @@license AS license, @@lower_case_table_names AS lower_case_table_names, " +
		"@@max_allowed_packet AS max_allowed_packet, @@net_write_timeout AS net_write_timeout, @@performance_schema AS performance_schema, " +
		"@@sql_mode AS sql_mode, @@system_time_zone AS system_time_zone, @@time_zone AS time_zone, " +
		"@@transaction_isolation AS transaction_isolation, @@wait_timeout AS wait_timeout",
		Statement{Kind: SessionSelect, Items: connectorJItems(
			"auto_increment_increment", "character_set_client", "character_set_connection", "character_set_results",
			"character_set_server", "collation_server", "collation_connection", "init_connect", "interactive_timeout",
			"license", "lower_case_table_names", "max_allowed_packet", "net_write_timeout", "performance_schema",
			"sql_mode", "system_time_zone", "time_zone", "transaction_isolation", "wait_timeout")}},
	{"/* mysql-connector-java-5.1.49 ( Revision: ad86f36e100e104cd926c6b81c8cab9565750116 ) */SELECT  @@session.auto_increment_increment AS auto_increment_increment, " +
		"@@net_buffer_length AS net_buffer_length, @@query_cache_size AS query_cache_size, @@query_cache_type AS query_cache_type, " +
		"@@have_query_cache AS have_query_cache, @@tx_isolation AS tx_isolation",
		Statement{Kind: SessionSelect, Items: connectorJItems("auto_increment_increment", "net_buffer_length",
			"query_cache_size", "query_cache_type", "have_query_cache", "tx_isolation")}},
	{"SET NAMES utf8mb4", Statement{Kind: SessionSet}},
	{"SET character_set_results = NULL", Statement{Kind: SessionSet}},
	{"SET autocommit=1", Statement{Kind: SessionSet}},
	{"SELECT @@session.transaction_read_only", Statement{Kind: SessionSelect,
		Items: []SelectItem{{Name: "@@session.transaction_read_only", Var: "transaction_read_only"}}}},
	{"/* ping */ SELECT 1", Statement{Kind: SessionSelect, Items: []SelectItem{{Name: "1", Literal: "1", Numeric: true}}}},
	{"SHOW WARNINGS", Statement{Kind: SessionWarnings}},
}

// connectorJItems are the items "@@v AS v" for each name.
func connectorJItems(names ...string) []SelectItem {
	items := make([]SelectItem, len(names))
	for i, n := range names {
		items[i] = SelectItem{Name: n, Var: n}
	}
	return items
}

func TestParseErrors(t *testing.T) {
	const (
		multi  = "more than one statement: the admin port runs one statement per query"
		notVar = "not a session variable; a server is taken out of service with " + setBackendSyntax
	)
	tests := []struct{ sql, msg, near string }{
		{"SHOW TABLES", "unknown SHOW statement", "TABLES"},
		{"SELECT * FROM t", "unknown statement", "SELECT * FROM t"},
		{"DROP DATABASE x", "unknown statement", "DROP DATABASE x"},
		{"SHOW BACKENDS; SHOW SESSIONS", multi, "SHOW SESSIONS"},
		{"SET autocommit=1; RELOAD CONFIG", multi, "RELOAD CONFIG"},
		{"SET @@x = 1; KILL SESSION 1", multi, "KILL SESSION 1"},
		{"SET NAMES 'a;b'; SET BACKEND main.h:1 OFFLINE", multi, "SET BACKEND main.h:1 OFFLINE"},
		{"SHOW BACKENDS;;", multi, ";"},
		{"SET BACKENDS main.db1:3306 OFFLINE", notVar, "BACKENDS main.db1:3306 OFFLINE"},
		{"SET backends = 1", notVar, "backends = 1"},
		{"SET SESSION backend_x = 1", notVar, "backend_x = 1"},
		{"SET autocommit = 1, BACKEND main.h:1 OFFLINE", notVar, "BACKEND main.h:1 OFFLINE"},
		{"SET @@backend = 1", notVar, "@@backend = 1"},
		{"SET autocommit", "expected = after the variable autocommit", ""},
		{"SET autocommit 1", "expected = after the variable autocommit", "1"},
		{"SET autocommit =", "expected a value", ""},
		{"SET autocommit = 1 2", "unexpected text after the statement (one statement at a time)", "2"},
		{"SET x = -ON", "expected a number after the sign", "ON"},
		{"SET x = f(1, ", "expected a value", ""},
		{"SET x = (1, 2)", "expected )", ", 2)"},
		{"SET x = " + strings.Repeat("f(", 20) + "1" + strings.Repeat(")", 20), "value nested too deeply", strings.Repeat("f(", 11) + "1" + strings.Repeat(")", 20)},
		{"SET @v = 1", "expected a session variable, NAMES, CHARACTER SET or TRANSACTION after SET, or " + setBackendSyntax, "@v = 1"},
		{"SET 1 = 1", "expected a session variable, NAMES, CHARACTER SET or TRANSACTION after SET, or " + setBackendSyntax, "1 = 1"},
		{"SET", "expected a session variable, NAMES, CHARACTER SET or TRANSACTION after SET, or " + setBackendSyntax, ""},
		{"SET NAMES", "SET NAMES needs a character set or collation name", ""},
		{"SET NAMES utf8mb4 COLLATE", "COLLATE needs a character set or collation name", ""},
		{"SET CHARACTER utf8", "expected SET", "utf8"},
		{"SET TRANSACTION", "expected ISOLATION LEVEL, READ WRITE or READ ONLY after SET TRANSACTION", ""},
		{"SET TRANSACTION READ", "expected WRITE or ONLY after READ", ""},
		{"SET TRANSACTION ISOLATION LEVEL DIRTY", "expected READ UNCOMMITTED, READ COMMITTED, REPEATABLE READ or SERIALIZABLE", "DIRTY"},
		{"SELECT 1 FROM t", "expected DUAL", "t"},
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

// The admin port answers each statement Connector/J sends on connecting,
// every variable it reads included.
func TestAnswerConnectorJ(t *testing.T) {
	h := NewHandler(nil, "5.5.5-10.11.0-MariaDB", slog.New(slog.DiscardHandler))
	for _, tt := range connectorJ {
		res, err := h.Answer(frontend.LocalClient{ConnID: 7, User: "ops", Addr: "127.0.0.1:5000"}, tt.sql)
		if err != nil {
			t.Errorf("%.60s: %v", tt.sql, err)
			continue
		}
		if tt.want.Kind == SessionSelect && len(res.Columns) != len(tt.want.Items) {
			t.Errorf("%.60s: %d columns, want %d", tt.sql, len(res.Columns), len(tt.want.Items))
		}
	}
}
