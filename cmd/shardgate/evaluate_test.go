package main_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shardgate/shardgate/internal/testenv"
)

// Issue 22's acceptance test of evaluated statements at size, through the
// shardgate process: a join of two tables of 1,000,000 rows, sharded over
// two shards, on a column that is no shard key (each table's every row is
// copied to the evaluator), read by a client that pauses. The proxy's RSS
// grows by less than the schema's merge budget plus a fixed allowance: it
// holds one batch of copied rows at a time, the evaluator (a server) holds
// the copies, and the answer streams with backpressure. A cancelled join
// stops every shard's statement.
const (
	joinDB   = "evjoin"
	joinRows = 1_000_000 // per table
	joinSubs = 4         // sub-tables per table: 2 on each shard (rule mod)
	// joinBudget is the schema's merge_memory (16 MiB): what a query
	// across shards may hold for what it cannot stream. An evaluation
	// holds none of it; the test holds the proxy to it all the same.
	joinBudget = 16 << 20
	// joinAllowance is the rest of the proxy's growth allowed: the
	// runtime's, the copies' batch (512 KB) and its garbage, the
	// connections' buffers.
	joinAllowance = 32 << 20
	// joinQuery pairs each row of a with the row of b whose k is equal:
	// a.k is a's id, b.k a permutation of b's ids (7919 is prime to
	// 1,000,000), so the answer has 1,000,000 rows.
	joinQuery = "SELECT a.id, b.id, a.pad FROM a JOIN b ON b.k = a.k"
	// joinMarker is in the evaluator's statement, not in the fetches.
	joinMarker = "JOIN b ON b.k = a.k"
)

// joinEnv is the proxy process over its two shards, and a reference
// database on s1 holding both tables whole.
type joinEnv struct {
	p            *proc
	listen       string
	admin        string
	roots        []*sql.DB // s0, s1, bypassing the proxy
	ref          *sql.DB   // the reference database on s1
	loadDuration time.Duration
}

// joinServer is how the test's servers run: with a buffer pool that
// holds the tables and the evaluator's copies (the test servers' 64 MB
// would have them read from disk, as no production server of such
// tables would).
var joinServer = testenv.Options{ExtraArgs: []string{"--innodb-buffer-pool-size=1G"}}

