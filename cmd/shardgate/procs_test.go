package main

import "testing"

func TestResolveGOMAXPROCS(t *testing.T) {
	for _, tc := range []struct {
		configured int
		env        bool
		def, want  int
	}{
		{0, false, 2, 8},  // automatic: 4 per CPU
		{0, true, 3, 3},   // $GOMAXPROCS wins over automatic
		{5, true, 3, 5},   // the config file wins over $GOMAXPROCS
		{1, false, 16, 1}, // an explicit 1
	} {
		if got := resolveGOMAXPROCS(tc.configured, tc.env, tc.def); got != tc.want {
			t.Errorf("resolveGOMAXPROCS(%d, %v, %d) = %d, want %d", tc.configured, tc.env, tc.def, got, tc.want)
		}
	}
}
