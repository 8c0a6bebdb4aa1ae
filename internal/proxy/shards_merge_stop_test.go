package proxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/testenv"
)

// Merges across shards stopped before their end, through a real session
// over real shards (issue 14): KILL QUERY and KILL CONNECTION from
// another client, a client that goes away, a LIMIT the merge reaches
// before the shards' ends, a shard that dies; and a merge inside a
// transaction. What must hold after each: no shard still runs the
// statement, the pools' connections all come back, and other sessions
// never notice.

// mergeStopPair is shardedPairProxy (schema keys schemaKeys) with n rows
// in each of t's 4 sub-tables: sub-table i holds ids seq*4+i, v = seq,
// for seq from 0 to n-1 (ids 0 to 4n-1, each once; merges without a key
// do not care which sub-table the hash rule would put them in).
func mergeStopPair(t *testing.T, db string, n int, schemaKeys ...string) (p *proxy.Proxy, s0, s1 *testenv.Server, proxyDB func(params string) *sql.DB) {
	t.Helper()
	p, d0, d1, s0, s1, proxyDB := shardedPairProxy(t, db, schemaKeys...)
	for i, d := range []*sql.DB{d0, d0, d1, d1} {
		mustExec(t, d, fmt.Sprintf("INSERT INTO t_%04d (id, v) SELECT seq*4+%d, seq FROM seq_0_to_%d", i, i, n-1))
	}
	return p, s0, s1, proxyDB
}

// shardRuns counts the statements running on s whose text contains
// marker (case aside), the look-up itself aside: executing, not being
// prepared (the proxy prepares a client's statement on a shard to answer
// its COM_STMT_PREPARE, and a KILL QUERY then finds nothing to stop).
func shardRuns(t *testing.T, root *sql.DB, marker string) int {
	t.Helper()
	var n int
	if err := root.QueryRow("SELECT COUNT(*) FROM information_schema.processlist WHERE id <> CONNECTION_ID() AND command IN ('Query', 'Execute') AND info LIKE ?",
		"%"+marker+"%").Scan(&n); err != nil {
		t.Fatalf("processlist: %v", err)
	}
	return n
}

