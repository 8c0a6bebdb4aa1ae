package proxy_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/testenv"
)

// hotClient is an allocation-free client for measuring the proxy's own
// cost per query: it sends prebuilt packets and reads replies into the
// reused buffers of mysql.Conn.
type hotClient struct {
	*mfClient
	query, execute []byte
	p              *proxy.Proxy
}

func newHotClient(t testing.TB) *hotClient {
	t.Helper()
	return newHotClientLanes(t, 0)
}

// newHotClientLanes is newHotClient through a proxy with lanes
// pipelining connections (pool.pipeline_connections).
func newHotClientLanes(t testing.TB, lanes int) *hotClient {
	t.Helper()
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS hot",
		"CREATE TABLE IF NOT EXISTS hot.sbtest1 (id INT PRIMARY KEY, c CHAR(120))",
		"REPLACE INTO hot.sbtest1 VALUES (5000, REPEAT('c', 120))")
	cfg := proxyConfig(t, srv, "")
	cfg.Clusters[0].Pool.PipelineConnections = lanes
	p := startProxy(t, cfg)
	cl := mfDial(t, p.Addrs()[0])
	cl.mustLogin(t)
	_ = cl.nc.SetDeadline(time.Time{})
	cl.query(t, "USE hot")
	id, _ := cl.mustPrepare(t, "SELECT c FROM sbtest1 WHERE id=?")
	exec := []byte{mysql.ComStmtExecute, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, byte(mysql.TypeLong), 0}
	binary.LittleEndian.PutUint32(exec[1:], id)
	exec = binary.LittleEndian.AppendUint32(exec, 5000)
	return &hotClient{mfClient: cl, p: p,
		query:   append([]byte{mysql.ComQuery}, "SELECT c FROM sbtest1 WHERE id=5000"...),
		execute: exec}
}

// roundTrip sends one command and reads its reply to the terminator.
func (h *hotClient) roundTrip(tb testing.TB, cmd []byte) {
	h.c.ResetSeq()
	if err := h.c.WritePacket(cmd); err != nil {
		tb.Fatal(err)
	}
	if err := h.c.Flush(); err != nil {
		tb.Fatal(err)
	}
	for n := 0; ; n++ {
		p, err := h.c.ReadPacket()
		if err != nil {
			tb.Fatal(err)
		}
		if mysql.IsErr(p) {
			tb.Fatal(mysql.ParseErr(p))
		}
		if n > 1 && mysql.IsEOF(p) && len(p) < 9 { // count, column, (EOF), row, EOF
			_, status, _ := mysql.ParseEOF(p)
			if n == 2 {
				continue // the EOF after the column definition
			}
			_ = status
			return
		}
	}
}

// TestHotPathDoesNotAllocate: forwarding a point select costs the proxy no
// heap allocation, in the text and the binary protocol.
func TestHotPathDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector (it drops sync.Pool items)")
	}
	h := newHotClient(t)
	for _, tc := range []struct {
		name string
		cmd  []byte
	}{{"text", h.query}, {"binary", h.execute}} {
		h.roundTrip(t, tc.cmd) // warm up buffers
		if n := testing.AllocsPerRun(500, func() { h.roundTrip(t, tc.cmd) }); n != 0 {
			t.Errorf("%s protocol: %.2f allocations per forwarded query, want 0", tc.name, n)
		}
	}
	h.telemetryRecorded(t, "SELECT c FROM sbtest1 WHERE id = ?", 1000)

	// Pipelined (issue 23): a lane's turns and buffers are reused too.
	h = newHotClientLanes(t, 1)
	h.roundTrip(t, h.query)
	if n := testing.AllocsPerRun(500, func() { h.roundTrip(t, h.query) }); n != 0 {
		t.Errorf("pipelined: %.2f allocations per query, want 0", n)
	}
	if got := poolMetric(t, h.p, "shardgate_backend_pool_pipelined_total"); got < 500 {
		t.Errorf("%v queries pipelined, want the 500 measured", got)
	}
}

// telemetryRecorded checks that statement telemetry was on while the
// hot path was measured: the digest of text counted at least n statements.
func (h *hotClient) telemetryRecorded(t *testing.T, text string, n uint64) {
	t.Helper()
	for _, d := range h.p.Telemetry().Digests() {
		if d.Text == text {
			if d.Count < n {
				t.Errorf("digest %q counted %d statements, want at least %d", text, d.Count, n)
			}
			return
		}
	}
	t.Errorf("no digest %q: telemetry was off", text)
}

func BenchmarkPointSelectText(b *testing.B) {
	h := newHotClient(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.roundTrip(b, h.query)
	}
}

func BenchmarkPointSelectBinary(b *testing.B) {
	h := newHotClient(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.roundTrip(b, h.execute)
	}
}

// BenchmarkPointSelectPipelined is BenchmarkPointSelectText on a lane: one
// client, so what pipelining adds to a read's path, not what it spares
// the server (for that, sgbench's pipelined target).
func BenchmarkPointSelectPipelined(b *testing.B) {
	h := newHotClientLanes(b, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.roundTrip(b, h.query)
	}
}
