package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/upgrade"
)

// upgradeFailpointEnv, for the tests of a failed upgrade: "die-on-session"
// makes the new process die when the first session comes.
const upgradeFailpointEnv = "SHARDGATE_UPGRADE_FAILPOINT"

// inherited is what a live upgrade handed this process at start; empty for
// an ordinary start.
type inherited struct {
	child     *upgrade.Child
	hello     upgrade.Hello
	listeners map[string]*os.File
}

// inheritUpgrade reads the old process's hello when this process is a live
// upgrade's new one.
func inheritUpgrade(log *slog.Logger) (*inherited, error) {
	child, err := upgrade.Inherited()
	if err != nil || child == nil {
		return &inherited{}, err
	}
	hello, listeners, err := child.Hello()
	if err != nil {
		return nil, err
	}
	log.Info("live upgrade: serving on the old process's listeners", "listeners", hello.Listeners)
	return &inherited{child: child, hello: hello, listeners: listeners}, nil
}

// serve tells the old process this one serves, and takes its sessions.
func (in *inherited) serve(p *proxy.Proxy, log *slog.Logger) {
	if in.child == nil {
		return
	}
	if err := in.child.Ready(); err != nil {
		log.Error("live upgrade: the old process is gone before it handed its sessions over", "err", err)
		return
	}
	go func() {
		moved, refused := 0, 0
		err := in.child.Sessions(func(state []byte, files []*os.File) error {
			if os.Getenv(upgradeFailpointEnv) == "die-on-session" {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL) // a new binary that crashes
				select {}
			}
			if err := p.Adopt(state, files); err != nil {
				refused++
				log.Warn("live upgrade: session not taken; the old process drains it", "err", err)
				return err
			}
			moved++
			return nil
		})
		log.Info("live upgrade: sessions taken over", "moved", moved, "refused", refused, "err", err)
	}()
}

// liveUpgrade starts the binary at this process's path (a new version put
// there) with the same arguments, hands it the listening sockets and, once
// it serves, every client session that can move, within deadline. It
// reports false when the new process failed to start: this one serves on.
func liveUpgrade(p *proxy.Proxy, log *slog.Logger, stderr io.Writer, deadline time.Duration) bool {
	exe, err := os.Executable()
	if err != nil {
		log.Error("live upgrade not started: cannot tell this program's path", "err", err)
		return false
	}
	log.Info("live upgrade: starting the new process", "exe", exe)
	parent, err := upgrade.Start(exe, os.Args[1:], os.Stdout, stderr)
	if err != nil {
		log.Error("live upgrade failed; this process serves on", "err", err)
		return false
	}
	// The copies of the listening sockets are kept until the hand-over
	// ends: should the new process die, this one serves on them again.
	addrs, files, err := p.ListenerFiles()
	closeFiles := func() {
		for _, f := range files {
			f.Close()
		}
	}
	if err == nil {
		err = parent.Hello(upgrade.Hello{Listeners: addrs, NextID: p.NextSessionID()}, files)
	}
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err = parent.WaitReady(ctx)
		cancel()
	}
	if err != nil {
		parent.Abort()
		closeFiles()
		log.Error("live upgrade failed; this process serves on", "err", err, "new_pid", parent.Pid())
		return false
	}
	log.Info("live upgrade: the new process serves; moving the sessions", "new_pid", parent.Pid())
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	start := time.Now()
	left := p.HandOff(ctx, parent.Gone(), parent.Session)
	cancel()
	select {
	case <-parent.Gone():
		// The sessions it took died with it; the rest, and new clients,
		// are this process's again.
		p.ResumeAccepting(addrs, files)
		log.Error("live upgrade failed: the new process ended during the hand-over; this process serves on",
			"new_pid", parent.Pid(), "left", left)
		return false
	default:
	}
	closeFiles()
	if err := parent.Done(); err != nil {
		log.Warn("live upgrade: could not tell the new process the hand-over ended", "err", err)
	}
	p.StopAdmin()
	log.Info("live upgrade: hand-over ended; the sessions left here drain", "took", time.Since(start).String(), "left", left)
	return true
}

// upgradeCommand is `shardgate upgrade PID`: it asks the running process
// for a live upgrade (SIGUSR2) and waits until it has handed over and
// exited.
func upgradeCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("upgrade", "PID",
		"Live upgrade: the shardgate serving as PID starts the binary now at its path with the same arguments,\n"+
			"hands it the listening sockets and the client sessions with their state, and exits (SIGUSR2 does the same).")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long to wait for the old process to exit")
	arg, code, done := parseFileArgs(fs, args, stdout, stderr)
	if done {
		return code
	}
	pid, err := strconv.Atoi(arg)
	if err != nil || pid <= 1 {
		fmt.Fprintf(stderr, "shardgate upgrade: %q is not a process id\n", arg)
		return 2
	}
	if err := syscall.Kill(pid, syscall.SIGUSR2); err != nil {
		fmt.Fprintf(stderr, "shardgate upgrade: signal %d: %v\n", pid, err)
		return 1
	}
	deadline := time.Now().Add(*timeout)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			fmt.Fprintf(stderr, "shardgate upgrade: process %d still runs after %v; its log says why (a failed upgrade leaves it serving)\n", pid, *timeout)
			return 1
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Fprintf(stdout, "process %d handed over and exited; its log names the new process\n", pid)
	return 0
}
