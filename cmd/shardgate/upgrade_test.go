package main_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
)

// lineClient is an interactive client process: a statement written to its
// stdin, one line of its stdout read back.
type lineClient struct {
	name   string
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    chan string
	stderr *syncBuffer
}

func startLineClient(t *testing.T, name string, bin string, args ...string) *lineClient {
	t.Helper()
	c := &lineClient{name: name, cmd: exec.Command(bin, args...), out: make(chan string, 16), stderr: &syncBuffer{}}
	c.cmd.Stderr = c.stderr
	var err error
	if c.in, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.out <- sc.Text()
		}
		close(c.out)
	}()
	t.Cleanup(func() {
		c.in.Close()
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
	})
	return c
}

// ask sends one statement and returns the line it printed.
func (c *lineClient) ask(t *testing.T, stmt string) string {
	t.Helper()
	if _, err := io.WriteString(c.in, stmt+"\n"); err != nil {
		t.Fatalf("%s: write %q: %v\n%s", c.name, stmt, err, c.stderr.String())
	}
	select {
	case line, ok := <-c.out:
		if !ok {
			t.Fatalf("%s ended after %q:\n%s", c.name, stmt, c.stderr.String())
		}
		return line
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no answer to %q:\n%s", c.name, stmt, c.stderr.String())
	}
	return ""
}

// tell sends statements that print nothing.
func (c *lineClient) tell(t *testing.T, stmts string) {
	t.Helper()
	if _, err := io.WriteString(c.in, stmts+"\n"); err != nil {
		t.Fatalf("%s: write %q: %v", c.name, stmts, err)
	}
}

// pymysqlLines runs statements read from stdin, one per line, on one
// connection, printing each result's first row tab-separated (or "ok").
const pymysqlLines = `
import sys, pymysql
conn = pymysql.connect(host=sys.argv[1], port=int(sys.argv[2]), user=sys.argv[3], password=sys.argv[4], autocommit=True)
cur = conn.cursor()
for line in sys.stdin:
    cur.execute(line.strip())
    row = cur.fetchone()
    print("\t".join("NULL" if v is None else str(v) for v in row) if row else "ok", flush=True)
`

var sessionsTaken = regexp.MustCompile(`live upgrade: sessions taken over" moved=(\d+) refused=(\d+)`)

var newPID = regexp.MustCompile(`live upgrade: the new process serves; moving the sessions.* new_pid=(\d+)`)

