package proxy_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/testenv"
	sgxa "github.com/shardgate/shardgate/internal/xa"
)

// Fault injection in two-phase commits (issue 21's acceptance): a shard
// killed between PREPARE and COMMIT, the coordinator shard lost at the
// decision. The crashes of shardgate itself at each step, and the bank
// transfers through two processes, are in cmd/shardgate/xa_test.go.

// xaTriple is an in-process shardgate over three shards: table t is
// sharded by id mod 3, t_0000 on s0 (the default cluster, which
// coordinates a transaction whose first write is there), t_0001 on s1,
// t_0002 on s2. addrs are where the clusters' primaries are configured
// (a relay in front of a server, or the server).
type xaTriple struct {
	p    *proxy.Proxy
	srvs [3]*testenv.Server
	d    [3]*sql.DB // each server directly, in the test's database
	conn *sql.Conn  // a client connection to the proxy
}

func startXATriple(t *testing.T, db string, srvs [3]*testenv.Server, addrs [3]string) *xaTriple {
	t.Helper()
	e := &xaTriple{srvs: srvs}
	for i, s := range srvs {
		s.Exec(t, "DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db,
			fmt.Sprintf("CREATE TABLE %s.t_%04d (id INT PRIMARY KEY, v VARCHAR(20))", db, i))
		e.d[i] = openDB(t, s.DSN(db))
		e.d[i].SetMaxIdleConns(0) // a server the test restarts leaves no dead connection behind
	}
	e.p = startXAProxy(t, db, addrs, db, "recovery_interval: 1h, abandon_after: 1h")
	e.conn = oneConn(t, openDB(t, proxyDSN(e.p, appUser, appPass, db, "")))
	return e
}

// startXAProxy starts an in-process shardgate over xaTriple's layout,
// named instance, with the transactions keys trx.
func startXAProxy(t *testing.T, db string, addrs [3]string, instance, trx string) *proxy.Proxy {
	t.Helper()
	yaml := fmt.Sprintf(`
listeners: [{address: "127.0.0.1:0"}]
admin: {http: "127.0.0.1:0"}
users:
  - {name: %[1]s, password_hash: "%[2]s", default_database: %[3]s}
clusters:
  - {name: s0, user: %[4]s, password: %[5]s, primary: {address: "%[6]s"}}
  - {name: s1, user: %[4]s, password: %[5]s, primary: {address: "%[7]s"}}
  - {name: s2, user: %[4]s, password: %[5]s, primary: {address: "%[8]s"}}
transactions: {instance: %[9]s, %[10]s}
schemas:
  - name: %[3]s
    default_cluster: s0
    cross_shard_writes: atomic
    tables:
      - {name: t, shard_key: id, rule: mod, shards: [s0, s1, s2], sub_tables: 1}
`, appUser, hashOf(appPass), db, testenv.User, testenv.Password, addrs[0], addrs[1], addrs[2], instance, trx)
	return startProxy(t, parseConfig(t, yaml, instance+".yaml"))
}

// writeOnEveryShard opens a transaction that inserts row id+i on shard
// si, s0 first (the coordinator, whose part is a local transaction), and
// runs COMMIT in the background: its error comes on the channel.
func (e *xaTriple) writeOnEveryShard(t *testing.T, id int) <-chan error {
	t.Helper()
	mustExec(t, e.conn, "BEGIN")
	for i := range 3 {
		mustExec(t, e.conn, fmt.Sprintf("INSERT INTO t VALUES (%d, 'row %d')", id+i, id+i))
	}
	done := make(chan error, 1)
	go func() {
		_, err := e.conn.ExecContext(context.Background(), "COMMIT")
		done <- err
	}()
	return done
}

// rows says, per shard, whether the row of writeOnEveryShard is there.
func (e *xaTriple) rows(t *testing.T, id int) [3]bool {
	t.Helper()
	var out [3]bool
	for i := range 3 {
		out[i] = queryString(t, e.d[i], fmt.Sprintf("SELECT COUNT(*) FROM t_%04d WHERE id = %d", i, id+i)) == "1"
	}
	return out
}

// recoverUntilResolved makes recovery passes until no server lists a
// prepared shardgate branch (30 s at most).
func (e *xaTriple) recoverUntilResolved(t *testing.T) {
	t.Helper()
	e.recoverWith(t, e.p)
}

