package planner

import "testing"

func TestLikeMatch(t *testing.T) {
	for _, c := range []struct {
		name, pattern string
		want          bool
	}{
		{"sf_user", "sf_user", true},
		{"sf_user", "sf\\_user", true},
		{"sfXuser", "sf\\_user", false},
		{"sfXuser", "sf_user", true},
		{"sf_user", "SF_USER", false}, // case-sensitive, as lower_case_table_names = 0
		{"sf_user", "%", true},
		{"", "%", true},
		{"", "_", false},
		{"t", "t%", true},
		{"t1", "t_", true},
		{"t12", "t_", false},
		{"abcabd", "%abd", true},
		{"abcab", "%abd", false},
		{"zé", "z_", true},
		{"a%b", "a\\%b", true},
		{"axb", "a\\%b", false},
	} {
		if got := likeMatch([]byte(c.name), []byte(c.pattern)); got != c.want {
			t.Errorf("likeMatch(%q, %q) = %v, want %v", c.name, c.pattern, got, c.want)
		}
	}
}
