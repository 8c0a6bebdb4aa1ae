package main_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shardgate/shardgate/internal/testenv"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "shardgate-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "shardgate")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build shardgate: %v\n%s", err, out)
		os.Exit(1)
	}
	code := testenv.Main(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

type proc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan error
}

// syncBuffer is the binary's stderr, read by the test while exec's copier
// writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startServe runs `shardgate serve` and waits until it accepts clients.
func startServe(t testing.TB, args ...string) (*proc, string) {
	t.Helper()
	return startServeEnv(t, nil, args...)
}

// startServeEnv is startServe with env added to the process's
// environment.
func startServeEnv(t testing.TB, env []string, args ...string) (*proc, string) {
	t.Helper()
	p, listen, err := startServeE(t, env, args...)
	if err != nil {
		t.Fatal(err)
	}
	return p, listen
}

// startServeE is startServeEnv returning its error instead of failing
// the test, for a goroutine other than the test's.
func startServeE(t testing.TB, env []string, args ...string) (*proc, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	listen := ln.Addr().String()
	ln.Close()
	return startServeOn(t, env, listen, args...)
}

// startServeOn is startServeE on a given address.
func startServeOn(t testing.TB, env []string, listen string, args ...string) (*proc, string, error) {
	cmd := exec.Command(binary, append([]string{"serve", "--listen", listen}, args...)...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	p := &proc{cmd: cmd, stderr: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("shardgate log:\n%s", p.stderr.String())
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.Dial("tcp", listen)
		if err == nil {
			c.Close()
			return p, listen, nil
		}
		if time.Now().After(deadline) {
			return nil, "", fmt.Errorf("shardgate did not start listening: %v\n%s", err, p.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitUntil polls cond until it holds, failing the test after within.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func open(t *testing.T, listen, db string) *sql.DB {
	t.Helper()
	d, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/%s", testenv.User, testenv.Password, listen, db))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestQuickStartServeAndSIGTERM(t *testing.T) {
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS qs")
	admin := freeAddr(t)
	p, listen := startServe(t, "--backend", fmt.Sprintf("%s:%s@%s/qs", testenv.User, testenv.Password, srv.Addr), "--admin-http", admin)

	db := open(t, listen, "")
	if got := scalar(t, db, "SELECT DATABASE()"); got != "qs" {
		t.Fatalf("quick-start default database: %q", got)
	}
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(body, []byte("shardgate_commands_total")) || !bytes.Contains(body, []byte("shardgate_backend_pool_connections_open")) {
		t.Fatalf("/metrics lacks shardgate metrics:\n%.500s", body)
	}
	if resp, err := http.Get("http://" + admin + "/debug/pprof/"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/debug/pprof/: %v %v", err, resp)
	}

	ctx := context.Background()
	busy, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	idle, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := idle.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	result := make(chan error, 1)
	go func() {
		var v int
		result <- busy.QueryRowContext(ctx, "SELECT SLEEP(2)").Scan(&v)
	}()
	// SIGTERM once the statement runs on the server: a fixed pause could
	// end before the proxy had read it, on a busy machine, and a statement
	// that comes after SIGTERM is refused.
	waitUntil(t, 20*time.Second, "SELECT SLEEP(2) running on the server", func() bool {
		return srv.Scalar(t, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND = 'Query' AND INFO = 'SELECT SLEEP(2)'") != "0"
	})
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The running statement finishes.
	if err := <-result; err != nil {
		t.Fatalf("statement running at SIGTERM: %v", err)
	}
	// The idle client was closed with an error; new clients are refused.
	if _, err := idle.ExecContext(ctx, "DO 1"); err == nil {
		t.Fatal("idle client still served after SIGTERM")
	}
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, p.stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("shardgate did not exit after SIGTERM")
	}
	if c, err := net.DialTimeout("tcp", listen, time.Second); err == nil {
		c.Close()
		t.Fatal("still accepting connections after exit")
	}
	if !strings.Contains(p.stderr.String(), "stopped") {
		t.Fatalf("log lacks the stop line:\n%s", p.stderr.String())
	}
}

// TestStreamingLargeResultMemory streams a 1 GB result through the proxy
// process: its peak RSS may grow by less than 64 MB.
func TestStreamingLargeResultMemory(t *testing.T) {
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS stream") // the sequence engine needs a current database
	p, listen := startServe(t, "--backend", fmt.Sprintf("%s:%s@%s/stream", testenv.User, testenv.Password, srv.Addr))
	db := open(t, listen, "")
	if got := scalar(t, db, "SELECT COUNT(*) FROM seq_1_to_1000"); got != "1000" {
		t.Fatalf("sequence engine: %q", got)
	}
	pid := p.cmd.Process.Pid
	before := procStatusKB(t, pid, "VmRSS")
	const rowBytes, rows = 1024, 1 << 20 // 1 GiB of row data
	start := time.Now()
	r, err := db.Query(fmt.Sprintf("SELECT REPEAT('x', %d) FROM seq_1_to_%d", rowBytes, rows))
	if err != nil {
		t.Fatal(err)
	}
	var n, total int
	var b sql.RawBytes
	for r.Next() {
		if err := r.Scan(&b); err != nil {
			t.Fatal(err)
		}
		n++
		total += len(b)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	elapsed := time.Since(start)
	if n != rows || total != rows*rowBytes {
		t.Fatalf("got %d rows, %d bytes", n, total)
	}
	peak := procStatusKB(t, pid, "VmHWM")
	growth := peak - before
	t.Logf("1 GiB streamed in %v (%.0f MB/s); proxy RSS before %d KB, peak %d KB, growth %d KB",
		elapsed, float64(total)/elapsed.Seconds()/1e6, before, peak, growth)
	if growth > 64*1024 {
		t.Fatalf("proxy peak RSS grew by %d KB streaming 1 GiB (limit 64 MB)", growth)
	}
}

func procStatusKB(t testing.TB, pid int, field string) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			v, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

func scalar(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	var s sql.NullString
	if err := db.QueryRow(q).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s.String
}

func TestCLI(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("listeners:\n  - adress: 127.0.0.1:6033\nusers: []\n"), 0o644)
	out, err := exec.Command(binary, "check-config", bad).CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "bad.yaml:2: listeners[0].adress: unknown key") {
		t.Fatalf("check-config bad file: exit %d\n%s", code, out)
	}
	out, err = exec.Command(binary, "check-config", "../../examples/shardgate.yaml").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK") {
		t.Fatalf("check-config example: %v\n%s", err, out)
	}
	cmd := exec.Command(binary, "hash-password")
	cmd.Stdin = strings.NewReader("app-secret\n")
	out, err = cmd.Output()
	want := "$sg1$6c7a370c07660bc788681b3238d93e08bd74303c$07a99d33e023ea491bc3f7b999efcfb76c32ff9abe1cf29ff3c5ee8b85ea015d\n"
	if err != nil || string(out) != want {
		t.Fatalf("hash-password: %v %q", err, out)
	}
	out, err = exec.Command(binary, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "shardgate ") {
		t.Fatalf("version: %v %q", err, out)
	}
	out, err = exec.Command(binary, "serve", "--backend", "nopassword@127.0.0.1:3306").CombinedOutput()
	if exitCode(err) != 1 || !strings.Contains(string(out), "--backend") {
		t.Fatalf("serve with a bad --backend: %v\n%s", err, out)
	}
	out, err = exec.Command(binary, "frobnicate").CombinedOutput()
	if exitCode(err) != 2 {
		t.Fatalf("unknown command: %v\n%s", err, out)
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// SIGHUP re-reads the configuration file: a server marked offline is
// drained, a file with errors changes nothing, online brings it back.
func TestSIGHUPReload(t *testing.T) {
	srv := testenv.Shared(t)
	file := filepath.Join(t.TempDir(), "shardgate.yaml")
	write := func(state string) {
		t.Helper()
		cfg := fmt.Sprintf("users:\n  - name: %s\n    password: %s\nclusters:\n  - name: main\n    user: %s\n    password: %s\n    primary:\n      address: %s\n      state: %s\n",
			testenv.User, testenv.Password, testenv.User, testenv.Password, srv.Addr, state)
		if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("online")
	p, listen := startServe(t, "--config", file)
	db := open(t, listen, "")
	db.SetMaxIdleConns(0)
	if got := scalar(t, db, "SELECT 1"); got != "1" {
		t.Fatalf("SELECT 1 = %s", got)
	}
	hup := func() {
		t.Helper()
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	query := func() error {
		var s string
		return db.QueryRow("SELECT 1").Scan(&s)
	}
	waitErr := func(what string, ok func(error) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := query()
			if ok(err) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: last error %v", what, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	write("offline")
	hup()
	waitErr("drained by SIGHUP", func(err error) bool {
		var me *mysql.MySQLError
		return errors.As(err, &me) && me.Number == 9001
	})
	if err := os.WriteFile(file, []byte("clusters: [oops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hup()
	time.Sleep(300 * time.Millisecond)
	if err := query(); err == nil {
		t.Fatal("a broken file on SIGHUP changed the configuration")
	}
	write("online")
	hup()
	waitErr("back online by SIGHUP", func(err error) bool { return err == nil })
}

// SIGHUP applies users and the log level, logs one line per change (a
// restart-only key by name, as needing a restart) and a summary.
func TestSIGHUPReloadAppliesAndLogs(t *testing.T) {
	srv := testenv.Shared(t)
	file := filepath.Join(t.TempDir(), "shardgate.yaml")
	write := func(level, extra string) {
		t.Helper()
		cfg := fmt.Sprintf("log:\n  level: %s\n%susers:\n  - name: %s\n    password: %s\n%sclusters:\n  - name: main\n    user: %s\n    password: %s\n    primary:\n      address: %s\n",
			level, extra, testenv.User, testenv.Password, map[bool]string{true: "  - name: newbie\n    password: n-pw\n"}[level == "debug"],
			testenv.User, testenv.Password, srv.Addr)
		if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("info", "")
	p, listen := startServe(t, "--config", file)
	const debugLine = `msg="SIGHUP: reading the configuration"`
	reloads := 0
	hup := func() {
		t.Helper()
		reloads++
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for strings.Count(p.stderr.String(), `msg="configuration reloaded"`) < reloads {
			if time.Now().After(deadline) {
				t.Fatalf("reload %d not logged", reloads)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	login := func(user, pass string) error {
		db, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/", user, pass, listen))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		return db.Ping()
	}
	if err := login("newbie", "n-pw"); err == nil {
		t.Fatal("newbie logs in before the reload")
	}

	write("debug", "")
	hup()
	log := p.stderr.String()
	for _, want := range []string{
		`msg="configuration change applied" key=log.level old=info new=debug`,
		`msg="configuration change applied" key=users[newbie] old=(none) new=(added)`,
		`msg="configuration reloaded"`, "applied=2 need_restart=0",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if err := login("newbie", "n-pw"); err != nil {
		t.Errorf("user added by SIGHUP: %v", err)
	}
	if n := strings.Count(log, debugLine); n != 0 {
		t.Errorf("debug line logged at level info: %d", n)
	}
	hup()
	if n := strings.Count(p.stderr.String(), debugLine); n != 1 {
		t.Errorf("after log.level debug: %d debug lines, want 1", n)
	}

	admin := freeAddr(t)
	write("info", "admin:\n  http: "+admin+"\n")
	hup()
	want := fmt.Sprintf(`msg="configuration change needs a restart; the old value stays in effect" key=admin.http old="" new=%s`, admin)
	if !strings.Contains(p.stderr.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, p.stderr.String())
	}
	if err := login("newbie", "n-pw"); err == nil {
		t.Error("user removed by SIGHUP still logs in")
	}
	hup()
	if n := strings.Count(p.stderr.String(), debugLine); n != 2 {
		t.Errorf("after log.level info: %d debug lines, want still 2", n)
	}
}
