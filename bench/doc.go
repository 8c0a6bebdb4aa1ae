// Package bench is shardgate's benchmark harness.
//
// It starts a throw-away MariaDB (internal/testenv), HAProxy in TCP mode (the
// "relay": a proxy that only forwards bytes, the floor any proxy pays) and
// shardgate in front of the same server, and measures three targets:
//
//	direct     sysbench -> mariadbd
//	relay      sysbench -> haproxy (mode tcp) -> mariadbd
//	shardgate  sysbench -> shardgate -> mariadbd
//
// RunMatrix drives sysbench over tests x prepared-statement modes x thread
// counts, running the three targets interleaved in rounds (rotating the
// order every round) so that drift of a noisy machine hits all of them alike.
// Per run it records QPS, latency percentiles computed from sysbench's
// histogram, CPU time per query of the proxy process and of mariadbd
// (/proc/PID/stat) and the proxy's RSS; a cell reports medians over rounds.
// WriteReport writes a Markdown report and a PNG chart.
//
// RunRate is an open-loop, constant-rate load generator (point selects):
// queries are scheduled at fixed intended start times and latency is taken
// from the intended start whenever the generator was behind, so queueing is
// counted (no coordinated omission). It steps the rate up until p99 exceeds
// an SLO and reports the highest rate that passed, for capacity planning.
//
// RunStream streams one large result (MariaDB's SEQUENCE engine, 1 GiB by
// default) through every target, interleaved in rounds, and reports MB/s,
// the proxy's CPU per GB and its peak RSS growth sampled during the query.
//
// RunTransfer measures atomic transactions across shards: bank transfers
// within one shard and across two, through one shardgate whose schemas
// differ only in cross_shard_writes, with proxy CPU per transaction and the
// round trips to the backends counted in the server's general log.
//
// The command is bench/cmd/sgbench (`make bench`); see docs/benchmarks.md.
// Missing tools (sysbench, haproxy, mariadbd) are errors naming
// scripts/install-deps.sh.
package bench
