package proxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/testenv"
)

// mustReload reloads cfg and fails on an error or on a change that needs
// a restart; it returns the applied changes.
func mustReload(t testing.TB, p *proxy.Proxy, cfg *config.Config) []config.Change {
	t.Helper()
	changes, err := p.Reload(cfg)
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	for _, c := range changes {
		if c.Restart {
			t.Fatalf("reload: %s needs a restart (%s -> %s)", c.Key, c.Old, c.New)
		}
	}
	return changes
}

func hasChange(changes []config.Change, key string) bool {
	for _, c := range changes {
		if c.Key == key {
			return true
		}
	}
	return false
}

// loginErr opens a fresh client connection as user and runs SELECT 1.
func loginErr(t *testing.T, p *proxy.Proxy, user, pass string) error {
	t.Helper()
	db, err := sql.Open("mysql", proxyDSN(p, user, pass, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var one int
	return db.QueryRow("SELECT 1").Scan(&one)
}

func withUser(cfg *config.Config, name, pass string) *config.Config {
	cfg.Users = append(cfg.Users, config.User{Name: name, Password: pass, Cluster: "main"})
	return cfg
}

// Users added, removed and changed by a reload: new logins follow the new
// table at once; a session of a removed user keeps running.
func TestReloadUsers(t *testing.T) {
	srv := testenv.Shared(t)
	p := startProxy(t, proxyConfig(t, srv, ""))
	if err := loginErr(t, p, "newbie", "n-pw"); mysqlErrCode(err) != 1045 {
		t.Fatalf("unknown user before the reload: %v, want 1045", err)
	}

	changes := mustReload(t, p, withUser(proxyConfig(t, srv, ""), "newbie", "n-pw"))
	if !hasChange(changes, "users[newbie]") {
		t.Errorf("changes %v lack users[newbie]", changes)
	}
	if err := loginErr(t, p, "newbie", "n-pw"); err != nil {
		t.Fatalf("user added by a reload cannot log in: %v", err)
	}
	live := oneConn(t, openDB(t, proxyDSN(p, "newbie", "n-pw", "", "")))
	mustExec(t, live, "SELECT 1")

	t.Run("password changed", func(t *testing.T) {
		changes := mustReload(t, p, withUser(proxyConfig(t, srv, ""), "newbie", "n-pw2"))
		for _, c := range changes {
			if c.Key == "users[newbie].password" && (strings.Contains(c.Old, "n-pw") || strings.Contains(c.New, "n-pw")) {
				t.Errorf("password not masked: %+v", c)
			}
		}
		if err := loginErr(t, p, "newbie", "n-pw2"); err != nil {
			t.Errorf("new password: %v", err)
		}
		if err := loginErr(t, p, "newbie", "n-pw"); mysqlErrCode(err) != 1045 {
			t.Errorf("old password after the change: %v, want 1045", err)
		}
		mustExec(t, live, "SELECT 1")
	})

	t.Run("removed", func(t *testing.T) {
		changes := mustReload(t, p, proxyConfig(t, srv, ""))
		if !hasChange(changes, "users[newbie]") {
			t.Errorf("changes %v lack users[newbie]", changes)
		}
		if err := loginErr(t, p, "newbie", "n-pw2"); mysqlErrCode(err) != 1045 {
			t.Errorf("removed user logs in: %v, want 1045", err)
		}
		if got := queryString(t, live, "SELECT 7"); got != "7" {
			t.Errorf("session of the removed user: %s", got)
		}
		if err := loginErr(t, p, appUser, appPass); err != nil {
			t.Errorf("unchanged user: %v", err)
		}
	})
}

// A file that cannot be applied (a new replica whose host does not
// resolve) changes nothing, not even the parts that could apply.
func TestReloadErrorChangesNothing(t *testing.T) {
	srv := testenv.Shared(t)
	p := startProxy(t, proxyConfig(t, srv, ""))
	cfg := withUser(proxyConfig(t, srv, "    replicas:\n      - address: no-such-host.invalid:3306\n"), "newbie", "n-pw")
	if _, err := p.Reload(cfg); err == nil || !contains(err.Error(), "no-such-host.invalid") {
		t.Fatalf("reload with an unresolvable replica: %v", err)
	}
	if err := loginErr(t, p, "newbie", "n-pw"); mysqlErrCode(err) != 1045 {
		t.Errorf("a failed reload added a user: %v", err)
	}
	if n := len(p.Cluster("main").Servers()); n != 1 {
		t.Errorf("a failed reload left %d servers", n)
	}
}

// Keys that need a restart are reported by name and left as they are.
func TestReloadReportsRestartKeys(t *testing.T) {
	srv := testenv.Shared(t)
	p := startProxy(t, proxyConfig(t, srv, ""))
	addr := p.Addrs()[0]
	cfg := proxyConfig(t, srv, "")
	cfg.Listeners[0].Address = "127.0.0.1:1"
	cfg.Clusters[0].Password = "other"
	changes, err := p.Reload(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"listeners[0].address": true, "clusters[main].password": true}
	for _, c := range changes {
		if !want[c.Key] || !c.Restart {
			t.Errorf("unexpected change %+v", c)
		}
		if c.Key == "clusters[main].password" && (c.Old != "***" || c.New != "***") {
			t.Errorf("backend password not masked: %+v", c)
		}
		delete(want, c.Key)
	}
	if len(want) > 0 {
		t.Errorf("not reported: %v (got %+v)", want, changes)
	}
	if p.Addrs()[0] != addr {
		t.Errorf("listener moved to %s", p.Addrs()[0])
	}
	// The old values stay in effect, and a second reload reports the same.
	if err := loginErr(t, p, appUser, appPass); err != nil {
		t.Errorf("after the reload: %v", err)
	}
	again, _ := p.Reload(cfg)
	if len(again) != len(changes) {
		t.Errorf("second reload: %+v, want %+v again", again, changes)
	}
}

// Pool limits: a lowered max_open closes connections as they come back and
// makes statements wait; a raised one lets more run at once.
func TestReloadPoolLimits(t *testing.T) {
	srv := testenv.Shared(t)
	withPool := func(maxOpen int) *config.Config {
		cfg := proxyConfig(t, srv, "")
		cfg.Clusters[0].Pool.MaxOpen, cfg.Clusters[0].Pool.MaxIdle, cfg.Clusters[0].Pool.MinIdle = maxOpen, maxOpen, 0
		cfg.Clusters[0].Pool.WaitTimeout = 500 * time.Millisecond
		return cfg
	}
	p := startProxy(t, withPool(4))
	db := openDB(t, proxyDSN(p, appUser, appPass, "", ""))
	primary := p.Cluster("main").Primary
	// begin holds a backend connection in a transaction.
	begin := func() *sql.Tx {
		t.Helper()
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec("SELECT 1"); err != nil {
			t.Fatalf("statement in a transaction: %v", err)
		}
		return tx
	}
	var txs []*sql.Tx
	for range 4 {
		txs = append(txs, begin())
	}
	if open, _, _ := primary.Open(); open != 4 {
		t.Fatalf("open = %d, want 4", open)
	}

	changes := mustReload(t, p, withPool(2))
	if !hasChange(changes, "clusters[main].pool.max_open") {
		t.Errorf("changes %v lack max_open", changes)
	}
	for _, tx := range txs[2:] {
		_ = tx.Commit()
	}
	// The client has the COMMIT's answer before the session has given its
	// connection back (and the pool closed it): wait for that (it takes
	// microseconds; the bound is for a busy machine).
	open := 0
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if open, _, _ = primary.Open(); open == 2 || time.Now().After(deadline) {
			break
		}
	}
	if open != 2 {
		t.Errorf("after max_open 4 -> 2 and two commits: open = %d, want 2", open)
	}
	tx3, err := db.Begin()
	if err == nil {
		_, err = tx3.Exec("SELECT 1")
		_ = tx3.Rollback()
	}
	if mysqlErrCode(err) != 9001 {
		t.Errorf("third transaction with max_open 2: %v, want 9001 after the wait timeout", err)
	}
	for _, tx := range txs[:2] {
		_ = tx.Commit()
	}

	mustReload(t, p, withPool(6))
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	ready := make(chan *sql.Tx, 6)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tx, err := db.BeginTx(context.Background(), nil)
			if err == nil {
				_, err = tx.Exec("SELECT 1")
			}
			errs <- err
			ready <- tx
		}()
	}
	wg.Wait()
	close(errs)
	close(ready)
	for err := range errs {
		if err != nil {
			t.Errorf("six transactions with max_open 6: %v", err)
		}
	}
	if open, _, _ := primary.Open(); open != 6 {
		t.Errorf("max_open 2 -> 6: open = %d, want 6", open)
	}
	for tx := range ready {
		if tx != nil {
			_ = tx.Commit()
		}
	}
}

