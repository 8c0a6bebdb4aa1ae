package xa

import (
	"strconv"
	"strings"
	"testing"
)

func TestXIDRoundTrip(t *testing.T) {
	x := XID{Boot: NewBoot(), Seq: 1<<64 - 1, Coordinator: "shard:eu-1", Branch: 999, Instance: "proxy-7.example-6033", Schema: "shop"}
	if len(x.Boot) != bootLen {
		t.Fatalf("boot id %q: length %d, want %d", x.Boot, len(x.Boot), bootLen)
	}
	got, err := ParseXID(x.Gtrid(), x.Bqual())
	if err != nil || got != x {
		t.Fatalf("ParseXID(%q, %q) = %+v, %v; want %+v", x.Gtrid(), x.Bqual(), got, err, x)
	}
	if len(x.Gtrid()) > maxGtrid || len(x.Bqual()) > maxBqual {
		t.Fatalf("ids too long: %q %q", x.Gtrid(), x.Bqual())
	}
	if !strings.HasSuffix(x.SQL(), ","+strconv.Itoa(FormatID)) || !strings.HasPrefix(x.SQL(), "X'") {
		t.Fatalf("SQL form %q", x.SQL())
	}
}

func TestParseXIDRefusesOthers(t *testing.T) {
	for _, c := range [][2]string{{"foo", "bar"}, {"sg1:abc:zz", "1:i:s"}, {"sg1:abc:!!:c", "1:i:s"}, {"sg1:abc:1:c", "x:i:s"}, {"sg1:abc:1:c", "1:i"}} {
		if x, err := ParseXID(c[0], c[1]); err == nil {
			t.Errorf("ParseXID(%q, %q) = %+v, want an error", c[0], c[1], x)
		}
	}
}

func TestCheckNamesKeepsIDsWithinXALimits(t *testing.T) {
	long := strings.Repeat("c", maxGtrid-gtridOverhead)
	if err := CheckNames("i", long, "s"); err != nil {
		t.Fatalf("a cluster name of the longest length: %v", err)
	}
	x := XID{Boot: NewBoot(), Seq: 1<<64 - 1, Coordinator: long, Branch: 999, Instance: "i", Schema: "s"}
	if len(x.Gtrid()) > maxGtrid {
		t.Fatalf("gtrid %d bytes with a name CheckNames accepts", len(x.Gtrid()))
	}
	if err := CheckNames("i", long+"c", "s"); err == nil {
		t.Fatal("a cluster name one byte too long was accepted")
	}
	if err := CheckNames(strings.Repeat("i", 30), "c", strings.Repeat("s", 30)); err == nil {
		t.Fatal("instance and schema names too long together were accepted")
	}
	if err := CheckNames("a:b", "c", "s"); err == nil {
		t.Fatal("an instance name with ':' was accepted")
	}
}

func TestParseRecoverRow(t *testing.T) {
	x := XID{Boot: "00000abc", Seq: 42, Coordinator: "s0", Branch: 2, Instance: "p1", Schema: "shop"}
	g, b := x.Gtrid(), x.Bqual()
	row := []string{strconv.Itoa(FormatID), strconv.Itoa(len(g)), strconv.Itoa(len(b)), g + b}
	got, ok := parseRecoverRow(row)
	if !ok || got.XID != x {
		t.Fatalf("parseRecoverRow = %+v, %v; want %+v", got.XID, ok, x)
	}
	// Another application's XA branch is not shardgate's.
	if _, ok := parseRecoverRow([]string{"1", "2", "0", "g1"}); ok {
		t.Fatal("a branch of format 1 was taken for shardgate's")
	}
	if _, ok := parseRecoverRow([]string{strconv.Itoa(FormatID), "90", "2", "short"}); ok {
		t.Fatal("lengths beyond the data were accepted")
	}
}
