package planner

import (
	"slices"
	"testing"

	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sharding"
)

// TestRouteReadsLiteralsInTheirCharset: a string literal is read in the
// session's character set (its bytes as the client sent them), or in the
// one its introducer names, before it is weighed: 'Zoë' sent by a latin1
// client (5A 6F EB) routes where the utf8mb4 'Zoë' does, and latin1 bytes
// that happen to be valid UTF-8 ('Ã«', C3 AB) route as what they are in
// latin1, not as 'ë'. Through the shape (placeholders, as sessions plan)
// and as written (a plan parsed Exact).
func TestRouteReadsLiteralsInTheirCharset(t *testing.T) {
	s := fixture(t)
	zoe := nameSub(t, "zoë")
	mojibake := nameSub(t, "zoÃ«")
	if zoe == mojibake {
		t.Fatal("the test's two strings share a sub-table: it would prove nothing")
	}
	every := []int{0, 1, 2, 3}
	utf8, latin1, binary, other := sharding.CharsetUTF8MB4, sharding.CharsetLatin1, sharding.CharsetBinary, sharding.CharsetOther
	for _, c := range []struct {
		cs   sharding.Charset
		sql  string
		want []int
	}{
		{utf8, "select * from sf_name where name = 'Zo\xc3\xab'", []int{zoe}},
		{utf8, "select * from sf_name where name = 'Zo\xeb'", every}, // not utf8mb4: no row matches
		{latin1, "select * from sf_name where name = 'Zo\xeb'", []int{zoe}},
		{latin1, "select * from sf_name where name = 'Zo\xc3\xab'", []int{mojibake}},
		{latin1, "select * from sf_name where name in ('Zo\xeb', 'ZO\xcb')", []int{zoe}},
		{latin1, "select * from sf_name where name = _utf8mb4'Zo\xc3\xab'", []int{zoe}},
		{utf8, "select * from sf_name where name = _latin1'Zo\xeb'", []int{zoe}},
		{utf8, "select * from sf_name where name = _latin1'Zo\xc3\xab'", []int{mojibake}},
		{latin1, "select * from sf_name where name = N'Zo\xc3\xab'", []int{zoe}}, // N'…' is utf8mb3 whatever the client's
		{utf8, "select * from sf_name where name = N'x\xf0\x9f\x98\x80'", every}, // not utf8mb3
		{latin1, "select * from sf_name where name = _binary'Zo\xc3\xab'", []int{zoe}},
		{latin1, "select * from sf_name where name = X'5A6FC3AB'", []int{zoe}},
		{latin1, "select * from sf_name where name = _latin1 X'5A6FEB'", []int{zoe}},
		{latin1, "select * from sf_name where name = _latin1 0x5A6FEB", []int{zoe}},
		{binary, "select * from sf_name where name = 'Zo\xc3\xab'", []int{zoe}},
		{other, "select * from sf_name where name = 'Zo\xc3\xab'", every},
		{other, "select * from sf_name where name = 'zoe'", []int{nameSub(t, "zoe")}},
		{latin1, "select * from sf_user where id = '7'", []int{h(t, 7)}},
		{latin1, "select * from sf_uname where name = 'STRA\xdfE'", []int{collSub(t, unicodeCI(t), "strasse")}},
	} {
		for _, exact := range []bool{false, true} {
			sql := []byte(c.sql)
			var sh router.Shape
			router.ScanShape(sql, &sh)
			p := NewParser()
			parsed, err := p.Parse(sql, &sh)
			if exact {
				parsed, err = p.ParseExact(sql, &sh)
			}
			if err != nil {
				t.Fatalf("%q: %v", c.sql, err)
			}
			an, err := Analyze(parsed.Stmt, s, "shop")
			if err != nil {
				t.Fatalf("%q: %v", c.sql, err)
			}
			v := &TextValues{Charset: c.cs}
			v.Reset(sql, &sh)
			tg, err := an.Route(v)
			if err != nil {
				t.Fatalf("%q: %v", c.sql, err)
			}
			var got []int
			for i := tg.Next(0); i >= 0; i = tg.Next(i + 1) {
				got = append(got, i)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%q in %s (exact parse %v): sub-tables %v, want %v", c.sql, c.cs, exact, got, c.want)
			}
		}
	}
}

// TestParamsInTheSessionCharset: a string parameter is in the session's
// character set, a BLOB one a binary string.
func TestParamsInTheSessionCharset(t *testing.T) {
	s := fixture(t)
	sql := []byte("select * from sf_name where name = ?")
	var sh router.Shape
	router.ScanShape(sql, &sh)
	parsed, err := NewParser().Parse(sql, &sh)
	if err != nil {
		t.Fatal(err)
	}
	an, err := Analyze(parsed.Stmt, s, "shop")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cs     sharding.Charset
		val    string
		binary bool
		want   string
	}{
		{sharding.CharsetLatin1, "Zo\xeb", false, "zoë"},
		{sharding.CharsetLatin1, "Zo\xc3\xab", false, "zoÃ«"},
		{sharding.CharsetLatin1, "Zo\xc3\xab", true, "zoë"},
		{sharding.CharsetUTF8MB4, "Zo\xc3\xab", false, "zoë"},
	} {
		var v ExecValues
		v.Charset = c.cs
		v.Reset(sql, &sh)
		v.ResetParams(1)
		v.SetString(0, []byte(c.val), c.binary)
		tg, err := an.Route(&v)
		if err != nil {
			t.Fatal(err)
		}
		if want := nameSub(t, c.want); tg.Len() != 1 || tg.Next(0) != want {
			t.Errorf("%q (binary %v) in %s: %d sub-tables from %d, want %d", c.val, c.binary, c.cs, tg.Len(), tg.Next(0), want)
		}
	}
}