// Routing changed by a reload applies to a live session's next read.
func TestReloadRoutingLiveSession(t *testing.T) {
	r := testenv.StartReplicated(t, 1)
	ids := serverIDs(t, r)
	routing := func(readFrom string) *config.Config {
		return asApp(proxyConfig(t, r.Primary, splitConfig(t, r, []int{1},
			"    routing:\n      consistency: none\n      read_from: "+readFrom+"\n")))
	}
	p := startProxy(t, routing("primary"))
	waitChecked(t, p)
	conn := oneConn(t, openDB(t, proxyDSN(p, appUser, appPass, "", "")))
	answers := func() string {
		t.Helper()
		return ids2(t, conn, ids)
	}
	if got := answers(); got != "0" {
		t.Fatalf("read_from primary: read answered by server %s", got)
	}
	changes := mustReload(t, p, routing("replica"))
	if !hasChange(changes, "clusters[main].routing.read_from") {
		t.Errorf("changes %v lack routing.read_from", changes)
	}
	if got := answers(); got != "1" {
		t.Errorf("read_from replica after the reload: the live session's read answered by server %s", got)
	}
	mustReload(t, p, routing("primary"))
	if got := answers(); got != "0" {
		t.Errorf("read_from primary again: answered by server %s", got)
	}
}

