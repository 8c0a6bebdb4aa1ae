package main_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shardgate/shardgate/internal/testenv"
)

// The scatter read of a sharded table through the shardgate process: t is
// sharded on id (rule mod) over two shards of two sub-tables each, and
// every sub-table holds scatterRows rows of scatterRowBytes bytes (250 MiB
// in all). The sub-tables are views over MariaDB's SEQUENCE engine: the
// rows cost the servers neither disk nor load time, and the proxy cannot
// tell them from tables. The 1 GiB version is `sgbench stream`
// (docs/benchmarks.md).
const (
	scatterDB       = "scatmem"
	scatterSubs     = 4
	scatterRows     = 64 << 10 // per sub-table
	scatterRowBytes = 1000
	scatterTotal    = scatterSubs * scatterRows
	// scatterRSSLimit is issue 13's bound on the proxy's RSS growth while
	// a scatter read streams.
	scatterRSSLimit = 64 << 10 // KB
)

// scatterEnv is the proxy process and its two shards.
type scatterEnv struct {
	p             *proc
	listen, admin string
	s0, s1        *testenv.Server
	direct0       *sql.DB // s0, bypassing the proxy
	proxy         *sql.DB
}

// startScatter creates the sub-tables t_0000, t_0001 on s0 (the shared
// server) and t_0002, t_0003 on s1 (a server of the test's own, which the
// last subtest kills) and starts `shardgate serve` over them.
func startScatter(t *testing.T) *scatterEnv {
	t.Helper()
	e := &scatterEnv{s0: testenv.Shared(t), s1: testenv.Start(t, testenv.Options{})}
	for i, s := range []*testenv.Server{e.s0, e.s0, e.s1, e.s1} {
		if i%2 == 0 {
			s.Exec(t, "DROP DATABASE IF EXISTS "+scatterDB, "CREATE DATABASE "+scatterDB)
		}
		// Sub-table i holds the ids equal to i mod 4: where the mod rule
		// places them.
		s.Exec(t, fmt.Sprintf("CREATE VIEW %s.t_%04d AS SELECT seq*%d+%d AS id, REPEAT('%c', %d) AS v FROM %s.seq_0_to_%d",
			scatterDB, i, scatterSubs, i, 'a'+i, scatterRowBytes, scatterDB, scatterRows-1))
	}
	cfg := fmt.Sprintf(`listeners: [{address: "127.0.0.1:0"}]
log: {level: warn}
users:
  - {name: %[1]s, password: %[2]q, default_database: %[3]s}
clusters:
  - {name: s0, user: %[1]s, password: %[2]q, primary: {address: %[4]q}}
  - {name: s1, user: %[1]s, password: %[2]q, primary: {address: %[5]q}}
schemas:
  - name: %[3]s
    default_cluster: s0
    tables:
      - {name: t, shard_key: id, rule: mod, shards: [s0, s1], sub_tables: 2}
`, testenv.User, testenv.Password, scatterDB, e.s0.Addr, e.s1.Addr)
	file := filepath.Join(t.TempDir(), "scatter.yaml")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	e.admin = freeAddr(t)
	e.p, e.listen = startServe(t, "--config", file, "--admin-http", e.admin)
	e.proxy = open(t, e.listen, scatterDB)
	var err error
	if e.direct0, err = sql.Open("mysql", e.s0.DSN(scatterDB)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.direct0.Close() })
	return e
}

