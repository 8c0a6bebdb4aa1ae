package proxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/testenv"
)

// Pipelining (pool.pipeline_connections, issue 23 §1): reads of several
// sessions in flight at once on one backend connection, each answered
// exactly as on a connection of its own.

// pipelineProxy starts a proxy whose cluster pipelines reads on lanes
// connections (of 4), depth reads each, over database pl of srv, whose
// table t has rows 1..1000 with c = 'row-<id>'.
func pipelineProxy(t *testing.T, srv *testenv.Server, lanes, depth int) *proxy.Proxy {
	t.Helper()
	srv.Exec(t, "DROP DATABASE IF EXISTS pl", "CREATE DATABASE pl", "USE pl",
		"CREATE TABLE pl.t (id INT PRIMARY KEY, c VARCHAR(20) NOT NULL, n INT)",
		"INSERT INTO pl.t SELECT seq, CONCAT('row-', seq), IF(seq % 10 = 0, NULL, seq) FROM seq_1_to_1000")
	cfg := proxyConfig(t, srv, "")
	cfg.Clusters[0].Pool.PipelineConnections = lanes
	cfg.Clusters[0].Pool.PipelineDepth = depth
	return startProxy(t, cfg)
}

// poolMetric sums a pool metric of the proxy over its pools.
func poolMetric(t *testing.T, p *proxy.Proxy, name string) float64 {
	t.Helper()
	sum := 0.0
	for _, line := range strings.Split(scrapeMetrics(t, p), "\n") {
		if !strings.HasPrefix(line, name+"{") || strings.Contains(line, "/evaluator") {
			continue
		}
		f, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metric %q: %v", line, err)
		}
		sum += f
	}
	return sum
}

