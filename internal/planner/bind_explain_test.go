package planner

import (
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
)

// explainPlan binds sql and returns its ExplainPlan, failing the test
// for another primitive.
func explainPlan(t *testing.T, b *Binder, k *Keyspace, s *fakeSession, sql string) *engine.ExplainPlan {
	t.Helper()
	prim := bindText(b, k, s, sql)
	x, ok := prim.(*engine.ExplainPlan)
	if !ok {
		t.Fatalf("%s: got %T, want an ExplainPlan", sql, prim)
	}
	return x
}

// TestBindExplain: EXPLAIN of a statement is the statement's plan, bound
// as it would run, with the client's head kept for the servers' EXPLAINs
// and no column probe ahead of a merge's first part.
func TestBindExplain(t *testing.T) {
	k, _, s1 := bindKeyspace(t)
	b, s := newBinder(k)
	x := explainPlan(t, b, k, s, "EXPLAIN EXTENDED SELECT name FROM sf_user WHERE id = 5")
	r, ok := x.Plan.(*engine.Route)
	if !ok || r.Cluster != s1 || x.Head != "EXPLAIN EXTENDED " || x.JSON || string(x.Query) != "\x03SELECT name FROM sf_user WHERE id = 5" {
		t.Fatalf("plan %T head %q json %v query %q, want a Route to s1, the head, the statement", x.Plan, x.Head, x.JSON, x.Query)
	}
	steps := engine.Explain(x.Plan, x.Query)
	if len(steps) != 1 || steps[0].SQL != "select `name` from sf_user_0004 where id = 5" {
		t.Errorf("steps %+v, want the sub-table's SELECT", steps)
	}

	x = explainPlan(t, b, k, s, "desc format=json SELECT name FROM sf_user WHERE name = 'x'")
	m, ok := x.Plan.(*engine.Merge)
	if !ok || !x.JSON || x.Head != "desc format=json " {
		t.Fatalf("plan %T head %q json %v, want a Merge in JSON", x.Plan, x.Head, x.JSON)
	}
	if m.Probe || strings.Contains(string(m.Parts[0].Query), ";") {
		t.Errorf("an EXPLAIN's merge probes its columns: %q", m.Parts[0].Query)
	}
	// The next statement, run, probes again.
	if m, ok := bindText(b, k, s, "SELECT name FROM sf_user WHERE name = 'x'").(*engine.Merge); !ok || !m.Probe {
		t.Errorf("the statement after an EXPLAIN: %T without its probe", m)
	}

	// Writes are checked as the statement's would be (the frontend puts
	// back what CrossShardWrite records).
	x = explainPlan(t, b, k, s, "EXPLAIN UPDATE sf_user SET name = 'y' WHERE name = 'x'")
	if f, ok := x.Plan.(*engine.Fanout); !ok || len(f.Parts) != 8 {
		t.Errorf("EXPLAIN UPDATE: plan %T, want a Fanout over 8 sub-tables", x.Plan)
	}
	s.refuseWrite = func(cl *backend.Cluster) *mysql.SQLError {
		return mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax, "no write on %s", cl.Name)
	}
	if e := refusal(t, bindText(b, k, s, "EXPLAIN DELETE FROM sf_user WHERE id = 5")); !strings.Contains(e.Message, "no write on s1") {
		t.Errorf("EXPLAIN of a refused write: %v", e)
	}
}

// TestBindExplainRefusals: the statement's refusal is the EXPLAIN's; a
// format the server does not know is its 1791; a prepared EXPLAIN is
// refused.
func TestBindExplainRefusals(t *testing.T) {
	k, _, _ := bindKeyspace(t)
	b, s := newBinder(k)
	plain := refusal(t, bindText(b, k, s, "SELECT name, @v FROM sf_user"))
	if e := refusal(t, bindText(b, k, s, "EXPLAIN SELECT name, @v FROM sf_user")); *e != *plain {
		t.Errorf("EXPLAIN's refusal %v, want the statement's %v", e, plain)
	}
	if e := refusal(t, bindText(b, k, s, "EXPLAIN FORMAT=TREE SELECT name FROM sf_user")); e.Code != 1791 || !strings.Contains(e.Message, "'TREE'") {
		t.Errorf("FORMAT=TREE: %v, want 1791", e)
	}
	s.syntaxErr = mysql.NewError(mysql.ERParse, mysql.StateSyntax, "You have an error in your SQL syntax")
	if e := refusal(t, bindText(b, k, s, "EXPLAIN SELECT name FROM sf_user WHERE")); e.Code != mysql.ERParse {
		t.Errorf("a syntax error: %v, want the server's 1064", e)
	}
	s.syntaxErr = nil
	// DESCRIBE of a table is still metadata.
	if _, ok := bindText(b, k, s, "DESCRIBE sf_user").(*engine.Metadata); !ok {
		t.Errorf("DESCRIBE sf_user is no longer metadata")
	}
	p := append([]byte{mysql.ComStmtPrepare}, "EXPLAIN SELECT name FROM sf_user WHERE id = ?"...)
	var prep Prepared
	if at := b.Prepare(k, router.Classify(p[1:]), p, s, &prep); at.Err == nil || at.Err.Code != mysql.ERNotSupportedYet || !strings.Contains(at.Err.Message, "prepared statement") {
		t.Errorf("prepared EXPLAIN: %+v, want 1235", at)
	}
}

// TestBindAnalyze: ANALYZE runs the statement, so only where it runs
// whole on one server: there, the head before the sub-table's SQL.
func TestBindAnalyze(t *testing.T) {
	k, _, s1 := bindKeyspace(t)
	b, s := newBinder(k)
	r, ok := bindText(b, k, s, "ANALYZE FORMAT=JSON SELECT name FROM sf_user WHERE id = 5").(*engine.Route)
	if !ok || r.Cluster != s1 || string(r.Query) != "\x03ANALYZE FORMAT=JSON select `name` from sf_user_0004 where id = 5" {
		t.Fatalf("ANALYZE of a point select: %+v, want a Route to s1 analyzing the sub-table's SELECT", r)
	}
	if e := refusal(t, bindText(b, k, s, "ANALYZE SELECT name FROM sf_user ORDER BY name")); e.Code != mysql.ERNotSupportedYet || !strings.Contains(e.Message, "ANALYZE") {
		t.Errorf("ANALYZE of a merge: %v, want 1235 naming ANALYZE", e)
	}
	// ANALYZE TABLE is not ANALYZE of a statement.
	if r, ok := bindText(b, k, s, "ANALYZE TABLE sf_user").(*engine.Refuse); ok && strings.Contains(r.Err.Message, "ANALYZE of a statement") {
		t.Errorf("ANALYZE TABLE: %v", r.Err)
	}
}
