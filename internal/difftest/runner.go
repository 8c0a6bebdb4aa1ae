package difftest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/testenv"
)

var (
	seedFlag  = flag.Int64("difftest.seed", 0, "seed of the differential tests' data and statements (0: a new one, logged)")
	countFlag = flag.Int("difftest.n", 0, "number of statements a differential test runs (0: the test's own)")
)

// Seed returns the seed a differential test should use: -difftest.seed
// when given, else a new one. The runner reports it with every difference.
func Seed() int64 {
	if *seedFlag != 0 {
		return *seedFlag
	}
	return time.Now().UnixNano()
}

// Count returns -difftest.n when given, else def.
func Count(def int) int {
	if *countFlag > 0 {
		return *countFlag
	}
	return def
}

// Options tune a run.
type Options struct {
	// Refusals are the messages a refusal may carry. A Refusable statement
	// answered with 1235 (SQLSTATE 42000) and a message matching one of
	// them is counted as refused, not as a difference. Any other error
	// where the reference answered is a difference.
	Refusals []*regexp.Regexp
	// Pending are refusals of what issue 13 requires but the target does
	// not do yet (work in progress, say a multi-row INSERT across
	// sub-tables): any statement answered with 1235 (42000) and a message
	// matching one of them is not a difference but is counted, per kind
	// and per message (Report.Pending), so that it stays visible.
	Pending []*regexp.Regexp
	// MaxDifferences stops a run once it has found this many (0: 50).
	MaxDifferences int
	// TrxRefusals are the messages a refusal of a write inside a
	// generated transaction (Statement.InTrx) may carry: shardgate under
	// cross_shard_writes: refuse refuses a transaction's write on a
	// second shard. Nil: such a refusal is a difference.
	TrxRefusals []*regexp.Regexp
}

// CrossShardWriteRefusals are the messages of a write refused because
// its transaction wrote on another shard (cross_shard_writes: refuse).
var CrossShardWriteRefusals = []*regexp.Regexp{
	regexp.MustCompile(`^shardgate: this transaction already wrote to shard \w+; a write to shard \w+ in the same transaction is refused \(cross_shard_writes: refuse\)`),
}

// DefaultRefusals accept shardgate's form of 1235 (MySQL's own wording
// with the product's name, see docs/sharding.md) naming one of the
// constructs issue 13 refuses on a sharded schema: a merge across shards
// or a change of a shard key. MariaDB's own 1235s ("This version of
// MariaDB ...") are not refusals.
var DefaultRefusals = []*regexp.Regexp{
	regexp.MustCompile(`^This version of shardgate doesn't yet support '.*\b(?i:ORDER BY|GROUP BY|aggregate|DISTINCT|LIMIT|UNION|HAVING|shard key)\b.*'$`),
}

// DefaultOptions are the options Run uses.
func DefaultOptions() Options { return Options{Refusals: DefaultRefusals} }

// Report is the outcome of a run.
type Report struct {
	Seed       int64
	Statements int
	Kinds      map[string]*KindCount
	Refusals   int
	// Pending counts the refusals matching Options.Pending by message.
	Pending map[string]int
	// RefusedFor counts the refusals by what they name (the 1235's
	// '<construct>'): what shardgate still leaves out.
	RefusedFor map[string]int
	// ErrorCodes counts the reference's errors by code: duplicate keys
	// (1062) are expected; a syntax error (1064) is a generator bug.
	ErrorCodes map[uint16]int
	// Constructs counts the statements of each construct of issue 14
	// (Statement.Constructs).
	Constructs map[string]*ConstructCount
	// Trx counts the generated transactions' statements
	// (Generator.Transactions): the control statements by their first
	// words (BEGIN, COMMIT, ROLLBACK TO …), "inside" those between,
	// "writes inside" and "refused inside" the writes and the refusals
	// among them, "refused on a second shard" those refused for
	// Options.TrxRefusals; "writes outside" counts the other writes.
	Trx         map[string]int
	Differences []Difference
}

