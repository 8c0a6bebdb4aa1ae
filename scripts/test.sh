#!/usr/bin/env bash
# Runs shardgate's whole test suite: installs missing dependencies
# (scripts/install-deps.sh), then `go vet ./...` and `go test ./...`.
# Extra arguments are passed to `go test` (before the package list), e.g.
#   ./scripts/test.sh -run TestRouter -v
#   ./scripts/test.sh -race
# Works from any directory.
#
# Environment:
#   SHARDGATE_SKIP_DEPS=1   do not run scripts/install-deps.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ "${SHARDGATE_SKIP_DEPS:-0}" != 1 ]]; then
	./scripts/install-deps.sh
fi

echo "+ go vet ./..." >&2
go vet ./...

echo "+ go test -count=1 -timeout 14m $* ./..." >&2
go test -count=1 -timeout 14m "$@" ./...
