package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// child is a long-running helper process (haproxy, shardgate). It runs in
// its own process group, so a Ctrl-C on the terminal reaches only the
// harness, which then stops it; Pdeathsig kills it should the harness die
// without cleaning up.
type child struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	waitErr error
}

// startChild starts argv with stdout and stderr appended to logPath.
func startChild(name, logPath string, argv []string) (*child, error) {
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: open log: %w", name, err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "### sgbench: %s\n", strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", name, argv[0], err)
	}
	c := &child{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		c.waitErr = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// Pid is the process id.
func (c *child) Pid() int { return c.cmd.Process.Pid }

// exited reports whether the process has ended, and how.
func (c *child) exited() (bool, string) {
	select {
	case <-c.done:
		if c.waitErr != nil {
			return true, c.waitErr.Error()
		}
		return true, "exit status 0"
	default:
		return false, ""
	}
}

// stop sends SIGTERM, waits up to grace and then SIGKILLs the process group.
// It is safe to call more than once.
func (c *child) stop(grace time.Duration) error {
	if done, _ := c.exited(); done {
		return nil
	}
	pid := c.Pid()
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop %s (pid %d): %w", c.name, pid, err)
	}
	select {
	case <-c.done:
		_ = syscall.Kill(-pid, syscall.SIGKILL) // anything left in its group
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-c.done
	return fmt.Errorf("stop %s (pid %d): still running %v after SIGTERM; killed it", c.name, pid, grace)
}

// logTail returns the last lines of the child's log, for error messages.
func (c *child) logTail(lines int) string {
	b, err := os.ReadFile(c.logPath)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", c.logPath, err)
	}
	return tailLines(b, lines)
}

func tailLines(b []byte, n int) string {
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

// userHZ is the unit of utime/stime in /proc/PID/stat (USER_HZ, which the
// kernel fixes at 100 for user space on every mainstream architecture).
const userHZ = 100

// cpuTime returns the user+system CPU time consumed so far by all threads of
// process pid, from /proc/PID/stat (resolution 10 ms).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("read CPU time of pid %d: %w", pid, err)
	}
	return parseProcStat(b)
}

// parseProcStat extracts utime+stime from the contents of /proc/PID/stat.
// The command name (field 2) may contain spaces and parentheses, so fields
// are counted from the last ')'.
func parseProcStat(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("parse /proc/PID/stat: no ')' after the command name")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("parse /proc/PID/stat: %d fields after the command name, want at least 13", len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("parse /proc/PID/stat utime/stime: %w", err)
	}
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

// ctxSwitches returns the context switches, voluntary and not, of the
// threads of process pid so far, summed over /proc/PID/task/*/status (a
// thread that ended takes its own with it).
func ctxSwitches(pid int) (int64, error) {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return 0, fmt.Errorf("context switches of pid %d: %w", pid, err)
	}
	var n int64
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/status")
		if err != nil {
			continue // ended since
		}
		n += parseCtxSwitches(b)
	}
	return n, nil
}

// parseCtxSwitches sums the voluntary_ctxt_switches and
// nonvoluntary_ctxt_switches lines of a /proc status file.
func parseCtxSwitches(b []byte) int64 {
	var n int64
	for _, line := range strings.Split(string(b), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok || (name != "voluntary_ctxt_switches" && name != "nonvoluntary_ctxt_switches") {
			continue
		}
		if k, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			n += k
		}
	}
	return n
}

func ctxSwitchesOrZero(pid int) (int64, error) {
	if pid == 0 {
		return 0, nil
	}
	return ctxSwitches(pid)
}

// switches are the context switches of a run's window (sampleSwitches).
type switches struct {
	proxy, server int64
	window        time.Duration
	err           error
}

// sampleSwitches counts the context switches of the proxy (pid 0: none)
// and of mariadbd over the middle of a run of length d, from 1 s after
// its start to 1 s before its end (a run under 3 s: its whole length):
// the threads mariadbd makes for connections and ends with them take
// their counts along, so a count over the whole run would miss those.
// The result comes once the window is over.
func sampleSwitches(ctx context.Context, proxyPid, serverPid int, d time.Duration) <-chan switches {
	ch := make(chan switches, 1)
	margin := time.Second
	if d < 3*time.Second {
		margin = 0
	}
	go func() {
		var sw switches
		defer func() { ch <- sw }()
		if !sleepCtx(ctx, margin) {
			return
		}
		p0, err1 := ctxSwitchesOrZero(proxyPid)
		s0, err2 := ctxSwitches(serverPid)
		start := time.Now()
		if !sleepCtx(ctx, d-2*margin) {
			return
		}
		p1, err3 := ctxSwitchesOrZero(proxyPid)
		s1, err4 := ctxSwitches(serverPid)
		sw = switches{proxy: p1 - p0, server: s1 - s0, window: time.Since(start), err: errors.Join(err1, err2, err3, err4)}
	}()
	return ch
}

// sleepCtx sleeps d unless ctx ends first (false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// rssBytes returns VmRSS of process pid from /proc/PID/status.
func rssBytes(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("read RSS of pid %d: %w", pid, err)
	}
	return parseVmRSS(b)
}

func parseVmRSS(b []byte) (int64, error) {
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("parse VmRSS line %q: want \"VmRSS: N kB\"", line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse VmRSS line %q: %w", line, err)
		}
		return kb * 1024, nil
	}
	return 0, errors.New("parse /proc/PID/status: no VmRSS line")
}
