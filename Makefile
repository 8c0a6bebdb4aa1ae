# Benchmarks; see docs/benchmarks.md.
#
#   make bench                                   full matrix, results in bench/results/
#   make bench BENCH_FLAGS="--threads 1,16,64"   any sgbench flag
#   make bench-stream                            a 1 GiB result through every target
#   make bench-stream BENCH_FLAGS="--size 8MiB"  any `sgbench stream` flag
#   make bench-scatter                           merges over 4 shards against one server
#   make bench-memory                            proxy RSS during merges of 10M rows of 1 KiB
#   make bench-memory BENCH_FLAGS="--rows 100000" any `sgbench memory` flag
#   make bench-transfer                          transfers within a shard and across two:
#                                                atomic against refuse and allow
#   make bench-transfer BENCH_FLAGS="--time 5s"  any `sgbench transfer` flag
#   make bench-capacity                          constant-rate sweep: the highest rate
#                                                whose p99 stays within the SLO (10 ms)
#   make bench-capacity BENCH_FLAGS="--target-qps 50000"  plus a capacity plan
#   make bench-smoke                             the quick harness tests (< 1 min)

GO ?= go
BENCH_FLAGS ?=

CAPACITY_RATES ?= 2000,4000,6000,8000,10000,12000,14000,16000,18000,20000,22000,24000,26000,28000,30000

.PHONY: bench bench-stream bench-scatter bench-memory bench-transfer bench-capacity bench-smoke

bench:
	$(GO) run ./bench/cmd/sgbench $(BENCH_FLAGS)

bench-stream:
	$(GO) run ./bench/cmd/sgbench stream $(BENCH_FLAGS)

bench-scatter:
	$(GO) run ./bench/cmd/sgbench scatter $(BENCH_FLAGS)

bench-memory:
	$(GO) run ./bench/cmd/sgbench memory $(BENCH_FLAGS)

bench-transfer:
	$(GO) run ./bench/cmd/sgbench transfer $(BENCH_FLAGS)

bench-capacity:
	$(GO) run ./bench/cmd/sgbench rate --slo-p99 10ms --rates $(CAPACITY_RATES) $(BENCH_FLAGS)

bench-smoke:
	$(GO) test ./bench/... -count=1 -v
