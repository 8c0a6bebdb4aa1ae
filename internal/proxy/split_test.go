package proxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/testenv"
)

// splitConfig is the cluster-level YAML of a replicated cluster for
// proxyConfig: replicas with the given weights, and extra (routing:,
// health:). Use it through replConfig.
func splitConfig(t testing.TB, r *testenv.Replicated, weights []int, extra string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("    replicas:\n")
	for i, s := range r.Replicas {
		fmt.Fprintf(&b, "      - address: %s\n        weight: %d\n", s.Addr, weights[i])
	}
	return b.String() + extra
}

// asApp makes the proxy log in to the servers with testenv.AppUser, which
// read_only stops (the test account has SUPER, which read_only lets
// write).
func asApp(cfg *config.Config) *config.Config {
	cfg.Clusters[0].User, cfg.Clusters[0].Password = testenv.AppUser, testenv.AppPassword
	return cfg
}

// serverIDs maps each server's @@server_id to its index: 0 the primary,
// 1.. the replicas.
func serverIDs(t testing.TB, r *testenv.Replicated) map[string]int {
	ids := map[string]int{r.Primary.Scalar(t, "SELECT @@server_id"): 0}
	for i, s := range r.Replicas {
		ids[s.Scalar(t, "SELECT @@server_id")] = i + 1
	}
	return ids
}