// ConstructCount counts the statements of one construct: run, refused
// with 1235, and answered differently from the reference.
type ConstructCount struct {
	Ran, Refused, Different int
}

// KindCount counts one kind of statement.
type KindCount struct {
	Text, Prepared, Refused, Pending, Different int
}

// Difference is one statement whose answers differ, or a table whose
// contents differ after a statement.
type Difference struct {
	Seed     int64
	Index    int // statement number in its run, from 1; 0: before the first
	Kind     string
	Prepared bool
	SQL      string // the text form; the prepared form and arguments follow when Prepared
	Prep     string
	Args     []any
	Table    string // set for a contents difference: the table compared
	Detail   string
}

func (d Difference) String() string {
	var b strings.Builder
	mode := "text"
	if d.Prepared {
		mode = "prepared"
	}
	fmt.Fprintf(&b, "seed %d statement #%d [%s] (%s)", d.Seed, d.Index, d.Kind, mode)
	if d.Table != "" {
		fmt.Fprintf(&b, ": contents of %s differ after it", d.Table)
	}
	if d.SQL != "" {
		fmt.Fprintf(&b, "\n  sql: %s", d.SQL)
	}
	if d.Prepared {
		fmt.Fprintf(&b, "\n  prepared as: %s\n  args: %s", d.Prep, formatArgs(d.Args))
	}
	for _, line := range strings.Split(d.Detail, "\n") {
		b.WriteString("\n  ")
		b.WriteString(line)
	}
	return b.String()
}