// recoverWith is recoverUntilResolved by p's recovery.
func (e *xaTriple) recoverWith(t *testing.T, p *proxy.Proxy) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		left := p.RecoverNow(ctx)
		cancel()
		n := 0
		for i := range 3 {
			n += len(xaPrepared(t, e.d[i]))
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("prepared branches still there after 30 s of recovery; the last pass left %+v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pauseAt stops the first two-phase commit that reaches failpoint name:
// reached is closed when it is there, and the commit goes on when the
// test calls release (at the latest when the test ends).
func pauseAt(t *testing.T, name string) (reached <-chan struct{}, release func()) {
	t.Helper()
	r, rel := make(chan struct{}), make(chan struct{})
	var once, relOnce sync.Once
	sgxa.SetFailpointHook(func(n string) {
		if n != name {
			return
		}
		paused := false
		once.Do(func() { paused = true })
		if paused {
			close(r)
			<-rel
		}
	})
	release = func() { relOnce.Do(func() { close(rel) }) }
	t.Cleanup(func() {
		release()
		sgxa.SetFailpointHook(nil)
	})
	return r, release
}

func waitClosed(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(30 * time.Second):
		t.Fatalf("waited 30 s for %s", what)
	}
}

func waitResult(t *testing.T, c <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-c:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("waited 30 s for %s", what)
		return nil
	}
}

// A shard killed between PREPARE and COMMIT: the transaction was decided
// (the coordinator committed the decision), so the client gets OK; the
// killed shard keeps its branch prepared across its restart and recovery
// commits it there; the shard that stayed up committed at once.
func TestXAShardKilledBetweenPrepareAndCommit(t *testing.T) {
	own := testenv.StartN(t, 2, testenv.Options{})
	srvs := [3]*testenv.Server{testenv.Shared(t), own[0], own[1]}
	e := startXATriple(t, "xakill", srvs, [3]string{srvs[0].Addr, srvs[1].Addr, srvs[2].Addr})

	reached, release := pauseAt(t, sgxa.AfterPrepares)
	done := e.writeOnEveryShard(t, 30)
	waitClosed(t, reached, "the commit to prepare its branches")
	if p := xaPrepared(t, e.d[2]); len(p) != 1 {
		t.Fatalf("s2 lists %d prepared branches at the pause, want 1: %q", len(p), p)
	}
	if err := srvs[2].Kill(); err != nil {
		t.Fatal(err)
	}
	release()
	if err := waitResult(t, done, "COMMIT"); err != nil {
		t.Fatalf("COMMIT with the decision made and s2 down: %v, want OK (recovery commits s2's branch)", err)
	}
	for i := range 2 {
		if n := queryString(t, e.d[i], fmt.Sprintf("SELECT COUNT(*) FROM t_%04d WHERE id = %d", i, 30+i)); n != "1" {
			t.Fatalf("row on s%d after COMMIT: %s, want it there", i, n)
		}
	}
	// The client's connection goes on.
	if got := queryString(t, e.conn, "SELECT COUNT(*) FROM t WHERE id IN (30, 31)"); got != "2" {
		t.Fatalf("rows read after the COMMIT: %s, want 2", got)
	}

	if err := srvs[2].Restart(); err != nil {
		t.Fatal(err)
	}
	e.recoverUntilResolved(t)
	if got := e.rows(t, 30); got != [3]bool{true, true, true} {
		t.Fatalf("rows after recovery: %v, want all three", got)
	}
	// Nothing needs the decision any more: the next pass removes it.
	e.p.RecoverNow(context.Background())
	if n := queryString(t, e.d[0], "SELECT COUNT(*) FROM shardgate_xa_decisions"); n != "0" {
		t.Fatalf("decision rows left on s0 after every branch committed: %s", n)
	}
}

