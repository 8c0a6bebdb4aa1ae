package main

import (
	"log/slog"
	"os"
	"runtime"
)

// procsPerCPU is the automatic GOMAXPROCS per CPU. shardgate reads and
// writes sockets with raw system calls (internal/mysql/socket.go), during
// which a thread keeps its P; when the kernel preempts it there (a socket
// write wakes the peer, which often takes the CPU), the sessions queued on
// that P wait. Extra Ps let other threads run them. Measured on 2 CPUs
// shared with sysbench and MariaDB, 16 threads of point selects: the CPUs
// were idle 7-12% of the time with GOMAXPROCS=2, 3-5% with 4 and 2-3% with
// 8, at the same CPU per query.
const procsPerCPU = 4

// resolveGOMAXPROCS picks GOMAXPROCS from the configured value (0 =
// automatic), whether the environment sets it, and the runtime's default
// (the CPUs the process may use).
func resolveGOMAXPROCS(configured int, envSet bool, runtimeDefault int) int {
	switch {
	case configured > 0:
		return configured
	case envSet:
		return runtimeDefault // the runtime already applied $GOMAXPROCS
	default:
		return runtimeDefault * procsPerCPU
	}
}

// applyGOMAXPROCS sets GOMAXPROCS for serving.
func applyGOMAXPROCS(configured int, log *slog.Logger) {
	_, envSet := os.LookupEnv("GOMAXPROCS")
	cur := runtime.GOMAXPROCS(0)
	n := resolveGOMAXPROCS(configured, envSet, cur)
	if n != cur {
		runtime.GOMAXPROCS(n)
	}
	log.Debug("GOMAXPROCS", "value", n, "cpus", runtime.NumCPU())
}