// TestScatterStream reads a 250 MiB scatter result through the proxy
// process. Fast or slow, the client gets every row and the proxy's RSS
// grows by less than 64 MB: rows pass from a shard's socket to the
// client's with at most the client's write buffer in between, and a client
// that does not read holds the shard's statement back. A shard failing
// while its rows stream ends the result with an error after the rows the
// client already has; the proxy and the other sessions carry on.
func TestScatterStream(t *testing.T) {
	e := startScatter(t)
	pid := e.p.cmd.Process.Pid
	// A first small scatter learns the sub-tables' key type and fills
	// the pools, so the baseline includes what every later query reuses.
	if n, err := readScatter(e.proxy, "SELECT id, v FROM t WHERE id < 100", nil); n != 100 || err != nil {
		t.Fatalf("rows with id < 100: %d, %v", n, err)
	}

	t.Run("fast client", func(t *testing.T) {
		m := startRSSWatch(t, pid)
		n, err := readScatter(e.proxy, "SELECT id, v FROM t", nil)
		growth := m.stop(t)
		if err != nil || n != scatterTotal {
			t.Fatalf("read %d rows of %d: %v", n, scatterTotal, err)
		}
		e.checkGrowth(t, growth, "a fast client")
	})

	t.Run("slow client", func(t *testing.T) {
		db := openSlowClient(t, e.listen, scatterDB)
		m := startRSSWatch(t, pid)
		paused := false
		n, err := readScatter(db, "SELECT id, v FROM t", func(n int) {
			switch {
			case n == 1000 && !paused:
				// A long pause: the proxy must stop reading the shard,
				// whose statement is still at its first sub-table.
				paused = true
				time.Sleep(time.Second)
				if !e.shardStillSends(t, "t_0000") {
					t.Errorf("after the client paused 1 s, %d rows into a %d-row sub-table, the shard's statement had finished: the proxy did not hold the shard back", n, scatterRows)
				}
			case n%512 == 0:
				time.Sleep(5 * time.Millisecond)
			}
		})
		growth := m.stop(t)
		if err != nil || n != scatterTotal {
			t.Fatalf("read %d rows of %d: %v", n, scatterTotal, err)
		}
		e.checkGrowth(t, growth, "a slow client")
	})

	t.Run("backend connection killed mid-result", func(t *testing.T) {
		// Under load: a bystander reads the whole result in parallel.
		bystander := make(chan error, 1)
		go func() {
			n, err := readScatter(e.proxy, "SELECT id, v FROM t WHERE id <> -7002", nil)
			if err == nil && n != scatterTotal {
				err = fmt.Errorf("%d rows of %d and no error", n, scatterTotal)
			}
			bystander <- err
		}()
		conn := e.conn(t)
		n, err := readScatter(conn, "SELECT id, v FROM t WHERE id <> -7001", func(n int) {
			if n == 10000 {
				e.killStatement(t, "-7001")
			}
		})
		e.checkCutShort(t, n, err)
		if err := <-bystander; err != nil {
			t.Errorf("a bystander's scatter read: %v", err)
		}
		e.checkSessionWorks(t, conn)
	})

	t.Run("shard stopped mid-result", func(t *testing.T) {
		// A bystander keeps reading a key on s0 while s1 dies.
		stop := make(chan struct{})
		bystander := make(chan error, 1)
		go func() {
			var err error
			for i := 0; err == nil; i++ {
				select {
				case <-stop:
					bystander <- nil
					return
				default:
				}
				var got string
				// id 0 lives in t_0000, on s0: a routed read.
				err = e.proxy.QueryRow("SELECT COUNT(*) FROM t WHERE id = 0").Scan(&got)
				if err == nil && got != "1" {
					err = fmt.Errorf("read %d on s0: count %s", i, got)
				}
			}
			bystander <- err
		}()
		conn := e.conn(t)
		n, err := readScatter(conn, "SELECT id, v FROM t", func(n int) {
			if n == 2*scatterRows+10000 { // s1's first sub-table is streaming
				if err := e.s1.Kill(); err != nil {
					t.Errorf("kill s1: %v", err)
				}
			}
		})
		e.checkCutShort(t, n, err)
		if !strings.Contains(err.Error(), "s1") {
			t.Errorf("the error does not name the failed shard s1: %v", err)
		}
		close(stop)
		if err := <-bystander; err != nil {
			t.Errorf("a bystander's reads on s0 while s1 died: %v", err)
		}
		e.checkSessionWorks(t, conn)
	})
}

// readScatter runs query and reads every row, checking each one's size,
// calling each (when set) after every row with the count so far.
func readScatter(q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, each func(n int)) (int, error) {
	rows, err := q.QueryContext(context.Background(), query)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	var id int64
	var v sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&id, &v); err != nil {
			return n, err
		}
		if len(v) != scatterRowBytes {
			return n, fmt.Errorf("row %d (id %d): %d bytes, want %d", n+1, id, len(v), scatterRowBytes)
		}
		n++
		if each != nil {
			each(n)
		}
	}
	return n, rows.Err()
}

