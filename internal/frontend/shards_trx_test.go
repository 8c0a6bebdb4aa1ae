package frontend

import "testing"

func TestPlainBegin(t *testing.T) {
	for sql, want := range map[string]bool{
		"BEGIN": true, "begin": true, " Begin ;": true, "BEGIN WORK": true, "start transaction": true,
		"START  TRANSACTION\tREAD WRITE": true, "START TRANSACTION READ ONLY;": true,
		"START TRANSACTION WITH CONSISTENT SNAPSHOT": false, "START TRANSACTION READ ONLY, WITH CONSISTENT SNAPSHOT": false,
		"BEGIN /* x */": false, "BEGIN -- x": false, "BEGIN # x": false, "BEGINX": false, "START": false,
		"BEGIN WORK NOW": false, "START TRANSACTION READ": false, "": false, "XA START 'x'": false,
	} {
		if got := plainBegin([]byte(sql)); got != want {
			t.Errorf("plainBegin(%q) = %v, want %v", sql, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { plainBegin([]byte("START TRANSACTION READ WRITE")) }); n != 0 {
		t.Errorf("plainBegin allocates %v times", n)
	}
}