// ids2 runs SELECT @@server_id on conn and returns the index of the
// server that answered (0 the primary).
func ids2(t *testing.T, conn *sql.Conn, ids map[string]int) string {
	t.Helper()
	return fmt.Sprint(ids[queryString(t, conn, "SELECT @@server_id")])
}

// Replicas added and removed by a reload: an added one takes reads once
// checked; a removed one gets none and the proxy's connections to it close.
func TestReloadReplicaAddedRemoved(t *testing.T) {
	r := testenv.StartReplicated(t, 2)
	r.Primary.Exec(t, "CREATE DATABASE ra")
	r.WaitCaughtUp(t)
	ids := serverIDs(t, r)
	replicas := func(idx ...int) *config.Config {
		var b strings.Builder
		b.WriteString("    replicas:\n")
		for _, i := range idx {
			fmt.Fprintf(&b, "      - address: %s\n", r.Replicas[i].Addr)
		}
		return asApp(proxyConfig(t, r.Primary, b.String()+"    routing:\n      consistency: none\n"))
	}
	p := startProxy(t, replicas(0))
	waitChecked(t, p)
	db := openDB(t, proxyDSN(p, appUser, appPass, "ra", ""))
	if got := whoAnswers(t, db, ids, 20, "SELECT @@server_id"); got[1] != 20 {
		t.Fatalf("one replica: %v", got)
	}

	changes := mustReload(t, p, replicas(0, 1))
	if key := "clusters[main].replicas[" + r.Replicas[1].Addr + "]"; !hasChange(changes, key) {
		t.Errorf("changes %v lack %s", changes, key)
	}
	if n := len(p.Cluster("main").Servers()); n != 3 {
		t.Fatalf("after adding a replica: %d servers", n)
	}
	waitChecked(t, p)
	if got := whoAnswers(t, db, ids, 200, "SELECT @@server_id"); got[2] == 0 || got[1] == 0 {
		t.Errorf("reads after adding replica 2: %v, want both replicas", got)
	}

	mustReload(t, p, replicas(1))
	if got := whoAnswers(t, db, ids, 50, "SELECT @@server_id"); got[1] != 0 || got[2] != 50 {
		t.Errorf("reads after removing replica 1: %v, want all on replica 2", got)
	}
	count := fmt.Sprintf("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = '%s'", testenv.AppUser)
	deadline := time.Now().Add(10 * time.Second)
	for r.Replicas[0].Scalar(t, count) != "0" {
		if time.Now().After(deadline) {
			t.Fatalf("the proxy still has %s connection(s) to the removed replica", r.Replicas[0].Scalar(t, count))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if m := scrapeMetrics(t, p); strings.Contains(m, r.Replicas[0].Addr) {
		t.Errorf("metrics still list the removed replica %s", r.Replicas[0].Addr)
	}
}

// Reloads while sessions run statements: under -race this checks that
// what a reload swaps is read safely on the statement path.
func TestReloadUnderLoad(t *testing.T) {
	r := testenv.StartReplicated(t, 2)
	r.Primary.Exec(t, "CREATE DATABASE rl", "CREATE TABLE rl.t (id INT PRIMARY KEY AUTO_INCREMENT)")
	r.WaitCaughtUp(t)
	variant := func(i int) *config.Config {
		replicas := "    replicas:\n      - address: " + r.Replicas[0].Addr + "\n"
		if i%2 == 1 {
			replicas += "      - address: " + r.Replicas[1].Addr + "\n        weight: 3\n"
		}
		readFrom := []string{"replica", "primary"}[i%2]
		cfg := asApp(proxyConfig(t, r.Primary, replicas+"    routing:\n      read_from: "+readFrom+"\n"))
		cfg.Clusters[0].Pool.MaxOpen = 2 + i%3
		cfg.Clusters[0].Pool.MaxIdle, cfg.Clusters[0].Pool.MinIdle = cfg.Clusters[0].Pool.MaxOpen, 1
		cfg.Clusters[0].Health.Interval = time.Duration(200+100*(i%2)) * time.Millisecond
		cfg.Server.ClientIdleTimeout = time.Duration(60+i) * time.Second
		return cfg
	}
	p := startProxy(t, variant(0))
	db := openDB(t, proxyDSN(p, appUser, appPass, "rl", ""))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				var n int
				if err := db.QueryRow("SELECT COUNT(*) FROM t").Scan(&n); err != nil {
					errs <- err
					return
				}
				if _, err := db.Exec("INSERT INTO t VALUES ()"); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 1; i <= 12; i++ {
		mustReload(t, p, variant(i))
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("statement during reloads: %v", err)
	}
}

// While a reload holds its lock (resolving the host names of new servers
// can take seconds), the admin views answer: SHOW BACKENDS and SHOW
// CONFIG on the admin port, the status page, SET BACKEND.
func TestReloadLeavesAdminViewsFree(t *testing.T) {
	srv := testenv.Shared(t)
	p := startProxy(t, withAdminSQL(proxyConfig(t, srv, "")))
	db := openDB(t, adminDSN(p, adminUser, adminPass))
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	unlock := p.LockReload()
	defer unlock()
	done := make(chan error, 1)
	go func() {
		for _, q := range []string{"SHOW BACKENDS", "SHOW CONFIG", "SHOW SHARDING", "SHOW STATUS",
			"SET BACKEND main." + srv.Addr + " ONLINE"} {
			rows, err := db.Query(q)
			if err != nil {
				done <- fmt.Errorf("%s: %w", q, err)
				return
			}
			rows.Close()
		}
		resp, err := http.Get("http://" + p.AdminAddr() + "/")
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the admin views waited for the reload lock")
	}
}