// A branch's shard lost before it is prepared: COMMIT fails saying the
// transaction was rolled back on every shard, and it was: the branch
// prepared before is rolled back, and so is the coordinator's local
// part, which the session must not leave open (the client's next
// statements would run in it, and its next BEGIN commit it). The lost
// connection is given back to its pool once.
func TestXABranchLostBeforePrepare(t *testing.T) {
	own := testenv.StartN(t, 2, testenv.Options{})
	srvs := [3]*testenv.Server{testenv.Shared(t), own[0], own[1]}
	e := startXATriple(t, "xaprep", srvs, [3]string{srvs[0].Addr, srvs[1].Addr, srvs[2].Addr})
	mustExec(t, e.conn, "BEGIN")
	for i := range 3 {
		mustExec(t, e.conn, fmt.Sprintf("INSERT INTO t VALUES (%d, 'row %d')", i, i))
	}
	if err := srvs[2].Kill(); err != nil {
		t.Fatal(err)
	}
	_, err := e.conn.ExecContext(context.Background(), "COMMIT")
	if err == nil || !contains(err.Error(), "XA PREPARE failed on shard s2") || !contains(err.Error(), "rolled back on every shard") {
		t.Fatalf("COMMIT with s2 lost: %v, want the XA PREPARE failure on s2, rolled back", err)
	}
	for i := range 2 {
		if p := xaPrepared(t, e.d[i]); len(p) != 0 {
			t.Fatalf("prepared branches left on s%d: %q", i, p)
		}
	}
	// The session is out of the transaction: a write commits at once, and
	// BEGIN ... ROLLBACK commits nothing of the failed transaction.
	mustExec(t, e.conn, "INSERT INTO t VALUES (3, 'after')")
	if n := queryString(t, e.d[0], "SELECT COUNT(*) FROM t_0000 WHERE id = 3"); n != "1" {
		t.Fatalf("an autocommit INSERT after the failed COMMIT is not committed: %s rows", n)
	}
	mustExec(t, e.conn, "BEGIN", "ROLLBACK")
	if got := queryString(t, e.d[0], "SELECT GROUP_CONCAT(id) FROM t_0000"); got != "3" {
		t.Fatalf("ids on s0: %s, want 3 only (the failed transaction's row 0 must not be there)", got)
	}
	if n := queryString(t, e.d[1], "SELECT COUNT(*) FROM t_0001"); n != "0" {
		t.Fatalf("rows on s1: %s, want none", n)
	}
	// The pool counts the connection it lost once: it has no more idle
	// connections than open ones.
	count := map[string]map[string]float64{} // pool -> open, idle
	for _, line := range strings.Split(scrapeMetrics(t, e.p), "\n") {
		for _, m := range []string{"open", "idle"} {
			rest, ok := strings.CutPrefix(line, "shardgate_backend_pool_connections_"+m+"{")
			if !ok {
				continue
			}
			labels, v, _ := strings.Cut(rest, "} ")
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %q: %v", line, err)
			}
			if count[labels] == nil {
				count[labels] = map[string]float64{}
			}
			count[labels][m] = n
		}
	}
	if len(count) != 6 {
		t.Fatalf("pools in the metrics: %v, want 6 (3 servers', each with its evaluator pool)", count)
	}
	for pool, c := range count {
		if c["idle"] > c["open"] {
			t.Errorf("pool %s: %v idle connections, but %v open", pool, c["idle"], c["open"])
		}
	}
}