// startJoin loads the sub-tables a_0000..a_0003 and b_0000..b_0003 (ids
// equal to i mod 4 in sub-table i, as rule mod places them; 0 and 1 on
// s0, 2 and 3 on s1, servers of the test's own) and the reference
// tables, from MariaDB's sequence engine, and starts `shardgate serve`
// over the shards.
func startJoin(t *testing.T) *joinEnv {
	t.Helper()
	s0, s1 := testenv.Start(t, joinServer), testenv.Start(t, joinServer)
	e := &joinEnv{roots: []*sql.DB{s0.RootDB(t), s1.RootDB(t)}}
	start := time.Now()
	for _, s := range []*testenv.Server{s0, s1} {
		s.Exec(t, "DROP DATABASE IF EXISTS "+joinDB, "CREATE DATABASE "+joinDB)
	}
	s1.Exec(t, "CREATE DATABASE "+joinDB+"_ref")
	// The servers load at once, s0 its sub-tables, s1 its own and the
	// reference (loaded first: it is the larger).
	errs := make(chan error, 2)
	go func() {
		errs <- errors.Join(loadJoinTables(s1, joinDB+"_ref", "", 1, 0),
			loadJoinTables(s1, joinDB, "_0002", joinSubs, 2), loadJoinTables(s1, joinDB, "_0003", joinSubs, 3))
	}()
	go func() {
		errs <- errors.Join(loadJoinTables(s0, joinDB, "_0000", joinSubs, 0), loadJoinTables(s0, joinDB, "_0001", joinSubs, 1))
	}()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	e.loadDuration = time.Since(start)
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
    merge_memory: %[6]d
    tables:
      - {name: a, shard_key: id, rule: mod, shards: [s0, s1], sub_tables: 2}
      - {name: b, shard_key: id, rule: mod, shards: [s0, s1], sub_tables: 2}
`, testenv.User, testenv.Password, joinDB, s0.Addr, s1.Addr, joinBudget)
	file := filepath.Join(t.TempDir(), "join.yaml")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	e.admin = freeAddr(t)
	e.p, e.listen = startServe(t, "--config", file, "--admin-http", e.admin)
	var err error
	if e.ref, err = sql.Open("mysql", s1.DSN(joinDB+"_ref")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.ref.Close() })
	return e
}

// loadJoinTables creates a<suffix> and b<suffix> in db on s and fills
// them with the ids id ≡ rem (mod step) of 0..joinRows-1: a.k = id, b.k
// = id * 7919 mod joinRows, both indexed (after the rows are in: a
// sorted build is faster than the inserts' updates).
func loadJoinTables(s *testenv.Server, db, suffix string, step, rem int) error {
	root, err := sql.Open("mysql", s.DSN(db))
	if err != nil {
		return err
	}
	defer root.Close()
	n := joinRows / step
	for _, table := range []string{"a", "b"} {
		k := "id"
		if table == "b" {
			k = fmt.Sprintf("id * 7919 %% %d", joinRows)
		}
		name := table + suffix
		for _, q := range []string{
			"CREATE TABLE " + name + " (id BIGINT PRIMARY KEY, k INT NOT NULL, pad CHAR(40) NOT NULL)",
			fmt.Sprintf("INSERT INTO %s (id, k, pad) SELECT id, %s, RPAD(id, 40, '.') FROM (SELECT seq * %d + %d AS id FROM seq_0_to_%d) s",
				name, k, step, rem, n-1),
			"ALTER TABLE " + name + " ADD KEY (k)",
		} {
			if _, err := root.Exec(q); err != nil {
				return fmt.Errorf("%s on %s: %w", q, s.Addr, err)
			}
		}
	}
	return nil
}

// joinRead reads the join's rows, calling each (when set) after every
// row with the count so far, and checks them: every id of a and of b
// once (their sums), each pad a's.
func joinRead(q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, each func(n int)) (int, error) {
	rows, err := q.QueryContext(context.Background(), joinQuery)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n, sumA, sumB int64
	var a, b int64
	var pad sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&a, &b, &pad); err != nil {
			return int(n), err
		}
		if len(pad) != 40 {
			return int(n), fmt.Errorf("row %d: pad of %d bytes", n+1, len(pad))
		}
		n++
		sumA += a
		sumB += b
		if each != nil {
			each(int(n))
		}
	}
	if err := rows.Err(); err != nil {
		return int(n), err
	}
	if want := int64(joinRows) * (joinRows - 1) / 2; sumA != want || sumB != want {
		return int(n), fmt.Errorf("the ids of a sum to %d, of b to %d; want %d each", sumA, sumB, want)
	}
	return int(n), nil
}

// TestEvaluateJoinMemory: issue 22's join of two 1,000,000-row tables
// across shards on a non-key column, read by a client that pauses; then
// the same join cancelled.
func TestEvaluateJoinMemory(t *testing.T) {
	e := startJoin(t)
	pid := e.p.cmd.Process.Pid
	t.Logf("loaded 2 x %d rows on the shards and on the reference in %v", joinRows, e.loadDuration.Round(time.Millisecond))

	start := time.Now()
	if n, err := joinRead(e.ref, nil); err != nil || n != joinRows {
		t.Fatalf("the join on the reference: %d rows, %v", n, err)
	}
	oneServer := time.Since(start)

	proxy := open(t, e.listen, joinDB)
	// A first evaluation learns the tables' key types and fills the
	// pools, so the baseline includes what every later query reuses.
	e.smallJoin(t, proxy)

	t.Run("client that pauses", func(t *testing.T) {
		slow := openSlowClient(t, e.listen, joinDB)
		before := procStatusKB(t, pid, "VmRSS")
		m := startRSSWatch(t, pid)
		var paused time.Duration
		start := time.Now()
		n, err := joinRead(slow, func(n int) {
			switch {
			case n == 1000:
				// A long pause: the evaluator's statement must wait for
				// the client, not stream into the proxy's memory.
				p := time.Now()
				time.Sleep(time.Second)
				if !e.evaluatorRuns(t) {
					t.Errorf("after the client paused 1 s, %d rows into %d, the evaluator's statement had finished: the proxy did not hold it back", n, joinRows)
				}
				paused += time.Since(p)
			case n%100_000 == 0:
				time.Sleep(10 * time.Millisecond)
				paused += 10 * time.Millisecond
			}
		})
		elapsed := time.Since(start)
		growth := m.stop(t)
		if err != nil || n != joinRows {
			t.Fatalf("read %d rows of %d: %v", n, joinRows, err)
		}
		after := procStatusKB(t, pid, "VmRSS")
		t.Logf("the join through the proxy: %v (%v without the client's pauses); on one server: %v", elapsed.Round(time.Millisecond),
			(elapsed - paused).Round(time.Millisecond), oneServer.Round(time.Millisecond))
		t.Logf("proxy RSS: before %d KB, peak %d KB (growth %d KB), after %d KB; limit: merge_memory %d KB + %d KB",
			before, before+growth, growth, after, joinBudget>>10, joinAllowance>>10)
		if growth >= (joinBudget+joinAllowance)>>10 {
			t.Fatalf("the proxy's peak RSS grew by %d KB, over merge_memory + allowance (%d KB)\nheap profile:\n%s",
				growth, (joinBudget+joinAllowance)>>10, heapProfile(e.admin))
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		// b_0002 locked on s1: the evaluation, once a is copied, waits
		// for b's rows there for as long as the lock lasts, were the
		// client's going not noticed; it must stop all the same.
		lock, err := e.roots[1].Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Close()
		if _, err := lock.ExecContext(context.Background(), "LOCK TABLES "+joinDB+".b_0002 WRITE"); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := e.startJoin(t, proxy, ctx)
		cancel()
		if err := <-done; err == nil {
			t.Fatal("the cancelled join ended without an error")
		}
		e.waitShardsQuiet(t)
		if _, err := lock.ExecContext(context.Background(), "UNLOCK TABLES"); err != nil {
			t.Fatal(err)
		}
		e.smallJoin(t, proxy)
	})

	t.Run("killed", func(t *testing.T) {
		conn, err := proxy.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var connID string
		if err := conn.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&connID); err != nil {
			t.Fatal(err)
		}
		done := e.startJoin(t, conn, context.Background())
		if _, err := proxy.Exec("KILL QUERY " + connID); err != nil { // (from another session of the pool)
			t.Fatalf("KILL QUERY %s: %v", connID, err)
		}
		var me *mysql.MySQLError
		if err := <-done; !errors.As(err, &me) || me.Number != 1317 {
			t.Fatalf("the killed join ended with %v, want error 1317", err)
		}
		e.waitShardsQuiet(t)
		e.smallJoin(t, proxy)
	})
}

// startJoin starts joinQuery on q with ctx and waits until both shards
// send their rows for the copies; the statement's end comes on the
// channel (its rows are not read).
func (e *joinEnv) startJoin(t *testing.T, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, ctx context.Context) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		rows, err := q.QueryContext(ctx, joinQuery)
		if err == nil {
			err = rows.Close()
		}
		done <- err
	}()
	for i, root := range e.roots {
		waitUntil(t, 30*time.Second, fmt.Sprintf("s%d's fetch", i), func() bool { return shardStatements(t, root, "character_set_results=binary") > 0 })
	}
	return done
}

// waitShardsQuiet waits, for 10 seconds, until no statement runs in
// joinDB on either shard (fetches, the evaluator's INSERTs and statement)
// and the proxy holds no backend connection: an evaluation that goes on
// holds its evaluator's connection between its statements, when the
// shards may be quiet for a moment.
func (e *joinEnv) waitShardsQuiet(t *testing.T) {
	t.Helper()
	waitUntil(t, 10*time.Second, "no statement of the stopped join on the shards, no connection in use", func() bool {
		return shardStatements(t, e.roots[0], "") == 0 && shardStatements(t, e.roots[1], "") == 0 && connsInUse(t, e.admin) == 0
	})
}

// connsInUse is how many backend connections of its pools the proxy
// whose admin HTTP port is admin has in use (open, not idle).
func connsInUse(t *testing.T, admin string) int {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(body), "\n") {
		for metric, sign := range map[string]int{"open": 1, "idle": -1} {
			if rest, ok := strings.CutPrefix(line, "shardgate_backend_pool_connections_"+metric+"{"); ok {
				_, v, _ := strings.Cut(rest, "} ")
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatalf("metric %q: %v", line, err)
				}
				n += sign * int(f)
			}
		}
	}
	return n
}

// smallJoin runs an evaluated join that copies a few rows (a's pushed
// condition keeps 10, b's are read by their keys, a semi-join) and
// checks its answer.
func (e *joinEnv) smallJoin(t *testing.T, proxy *sql.DB) {
	t.Helper()
	if got := scalar(t, proxy, "SELECT COUNT(*) FROM a JOIN b ON b.id = a.k WHERE a.id < 10"); got != "10" {
		t.Fatalf("a small evaluated join: %s rows, want 10", got)
	}
}

// evaluatorRuns reports whether the evaluator's statement runs on s0.
func (e *joinEnv) evaluatorRuns(t *testing.T) bool {
	t.Helper()
	return shardStatements(t, e.roots[0], joinMarker) > 0
}

// shardStatements counts the statements running in joinDB on a shard
// (root: a connection of its own) whose text contains marker.
func shardStatements(t *testing.T, root *sql.DB, marker string) int {
	t.Helper()
	var n int
	if err := root.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND DB = ? AND COMMAND IN ('Query', 'Execute') AND INFO LIKE ?",
		joinDB, "%"+marker+"%").Scan(&n); err != nil {
		t.Fatalf("processlist: %v", err)
	}
	return n
}
