package proxy_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/testenv"
)

// The merge's cost per part (issue 23, section 2): the same ORDER BY …
// LIMIT over one unsharded table and over tables sharded on 1, 2 and 4
// shards (2 sub-tables each, every shard on the one shared server), run
// by an allocation-free client in this process. The process's CPU time
// (getrusage: the proxy, and the client, which costs little) per
// statement is what the proxy spends on it; the server runs apart.

// mergeBenchDB is the benchmarks' database.
const mergeBenchDB = "mcost"

// mergeBenchRows is how many rows each table holds (the same rows).
const mergeBenchRows = 2000

// mergeBenchShards are the sharded tables' shard counts: table tN is
// sharded over shards s0 … s(N-1).
var mergeBenchShards = []int{1, 2, 4}

// mergeBenchYAML is a proxy over four clusters on one server, with the
// benchmark's sharded tables.
func mergeBenchYAML(addr string) string {
	var b strings.Builder
	// No busy polling: one client sending commands in a row would poll
	// for the server's replies, CPU that is not the statement's.
	fmt.Fprintf(&b, "listeners: [{address: \"127.0.0.1:0\"}]\nserver: {busy_poll: 0s}\nusers:\n  - {name: %s, password_hash: %q, default_database: %s}\nclusters:\n",
		appUser, hashOf(appPass), mergeBenchDB)
	for i := range 4 {
		fmt.Fprintf(&b, "  - {name: s%d, user: %s, password: %s, pool: {max_open: 4}, primary: {address: %q}}\n",
			i, testenv.User, testenv.Password, addr)
	}
	fmt.Fprintf(&b, "schemas:\n  - name: %s\n    default_cluster: s0\n    tables:\n", mergeBenchDB)
	for _, n := range mergeBenchShards {
		shards := make([]string, n)
		for i := range shards {
			shards[i] = fmt.Sprintf("s%d", i)
		}
		fmt.Fprintf(&b, "      - {name: t%d, shard_key: id, rule: mod, shards: [%s], sub_tables: 2}\n", n, strings.Join(shards, ", "))
	}
	return b.String()
}

// mergeBenchClient starts the proxy, fills the tables (u unsharded on
// s0; tN through the proxy, which places the rows) and logs a raw client
// in.
func mergeBenchClient(tb testing.TB) *hotClient {
	tb.Helper()
	srv := testenv.Shared(tb)
	srv.Exec(tb, "DROP DATABASE IF EXISTS "+mergeBenchDB, "CREATE DATABASE "+mergeBenchDB)
	const def = " (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(60) NOT NULL, KEY (k))"
	stmts := []string{"CREATE TABLE " + mergeBenchDB + ".u" + def}
	for _, n := range mergeBenchShards {
		for sub := range 2 * n {
			stmts = append(stmts, fmt.Sprintf("CREATE TABLE %s.t%d_%04d%s", mergeBenchDB, n, sub, def))
		}
	}
	srv.Exec(tb, stmts...)
	p := startProxy(tb, parseConfig(tb, mergeBenchYAML(srv.Addr), "mcost.yaml"))
	db := openDB(tb, proxyDSN(p, appUser, appPass, mergeBenchDB, ""))
	for _, table := range append([]string{"u"}, "t1", "t2", "t4") {
		for from := 0; from < mergeBenchRows; from += 200 {
			var vals []string
			for id := from; id < from+200; id++ {
				// k: distinct, in an order unrelated to id's.
				vals = append(vals, fmt.Sprintf("(%d, %d, REPEAT('c', 60))", id, id*7919%(10*mergeBenchRows)))
			}
			mustExec(tb, db, "INSERT INTO "+table+" VALUES "+strings.Join(vals, ", "))
		}
	}
	return rawHotClient(tb, p)
}

// rawHotClient logs a raw client in to p as the application's user.
func rawHotClient(tb testing.TB, p *proxy.Proxy) *hotClient {
	tb.Helper()
	cl := mfDial(tb, p.Addrs()[0])
	if err := cl.greeting(); err != nil {
		tb.Fatal(err)
	}
	if err := cl.authenticateAs(appUser, appPass); err != nil {
		tb.Fatal(err)
	}
	_ = cl.nc.SetDeadline(time.Time{})
	return &hotClient{mfClient: cl, p: p}
}

