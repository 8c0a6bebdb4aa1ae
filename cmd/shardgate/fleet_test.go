package main_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/fleet"
	"github.com/shardgate/shardgate/internal/testenv"
)

// fleetInstance is one `shardgate serve --config etcd://...` process.
type fleetInstance struct {
	p             *proc
	listen, admin string
	cache         string
}

// fleetSchema is the sharded schema the fleet test's second push adds.
const fleetSchema = `schemas:
  - name: fleetdb
    default_cluster: main
    tables:
      - {name: t, shard_key: id, rule: hash, shards: [main], sub_tables: 2}
`

// fleetConfig is the configuration the fleet test pushes: its users and
// its main cluster's replicas, then schemas.
func fleetConfig(primary string, users map[string]string, replicas ...string) string {
	var b strings.Builder
	b.WriteString("log: {level: info}\nusers:\n")
	fmt.Fprintf(&b, "  - {name: %s, password: %q}\n", testenv.User, testenv.Password)
	for name, pw := range users {
		fmt.Fprintf(&b, "  - {name: %s, password: %q}\n", name, pw)
	}
	fmt.Fprintf(&b, "clusters:\n  - name: main\n    user: %s\n    password: %q\n    primary: {address: %q}\n", testenv.User, testenv.Password, primary)
	if len(replicas) > 0 {
		b.WriteString("    replicas:\n")
		for _, r := range replicas {
			fmt.Fprintf(&b, "      - {address: %q}\n", r)
		}
	}
	return b.String()
}

