package main_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/mysql/auth"
	"github.com/shardgate/shardgate/internal/testenv"
)

// run runs the built binary and returns its stdout, stderr and exit code.
func run(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := exitCode(err)
	if code < 0 {
		t.Fatalf("shardgate %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

// --help and -h print a command's usage and flags on stdout and succeed; a
// bad flag prints the error and the usage on stderr and exits 2.
func TestSubcommandHelp(t *testing.T) {
	for _, cmd := range []string{"serve", "check-config", "import-kingshard", "hash-password", "version", "config", "upgrade"} {
		for _, flag := range []string{"--help", "-h"} {
			stdout, stderr, code := run(t, "", cmd, flag)
			if code != 0 || !strings.HasPrefix(stdout, "usage: shardgate "+cmd) || stderr != "" {
				t.Errorf("shardgate %s %s: exit %d\nstdout:\n%s\nstderr:\n%s", cmd, flag, code, stdout, stderr)
			}
		}
	}
	stdout, _, _ := run(t, "", "serve", "--help")
	for _, f := range []string{"-config", "-listen", "-backend", "-admin-http"} {
		if !strings.Contains(stdout, f) {
			t.Errorf("serve --help lacks %s:\n%s", f, stdout)
		}
	}
	stdout, stderr, code := run(t, "", "serve", "--no-such-flag")
	if code != 2 || stdout != "" || !strings.Contains(stderr, "-no-such-flag") || !strings.Contains(stderr, "usage: shardgate serve") {
		t.Errorf("serve --no-such-flag: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// An empty password is refused whichever way it comes.
func TestHashPasswordRefusesEmpty(t *testing.T) {
	for _, c := range []struct {
		name, stdin string
		args        []string
	}{
		{"argument", "", []string{"hash-password", ""}},
		{"empty stdin", "", []string{"hash-password"}},
		{"empty line", "\n", []string{"hash-password"}},
	} {
		stdout, stderr, code := run(t, c.stdin, c.args...)
		if code != 1 || stdout != "" || !strings.Contains(stderr, "empty") {
			t.Errorf("%s: exit %d\nstdout: %q\nstderr: %q", c.name, code, stdout, stderr)
		}
	}
	stdout, _, code := run(t, "", "hash-password", "--", "-starts-with-dash")
	if code != 0 || stdout != auth.HashPassword("-starts-with-dash")+"\n" {
		t.Errorf("hash-password -- -starts-with-dash: exit %d %q", code, stdout)
	}
}

// ptyScript runs the binary's hash-password on a pseudo-terminal, answers
// each prompt once the terminal's echo is off (failing if it stays on), and
// prints everything the terminal showed, then "EXIT <code>".
const ptyScript = `
import os, pty, select, sys, termios, time
binary, answers = sys.argv[1], sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execv(binary, [binary, "hash-password"])
out = b""
def read_until(marker):
    global out
    deadline = time.time() + 10
    while marker not in out:
        r, _, _ = select.select([fd], [], [], max(0, deadline - time.time()))
        if not r:
            sys.exit("timeout waiting for %r; terminal showed %r" % (marker, out))
        out += os.read(fd, 4096)
def wait_echo_off():
    deadline = time.time() + 10
    while termios.tcgetattr(fd)[3] & termios.ECHO:
        if time.time() > deadline:
            sys.exit("echo still on at the prompt; terminal showed %r" % out)
        time.sleep(0.01)
for marker, answer in zip([b"Password: ", b"Confirm password: "], answers):
    read_until(marker)
    wait_echo_off()
    os.write(fd, answer.encode() + b"\n")
while True:
    try:
        chunk = os.read(fd, 4096)
    except OSError:  # EIO: the program exited
        break
    if not chunk:
        break
    out += chunk
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
print("EXIT %d" % os.waitstatus_to_exitcode(status))
`

// On a terminal hash-password prompts twice without echo.
func TestHashPasswordTerminal(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed to drive a pseudo-terminal: %v", err)
	}
	term := func(answers ...string) string {
		t.Helper()
		out, err := exec.Command(python, append([]string{"-c", ptyScript, binary}, answers...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("pty driver: %v\n%s", err, out)
		}
		return string(out)
	}
	const pw = "s3cret-terminal-pw"
	out := term(pw, pw)
	if !strings.Contains(out, "Password: ") || !strings.Contains(out, "Confirm password: ") ||
		!strings.Contains(out, auth.HashPassword(pw)) || !strings.HasSuffix(out, "EXIT 0\n") {
		t.Errorf("matching passwords:\n%s", out)
	}
	if strings.Contains(out, pw) {
		t.Errorf("the password was echoed:\n%s", out)
	}
	if out := term(pw, pw+"x"); !strings.Contains(out, "do not match") || !strings.HasSuffix(out, "EXIT 1\n") || strings.Contains(out, "$sg1$") {
		t.Errorf("different passwords:\n%s", out)
	}
	if out := term(""); !strings.Contains(out, "empty") || !strings.HasSuffix(out, "EXIT 1\n") || strings.Contains(out, "Confirm") {
		t.Errorf("empty password:\n%s", out)
	}
}

// Every configuration in examples/ passes check-config.
func TestExamplesPassCheckConfig(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) < 2 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		stdout, stderr, code := run(t, "", "check-config", f)
		if code != 0 || !strings.Contains(stdout, "OK") {
			t.Errorf("check-config %s: exit %d\n%s%s", f, code, stdout, stderr)
		}
	}
}

// A build from a git checkout reports the commit, its time, whether the
// tree was modified and the Go version; -ldflags -X main.version sets the
// version. The source is copied into a fresh repository because Go does not
// stamp builds made in a linked git worktree (golang/go#58218).
func TestVersionFromBuildInfo(t *testing.T) {
	repo := t.TempDir()
	copySource(t, "../..", repo)
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "version test")
	rev := git("rev-parse", "HEAD")[:7]
	version := func(buildFlags ...string) string {
		t.Helper()
		bin := filepath.Join(t.TempDir(), "shardgate")
		args := append([]string{"build", "-buildvcs=true", "-trimpath", "-o", bin}, buildFlags...)
		cmd := exec.Command("go", append(args, "./cmd/shardgate")...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		out, err := exec.Command(bin, "version").CombinedOutput()
		if err != nil {
			t.Fatalf("version: %v\n%s", err, out)
		}
		return string(out)
	}
	const when = `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`
	check := func(got, want string) {
		t.Helper()
		if !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("version output %q does not match %q", got, want)
		}
	}
	check(version(), `^shardgate v0\.0\.0-dev \(rev `+rev+`, `+when+`, go1\.[0-9.]+\S*\)\n$`)
	if err := os.WriteFile(filepath.Join(repo, "uncommitted.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	check(version(), `^shardgate v0\.0\.0-dev \(rev `+rev+`\+dirty, `+when+`, go1\.`)
	check(version("-ldflags=-X main.version=v1.2.3"), `^shardgate v1\.2\.3 \(rev `+rev+`\+dirty, `+when+`, go1\.`)
}

// copySource copies the files go needs to build the binary (the module
// files, cmd/ and internal/, as git sees them, including changes not yet
// committed) from the checkout at src to dst.
func copySource(t *testing.T, src, dst string) {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "go.mod", "go.sum", "cmd", "internal")
	cmd.Dir = src
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		b, err := os.ReadFile(filepath.Join(src, name))
		if os.IsNotExist(err) {
			continue // deleted, not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// serve logs the startup summary: version, listener, and the backend
// server with its state.
func TestServeLogsStartupSummary(t *testing.T) {
	srv := testenv.Shared(t)
	p, listen := startServe(t, "--backend", fmt.Sprintf("%s:%s@%s", testenv.User, testenv.Password, srv.Addr))
	// The summary follows the first health check: wait for its last line
	// (a fixed pause could end before it on a busy machine), then stop the
	// process and read the whole log.
	waitUntil(t, 30*time.Second, "the startup summary's backend line", func() bool {
		return strings.Contains(p.stderr.String(), `msg="backend server"`)
	})
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := <-p.done
	p.done <- err
	log := p.stderr.String()
	for _, want := range []string{
		`msg="shardgate started" version="v0.0.0-dev`,
		"msg=listener addr=" + listen + " tls=optional",
		`msg="backend server" cluster=default role=primary addr=` + srv.Addr + " state=up",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}