// resultTrip sends one command and reads its result set (any number of
// columns, classic EOF packets) to the end, allocating nothing; it
// returns the rows.
func (h *hotClient) resultTrip(tb testing.TB, cmd []byte) int {
	h.c.ResetSeq()
	if err := h.c.WritePacket(cmd); err != nil {
		tb.Fatal(err)
	}
	if err := h.c.Flush(); err != nil {
		tb.Fatal(err)
	}
	p, err := h.c.ReadPacket()
	if err != nil {
		tb.Fatal(err)
	}
	if mysql.IsErr(p) {
		tb.Fatal(mysql.ParseErr(p))
	}
	cols, _, _, _ := mysql.ReadLenEncInt(p)
	for range cols + 1 { // the definitions and their EOF
		if _, err := h.c.ReadPacket(); err != nil {
			tb.Fatal(err)
		}
	}
	for rows := 0; ; rows++ {
		p, err := h.c.ReadPacket()
		if err != nil {
			tb.Fatal(err)
		}
		if mysql.IsErr(p) {
			tb.Fatal(mysql.ParseErr(p))
		}
		if mysql.IsEOF(p) && len(p) < 9 {
			return rows
		}
	}
}

// processCPU is the CPU time this process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkShardedMergeCost: `SELECT id, k, c FROM … ORDER BY k LIMIT 10`
// on the unsharded table and merged over 1, 2 and 4 shards. Each reports
// the process's CPU per statement (proxy-µs/op) and, for the merges, the
// CPU above the unsharded statement's per part (µs/part: what each
// shard's part costs the proxy; the unsharded figure comes from the
// "unsharded" sub-benchmark, so run them together). The two-session
// variants take turns between two clients: "same-state" sessions of one
// state, "mixed-state" ones whose time zones differ, so that every
// part's pooled connection last served the other session and must be
// brought in step with this one's (Session.sync).
func BenchmarkShardedMergeCost(b *testing.B) {
	h := mergeBenchClient(b)
	var unsharded float64 // proxy µs per statement, from the first sub-benchmark
	run := func(b *testing.B, table string, parts int, clients ...*hotClient) {
		q := append([]byte{mysql.ComQuery}, "SELECT id, k, c FROM "+table+" ORDER BY k LIMIT 10"...)
		perOp := tripCPU(b, append([]*hotClient{h}, clients...), q)
		b.ReportMetric(perOp, "proxy-µs/op")
		if parts == 0 {
			unsharded = perOp
		} else if unsharded > 0 {
			b.ReportMetric((perOp-unsharded)/float64(parts), "µs/part")
			b.ReportMetric(perOp/unsharded, "×unsharded")
		}
	}
	b.Run("unsharded", func(b *testing.B) { run(b, "u", 0) })
	for _, n := range mergeBenchShards {
		b.Run(fmt.Sprintf("shards=%d", n), func(b *testing.B) { run(b, fmt.Sprintf("t%d", n), n) })
	}
	b.Run("shards=4/same-state", func(b *testing.B) { run(b, "t4", 4, rawHotClient(b, h.p)) })
	b.Run("shards=4/mixed-state", func(b *testing.B) {
		other := rawHotClient(b, h.p)
		other.mfClient.query(b, "SET time_zone = '+01:00'")
		run(b, "t4", 4, other)
	})
}

// tripCPU runs q b.N times, the clients taking turns, and returns the
// process's CPU per statement in µs.
func tripCPU(b *testing.B, clients []*hotClient, q []byte) float64 {
	for _, c := range clients {
		if n := c.resultTrip(b, q); n != 10 {
			b.Fatalf("%d rows, want 10", n)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := processCPU(b)
	for i := range b.N {
		clients[i%len(clients)].resultTrip(b, q)
	}
	return float64(processCPU(b)-cpu) / float64(time.Microsecond) / float64(b.N)
}
