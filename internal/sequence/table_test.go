package sequence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// dialer dials srv as user, as the proxy dials a cluster's primary.
func dialer(srv *testenv.Server, user, password string) Dialer {
	dc := &backend.DialConfig{
		Addr: srv.Addr, User: user, Password: password,
		ConnectTimeout: 3 * time.Second, Charset: mysql.CollationUTF8MB4GeneralCI,
	}
	return func(ctx context.Context) (*backend.Conn, error) { return backend.Dial(ctx, dc, false) }
}

// testDB creates a database of the test's own on srv, dropped at the end.
func testDB(t *testing.T, srv *testenv.Server) string {
	t.Helper()
	db := "seq_" + strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "_"))
	srv.Exec(t, "DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db)
	t.Cleanup(func() { _ = srv.ExecE("DROP DATABASE IF EXISTS " + db) })
	return db
}

func openStore(t *testing.T, cfg Config) *Store {
	t.Helper()
	st, err := NewStore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

func testConfig(srv *testenv.Server, db string, block uint64) Config {
	return Config{Dial: dialer(srv, testenv.User, testenv.Password), Database: db, Block: block}
}

// noMax fails the test if a sequence wants to initialise its counter.
func noMax(t *testing.T) MaxFunc {
	return func(context.Context) (uint64, error) {
		t.Error("counter initialised again")
		return 0, errors.New("must not be called")
	}
}

func nextT(t *testing.T, q *Sequence, n int) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first, err := q.Next(ctx, n)
	if err != nil {
		t.Fatalf("Next(%d): %v", n, err)
	}
	return first
}

func counter(t *testing.T, root *sql.DB, db, schema, table string) uint64 {
	t.Helper()
	var v uint64
	err := root.QueryRow("SELECT next_id FROM "+db+".shardgate_sequences WHERE schema_name = ? AND table_name = ?",
		schema, table).Scan(&v)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestTwoProxiesNoDuplicates runs 64 goroutines over two Stores, two
// proxies on the same server, with small blocks so that they refill often
// and contend for the counter's row.
func TestTwoProxiesNoDuplicates(t *testing.T) {
	srv := testenv.Shared(t)
	db := testDB(t, srv)
	var calls atomic.Int32
	stores := []*Store{openStore(t, testConfig(srv, db, 5)), openStore(t, testConfig(srv, db, 5))}
	type span struct{ first, n uint64 }
	spans := make([][]span, 64)
	var wg sync.WaitGroup
	for g := range spans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := stores[g%2].Sequence("shop", "sf_user", constMax(0, &calls))
			var last uint64
			for i := range 40 {
				n := 1 + (g+i)%4
				first, err := q.Next(context.Background(), n)
				if err != nil {
					t.Error(err)
					return
				}
				if first <= last {
					t.Errorf("goroutine %d: %d after %d: ids went back within one proxy", g, first, last)
				}
				last = first + uint64(n) - 1
				spans[g] = append(spans[g], span{first, uint64(n)})
			}
		}()
	}
	wg.Wait()
	seen := map[uint64]int{}
	var top uint64
	for g, ss := range spans {
		for _, s := range ss {
			for id := s.first; id < s.first+s.n; id++ {
				if h, dup := seen[id]; dup {
					t.Fatalf("id %d handed out to goroutine %d and %d", id, h, g)
				}
				seen[id] = g
				top = max(top, id)
			}
		}
	}
	if len(seen) != 64*40*5/2 {
		t.Fatalf("%d ids handed out, want %d", len(seen), 64*40*5/2)
	}
	if c := counter(t, srv.RootDB(t), db, "shop", "sf_user"); c <= top {
		t.Fatalf("counter %d is not above the largest id handed out, %d", c, top)
	}
	if calls.Load() < 1 || calls.Load() > 2 {
		t.Fatalf("max called %d times, want once per proxy at most", calls.Load())
	}
}

// TestRestartNeverGoesBack: a new Store (a restarted proxy) starts above
// every block reserved before, used or not, and above observed ids.
func TestRestartNeverGoesBack(t *testing.T) {
	srv := testenv.Shared(t)
	db := testDB(t, srv)
	a := openStore(t, testConfig(srv, db, 100))
	qa := a.Sequence("shop", "t", constMax(0, nil))
	if got := nextT(t, qa, 3); got != 1 {
		t.Fatalf("first ids at %d, want 1", got)
	}
	a.Close()

	b := openStore(t, testConfig(srv, db, 100))
	qb := b.Sequence("shop", "t", noMax(t))
	if got := nextT(t, qb, 1); got != 101 {
		t.Fatalf("after a restart: %d, want 101 (the first block was [1, 101))", got)
	}
	ctx := context.Background()
	if err := qb.Observe(ctx, 5000); err != nil {
		t.Fatal(err)
	}
	if got := nextT(t, qb, 1); got != 5001 {
		t.Fatalf("after Observe(5000): %d, want 5001", got)
	}
	b.Close()

	c := openStore(t, testConfig(srv, db, 100))
	if got := nextT(t, c.Sequence("shop", "t", noMax(t)), 1); got != 5101 {
		t.Fatalf("after a second restart: %d, want 5101", got)
	}
}

