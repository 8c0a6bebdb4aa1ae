package config

import (
	"sort"
	"strconv"
	"strings"
)

// Problem is one thing wrong with a configuration (or, in Warnings, one
// thing worth changing).
type Problem struct {
	File   string // as given to Load/Parse; "" for QuickStart
	Line   int    // 1-based; 0 when unknown
	Key    string // dotted key path such as clusters[0].pool.max_idle
	Reason string
}

// String formats the problem as FILE:LINE: KEY: REASON, leaving out the
// parts that are unknown (no file for QuickStart, no key for syntax errors);
// with a line but no file name it starts with "line N: ".
func (p Problem) String() string {
	var b strings.Builder
	switch {
	case p.File != "" && p.Line > 0:
		b.WriteString(p.File + ":" + strconv.Itoa(p.Line) + ": ")
	case p.File != "":
		b.WriteString(p.File + ": ")
	case p.Line > 0:
		b.WriteString("line " + strconv.Itoa(p.Line) + ": ")
	}
	if p.Key != "" {
		b.WriteString(p.Key)
		b.WriteString(": ")
	}
	b.WriteString(p.Reason)
	return b.String()
}

// ValidationError lists every problem found in a configuration.
type ValidationError struct {
	Problems []Problem
}

// Error prints one problem per line.
func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// newValidationError orders problems by line so the report reads top to
// bottom like the file; problems on the same line keep detection order.
func newValidationError(problems []Problem) *ValidationError {
	sorted := append([]Problem(nil), problems...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Line < sorted[j].Line })
	return &ValidationError{Problems: sorted}
}
