package xa

import (
	"os"
	"sync/atomic"
	"syscall"
)

// Failpoints of the two-phase commit, for the tests that crash shardgate
// at each step: SHARDGATE_XA_FAILPOINT names one, and the process kills
// itself (SIGKILL, nothing flushed or closed) when it gets there. Unset,
// a failpoint is a comparison with an empty string and an atomic load, on
// the commit path of two-phase transactions only.
const (
	AfterFirstPrepare = "after-first-prepare"
	AfterPrepares     = "after-prepares"
	AfterDecision     = "after-decision"
	AfterFirstCommit  = "after-first-commit"
)

var (
	failpoint = os.Getenv("SHARDGATE_XA_FAILPOINT")
	hook      atomic.Pointer[func(name string)]
)

// Failpoint kills the process if name is the failpoint set, and calls the
// hook of SetFailpointHook.
func Failpoint(name string) {
	if failpoint != "" && failpoint == name {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL is not delivered synchronously everywhere
	}
	if h := hook.Load(); h != nil {
		(*h)(name)
	}
}

// SetFailpointHook makes every failpoint of this process call f with its
// name, on the session's goroutine: a test that stops a commit at a step
// (to kill a shard there) blocks in f. nil removes the hook. For tests
// only; nothing else sets it.
func SetFailpointHook(f func(name string)) {
	if f == nil {
		hook.Store(nil)
		return
	}
	hook.Store(&f)
}
