package proxy_test

// SQLAlchemy on a sharded schema (issue 22, "Real ORMs"): the ORM code of
// testdata/orm/sqlalchemy_orm.py against shardgate and against the
// reference server, answers compared here. The schema, the comparison and
// the expected refusals: orm_test.go.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
)

// ormPython returns the python of the environment scripts/install-deps.sh
// makes for the ORM test (SHARDGATE_PYTHON_VENV, by default
// $XDG_CACHE_HOME/shardgate/python), failing the test when it is missing
// or its SQLAlchemy is not the version scripts/requirements-orm.txt pins:
// the test never skips.
func ormPython(t *testing.T) string {
	t.Helper()
	venv := os.Getenv("SHARDGATE_PYTHON_VENV")
	if venv == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Fatalf("no cache directory for the ORM test's Python environment (set SHARDGATE_PYTHON_VENV): %v", err)
		}
		venv = filepath.Join(cache, "shardgate", "python")
	}
	reqs, err := os.ReadFile(filepath.Join("..", "..", "scripts", "requirements-orm.txt"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?mi)^sqlalchemy==(\S+)`).FindSubmatch(reqs)
	if m == nil {
		t.Fatal("scripts/requirements-orm.txt pins no SQLAlchemy")
	}
	py := filepath.Join(venv, "bin", "python")
	r := clientsExec(t, 30*time.Second, nil, py, "-c", "import sqlalchemy, pymysql, cryptography; print(sqlalchemy.__version__, pymysql.__version__)")
	if r.exitCode != 0 {
		t.Fatalf("no Python environment with SQLAlchemy at %s: run scripts/install-deps.sh\n%s", venv, r)
	}
	got := strings.Fields(r.stdout)
	if len(got) != 2 || got[0] != string(m[1]) {
		t.Fatalf("%s has SQLAlchemy %s, scripts/requirements-orm.txt pins %s: run scripts/install-deps.sh", py, r.stdout, m[1])
	}
	t.Logf("SQLAlchemy %s, PyMySQL %s (%s)", got[0], got[1], py)
	return py
}

// ormPyOutcome is one side's outcome of a query of sqlalchemy_orm.py.
type ormPyOutcome struct {
	Result    json.RawMessage `json:"result"`
	Error     []any           `json:"error"` // [code, message]
	Statement string          `json:"statement"`
	SQL       []string        `json:"sql"`
}

func (o *ormPyOutcome) code() int {
	if len(o.Error) == 0 {
		return 0
	}
	if f, ok := o.Error[0].(float64); ok {
		return int(f)
	}
	return -1
}

func (o *ormPyOutcome) message() string {
	if len(o.Error) < 2 {
		return ""
	}
	return fmt.Sprint(o.Error[1])
}

// ormPyLine is one line of sqlalchemy_orm.py's output.
type ormPyLine struct {
	Query string        `json:"query"`
	Order string        `json:"order"`
	Fold  []string      `json:"fold"`
	Write bool          `json:"write"`
	Proxy ormPyOutcome  `json:"proxy"`
	Ref   *ormPyOutcome `json:"ref"`
	// Replay: the SELECTs sent through shardgate, run again on both sides.
	Replay []struct {
		SQL   string      `json:"sql"`
		Proxy ormReplayed `json:"proxy"`
		Ref   ormReplayed `json:"ref"`
	} `json:"replay"`
}

// TestORMSQLAlchemy runs SQLAlchemy 2.0's ORM (testdata/orm/sqlalchemy_orm.py):
// get, filters, lazy loading, joinedload, selectinload and
// contains_eager, relationship filters (any, has), Query.count() and
// select(func.count()), pagination with order_by/limit/offset, GROUP BY
// and HAVING, subqueries, CTEs, UNION, and the unit of work's writes
// (ids from shardgate's sequence, cascades, bulk UPDATE and DELETE)
// through shardgate and against the reference: each answer must be the
// reference's, or a refusal ormExpectedRefusals lists. The tables' rows
// must then be the reference's.
//
// PyMySQL opens transactions implicitly (autocommit off, no BEGIN): ORM
// "sqlalchemy". The writes run again with SQLAlchemy's recipe for sending
// BEGIN (autocommit on, BEGIN when a transaction starts), ORM
// "sqlalchemy-begin", on servers of their own.
func TestORMSQLAlchemy(t *testing.T) {
	py := ormPython(t)
	t.Run("implicit", func(t *testing.T) { runSQLAlchemy(t, py, "sqlalchemy", "implicit") })
	t.Run("begin", func(t *testing.T) { runSQLAlchemy(t, py, "sqlalchemy-begin", "begin") })
}

// runSQLAlchemy runs sqlalchemy_orm.py with python py in mode on a new
// ormEnv and records its queries under orm.
func runSQLAlchemy(t *testing.T, py, orm, mode string) {
	e := startORMEnv(t)
	sqlaURL := func(user, pass, addr string) string {
		u := url.URL{Scheme: "mysql+pymysql", User: url.UserPassword(user, pass), Host: addr, Path: "/" + ormDB, RawQuery: "charset=utf8mb4"}
		return u.String()
	}
	r := clientsExec(t, 2*time.Minute, []string{"PYTHONIOENCODING=utf-8", "PYTHONDONTWRITEBYTECODE=1"}, py,
		filepath.Join("testdata", "orm", "sqlalchemy_orm.py"),
		sqlaURL(appUser, appPass, e.proxy.Addrs()[0]), sqlaURL(testenv.User, testenv.Password, e.ref.Addr), mode)
	if r.exitCode != 0 {
		t.Fatalf("sqlalchemy_orm.py failed:\n%s", r)
	}
	t.Log(strings.TrimSpace(r.stderr))

	orders := map[string]ormOrder{"unordered": ormUnordered, "top-ordered": ormTopOrdered, "ordered": ormOrdered}
	led := newORMLedger(t, orm)
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var l ormPyLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("sqlalchemy_orm.py printed %q: %v", sc.Text(), err)
		}
		order, ok := orders[l.Order]
		if !ok {
			t.Fatalf("%s: unknown order %q", l.Query, l.Order)
		}
		led.start(l.Query)
		if l.Proxy.code() == 1235 {
			led.refuse(l.Query, ormRefusalReason(l.Proxy.message()), l.Proxy.Statement)
			if !l.Write && (l.Ref == nil || l.Ref.code() != 0) {
				t.Errorf("%s: the reference failed too: %+v", l.Query, l.Ref)
			}
			continue
		}
		led.answer(l.Query)
		if l.Ref == nil {
			t.Fatalf("%s: not run on the reference", l.Query)
		}
		if l.Proxy.code() != 0 || l.Ref.code() != 0 {
			if l.Proxy.code() != l.Ref.code() {
				t.Errorf("%s: shardgate's error %v, the reference's %v\n  shardgate ran:\n  %s\n  the reference ran:\n  %s",
					l.Query, l.Proxy.Error, l.Ref.Error, strings.Join(l.Proxy.SQL, "\n  "), strings.Join(l.Ref.SQL, "\n  "))
			}
			continue
		}
		g, err := ormCanonicalJSON(l.Proxy.Result, order, l.Fold)
		if err != nil {
			t.Fatalf("%s: %v", l.Query, err)
		}
		w, err := ormCanonicalJSON(l.Ref.Result, order, l.Fold)
		if err != nil {
			t.Fatalf("%s: %v", l.Query, err)
		}
		if g != w {
			t.Errorf("%s (%s): shardgate's answer differs from the reference's\n  shardgate ran:\n  %s\n%s",
				l.Query, order, strings.Join(l.Proxy.SQL, "\n  "), ormDiff(w, g))
		}
		if !l.Write && len(l.Replay) == 0 {
			t.Errorf("%s: no statement replayed", l.Query)
		}
		for _, r := range l.Replay {
			compareReplayed(t, l.Query, r.SQL, r.Proxy, r.Ref, l.Fold)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	led.finish()
	if g, w := ormTableDump(t, e.pxDB), ormTableDump(t, e.refDB); g != w {
		t.Errorf("after the writes, the tables through shardgate differ from the reference's:\n%s", ormDiff(w, g))
	}
}
