package parsers

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

var (
	matrixOut = flag.String("matrix", "", "write the acceptance/round-trip matrix (markdown) to this file")
	sqlOut    = flag.String("sqlout", "", "write name<TAB>parser<TAB>re-serialised SQL lines here, for check-mariadb.sh")
	reverse   = flag.Bool("reverse", false, "run vitess before tidb in each pair (run.sh alternates rounds)")
)

// benchParsers is Parsers() in the order this round runs them, so that
// neither parser always goes first after a statement change.
func benchParsers() []Parser {
	ps := Parsers()
	if *reverse {
		ps[0], ps[1] = ps[1], ps[0]
	}
	return ps
}

// TestMatrix records, per statement and parser: accepted or the error, the
// facts the walk found, the statement re-serialised after renaming tables,
// whether that text parses again, and the digest. It fails only on what
// would make the benchmarks meaningless (a benched statement refused, or a
// round trip that no longer parses); refusals of MariaDB syntax are findings.
func TestMatrix(t *testing.T) {
	var md, sqls strings.Builder
	for _, s := range Corpus {
		fmt.Fprintf(&md, "### %s\n\n```sql\n%s\n```\n\n", s.Name, clip(s.SQL))
		fmt.Fprintf(&sqls, "%s\toriginal\t%s\n", s.Name, s.SQL)
		for _, p := range Parsers() {
			fmt.Fprintf(&md, "- **%s**: %s\n", p.Name(), matrixLine(t, p, s))
			if stmt, err := p.Parse(s.SQL); err == nil {
				out, _ := p.Format(stmt) // unrenamed: the backend has these tables
				fmt.Fprintf(&sqls, "%s\t%s\t%s\n", s.Name, p.Name(), strings.ReplaceAll(out, "\n", " "))
			}
		}
		md.WriteString("\n")
	}
	if *sqlOut != "" {
		if err := os.WriteFile(*sqlOut, []byte(sqls.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if *matrixOut != "" {
		if err := os.WriteFile(*matrixOut, []byte(md.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func matrixLine(t *testing.T, p Parser, s Stmt) string {
	stmt, err := p.Parse(s.SQL)
	if err != nil {
		if isBenched(s.Name) {
			t.Errorf("%s refuses benched statement %s: %v", p.Name(), s.Name, err)
		}
		return fmt.Sprintf("REFUSED: `%s`", clip(err.Error()))
	}
	f := p.Facts(stmt)
	p.Rename(stmt)
	out, err := p.Format(stmt)
	if err != nil {
		t.Errorf("%s cannot format %s: %v", p.Name(), s.Name, err)
		return "format error: " + err.Error()
	}
	again := "re-parses"
	if _, err := p.Parse(out); err != nil {
		again = "DOES NOT RE-PARSE: " + err.Error()
		t.Errorf("%s: renamed %s does not parse again: %v\n%s", p.Name(), s.Name, err, out)
	}
	dig, err := p.Digest(s.SQL)
	if err != nil {
		dig = "digest error: " + err.Error()
	}
	return fmt.Sprintf("accepted; tables %v, preds %d; %s\n  - renamed: `%s`\n  - digest: `%s`", f.Tables, f.Preds, again, clip(out), clip(dig))
}

func isBenched(name string) bool {
	for _, b := range Benched {
		if b == name {
			return true
		}
	}
	return false
}

func clip(s string) string {
	if len(s) > 400 {
		return s[:300] + " …[" + fmt.Sprint(len(s)-400) + " bytes]… " + s[len(s)-100:]
	}
	return s
}

// walked names the statements for the per-step benchmarks (walk, format,
// rewrite, digest); parse is timed on all of Benched.
var walked = []string{"point_select", "where_and_or", "insert_100_rows", "join3_subquery", "create_table"}

// Sub-benchmarks put the parser innermost so that tidb and vitess runs of
// the same statement are adjacent in time: on a shared machine, drift hits
// both alike.
func BenchmarkParse(b *testing.B) {
	for _, name := range Benched {
		sql := Lookup(name).SQL
		for _, p := range benchParsers() {
			b.Run(name+"/"+p.Name(), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := p.Parse(sql); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkWalk: find table references with aliases and routable predicates
// in an already-parsed statement.
func BenchmarkWalk(b *testing.B) {
	for _, name := range walked {
		for _, p := range benchParsers() {
			stmt := mustParse(b, p, name)
			b.Run(name+"/"+p.Name(), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if f := p.Facts(stmt); len(f.Tables) == 0 {
						b.Fatal("no tables")
					}
				}
			})
		}
	}
}

// BenchmarkFormat: re-serialise an already-parsed (and renamed) statement.
func BenchmarkFormat(b *testing.B) {
	for _, name := range walked {
		for _, p := range benchParsers() {
			stmt := mustParse(b, p, name)
			p.Rename(stmt)
			b.Run(name+"/"+p.Name(), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := p.Format(stmt); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkPlan is the parser's share of a plan-cache miss: parse, walk,
// rename to the sub-table, re-serialise. The cache key (digest) comes from
// shardgate's own lexer and is timed apart in BenchmarkDigest.
func BenchmarkPlan(b *testing.B) {
	for _, name := range walked {
		sql := Lookup(name).SQL
		for _, p := range benchParsers() {
			b.Run(name+"/"+p.Name(), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					stmt, err := p.Parse(sql)
					if err != nil {
						b.Fatal(err)
					}
					p.Facts(stmt)
					p.Rename(stmt)
					if _, err := p.Format(stmt); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkDigest is the plan-cache key: TiDB's lexer-only normaliser versus
// Vitess's parse+normalise+print, with Vitess's bare tokenizer pass as the
// floor a lexer-only digest on it could reach.
func BenchmarkDigest(b *testing.B) {
	v := NewVitess()
	for _, name := range walked {
		sql := Lookup(name).SQL
		for _, p := range benchParsers() {
			b.Run(name+"/"+p.Name(), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := p.Digest(sql); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(name+"/vitess-lex-only", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if v.Lex(sql) == 0 {
					b.Fatal("no tokens")
				}
			}
		})
	}
}

func mustParse(b *testing.B, p Parser, name string) any {
	stmt, err := p.Parse(Lookup(name).SQL)
	if err != nil {
		b.Fatal(err)
	}
	return stmt
}

// TestSQLMode shows why the session's sql_mode matters to the parser: under
// ANSI_QUOTES "id" is a column, under PIPES_AS_CONCAT || is CONCAT. TiDB's
// parser takes the mode; Vitess's has no sql_mode at all and always reads
// the default mode's meaning.
func TestSQLMode(t *testing.T) {
	const sql = `SELECT "id" FROM users WHERE "id" = 5 OR name = 'a' || 'b'`
	tp := parser.New()
	mode, err := mysql.GetSQLMode("ANSI_QUOTES,PIPES_AS_CONCAT")
	if err != nil {
		t.Fatal(err)
	}
	tp.SetSQLMode(mode)
	stmt, err := tp.ParseOneStmt(sql, "", "")
	if err != nil {
		t.Fatal(err)
	}
	tidb := &TiDB{p: tp}
	got, _ := tidb.Format(stmt)
	t.Logf("tidb, ANSI_QUOTES,PIPES_AS_CONCAT: %s", got)
	if !strings.Contains(got, "WHERE `id`=5") || !strings.Contains(got, "CONCAT") {
		t.Errorf("tidb ignored the sql_mode: %s", got)
	}
	v := NewVitess()
	vstmt, err := v.Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	vgot, _ := v.Format(vstmt)
	t.Logf("vitess (no sql_mode): %s", vgot)
	if !strings.Contains(vgot, "'id' = 5") {
		t.Errorf("vitess now reads ANSI quotes? %s", vgot)
	}
}