// The coordinator shard lost at COMMIT: the client gets error 1180 naming
// it, recovery leaves the prepared branches alone while it cannot read
// the decision, and once the coordinator is back the outcome is the one
// the decision says: none reached it (rolled back everywhere), or it was
// committed there and only its answer was lost (committed everywhere).
func TestXACoordinatorLostAtCommit(t *testing.T) {
	own := testenv.StartN(t, 2, testenv.Options{})
	srvs := [3]*testenv.Server{own[0], own[1], testenv.Shared(t)}
	relay := startFaultRelay(t, srvs[0].Addr)
	e := startXATriple(t, "xacoord", srvs, [3]string{relay.addr(), srvs[1].Addr, srvs[2].Addr})

	checkLost := func(t *testing.T, err error) {
		t.Helper()
		if mysqlErrCode(err) != 1180 || !contains(err.Error(), "coordinator shard s0") || !contains(err.Error(), "unknown") {
			t.Fatalf("COMMIT with the coordinator lost: %v, want 1180, outcome unknown, naming coordinator shard s0", err)
		}
	}
	// stillPrepared: without the coordinator, recovery cannot know the
	// decision and must leave both branches prepared.
	stillPrepared := func(t *testing.T) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		e.p.RecoverNow(ctx)
		if a, b := len(xaPrepared(t, e.d[1])), len(xaPrepared(t, e.d[2])); a != 1 || b != 1 {
			t.Fatalf("prepared branches on s1, s2 with the coordinator down: %d, %d; want 1, 1", a, b)
		}
	}

	t.Run("before the decision", func(t *testing.T) {
		reached, release := pauseAt(t, sgxa.AfterPrepares)
		done := e.writeOnEveryShard(t, 0)
		waitClosed(t, reached, "the commit to prepare its branches")
		if err := srvs[0].Kill(); err != nil {
			t.Fatal(err)
		}
		release()
		checkLost(t, waitResult(t, done, "COMMIT"))
		stillPrepared(t)
		if err := srvs[0].Restart(); err != nil {
			t.Fatal(err)
		}
		e.recoverUntilResolved(t)
		if got := e.rows(t, 0); got != [3]bool{} {
			t.Fatalf("rows after recovery: %v, want none (no decision was recorded)", got)
		}
		if d := queryString(t, e.d[0], "SELECT GROUP_CONCAT(decision) FROM shardgate_xa_decisions"); d != "abort" {
			t.Fatalf("decisions on s0: %q, want the abort recovery recorded", d)
		}
	})

	t.Run("decision recorded, answer lost", func(t *testing.T) {
		relay.cutAfterReplyTo([]byte("'commit')"))
		done := e.writeOnEveryShard(t, 3)
		checkLost(t, waitResult(t, done, "COMMIT"))
		if !relay.isDown() {
			t.Fatal("COMMIT failed without the relay cutting the coordinator's connection")
		}
		stillPrepared(t)
		relay.up()
		e.recoverUntilResolved(t)
		if got := e.rows(t, 3); got != [3]bool{true, true, true} {
			t.Fatalf("rows after recovery: %v, want all three (the decision was commit)", got)
		}
	})

	// The client's connection goes on after the unknown outcomes.
	if got := queryString(t, e.conn, "SELECT COUNT(*) FROM t"); got != "3" {
		t.Fatalf("rows of t read through the proxy: %s, want 3", got)
	}
}

// Another instance's recovery, which gives up on a coordinator after 1 ms
// (abandon_after), finds a transaction prepared while its coordinator is
// stopped at a step. Before the decision it records the abort decision:
// the coordinator's commit decision then fails on the primary key, and
// the client gets an error with nothing committed. After the decision it
// reads the commit there: nothing is rolled back, and the client gets OK
// with everything committed. Whichever comes first wins, in the
// coordinator's server.
func TestXARecoveryFencesAStoppedCoordinator(t *testing.T) {
	own := testenv.StartN(t, 2, testenv.Options{})
	srvs := [3]*testenv.Server{testenv.Shared(t), own[0], own[1]}
	addrs := [3]string{srvs[0].Addr, srvs[1].Addr, srvs[2].Addr}
	e := startXATriple(t, "xafence", srvs, addrs)
	other := startXAProxy(t, "xafence", addrs, "xafence-other", "recovery_interval: 1h, abandon_after: 1ms")
	// recoverTwice: the first pass sees the branches, the second finds
	// them abandoned (1 ms later).
	recoverTwice := func() []sgxa.Branch {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		other.RecoverNow(ctx)
		time.Sleep(2 * time.Millisecond)
		return other.RecoverNow(ctx)
	}

	t.Run("before the decision", func(t *testing.T) {
		reached, release := pauseAt(t, sgxa.AfterPrepares)
		done := e.writeOnEveryShard(t, 0)
		waitClosed(t, reached, "the commit to prepare its branches")
		left := recoverTwice()
		if d := queryString(t, e.d[0], "SELECT GROUP_CONCAT(decision) FROM shardgate_xa_decisions"); d != "abort" {
			t.Fatalf("decisions on s0 after the other instance's recovery: %q, want abort (left %+v)", d, left)
		}
		release()
		err := waitResult(t, done, "COMMIT")
		t.Logf("COMMIT fenced: %v", err)
		if mysqlErrCode(err) != 1402 || !contains(err.Error(), "rolled back on every shard") || !contains(err.Error(), "abandon_after") {
			t.Fatalf("COMMIT after the abort decision: %v, want an error saying it rolled back", err)
		}
		e.recoverWith(t, other)
		if got := e.rows(t, 0); got != [3]bool{} {
			t.Fatalf("rows: %v, want none", got)
		}
	})

	t.Run("after the decision", func(t *testing.T) {
		reached, release := pauseAt(t, sgxa.AfterDecision)
		done := e.writeOnEveryShard(t, 3)
		waitClosed(t, reached, "the commit decision")
		recoverTwice()
		if got := e.rows(t, 3); got[1] || got[2] {
			// The branches are still attached to the coordinator's
			// session, which commits them.
			t.Logf("the other instance committed branches of a live session: %v", got)
		}
		release()
		if err := waitResult(t, done, "COMMIT"); err != nil {
			t.Fatalf("COMMIT after the decision: %v, want OK", err)
		}
		e.recoverWith(t, other)
		if got := e.rows(t, 3); got != [3]bool{true, true, true} {
			t.Fatalf("rows: %v, want all three", got)
		}
	})
}

