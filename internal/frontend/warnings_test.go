package frontend

import (
	"fmt"
	"testing"
)

// TestDiagnosticsLimit: SHOW WARNINGS … LIMIT as the server reads it:
// LIMIT count, LIMIT offset, count, LIMIT count OFFSET offset.
func TestDiagnosticsLimit(t *testing.T) {
	rows := [][]string{{"1"}, {"2"}, {"3"}, {"4"}, {"5"}}
	for _, tc := range []struct {
		sql  string
		want string
	}{
		{"SHOW WARNINGS", "[[1] [2] [3] [4] [5]]"},
		{"SHOW WARNINGS LIMIT 2", "[[1] [2]]"},
		{"SHOW WARNINGS LIMIT 1, 3", "[[2] [3] [4]]"},
		{"SHOW WARNINGS LIMIT 1,3;", "[[2] [3] [4]]"},
		{"SHOW WARNINGS LIMIT 3 OFFSET 3", "[[4] [5]]"},
		{"SHOW WARNINGS LIMIT 0", "[]"},
		{"SHOW WARNINGS LIMIT 9, 2", "[]"},
		{"SHOW ERRORS LIMIT 10", "[[1] [2] [3] [4] [5]]"},
	} {
		if got := fmt.Sprint(diagnosticsLimit([]byte(tc.sql), rows)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.sql, got, tc.want)
		}
	}
}
