package router

import (
	"strings"
	"testing"
)

func TestSubstitute(t *testing.T) {
	id := &Substitutions{ConnectionID: "42"}
	all := &Substitutions{ConnectionID: "42", FoundRows: "7", RowCount: "-1", WarningCount: "0", ErrorCount: "0"}
	cases := []struct {
		sub      *Substitutions
		in, want string
	}{
		{id, "SELECT CONNECTION_ID()", "SELECT 42 AS `CONNECTION_ID()`"},
		{id, "select connection_id ( ) , 1", "select 42 AS `connection_id ( )` , 1"},
		{id, "SELECT 'CONNECTION_ID()', `CONNECTION_ID()`, \"x\"", "SELECT 'CONNECTION_ID()', `CONNECTION_ID()`, \"x\""},
		{id, "SELECT 1 -- CONNECTION_ID()\n, CONNECTION_ID()", "SELECT 1 -- CONNECTION_ID()\n, 42 AS `CONNECTION_ID()`"},
		{id, "SELECT /* CONNECTION_ID() */ CONNECTION_ID()", "SELECT /* CONNECTION_ID() */ 42 AS `CONNECTION_ID()`"},
		{id, "SELECT /*!50000 CONNECTION_ID() */", "SELECT /*!50000 42 AS `CONNECTION_ID()` */"},
		{id, "SELECT MY_CONNECTION_ID(), t.CONNECTION_ID()", "SELECT MY_CONNECTION_ID(), t.CONNECTION_ID()"},
		{id, "SELECT CONNECTION_ID", "SELECT CONNECTION_ID"},
		{id, "KILL CONNECTION_ID()", "KILL 42"},
		{id, "SELECT 'it''s', CONNECTION_ID()", "SELECT 'it''s', 42 AS `CONNECTION_ID()`"},
		{id, "SELECT 'a\\'b', CONNECTION_ID()", "SELECT 'a\\'b', 42 AS `CONNECTION_ID()`"},
		{id, "SELECT 'unterminated CONNECTION_ID()", "SELECT 'unterminated CONNECTION_ID()"},
		{id, "SELECT FOUND_ROWS(), ROW_COUNT(), @@warning_count", "SELECT FOUND_ROWS(), ROW_COUNT(), @@warning_count"},
		{&Substitutions{LastInsertID: "9"}, "SELECT LAST_INSERT_ID(), LAST_INSERT_ID(5), last_insert_id ( ) + 1",
			"SELECT 9 AS `LAST_INSERT_ID()`, LAST_INSERT_ID(5), 9 + 1 AS `last_insert_id ( ) + 1`"},
		{&Substitutions{LastInsertID: "9"}, "INSERT INTO t VALUES (LAST_INSERT_ID(), 'LAST_INSERT_ID()')", "INSERT INTO t VALUES (9, 'LAST_INSERT_ID()')"},
		{&Substitutions{WaitTimeout: "77", InteractiveTimeout: "5"}, "SELECT @@wait_timeout, @@SESSION.wait_timeout, @@local.Wait_Timeout + 1, @@global.wait_timeout, @@interactive_timeout",
			"SELECT 77 AS `@@wait_timeout`, 77 AS `@@SESSION.wait_timeout`, 77 + 1 AS `@@local.Wait_Timeout + 1`, @@global.wait_timeout, 5 AS `@@interactive_timeout`"},
		{&Substitutions{WaitTimeout: "77"}, "SELECT @@interactive_timeout, '@@wait_timeout'", "SELECT @@interactive_timeout, '@@wait_timeout'"},
		{all, "SELECT FOUND_ROWS(), row_count(), @@warning_count, @@session.error_count, @@GLOBAL.max_connections",
			"SELECT 7 AS `FOUND_ROWS()`, -1 AS `row_count()`, 0 AS `@@warning_count`, 0 AS `@@session.error_count`, @@GLOBAL.max_connections"},
		// Only items of the select list without an alias are named, and
		// only those that end in an expression.
		{id, "SELECT CONNECTION_ID() AS id, CONNECTION_ID() id, CONNECTION_ID() 'q'", "SELECT 42 AS id, 42 id, 42 'q'"},
		{id, "SELECT CONNECTION_ID() + 0, CONNECTION_ID()+0x1f, CONNECTION_ID() * 1.5e3", "SELECT 42 + 0 AS `CONNECTION_ID() + 0`, 42+0x1f AS `CONNECTION_ID()+0x1f`, 42 * 1.5e3 AS `CONNECTION_ID() * 1.5e3`"},
		{id, "SELECT DISTINCT SQL_NO_CACHE CONNECTION_ID() FROM dual WHERE CONNECTION_ID() > 0", "SELECT DISTINCT SQL_NO_CACHE 42 AS `CONNECTION_ID()` FROM dual WHERE 42 > 0"},
		{id, "SELECT (SELECT CONNECTION_ID() FROM t), IF(CONNECTION_ID(), 1, 2)", "SELECT (SELECT 42 FROM t) AS `(SELECT CONNECTION_ID() FROM t)`, IF(42, 1, 2) AS `IF(CONNECTION_ID(), 1, 2)`"},
		{id, "SELECT CONNECTION_ID() INTO @x", "SELECT 42 AS `CONNECTION_ID()` INTO @x"},
		{id, "SELECT 1; select\nconnection_id()\n;", "SELECT 1; select\n42 AS `connection_id()`\n;"},
		{id, "SELECT CONNECTION_ID() + `a``b`, CONNECTION_ID() + x", "SELECT 42 + `a``b`, 42 + x"},
		// Comments: MariaDB's names keep those inside the item and, after a
		// ',', those before it.
		{id, "SELECT /* a */ CONNECTION_ID() /* b */ + 0 /* c */, /* d */ CONNECTION_ID() -- e\n",
			"SELECT /* a */ 42 /* b */ + 0 AS `CONNECTION_ID() /* b */ + 0` /* c */, /* d */ 42 AS `/* d */ CONNECTION_ID()` -- e\n"},
		{id, "SELECT /*!50000 CONNECTION_ID() */, /*M!100000 CONNECTION_ID() */, CONNECTION_ID() /*!50000 + 1 */",
			"SELECT /*!50000 42 AS `CONNECTION_ID()` */, /*M!100000 42 */, 42 /*!50000 + 1 */"},
		{id, "SELECT /*!50000 CONNECTION_ID() */ + 1, /*!50000 CONNECTION_ID() */", "SELECT /*!50000 42 */ + 1, /*!50000 42 */"},
		{id, "SELECT /*Mention CONNECTION_ID() */ 1", "SELECT /*Mention CONNECTION_ID() */ 1"},
		{id, "SELECT CONNECTION_ID() - `x`(1)", "SELECT 42 - `x`(1) AS `CONNECTION_ID() - ``x``(1)`"},
		{id, "SELECT * FROM t WHERE id = CONNECTION_ID()", "SELECT * FROM t WHERE id = 42"},
		{id, "(SELECT CONNECTION_ID())", "(SELECT 42)"},
		{id, "DO CONNECTION_ID(); SELECT CONNECTION_ID()", "DO 42; SELECT 42 AS `CONNECTION_ID()`"},
		{id, "SELECT CONNECTION_ID() UNION SELECT CONNECTION_ID()", "SELECT 42 AS `CONNECTION_ID()` UNION SELECT 42"},
		{all, "SELECT @found_rows, @@found_rows, x.ROW_COUNT()", "SELECT @found_rows, @@found_rows, x.ROW_COUNT()"},
	}
	for _, c := range cases {
		if got := string(Substitute(nil, []byte(c.in), c.sub)); got != c.want {
			t.Errorf("%q: got %q want %q", c.in, got, c.want)
		}
	}
}

func FuzzSubstitute(f *testing.F) {
	f.Add("SELECT CONNECTION_ID(), @@warning_count")
	f.Add("'\\")
	f.Add("@@")
	f.Fuzz(func(t *testing.T, s string) {
		sub := &Substitutions{ConnectionID: "7", FoundRows: "1", RowCount: "2", WarningCount: "0", ErrorCount: "0"}
		out := Substitute(nil, []byte(s), sub)
		// Values are no longer than their expressions; an alias at most
		// doubles its item's text, plus " AS ``".
		if len(out) > 3*len(s)+6*(1+strings.Count(s, ",")+strings.Count(s, ";")) {
			t.Fatalf("output grew too much: %q -> %q", s, out)
		}
		if none := Substitute(nil, []byte(s), &Substitutions{}); string(none) != s {
			t.Fatalf("nothing to substitute, yet %q -> %q", s, none)
		}
	})
}
