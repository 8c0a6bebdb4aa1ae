package router

import "testing"

func TestReplaceConnectionID(t *testing.T) {
	cases := []struct{ in, want string }{
		{"SELECT CONNECTION_ID()", "SELECT 42"},
		{"select connection_id ( ) , 1", "select 42 , 1"},
		{"SELECT 'CONNECTION_ID()', `CONNECTION_ID()`, \"x\"", "SELECT 'CONNECTION_ID()', `CONNECTION_ID()`, \"x\""},
		{"SELECT 1 -- CONNECTION_ID()\n, CONNECTION_ID()", "SELECT 1 -- CONNECTION_ID()\n, 42"},
		{"SELECT /* CONNECTION_ID() */ CONNECTION_ID()", "SELECT /* CONNECTION_ID() */ 42"},
		{"SELECT /*!50000 CONNECTION_ID() */", "SELECT /*!50000 42 */"},
		{"SELECT MY_CONNECTION_ID(), t.CONNECTION_ID()", "SELECT MY_CONNECTION_ID(), t.CONNECTION_ID()"},
		{"SELECT CONNECTION_ID", "SELECT CONNECTION_ID"},
		{"KILL CONNECTION_ID()", "KILL 42"},
		{"SELECT 'it''s', CONNECTION_ID()", "SELECT 'it''s', 42"},
		{"SELECT 'a\\'b', CONNECTION_ID()", "SELECT 'a\\'b', 42"},
		{"SELECT 'unterminated CONNECTION_ID()", "SELECT 'unterminated CONNECTION_ID()"},
	}
	for _, c := range cases {
		if got := string(ReplaceConnectionID(nil, []byte(c.in), 42)); got != c.want {
			t.Errorf("%q: got %q want %q", c.in, got, c.want)
		}
	}
}

func FuzzReplaceConnectionID(f *testing.F) {
	f.Add("SELECT CONNECTION_ID()")
	f.Add("'\\")
	f.Fuzz(func(t *testing.T, s string) {
		out := ReplaceConnectionID(nil, []byte(s), 7)
		if len(out) > len(s) {
			t.Fatalf("output grew: %q -> %q", s, out)
		}
	})
}