// waitChecked waits until every server of the proxy's cluster has been
// health-checked (replicas only get reads once known to replicate).
func waitChecked(t testing.TB, p *proxy.Proxy) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for _, s := range p.Cluster("main").Servers() {
		for !s.Health().Checked || !s.Health().Up {
			if time.Now().After(deadline) {
				t.Fatalf("server %s not checked: %+v", s.Addr(), s.Health())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// scrapeMetrics returns the proxy's /metrics text.
func scrapeMetrics(t testing.TB, p *proxy.Proxy) string {
	t.Helper()
	resp, err := http.Get("http://" + p.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	return string(b)
}

// statusCounter reads a global status counter from a server.
func statusCounter(t testing.TB, s *testenv.Server, name string) int {
	t.Helper()
	db := s.RootDB(t)
	var n string
	var v int
	if err := db.QueryRow("SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&n, &v); err != nil {
		t.Fatalf("%s on %s: %v", name, s.Addr, err)
	}
	return v
}

// whoAnswers runs `SELECT @@server_id` n times on db and counts the answers
// by server index.
func whoAnswers(t testing.TB, db *sql.DB, ids map[string]int, n int, query string) []int {
	t.Helper()
	counts := make([]int, len(ids))
	for i := 0; i < n; i++ {
		var id string
		if err := db.QueryRow(query).Scan(&id); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		counts[ids[id]]++
	}
	return counts
}

func TestReadWriteSplit(t *testing.T) {
	r := testenv.StartReplicated(t, 2)
	r.Primary.Exec(t, "CREATE DATABASE rw", "CREATE TABLE rw.t (id INT PRIMARY KEY, v INT)")
	r.WaitCaughtUp(t)
	ids := serverIDs(t, r)
	cfg := asApp(proxyConfig(t, r.Primary, splitConfig(t, r, []int{1, 3}, "    routing:\n      consistency: none\n")))
	p := startProxy(t, cfg)
	waitChecked(t, p)
	db := openDB(t, proxyDSN(p, appUser, appPass, "rw", ""))
	db.SetMaxIdleConns(4)

	t.Run("reads go to replicas by weight", func(t *testing.T) {
		got := whoAnswers(t, db, ids, 800, "SELECT @@server_id")
		if got[0] != 0 {
			t.Errorf("the primary answered %d reads, want none: %v", got[0], got)
		}
		// Weights 1:3 of 800: 200 and 600, binomial sd ~12.
		if got[1] < 140 || got[1] > 260 || got[2] < 540 || got[2] > 660 {
			t.Errorf("reads by replica %v, want about [_ 200 600]", got)
		}
	})

	t.Run("writes and transactions go to the primary", func(t *testing.T) {
		before := statusCounter(t, r.Primary, "Com_insert")
		for i := 0; i < 50; i++ {
			// The row records the server that ran the insert (binlog_format
			// ROW replicates the value, not the expression).
			if _, err := db.Exec("INSERT INTO t VALUES (?, @@server_id)", i); err != nil {
				t.Fatal(err)
			}
		}
		if d := statusCounter(t, r.Primary, "Com_insert") - before; d != 50 {
			t.Errorf("primary ran %d inserts, want 50", d)
		}
		r.WaitCaughtUp(t)
		primaryID := r.Primary.Scalar(t, "SELECT @@server_id")
		for i, rep := range r.Replicas {
			if got := rep.Scalar(t, "SELECT COUNT(*) FROM rw.t WHERE v = "+primaryID); got != "50" {
				t.Errorf("replica %d has %s rows written by the primary, want 50", i, got)
			}
		}
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 20; i++ {
			var id string
			if err := tx.QueryRow("SELECT @@server_id").Scan(&id); err != nil {
				t.Fatal(err)
			}
			if ids[id] != 0 {
				t.Fatalf("a read inside a transaction ran on server %d", ids[id])
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("locking reads, hints and side effects go to the primary", func(t *testing.T) {
		for _, q := range []string{
			"SELECT @@server_id FROM t WHERE id = 1 FOR UPDATE",
			"SELECT @@server_id FROM t WHERE id = 1 LOCK IN SHARE MODE",
			"/* shardgate:primary */ SELECT @@server_id",
		} {
			got := whoAnswers(t, db, ids, 20, q)
			if got[0] != 20 {
				t.Errorf("%s: answered by %v, want the primary only", q, got)
			}
		}
		// GET_LOCK pins its session (the lock lives on the connection):
		// on a client connection of its own.
		lockDB := openDB(t, proxyDSN(p, appUser, appPass, "rw", ""))
		var sid string
		if err := lockDB.QueryRow("SELECT @@server_id FROM (SELECT GET_LOCK('x', 0) AS l) AS a").Scan(&sid); err != nil {
			t.Fatal(err)
		}
		if ids[sid] != 0 {
			t.Errorf("GET_LOCK ran on server %d", ids[sid])
		}
		lockDB.Close()
		cfgHint := whoAnswers(t, db, ids, 20, "/*+ shardgate:replica */ SELECT @@server_id")
		if cfgHint[0] != 0 {
			t.Errorf("replica hint: answered by %v", cfgHint)
		}
	})

	t.Run("autocommit off reads from the primary", func(t *testing.T) {
		conn := oneConn(t, db)
		ctx := context.Background()
		if _, err := conn.ExecContext(ctx, "SET autocommit = 0"); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 10; i++ {
			var id string
			if err := conn.QueryRowContext(ctx, "SELECT @@server_id").Scan(&id); err != nil {
				t.Fatal(err)
			}
			if ids[id] != 0 {
				t.Fatalf("autocommit=0 read ran on server %d", ids[id])
			}
		}
		if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
			t.Fatal(err)
		}
	})
}

func TestReadWriteSplitPolicies(t *testing.T) {
	r := testenv.StartReplicated(t, 1)
	r.Primary.Exec(t, "CREATE DATABASE billing", "CREATE DATABASE shop")
	r.WaitCaughtUp(t)
	ids := serverIDs(t, r)
	extra := splitConfig(t, r, []int{1}, "    routing:\n      primary_databases: [billing]\n")
	cfg := asApp(proxyConfig(t, r.Primary, extra))
	cfg.Users[1].ReadFrom = "primary" // the server-account user always reads from the primary
	p := startProxy(t, cfg)
	waitChecked(t, p)

	app := openDB(t, proxyDSN(p, appUser, appPass, "shop", ""))
	if got := whoAnswers(t, app, ids, 20, "SELECT @@server_id"); got[1] != 20 {
		t.Errorf("app on shop: %v, want the replica", got)
	}
	billing := openDB(t, proxyDSN(p, appUser, appPass, "billing", ""))
	if got := whoAnswers(t, billing, ids, 20, "SELECT @@server_id"); got[0] != 20 {
		t.Errorf("app on billing (a primary database): %v, want the primary", got)
	}
	ops := openDB(t, proxyDSN(p, testenv.User, testenv.Password, "shop", ""))
	if got := whoAnswers(t, ops, ids, 20, "SELECT @@server_id"); got[0] != 20 {
		t.Errorf("user with read_from primary: %v, want the primary", got)
	}
	if got := whoAnswers(t, ops, ids, 20, "/* shardgate:replica */ SELECT @@server_id"); got[1] != 20 {
		t.Errorf("replica hint for a read_from-primary user: %v, want the replica", got)
	}
}

// A replica whose replication stopped gets no reads until it runs again.
func TestStoppedReplicaGetsNoReads(t *testing.T) {
	r := testenv.StartReplicated(t, 2)
	r.WaitCaughtUp(t)
	ids := serverIDs(t, r)
	extra := splitConfig(t, r, []int{1, 1}, "    health:\n      interval: 100ms\n")
	p := startProxy(t, asApp(proxyConfig(t, r.Primary, extra)))
	waitChecked(t, p)
	db := openDB(t, proxyDSN(p, appUser, appPass, "", ""))

	r.StopReplication(t, 0)
	waitFor(t, "replica 0 seen as not replicating", 20*time.Second, func() bool {
		return !p.Cluster("main").Servers()[1].Health().Replicating
	})
	if got := whoAnswers(t, db, ids, 100, "SELECT @@server_id"); got[1] != 0 || got[2] != 100 {
		t.Errorf("with replica 0 stopped: %v, want all on replica 1", got)
	}
	m := scrapeMetrics(t, p)
	for _, want := range []string{
		`shardgate_backend_server_replicating{addr="` + r.Replicas[0].Addr + `",cluster="main"} 0`,
		`shardgate_backend_server_replicating{addr="` + r.Replicas[1].Addr + `",cluster="main"} 1`,
		`shardgate_backend_server_writer{addr="` + r.Primary.Addr + `",cluster="main"} 1`,
		`shardgate_backend_server_replication_lag_seconds{addr="` + r.Replicas[0].Addr + `",cluster="main"} -1`,
	} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
	r.StartReplication(t, 0)
	waitFor(t, "replica 0 replicating again", 20*time.Second, func() bool {
		h := p.Cluster("main").Servers()[1].Health()
		return h.Replicating && h.Lag == 0
	})
	if got := whoAnswers(t, db, ids, 200, "SELECT @@server_id"); got[1] < 50 || got[2] < 50 {
		t.Errorf("with replica 0 back: %v, want both replicas used", got)
	}
}

// A session reads its own write on a replica setup where replication lags,
// in both consistency modes.
func TestReadYourWrites(t *testing.T) {
	r := testenv.StartReplicated(t, 1)
	r.Primary.Exec(t, "CREATE DATABASE ryw", "CREATE TABLE ryw.t (id INT PRIMARY KEY)")
	r.WaitCaughtUp(t)
	ids := serverIDs(t, r)
	// The replica applies every event one second late.
	r.Replicas[0].Exec(t, "STOP SLAVE", "CHANGE MASTER TO MASTER_DELAY = 1", "START SLAVE")
	for _, mode := range []string{"window", "causal"} {
		t.Run(mode, func(t *testing.T) {
			extra := splitConfig(t, r, []int{1}, "    routing:\n      consistency: "+mode+"\n      causal_wait_timeout: 5s\n      write_window: 3s\n")
			p := startProxy(t, asApp(proxyConfig(t, r.Primary, extra)))
			waitChecked(t, p)
			db := openDB(t, proxyDSN(p, appUser, appPass, "ryw", ""))
			conn := oneConn(t, db)
			ctx := context.Background()
			base := map[string]int{"window": 0, "causal": 1000}[mode]
			var fromReplica int
			for i := 0; i < 5; i++ {
				id := base + i
				if _, err := conn.ExecContext(ctx, "INSERT INTO t VALUES (?)", id); err != nil {
					t.Fatal(err)
				}
				var sid string
				var n int
				if err := conn.QueryRowContext(ctx, "SELECT @@server_id, COUNT(*) FROM t WHERE id = ?", id).Scan(&sid, &n); err != nil {
					t.Fatal(err)
				}
				if n != 1 {
					t.Fatalf("the session did not read its own write (row %d, answered by server %d)", id, ids[sid])
				}
				if ids[sid] == 1 {
					fromReplica++
				}
			}
			switch mode {
			case "window":
				if fromReplica != 0 {
					t.Errorf("window: %d reads right after a write came from the replica", fromReplica)
				}
			case "causal":
				// The replica is 1 s behind and the wait allows 5 s: the
				// reads wait there rather than going to the primary.
				if fromReplica != 5 {
					t.Errorf("causal: %d of 5 reads came from the replica, want 5", fromReplica)
				}
			}
		})
	}
}

// Draining by configuration reload: an offline server gets no new
// statements, a transaction already running there finishes.
func TestDrainByReload(t *testing.T) {
	r := testenv.StartReplicated(t, 2)
	r.Primary.Exec(t, "CREATE DATABASE dr", "CREATE TABLE dr.t (id INT PRIMARY KEY)")
	r.WaitCaughtUp(t)
	ids := serverIDs(t, r)
	extra := splitConfig(t, r, []int{1, 1}, "")
	cfg := asApp(proxyConfig(t, r.Primary, extra))
	p := startProxy(t, cfg)
	waitChecked(t, p)
	db := openDB(t, proxyDSN(p, appUser, appPass, "dr", ""))

	// Replica 0 offline: reads only on replica 1.
	cfg2 := asApp(proxyConfig(t, r.Primary, strings.Replace(extra, "weight: 1\n", "weight: 1\n        state: offline\n", 1)))
	mustReload(t, p, cfg2)
	if got := whoAnswers(t, db, ids, 50, "SELECT @@server_id"); got[1] != 0 || got[2] != 50 {
		t.Errorf("replica 0 drained: %v, want all on replica 1", got)
	}

	// A transaction open on the primary when it is drained finishes.
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	cfg3 := asApp(proxyConfig(t, r.Primary, extra))
	cfg3.Clusters[0].Primary.State = "offline"
	mustReload(t, p, cfg3)
	if _, err := tx.Exec("INSERT INTO t VALUES (2)"); err != nil {
		t.Fatalf("statement of a transaction running on the drained primary: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("commit on the drained primary: %v", err)
	}
	// No new statement goes there: writes have nowhere to go, reads use
	// the replicas.
	if _, err := db.Exec("INSERT INTO t VALUES (3)"); mysqlErrCode(err) != 9001 {
		t.Errorf("write with the only writable server drained: %v, want error 9001", err)
	}
	if got := whoAnswers(t, db, ids, 20, "SELECT @@server_id"); got[0] != 0 {
		t.Errorf("reads with the primary drained: %v", got)
	}
	if got := r.Primary.Scalar(t, "SELECT COUNT(*) FROM dr.t"); got != "2" {
		t.Errorf("primary has %s rows, want the transaction's 2", got)
	}
}

// TestSessionSetupAndAutocommitOff: statements that only set up a session
// (SET NAMES, SET autocommit, SET SESSION ...) are not writes, so they do
// not keep the session's reads on the primary; a statement that commits
// implicitly (SET autocommit = 1) counts as the end of a transaction. With
// routing.autocommit_off_reads: replica, a session with autocommit off
// reads from a replica until it writes, and no transaction stays open
// there.
func TestSessionSetupAndAutocommitOff(t *testing.T) {
	r := testenv.StartReplicated(t, 1)
	r.Primary.Exec(t, "CREATE DATABASE ac", "CREATE TABLE ac.t (id INT PRIMARY KEY) ENGINE=InnoDB")
	r.WaitCaughtUp(t)
	ids := serverIDs(t, r)
	ctx := context.Background()
	// who runs q on conn and returns the index of the server that answered.
	who := func(t *testing.T, conn *sql.Conn, q string) int {
		t.Helper()
		var id string
		var n int
		if err := conn.QueryRowContext(ctx, q).Scan(&id, &n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return ids[id]
	}
	const read = "SELECT @@server_id, COUNT(*) FROM t"

	t.Run("SET is not a write", func(t *testing.T) {
		extra := splitConfig(t, r, []int{1}, "    routing:\n      consistency: window\n      write_window: 1m\n")
		p := startProxy(t, asApp(proxyConfig(t, r.Primary, extra)))
		waitChecked(t, p)
		conn := oneConn(t, openDB(t, proxyDSN(p, appUser, appPass, "ac", "")))
		for _, set := range []string{
			"SET NAMES utf8mb4",
			"SET autocommit = 1",
			"SET SESSION sql_mode = 'STRICT_TRANS_TABLES'",
			"SET time_zone = '+00:00', SESSION tx_isolation = 'READ-COMMITTED'",
		} {
			mustExec(t, conn, set)
			if got := who(t, conn, read); got != 1 {
				t.Errorf("after %s a read went to server %d, want the replica", set, got)
			}
		}
		// The window itself works: a write keeps the reads on the primary.
		mustExec(t, conn, "INSERT INTO t VALUES (1)")
		mustExec(t, conn, "SET NAMES utf8mb4")
		if got := who(t, conn, read); got != 0 {
			t.Errorf("a read right after a write went to server %d, want the primary", got)
		}
	})

	t.Run("SET autocommit = 1 ends the transaction", func(t *testing.T) {
		extra := splitConfig(t, r, []int{1}, "    routing:\n      consistency: window\n      write_window: 1s\n")
		p := startProxy(t, asApp(proxyConfig(t, r.Primary, extra)))
		waitChecked(t, p)
		conn := oneConn(t, openDB(t, proxyDSN(p, appUser, appPass, "ac", "")))
		mustExec(t, conn, "SET autocommit = 0", "INSERT INTO t VALUES (2)")
		time.Sleep(1500 * time.Millisecond)     // past the window of the INSERT
		mustExec(t, conn, "SET autocommit = 1") // commits
		if got := who(t, conn, read); got != 0 {
			t.Errorf("a read right after an implicit commit went to server %d, want the primary", got)
		}
	})

	t.Run("autocommit off reads from a replica", func(t *testing.T) {
		extra := splitConfig(t, r, []int{1}, "    routing:\n      consistency: none\n      autocommit_off_reads: replica\n")
		p := startProxy(t, asApp(proxyConfig(t, r.Primary, extra)))
		waitChecked(t, p)
		conn := oneConn(t, openDB(t, proxyDSN(p, appUser, appPass, "ac", "")))
		mustExec(t, conn, "SET autocommit = 0")
		for i := 0; i < 3; i++ {
			if got := who(t, conn, read); got != 1 {
				t.Fatalf("autocommit=0 read %d before any write went to server %d, want the replica", i, got)
			}
		}
		// The first write opens the transaction on the primary; it stays
		// there until COMMIT.
		mustExec(t, conn, "INSERT INTO t VALUES (3)")
		var sid string
		var n int
		if err := conn.QueryRowContext(ctx, "SELECT @@server_id, COUNT(*) FROM t WHERE id = 3").Scan(&sid, &n); err != nil {
			t.Fatal(err)
		}
		if ids[sid] != 0 || n != 1 {
			t.Errorf("a read in the transaction ran on server %d and saw %d rows, want the primary and its own write", ids[sid], n)
		}
		if n := r.Replicas[0].Scalar(t, "SELECT COUNT(*) FROM information_schema.INNODB_TRX"); n != "0" {
			t.Errorf("%s transactions open on the replica, want none", n)
		}
		mustExec(t, conn, "COMMIT")
		if got := who(t, conn, read); got != 1 {
			t.Errorf("the first read after COMMIT went to server %d, want the replica", got)
		}
		r.WaitCaughtUp(t)
		if got := r.Replicas[0].Scalar(t, "SELECT COUNT(*) FROM ac.t WHERE id = 3"); got != "1" {
			t.Errorf("the write of the autocommit=0 transaction did not reach the replica")
		}
	})
}

// TestCausalReadAfterResend: a causal read whose replica connection turns
// out closed by the server (it is sent again on a fresh one) still waits
// for the session's last write there.
func TestCausalReadAfterResend(t *testing.T) {
	r := testenv.StartReplicated(t, 1)
	r.Primary.Exec(t, "CREATE DATABASE cr", "CREATE TABLE cr.t (id INT PRIMARY KEY)")
	r.WaitCaughtUp(t)
	ids := serverIDs(t, r)
	r.Replicas[0].Exec(t, "STOP SLAVE", "CHANGE MASTER TO MASTER_DELAY = 2", "START SLAVE")
	extra := splitConfig(t, r, []int{1}, "    routing:\n      consistency: causal\n      causal_wait_timeout: 10s\n")
	p := startProxy(t, asApp(proxyConfig(t, r.Primary, extra)))
	waitChecked(t, p)
	conn := oneConn(t, openDB(t, proxyDSN(p, appUser, appPass, "cr", "")))
	ctx := context.Background()
	read := func(id int) (server, n int) {
		t.Helper()
		var sid string
		if err := conn.QueryRowContext(ctx, "SELECT @@server_id, COUNT(*) FROM t WHERE id = ?", id).Scan(&sid, &n); err != nil {
			t.Fatal(err)
		}
		return ids[sid], n
	}
	waitFor(t, "a read on the replica (a pooled connection there)", 10*time.Second, func() bool {
		srv, _ := read(0)
		return srv == 1
	})
	// The next read needs its connection brought in step (sync).
	if _, err := conn.ExecContext(ctx, "SET SESSION sql_mode = 'ANSI_QUOTES'"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	root := r.Replicas[0].RootDB(t)
	rows, err := root.Query("SELECT ID FROM information_schema.PROCESSLIST WHERE USER = ? AND COMMAND = 'Sleep' AND DB = 'cr'", testenv.AppUser)
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		if _, err := root.Exec(fmt.Sprintf("KILL %d", id)); err == nil {
			killed++
		}
	}
	rows.Close()
	if killed == 0 {
		t.Fatal("no pooled replica connection to kill")
	}
	time.Sleep(50 * time.Millisecond) // the closes reach the proxy's sockets
	if srv, n := read(1); n != 1 {
		t.Fatalf("after a resend, the session did not read its own write (answered by server %d)", srv)
	}
}