// A live upgrade with three clients connected, each with a database
// chosen, a user variable and a prepared statement: the mariadb CLI (text
// PREPARE), PyMySQL (text PREPARE) and go-sql-driver on one connection
// (binary prepared statement). After `shardgate upgrade PID`, the old
// process has exited and their next statements run on the new one, on the
// same connections (same connection ids) with that state; no client saw
// an error, and a client running statements throughout was paused for
// the time reported.
func TestLiveUpgradeKeepsSessions(t *testing.T) {
	srv := testenv.Shared(t)
	const db = "liveup"
	srv.Exec(t, "DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db, "CREATE TABLE "+db+".t (id INT PRIMARY KEY)", "INSERT INTO "+db+".t VALUES (7)")
	u := startUpgradable(t, "listeners:\n  - {address: \"127.0.0.1:0\", tls: {mode: \"off\"}}\n")
	listen, admin, old, oldDone, readLog := u.listen, u.admin, u.cmd, u.done, u.log
	host, port, _ := net.SplitHostPort(listen)

	mariadbCLI, err := exec.LookPath("mariadb")
	if err != nil {
		t.Fatalf("the mariadb client is not installed: run scripts/install-deps.sh: %v", err)
	}
	cli := startLineClient(t, "mariadb CLI", mariadbCLI, "--no-defaults", "-h", host, "-P", port, "-u", testenv.User, "-p"+testenv.Password,
		"--batch", "--skip-column-names", "--unbuffered", "--skip-reconnect", "--ssl=0")
	py := startLineClient(t, "PyMySQL", "/usr/bin/python3", "-c", pymysqlLines, host, port, testenv.User, testenv.Password)

	goDB := open(t, listen, "")
	ctx := context.Background()
	conn, err := goDB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	// The state each client sets before the upgrade.
	cli.tell(t, "USE "+db+"; SET @x = 42; PREPARE s FROM 'SELECT id + ? FROM t';")
	cliID := cli.ask(t, "SELECT CONNECTION_ID();")
	py.ask(t, "USE "+db)
	py.ask(t, "SET @y = 'py'")
	py.ask(t, "PREPARE p FROM 'SELECT CONCAT(@y, ?)'")
	pyID := py.ask(t, "SELECT CONNECTION_ID()")
	if _, err := conn.ExecContext(ctx, "USE "+db); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "SET @z = 5"); err != nil {
		t.Fatal(err)
	}
	stmt, err := conn.PrepareContext(ctx, "SELECT id * ? + @z FROM t")
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	var goID string
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&goID); err != nil {
		t.Fatal(err)
	}

	// A client running statements throughout, for the pause.
	pauses := runTimed(t, listen)

	before := time.Now()
	out, errOut, code := run(t, "", "upgrade", "--timeout", "2m", strconv.Itoa(old.Process.Pid))
	if code != 0 {
		t.Fatalf("shardgate upgrade: exit %d\n%s%s", code, out, errOut)
	}
	upgraded := time.Now()
	if err := <-oldDone; err != nil {
		t.Fatalf("the old process exited with %v", err)
	}
	oldDone <- nil
	m := newPID.FindStringSubmatch(readLog())
	if m == nil {
		t.Fatal("the log does not name the new process")
	}
	if pid, _ := strconv.Atoi(m[1]); syscall.Kill(pid, 0) != nil {
		t.Fatalf("the new process %d does not run", pid)
	}

	var takenOver []string
	waitUntil(t, 30*time.Second, "the new process's account of the hand-over", func() bool {
		takenOver = sessionsTaken.FindStringSubmatch(readLog())
		return takenOver != nil
	})
	if n, _ := strconv.Atoi(takenOver[1]); n < 4 || takenOver[2] != "0" {
		t.Errorf("the new process took %s sessions and refused %s; want the 4 clients' and none refused", takenOver[1], takenOver[2])
	}

	// The same connections, with their state, on the new process.
	if got, want := cli.ask(t, "SELECT DATABASE(), @x, CONNECTION_ID();"), db+"\t42\t"+cliID; got != want {
		t.Errorf("mariadb CLI after the upgrade: %q, want %q", got, want)
	}
	cli.tell(t, "SET @a = 3;")
	if got := cli.ask(t, "EXECUTE s USING @a;"); got != "10" {
		t.Errorf("mariadb CLI's prepared statement after the upgrade: %q, want 10", got)
	}
	if got, want := py.ask(t, "SELECT DATABASE(), @y, CONNECTION_ID()"), db+"\tpy\t"+pyID; got != want {
		t.Errorf("PyMySQL after the upgrade: %q, want %q", got, want)
	}
	py.ask(t, "SET @b = '!'")
	if got := py.ask(t, "EXECUTE p USING @b"); got != "py!" {
		t.Errorf("PyMySQL's prepared statement after the upgrade: %q, want py!", got)
	}
	var got int
	if err := stmt.QueryRowContext(ctx, 2).Scan(&got); err != nil || got != 19 {
		t.Errorf("go-sql-driver's prepared statement after the upgrade: %d, %v; want 19", got, err)
	}
	var id string
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil || id != goID {
		t.Errorf("go-sql-driver's connection id after the upgrade: %s (%v), want %s", id, err, goID)
	}
	sessions := apiRows(t, admin, "/api/sessions")
	var ids []string
	for _, s := range sessions {
		ids = append(ids, fmt.Sprint(s["id"]))
	}
	for _, want := range []string{cliID, pyID, goID} {
		if !slices.Contains(ids, want) {
			t.Errorf("the new process's sessions %v lack connection %s", ids, want)
		}
	}
	p50b, p99b, p99d, maxd, errs := pauses.stop(before, upgraded)
	t.Logf("a client running SELECT 1 throughout: p50 %v, p99 %v before; p99 %v, max %v during the upgrade (%v)",
		p50b, p99b, p99d, maxd, upgraded.Sub(before).Round(time.Millisecond))
	if errs != 0 {
		t.Errorf("%d statements of the running client failed during the upgrade", errs)
	}
}

// upgradable is a `shardgate serve` process to upgrade, logging to a file
// (which the new process inherits and writes on after the old one is
// gone).
type upgradable struct {
	listen, admin string
	cmd           *exec.Cmd
	done          chan error // the old process's exit, put back once read
	logFile       string
}