// TestInitialisedFromMax: a counter created for a table that already holds
// rows starts above their largest key, read once, and only by the proxy
// that creates it.
func TestInitialisedFromMax(t *testing.T) {
	srv := testenv.Shared(t)
	db := testDB(t, srv)
	root := srv.RootDB(t)
	for i, ids := range []string{"(3), (77), (12)", "(40), (76)"} {
		sub := fmt.Sprintf("%s.orders_%04d", db, i)
		srv.Exec(t, "CREATE TABLE "+sub+" (id BIGINT PRIMARY KEY)", "INSERT INTO "+sub+" VALUES "+ids)
	}
	var calls atomic.Int32
	maxOfSubTables := func(ctx context.Context) (uint64, error) {
		calls.Add(1)
		var m uint64
		err := root.QueryRowContext(ctx, fmt.Sprintf(
			"SELECT GREATEST((SELECT COALESCE(MAX(id), 0) FROM %[1]s.orders_0000), "+
				"(SELECT COALESCE(MAX(id), 0) FROM %[1]s.orders_0001))", db)).Scan(&m)
		return m, err
	}
	q := openStore(t, testConfig(srv, db, 10)).Sequence("shop", "orders", maxOfSubTables)
	if got := nextT(t, q, 2); got != 78 {
		t.Fatalf("first ids at %d, want 78 (the max is 77)", got)
	}
	if calls.Load() != 1 {
		t.Fatalf("max read %d times, want 1", calls.Load())
	}
	other := openStore(t, testConfig(srv, db, 10)).Sequence("shop", "orders", noMax(t))
	if got := nextT(t, other, 1); got != 88 {
		t.Fatalf("second proxy: %d, want 88", got)
	}
	// The table the Store created has the documented shape.
	var name, ddl string
	if err := root.QueryRow("SHOW CREATE TABLE "+db+".shardgate_sequences").Scan(&name, &ddl); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"`next_id` bigint(20) unsigned NOT NULL", "PRIMARY KEY (`schema_name`,`table_name`)", "ENGINE=InnoDB"} {
		if !strings.Contains(ddl, want) {
			t.Errorf("sequences table lacks %q:\n%s", want, ddl)
		}
	}
}

// TestCustomTableAndNames: the table name is configurable, and schema or
// table names with quotes, backslashes and non-ASCII letters are stored
// exactly, whatever the server's sql_mode.
func TestCustomTableAndNames(t *testing.T) {
	srv := testenv.Shared(t)
	db := testDB(t, srv)
	cfg := testConfig(srv, db, 10)
	cfg.Table = "my seq`s"
	st := openStore(t, cfg)
	names := []Key{{"shop", "a'b"}, {"shop", `a\'b`}, {"shöp", "ünïcode"}, {"shop", "A'B"}}
	for i, k := range names {
		q := st.Sequence(k.Schema, k.Table, constMax(uint64(i*1000), nil))
		if got := nextT(t, q, 1); got != uint64(i*1000+1) {
			t.Fatalf("%s: first id %d, want %d", k, got, i*1000+1)
		}
	}
	rows, err := srv.RootDB(t).Query("SELECT schema_name, table_name, next_id FROM " + db + ".`my seq``s` ORDER BY next_id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var i int
	for ; rows.Next(); i++ {
		var k Key
		var next uint64
		if err := rows.Scan(&k.Schema, &k.Table, &next); err != nil {
			t.Fatal(err)
		}
		if k != names[i] || next != uint64(i*1000+11) {
			t.Errorf("row %d: %s = %d, want %s = %d", i, k, next, names[i], i*1000+11)
		}
	}
	if i != len(names) {
		t.Fatalf("%d counters stored, want %d", i, len(names))
	}
}

// TestBackendGoesAwayMidRefill kills the server while a reservation waits
// for the counter's row lock: the caller gets an error, and after the
// restart ids continue above everything handed out.
func TestBackendGoesAwayMidRefill(t *testing.T) {
	srv := testenv.Start(t, testenv.Options{})
	db := testDB(t, srv)
	st := openStore(t, testConfig(srv, db, 10))
	q := st.Sequence("shop", "t", constMax(0, nil))
	handed := nextT(t, q, 10) // the whole first block: the next call refills

	root := srv.RootDB(t)
	root.SetMaxIdleConns(0)
	lock, err := root.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec("SELECT * FROM " + db + ".shardgate_sequences FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := q.Next(context.Background(), 1)
		errc <- err
	}()
	waitForLockWait(t, root)
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("Next succeeded on a server killed mid-refill")
		}
		t.Logf("Next while the server died: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("Next still waiting 15s after the server was killed")
	}
	_ = lock.Rollback()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// The same proxy recovers on a new connection, above what it handed out.
	if got := nextT(t, q, 1); got <= handed+9 {
		t.Fatalf("after the restart: %d, not above %d", got, handed+9)
	}
	fresh := openStore(t, testConfig(srv, db, 10)).Sequence("shop", "t", noMax(t))
	if got := nextT(t, fresh, 1); got <= handed+9 {
		t.Fatalf("new proxy after the restart: %d, not above %d", got, handed+9)
	}
}

