package mysql_test

import (
	"errors"
	"net"
	"testing"

	"github.com/shardgate/shardgate/internal/mysql"
)

// prefixAnswer is a server's answer to a multi-statement whose first
// statements (the prefix) answer with OK packets: frames from sequence 1.
func prefixAnswer(packets ...[]byte) []byte {
	var out []byte
	for i, p := range packets {
		n := len(p)
		out = append(out, byte(n), byte(n>>8), byte(n>>16), byte(i+1))
		out = append(out, p...)
	}
	return out
}

// okMore is an OK packet saying that more results follow.
func okMore() []byte {
	return mysql.AppendOK(nil, mysql.HeaderOK, &mysql.OKPacket{Status: mysql.StatusAutocommit | mysql.StatusMoreResultsExists}, mysql.ClientDeprecateEOF)
}

// prefixTold is what ExpectPrefix's done was told.
type prefixTold struct {
	ok           int
	failed, told bool
}

// readAfterPrefix serves answer to a connection expecting a prefix of n
// statements and returns the first packet read and what done was told.
func readAfterPrefix(t *testing.T, n int, answer []byte) (p []byte, d prefixTold, err error) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() { _, _ = b.Write(answer) }()
	c := mysql.NewConn(a)
	c.SetSeq(1)
	c.ExpectPrefix(n, func(ok int, failed bool) { d = prefixTold{ok: ok, failed: failed, told: true} })
	p, err = c.ReadPacket()
	return append([]byte(nil), p...), d, err
}

// TestPrefixResultsConsumed: the reads skip the OKs of the statements
// written ahead of a command and return the command's own answer; done
// learns that every one succeeded.
func TestPrefixResultsConsumed(t *testing.T) {
	final := mysql.AppendOK(nil, mysql.HeaderOK, &mysql.OKPacket{AffectedRows: 3, Status: mysql.StatusAutocommit}, mysql.ClientDeprecateEOF)
	p, d, err := readAfterPrefix(t, 2, prefixAnswer(okMore(), okMore(), final))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := mysql.ParseOK(p, mysql.ClientDeprecateEOF); got.AffectedRows != 3 {
		t.Fatalf("read %x, want the command's OK (3 rows)", p)
	}
	if d != (prefixTold{ok: 2, told: true}) {
		t.Fatalf("done told %+v, want 2 succeeded", d)
	}
}

// TestPrefixFailureIsTheAnswer: a prefix statement's ERR ends the
// multi-statement (the server runs nothing after it): it is read as the
// answer, and done learns how many succeeded before it.
func TestPrefixFailureIsTheAnswer(t *testing.T) {
	e := mysql.NewError(1049, "42000", "Unknown database 'gone'")
	p, d, err := readAfterPrefix(t, 2, prefixAnswer(okMore(), mysql.AppendErr(nil, e)))
	if err != nil {
		t.Fatal(err)
	}
	if !mysql.IsErr(p) || mysql.ParseErr(p).Code != 1049 {
		t.Fatalf("read %x, want the prefix's ERR", p)
	}
	if d != (prefixTold{ok: 1, failed: true, told: true}) {
		t.Fatalf("done told %+v, want 1 succeeded, then a failure", d)
	}
}

// TestPrefixEndingTheAnswerIsMalformed: a prefix OK without "more
// results" would mean the command never ran: a protocol error, never
// its answer.
func TestPrefixEndingTheAnswerIsMalformed(t *testing.T) {
	last := mysql.AppendOK(nil, mysql.HeaderOK, &mysql.OKPacket{Status: mysql.StatusAutocommit}, mysql.ClientDeprecateEOF)
	_, d, err := readAfterPrefix(t, 1, prefixAnswer(last))
	if !errors.Is(err, mysql.ErrMalformed) || d.told {
		t.Fatalf("err %v (done told %+v), want ErrMalformed and done not told", err, d)
	}
}
