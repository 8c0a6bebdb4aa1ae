package proxy_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
)

// TestShardedHotPathDoesNotAllocate: once a statement's shape is cached,
// routing a point select by key and forwarding it costs the proxy no heap
// allocation.
func TestShardedHotPathDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector (it drops sync.Pool items)")
	}
	h := shardedHot(t)
	h.roundTrip(t, h.query) // plans and caches the shape
	if n := testing.AllocsPerRun(500, func() { h.roundTrip(t, h.query) }); n != 0 {
		t.Errorf("%.2f allocations per routed point select, want 0", n)
	}
	h.telemetryRecorded(t, "SELECT v FROM t WHERE id = ?", 500)
	// A read of every sub-table: the shards read at once, a shard's
	// sub-tables by one UNION ALL, the rows passed on undecoded.
	scatter := append([]byte{mysql.ComQuery}, "SELECT v FROM t WHERE v = 7"...)
	h.roundTrip(t, scatter)
	if n := testing.AllocsPerRun(300, func() { h.roundTrip(t, scatter) }); n != 0 {
		t.Errorf("%.2f allocations per read of every sub-table, want 0", n)
	}
}

func BenchmarkShardedPointSelectText(b *testing.B) {
	h := shardedHot(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.roundTrip(b, h.query)
	}
}

// BenchmarkShardedPointSelectBinary: a prepared point select by key,
// routed by its parameter to one sub-table.
func BenchmarkShardedPointSelectBinary(b *testing.B) {
	h := shardedHot(b)
	id, _ := h.mustPrepare(b, "SELECT v FROM t WHERE id=?")
	exec := []byte{mysql.ComStmtExecute, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, byte(mysql.TypeLong), 0}
	binary.LittleEndian.PutUint32(exec[1:], id)
	exec = binary.LittleEndian.AppendUint32(exec, 5000)
	h.roundTrip(b, exec)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.roundTrip(b, exec)
	}
}

// BenchmarkShardedScatterText: a read of every sub-table (the shards at
// once, a shard's sub-tables by one UNION ALL, rows passed on undecoded).
func BenchmarkShardedScatterText(b *testing.B) {
	h := shardedHot(b)
	q := append([]byte{mysql.ComQuery}, "SELECT v FROM t WHERE v = 7"...)
	h.roundTrip(b, q)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.roundTrip(b, q)
	}
}

// shardedHot logs a raw client in to a proxy over two shards.
func shardedHot(t testing.TB) *hotClient {
	t.Helper()
	p, _, _, _, _, proxyDB := shardedPairProxy(t, "shot")
	mustExec(t, proxyDB(""), "INSERT INTO t (id, v) VALUES (5000, 7)")
	cl := mfDial(t, p.Addrs()[0])
	if err := cl.greeting(); err != nil {
		t.Fatal(err)
	}
	if err := cl.authenticateAs(appUser, appPass); err != nil {
		t.Fatal(err)
	}
	_ = cl.nc.SetDeadline(time.Time{})
	return &hotClient{mfClient: cl, p: p, query: append([]byte{mysql.ComQuery}, "SELECT v FROM t WHERE id=5000"...)}
}