func startUpgradable(t *testing.T, extraYAML string, env ...string) *upgradable {
	t.Helper()
	srv := testenv.Shared(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "shardgate.yaml")
	cfg := fmt.Sprintf("users:\n  - {name: %s, password: %q}\nclusters:\n  - {name: main, user: %s, password: %q, primary: {address: %q}}\n%s",
		testenv.User, testenv.Password, testenv.User, testenv.Password, srv.Addr, extraYAML)
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	u := &upgradable{listen: freeAddr(t), admin: freeAddr(t), logFile: filepath.Join(dir, "shardgate.log"), done: make(chan error, 1)}
	logw, err := os.Create(u.logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer logw.Close()
	u.cmd = exec.Command(binary, "serve", "--config", file, "--listen", u.listen, "--admin-http", u.admin)
	u.cmd.Stdout, u.cmd.Stderr = logw, logw
	u.cmd.Env = append(os.Environ(), env...)
	if err := u.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { u.done <- u.cmd.Wait() }()
	t.Cleanup(func() {
		_ = u.cmd.Process.Kill()
		if m := newPID.FindStringSubmatch(u.log()); m != nil {
			pid, _ := strconv.Atoi(m[1])
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if t.Failed() {
			t.Logf("shardgate log:\n%s", u.log())
		}
	})
	waitUntil(t, 30*time.Second, "shardgate listening", func() bool { return readyz(u.admin) == 200 })
	return u
}

func (u *upgradable) log() string { b, _ := os.ReadFile(u.logFile); return string(b) }

// timedClient runs SELECT 1 on one connection, timing each.
type timedClient struct {
	stop func(before, after time.Time) (p50Before, p99Before, p99During, maxDuring time.Duration, errs int)
}

func runTimed(t *testing.T, listen string) *timedClient {
	db, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/", testenv.User, testenv.Password, listen))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	type sample struct {
		at  time.Time
		dur time.Duration
	}
	var mu sync.Mutex
	var samples []sample
	errs := 0
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			default:
			}
			start := time.Now()
			var one int
			err := db.QueryRow("SELECT 1").Scan(&one)
			mu.Lock()
			if err != nil {
				errs++
				t.Logf("running client: %v", err)
			}
			samples = append(samples, sample{start, time.Since(start)})
			mu.Unlock()
			time.Sleep(time.Millisecond)
		}
	}()
	time.Sleep(300 * time.Millisecond) // a baseline
	tc := &timedClient{}
	var once sync.Once
	tc.stop = func(before, after time.Time) (time.Duration, time.Duration, time.Duration, time.Duration, int) {
		once.Do(func() { close(done); <-finished; db.Close() })
		mu.Lock()
		defer mu.Unlock()
		var pre, during []time.Duration
		for _, s := range samples {
			switch {
			case s.at.Before(before):
				pre = append(pre, s.dur)
			case s.at.Before(after):
				during = append(during, s.dur)
			}
		}
		q := func(d []time.Duration, f float64) time.Duration {
			if len(d) == 0 {
				return 0
			}
			slices.Sort(d)
			return d[min(len(d)-1, int(f*float64(len(d))))]
		}
		return q(pre, 0.5), q(pre, 0.99), q(during, 0.99), q(during, 1), errs
	}
	t.Cleanup(func() { tc.stop(time.Now(), time.Now()) })
	return tc
}

// A new binary that dies during the hand-over: the old process serves on,
// on its listeners (new clients and the admin port), and says so; the
// upgrade command reports that it did not exit.
func TestLiveUpgradeNewProcessDies(t *testing.T) {
	u := startUpgradable(t, "", "SHARDGATE_UPGRADE_FAILPOINT=die-on-session")
	listen, admin, old, oldDone, readLog := u.listen, u.admin, u.cmd, u.done, u.log
	// A session to move, which the new process dies on.
	db := open(t, listen, "")
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.PingContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := run(t, "", "upgrade", "--timeout", "5s", strconv.Itoa(old.Process.Pid))
	if code != 1 || !strings.Contains(errOut, "still runs") {
		t.Fatalf("upgrade with a new process that dies: exit %d, %q", code, errOut)
	}
	waitUntil(t, 30*time.Second, "the failed upgrade in the log", func() bool {
		return strings.Contains(readLog(), "live upgrade failed: the new process ended during the hand-over")
	})
	select {
	case err := <-oldDone:
		t.Fatalf("the old process exited (%v) after a failed upgrade", err)
	default:
	}
	if err := pingAs(listen, testenv.User, testenv.Password); err != nil {
		t.Fatalf("a new client after the failed upgrade: %v", err)
	}
	if code := readyz(admin); code != 200 {
		t.Fatalf("the admin port after the failed upgrade: /readyz %d", code)
	}
}
