#!/usr/bin/env bash
# Times both parsers: ROUNDS (default 5) separate runs of one test binary,
# alternating which parser goes first, then the median of each figure.
# Output: results/bench.txt (raw) and results/medians.md.
set -euo pipefail
cd "$(dirname "$0")"
rounds=${ROUNDS:-5}
benchtime=${BENCHTIME:-200ms}
mkdir -p results
bin=$(mktemp -d)/parsers.test
trap 'rm -rf "$(dirname "$bin")"' EXIT
go test -c -o "$bin" .
: >results/bench.txt
for i in $(seq "$rounds"); do
	rev=false
	if ((i % 2 == 0)); then rev=true; fi
	"$bin" -test.run '^$' -test.bench . -test.benchmem -test.count 1 \
		-test.benchtime "$benchtime" -reverse="$rev" >>results/bench.txt
done
go run ./cmd/benchmedian <results/bench.txt >results/medians.md
cat results/medians.md
