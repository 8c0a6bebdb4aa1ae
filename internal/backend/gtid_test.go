package backend

import "testing"

func TestGTIDCovered(t *testing.T) {
	for _, tc := range []struct {
		pos, gtid string
		want      bool
	}{
		{"0-1-100", "0-1-100", true},
		{"0-1-100", "0-1-99", true},
		{"0-1-100", "0-1-101", false},
		{"0-2-100", "0-1-50", true}, // same domain, another server: sequence numbers still order
		{"0-1-100,1-2-7", "1-2-7", true},
		{"0-1-100, 1-2-7", "1-2-8", false},
		{"0-1-100", "1-1-1", false}, // domain unknown to the position
		{"", "0-1-1", false},
		{"0-1-100", "", false},
		{"garbage", "0-1-1", false},
		{"0-1-100", "0-1-x", false},
		{"0-1-99999999999999999999", "0-1-1", false}, // overflow is malformed
		{"0-1-18446744073709551615", "0-1-18446744073709551615", true},
	} {
		if got := GTIDCovered(tc.pos, tc.gtid); got != tc.want {
			t.Errorf("GTIDCovered(%q, %q) = %v, want %v", tc.pos, tc.gtid, got, tc.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { GTIDCovered("0-1-100,1-2-7,2-3-4", "2-3-4") }); n != 0 {
		t.Errorf("GTIDCovered allocates %v times", n)
	}
}
