package main_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
)

// Idle clients as applications open them: go-sql-driver's database/sql,
// a default database in the DSN, a ping once connected, and many dials at
// once (a pool filling up, a fleet of services restarting). Logging in one
// by one with no database and no command, as this benchmark did before
// issue 23, measured 2.8 KB per idle connection where real drivers left
// 7.2 KB.
const (
	idleDB       = "idlebench"
	idleParallel = 64 // dials at once
)

// idleSampleAt are the times after the last login at which the proxy's
// RSS is sampled: with no help from the test (no forced GC, no admin
// call), as a user watching the process would.
var idleSampleAt = []time.Duration{3 * time.Second, 5 * time.Second, 10 * time.Second}

// BenchmarkIdleConnections opens 10,000 client connections to a shardgate
// process the way applications do (idleFleet), leaves them idle and
// reports the growth of the proxy's RSS per connection as a user sees it
// from outside: the worst of the samples 3, 5 and 10 s after the last
// login (the target of issue 23: <= 4 KB).
//
//	go test ./cmd/shardgate -run '^$' -bench IdleConnections -benchtime 1x
//
// SHARDGATE_IDLE_QUERY="SELECT 1" has each connection run that statement
// after its ping; SHARDGATE_IDLE_PROFILE=DIR keeps the proxy's heap
// profile, smaps and stderr there (saveIdleProfile).
func BenchmarkIdleConnections(b *testing.B) {
	for range b.N {
		r := measureIdle(b, 10000)
		b.ReportMetric(r.perConn(), "bytes/conn")
		b.ReportMetric(float64(r.worst), "KB-rss")
		b.ReportMetric(r.loginTime.Seconds(), "s-logins")
	}
}

// TestIdleConnectionsMemory is issue 23's figure as a test: 10,000 idle
// connections opened the way applications open them cost the proxy at
// most idleLimitBytes of RSS each, as seen from outside (8.6 KB before
// issue 23). The RSS is polled until it settles under the limit (the
// proxy returns what the logins left behind once they are over), then
// read once more 10 s after the last login: it must stay there. As many
// connections as the benchmark's: what 64 logins at once cost besides
// the connections (the backend connections that check their database)
// counts for less the more connections there are.
func TestIdleConnectionsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 10,000 connections")
	}
	const conns = 10000
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS "+idleDB)
	p, listen := startServe(t, "--backend", fmt.Sprintf("%s:%s@%s", testenv.User, testenv.Password, srv.Addr))
	pid := p.cmd.Process.Pid
	waitSettled(t, pid)
	before := procStatusKB(t, pid, "VmRSS")
	fleet, err := openIdleFleet(context.Background(), fmt.Sprintf("%s:%s@tcp(%s)/%s", testenv.User, testenv.Password, listen, idleDB), conns, idleParallel)
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.close()
	loggedIn := time.Now()
	perConn := func() float64 { return float64(procStatusKB(t, pid, "VmRSS")-before) * 1024 / conns }
	var got float64
	for deadline := loggedIn.Add(20 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		if got = perConn(); got <= idleLimitBytes {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("20 s after %d logins the proxy's RSS is still %.0f bytes per idle connection above where it started, want <= %d",
				conns, got, idleLimitBytes)
		}
	}
	settled := time.Since(loggedIn)
	time.Sleep(time.Until(loggedIn.Add(10 * time.Second)))
	if later := perConn(); later > idleLimitBytes {
		t.Fatalf("the proxy's RSS was %.0f bytes per idle connection %v after the last login, %.0f bytes 10 s after: want <= %d",
			got, settled.Round(100*time.Millisecond), later, idleLimitBytes)
	}
	t.Logf("%d idle connections: %.0f bytes each %v after the last login, %.0f bytes 10 s after", conns, got, settled.Round(100*time.Millisecond), perConn())
}

// idleLimitBytes is what an idle connection may cost the proxy (issue 23).
const idleLimitBytes = 4096

// idleResult is one measurement of idle connections.
type idleResult struct {
	conns     int
	before    int // the proxy's RSS before the first login, KB
	worst     int // the largest sample after the last login, KB
	loginTime time.Duration
}

// perConn is the RSS growth per idle connection in bytes.
func (r idleResult) perConn() float64 {
	return float64(r.worst-r.before) * 1024 / float64(r.conns)
}

