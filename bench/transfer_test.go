package bench

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/config"
)

func TestParseTransferCase(t *testing.T) {
	for _, s := range []string{"single/refuse", "single/allow", "single/atomic", "cross/allow", "cross/atomic"} {
		c, err := ParseTransferCase(s)
		if err != nil || c.String() != s {
			t.Errorf("%s: %v, %v", s, c, err)
		}
	}
	for s, want := range map[string]string{
		"cross/refuse": "refuses the second shard's write",
		"single":       "want workload/policy",
		"multi/atomic": "want workload/policy",
		"single/xa":    "want workload/policy",
	} {
		if _, err := ParseTransferCase(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", s, err, want)
		}
	}
}

func TestTransferConfigValidate(t *testing.T) {
	if err := DefaultTransferConfig().Validate(); err != nil {
		t.Fatalf("default configuration: %v", err)
	}
	bad := DefaultTransferConfig()
	bad.Accounts, bad.Threads, bad.Rounds, bad.Time, bad.Count, bad.RecoveryInterval = 3, 0, 0, 0, -1, 0
	bad.Cases = []TransferCase{{TransferCross, "refuse"}, {TransferSingle, "atomic"}, {TransferSingle, "atomic"}}
	err := bad.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"accounts: 3", "threads: 0", "rounds: 0", "time 0s", "count: -1", "recovery-interval: 0s", "case cross/refuse", "single/atomic twice"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}

// TestTransferConfigParses checks the proxy's configuration with the
// proxy's own parser: a schema per policy of the cases.
func TestTransferConfigParses(t *testing.T) {
	cfg := DefaultTransferConfig()
	c, err := config.Parse([]byte(transferConfig("127.0.0.1:1", "127.0.0.1:2", cfg)), "transfer.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Transactions.RecoveryInterval != cfg.RecoveryInterval {
		t.Errorf("recovery interval %v, want %v", c.Transactions.RecoveryInterval, cfg.RecoveryInterval)
	}
	var got []string
	for _, s := range c.Schemas {
		got = append(got, s.Name+":"+s.CrossShardWrites)
	}
	if want := "sgxfer_refuse:refuse sgxfer_atomic:atomic sgxfer_allow:allow"; strings.Join(got, " ") != want {
		t.Errorf("schemas %v, want %s", got, want)
	}
}

func TestTransferPick(t *testing.T) {
	acc := transferAccounts{{2, 4, 6, 8}, {1, 3, 5}}
	shard := func(id int64) int { return int(id % 2) }
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		a, b := acc.pick(rng, TransferSingle)
		if a >= b || shard(a) != shard(b) {
			t.Fatalf("single: %d, %d: want a < b on one shard", a, b)
		}
		a, b = acc.pick(rng, TransferCross)
		if a >= b || shard(a) == shard(b) {
			t.Fatalf("cross: %d, %d: want a < b on two shards", a, b)
		}
	}
}

func TestCountRoundTrips(t *testing.T) {
	del := "DELETE FROM `sgxfer_atomic`.`shardgate_xa_decisions` WHERE gtrid = X'01'"
	// A row of a transfer before the log: not this pass's.
	delEarlier := "DELETE FROM `sgxfer_atomic`.`shardgate_xa_decisions` WHERE gtrid = X'00'"
	log := []logEntry{
		// A session's connections: the coordinator (BEGIN) and a branch.
		{1, "Query", "BEGIN"},
		{1, "Query", "UPDATE sgaccount_0000 SET balance = balance + 1 WHERE id = 2"},
		{2, "Query", "SET NAMES utf8mb4;XA START 'x'"},
		{2, "Query", "UPDATE sgaccount_0001 SET balance = balance + -1 WHERE id = 3"},
		{2, "Query", "XA END 'x';XA PREPARE 'x'"},
		{1, "Query", "INSERT INTO `sgxfer_atomic`.`shardgate_xa_decisions` (gtrid, decision) VALUES (X'01', 'commit');COMMIT"},
		{2, "Query", "XA COMMIT 'x'"},
		{2, "Reset connection", ""},
		{2, "Quit", ""},
		// A health check and recovery, twice over one server.
		{3, "Connect", "shardgate@127.0.0.1 on  using TCP/IP"},
		{3, "Query", "SELECT @@global.read_only, @@global.gtid_current_pos"},
		{4, "Query", "XA RECOVER"},
		{4, "Query", del},
		{4, "Query", delEarlier},
		{4, "Query", del},
		// The harness, as root.
		{5, "Query", "SET GLOBAL general_log = OFF"},
	}
	trips, withXA, cleanup := countRoundTrips(log, 1)
	if trips != 8 || withXA != 3 || cleanup != 1 {
		t.Errorf("round trips %v, with XA %v, cleanup %v; want 8, 3, 1", trips, withXA, cleanup)
	}
	if trips, _, _ := countRoundTrips(log, 4); trips != 2 {
		t.Errorf("per transfer of 4: %v round trips, want 2", trips)
	}
}

