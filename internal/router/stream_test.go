package router

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestStreamScannerMatchesClassify: fed in pieces split anywhere, the
// scanner finds a second statement exactly when Classify does on the whole.
func TestStreamScannerMatchesClassify(t *testing.T) {
	parts := []string{
		"SELECT", " ", "1", ";", "; ", "\n", "-", "--", "-- x\n", "#c\n", "/*", "*/", "/*!", "/*!50700 ", "/*M!", "/*M",
		"'", "\"", "`", "\\", "''", "/*!123456", "/*!12345 ", "/*!1234567", "12", "*/;", "'a;b'", "\"x\\\";\"", "`;`", "*", "/", "INSERT", "x", "@v", "@'q;'", "SET", "\t",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300000; i++ {
		var b strings.Builder
		for n := rng.IntN(12) + 1; n > 0; n-- {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		stmt := b.String()
		want := Classify([]byte(stmt)).Flags&FlagMultiStatement != 0
		var z StreamScanner
		rest := []byte(stmt)
		for len(rest) > 0 {
			k := rng.IntN(len(rest)) + 1
			z.Feed(rest[:k])
			rest = rest[k:]
		}
		if z.End() != want {
			t.Fatalf("%q: scanner multi=%v, Classify %v", stmt, z.End(), want)
		}
	}
}
