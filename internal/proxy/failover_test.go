package proxy_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
)

// fastHealth makes failures noticed quickly in tests.
const fastHealth = "    health:\n      interval: 100ms\n      timeout: 500ms\n      failures: 2\n      backoff: 200ms\n      max_backoff: 1s\n"

// Killing a replica under a read-only sysbench load: the reads it was
// running move to another server, so sysbench sees no error at all.
func TestReplicaKilledUnderReadLoad(t *testing.T) {
	bin := clientsBinary(t, "sysbench")
	for _, ps := range []string{"disable", "auto"} {
		t.Run("ps-"+ps, func(t *testing.T) {
			r := testenv.StartReplicated(t, 2)
			r.Primary.Exec(t, "CREATE DATABASE "+clientsSbDB)
			direct := clientsDirectTarget(r.Primary)
			clientsMustExec(t, 2*time.Minute, nil, bin, clientsSysbenchArgs(direct, "prepare")...)
			r.WaitCaughtUp(t)
			p := startProxy(t, asApp(proxyConfig(t, r.Primary, splitConfig(t, r, []int{1, 1}, fastHealth))))
			waitChecked(t, p)
			px := clientsProxyTarget(t, p)

			args := clientsSysbenchArgs(px, "--db-ps-mode="+ps, "--threads=16", "--time=6", "--report-interval=0",
				"--skip_trx=on", "--mysql-ignore-errors=none", "run")
			args[0] = "oltp_read_only"
			done := make(chan clientsResult, 1)
			go func() { done <- clientsExec(t, 2*time.Minute, nil, bin, args...) }()
			// Killed once it has run its share of reads (a fixed pause
			// counted how many it ran in that time: too few on a busy
			// machine), while sysbench still runs.
			executed := func() int {
				return statusCounter(t, r.Replicas[1], "Com_select") + statusCounter(t, r.Replicas[1], "Com_stmt_execute")
			}
			var before int
			for before = executed(); before < 1000; before = executed() {
				select {
				case res := <-done:
					t.Fatalf("sysbench ended before the replica had run 1000 statements (%d): reads were not balanced onto it:\n%s", before, res)
				case <-time.After(50 * time.Millisecond):
				}
			}
			if err := r.Replicas[1].Kill(); err != nil {
				t.Fatal(err)
			}
			res := <-done
			if res.exitCode != 0 {
				t.Fatalf("sysbench failed after a replica was killed:\n%s", res)
			}
			s := clientsParseSysbench(t, res)
			if s.ignoredErrors != 0 || s.reconnects != 0 {
				t.Fatalf("sysbench saw %d errors and %d reconnects:\n%s", s.ignoredErrors, s.reconnects, res)
			}
			t.Logf("replica killed under load: %s, 0 errors", s.qpsLine)
		})
	}
}