// measureIdle starts a shardgate process, opens conns idle connections to
// it with idleFleet and samples its RSS at idleSampleAt.
func measureIdle(tb testing.TB, conns int) idleResult {
	tb.Helper()
	srv := testenv.Shared(tb)
	srv.Exec(tb, "CREATE DATABASE IF NOT EXISTS "+idleDB)
	admin := freeAddr(tb)
	p, listen := startServe(tb, "--backend", fmt.Sprintf("%s:%s@%s", testenv.User, testenv.Password, srv.Addr), "--admin-http", admin)
	pid := p.cmd.Process.Pid
	waitSettled(tb, pid)
	r := idleResult{conns: conns, before: procStatusKB(tb, pid, "VmRSS")}
	start := time.Now()
	fleet, err := openIdleFleet(context.Background(), fmt.Sprintf("%s:%s@tcp(%s)/%s", testenv.User, testenv.Password, listen, idleDB), conns, idleParallel)
	if err != nil {
		tb.Fatal(err)
	}
	defer fleet.close()
	loggedIn := time.Now()
	r.loginTime = loggedIn.Sub(start)
	for _, at := range idleSampleAt {
		time.Sleep(time.Until(loggedIn.Add(at)))
		rss := procStatusKB(tb, pid, "VmRSS")
		tb.Logf("%v after the last login: RSS %d KB, %.0f bytes per connection", at, rss, float64(rss-r.before)*1024/float64(conns))
		r.worst = max(r.worst, rss)
	}
	tb.Logf("%d connections (%d at a time) logged in in %v; RSS before %d KB, worst %d KB: %.0f bytes per idle connection",
		conns, idleParallel, r.loginTime.Round(time.Millisecond), r.before, r.worst, r.perConn())
	logRuntimeMemory(tb, admin)
	if dir := os.Getenv("SHARDGATE_IDLE_PROFILE"); dir != "" {
		saveIdleProfile(tb, dir, pid, admin, p)
	}
	return r
}

// saveIdleProfile keeps, in dir, what says where the idle connections'
// memory is: the proxy's heap profile (go tool pprof), its
// /proc/PID/smaps and its stderr (run the benchmark with
// GODEBUG=gctrace=1 in the environment, which the proxy inherits, to have
// every collection there).
func saveIdleProfile(tb testing.TB, dir string, pid int, admin string, p *proc) {
	tb.Helper()
	save := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			tb.Logf("save %s: %v", name, err)
		}
	}
	for _, prof := range []string{"heap", "goroutine"} {
		resp, err := http.Get("http://" + admin + "/debug/pprof/" + prof)
		if err != nil {
			tb.Logf("%s profile: %v", prof, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		save(prof+".pprof", body)
	}
	if smaps, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid)); err == nil {
		save("smaps", smaps)
	}
	save("stderr", []byte(p.stderr.String()))
	tb.Logf("heap profile, smaps and stderr of the proxy saved in %s", dir)
}

// waitSettled waits until the freshly started proxy's RSS stops moving
// (its startup: the backend's identity learnt, the pool warmed), so that
// the baseline is not taken in the middle of it.
func waitSettled(tb testing.TB, pid int) {
	tb.Helper()
	prev := procStatusKB(tb, pid, "VmRSS")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(300 * time.Millisecond)
		rss := procStatusKB(tb, pid, "VmRSS")
		if rss-prev < 64 && prev-rss < 64 {
			return
		}
		prev = rss
	}
}

// idleFleet is a database/sql pool holding connections that each logged
// in with a default database and answered a ping, then stay idle.
type idleFleet struct {
	db    *sql.DB
	conns []*sql.Conn
}

// openIdleFleet opens n connections through go-sql-driver, parallel
// dials at a time, each one taken out of the pool (sql.DB.Conn, which
// dials when the pool has none idle) and pinged.
func openIdleFleet(ctx context.Context, dsn string, n, parallel int) (*idleFleet, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dsn, err)
	}
	db.SetMaxIdleConns(n)
	f := &idleFleet{db: db, conns: make([]*sql.Conn, n)}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, parallel)
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				c, err := f.connect(ctx)
				if err != nil {
					errs <- fmt.Errorf("connection %d: %w", i, err)
					return
				}
				f.conns[i] = c
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		f.close()
		return nil, err
	}
	return f, nil
}

// connect dials one connection and pings it.
func (f *idleFleet) connect(ctx context.Context) (*sql.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := f.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.PingContext(ctx); err != nil {
		c.Close()
		return nil, err
	}
	if q := os.Getenv("SHARDGATE_IDLE_QUERY"); q != "" {
		// Connections that ran a statement before they went idle.
		if _, err := c.ExecContext(ctx, q); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

func (f *idleFleet) close() {
	for _, c := range f.conns {
		if c != nil {
			c.Close()
		}
	}
	f.db.Close()
}

// logRuntimeMemory logs the Go runtime's view of the proxy's memory.
func logRuntimeMemory(tb testing.TB, admin string) {
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		tb.Logf("metrics: %v", err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, line := range strings.Split(string(body), "\n") {
		for _, m := range []string{"go_memstats_stack_inuse_bytes", "go_memstats_heap_inuse_bytes", "go_memstats_heap_alloc_bytes", "go_memstats_heap_released_bytes", "go_memstats_sys_bytes", "go_goroutines"} {
			if strings.HasPrefix(line, m+" ") {
				tb.Log(line)
			}
		}
	}
}
