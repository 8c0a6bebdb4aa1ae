package proxy_test

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/testenv"
)

// Least-privilege backend account: granted only its database, it may not
// run SHOW SLAVE STATUS.
const (
	lpUser     = "sglp"
	lpPassword = "sglp-pw"
	lpDB       = "appdb"
)

func createLeastPrivilegeAccount(t testing.TB, srv *testenv.Server) {
	t.Helper()
	srv.Exec(t, "CREATE DATABASE "+lpDB,
		"CREATE USER '"+lpUser+"'@'%' IDENTIFIED BY '"+lpPassword+"'",
		"GRANT ALL ON "+lpDB+".* TO '"+lpUser+"'@'%'")
}

func asLeastPrivilege(cfg *config.Config) *config.Config {
	cfg.Clusters[0].User, cfg.Clusters[0].Password = lpUser, lpPassword
	return cfg
}

// A backend account that may not run SHOW SLAVE STATUS does not take its
// server out: logins and statements keep working over many health checks,
// the log says once which privilege is missing and which GRANT fixes it,
// and a later GRANT is noticed without a restart.
func TestLeastPrivilegeBackendAccount(t *testing.T) {
	srv := testenv.Start(t, testenv.Options{})
	createLeastPrivilegeAccount(t, srv)
	p, logs := startProxyLogged(t, asLeastPrivilege(proxyConfig(t, srv, fastHealth)))
	db := openDB(t, proxyDSN(p, appUser, appPass, lpDB, "timeout=2s&readTimeout=5s"))
	db.SetMaxIdleConns(0) // every statement logs in anew

	mustExec(t, db, "CREATE TABLE t (id INT PRIMARY KEY)")
	// 100ms checks with 2 failures to take a server out: 2s is 20 checks.
	deadline := time.Now().Add(2 * time.Second)
	n := 0
	for ; time.Now().Before(deadline); n++ {
		if _, err := db.Exec("INSERT INTO t VALUES (?)", n); err != nil {
			t.Fatalf("insert %d, %v after start: %v", n, time.Since(deadline.Add(-2*time.Second)).Round(time.Millisecond), err)
		}
		if got := queryString(t, db, "SELECT COUNT(*) FROM t"); got != strconv.Itoa(n+1) {
			t.Fatalf("count after %d inserts: %s", n+1, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	s := p.Cluster("main").Servers()[0]
	if h := s.Health(); !h.Up || !h.ReplicationUnknown || h.Replica || p.Cluster("main").Writer() != s {
		t.Fatalf("after %d rounds: health %+v, writer %v", n, h, p.Cluster("main").Writer())
	}

	warns := logs.records(t, "WARN")
	if len(warns) != 1 {
		t.Fatalf("want exactly one WARN, got %d: %v", len(warns), warns)
	}
	w := warns[0]
	t.Logf("WARN: %v", w)
	wantGrant := "GRANT SLAVE MONITOR ON *.* TO '" + lpUser + "'@'%'"
	if w["missing_privilege"] != "SLAVE MONITOR" || w["fix"] != wantGrant || w["server"] != srv.Addr ||
		!strings.Contains(w["msg"].(string), "SHOW SLAVE STATUS") || !strings.Contains(w["err"].(string), "1227") {
		t.Fatalf("the WARN must name the server, the missing privilege, the GRANT (%s) and the server's error: %v", wantGrant, w)
	}

	// The fix, applied while the proxy runs: a GRANT reaches only new
	// connections, so the checker renews its own (every 60 checks, 6s).
	srv.Exec(t, wantGrant)
	waitFor(t, "the health check to see the GRANT", 15*time.Second, func() bool { return !s.Health().ReplicationUnknown })
	var allowed bool
	for _, r := range logs.records(t, "INFO") {
		allowed = allowed || (strings.Contains(r["msg"].(string), "may now run") && r["statement"] == "SHOW SLAVE STATUS")
	}
	if !allowed {
		t.Fatal("no INFO that SHOW SLAVE STATUS is allowed now")
	}
	if warns := logs.records(t, "WARN"); len(warns) != 1 {
		t.Fatalf("renewing the check connection logged more WARNs: %v", warns[1:])
	}
}

// With replication, a least-privilege account keeps writes on the primary
// and, since no replica's lag can be known, keeps reads there too.
func TestLeastPrivilegeAccountReplicated(t *testing.T) {
	r := testenv.StartReplicated(t, 1)
	createLeastPrivilegeAccount(t, r.Primary) // replicated, like any account
	r.WaitCaughtUp(t)
	p, logs := startProxyLogged(t, asLeastPrivilege(proxyConfig(t, r.Primary, splitConfig(t, r, []int{1}, fastHealth))))
	waitChecked(t, p)
	db := openDB(t, proxyDSN(p, appUser, appPass, lpDB, ""))
	mustExec(t, db, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
	time.Sleep(500 * time.Millisecond) // five checks
	ids := serverIDs(t, r)
	if got := whoAnswers(t, db, ids, 20, "SELECT @@server_id"); got[0] != 20 {
		t.Fatalf("reads with no replica's lag known: %v, want all on the primary", got)
	}
	mustExec(t, db, "INSERT INTO t VALUES (2)")
	cl := p.Cluster("main")
	if cl.Writer() != cl.Servers()[0] {
		t.Fatalf("writer %v, want the primary", cl.Writer())
	}
	warned := map[any]int{}
	for _, w := range logs.records(t, "WARN") {
		if w["missing_privilege"] == "SLAVE MONITOR" {
			warned[w["server"]]++
		}
	}
	if warned[r.Primary.Addr] != 1 || warned[r.Replicas[0].Addr] != 1 {
		t.Fatalf("want one WARN per server naming SLAVE MONITOR, got %v", warned)
	}
}

// Error 9001 says which servers the cluster has and why none takes writes.
func TestNoWritableServerSaysWhy(t *testing.T) {
	srv := testenv.Start(t, testenv.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // nothing listens there: connects are refused
	p, logs := startProxyLogged(t, proxyConfig(t, srv,
		"    replicas:\n      - address: "+dead+"\n"+fastHealth))
	db := openDB(t, proxyDSN(p, appUser, appPass, "", ""))
	mustExec(t, db, "CREATE DATABASE nw", "CREATE TABLE nw.t (id INT)")

	cl := p.Cluster("main")
	waitFor(t, "a failed check of the dead replica", 10*time.Second, func() bool { return cl.Servers()[1].Health().Err != nil })
	srv.Exec(t, "SET GLOBAL read_only = 1")
	waitFor(t, "the writer to go", 10*time.Second, func() bool { return cl.Writer() == nil })
	_, err = db.Exec("INSERT INTO nw.t VALUES (1)")
	me, ok := err.(*mysql.MySQLError)
	if !ok || me.Number != 9001 {
		t.Fatalf("write with no writable server: %v, want error 9001", err)
	}
	t.Logf("9001: %s", me.Message)
	for _, want := range []string{
		"no writable server in cluster main: ",
		srv.Addr + " read-only",
		dead + " taken out (circuit breaker open until ",
		"connection refused",
	} {
		if !strings.Contains(me.Message, want) {
			t.Errorf("9001 message lacks %q: %s", want, me.Message)
		}
	}

	// The log said why writes have nowhere to go, and logged every failed
	// check of the dead replica: the first at WARN, repeats at DEBUG.
	var movedWhy bool
	for _, r := range logs.records(t, "WARN") {
		why, _ := r["why"].(string)
		movedWhy = movedWhy || (r["to"] == "none" && strings.Contains(why, srv.Addr+" read-only"))
	}
	if !movedWhy {
		t.Fatalf("no WARN says why writes have nowhere to go:\n%v", logs.records(t, "WARN"))
	}
	// The breaker probes the dead replica again 200ms after it opened.
	waitFor(t, "the repeated failed check to be logged at DEBUG", 10*time.Second, func() bool {
		for _, r := range logs.records(t, "DEBUG") {
			if r["msg"] == "backend health check failed again" && r["server"] == dead {
				return true
			}
		}
		return false
	})
	var warned int
	for _, r := range logs.records(t, "WARN") {
		if r["msg"] == "backend health check failed" && r["server"] == dead {
			warned++
		}
	}
	if warned != 1 {
		t.Fatalf("the dead replica's failed check must be logged at WARN once (repeats at DEBUG), got %d", warned)
	}
}