// TestPipelinedReadsExact runs 32 clients' point selects over two lanes
// of depth 8: every answer is its own statement's, and so are the
// warnings or the error a client's read raised among the others' (SHOW
// WARNINGS right after it); the lanes carried them (the pipelined count); statements that may not be pipelined
// (a transaction's, user variables) still run, and the session state they
// set is kept.
func TestPipelinedReadsExact(t *testing.T) {
	srv := testenv.Shared(t)
	p := pipelineProxy(t, srv, 2, 8)
	db := openDB(t, proxyDSN(p, testenv.User, testenv.Password, "pl", "interpolateParams=true"))
	db.SetMaxOpenConns(32)
	const clients, each = 32, 150
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Go(func() {
			conn, err := db.Conn(context.Background())
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			for k := range each {
				id := 1 + (i*each+k*7)%1000
				if k%10 == 9 {
					// Diagnostics of one session's read among the others'.
					if err := pipelinedDiagnosticsRead(conn, id, k%20 == 19); err != nil {
						errs <- fmt.Errorf("client %d: %w", i, err)
						return
					}
					continue
				}
				var c string
				var n sql.NullInt64
				if err := conn.QueryRowContext(context.Background(), "SELECT c, n FROM t WHERE id = ?", id).Scan(&c, &n); err != nil {
					errs <- fmt.Errorf("client %d id %d: %w", i, id, err)
					return
				}
				if c != fmt.Sprintf("row-%d", id) || n.Valid != (id%10 != 0) || (n.Valid && n.Int64 != int64(id)) {
					errs <- fmt.Errorf("client %d: id %d answered (%q, %v)", i, id, c, n)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := poolMetric(t, p, "shardgate_backend_pool_pipelined_total"); got < clients*each/10 {
		t.Fatalf("%v of %d reads were pipelined", got, clients*each)
	}
	if got := poolMetric(t, p, "shardgate_backend_pool_pipeline_connections"); got > 2 {
		t.Fatalf("%v pipelining connections, want at most 2 (idle ones leave)", got)
	}

	// Statements that may not be pipelined run the usual way, with the
	// session's state.
	c := oneConn(t, db)
	mustExec(t, c, "SET @v = 'mine'", "BEGIN")
	if got := queryString(t, c, "SELECT CONCAT(@v, c) FROM t WHERE id = 3"); got != "minerow-3" {
		t.Fatalf("user variable read: %q", got)
	}
	mustExec(t, c, "UPDATE t SET c = 'changed' WHERE id = 3")
	if got := queryString(t, c, "SELECT c FROM t WHERE id = 3"); got != "changed" {
		t.Fatalf("a read in the transaction saw %q", got)
	}
	mustExec(t, c, "ROLLBACK")
	if got := queryString(t, c, "SELECT c FROM t WHERE id = 3"); got != "row-3" {
		t.Fatalf("after ROLLBACK: %q", got)
	}
	// A session in another state (its own sql_mode) gets its own lane or
	// the usual way, and its state holds.
	mustExec(t, c, "SET SESSION sql_mode = 'ANSI_QUOTES'")
	if got := queryString(t, c, `SELECT "c" FROM t WHERE id = 4`); got != "row-4" {
		t.Fatalf("ANSI_QUOTES read: %q", got)
	}
}

// pipelinedDiagnosticsRead runs a read of row id that raises a warning
// (a conversion), or an error, and checks what SHOW WARNINGS then lists:
// that read's own, though other sessions' reads ran on its lane since.
func pipelinedDiagnosticsRead(conn *sql.Conn, id int, failing bool) error {
	ctx := context.Background()
	want := fmt.Sprintf("Warning 1292 Truncated incorrect INTEGER value: 'row-%d'", id)
	if failing {
		want = fmt.Sprintf("Error 1054 Unknown column 'nosuch%d' in ", id)
		_, err := conn.ExecContext(ctx, fmt.Sprintf("SELECT nosuch%d FROM t WHERE id = %d", id, id))
		if mysqlErrCode(err) != 1054 {
			return fmt.Errorf("unknown column: %v", err)
		}
	} else {
		var n int64
		if err := conn.QueryRowContext(ctx, "SELECT CAST(c AS SIGNED) FROM t WHERE id = ?", id).Scan(&n); err != nil {
			return fmt.Errorf("conversion: %w", err)
		}
	}
	rows, err := conn.QueryContext(ctx, "SHOW WARNINGS")
	if err != nil {
		return err
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var level, msg string
		var code int
		if err := rows.Scan(&level, &code, &msg); err != nil {
			return err
		}
		got = append(got, fmt.Sprintf("%s %d %s", level, code, msg))
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], want) {
		return fmt.Errorf("SHOW WARNINGS after the read of %d: %q, want %q…", id, got, want)
	}
	return rows.Err()
}

// TestPipelinedDiagnostics compares, statement by statement, a session
// whose reads are pipelined with one on the server itself: the errors,
// the warnings a read raised (SHOW WARNINGS, @@warning_count, SHOW
// ERRORS) and FOUND_ROWS() after it are that read's.
func TestPipelinedDiagnostics(t *testing.T) {
	srv := testenv.Shared(t)
	p := pipelineProxy(t, srv, 1, 8)
	proxied := oneConn(t, openDB(t, proxyDSN(p, testenv.User, testenv.Password, "pl", "interpolateParams=true")))
	direct := oneConn(t, openDB(t, fmt.Sprintf("%s:%s@tcp(%s)/pl?interpolateParams=true", testenv.User, testenv.Password, srv.Addr)))
	before := poolMetric(t, p, "shardgate_backend_pool_pipelined_total")
	steps := []string{
		"SELECT CAST(CONCAT(id, 'x') AS SIGNED) FROM t WHERE id IN (1, 2)",
		"SHOW WARNINGS",
		"SELECT @@warning_count",
		"SELECT c FROM t WHERE id = 5",
		"SHOW WARNINGS",
		"SELECT nosuch FROM t WHERE id = 5",
		"SHOW WARNINGS",
		"SHOW ERRORS",
		"SELECT @@error_count, @@warning_count",
		"SELECT c FROM t WHERE id BETWEEN 10 AND 14",
		"SELECT FOUND_ROWS()",
		"SELECT 1 / 0 FROM t WHERE id = 1",
		"SHOW WARNINGS",
		"SELECT c FROM t WHERE id = 7",
		"SELECT @@warning_count",
	}
	for _, q := range steps {
		// Rows, column names and types, or the error's code.
		if want, got := resultString(direct, q), resultString(proxied, q); want != got {
			t.Errorf("%s\n  server: %s\n  proxy:  %s", q, want, got)
		}
	}
	waitFor(t, "the 5 reads of a table pipelined", 20*time.Second, func() bool {
		return poolMetric(t, p, "shardgate_backend_pool_pipelined_total")-before >= 5
	})
}

// longRead is a pipelinable read that runs until it is killed.
const longRead = "SELECT COUNT(*) FROM seq_1_to_4000000000 WHERE MD5(seq) = 'x'"

// TestPipelinedKill: KILL QUERY of a read waiting behind another on its
// lane answers 1317 at once, while the read ahead runs on; KILL QUERY of
// the read the server runs stops it, and the reads behind it get their
// own answers.
func TestPipelinedKill(t *testing.T) {
	srv := testenv.Shared(t)
	p := pipelineProxy(t, srv, 1, 8)
	db := openDB(t, proxyDSN(p, testenv.User, testenv.Password, "pl", "interpolateParams=true"))
	head, waiting, behind, killer := oneConn(t, db), oneConn(t, db), oneConn(t, db), oneConn(t, db)
	headID := queryString(t, head, "SELECT CONNECTION_ID()")
	waitingID := queryString(t, waiting, "SELECT CONNECTION_ID()")
	run := func(c *sql.Conn, q string) chan error {
		done := make(chan error, 1)
		go func() {
			var s string
			done <- c.QueryRowContext(context.Background(), q).Scan(&s)
		}()
		return done
	}
	before := poolMetric(t, p, "shardgate_backend_pool_pipelined_total")
	headDone := run(head, longRead)
	waitFor(t, "the long read running on the server", 20*time.Second, func() bool {
		return srv.Scalar(t, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO = \""+longRead+"\"") != "0"
	})
	waitingDone := run(waiting, longRead)
	waitFor(t, "two reads in flight on the lane", 20*time.Second, func() bool {
		return poolMetric(t, p, "shardgate_backend_pool_pipeline_in_flight") == 2
	})
	mustExec(t, killer, "KILL QUERY "+waitingID)
	select {
	case err := <-waitingDone:
		if mysqlErrCode(err) != 1317 {
			t.Fatalf("killed waiting read: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("KILL QUERY of a read waiting on its lane was not answered")
	}
	select {
	case err := <-headDone:
		t.Fatalf("the read ahead ended with the kill of the one behind it: %v", err)
	default:
	}
	behindDone := make(chan string, 1)
	go func() {
		var s string
		if err := behind.QueryRowContext(context.Background(), "SELECT c FROM t WHERE id = 9").Scan(&s); err != nil {
			s = err.Error()
		}
		behindDone <- s
	}()
	// Three in flight: the long read, the killed one (its answer, when
	// it comes, is dropped) and this one.
	waitFor(t, "a read behind the long one on the lane", 20*time.Second, func() bool {
		return poolMetric(t, p, "shardgate_backend_pool_pipeline_in_flight") == 3
	})
	mustExec(t, killer, "KILL QUERY "+headID)
	select {
	case err := <-headDone:
		if mysqlErrCode(err) != 1317 {
			t.Fatalf("killed head read: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("KILL QUERY did not stop the read the server ran")
	}
	if got := <-behindDone; got != "row-9" {
		t.Fatalf("the read behind the killed one: %q", got)
	}
	// Counted once the lane has the next answer to read: after the
	// client had its own.
	waitFor(t, "the killed read and the one behind it answered on the lane", 20*time.Second, func() bool {
		return poolMetric(t, p, "shardgate_backend_pool_pipelined_total")-before >= 2
	})
	for _, c := range []*sql.Conn{head, waiting, behind} {
		if got := queryString(t, c, "SELECT c FROM t WHERE id = 11"); got != "row-11" {
			t.Fatalf("after the kills: %q", got)
		}
	}
}

// TestPipelinedConnectionDies: the server closes a lane's connection
// with reads in flight on it; none of them has had a byte of its answer,
// so each runs again on a connection of its own and is answered, and the
// lane is replaced.
func TestPipelinedConnectionDies(t *testing.T) {
	srv := testenv.Shared(t)
	p := pipelineProxy(t, srv, 1, 8)
	db := openDB(t, proxyDSN(p, testenv.User, testenv.Password, "pl", "interpolateParams=true"))
	head, killer := oneConn(t, db), oneConn(t, db)
	headID := queryString(t, head, "SELECT CONNECTION_ID()")
	headDone := make(chan error, 1)
	go func() {
		var s string
		headDone <- head.QueryRowContext(context.Background(), longRead).Scan(&s)
	}()
	waitFor(t, "the long read running on the server", 20*time.Second, func() bool {
		return srv.Scalar(t, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO = \""+longRead+"\"") != "0"
	})
	lane := srv.Scalar(t, "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO = \""+longRead+"\"")
	const behind = 6
	answers := make(chan string, behind)
	for i := range behind {
		c := oneConn(t, db)
		go func() {
			var s string
			if err := c.QueryRowContext(context.Background(), "SELECT c FROM t WHERE id = ?", 20+i).Scan(&s); err != nil {
				s = err.Error()
			}
			answers <- s
		}()
	}
	waitFor(t, "reads queued behind the long one", 20*time.Second, func() bool {
		return poolMetric(t, p, "shardgate_backend_pool_pipeline_in_flight") == behind+1
	})
	srv.Exec(t, "KILL CONNECTION "+lane)
	got := map[string]bool{}
	for range behind {
		got[<-answers] = true
	}
	for i := range behind {
		if !got[fmt.Sprintf("row-%d", 20+i)] {
			t.Fatalf("answers after the lane died: %v", got)
		}
	}
	// The long read ran again on a connection of its own: stop it there.
	waitFor(t, "the long read running again", 20*time.Second, func() bool {
		return srv.Scalar(t, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO = \""+longRead+"\"") != "0"
	})
	mustExec(t, killer, "KILL QUERY "+headID)
	if err := <-headDone; mysqlErrCode(err) != 1317 {
		t.Fatalf("long read after its lane died: %v", err)
	}
	if got := queryString(t, head, "SELECT c FROM t WHERE id = 30"); got != "row-30" {
		t.Fatalf("after: %q", got)
	}
}

// TestPipelinedReload: pool.pipeline_connections applies at once on
// RELOAD: set to 0, the lanes leave (their connections go back to the
// pool) and reads run one at a time; set again, reads are pipelined again.
func TestPipelinedReload(t *testing.T) {
	srv := testenv.Shared(t)
	p := pipelineProxy(t, srv, 1, 8)
	c := oneConn(t, openDB(t, proxyDSN(p, testenv.User, testenv.Password, "pl", "interpolateParams=true")))
	read := func() {
		t.Helper()
		if got := queryString(t, c, "SELECT c FROM t WHERE id = ?", 42); got != "row-42" {
			t.Fatalf("read: %q", got)
		}
	}
	read()
	waitFor(t, "a read pipelined", 20*time.Second, func() bool {
		return poolMetric(t, p, "shardgate_backend_pool_pipelined_total") >= 1
	})
	cfg := proxyConfig(t, srv, "")
	mustReload(t, p, cfg)
	waitFor(t, "the lane gone", 20*time.Second, func() bool {
		return poolMetric(t, p, "shardgate_backend_pool_pipeline_connections") == 0
	})
	before := poolMetric(t, p, "shardgate_backend_pool_pipelined_total")
	for range 5 {
		read()
	}
	if got := poolMetric(t, p, "shardgate_backend_pool_pipelined_total"); got != before {
		t.Fatalf("%v reads pipelined with pipeline_connections 0", got-before)
	}
	cfg = proxyConfig(t, srv, "")
	cfg.Clusters[0].Pool.PipelineConnections = 2
	mustReload(t, p, cfg)
	read()
	waitFor(t, "reads pipelined again", 20*time.Second, func() bool {
		return poolMetric(t, p, "shardgate_backend_pool_pipelined_total") > before
	})
}

// TestPipelinedReplicaThenPin: a read pipelined on a replica leaves no
// routing behind it: a statement after it that pins the session (a user
// variable) runs on the primary, and the writes after that too (found by
// review: the read's server was kept for the next statement).
func TestPipelinedReplicaThenPin(t *testing.T) {
	r := testenv.StartReplicated(t, 1)
	r.Primary.Exec(t, "CREATE DATABASE pr", "CREATE TABLE pr.t (id INT PRIMARY KEY, c VARCHAR(20))",
		"INSERT INTO pr.t VALUES (1, 'one')")
	r.WaitCaughtUp(t)
	ids := serverIDs(t, r)
	cfg := asApp(proxyConfig(t, r.Primary, splitConfig(t, r, []int{1}, "")))
	for i := range cfg.Clusters {
		cfg.Clusters[i].Pool.PipelineConnections = 1
	}
	p := startProxy(t, cfg)
	waitChecked(t, p)
	c := oneConn(t, openDB(t, proxyDSN(p, appUser, appPass, "pr", "interpolateParams=true")))
	if got := queryString(t, c, "SELECT c FROM t WHERE id = 1"); got != "one" {
		t.Fatalf("read: %q", got)
	}
	waitFor(t, "the read pipelined", 20*time.Second, func() bool {
		return poolMetric(t, p, "shardgate_backend_pool_pipelined_total") >= 1
	})
	mustExec(t, c, "SET @a = 2", "INSERT INTO t VALUES (@a, 'two')")
	if got := ids[queryString(t, c, "SELECT @@server_id")]; got != 0 {
		t.Fatalf("the pinned session is on server %d, want the primary", got)
	}
}

// TestPipelinedStateChange: a pipelined read calling a stored function
// that sets a session variable changes the session's state, as on a
// connection of its own, and the lane leaves pipelining: another
// session's read does not run in that state.
func TestPipelinedStateChange(t *testing.T) {
	srv := testenv.Shared(t)
	p := pipelineProxy(t, srv, 1, 8)
	srv.Exec(t, "CREATE FUNCTION pl.setprec() RETURNS INT NO SQL BEGIN SET SESSION div_precision_increment = 9; RETURN 1; END")
	db := openDB(t, proxyDSN(p, testenv.User, testenv.Password, "pl", "interpolateParams=true"))
	a, b := oneConn(t, db), oneConn(t, db)
	if got := queryString(t, b, "SELECT 1/3 FROM t WHERE id = 1"); got != "0.3333" {
		t.Fatalf("b before: %q", got)
	}
	if got := queryString(t, a, "SELECT setprec() FROM t WHERE id = 1"); got != "1" {
		t.Fatalf("a: %q", got)
	}
	if got := queryString(t, a, "SELECT 1/3 FROM t WHERE id = 1"); got != "0.333333333" {
		t.Fatalf("a after its function set div_precision_increment: %q", got)
	}
	for range 5 {
		if got := queryString(t, b, "SELECT 1/3 FROM t WHERE id = 1"); got != "0.3333" {
			t.Fatalf("b after a's function: %q", got)
		}
	}
}

// TestPipelinedIdleLanesLeave: lanes that take no read for a tick of the
// pool's maintenance (a second at most) leave, and their connections go
// back to the pool for writes and transactions.
func TestPipelinedIdleLanesLeave(t *testing.T) {
	srv := testenv.Shared(t)
	p := pipelineProxy(t, srv, 2, 8)
	c := oneConn(t, openDB(t, proxyDSN(p, testenv.User, testenv.Password, "pl", "interpolateParams=true")))
	if got := queryString(t, c, "SELECT c FROM t WHERE id = ?", 7); got != "row-7" {
		t.Fatalf("read: %q", got)
	}
	waitFor(t, "the read pipelined", 20*time.Second, func() bool {
		return poolMetric(t, p, "shardgate_backend_pool_pipelined_total") >= 1
	})
	waitFor(t, "the idle lane gone", 20*time.Second, func() bool {
		return poolMetric(t, p, "shardgate_backend_pool_pipeline_connections") == 0
	})
	if got := queryString(t, c, "SELECT c FROM t WHERE id = ?", 8); got != "row-8" {
		t.Fatalf("read after: %q", got)
	}
}