// metricE reads one sample of an instance's /metrics; absent is an error.
func metricE(admin, sample string) (float64, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + admin + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		return 0, fmt.Errorf("no %s in /metrics", sample)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

func (fi *fleetInstance) revision() int64 {
	v, err := metricE(fi.admin, "shardgate_config_revision")
	if err != nil {
		return -1
	}
	return int64(v)
}

func pushFile(t *testing.T, url, file string) (stdout, stderr string, code int) {
	t.Helper()
	return run(t, "", "config", "push", file, "--etcd", url)
}

var pushedRevision = regexp.MustCompile(`as revision (\d+)`)

func pushed(t *testing.T, stdout string) int64 {
	t.Helper()
	m := pushedRevision.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("config push printed no revision:\n%s", stdout)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// Three instances on one etcd: a push is applied by every one at once (the
// watch, not the 5 s poll), checked through each; a broken push is refused
// by `config push`, and written behind its back it is rejected by every
// instance, which keeps serving; etcd killed under load costs no client a
// statement, and the instances converge when it returns; an instance
// started while etcd is down starts from its cached copy.
func TestFleetFollowsEtcd(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	s0 := testenv.Shared(t)
	s1 := testenv.Start(t, testenv.Options{})
	url := "etcd://" + etcd.Endpoint + "/fleettest"
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	out, errOut, code := pushFile(t, url, write("v1.yaml", fleetConfig(s0.Addr, nil)))
	if code != 0 {
		t.Fatalf("first push: exit %d\n%s%s", code, out, errOut)
	}
	r1 := pushed(t, out)

	var fleetOf []*fleetInstance
	start := func(i int) *fleetInstance {
		fi := &fleetInstance{admin: freeAddr(t), cache: filepath.Join(dir, fmt.Sprintf("cache-%d.yaml", i))}
		fi.p, fi.listen = startServe(t, "--config", url, "--admin-http", fi.admin, "--config-cache", fi.cache)
		return fi
	}
	for i := 0; i < 3; i++ {
		fleetOf = append(fleetOf, start(i))
	}
	for i, fi := range fleetOf {
		if got := fi.revision(); got != r1 {
			t.Fatalf("instance %d applied revision %d, want %d", i, got, r1)
		}
	}
	waitUntil(t, 30*time.Second, "every instance sees the three", func() bool {
		for _, fi := range fleetOf {
			if v, _ := metricE(fi.admin, "shardgate_fleet_instances"); v != 3 {
				return false
			}
		}
		return true
	})

	// Each lists the fleet: the three client addresses, itself once, all
	// on one revision.
	for i, fi := range fleetOf {
		rows := apiRows(t, fi.admin, "/api/proxies")
		var addrs []string
		selves := 0
		for _, r := range rows {
			addrs = append(addrs, fmt.Sprint(r["address"]))
			if r["self"] == true {
				selves++
				if r["address"] != fi.listen || r["admin"] != fi.admin {
					t.Errorf("instance %d lists itself as %v", i, r)
				}
			}
			if r["same_config"] != true || r["config_revision"] != float64(r1) {
				t.Errorf("instance %d: %v is not on revision %d", i, r, r1)
			}
		}
		slices.Sort(addrs)
		want := []string{fleetOf[0].listen, fleetOf[1].listen, fleetOf[2].listen}
		slices.Sort(want)
		if !slices.Equal(addrs, want) || selves != 1 {
			t.Errorf("instance %d's /api/proxies: %v, want addresses %v and itself once", i, rows, want)
		}
		// The status page's fleet section lists them too.
		page := httpBody(t, "http://"+fi.admin+"/")
		for _, r := range rows {
			if id := fmt.Sprint(r["id"]); !strings.Contains(page, id) {
				t.Errorf("instance %d's status page does not list instance %s", i, id)
			}
		}
	}

	// A push adding a user and a replica reaches all three at once.
	s0.Exec(t, "DROP DATABASE IF EXISTS fleetdb")
	out, errOut, code = pushFile(t, url, write("v2.yaml", fleetConfig(s0.Addr, map[string]string{"newbie": "n-pw"}, s1.Addr)+fleetSchema))
	if code != 0 {
		t.Fatalf("second push: exit %d\n%s%s", code, out, errOut)
	}
	pushedAt := time.Now()
	r2 := pushed(t, out)
	for _, want := range []string{"users[newbie]: (none) -> (added)", "clusters[main].replicas[" + s1.Addr + "]: (none) -> (added)",
		"schemas[fleetdb]: (none) -> (added)"} {
		if !strings.Contains(out, want) {
			t.Errorf("config push's changes lack %q:\n%s", want, out)
		}
	}
	applyTimes := waitApplied(t, fleetOf, r2, pushedAt)
	t.Logf("revision %d applied after %v (instances 0, 1, 2)", r2, applyTimes)
	for i, fi := range fleetOf {
		// Within the 5 s poll interval: the watch delivered it.
		if applyTimes[i] > 4*time.Second {
			t.Errorf("instance %d applied the push after %v: the watch did not deliver it", i, applyTimes[i])
		}
		if err := pingAs(fi.listen, "newbie", "n-pw"); err != nil {
			t.Errorf("instance %d: the pushed user cannot log in: %v", i, err)
		}
		if !backendListed(t, fi.admin, "main", s1.Addr) {
			t.Errorf("instance %d does not list the pushed replica %s", i, s1.Addr)
		}
		subs := 0
		for _, r := range apiRows(t, fi.admin, "/api/sharding") {
			if r["schema"] == "fleetdb" && r["table"] == "t" {
				subs++
			}
		}
		if subs != 2 {
			t.Errorf("instance %d lists %d sub-tables of the pushed sharded table fleetdb.t, want 2", i, subs)
		}
	}
	// The sharded table, created through one instance, serves through all.
	for i, stmt := range []string{"CREATE DATABASE fleetdb", "CREATE TABLE fleetdb.t (id INT PRIMARY KEY, v INT)",
		"INSERT INTO fleetdb.t (id, v) VALUES (1, 10), (2, 20), (3, 30)"} {
		if _, err := open(t, fleetOf[i%3].listen, "").Exec(stmt); err != nil {
			t.Fatalf("instance %d: %s: %v", i%3, stmt, err)
		}
	}
	for i, fi := range fleetOf {
		if got := scalar(t, open(t, fi.listen, ""), "SELECT SUM(v) FROM fleetdb.t WHERE id IN (1, 3)"); got != "40" {
			t.Errorf("instance %d reads %s from the pushed sharded table, want 40", i, got)
		}
	}
	if n := s0.Scalar(t, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'fleetdb' AND TABLE_NAME LIKE 't\\_%'"); n != "2" {
		t.Errorf("the backend holds %s sub-tables of fleetdb.t, want 2", n)
	}

	// A broken file is refused by config push, with its line.
	broken := write("broken.yaml", strings.Replace(fleetConfig(s0.Addr, nil), "log: {level: info}", "log: {level: loud}", 1))
	out, errOut, code = pushFile(t, url, broken)
	if code != 1 || !strings.Contains(errOut, broken+":1: log.level") || !strings.Contains(errOut, "not pushed") {
		t.Fatalf("broken push: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	// Written behind config push's back, every instance rejects it and
	// keeps serving the revision in force.
	store := openFleetStore(t, url)
	r3, err := store.Put(context.Background(), []byte("users: [{name: x}]\nclusters: oops\n"), r2, fleet.PushMeta{})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "every instance rejects the broken revision", func() bool {
		for _, fi := range fleetOf {
			if v, _ := metricE(fi.admin, "shardgate_config_rejected_revision"); int64(v) != r3 {
				return false
			}
		}
		return true
	})
	for i, fi := range fleetOf {
		if got := fi.revision(); got != r2 {
			t.Errorf("instance %d: revision in force %d after a rejected one, want %d", i, got, r2)
		}
		if err := pingAs(fi.listen, "newbie", "n-pw"); err != nil {
			t.Errorf("instance %d stopped serving after a rejected revision: %v", i, err)
		}
		if !strings.Contains(fi.p.stderr.String(), "configuration revision rejected") {
			t.Errorf("instance %d did not log the rejection", i)
		}
		status := map[string]any{}
		for _, r := range apiRows(t, fi.admin, "/api/status") {
			status[fmt.Sprint(r["name"])] = r["value"]
		}
		if status["config_rejected_revision"] != float64(r3) || !strings.Contains(fmt.Sprint(status["config_rejected_error"]), "clusters") ||
			status["config_revision"] != float64(r2) {
			t.Errorf("instance %d's SHOW STATUS does not report the rejection: %v", i, status)
		}
	}

	// etcd killed under load: no statement fails; the instances converge
	// on the revision written once it is back.
	stopLoad, loadErrs, loadStmts := loadFleet(t, fleetOf)
	etcd.Kill()
	waitUntil(t, 30*time.Second, "every instance sees etcd down", func() bool {
		for _, fi := range fleetOf {
			if v, err := metricE(fi.admin, "shardgate_config_source_up"); err != nil || v != 0 {
				return false
			}
		}
		return true
	})
	if err := etcd.Restart(); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = pushFile(t, url, write("v4.yaml", fleetConfig(s0.Addr, map[string]string{"newbie": "n-pw", "second": "s-pw"}, s1.Addr)+fleetSchema))
	if code != 0 {
		t.Fatalf("push after etcd's return: exit %d\n%s%s", code, out, errOut)
	}
	r4 := pushed(t, out)
	waitApplied(t, fleetOf, r4, time.Now())
	stopLoad()
	if n := loadErrs.Load(); n != 0 || loadStmts.Load() == 0 {
		t.Fatalf("under load while etcd was killed: %d failed statements of %d", n, loadStmts.Load())
	}
	t.Logf("%d statements through the fleet while etcd was killed and restarted, none failed", loadStmts.Load())

	// An instance started while etcd is down serves its cached revision.
	etcd.Kill()
	fleetOf[0].p.cmd.Process.Kill()
	fleetOf[0].p.done <- <-fleetOf[0].p.done // the cleanup waits for it too
	restarted := &fleetInstance{admin: freeAddr(t), cache: fleetOf[0].cache}
	restarted.p, restarted.listen = startServe(t, "--config", url, "--admin-http", restarted.admin, "--config-cache", restarted.cache)
	if got := restarted.revision(); got != r4 {
		t.Fatalf("started from the cache with revision %d, want %d", got, r4)
	}
	if v, _ := metricE(restarted.admin, "shardgate_config_from_cache"); v != 1 {
		t.Errorf("shardgate_config_from_cache = %v after a start while etcd was down", v)
	}
	if err := pingAs(restarted.listen, "second", "s-pw"); err != nil {
		t.Errorf("the instance started from its cache does not serve the cached users: %v", err)
	}
}

// waitApplied waits until every instance applied revision rev and returns
// how long after since each reported it.
func waitApplied(t *testing.T, fleetOf []*fleetInstance, rev int64, since time.Time) []time.Duration {
	t.Helper()
	times := make([]time.Duration, len(fleetOf))
	waitUntil(t, 30*time.Second, fmt.Sprintf("every instance on revision %d", rev), func() bool {
		all := true
		for i, fi := range fleetOf {
			if times[i] != 0 {
				continue
			}
			if fi.revision() == rev {
				times[i] = time.Since(since)
			} else {
				all = false
			}
		}
		return all
	})
	return times
}

func openFleetStore(t *testing.T, url string) *fleet.Store {
	t.Helper()
	o, err := fleet.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	s, err := fleet.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func pingAs(listen, user, password string) error {
	db, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/", user, password, listen))
	if err != nil {
		return err
	}
	defer db.Close()
	var one int
	return db.QueryRow("SELECT 1").Scan(&one)
}

// httpBody GETs url's body.
func httpBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// apiRows reads one of the admin HTTP port's JSON views.
func apiRows(t *testing.T, admin, path string) []map[string]any {
	t.Helper()
	resp, err := http.Get("http://" + admin + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rows []map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&rows); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}

// backendListed says whether /api/backends lists address in cluster.
func backendListed(t *testing.T, admin, cluster, address string) bool {
	t.Helper()
	for _, r := range apiRows(t, admin, "/api/backends") {
		if r["cluster"] == cluster && r["address"] == address {
			return true
		}
	}
	return false
}

// loadFleet runs statements through every instance (4 connections each)
// until stop is called, counting statements and failures.
func loadFleet(t *testing.T, fleetOf []*fleetInstance) (stop func(), errs, stmts *atomic.Int64) {
	errs, stmts = new(atomic.Int64), new(atomic.Int64)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, fi := range fleetOf {
		db := open(t, fi.listen, "")
		db.SetMaxOpenConns(4)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-done:
						return
					default:
					}
					var one int
					if err := db.QueryRow("SELECT 1").Scan(&one); err != nil {
						errs.Add(1)
						t.Logf("statement failed under load: %v", err)
					}
					stmts.Add(1)
				}
			}()
		}
	}
	var once sync.Once
	stop = func() { once.Do(func() { close(done); wg.Wait() }) }
	t.Cleanup(stop)
	return stop, errs, stmts
}
