package main_test

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// freePorts returns a base port whose n consecutive ports are free now,
// below the kernel's ephemeral range: the demo's ports are chosen once and
// used for minutes, while the suite's other packages open connections
// whose local ports the kernel picks from that range (one took the demo's
// admin port once: "bind: address already in use").
func freePorts(t *testing.T, n int) int {
	t.Helper()
	top := ephemeralLow() - n
	for range 50 {
		base := 10000 + rand.IntN(top-10000)
		free := true
		for i := range n {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
			if err != nil {
				free = false
				break
			}
			l.Close()
		}
		if free {
			return base
		}
	}
	t.Fatal("no free ports")
	return 0
}

// ephemeralLow is the first port of the kernel's ephemeral range
// (Linux's default when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if lo, err := strconv.Atoi(f[0]); err == nil && lo > 10100 {
				return lo
			}
		}
	}
	return 32768
}

// demoEnv is where a demo runs: its directory and first port (it takes
// the 7 from there).
type demoEnv struct {
	dir  string
	base int
}

// newDemoEnv is a demo environment of its own, in a temporary directory.
func newDemoEnv(t *testing.T) demoEnv {
	return demoEnv{dir: t.TempDir(), base: freePorts(t, 7)}
}

var (
	shardedDemoOnce sync.Once
	shardedDemo     demoEnv
)

// shardedDemoEnv is the environment the sharded demo's tests share, so that
// after the first run the data directories are there (mariadb-install-db
// is most of a first run's time). Its ports are chosen once: the replica
// follows its primary at the port it had.
func shardedDemoEnv(t *testing.T) demoEnv {
	shardedDemoOnce.Do(func() {
		shardedDemo = demoEnv{dir: filepath.Join(filepath.Dir(binary), "demo"), base: freePorts(t, 7)}
	})
	return shardedDemo
}

// command is scripts/demo.sh in env, in check mode (bring everything up,
// run the queries to try, stop) when check is set.
func (env demoEnv) command(shards string, check bool) *exec.Cmd {
	cmd := exec.Command("bash", "scripts/demo.sh")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(),
		"SHARDGATE_SKIP_DEPS=1",
		"SHARDGATE_DEMO_SHARDS="+shards,
		"SHARDGATE_DEMO_DIR="+env.dir,
		fmt.Sprintf("SHARDGATE_DEMO_DB_PORT=%d", env.base),
		fmt.Sprintf("SHARDGATE_DEMO_LISTEN=127.0.0.1:%d", env.base+4),
		fmt.Sprintf("SHARDGATE_DEMO_ADMIN=127.0.0.1:%d", env.base+5),
		fmt.Sprintf("SHARDGATE_DEMO_ADMIN_SQL=127.0.0.1:%d", env.base+6),
	)
	if check {
		cmd.Env = append(cmd.Env, "SHARDGATE_DEMO_CHECK=1")
	}
	return cmd
}

// runDemo runs scripts/demo.sh in check mode in env.
func runDemo(t *testing.T, env demoEnv, shards string) string {
	t.Helper()
	cmd := env.command(shards, true)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
		case <-time.After(3 * time.Minute):
			_ = cmd.Process.Signal(os.Interrupt)
		}
	}()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/demo.sh (SHARDGATE_DEMO_SHARDS=%s): %v\n%s", shards, err, out)
	}
	return string(out)
}

// TestDemoSharded brings the sharded demo up: shards with a replica, the
// sample schema loaded through shardgate, and the queries it suggests
// answering as it says.
func TestDemoSharded(t *testing.T) {
	out := runDemo(t, shardedDemoEnv(t), "2")
	for _, want := range []string{
		"shard s0: primary 127.0.0.1:",
		"replica 127.0.0.1:",
		"shop.customers  hash(id)",
		"| Margaret Hamilton | margaret@example.com |",           // one key
		"| Ada Lovelace |  2 |        2 | Wireless mouse      |", // a join with a reference table
		"| 15 | Karen Spärck Jones  |",                           // a scatter read
		"|  5 | Barbara Liskov |",                                // the shard hint
		"| 20 | Leslie Lamport   |\n| 19 | Shafi Goldwasser |\n| 18 | Monty Widenius   |", // a merge: ORDER BY … LIMIT
		"| US      |         9 |\n| GB      |         5 |\n| FI      |         2 |",       // a merge: GROUP BY, ORDER BY COUNT(*)
		"| digest           | user      | db   | text",                                    // the admin port's digests
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the sharded demo's output lacks %q:\n%s", want, out)
		}
	}
}

// TestDemoOneServer: SHARDGATE_DEMO_SHARDS=0 is the demo in front of one
// server, as before shards.
func TestDemoOneServer(t *testing.T) {
	out := runDemo(t, newDemoEnv(t), "0")
	if want := "| Ada Lovelace | Mechanical keyboard |        1 |"; !strings.Contains(out, want) {
		t.Errorf("the one-server demo's output lacks %q:\n%s", want, out)
	}
}

