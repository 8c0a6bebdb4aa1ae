// Command benchmedian reads `go test -bench -benchmem` output from several
// interleaved runs on stdin and prints, per benchmark, the median ns/op,
// B/op and allocs/op with the number of samples, as a markdown table with
// the two parsers side by side and their time ratio.
package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// line matches "BenchmarkParse/point_select/tidb-2   123   4567 ns/op   890 B/op   12 allocs/op".
var line = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op\s+(\d+) B/op\s+(\d+) allocs/op`)

type samples struct{ ns, bytes, allocs []float64 }

func main() {
	all := map[string]*samples{}
	var order []string
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		s, ok := all[m[1]]
		if !ok {
			s = &samples{}
			all[m[1]] = s
			order = append(order, m[1])
		}
		s.ns = append(s.ns, num(m[2]))
		s.bytes = append(s.bytes, num(m[3]))
		s.allocs = append(s.allocs, num(m[4]))
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "benchmedian:", err)
		os.Exit(1)
	}
	fmt.Println("| benchmark | statement | tidb µs | vitess µs | vitess/tidb | tidb allocs | vitess allocs | tidb KB | vitess KB | n |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	seen := map[string]bool{}
	for _, name := range order {
		group, stmt, _ := cut2(name)
		key := group + "/" + stmt
		if seen[key] {
			continue
		}
		seen[key] = true
		t, v := all[key+"/tidb"], all[key+"/vitess"]
		if lex := all[key+"/vitess-lex-only"]; lex != nil {
			fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", group, stmt, us(t), us(v), ratio(v, t), al(t), al(v), kb(t), kb(v), n(t))
			fmt.Printf("| %s | %s (vitess tokenizer only) | | %s | | | %s | | %s | %d |\n", group, stmt, us(lex), al(lex), kb(lex), n(lex))
			continue
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", group, stmt, us(t), us(v), ratio(v, t), al(t), al(v), kb(t), kb(v), n(t))
	}
}

func cut2(name string) (group, stmt, parser string) {
	parts := strings.SplitN(name, "/", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	return parts[0], parts[1], parts[2]
}

func num(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic(err) // the regexp admits only digits and dots
	}
	return f
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func us(s *samples) string {
	if s == nil {
		return "—"
	}
	return strconv.FormatFloat(median(s.ns)/1000, 'f', 2, 64)
}

func al(s *samples) string {
	if s == nil {
		return "—"
	}
	return strconv.FormatFloat(median(s.allocs), 'f', 0, 64)
}

func kb(s *samples) string {
	if s == nil {
		return "—"
	}
	return strconv.FormatFloat(median(s.bytes)/1024, 'f', 1, 64)
}

func ratio(a, b *samples) string {
	if a == nil || b == nil {
		return "—"
	}
	return strconv.FormatFloat(median(a.ns)/median(b.ns), 'f', 2, 64) + "×"
}

func n(s *samples) int {
	if s == nil {
		return 0
	}
	return len(s.ns)
}