// conn is one client session of the proxy, kept for the checks after a
// failure.
func (e *scatterEnv) conn(t *testing.T) *sql.Conn {
	t.Helper()
	c, err := e.proxy.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// checkCutShort: the result the shard failure interrupted ended with an
// error, after fewer rows than the whole, and the proxy is still running.
func (e *scatterEnv) checkCutShort(t *testing.T, n int, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("the result ended cleanly after %d rows of %d: partial rows presented as complete", n, scatterTotal)
	}
	if n >= scatterTotal {
		t.Fatalf("%d rows of %d, then %v", n, scatterTotal, err)
	}
	t.Logf("after %d rows: %v", n, err)
	select {
	case err := <-e.p.done:
		e.p.done <- err
		t.Fatalf("the proxy exited: %v", err)
	default:
	}
}

// checkSessionWorks: the session whose result was cut short still answers.
func (e *scatterEnv) checkSessionWorks(t *testing.T, c *sql.Conn) {
	t.Helper()
	var got string
	if err := c.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM t WHERE id = 0").Scan(&got); err != nil || got != "1" {
		t.Errorf("the session after its result failed: count %q, %v", got, err)
	}
}

// killStatement kills, on s0, the connection running the statement whose
// text contains marker.
func (e *scatterEnv) killStatement(t *testing.T, marker string) {
	t.Helper()
	var id int64
	err := e.direct0.QueryRow("SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE ? AND INFO NOT LIKE '%PROCESSLIST%'",
		"%"+marker+"%").Scan(&id)
	if err != nil {
		t.Fatalf("find the backend connection running %q: %v", marker, err)
	}
	if _, err := e.direct0.Exec(fmt.Sprintf("KILL %d", id)); err != nil {
		t.Fatalf("KILL %d: %v", id, err)
	}
}

// shardStillSends reports whether a statement reading the sub-table is
// still running on s0.
func (e *scatterEnv) shardStillSends(t *testing.T, sub string) bool {
	t.Helper()
	var n int
	err := e.direct0.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE ? AND INFO NOT LIKE '%PROCESSLIST%'",
		"%"+sub+"%").Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// checkGrowth fails the test when the proxy's RSS grew past the limit,
// with the proxy's heap profile to say where the memory went.
func (e *scatterEnv) checkGrowth(t *testing.T, growthKB int, who string) {
	t.Helper()
	t.Logf("%s: proxy peak RSS growth %d KB over %d MiB of rows", who, growthKB, scatterTotal*scatterRowBytes>>20)
	if growthKB < scatterRSSLimit {
		return
	}
	t.Fatalf("%s: the proxy's peak RSS grew by %d KB (limit %d KB)\nheap profile:\n%s", who, growthKB, scatterRSSLimit, heapProfile(e.admin))
}

// heapProfile is the start of the heap profile of the proxy whose admin
// HTTP port is admin, to say where its memory went.
func heapProfile(admin string) string {
	resp, err := http.Get("http://" + admin + "/debug/pprof/heap?debug=1")
	if err != nil {
		return "(no heap profile: " + err.Error() + ")"
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4000))
	return string(b)
}

// rssWatch measures a process's peak RSS growth over a span: VmHWM, reset
// at the start (clear_refs), against VmRSS at the start. The kernel keeps
// the peak, so no sample can miss it.
type rssWatch struct {
	pid, base int
}

func startRSSWatch(t *testing.T, pid int) *rssWatch {
	t.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Fatalf("reset the proxy's peak RSS: %v", err)
	}
	return &rssWatch{pid: pid, base: procStatusKB(t, pid, "VmRSS")}
}

func (w *rssWatch) stop(t *testing.T) int {
	t.Helper()
	return procStatusKB(t, w.pid, "VmHWM") - w.base
}

var registerSlowDial sync.Once

// openSlowClient opens a go-sql-driver pool to the proxy (database db)
// whose sockets have a fixed 256 KB receive buffer, so what the client
// has not read backs up into the proxy instead of into the kernel
// (autotuning lets it grow to tcp_rmem's maximum, 32 MB here). Not smaller: a window below the
// loopback MSS (64 KB) makes the sender trickle one probe per timeout.
func openSlowClient(t *testing.T, listen, db string) *sql.DB {
	t.Helper()
	registerSlowDial.Do(func() {
		mysql.RegisterDialContext("slowtcp", func(ctx context.Context, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			if err := c.(*net.TCPConn).SetReadBuffer(256 << 10); err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		})
	})
	d, err := sql.Open("mysql", fmt.Sprintf("%s:%s@slowtcp(%s)/%s", testenv.User, testenv.Password, listen, db))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}