// waitShards polls the shards (their root connections) until each runs a
// statement containing marker (running) or none does, for 5 seconds: an
// interrupted statement takes a moment to go.
func waitShards(t *testing.T, running bool, marker string, roots ...*sql.DB) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; i < len(roots); {
		if n := shardRuns(t, roots[i], marker); (n > 0) == running {
			i++
			continue
		}
		if time.Now().After(deadline) {
			if running {
				t.Fatalf("shard %d does not run the statement (%q)", i, marker)
			}
			t.Fatalf("shard %d still runs the statement (%q) 5s after the merge stopped", i, marker)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitPoolsIdle polls the shards' pools until every open connection is
// idle again, for 5 seconds: none leaked, none held by a session that
// has no transaction. It also checks that no pool grew past maxOpen.
func waitPoolsIdle(t *testing.T, p *proxy.Proxy, maxOpen int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, name := range []string{"s0", "s1"} {
		for {
			open, idle, waiting := p.Cluster(name).Primary.Open()
			if open > maxOpen {
				t.Fatalf("pool of %s: %d connections open, max_open is %d", name, open, maxOpen)
			}
			if open == idle && waiting == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("pool of %s: %d open, %d idle, %d waiting 5s after the sessions were done: connections leaked", name, open, idle, waiting)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// bystander runs merges and keyed reads on a session of its own until
// stopped, counting them and keeping the first error: a session the
// stopped merges must not disturb.
type bystander struct {
	stop chan struct{}
	done chan struct{}
	n    atomic.Int64
	err  error
}

// startBystander starts a bystander on db, whose t has ids 0 to ids-1.
func startBystander(t *testing.T, db *sql.DB, ids int) *bystander {
	t.Helper()
	conn := oneConn(t, db)
	b := &bystander{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(b.done)
		ctx := context.Background()
		for {
			select {
			case <-b.stop:
				return
			default:
			}
			var id, maxID int
			if err := conn.QueryRowContext(ctx, "SELECT id FROM t ORDER BY id LIMIT 1").Scan(&id); err != nil || id != 0 {
				b.err = fmt.Errorf("bystander's merge: id %d, %v", id, err)
				return
			}
			if err := conn.QueryRowContext(ctx, "SELECT MAX(id) FROM t").Scan(&maxID); err != nil || maxID != ids-1 {
				b.err = fmt.Errorf("bystander's MAX(id): %d, %v", maxID, err)
				return
			}
			b.n.Add(1)
		}
	}()
	return b
}

// check stops the bystander and fails the test if it ever failed or
// never ran.
func (b *bystander) check(t *testing.T) {
	t.Helper()
	close(b.stop)
	<-b.done
	if b.err != nil {
		t.Fatalf("another session was disturbed: %v", b.err)
	}
	if b.n.Load() == 0 {
		t.Fatal("the other session never completed a statement")
	}
}

// sleepMerge is a merge that runs for 10 seconds on each shard of a
// mergeStopPair of 100 rows per sub-table; sleepMarker finds it in a
// shard's processlist.
const (
	sleepMerge  = "SELECT id, SLEEP(0.05) FROM t ORDER BY id"
	sleepMarker = "SLEEP(0.05)"
)

// runAsync runs query on conn, reading every row, and sends how it ended.
func runAsync(conn *sql.Conn, query string, args ...any) <-chan error {
	done := make(chan error, 1)
	go func() {
		rows, err := conn.QueryContext(context.Background(), query, args...)
		if err != nil {
			done <- err
			return
		}
		for rows.Next() {
		}
		err = rows.Err()
		rows.Close()
		done <- err
	}()
	return done
}

// waitErr waits up to 5 seconds for the end of a statement.
func waitErr(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: the statement still runs 5s later", what)
		return nil
	}
}

// KILL QUERY of a session running a merge interrupts every shard's
// statement; the killed client gets 1317 and its session goes on.
func TestMergeKillQuery(t *testing.T) {
	p, s0, s1, proxyDB := mergeStopPair(t, "mkillq", 100)
	roots := []*sql.DB{s0.RootDB(t), s1.RootDB(t)}
	db := proxyDB("")
	a, b := oneConn(t, db), oneConn(t, db)
	aID := queryString(t, a, "SELECT CONNECTION_ID()")
	by := startBystander(t, db, 400)

	// The prepared statement's shape runs once first, without sleeping:
	// its first execution probes a sub-table before the shards start
	// (see TestMergeShardsStartTogether).
	const preparedMerge = "SELECT id, SLEEP(?) FROM t ORDER BY id"
	rowsText(t, a, preparedMerge, 0)
	for _, prepared := range []bool{false, true} {
		var done <-chan error
		marker := sleepMarker
		if prepared {
			done, marker = runAsync(a, preparedMerge, 0.05), "SLEEP(?)"
		} else {
			done = runAsync(a, sleepMerge)
		}
		waitShards(t, true, marker, roots...)
		start := time.Now()
		mustExec(t, b, "KILL QUERY "+aID)
		err := waitErr(t, done, "KILL QUERY")
		if mysqlErrCode(err) != 1317 {
			t.Fatalf("prepared %v: the killed merge ended with %v, want error 1317", prepared, err)
		}
		waitShards(t, false, marker, roots...)
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("prepared %v: KILL QUERY took %v to stop the shards", prepared, d)
		}
		if got := queryString(t, a, "SELECT COUNT(*) FROM t"); got != "400" {
			t.Fatalf("the killed session's next statement: %q, want 400", got)
		}
		if got := queryString(t, a, "SELECT id FROM t ORDER BY id DESC LIMIT 1"); got != "399" {
			t.Fatalf("the killed session's next merge: %q, want 399", got)
		}
	}
	by.check(t)
	waitPoolsIdle(t, p, 4)
}

// Every shard starts a merge's statement at once: a shard does not wait
// for the shards before it to answer.
func TestMergeShardsStartTogether(t *testing.T) {
	_, s0, s1, proxyDB := mergeStopPair(t, "mstart", 50)
	roots := []*sql.DB{s0.RootDB(t), s1.RootDB(t)}
	db := proxyDB("")
	// 1 second for the column probe of the first execution of a shape on
	// one sub-table of s0, then 2 for each shard's statement.
	const merge, marker = "SELECT id, SLEEP(0.02) FROM t ORDER BY id", "SLEEP(0.02)"
	for _, prepared := range []bool{false, true} {
		t.Run(fmt.Sprintf("prepared=%v", prepared), func(t *testing.T) {
			a, b := oneConn(t, db), oneConn(t, db)
			aID := queryString(t, a, "SELECT CONNECTION_ID()")
			var done <-chan error
			if prepared {
				done = runAsync(a, merge+" LIMIT ?", 1000)
			} else {
				done = runAsync(a, merge)
			}
			deadline := time.Now().Add(800 * time.Millisecond)
			for shardRuns(t, roots[0], marker) == 0 || shardRuns(t, roots[1], marker) == 0 {
				if time.Now().After(deadline) {
					t.Errorf("the shards do not run the merge at once: s0 runs it %d time(s), s1 %d, 0.8s after it began",
						shardRuns(t, roots[0], marker), shardRuns(t, roots[1], marker))
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			mustExec(t, b, "KILL QUERY "+aID)
			if err := waitErr(t, done, "KILL QUERY"); mysqlErrCode(err) != 1317 {
				t.Fatalf("the killed merge: %v", err)
			}
			waitShards(t, false, marker, roots...)
		})
	}
}

// KILL CONNECTION of a session running a merge ends the session and
// interrupts every shard's statement.
func TestMergeKillConnection(t *testing.T) {
	p, s0, s1, proxyDB := mergeStopPair(t, "mkillc", 100)
	roots := []*sql.DB{s0.RootDB(t), s1.RootDB(t)}
	db := proxyDB("")
	a, b := oneConn(t, db), oneConn(t, db)
	aID := queryString(t, a, "SELECT CONNECTION_ID()")
	by := startBystander(t, db, 400)

	done := runAsync(a, sleepMerge)
	waitShards(t, true, sleepMarker, roots...)
	mustExec(t, b, "KILL CONNECTION "+aID)
	if err := waitErr(t, done, "KILL CONNECTION"); err == nil {
		t.Fatal("the merge of a killed connection ended without an error")
	}
	waitShards(t, false, sleepMarker, roots...)
	if _, err := a.ExecContext(context.Background(), "SELECT 1"); err == nil {
		t.Fatal("the killed connection still runs statements")
	}
	if got := queryString(t, b, "SELECT COUNT(*) FROM t"); got != "400" {
		t.Fatalf("the killer's next statement: %q", got)
	}
	by.check(t)
	waitPoolsIdle(t, p, 4)
}

// bigMerge streams 2 KB rows from shards of mergeStopPair(…, 10000):
// about 40 MB from each, more than every socket buffer between a shard
// and the client holds, so a client that reads a few rows leaves the
// shards running.
const (
	bigMerge  = "SELECT id, REPEAT('x', 2000) FROM t ORDER BY id"
	bigMarker = "REPEAT('x', 2000)"
)

// dialRecorder dials TCP and keeps the last connection, for a test to
// cut under a go-sql-driver client.
type dialRecorder struct {
	mu   sync.Mutex
	last net.Conn
}

var rawDials dialRecorder

func init() {
	mysql.RegisterDialContext("rawtcp", func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err == nil {
			rawDials.mu.Lock()
			rawDials.last = c
			rawDials.mu.Unlock()
		}
		return c, err
	})
}

// rawConn opens a client connection to p whose TCP connection the test
// can close under the driver.
func rawConn(t *testing.T, p *proxy.Proxy, db string) (*sql.Conn, net.Conn) {
	t.Helper()
	conn := oneConn(t, openDB(t, fmt.Sprintf("%s:%s@rawtcp(%s)/%s", appUser, appPass, p.Addrs()[0], db)))
	rawDials.mu.Lock()
	defer rawDials.mu.Unlock()
	return conn, rawDials.last
}

// readRows reads n rows of rows, checking their ids count from 0.
func readRows(t *testing.T, rows *sql.Rows, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if !rows.Next() {
			t.Fatalf("row %d: none (%v)", i, rows.Err())
		}
		var id int
		var pad string
		if err := rows.Scan(&id, &pad); err != nil || id != i || len(pad) != 2000 {
			t.Fatalf("row %d: id %d, %d bytes, %v", i, id, len(pad), err)
		}
	}
}

// A client that goes away while a merge streams: the shards' statements
// stop, the proxy stays up and its pools are whole.
func TestMergeClientDisconnects(t *testing.T) {
	p, s0, s1, proxyDB := mergeStopPair(t, "mgone", 10000)
	roots := []*sql.DB{s0.RootDB(t), s1.RootDB(t)}
	db := proxyDB("")
	by := startBystander(t, db, 40000)

	for _, prepared := range []bool{false, true} {
		conn, raw := rawConn(t, p, "mgone")
		var rows *sql.Rows
		var err error
		if prepared {
			rows, err = conn.QueryContext(context.Background(), bigMerge+" LIMIT ?", 1000000)
		} else {
			rows, err = conn.QueryContext(context.Background(), bigMerge)
		}
		if err != nil {
			t.Fatal(err)
		}
		readRows(t, rows, 5)
		// The shards still send: the client's buffers are full.
		waitShards(t, true, bigMarker, roots...)
		raw.Close()
		waitShards(t, false, bigMarker, roots...)
		rows.Close()
	}
	// More merges than the pools have connections, every shard's
	// connections reused.
	c := oneConn(t, db)
	for i := 0; i < 12; i++ {
		if got := queryString(t, c, "SELECT id FROM t ORDER BY id DESC LIMIT 1"); got != "39999" {
			t.Fatalf("merge %d after the client went away: %q", i, got)
		}
	}
	by.check(t)
	waitPoolsIdle(t, p, 4)
}

// A merge inside a transaction reads the transaction's own writes on
// every shard, and after ROLLBACK the old values.
func TestMergeInTransactionSeesItsWrites(t *testing.T) {
	_, d0, d1, _, _, proxyDB := shardedPairProxy(t, "mtrx", "    cross_shard_writes: allow\n")
	db := proxyDB("")
	var values []string
	shards := map[int]bool{}
	for id := 1; id <= 20; id++ {
		values = append(values, fmt.Sprintf("(%d, %d)", id, id))
		shards[subTableOf(t, int64(id), 4)/2] = true
	}
	if len(shards) != 2 {
		t.Fatal("ids 1 to 20 are all on one shard: the test needs rows on both")
	}
	mustExec(t, db, "INSERT INTO t (id, v) VALUES "+strings.Join(values, ", "))
	conn := oneConn(t, db)

	// Each answer as text and prepared (its ? bound to 0).
	type answer struct{ query, old, new string }
	answers := []answer{
		{"SELECT id, v FROM t WHERE id > ? ORDER BY v DESC LIMIT 3", "20:20 19:19 18:18", "20:1020 19:1019 18:1018"},
		{"SELECT id, v FROM t WHERE id > ? ORDER BY v LIMIT 2", "1:1 2:2", "1:1001 2:1002"},
		{"SELECT id % 2, SUM(v) FROM t WHERE id > ? GROUP BY id % 2 ORDER BY id % 2", "0:110 1:100", "0:10110 1:10100"},
		{"SELECT COUNT(*), SUM(v) FROM t WHERE v > ?", "20:210", "21:25210"},
	}
	check := func(q interface {
		QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	}, state string, pick func(answer) string) {
		t.Helper()
		for _, a := range answers {
			for _, prepared := range []bool{false, true} {
				sqlText, args := strings.Replace(a.query, "?", "0", 1), []any(nil)
				if prepared {
					sqlText, args = a.query, []any{0}
				}
				if got, want := rowsText(t, q, sqlText, args...), pick(a); got != want {
					t.Errorf("%s, prepared %v: %s = %s, want %s", state, prepared, a.query, got, want)
				}
			}
		}
	}
	old := func(a answer) string { return a.old }
	check(conn, "before the transaction", old)

	mustExec(t, conn, "BEGIN", "UPDATE t SET v = v + 1000", "INSERT INTO t (id, v) VALUES (0, 5000)")
	check(conn, "inside the transaction", func(a answer) string { return a.new })
	// Nobody else sees the writes, on either shard.
	check(db, "another session during the transaction", old)
	for i, d := range []*sql.DB{d0, d0, d1, d1} {
		if got := queryString(t, d, fmt.Sprintf("SELECT COUNT(*) FROM t_%04d WHERE v > 1000", i)); got != "0" {
			t.Fatalf("the transaction's writes are visible in t_%04d before its end", i)
		}
	}
	mustExec(t, conn, "ROLLBACK")
	check(conn, "after ROLLBACK", old)
}

// rowsText runs a query and returns its rows as "a:b c:d".
func rowsText(t *testing.T, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, args ...any) string {
	t.Helper()
	rows, err := q.QueryContext(context.Background(), query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals, err := scanNullStrings(rows, len(cols))
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		var cells []string
		for _, v := range vals {
			cells = append(cells, v.String)
		}
		out = append(out, strings.Join(cells, ":"))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return strings.Join(out, " ")
}

// A LIMIT the merge reaches before the shards' ends: the answer is right,
// no shard runs on, and statement after statement reuses the session's
// connections.
func TestMergeLimitStopsShards(t *testing.T) {
	p, s0, s1, proxyDB := mergeStopPair(t, "mlimit", 15000)
	roots := []*sql.DB{s0.RootDB(t), s1.RootDB(t)}
	conn := oneConn(t, proxyDB(""))
	const marker = "v + 7"
	run := func(i int) {
		t.Helper()
		// Text: the shards get the LIMIT too; prepared with LIMIT ?: they
		// do not (a new server-side statement per value otherwise), and
		// the merge stops them after 3 rows of their 30000.
		q, args := "SELECT id, v + 7 FROM t ORDER BY id LIMIT 3", []any(nil)
		if i%2 == 1 {
			q, args = "SELECT id, v + 7 FROM t ORDER BY id LIMIT ?", []any{3}
		}
		if got := rowsText(t, conn, q, args...); got != "0:7 1:7 2:7" {
			t.Fatalf("statement %d (%s): %s, want 0:7 1:7 2:7", i, q, got)
		}
		if got := rowsText(t, conn, "SELECT id, v + 7 FROM t ORDER BY v DESC, id LIMIT 3"); got != "59996:15006 59997:15006 59998:15006" {
			t.Fatalf("statement %d, ORDER BY v DESC: %s", i, got)
		}
	}
	run(0)
	run(1)
	waitShards(t, false, marker, roots...)
	for i := 2; i < 52; i++ {
		run(i)
	}
	waitShards(t, false, marker, roots...)
	waitPoolsIdle(t, p, 4)
}

// A shard that dies while a merge streams: the client's result ends with
// an error naming it, never with a clean end of part of the rows; the
// other shard serves on, this session included.
func TestMergeShardDies(t *testing.T) {
	_, s0, s1, proxyDB := mergeStopPair(t, "mdies", 10000)
	roots := []*sql.DB{s0.RootDB(t), s1.RootDB(t)}
	db := proxyDB("")
	conn := oneConn(t, db)
	other := oneConn(t, db)

	rows, err := conn.QueryContext(context.Background(), bigMerge)
	if err != nil {
		t.Fatal(err)
	}
	readRows(t, rows, 5)
	waitShards(t, true, bigMarker, roots...)
	if err := s1.Kill(); err != nil {
		t.Fatal(err)
	}
	n := 5
	for rows.Next() {
		n++
	}
	err = rows.Err()
	rows.Close()
	if err == nil {
		t.Fatalf("the merge ended cleanly after %d of 40000 rows with shard s1 dead", n)
	}
	if !strings.Contains(err.Error(), "shard s1") {
		t.Fatalf("the merge ended with %v after %d rows: want an error naming shard s1", err, n)
	}
	t.Logf("%d rows, then %v", n, err)
	waitShards(t, false, bigMarker, roots[0])
	for _, c := range []*sql.Conn{conn, other} {
		if got := queryString(t, c, "/* shardgate:shard=s0 */ SELECT COUNT(*) FROM t_0000"); got != "10000" {
			t.Fatalf("s0 after s1 died: %q", got)
		}
	}
	if _, err := other.ExecContext(context.Background(), "SELECT COUNT(*) FROM t"); err == nil {
		t.Fatal("a read over both shards worked with s1 dead")
	}
}

// KILL QUERY while the first execution of a prepared merge probes its
// columns: the client gets 1317 and its session goes on.
func TestMergeKillQueryDuringProbe(t *testing.T) {
	_, s0, s1, proxyDB := mergeStopPair(t, "mkillp", 50)
	roots := []*sql.DB{s0.RootDB(t), s1.RootDB(t)}
	db := proxyDB("")
	a, b := oneConn(t, db), oneConn(t, db)
	aID := queryString(t, a, "SELECT CONNECTION_ID()")
	done := runAsync(a, "SELECT id, SLEEP(?) FROM t ORDER BY id", 0.02)
	waitShards(t, true, "SLEEP(?)", roots[0])
	mustExec(t, b, "KILL QUERY "+aID)
	if err := waitErr(t, done, "KILL QUERY"); mysqlErrCode(err) != 1317 {
		t.Fatalf("the merge killed during its probe: %v, want error 1317", err)
	}
	waitShards(t, false, "SLEEP(?)", roots...)
	if got := queryString(t, a, "SELECT COUNT(*) FROM t"); got != "200" {
		t.Fatalf("the killed session's next statement: %q, want 200", got)
	}
}

// TestMergeMemorySpillOrRefuse: a final sort (ORDER BY an aggregate,
// without LIMIT) past merge_memory spills to a temporary file and answers
// as sorted in memory; with merge_overflow: refuse it fails with 1038
// naming merge_memory, and the session goes on.
func TestMergeMemorySpillOrRefuse(t *testing.T) {
	const q = "SELECT v, COUNT(*), SUM(id) FROM t GROUP BY v ORDER BY SUM(id) DESC, v"
	load := func(db *sql.DB) {
		var vals []string
		for id := 1; id <= 600; id++ {
			vals = append(vals, fmt.Sprintf("(%d, %d)", id, id%300))
		}
		mustExec(t, db, "INSERT INTO t (id, v) VALUES "+strings.Join(vals, ", "))
	}
	_, _, _, _, _, big := shardedPairProxy(t, "mspillref")
	load(big(""))
	want := rowsText(t, big(""), q)
	if n := len(strings.Fields(want)); n != 300 {
		t.Fatalf("reference: %d groups", n)
	}

	_, _, _, _, _, spill := shardedPairProxy(t, "mspill", "    merge_memory: 4096\n")
	load(spill(""))
	if got := rowsText(t, spill(""), q); got != want {
		t.Fatalf("spilled merge differs from the merge in memory:\n got %s\nwant %s", got, want)
	}

	_, _, _, _, _, refuse := shardedPairProxy(t, "mrefuse", "    merge_memory: 4096\n    merge_overflow: refuse\n")
	load(refuse(""))
	db := refuse("")
	conn := oneConn(t, db)
	if _, err := conn.QueryContext(context.Background(), q); mysqlErrCode(err) != 1038 || !contains(err.Error(), "merge_memory") {
		t.Fatalf("past merge_memory with merge_overflow: refuse: %v, want 1038 naming merge_memory", err)
	}
	if got := queryString(t, conn, "SELECT COUNT(*) FROM t"); got != "600" {
		t.Fatalf("the session after the refusal: %q", got)
	}
}

// killWaitLayout is table t of db hash-sharded over s0 and s1 (two
// sub-tables each), s1's pool holding one connection, five rows (row onS1
// on s1), and three client connections: holder, a and b.
type killWaitLayout struct {
	s0           *testenv.Server
	proxy        *proxy.Proxy
	holder, a, b *sql.Conn
	onS1         int64
}

// waitForS1 waits until a statement waits for s1's one connection.
func (k killWaitLayout) waitForS1(t *testing.T) {
	t.Helper()
	pool := k.proxy.Cluster("s1").Servers()[0].Pool
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, _, waiting := pool.Open(); waiting > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the merge does not wait for s1's connection")
		}
	}
}

func startKillWaitLayout(t *testing.T, db string) killWaitLayout {
	t.Helper()
	s0, s1 := testenv.Start(t, testenv.Options{}), testenv.Start(t, testenv.Options{})
	for _, s := range []*testenv.Server{s0, s1} {
		s.Exec(t, "CREATE DATABASE "+db)
	}
	yaml := twoShardYAML(db, s0.Addr, s1.Addr, 2, "    tables:\n      - {name: t, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: 2}\n", "")
	// s1's pool holds one connection.
	yaml = strings.Replace(yaml, `pool: {max_open: 2}, primary: {address: "`+s1.Addr, `pool: {max_open: 1}, primary: {address: "`+s1.Addr, 1)
	p := startProxy(t, parseConfig(t, yaml, db+".yaml"))
	pdb := openDB(t, proxyDSN(p, appUser, appPass, db, ""))
	k := killWaitLayout{s0: s0, proxy: p, holder: oneConn(t, pdb), a: oneConn(t, pdb), b: oneConn(t, pdb), onS1: 1}
	mustExec(t, k.holder, "CREATE TABLE t (id INT NOT NULL PRIMARY KEY, v INT NOT NULL)")
	for subTableOf(t, k.onS1, 4) < 2 {
		k.onS1++
	}
	mustExec(t, k.holder, fmt.Sprintf("INSERT INTO t VALUES (1, 1), (2, 2), (3, 3), (4, 4), (%d, 0)", 100+k.onS1))
	return k
}

// TestKillQueryWhileAPartWaits: a KILL QUERY that comes while a merge
// waits for a connection to one shard (its pool full) finds nothing to
// interrupt there; the part is not sent once the connection comes, and
// the client gets 1317, as one server interrupts a statement that waits.
func TestKillQueryWhileAPartWaits(t *testing.T) {
	k := startKillWaitLayout(t, "mkillwait")
	holder, a, b, onS1 := k.holder, k.a, k.b, k.onS1
	// The holder's transaction keeps s1's only connection.
	mustExec(t, holder, "BEGIN", fmt.Sprintf("SELECT v FROM t WHERE id = %d FOR UPDATE", onS1))
	aID := queryString(t, a, "SELECT CONNECTION_ID()")
	done := runAsync(a, "SELECT id, v FROM t ORDER BY id")
	// a's merge has s0's part and waits for s1's connection.
	k.waitForS1(t)
	mustExec(t, b, "KILL QUERY "+aID)
	mustExec(t, holder, "COMMIT")
	if err := waitErr(t, done, "KILL QUERY"); mysqlErrCode(err) != 1317 {
		t.Fatalf("the merge killed while it waited for a connection: %v, want error 1317", err)
	}
	if got := queryString(t, a, "SELECT COUNT(*) FROM t"); got != "5" {
		t.Fatalf("the killed session's next statement: %q, want 5", got)
	}
}

// TestKillQueryReachesAWrittenPart: a KILL QUERY that comes after a part
// of a merge was written to its shard, while another part waits for a
// connection, reaches the written part on its shard and stops it there.
// The written part must have gone out when it was written: one held back
// in the proxy until every part is written reaches its shard's thread
// after the kill did, when the thread, between commands, had forgotten the
// kill, and runs to its end. The test holds that thread with table locks
// of its own, so that only a kill ends the part: the client gets 1317
// while the locks are still held, and s0 runs nothing of the statement.
func TestKillQueryReachesAWrittenPart(t *testing.T) {
	const db = "mkillwritten"
	k := startKillWaitLayout(t, db)
	p, holder, a, b, onS1, s0 := k.proxy, k.holder, k.a, k.b, k.onS1, k.s0
	// s0's sub-tables are locked by a connection of the test's: the merge's
	// part there waits for them once its thread runs it.
	root0 := s0.RootDB(t)
	locker := oneConn(t, root0)
	mustExec(t, locker, "LOCK TABLES "+db+".t_0000 WRITE, "+db+".t_0001 WRITE")
	// The holder's transaction keeps s1's only connection.
	mustExec(t, holder, "BEGIN", fmt.Sprintf("SELECT v FROM t WHERE id = %d FOR UPDATE", onS1))
	aID := queryString(t, a, "SELECT CONNECTION_ID()")
	const marker = "t_0000" // in s0's part
	done := runAsync(a, "SELECT id, v FROM t ORDER BY id")
	// a's merge has written s0's part and waits for s1's connection.
	k.waitForS1(t)
	// The written part reached s0, whose thread runs it, held by the locks.
	waitShards(t, true, marker, root0)
	mustExec(t, b, "KILL QUERY "+aID)
	mustExec(t, holder, "COMMIT")
	if err := waitErr(t, done, "KILL QUERY"); mysqlErrCode(err) != 1317 {
		t.Fatalf("the merge killed while s0 held its part: %v, want error 1317", err)
	}
	waitShards(t, false, marker, root0)
	mustExec(t, locker, "UNLOCK TABLES")
	if got := queryString(t, a, "SELECT COUNT(*) FROM t"); got != "5" {
		t.Fatalf("the killed session's next statement: %q, want 5", got)
	}
	waitPoolsIdle(t, p, 2)
}