// faultRelay forwards TCP connections to a server. Armed with a marker,
// it cuts the connection whose client sends the marker once the server
// has answered that request in full (its final OK or ERR packet), without
// forwarding the answer, and then goes down: every connection is closed
// and new ones are closed at once, until up.
type faultRelay struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	marker []byte
	down   bool
	conns  map[net.Conn]bool
}

func startFaultRelay(t *testing.T, target string) *faultRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &faultRelay{ln: ln, target: target, conns: map[net.Conn]bool{}}
	go r.accept()
	t.Cleanup(func() {
		ln.Close()
		r.goDown()
	})
	return r
}

func (r *faultRelay) addr() string { return r.ln.Addr().String() }

func (r *faultRelay) cutAfterReplyTo(marker []byte) {
	r.mu.Lock()
	r.marker = marker
	r.mu.Unlock()
}

func (r *faultRelay) isDown() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.down
}

func (r *faultRelay) up() {
	r.mu.Lock()
	r.down = false
	r.mu.Unlock()
}

func (r *faultRelay) goDown() {
	r.mu.Lock()
	r.down = true
	r.marker = nil
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
}

// track registers c unless the relay is down.
func (r *faultRelay) track(cs ...net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down {
		return false
	}
	for _, c := range cs {
		r.conns[c] = true
	}
	return true
}

func (r *faultRelay) accept() {
	for {
		client, err := r.ln.Accept()
		if err != nil {
			return
		}
		go r.serve(client)
	}
}

func (r *faultRelay) serve(client net.Conn) {
	server, err := net.Dial("tcp", r.target)
	if err != nil {
		client.Close()
		return
	}
	if !r.track(client, server) {
		client.Close()
		server.Close()
		return
	}
	marked := make(chan struct{}) // the client sent the marker
	var markOnce sync.Once
	go func() { // client -> server
		defer server.Close()
		var tail []byte
		buf := make([]byte, 32<<10)
		for {
			n, err := client.Read(buf)
			if n > 0 {
				r.mu.Lock()
				m := r.marker
				r.mu.Unlock()
				if m != nil {
					tail = append(tail, buf[:n]...)
					if bytes.Contains(tail, m) {
						r.mu.Lock()
						r.marker = nil
						r.mu.Unlock()
						markOnce.Do(func() { close(marked) })
					}
					if len(tail) > len(m) {
						tail = append(tail[:0], tail[len(tail)-len(m):]...)
					}
				}
				if _, werr := server.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	// server -> client
	defer client.Close()
	var reply []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			select {
			case <-marked:
				reply = append(reply, buf[:n]...)
				if finalReply(reply) {
					r.goDown()
					return
				}
				continue
			default:
			}
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				server.Close()
			}
			return
		}
	}
}

// finalReply reports whether b, the packets a server sent for a request,
// hold its final answer: an ERR, or an OK without SERVER_MORE_RESULTS_EXISTS
// (a multi-statement request has one OK per statement).
func finalReply(b []byte) bool {
	for len(b) >= 4 {
		n := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
		if len(b) < 4+n {
			return false
		}
		p := b[4 : 4+n]
		b = b[4+n:]
		if len(p) == 0 {
			continue
		}
		switch p[0] {
		case 0xff:
			return true
		case 0x00:
			rest := skipLenenc(skipLenenc(p[1:]))
			if len(rest) >= 2 && rest[0]&0x08 == 0 {
				return true
			}
		}
	}
	return false
}

func skipLenenc(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	switch n := b[0]; {
	case n < 0xfb:
		return b[1:]
	case n == 0xfc && len(b) >= 3:
		return b[3:]
	case n == 0xfd && len(b) >= 4:
		return b[4:]
	case n == 0xfe && len(b) >= 9:
		return b[9:]
	}
	return nil
}
