package main_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shardgate/shardgate/internal/testenv"
)

// Fault injection in atomic transactions across shards, through shardgate
// processes (issue 21's acceptance): concurrent bank transfers through
// two processes, and a process killed at each step of a two-phase commit.
// The faults of the shards themselves are in internal/proxy/xa_fault_test.go.

// xaFormatID is the formatID of shardgate's XA branches (internal/xa).
const xaFormatID = 0x5347

// xaServers starts three servers, each with database db, and returns
// them with a connection pool on each (in db).
func xaServers(t *testing.T, db string, opts testenv.Options) ([]*testenv.Server, []*sql.DB) {
	t.Helper()
	srvs := testenv.StartN(t, 3, opts)
	direct := make([]*sql.DB, len(srvs))
	for i, s := range srvs {
		s.Exec(t, "CREATE DATABASE "+db)
		d, err := sql.Open("mysql", s.DSN(db))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		direct[i] = d
	}
	return srvs, direct
}

// writeXAConfig writes the configuration of a shardgate process named
// instance over srvs (clusters s0, s1, s2; s0 is the default), serving
// schema db (cross_shard_writes: atomic) with tables (YAML lines indented
// by six) to the test account, and returns the file's path.
func writeXAConfig(t *testing.T, db string, srvs []*testenv.Server, instance, transactions, tables string) string {
	t.Helper()
	cfg := fmt.Sprintf(`listeners: [{address: "127.0.0.1:0"}]
log: {level: info}
users:
  - {name: %[1]s, password: %[2]q, default_database: %[3]s}
clusters:
  - {name: s0, user: %[1]s, password: %[2]q, primary: {address: %[4]q}}
  - {name: s1, user: %[1]s, password: %[2]q, primary: {address: %[5]q}}
  - {name: s2, user: %[1]s, password: %[2]q, primary: {address: %[6]q}}
transactions: {instance: %[7]s, %[8]s}
schemas:
  - name: %[3]s
    default_cluster: s0
    cross_shard_writes: atomic
    tables:
%[9]s`, testenv.User, testenv.Password, db, srvs[0].Addr, srvs[1].Addr, srvs[2].Addr, instance, transactions, tables)
	file := filepath.Join(t.TempDir(), instance+".yaml")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// preparedBranches lists the prepared shardgate branches of a server.
func preparedBranches(d *sql.DB) ([]string, error) { return testenv.XAPrepared(d, xaFormatID) }

// waitNoPrepared polls the servers until none lists a prepared shardgate
// branch, failing the test after within.
func waitNoPrepared(t *testing.T, direct []*sql.DB, within time.Duration) {
	t.Helper()
	var last []string
	var lastErr error
	deadline := time.Now().Add(within)
	for {
		last, lastErr = nil, nil
		for i, d := range direct {
			p, err := preparedBranches(d)
			if err != nil {
				lastErr = err
			}
			for _, b := range p {
				last = append(last, fmt.Sprintf("s%d: %s", i, b))
			}
		}
		if len(last) == 0 && lastErr == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("prepared branches still there after %v: %q (last error %v)", within, last, lastErr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Transfer outcomes as the client saw them.
const (
	committed = iota // COMMIT answered OK
	failed           // an error before COMMIT (rolled back), or COMMIT's error saying it rolled back
	declined         // not enough money: rolled back by the client
	unknown          // COMMIT's answer lost or "outcome unknown": all or nothing
)

type transfer struct {
	id               int64
	from, to, amount int
	outcome          int
	err              error
}

const (
	bankAccounts = 24
	bankInitial  = 200
)

// bankEnv is the bank of the transfer tests: three servers, the tables
// account (hash on id) and ledger (like account, on the account), and two
// shardgate processes on them, bank-a and bank-b (whose recovery gives up
// on another instance's prepared branches after 1 ms: it fences
// transactions of bank-a that take long, which then fail).
type bankEnv struct {
	srvs   []*testenv.Server
	direct []*sql.DB
	files  [2]string
	procs  [2]*proc
	admins [2]string
	dbs    [2]atomic.Pointer[sql.DB] // what the clients connect to
}

const bankDB = "bank"

func startBank(t *testing.T) *bankEnv {
	t.Helper()
	e := &bankEnv{}
	e.srvs, e.direct = xaServers(t, bankDB, testenv.Options{ExtraArgs: []string{"--innodb-lock-wait-timeout=1"}})
	for i, s := range e.srvs {
		for _, sub := range []int{2 * i, 2*i + 1} {
			s.Exec(t,
				fmt.Sprintf("CREATE TABLE %s.account_%04d (id INT PRIMARY KEY, balance INT NOT NULL)", bankDB, sub),
				fmt.Sprintf("CREATE TABLE %s.ledger_%04d (transfer BIGINT NOT NULL, account INT NOT NULL, delta INT NOT NULL, PRIMARY KEY (transfer, account))", bankDB, sub))
		}
	}
	const tables = `      - {name: account, shard_key: id, rule: hash, shards: [s0, s1, s2], sub_tables: 2}
      - {name: ledger, shard_key: account, like: account}
`
	for i, name := range []string{"bank-a", "bank-b"} {
		rec := "recovery_interval: 1s, abandon_after: 30s"
		if name == "bank-b" {
			rec = "recovery_interval: 20ms, abandon_after: 1ms"
		}
		e.files[i] = writeXAConfig(t, bankDB, e.srvs, name, rec, tables)
		if err := e.start(t, i); err != nil {
			t.Fatal(err)
		}
	}
	var values []string
	for id := 1; id <= bankAccounts; id++ {
		values = append(values, fmt.Sprintf("(%d, %d)", id, bankInitial))
	}
	if _, err := e.dbs[0].Load().Exec("INSERT INTO account VALUES " + strings.Join(values, ", ")); err != nil {
		t.Fatal(err)
	}
	return e
}

// start starts shardgate i (again); it may run on a goroutine other than
// the test's.
func (e *bankEnv) start(t *testing.T, i int) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	admin := ln.Addr().String()
	ln.Close()
	p, listen, err := startServeE(t, nil, "--config", e.files[i], "--admin-http", admin)
	if err != nil {
		return err
	}
	d, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/%s", testenv.User, testenv.Password, listen, bankDB))
	if err != nil {
		return err
	}
	t.Cleanup(func() { d.Close() })
	e.admins[i], e.procs[i] = admin, p
	e.dbs[i].Store(d)
	return nil
}

// run makes transfers through both processes for runFor, six clients on
// each, while chaos (if not nil) injects faults; strict: a client that
// cannot connect fails the test.
func (e *bankEnv) run(t *testing.T, runFor time.Duration, strict bool, chaos func(ctx context.Context)) []transfer {
	t.Helper()
	const workersPerProxy = 6
	ctx, cancel := context.WithTimeout(context.Background(), runFor)
	defer cancel()
	var mu sync.Mutex
	var transfers []transfer
	var wg sync.WaitGroup
	if chaos != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			chaos(ctx)
		}()
	}
	for pi := range e.dbs {
		for w := range workersPerProxy {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(pi), uint64(w)))
				var mine []transfer
				var conn *sql.Conn
				for n := 0; ctx.Err() == nil; n++ {
					if conn == nil {
						c, err := e.dbs[pi].Load().Conn(ctx)
						if err != nil {
							if strict {
								t.Errorf("connect to shardgate %d: %v", pi, err)
								return
							}
							time.Sleep(20 * time.Millisecond) // it restarts
							continue
						}
						conn = c
					}
					tr := transfer{id: int64(pi)<<32 | int64(w)<<20 | int64(n), from: 1 + rng.IntN(bankAccounts), amount: 1 + rng.IntN(50)}
					for tr.to = tr.from; tr.to == tr.from; {
						tr.to = 1 + rng.IntN(bankAccounts)
					}
					var broken bool
					tr.outcome, tr.err, broken = runTransfer(conn, tr, rng.IntN(2) == 0)
					mine = append(mine, tr)
					if broken {
						_ = conn.Raw(func(any) error { return driver.ErrBadConn }) // discarded, not pooled
						conn.Close()
						conn = nil
					}
				}
				if conn != nil {
					conn.Close()
				}
				mu.Lock()
				transfers = append(transfers, mine...)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	return transfers
}

// bankCounts are a run's transfers by what the clients saw.
type bankCounts struct {
	committed, crossCommitted, failed, declined, unknown int
}

// check waits until no branch is left prepared, then checks the bank
// against what the clients saw.
func (e *bankEnv) check(t *testing.T, transfers []transfer) bankCounts {
	t.Helper()
	// Every branch ends: the commits finished theirs, recovery those whose
	// XA COMMIT failed after the decision or whose process died.
	waitNoPrepared(t, e.direct, 30*time.Second)

	// Where each account is, its balance, and the ledger.
	shardOf := map[int]int{}
	balance := map[int]int{}
	type side struct{ account, delta int }
	ledger := map[int64][]side{}
	for i, d := range e.direct {
		for _, sub := range []int{2 * i, 2*i + 1} {
			rows := queryAll(t, d, fmt.Sprintf("SELECT id, balance FROM account_%04d", sub))
			for _, r := range rows {
				id, b := atoi(t, r[0]), atoi(t, r[1])
				if _, dup := balance[id]; dup {
					t.Errorf("account %d is on two sub-tables", id)
				}
				shardOf[id], balance[id] = i, b
			}
			for _, r := range queryAll(t, d, fmt.Sprintf("SELECT transfer, account, delta FROM ledger_%04d", sub)) {
				id, err := strconv.ParseInt(r[0], 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				acc := atoi(t, r[1])
				ledger[id] = append(ledger[id], side{acc, atoi(t, r[2])})
			}
		}
	}
	if len(balance) != bankAccounts {
		t.Fatalf("%d accounts, want %d", len(balance), bankAccounts)
	}
	total, sums := 0, map[int]int{}
	for id, b := range balance {
		total += b
		if b < 0 {
			t.Errorf("account %d is negative: %d", id, b)
		}
	}
	for _, sides := range ledger {
		for _, s := range sides {
			sums[s.account] += s.delta
		}
	}
	if total != bankAccounts*bankInitial {
		t.Errorf("total %d, want %d", total, bankAccounts*bankInitial)
	}
	for id, b := range balance {
		if b != bankInitial+sums[id] {
			t.Errorf("account %d: balance %d, but its ledger rows say %d", id, b, bankInitial+sums[id])
		}
	}
	var c bankCounts
	errSamples := map[string]int{}
	for _, tr := range transfers {
		sides := ledger[tr.id]
		delete(ledger, tr.id)
		applied := len(sides) == 2 &&
			(sides[0] == side{tr.from, -tr.amount} && sides[1] == side{tr.to, tr.amount} ||
				sides[1] == side{tr.from, -tr.amount} && sides[0] == side{tr.to, tr.amount})
		if tr.err != nil {
			msg := tr.err.Error()
			if len(msg) > 100 {
				msg = msg[:100]
			}
			errSamples[msg]++
		}
		switch tr.outcome {
		case committed:
			c.committed++
			if !applied {
				t.Errorf("transfer %d (%d -> %d, %d) committed, but its ledger rows are %v", tr.id, tr.from, tr.to, tr.amount, sides)
			}
			if shardOf[tr.from] != shardOf[tr.to] {
				c.crossCommitted++
			}
		case failed, declined:
			if tr.outcome == failed {
				c.failed++
			} else {
				c.declined++
			}
			if len(sides) != 0 {
				t.Errorf("transfer %d (%d -> %d, %d) failed (%v), but its ledger rows are %v", tr.id, tr.from, tr.to, tr.amount, tr.err, sides)
			}
		case unknown:
			c.unknown++
			if len(sides) != 0 && !applied {
				t.Errorf("transfer %d (%d -> %d, %d) of unknown outcome (%v) is half applied: ledger rows %v", tr.id, tr.from, tr.to, tr.amount, tr.err, sides)
			}
		}
	}
	for id, sides := range ledger {
		t.Errorf("ledger rows of transfer %d, which no client ran: %v", id, sides)
	}
	t.Logf("%d transfers: %d committed (%d across shards), %d failed, %d declined, %d unknown; errors: %v",
		len(transfers), c.committed, c.crossCommitted, c.failed, c.declined, c.unknown, errSamples)
	for i, pr := range e.procs {
		t.Logf("shardgate %d: %d branches resolved by its recovery", i, strings.Count(pr.stderr.String(), `msg="XA recovery resolved a prepared branch"`))
	}
	if c.crossCommitted < 20 {
		t.Errorf("only %d cross-shard transfers committed: the run proves little", c.crossCommitted)
	}
	return c
}

// Concurrent transfers between random accounts over three shards, through
// two shardgate processes (distinct instance names) on the same backends.
// Each transfer moves money between two accounts and writes its two sides
// in the ledger: two thirds of them are cross-shard, two-phase commits.
// Distributed deadlocks, which no server detects, end with the servers'
// lock wait timeout (1 s here), a failed transfer. At the end: the total
// is unchanged, no account is negative, each balance is its initial one
// plus its ledger rows, a transfer the client saw committed has both
// ledger rows, one it saw fail has neither, none has an unknown outcome,
// and no branch is left prepared.
func TestXABankTransfers(t *testing.T) {
	e := startBank(t)
	transfers := e.run(t, 4*time.Second, true, nil)
	if t.Failed() {
		return
	}
	c := e.check(t, transfers)
	if c.unknown > 0 {
		t.Errorf("%d transfers of unknown outcome without any fault injected", c.unknown)
	}
	for i, admin := range e.admins {
		if n := metricValue(t, admin, `shardgate_xa_commits_total{kind="two_phase"}`); n < 1 {
			t.Errorf("shardgate %d made %v two-phase commits", i, n)
		}
	}
}

// The transfers of TestXABankTransfers while a shard is killed (SIGKILL)
// and restarted, and then shardgate bank-a is killed and restarted under
// its instance name. Transfers fail, some with an unknown outcome (the
// coordinator lost at the decision, the process gone at COMMIT): those
// are all or nothing; the others as the client was told; the total is
// unchanged, and recovery leaves no branch prepared.
func TestXABankTransfersWithFaults(t *testing.T) {
	e := startBank(t)
	// sleep waits d unless the run ends first.
	sleep := func(ctx context.Context, d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	transfers := e.run(t, 5*time.Second, false, func(ctx context.Context) {
		if !sleep(ctx, time.Second) {
			return
		}
		if err := e.srvs[1].Kill(); err != nil {
			t.Error(err)
		}
		if !sleep(ctx, 700*time.Millisecond) {
			return
		}
		if err := e.srvs[1].Restart(); err != nil {
			t.Error(err)
		}
		if !sleep(ctx, time.Second) {
			return
		}
		_ = e.procs[0].cmd.Process.Kill()
		if err := e.start(t, 0); err != nil {
			t.Error(err)
		}
	})
	if t.Failed() {
		return
	}
	e.check(t, transfers)
}

// runTransfer runs one transfer on conn, the debit first or the credit
// first, and says what the client saw; broken: the connection is not
// usable any more.
func runTransfer(conn *sql.Conn, tr transfer, debitFirst bool) (outcome int, err error, broken bool) {
	ctx := context.Background()
	exec := func(q string) (int64, error) {
		r, err := conn.ExecContext(ctx, q)
		if err != nil {
			return 0, err
		}
		return r.RowsAffected()
	}
	fail := func(err error) (int, error, bool) {
		if _, rerr := conn.ExecContext(ctx, "ROLLBACK"); rerr != nil {
			return failed, err, true // closing the connection rolls back
		}
		return failed, err, false
	}
	if _, err := exec("BEGIN"); err != nil {
		return fail(err)
	}
	debit := func() (bool, error) {
		n, err := exec(fmt.Sprintf("UPDATE account SET balance = balance - %d WHERE id = %d AND balance >= %d", tr.amount, tr.from, tr.amount))
		if err == nil && n == 1 {
			_, err = exec(fmt.Sprintf("INSERT INTO ledger VALUES (%d, %d, %d)", tr.id, tr.from, -tr.amount))
		}
		return n == 1, err
	}
	credit := func() error {
		_, err := exec(fmt.Sprintf("UPDATE account SET balance = balance + %d WHERE id = %d", tr.amount, tr.to))
		if err == nil {
			_, err = exec(fmt.Sprintf("INSERT INTO ledger VALUES (%d, %d, %d)", tr.id, tr.to, tr.amount))
		}
		return err
	}
	if !debitFirst {
		if err := credit(); err != nil {
			return fail(err)
		}
	}
	ok, err := debit()
	if err != nil {
		return fail(err)
	}
	if !ok {
		_, err, broken = fail(nil)
		return declined, err, broken
	}
	if debitFirst {
		if err := credit(); err != nil {
			return fail(err)
		}
	}
	_, err = conn.ExecContext(ctx, "COMMIT")
	var me *mysql.MySQLError
	switch {
	case err == nil:
		return committed, nil, false
	case errors.As(err, &me) && (strings.Contains(me.Message, "rolled back") || strings.Contains(me.Message, "nothing was committed")):
		return failed, err, false // the answer says so
	case errors.As(err, &me):
		return unknown, err, false // an outcome unknown, or the server's error for the COMMIT
	}
	return unknown, err, true // the answer lost
}

func queryAll(t *testing.T, d *sql.DB, q string) [][]string {
	t.Helper()
	rows, err := d.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = v.String
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// metricValue reads a sample of the admin port's /metrics (0 if absent).
func metricValue(t *testing.T, admin, sample string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A shardgate process kills itself (SHARDGATE_XA_FAILPOINT) at each step
// of the two-phase commit of a transaction that writes a row on each of
// three shards; then it is restarted under the same instance name, which
// recovers at start, or a second process (another instance, 1 s
// abandon_after) that was running beside it recovers. Either way no
// branch is left prepared, and the transaction is all or nothing, row by
// row: nothing when the process died before the decision, everything
// after it. The client, whose COMMIT lost its connection, was told no
// outcome.
func TestXACrashAtEveryStep(t *testing.T) {
	const db = "xacrash"
	srvs, direct := xaServers(t, db, testenv.Options{})
	for i, s := range srvs {
		s.Exec(t, fmt.Sprintf("CREATE TABLE %s.t_%04d (id INT PRIMARY KEY, v VARCHAR(20))", db, i))
	}
	const tables = "      - {name: t, shard_key: id, rule: mod, shards: [s0, s1, s2], sub_tables: 1}\n"
	const recovery = "recovery_interval: 200ms, abandon_after: 1s"
	steps := []struct {
		failpoint string
		committed bool // the decision was made before the crash
		prepared  int  // branches the crash leaves prepared
	}{
		{"after-first-prepare", false, 1}, // the other branch, not prepared, ends with its connection
		{"after-prepares", false, 2},
		{"after-decision", true, 2},
		{"after-first-commit", true, 1},
	}
	k := 0
	for _, step := range steps {
		for _, restart := range []bool{true, false} {
			k++
			name := step.failpoint + "/restarted"
			if !restart {
				name = step.failpoint + "/other instance"
			}
			base := 3 * k // rows base, base+1, base+2 on s0, s1, s2
			t.Run(name, func(t *testing.T) {
				fileA := writeXAConfig(t, db, srvs, fmt.Sprintf("crash%da", k), recovery, tables)
				a, listen := startServeEnv(t, []string{"SHARDGATE_XA_FAILPOINT=" + step.failpoint}, "--config", fileA)
				var recoverer *proc
				if !restart {
					recoverer, _ = startServe(t, "--config", writeXAConfig(t, db, srvs, fmt.Sprintf("crash%db", k), recovery, tables))
				}
				conn, err := open(t, listen, db).Conn(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				for _, q := range []string{"BEGIN",
					fmt.Sprintf("INSERT INTO t VALUES (%d, 'on s0')", base),
					fmt.Sprintf("INSERT INTO t VALUES (%d, 'on s1')", base+1),
					fmt.Sprintf("INSERT INTO t VALUES (%d, 'on s2')", base+2)} {
					if _, err := conn.ExecContext(context.Background(), q); err != nil {
						t.Fatalf("%s: %v", q, err)
					}
				}
				_, err = conn.ExecContext(context.Background(), "COMMIT")
				var me *mysql.MySQLError
				if err == nil || errors.As(err, &me) {
					t.Fatalf("COMMIT through a process that kills itself %s: %v, want the connection lost", step.failpoint, err)
				}
				waitKilled(t, a)
				if restart {
					recoverer, _ = startServe(t, "--config", fileA)
				}
				waitNoPrepared(t, direct, 30*time.Second)
				for i, d := range direct {
					n := scalar(t, d, fmt.Sprintf("SELECT COUNT(*) FROM t_%04d WHERE id = %d", i, base+i))
					if want := map[bool]string{true: "1", false: "0"}[step.committed]; n != want {
						t.Errorf("row on s%d: %s, want %s (decision made before the crash: %v)", i, n, want, step.committed)
					}
				}
				// Each branch left prepared is resolved once, by the
				// recovering process, as the decision says.
				want := map[bool]string{true: "outcome=commit", false: "outcome=rollback"}[step.committed]
				const line = `msg="XA recovery resolved a prepared branch"`
				waitUntil(t, 30*time.Second, "the recovery's log lines", func() bool {
					return strings.Count(recoverer.stderr.String(), line) >= step.prepared
				})
				resolved := regexp.MustCompile(line+`.*`).FindAllString(recoverer.stderr.String(), -1)
				if len(resolved) != step.prepared || strings.Count(strings.Join(resolved, "\n"), want) != step.prepared {
					t.Errorf("the recovering process logged %q, want %d branches resolved with %s", resolved, step.prepared, want)
				}
			})
		}
	}
}

// waitKilled waits for p to die of SIGKILL, its failpoint's.
func waitKilled(t *testing.T, p *proc) {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("shardgate exited with %v, want killed by its failpoint", err)
		}
		if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("shardgate exited with %v, want killed by its failpoint\n%s", err, p.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("shardgate did not kill itself at its failpoint within 30 s")
	}
}