// waitForLockWait waits until a reservation is blocked on a row lock.
func waitForLockWait(t *testing.T, root *sql.DB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		err := root.QueryRow("SELECT COUNT(*) FROM information_schema.processlist " +
			"WHERE info LIKE 'UPDATE %shardgate_sequences%' AND user = '" + testenv.User + "'").Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the reservation never reached the server")
}

// TestContextEndsReservation: a reservation stuck behind another proxy's
// row lock gives up with the caller's context, and the sequence still
// works once the lock is gone.
func TestContextEndsReservation(t *testing.T) {
	srv := testenv.Shared(t)
	db := testDB(t, srv)
	q := openStore(t, testConfig(srv, db, 10)).Sequence("shop", "t", constMax(0, nil))
	nextT(t, q, 10)
	lock, err := srv.RootDB(t).Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec("SELECT * FROM " + db + ".shardgate_sequences FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := q.Next(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next behind a row lock: %v, want the context's deadline", err)
	}
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	if got := nextT(t, q, 1); got <= 10 {
		t.Fatalf("after the timeout: %d, want above 10", got)
	}
}

// TestMissingPrivileges: an account that may not create the table, or may
// not update it, gets an error naming the privilege.
func TestMissingPrivileges(t *testing.T) {
	srv := testenv.Shared(t)
	db := testDB(t, srv)
	const pw = "seq-pw"
	for _, c := range []struct {
		user, grant, setup, want string
	}{
		{user: "seq_nocreate", grant: "SELECT, INSERT, UPDATE",
			want: "CREATE privilege"},
		{user: "seq_readonly", grant: "SELECT",
			setup: "CREATE TABLE " + db + ".shardgate_sequences (schema_name VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, " +
				"table_name VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, next_id BIGINT UNSIGNED NOT NULL, " +
				"PRIMARY KEY (schema_name, table_name))",
			want: "needs SELECT, INSERT and UPDATE"},
	} {
		t.Run(c.user, func(t *testing.T) {
			account := "'" + c.user + "'@'%'"
			srv.Exec(t, "DROP USER IF EXISTS "+account, "CREATE USER "+account+" IDENTIFIED BY '"+pw+"'",
				"GRANT "+c.grant+" ON "+db+".* TO "+account)
			t.Cleanup(func() { _ = srv.ExecE("DROP USER IF EXISTS " + account) })
			if c.setup != "" {
				srv.Exec(t, c.setup)
			}
			st := openStore(t, Config{Dial: dialer(srv, c.user, pw), Database: db})
			_, err := st.Sequence("shop", "t", constMax(0, nil)).Next(context.Background(), 1)
			var se *mysql.SQLError
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &se) || se.Code != erTableAccessDenied {
				t.Fatalf("Next as %s: %v; want an error saying %q wrapping 1142", c.user, err, c.want)
			}
			t.Log(err)
		})
	}
}

// TestOverflow: a counter near the top of BIGINT UNSIGNED fails cleanly
// rather than wrapping round.
func TestOverflow(t *testing.T) {
	srv := testenv.Shared(t)
	db := testDB(t, srv)
	st := openStore(t, testConfig(srv, db, 10))
	q := st.Sequence("shop", "t", constMax(0, nil))
	nextT(t, q, 1)
	top := strconv.FormatUint(^uint64(0)-5, 10)
	srv.Exec(t, "UPDATE "+db+".shardgate_sequences SET next_id = "+top)
	fresh := openStore(t, testConfig(srv, db, 10)).Sequence("shop", "t", noMax(t))
	_, err := fresh.Next(context.Background(), 1)
	var se *mysql.SQLError
	if !errors.As(err, &se) || se.State != "22003" {
		t.Fatalf("Next with the counter at %s: %v, want a numeric overflow (22003)", top, err)
	}
}
