package proxy_test

// SHOW QUERY DIGESTS after a sysbench run matches sysbench's own counts
// (issue 15, Acceptance): every statement sysbench sent is in a digest
// of its user and database, once, and each of the mix's statement shapes
// counts as often as the mix sends it per transaction.

import (
	"database/sql"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/testenv"
)

// sbShapes are oltp_read_write's statement shapes (with
// --index_updates=0 --delete_inserts=0) and how many of each one
// transaction sends: 10 point selects, 4 range selects, a non-index
// UPDATE, BEGIN and COMMIT. Tables differ per statement; the shapes match
// any sbtestN.
var sbShapes = []struct {
	name  string
	re    *regexp.Regexp
	perTx int
	rows  int // rows sent per statement, -1: varies
}{
	{"point select", regexp.MustCompile(`^SELECT c FROM sbtest\d+ WHERE id ?= ?\?$`), 10, 1},
	{"simple range", regexp.MustCompile(`^SELECT c FROM sbtest\d+ WHERE id BETWEEN \? AND \?$`), 1, 100},
	{"sum range", regexp.MustCompile(`^SELECT SUM\(k\) FROM sbtest\d+ WHERE id BETWEEN \? AND \?$`), 1, 1},
	{"order range", regexp.MustCompile(`^SELECT c FROM sbtest\d+ WHERE id BETWEEN \? AND \? ORDER BY c$`), 1, 100},
	{"distinct range", regexp.MustCompile(`^SELECT DISTINCT c FROM sbtest\d+ WHERE id BETWEEN \? AND \? ORDER BY c$`), 1, -1},
	{"non-index update", regexp.MustCompile(`^UPDATE sbtest\d+ SET c ?= ?\? WHERE id ?= ?\?$`), 1, 0},
	{"begin", regexp.MustCompile(`^BEGIN$`), 1, 0},
	{"commit", regexp.MustCompile(`^COMMIT$`), 1, 0},
}

func TestAdminDigestsMatchSysbench(t *testing.T) {
	bin := clientsBinary(t, "sysbench")
	const db = "sb_digests"
	srv := testenv.Shared(t)
	srv.Exec(t, "DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db)
	p := startProxy(t, withAdminSQL(proxyConfig(t, srv, "")))
	px := clientsProxyTarget(t, p)
	admin := openDB(t, adminDSN(p, adminUser, adminPass))
	args := func(extra ...string) []string {
		a := clientsSysbenchArgs(px, extra...)
		for i, s := range a {
			if strings.HasPrefix(s, "--mysql-db=") {
				a[i] = "--mysql-db=" + db
			}
		}
		return a
	}
	clientsMustExec(t, 2*time.Minute, nil, bin, args("prepare")...)
	waitSessionsGone(t, p, appUser)

	for _, psMode := range []string{"disable", "auto"} {
		t.Run("ps-"+psMode, func(t *testing.T) {
			mustExec(t, admin, "RESET QUERY DIGESTS")
			r := clientsExec(t, 2*time.Minute, nil, bin, args("--db-ps-mode="+psMode, "--threads=4", "--time=3",
				"--report-interval=0", "--index_updates=0", "--delete_inserts=0", "--mysql-ignore-errors=none", "run")...)
			if r.exitCode != 0 {
				t.Fatalf("sysbench failed:\n%s", r)
			}
			waitSessionsGone(t, p, appUser)
			s := clientsParseSysbench(t, r)
			checkSysbenchDigests(t, admin, db, s)
		})
	}
}

// waitSessionsGone waits until the proxy has no session of user left. A
// session records a statement's digest after its client has the answer:
// sysbench can exit before its last statements are counted, and (after
// prepare) have its CREATE INDEX counted after RESET QUERY DIGESTS; a
// session ends after its last statement's digest is recorded.
func waitSessionsGone(t *testing.T, p *proxy.Proxy, user string) {
	t.Helper()
	waitFor(t, "the sessions of "+user+" to end", 30*time.Second, func() bool {
		for _, a := range p.Sessions() {
			if a.User == user {
				return false
			}
		}
		return true
	})
}

// checkSysbenchDigests compares the digests of db with sysbench's counts.
func checkSysbenchDigests(t *testing.T, admin *sql.DB, db string, s clientsSbStats) {
	t.Helper()
	counts := make([]int, len(sbShapes))
	rows := make([]int, len(sbShapes))
	total := 0
	for _, d := range adminTable(t, admin, "SHOW QUERY DIGESTS") {
		if d["db"] != db || d["user"] != appUser {
			continue
		}
		n, _ := strconv.Atoi(d["count"])
		sent, _ := strconv.Atoi(d["rows_sent"])
		if d["errors"] != "0" {
			t.Errorf("digest %q: %s errors", d["text"], d["errors"])
		}
		total += n
		matched := false
		for i, sh := range sbShapes {
			if sh.re.MatchString(d["text"]) {
				counts[i] += n
				rows[i] += sent
				matched = true
				break
			}
		}
		if !matched {
			t.Errorf("digest %q (count %d) is no statement of the sysbench mix", d["text"], n)
		}
	}
	if total != s.queries {
		t.Errorf("the digests count %d statements, sysbench sent %d", total, s.queries)
	}
	for i, sh := range sbShapes {
		if want := sh.perTx * s.transactions; counts[i] != want {
			t.Errorf("%s: the digests count %d, sysbench's %d transactions sent %d", sh.name, counts[i], s.transactions, want)
		}
		if sh.rows >= 0 && rows[i] != sh.rows*counts[i] {
			t.Errorf("%s: the digests say %d rows sent for %d statements, want %d each", sh.name, rows[i], counts[i], sh.rows)
		}
	}
	t.Logf("%d transactions, %d statements: digests agree", s.transactions, total)
}