// Killing the primary under a write load: writes in flight get errors and
// none runs twice; once a replica is promoted (read_only off), writes
// succeed again, on it, without restarting the proxy.
func TestPrimaryKilledThenPromoted(t *testing.T) {
	r := testenv.StartReplicated(t, 2)
	r.Primary.Exec(t, "CREATE DATABASE fo",
		"CREATE TABLE fo.t (seq BIGINT AUTO_INCREMENT PRIMARY KEY, id INT NOT NULL, KEY (id))")
	r.WaitCaughtUp(t)
	p := startProxy(t, asApp(proxyConfig(t, r.Primary, splitConfig(t, r, []int{1, 1}, fastHealth))))
	waitChecked(t, p)
	db := openDB(t, proxyDSN(p, appUser, appPass, "fo", "timeout=2s&readTimeout=5s&writeTimeout=5s"))

	type outcome struct {
		id   int
		ok   bool
		code uint16 // MySQL error number of a failure, 0 if not a server error
	}
	var mu sync.Mutex
	var outcomes []outcome
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var next int
	var nextMu sync.Mutex
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				nextMu.Lock()
				next++
				id := next
				nextMu.Unlock()
				_, err := db.Exec("INSERT INTO t (id) VALUES (?)", id)
				mu.Lock()
				outcomes = append(outcomes, outcome{id, err == nil, mysqlErrCode(err)})
				mu.Unlock()
				if err != nil {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	okCount := func() (ok, failed int) {
		mu.Lock()
		defer mu.Unlock()
		for _, o := range outcomes {
			if o.ok {
				ok++
			} else {
				failed++
			}
		}
		return
	}
	waitFor(t, "writes before the failover", 20*time.Second, func() bool { ok, _ := okCount(); return ok >= 200 })

	if err := r.Primary.Kill(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "writes failing after the primary died", 20*time.Second, func() bool { _, failed := okCount(); return failed >= 5 })
	r.Promote(t, 0)
	promotedAt := time.Now()
	mu.Lock()
	mark := len(outcomes)
	mu.Unlock()
	waitFor(t, "writes succeeding on the promoted replica", 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, o := range outcomes[mark:] {
			if o.ok {
				return true
			}
		}
		return false
	})
	t.Logf("writes resumed %v after the promotion", time.Since(promotedAt).Round(time.Millisecond))
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()

	// On the new primary: no id twice, and every insert acknowledged
	// after the promotion is there exactly once.
	np := openDB(t, r.Replicas[0].DSN("fo"))
	counts := map[int]int{}
	rows, err := np.Query("SELECT id, COUNT(*) FROM t GROUP BY id")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, n int
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		counts[id] = n
	}
	rows.Close()
	for id, n := range counts {
		if n > 1 {
			t.Errorf("id %d was inserted %d times", id, n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, o := range outcomes[mark:] {
		if o.ok && counts[o.id] != 1 {
			t.Errorf("insert of id %d was acknowledged after the promotion but is not on the new primary", o.id)
		}
	}
	var failed int
	for _, o := range outcomes {
		if !o.ok {
			failed++
			// The proxy's own errors carry server-range codes: libmariadb
			// rejects 2000-2999 (client codes) in an ERR packet as
			// malformed (2027), as sysbench showed.
			if o.code >= 2000 && o.code < 3000 {
				t.Errorf("insert %d failed with client-range error %d", o.id, o.code)
			}
		}
	}
	t.Logf("%d inserts, %d failed during the failover", len(outcomes), failed)
}

// When the primary turns read-only and a replica writable (a failover tool
// switched them, both alive), writes follow within a check interval and
// none is sent to the read-only server.
func TestWritesFollowReadOnly(t *testing.T) {
	r := testenv.StartReplicated(t, 1)
	r.Primary.Exec(t, "CREATE DATABASE ro", "CREATE TABLE ro.t (id INT PRIMARY KEY)")
	r.WaitCaughtUp(t)
	p := startProxy(t, asApp(proxyConfig(t, r.Primary, splitConfig(t, r, []int{1}, fastHealth))))
	waitChecked(t, p)
	db := openDB(t, proxyDSN(p, appUser, appPass, "ro", ""))
	if _, err := db.Exec("INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	r.Primary.Exec(t, "SET GLOBAL read_only = ON")
	r.WaitCaughtUp(t)
	r.Promote(t, 0)
	// Within a check interval (100ms here) writes go to the replica; until
	// then they may fail, but none may succeed on the old primary.
	deadline := time.Now().Add(5 * time.Second)
	id := 2
	for {
		_, err := db.Exec("INSERT INTO t VALUES (?)", id)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes did not move to the new writable server: %v", err)
		}
		id++
		time.Sleep(20 * time.Millisecond)
	}
	if got := r.Replicas[0].Scalar(t, "SELECT COUNT(*) FROM ro.t WHERE id = "+strconv.Itoa(id)); got != "1" {
		t.Fatalf("the write landed elsewhere")
	}
	if w := p.Cluster("main").Writer(); w == nil || w.Addr() != r.Replicas[0].Addr {
		t.Fatalf("writer is %v, want the promoted replica", w)
	}
}

// A transaction that dies with its backend connection leaves the session
// open but aborted: every statement fails until the client ends the
// transaction; COMMIT fails (nothing was committed), ROLLBACK succeeds,
// and BEGIN starts afresh without "committing" it.
func TestLostTransactionAbortsSession(t *testing.T) {
	srv := testenv.Start(t, testenv.Options{})
	srv.Exec(t, "CREATE DATABASE lt", "CREATE TABLE lt.t (id INT PRIMARY KEY)")
	p := startProxy(t, proxyConfig(t, srv, fastHealth))
	db := openDB(t, proxyDSN(p, appUser, appPass, "lt", "interpolateParams=true"))
	for _, end := range []string{"COMMIT", "ROLLBACK"} {
		conn := oneConn(t, db)
		ctx := context.Background()
		exec := func(q string) error { _, err := conn.ExecContext(ctx, q); return err }
		for _, q := range []string{"BEGIN", "INSERT INTO t VALUES (1)"} {
			if err := exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := exec("INSERT INTO t VALUES (2)"); mysqlErrCode(err) != 1927 {
			t.Fatalf("statement on the dead connection: %v, want 1927", err)
		}
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"INSERT INTO t VALUES (3)", "SELECT 1", "SET autocommit = 1"} {
			if err := exec(q); mysqlErrCode(err) != 1927 {
				t.Fatalf("%s in the aborted transaction: %v, want 1927", q, err)
			}
		}
		err := exec(end)
		switch end {
		case "COMMIT":
			if mysqlErrCode(err) != 1927 {
				t.Fatalf("COMMIT of a lost transaction: %v, want 1927", err)
			}
		case "ROLLBACK":
			if err != nil {
				t.Fatalf("ROLLBACK of a lost transaction: %v", err)
			}
		}
		// The session goes on, outside any transaction, once the server is
		// back in (its breaker closes at the next passing check).
		waitFor(t, "the restarted server back in", 20*time.Second, func() bool { return p.Cluster("main").Writer() != nil })
		if err := exec("INSERT INTO t VALUES (4)"); err != nil {
			t.Fatalf("after %s: %v", end, err)
		}
		if got := srv.Scalar(t, "SELECT GROUP_CONCAT(id ORDER BY id) FROM lt.t"); got != "4" {
			t.Fatalf("rows after %s: %s, want only 4 (nothing of the lost transaction)", end, got)
		}
		srv.Exec(t, "DELETE FROM lt.t")
		conn.Close()
	}
}

// The failover under sysbench oltp_read_write: statements caught by the
// primary's death get errors (1927, then 9001 while no server is
// writable), sessions stay connected, and after the promotion
// transactions commit again on the promoted server within the same run.
func TestPrimaryKilledUnderReadWriteLoad(t *testing.T) {
	bin := clientsBinary(t, "sysbench")
	r := testenv.StartReplicated(t, 2)
	r.Primary.Exec(t, "CREATE DATABASE "+clientsSbDB)
	clientsMustExec(t, 2*time.Minute, nil, bin, clientsSysbenchArgs(clientsDirectTarget(r.Primary), "prepare")...)
	r.WaitCaughtUp(t)
	p := startProxy(t, asApp(proxyConfig(t, r.Primary, splitConfig(t, r, []int{1, 1}, fastHealth))))
	waitChecked(t, p)
	px := clientsProxyTarget(t, p)

	args := clientsSysbenchArgs(px, "--db-ps-mode=disable", "--threads=8", "--time=8", "--report-interval=0",
		"--mysql-ignore-errors=1927,9001,1213", "run")
	committed := statusCounter(t, r.Primary, "Com_commit")
	done := make(chan clientsResult, 1)
	go func() { done <- clientsExec(t, 2*time.Minute, nil, bin, args...) }()
	// The primary dies under load: once transactions commit on it (a fixed
	// pause could end before sysbench's had, on a busy machine).
	for n := 0; n < 50; n = statusCounter(t, r.Primary, "Com_commit") - committed {
		select {
		case res := <-done:
			t.Fatalf("sysbench ended before 50 transactions committed on the primary (%d):\n%s", n, res)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := r.Primary.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	r.Promote(t, 0)
	promoted := statusCounter(t, r.Replicas[0], "Com_commit")
	res := <-done
	if res.exitCode != 0 {
		t.Fatalf("sysbench failed:\n%s", res)
	}
	s := clientsParseSysbench(t, res)
	if s.ignoredErrors == 0 || s.reconnects != 0 {
		t.Errorf("%d errors and %d reconnects, want some errors and no reconnect:\n%s", s.ignoredErrors, s.reconnects, res)
	}
	commits := statusCounter(t, r.Replicas[0], "Com_commit") - promoted
	if commits < 50 {
		t.Fatalf("only %d transactions committed on the promoted server after the failover:\n%s", commits, res)
	}
	t.Logf("primary killed under oltp_read_write: %d errors during the outage, %d commits on the promoted server after it; %s",
		s.ignoredErrors, commits, s.qpsLine)
}

// BEGIN after a lost transaction starts a new one (the lost one stays
// uncommitted), as after a deadlock: clients that restart a failed
// transaction from its BEGIN go on.
func TestBeginAfterLostTransaction(t *testing.T) {
	srv := testenv.Start(t, testenv.Options{})
	srv.Exec(t, "CREATE DATABASE lb", "CREATE TABLE lb.t (id INT PRIMARY KEY)")
	p := startProxy(t, proxyConfig(t, srv, fastHealth))
	conn := oneConn(t, openDB(t, proxyDSN(p, appUser, appPass, "lb", "")))
	ctx := context.Background()
	exec := func(q string) error { _, err := conn.ExecContext(ctx, q); return err }
	if err := exec("BEGIN"); err != nil {
		t.Fatal(err)
	}
	if err := exec("INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := exec("INSERT INTO t VALUES (2)"); mysqlErrCode(err) != 1927 {
		t.Fatalf("statement of the lost transaction: %v, want 1927", err)
	}
	waitFor(t, "the restarted server back in", 20*time.Second, func() bool { return p.Cluster("main").Writer() != nil })
	for _, q := range []string{"BEGIN", "INSERT INTO t VALUES (3)", "COMMIT"} {
		if err := exec(q); err != nil {
			t.Fatalf("%s after the lost transaction: %v", q, err)
		}
	}
	if got := srv.Scalar(t, "SELECT GROUP_CONCAT(id) FROM lb.t"); got != "3" {
		t.Fatalf("rows %s, want only 3", got)
	}
}
