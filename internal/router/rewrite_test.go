package router

import "testing"

func TestSubstitute(t *testing.T) {
	id := &Substitutions{ConnectionID: "42"}
	all := &Substitutions{ConnectionID: "42", FoundRows: "7", RowCount: "-1", Diagnostics: "0"}
	cases := []struct {
		sub      *Substitutions
		in, want string
	}{
		{id, "SELECT CONNECTION_ID()", "SELECT 42"},
		{id, "select connection_id ( ) , 1", "select 42 , 1"},
		{id, "SELECT 'CONNECTION_ID()', `CONNECTION_ID()`, \"x\"", "SELECT 'CONNECTION_ID()', `CONNECTION_ID()`, \"x\""},
		{id, "SELECT 1 -- CONNECTION_ID()\n, CONNECTION_ID()", "SELECT 1 -- CONNECTION_ID()\n, 42"},
		{id, "SELECT /* CONNECTION_ID() */ CONNECTION_ID()", "SELECT /* CONNECTION_ID() */ 42"},
		{id, "SELECT /*!50000 CONNECTION_ID() */", "SELECT /*!50000 42 */"},
		{id, "SELECT MY_CONNECTION_ID(), t.CONNECTION_ID()", "SELECT MY_CONNECTION_ID(), t.CONNECTION_ID()"},
		{id, "SELECT CONNECTION_ID", "SELECT CONNECTION_ID"},
		{id, "KILL CONNECTION_ID()", "KILL 42"},
		{id, "SELECT 'it''s', CONNECTION_ID()", "SELECT 'it''s', 42"},
		{id, "SELECT 'a\\'b', CONNECTION_ID()", "SELECT 'a\\'b', 42"},
		{id, "SELECT 'unterminated CONNECTION_ID()", "SELECT 'unterminated CONNECTION_ID()"},
		{id, "SELECT FOUND_ROWS(), ROW_COUNT(), @@warning_count", "SELECT FOUND_ROWS(), ROW_COUNT(), @@warning_count"},
		{all, "SELECT FOUND_ROWS(), row_count(), @@warning_count, @@session.error_count, @@GLOBAL.max_connections",
			"SELECT 7, -1, 0, 0, @@GLOBAL.max_connections"},
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
		sub := &Substitutions{ConnectionID: "7", FoundRows: "1", RowCount: "2", Diagnostics: "0"}
		out := Substitute(nil, []byte(s), sub)
		if len(out) > len(s) {
			t.Fatalf("output grew: %q -> %q", s, out)
		}
	})
}