func TestTransferTables(t *testing.T) {
	run := func(qps float64, p50, p99 time.Duration, proxy, server time.Duration) TransferRun {
		return TransferRun{Queries: int64(qps) * 10, Elapsed: 10 * time.Second, QPS: qps, P50: p50, P99: p99, ProxyCPU: proxy, ServerCPU: server}
	}
	ms := time.Millisecond
	res := &TransferResults{Config: DefaultTransferConfig(), Cells: []*TransferCell{
		{Case: TransferCase{TransferSingle, "refuse"}, Runs: []TransferRun{run(1000, ms, 2*ms, time.Second, 2*time.Second)},
			Count: TransferCount{Transfers: 10, RoundTrips: 4}},
		{Case: TransferCase{TransferSingle, "atomic"}, Runs: []TransferRun{run(1000, ms, 2*ms, time.Second, 2*time.Second)},
			Count: TransferCount{Transfers: 10, RoundTrips: 4, XA: 1}},
		{Case: TransferCase{TransferCross, "allow"}, Runs: []TransferRun{run(800, ms, 4*ms, time.Second, 2*time.Second)},
			Count: TransferCount{Transfers: 10, RoundTrips: 5}},
		{Case: TransferCase{TransferCross, "atomic"}, Runs: []TransferRun{run(400, 2*ms, 8*ms, time.Second, 2*time.Second), {Failure: "boom"}},
			Count: TransferCount{Transfers: 10, RoundTrips: 7, XA: 3, Cleanup: 1}},
	}}
	got := res.Tables()
	for _, want := range []string{
		"| single/refuse | 1000 | 0% | 1.000 | 2.000 | 100.0 | 200.0 | 4.00 | 0.00 | 0.00 | 0 |",
		"| cross/atomic | 400 | 0% | 2.000 | 8.000 | 250.0 | 500.0 | 7.00 | 3.00 | 1.00 | 1 failed run(s) |",
		"| single/atomic ÷ single/refuse | 1.00 | 1.00 | 1.00 | 100.0 / 100.0 | +0.0 | 1.00 | +0.0 | 4.00 / 4.00 | +0.00 |",
		"| cross/atomic ÷ cross/allow | 0.50 | 2.00 | 2.00 | 250.0 / 125.0 | +125.0 | 2.00 | +250.0 | 7.00 / 5.00 | +2.00 |",
		"| cross/atomic ÷ single/atomic |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("tables lack %q:\n%s", want, got)
		}
	}
	if res.Failed() != 1 {
		t.Errorf("%d failed, want 1", res.Failed())
	}
	md := (&TransferReport{Results: res}).Markdown()
	for _, want := range []string{"### cross/atomic round 0\n\n```\nboom\n```", "## Columns", "Cases single/refuse, single/atomic, cross/allow, cross/atomic"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestTransferSmoke runs `sgbench transfer` at the smallest scale: every
// default case once for a second, and the round trips counted. It checks
// that everything completes with numbers and balances that add up, and
// the round trips that follow from the protocol, never how fast anything
// is.
func TestTransferSmoke(t *testing.T) {
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env, err := StartEnv(ctx, EnvOptions{Targets: []Target{Sharded}, BufferPool: "128M", Log: testLog{t}})
	if err != nil {
		if errors.Is(err, ErrMissingTool) {
			t.Fatalf("benchmark tools missing (run scripts/install-deps.sh): %v", err)
		}
		t.Fatalf("start the benchmark environment: %v", err)
	}
	defer func() {
		if err := env.Close(); err != nil {
			t.Errorf("stop the benchmark environment: %v", err)
		}
	}()
	cfg := TransferConfig{Accounts: 200, Threads: 2, Rounds: 1, Time: time.Second, Count: 20,
		RecoveryInterval: 200 * time.Millisecond, Cases: DefaultTransferCases}
	res, err := RunTransfer(ctx, env, cfg)
	if err != nil {
		t.Fatalf("RunTransfer: %v", err)
	}
	for _, c := range res.Cells {
		if len(c.Runs) != 1 || c.Runs[0].Failure != "" || c.Runs[0].QPS <= 0 || c.Runs[0].P50 <= 0 || c.Runs[0].P50 > c.Runs[0].P99 {
			t.Errorf("%s: %+v, want one run with transfers/s and ordered percentiles > 0", c.Case, c.Runs)
		}
		if c.Count.Failure != "" || c.Count.RoundTrips < 4 {
			t.Errorf("%s: round trips %+v, want at least 4 per transfer (BEGIN, two UPDATEs, COMMIT)", c.Case, c.Count)
		}
	}
	// Only atomic transactions over two shards leave decision rows.
	for _, c := range res.Cells {
		if atomic2PC := c.Case == (TransferCase{TransferCross, "atomic"}); atomic2PC != (c.Count.Cleanup > 0) {
			t.Errorf("%s: %.2f decision cleanups per transfer", c.Case, c.Count.Cleanup)
		}
	}
	path, err := WriteTransferReport(NewTransferReport(ctx, env, res), t.TempDir())
	if err != nil {
		t.Fatalf("WriteTransferReport: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "| cross/atomic ÷ cross/allow | ") {
		t.Errorf("%s lacks the comparison of cross/atomic with cross/allow:\n%s", path, b)
	}
	t.Logf("transfer run:\n%s", res.Tables())
	t.Logf("transfer smoke test took %v", time.Since(began).Round(time.Millisecond))
}
