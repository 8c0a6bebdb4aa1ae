package router

import (
	"bytes"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

var alias = regexp.MustCompile(" AS `(?:[^`]|``)*`")

// TestRewriteAgreesWithClassify: the classifier and the rewrite read
// comments, executable comments and quotes the same way, so a
// CONNECTION_ID() the classifier flags is the one the rewrite replaces,
// and one it does not see stays as written.
func TestRewriteAgreesWithClassify(t *testing.T) {
	parts := []string{
		"SELECT ", "CONNECTION_ID()", " ", "1", ",", "-- x\n", "--\x01", "--", "#c\n", "/*", "*/", "/*!", "/*!1234 ", "/*!12345 ",
		"/*!123456", "/*M!", "'", "\"", "`", "\\", "''", "\x0b", "\n", "(", ")", "x", ";",
	}
	rng := rand.New(rand.NewPCG(7, 11))
	sub := Substitutions{ConnectionID: "42"}
	for i := 0; i < 200000; i++ {
		var b strings.Builder
		for n := rng.IntN(10) + 1; n > 0; n-- {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		stmt := []byte(b.String())
		flagged := Classify(stmt).Flags&FlagConnectionID != 0
		out := Substitute(nil, stmt, &sub)
		code := alias.ReplaceAll(out, nil) // the column names quote the text as written
		replaced := bytes.Count(code, []byte("CONNECTION_ID()")) < bytes.Count(stmt, []byte("CONNECTION_ID()"))
		if flagged != replaced {
			t.Fatalf("%q: Classify flags CONNECTION_ID() %v, Substitute replaced one %v (%q)", stmt, flagged, replaced, out)
		}
	}
}