func formatArgs(args []any) string {
	parts := make([]string, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case nil:
			parts[i] = "NULL"
		case string:
			parts[i] = fmt.Sprintf("%q", v)
		case Decimal:
			parts[i] = fmt.Sprintf("decimal(%s)", string(v))
		case time.Time:
			parts[i] = "datetime(" + v.Format("2006-01-02 15:04:05.000000") + ")"
		default:
			parts[i] = fmt.Sprintf("%T(%v)", a, a)
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// Summary is the per-kind table of a report.
func (r *Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %d statements, %d refused, %d differences, reference errors by code %v\n",
		r.Seed, r.Statements, r.Refusals, len(r.Differences), r.ErrorCodes)
	names := make([]string, 0, len(r.Kinds))
	for k := range r.Kinds {
		names = append(names, k)
	}
	slices.Sort(names)
	fmt.Fprintf(&b, "  %-16s %6s %8s %7s %7s %9s\n", "kind", "text", "prepared", "refused", "pending", "different")
	for _, k := range names {
		c := r.Kinds[k]
		fmt.Fprintf(&b, "  %-16s %6d %8d %7d %7d %9d\n", k, c.Text, c.Prepared, c.Refused, c.Pending, c.Different)
	}
	msgs := make([]string, 0, len(r.Pending))
	for m := range r.Pending {
		msgs = append(msgs, m)
	}
	slices.Sort(msgs)
	for _, m := range msgs {
		fmt.Fprintf(&b, "  pending (not built yet) %5d× %s\n", r.Pending[m], m)
	}
	if r.Trx["inside"] > 0 {
		ks := make([]string, 0, len(r.Trx))
		for k := range r.Trx {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		b.WriteString("  transactions:")
		for _, k := range ks {
			fmt.Fprintf(&b, " %s %d;", k, r.Trx[k])
		}
		b.WriteString("\n")
	}
	b.WriteString(r.ConstructSummary())
	whats := make([]string, 0, len(r.RefusedFor))
	for w := range r.RefusedFor {
		whats = append(whats, w)
	}
	slices.SortFunc(whats, func(a, b string) int { return r.RefusedFor[b] - r.RefusedFor[a] })
	for _, w := range whats {
		fmt.Fprintf(&b, "  refused %5d× %s\n", r.RefusedFor[w], w)
	}
	return b.String()
}

// refusalWhat is what a 1235 refusal names ('…'), its table names kept.
func refusalWhat(msg string) string {
	if i := strings.Index(msg, "support '"); i >= 0 {
		msg = strings.TrimSuffix(msg[i+len("support '"):], "'")
	}
	return msg
}

// ConstructSummary is the per-construct table: what the merges and the
// evaluated statements answer.
func (r *Report) ConstructSummary() string {
	if len(r.Constructs) == 0 {
		return ""
	}
	var b strings.Builder
	names := make([]string, 0, len(r.Constructs))
	for k := range r.Constructs {
		names = append(names, k)
	}
	slices.Sort(names)
	fmt.Fprintf(&b, "  %-32s %6s %8s %7s %9s\n", "construct", "ran", "answered", "refused", "different")
	for _, k := range names {
		c := r.Constructs[k]
		fmt.Fprintf(&b, "  %-32s %6d %8d %7d %9d\n", k, c.Ran, c.Ran-c.Refused, c.Refused, c.Different)
	}
	return b.String()
}

// ServerTarget is a target for the test account of a testenv server.
func ServerTarget(name string, s *testenv.Server, database string) Target {
	return Target{Name: name, Addr: s.Addr, User: s.User, Password: s.Password, Database: database}
}

// Load creates the generator's schema and loads its data on both targets,
// comparing every answer, and fails the test on any difference: a harness
// whose targets start out different compares nothing useful.
func Load(t testing.TB, ref, got Target, gen *Generator) {
	t.Helper()
	load(t, ref, got, gen, append(gen.Schema(), gen.Data()...), DefaultOptions())
}

// CreateSchema sends the generator's schema statements (Generator.Schema)
// to both targets, comparing every answer, and fails the test on any
// difference. Through shardgate, each statement fans out to the
// sub-tables.
func CreateSchema(t testing.TB, ref, got Target, gen *Generator) {
	t.Helper()
	load(t, ref, got, gen, gen.Schema(), DefaultOptions())
}

// LoadData is Load without the schema, for targets whose tables were
// created otherwise (CreateSchema). A pending refusal (opts.Pending)
// fails the test too: the rows would be missing on the target.
func LoadData(t testing.TB, ref, got Target, gen *Generator, opts Options) {
	t.Helper()
	opts.Pending = nil
	load(t, ref, got, gen, gen.Data(), opts)
}

func load(t testing.TB, ref, got Target, gen *Generator, stmts []Statement, opts Options) {
	t.Helper()
	rep, err := Apply(ref, got, gen.Seed(), stmts, opts)
	if err != nil {
		t.Fatalf("difftest: load: %v", err)
	}
	if len(rep.Differences) > 0 {
		for _, d := range rep.Differences {
			t.Errorf("difftest: load: %v", d)
		}
		t.FailNow()
	}
}

// Run runs n statements of gen on both targets (see Check), logs the
// per-kind summary and fails the test for each difference.
func Run(t testing.TB, ref, got Target, gen *Generator, n int) *Report {
	t.Helper()
	return RunWith(t, ref, got, gen, n, DefaultOptions())
}

// RunWith is Run with opts.
func RunWith(t testing.TB, ref, got Target, gen *Generator, n int, opts Options) *Report {
	t.Helper()
	rep, err := Check(ref, got, gen, n, opts)
	if err != nil {
		t.Fatalf("difftest: seed %d: %v", gen.Seed(), err)
	}
	t.Logf("difftest: %s", rep.Summary())
	for _, d := range rep.Differences {
		t.Errorf("difftest: %v", d)
	}
	if len(rep.Differences) > 0 {
		t.Logf("difftest: reproduce with -difftest.seed=%d", rep.Seed)
	}
	return rep
}

// Check compares the targets' tables, then runs n statements of gen on
// both, odd-numbered ones as text and even-numbered ones prepared (binary
// protocol), and compares every answer (Diff) and, after each statement
// that writes, the written tables' contents; finally it compares every
// table again. The error is for a broken connection, not a difference.
func Check(ref, got Target, gen *Generator, n int, opts Options) (*Report, error) {
	r, err := newRunner(ref, got, gen.Seed(), opts)
	if err != nil {
		return nil, err
	}
	defer r.close()
	if err := r.contents(0, Statement{Kind: "initial"}, false, Tables); err != nil {
		return r.rep, err
	}
	for i := 1; i <= n && !r.full(); i++ {
		if err := r.statement(i, gen.Next()); err != nil {
			return r.rep, err
		}
	}
	return r.rep, r.contents(n, Statement{Kind: "final"}, false, Tables)
}

// Apply runs stmts in order on both targets, like Check.
func Apply(ref, got Target, seed int64, stmts []Statement, opts Options) (*Report, error) {
	r, err := newRunner(ref, got, seed, opts)
	if err != nil {
		return nil, err
	}
	defer r.close()
	for i, st := range stmts {
		if r.full() {
			break
		}
		if err := r.statement(i+1, st); err != nil {
			return r.rep, err
		}
	}
	return r.rep, nil
}

type runner struct {
	ref, got *Client
	opts     Options
	rep      *Report
	// lastContents is the last contents difference reported per table, so
	// one wrong row is reported once, not after every later write.
	lastContents map[string]string
}

func newRunner(ref, got Target, seed int64, opts Options) (*runner, error) {
	if opts.MaxDifferences == 0 {
		opts.MaxDifferences = 50
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := Dial(ctx, ref)
	if err != nil {
		return nil, err
	}
	gc, err := Dial(ctx, got)
	if err != nil {
		rc.Close()
		return nil, err
	}
	return &runner{ref: rc, got: gc, opts: opts, lastContents: map[string]string{},
		rep: &Report{Seed: seed, Kinds: map[string]*KindCount{}, Pending: map[string]int{}, ErrorCodes: map[uint16]int{},
			Constructs: map[string]*ConstructCount{}, Trx: map[string]int{}}}, nil
}

func (r *runner) close() {
	r.ref.Close()
	r.got.Close()
}

func (r *runner) full() bool { return len(r.rep.Differences) >= r.opts.MaxDifferences }

// statement runs st number i on both targets. The target under test goes
// first: when it refuses a refusable write, the reference does not run
// it either, so both keep the same rows.
func (r *runner) statement(i int, st Statement) error {
	prepared := i%2 == 0 && st.Prepared != ""
	kc := r.rep.Kinds[st.Kind]
	if kc == nil {
		kc = &KindCount{}
		r.rep.Kinds[st.Kind] = kc
	}
	if prepared {
		kc.Prepared++
	} else {
		kc.Text++
	}
	r.rep.Statements++
	var ccs []*ConstructCount
	for _, c := range st.Constructs {
		cc := r.rep.Constructs[c]
		if cc == nil {
			cc = &ConstructCount{}
			r.rep.Constructs[c] = cc
		}
		cc.Ran++
		ccs = append(ccs, cc)
	}
	got, err := r.got.Run(&st, prepared)
	if err != nil {
		return fmt.Errorf("statement #%d %s: %w", i, st.SQL, err)
	}
	switch {
	case st.Kind == KindTransaction:
		r.rep.Trx[trxVerb(st.SQL)]++
	case st.InTrx:
		r.rep.Trx["inside"]++
		if len(st.Writes) > 0 {
			r.rep.Trx["writes inside"]++
		}
	case len(st.Writes) > 0:
		r.rep.Trx["writes outside"]++
	}
	refused := func() {
		kc.Refused++
		r.rep.Refusals++
		if st.InTrx {
			r.rep.Trx["refused inside"]++
			if isRefusal(&got, r.opts.TrxRefusals) {
				r.rep.Trx["refused on a second shard"]++
			}
		}
		if got.Err != nil {
			if r.rep.RefusedFor == nil {
				r.rep.RefusedFor = map[string]int{}
			}
			r.rep.RefusedFor[refusalWhat(got.Err.Message)]++
		}
		for _, cc := range ccs {
			cc.Refused++
		}
	}
	differs := func(d string) {
		kc.Different++
		for _, cc := range ccs {
			cc.Different++
		}
		r.add(i, st, prepared, "", d)
	}
	switch {
	case r.opts.Refused(&st, &got):
		refused()
	case r.opts.pending(&got):
		kc.Pending++
		r.rep.Pending[got.Err.Message]++
		for _, cc := range ccs {
			cc.Refused++
		}
	default:
		ref, err := r.ref.Run(&st, prepared)
		if err != nil {
			return fmt.Errorf("statement #%d %s: %w", i, st.SQL, err)
		}
		if ref.Err != nil {
			r.rep.ErrorCodes[ref.Err.Code]++
		}
		var superset *Answer
		if st.Superset != nil && ref.Err == nil {
			a, err := r.ref.Run(st.Superset, prepared)
			if err != nil {
				return fmt.Errorf("statement #%d without its LIMIT %s: %w", i, st.Superset.SQL, err)
			}
			if a.Err != nil {
				return fmt.Errorf("statement #%d without its LIMIT %s: the reference failed: %v (a generator bug)", i, st.Superset.SQL, a.Err)
			}
			superset = &a
		}
		if d := DiffStatement(r.ref.target.Database, ref, got, &st, superset); d != "" {
			differs(d)
		}
	}
	return r.contents(i, st, prepared, st.Writes)
}

// describeAnswer is a short description of an answer for a report.
func describeAnswer(a *Answer) string {
	switch {
	case a.Err != nil:
		return fmt.Sprintf("error %v", a.Err)
	case len(a.Results) > 0 && a.Results[0].Columns != nil:
		return fmt.Sprintf("a result set of %d rows", len(a.Results[0].Rows))
	}
	return "an OK"
}

// Refused reports whether got is an acceptable refusal of st: st is
// Refusable and got failed with 1235 (42000) and one of the Refusals, or
// st is a write inside a generated transaction and the message is one of
// the TrxRefusals.
func (o Options) Refused(st *Statement, got *Answer) bool {
	return st.Refusable && isRefusal(got, o.Refusals) ||
		st.InTrx && len(st.Writes) > 0 && isRefusal(got, o.TrxRefusals)
}

// trxVerb names a control statement of a transaction in the report:
// its words before a savepoint's name.
func trxVerb(sql string) string {
	f := strings.Fields(sql)
	switch {
	case len(f) >= 2 && f[0] == "ROLLBACK" && f[1] == "TO":
		return "ROLLBACK TO"
	case f[0] == "SAVEPOINT" || f[0] == "RELEASE":
		return f[0]
	}
	return sql
}

// isRefusal reports whether got failed with 1235 (42000) and a message
// matching one of res.
func isRefusal(got *Answer, res []*regexp.Regexp) bool {
	e := got.Err
	if e == nil || e.Code != mysql.ERNotSupportedYet || e.State != mysql.StateSyntax {
		return false
	}
	for _, re := range res {
		if re.MatchString(e.Message) {
			return true
		}
	}
	return false
}

// pending reports whether got is a refusal matching opts.Pending.
func (o Options) pending(got *Answer) bool {
	return isRefusal(got, o.Pending)
}

// contents compares the rows of tables on both targets, as multisets
// (SELECT * without ORDER BY: a scatter read needs no merge).
func (r *runner) contents(i int, st Statement, prepared bool, tables []string) error {
	for _, t := range tables {
		q := "SELECT * FROM " + t
		ref, err1 := r.ref.Query(q)
		got, err2 := r.got.Query(q)
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("contents of %s after statement #%d: %w", t, i, err)
		}
		d := diff(ref, got, rowCompare{}, false)
		if d != "" && d != r.lastContents[t] {
			r.add(i, st, prepared, t, d)
		}
		r.lastContents[t] = d
	}
	return nil
}

func (r *runner) add(i int, st Statement, prepared bool, table, detail string) {
	d := Difference{Seed: r.rep.Seed, Index: i, Kind: st.Kind, Prepared: prepared, SQL: st.SQL, Table: table, Detail: detail}
	if prepared {
		d.Prep, d.Args = st.Prepared, st.Args
	}
	r.rep.Differences = append(r.rep.Differences, d)
}
