# Benchmarks; see docs/benchmarks.md.
#
#   make bench                                   full matrix, results in bench/results/
#   make bench BENCH_FLAGS="--threads 1,16,64"   any sgbench flag
#   make bench-smoke                             the quick harness test (< 1 min)

GO ?= go
BENCH_FLAGS ?=

.PHONY: bench bench-smoke

bench:
	$(GO) run ./bench/cmd/sgbench $(BENCH_FLAGS)

bench-smoke:
	$(GO) test ./bench/... -count=1 -v
