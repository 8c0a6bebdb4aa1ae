#!/usr/bin/env bash
# Runs shardgate's whole test suite: installs missing dependencies
# (scripts/install-deps.sh), then `go vet ./...`, `go test ./...`, and the
# packages and tests whose code runs concurrently once more under the race
# detector (RACE_PACKAGES, RACE_PROXY_TESTS below).
# Extra arguments are passed to every `go test` run (before the package
# list; a -run of them replaces RACE_PROXY_TESTS), e.g.
#   ./scripts/test.sh -run TestRouter -v
#   ./scripts/test.sh -race        # everything under the race detector, in one run
# Works from any directory.
#
# Environment:
#   SHARDGATE_SKIP_DEPS=1   do not run scripts/install-deps.sh
#   SHARDGATE_SKIP_RACE=1   do not run the race detector's run
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The race detector's run: the packages whose own code runs goroutines
# that share memory (merges' parts, pools and their maintenance, sessions
# and their sweeps, the socket poller, plan and digest caches, sequences,
# the fleet's watch and registry beside the admin views' reads, the
# upgrade channel),
# whole; of internal/proxy, which assembles them, the tests that drive
# them concurrently (many sessions on few connections, reloads under load,
# KILL, parked sessions, merges stopped midway, recovery beside a
# two-phase commit, the status page's sampler beside statements). All of internal/proxy
# takes 10 minutes under -race on the 2-core machine, more than the
# suite's budget (15 minutes). Measured there with a warm build cache and
# other tests running: 45 s for the packages, 45 s for the proxy's tests;
# a cold build cache adds 2.3 minutes of compiling; the whole script took
# 8 minutes 45 s.
RACE_PACKAGES=(
	./internal/backend
	./internal/engine
	./internal/fleet
	./internal/frontend
	./internal/mysql
	./internal/planner
	./internal/router
	./internal/sequence
	./internal/telemetry
	./internal/upgrade
	./internal/xa
)
RACE_PROXY_TESTS='^(TestManySessionsFewBackendConns|TestReloadUnderLoad|TestKill|TestIdleSessionsPark|TestParkedSessionEnds|TestMergeKillQuery|TestMergeShardsStartTogether|TestMergeKillConnection|TestMergeClientDisconnects|TestMergeLimitStopsShards|TestMergeShardDies|TestKillQueryWhileAPartWaits|TestEvaluateKillQuery|TestEvaluatePoolsHoldAndWait|TestXARecoveryFencesAStoppedCoordinator|TestXAShardKilledBetweenPrepareAndCommit|TestAtomicTransactionEndsWithItsSession|TestPipelinedReadsExact|TestPipelinedKill|TestPipelinedConnectionDies|TestPipelinedReload|TestStatusHistory)$'

if [[ "${SHARDGATE_SKIP_DEPS:-0}" != 1 ]]; then
	./scripts/install-deps.sh
fi

echo "+ go vet ./..." >&2
go vet ./...

echo "+ go test -count=1 -timeout 14m $* ./..." >&2
go test -count=1 -timeout 14m "$@" ./...

race_asked=0
for arg in "$@"; do
	case "$arg" in
	-race | -race=true | --race | --race=true) race_asked=1 ;;
	esac
done
if ((race_asked)); then
	exit 0 # that run was under the race detector already
fi
if [[ "${SHARDGATE_SKIP_RACE:-0}" == 1 ]]; then
	echo "+ (SHARDGATE_SKIP_RACE=1: no race detector run)" >&2
	exit 0
fi
echo "+ go test -race -count=1 -timeout 10m $* ${RACE_PACKAGES[*]}" >&2
go test -race -count=1 -timeout 10m "$@" "${RACE_PACKAGES[@]}"
# The arguments come after -run: a -run of the caller's wins.
echo "+ go test -race -count=1 -timeout 10m -run '$RACE_PROXY_TESTS' $* ./internal/proxy" >&2
go test -race -count=1 -timeout 10m -run "$RACE_PROXY_TESTS" "$@" ./internal/proxy