// TestDemoStopsWhatItStarted: however the demo is stopped, with its output
// piped into another program (demo.sh 2>&1 | tee), it stops shardgate and
// its MariaDB servers before it exits: Ctrl-C (SIGINT to the terminal's
// foreground process group, which ends tee first, so that every later
// write of the demo goes to a closed pipe), SIGTERM to the demo alone, and
// SIGHUP to the group (its terminal gone). A demo killed with SIGKILL
// cannot: the next one stops the shardgate it left and reuses its servers,
// stopping them on exit; while a demo runs, another with the same
// directory refuses to start. The runs reuse the sharded demo's directory
// of TestDemoSharded. Every wait is for a condition: the demo's "Press
// Ctrl-C" line, the processes' exits.
func TestDemoStopsWhatItStarted(t *testing.T) {
	env := shardedDemoEnv(t)
	for _, tc := range []struct {
		name string
		stop func(r *pipedDemo) error
	}{
		{"Ctrl-C through a pipe", func(r *pipedDemo) error { return syscall.Kill(-r.pgid(), syscall.SIGINT) }},
		{"SIGTERM", func(r *pipedDemo) error { return r.demo.Process.Signal(syscall.SIGTERM) }},
		{"SIGHUP of its terminal", func(r *pipedDemo) error { return syscall.Kill(-r.pgid(), syscall.SIGHUP) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startPipedDemo(t, env)
			if err := tc.stop(r); err != nil {
				t.Fatal(err)
			}
			r.wait(t)
			if left := env.processes(t); len(left) > 0 {
				t.Fatalf("left running after the demo exited:\n%s\n\nthe demo's output:\n%s", strings.Join(left, "\n"), r.output())
			}
		})
	}

	t.Run("SIGKILL, then the next demo", func(t *testing.T) {
		r := startPipedDemo(t, env)
		out, err := env.command("2", true).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "a demo is already running") {
			t.Fatalf("a second demo while one runs: %v, want it refused:\n%s", err, out)
		}
		if err := r.demo.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = r.demo.Wait()
		left := env.processes(t)
		if len(left) != 4 {
			t.Fatalf("after SIGKILL of the demo, want its 3 servers and shardgate left running, got:\n%s", strings.Join(left, "\n"))
		}
		out, err = env.command("2", true).CombinedOutput()
		if err != nil {
			t.Fatalf("the demo after one killed with SIGKILL: %v\n%s", err, out)
		}
		for _, want := range []string{
			"stopping the shardgate an earlier demo left running",
			"reusing the demo MariaDB s0 an earlier demo left running",
			"reusing the demo MariaDB s1 an earlier demo left running",
			"| Margaret Hamilton | margaret@example.com |",
		} {
			if !strings.Contains(string(out), want) {
				t.Errorf("the demo after one killed with SIGKILL: its output lacks %q:\n%s", want, out)
			}
		}
		r.wait(t) // tee, once the old shardgate no longer holds its pipe
		if left := env.processes(t); len(left) > 0 {
			t.Fatalf("left running after the next demo exited:\n%s\n\nits output:\n%s", strings.Join(left, "\n"), out)
		}
	})
}

// pipedDemo is `scripts/demo.sh 2>&1 | tee LOG` in a process group of its
// own, as a shell runs it in the foreground of a terminal.
type pipedDemo struct {
	demo, tee *exec.Cmd
	out       *syncBuffer // what tee passed on
	copied    chan struct{}
}

// startPipedDemo starts the sharded demo piped into tee and returns once
// the demo says it is ready.
func startPipedDemo(t *testing.T, env demoEnv) *pipedDemo {
	t.Helper()
	// A shell gives the programs of a foreground job SIGINT and SIGHUP
	// at their default: where this test runs they may be ignored (a
	// background job's), which the demo's bash could not undo. Handled by
	// this process while it starts them, they start at the default.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)

	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &pipedDemo{demo: env.command("2", false), tee: exec.Command("tee", filepath.Join(t.TempDir(), "demo.log")),
		out: &syncBuffer{}, copied: make(chan struct{})}
	r.demo.Stdout, r.demo.Stderr = pw, pw
	r.demo.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.demo.Start(); err != nil {
		t.Fatal(err)
	}
	r.tee.Stdin = pr
	teeOut, err := r.tee.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.tee.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: r.demo.Process.Pid}
	if err := r.tee.Start(); err != nil {
		_ = r.demo.Process.Kill()
		t.Fatal(err)
	}
	pr.Close()
	pw.Close()
	t.Cleanup(func() {
		// A failed test: stop what is still there, demo first.
		_ = syscall.Kill(-r.pgid(), syscall.SIGTERM)
		_ = r.demo.Wait()
		_ = r.tee.Wait()
	})

	ready := make(chan struct{})
	go func() {
		defer close(r.copied)
		sc := bufio.NewScanner(teeOut)
		said := false
		for sc.Scan() {
			_, _ = r.out.Write(append(sc.Bytes(), '\n'))
			if !said && strings.Contains(sc.Text(), "Press Ctrl-C to stop.") {
				said = true
				close(ready)
			}
		}
		_, _ = io.Copy(io.Discard, teeOut)
	}()
	select {
	case <-ready:
	case <-r.copied:
		_ = r.demo.Wait()
		t.Fatalf("the demo ended before it was ready:\n%s", r.output())
	case <-time.After(3 * time.Minute):
		t.Fatalf("the demo not ready after 3 minutes:\n%s", r.output())
	}
	return r
}

func (r *pipedDemo) pgid() int { return r.demo.Process.Pid }

// wait waits for the demo and tee to exit (the demo after its cleanup).
func (r *pipedDemo) wait(t *testing.T) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		_ = r.demo.Wait()
		<-r.copied // tee's output closed: tee and every writer to its pipe are gone
		_ = r.tee.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("the demo still running 3 minutes after it was told to stop:\n%s", r.output())
	}
}

func (r *pipedDemo) output() string { return r.out.String() }

// processes lists the processes whose command line names env's directory:
// the demo's MariaDB servers (--datadir) and its shardgate (--config).
func (env demoEnv) processes(t *testing.T) []string {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, f := range procs {
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), env.dir+"/") {
			continue // gone, or not the demo's
		}
		found = append(found, filepath.Base(filepath.Dir(f))+": "+strings.Join(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), " "))
	}
	return found
}
