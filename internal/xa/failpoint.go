package xa

import (
	"os"
	"syscall"
)

// Failpoints of the two-phase commit, for the tests that crash shardgate
// at each step: SHARDGATE_XA_FAILPOINT names one, and the process kills
// itself (SIGKILL, nothing flushed or closed) when it gets there. Unset,
// a failpoint is a comparison with an empty string, on the commit path
// of two-phase transactions only.
const (
	AfterFirstPrepare = "after-first-prepare"
	AfterPrepares     = "after-prepares"
	AfterDecision     = "after-decision"
	AfterFirstCommit  = "after-first-commit"
)

var failpoint = os.Getenv("SHARDGATE_XA_FAILPOINT")

// Failpoint kills the process if name is the failpoint set.
func Failpoint(name string) {
	if failpoint != "" && failpoint == name {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL is not delivered synchronously everywhere
	}
}
