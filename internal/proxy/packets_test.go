package proxy_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/testenv"
)

// lengthQuery is COM_QUERY "SELECT LENGTH('xx…x')" with a payload of
// exactly n bytes (command byte included).
func lengthQuery(n int) []byte {
	const pre, post = "SELECT LENGTH('", "')"
	p := make([]byte, 0, n)
	p = append(p, mysql.ComQuery)
	p = append(p, pre...)
	p = append(p, strings.Repeat("x", n-1-len(pre)-len(post))...)
	return append(p, post...)
}

// sendRaw sends payload as one packet (split in frames) and returns the
// first reply packet's error code (0 for a result) and its sequence id.
func sendRaw(t *testing.T, cl *mfClient, payload []byte) (code uint16, seq byte, closed bool) {
	t.Helper()
	cl.c.SetSeq(0)
	if err := cl.c.WritePacket(payload); err == nil {
		_ = cl.c.Flush()
	}
	_ = cl.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	res, err := cl.readResult()
	if err != nil {
		t.Fatalf("reply to a %d-byte packet: %v", len(payload), err)
	}
	if res.err != nil {
		code = res.err.Code
		if res.err.State != mysql.StateConnFailure && code == mysql.ERNetPacketTooLarge {
			t.Errorf("1153 with SQLSTATE %s, want 08S01", res.err.State)
		}
	}
	_ = cl.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = cl.c.ReadPacket()
	return code, res.firstSeq, errors.Is(err, io.EOF) || (err != nil && !isTimeoutErr(err))
}

func isTimeoutErr(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}

// TestMaxAllowedPacket: the proxy learns max_allowed_packet from the
// backend and answers packets around it exactly as the server does (1153
// with the server's sequence id, then close), whether it holds the packet
// or streams it.
func TestMaxAllowedPacket(t *testing.T) {
	const limit = 2 << 20
	srv := testenv.Start(t, testenv.Options{ExtraArgs: []string{fmt.Sprintf("--max-allowed-packet=%d", limit)}})
	p := startProxy(t, proxyConfig(t, srv, ""))
	for _, n := range []int{100, limit - 2, limit - 1, limit, limit + 1, 40 << 20} {
		payload := lengthQuery(n)
		var want, got [3]any
		for i, addr := range []string{srv.Addr, p.Addrs()[0]} {
			cl := mfDial(t, addr)
			cl.mustLogin(t)
			code, seq, closed := sendRaw(t, cl, payload)
			r := [3]any{code, seq, closed}
			if i == 0 {
				want = r
			} else {
				got = r
			}
			cl.close()
		}
		if got != want {
			t.Errorf("%d-byte packet: proxy answered (code, seq, closed) %v, the server %v", n, got, want)
		}
	}
}

// TestStreamedStatements: statements too large for the proxy to hold are
// streamed to the server and answered as the server answers them, text
// and binary protocol; one that hides a second statement from a client
// without multi-statements is refused before any of it runs.
func TestStreamedStatements(t *testing.T) {
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS stream", "CREATE TABLE IF NOT EXISTS stream.t (id INT PRIMARY KEY, b LONGBLOB)", "DELETE FROM stream.t")
	p := startProxy(t, proxyConfig(t, srv, ""))
	big := strings.Repeat("y", 3<<20)

	db := openDB(t, proxyDSN(p, appUser, appPass, "stream", "maxAllowedPacket=67108864"))
	if got := queryString(t, db, "SELECT LENGTH('"+big+"')"); got != fmt.Sprint(len(big)) {
		t.Fatalf("streamed SELECT: %s", got)
	}
	if _, err := db.Exec("INSERT INTO t VALUES (?, ?)", 1, big); err != nil { // binary protocol
		t.Fatalf("streamed prepared INSERT: %v", err)
	}
	_, err := db.Exec("INSERT INTO t VALUES (2, '" + big + "'); DELETE FROM t")
	if code := mysqlErrCode(err); code != 1064 {
		t.Fatalf("second statement in a streamed one without multi-statements: want 1064, got %v", err)
	}
	if got := queryString(t, db, "SELECT GROUP_CONCAT(id) FROM t"); got != "1" {
		t.Fatalf("after the refused statement, ids %q, want 1 (nothing of it ran)", got)
	}
	multi := openDB(t, proxyDSN(p, appUser, appPass, "stream", "maxAllowedPacket=67108864&multiStatements=true"))
	mustExec(t, multi, "INSERT INTO t VALUES (3, '"+big+"'); INSERT INTO t VALUES (4, 'x')")
	if got := queryString(t, db, "SELECT GROUP_CONCAT(id ORDER BY id) FROM t"); got != "1,3,4" {
		t.Fatalf("with multi-statements: ids %q, want 1,3,4", got)
	}
}

// TestStalledPacketClosed: a client that stops in the middle of a packet
// is closed after server.net_read_timeout, large packet or small.
func TestStalledPacketClosed(t *testing.T) {
	srv := testenv.Shared(t)
	cfg := proxyConfig(t, srv, "")
	cfg.Server.NetReadTimeout = 500 * time.Millisecond
	p := startProxy(t, cfg)
	for _, tc := range []struct {
		name     string
		announce int
	}{{"16 MB packet", 0xffffff}, {"small packet", 100}} {
		t.Run(tc.name, func(t *testing.T) {
			cl := mfDial(t, p.Addrs()[0])
			cl.mustLogin(t)
			n := tc.announce
			cl.write([]byte{byte(n), byte(n >> 8), byte(n >> 16), 0, mysql.ComQuery, 'S', 'E', 'L'})
			start := time.Now()
			_ = cl.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, err := cl.c.ReadPacket()
			if err == nil || isTimeoutErr(err) {
				t.Fatalf("stalled client: want the proxy to close it, got %v", err)
			}
			if d := time.Since(start); d < 400*time.Millisecond || d > 5*time.Second {
				t.Fatalf("closed after %v, want about net_read_timeout (500ms)", d)
			}
		})
	}
	// Others are served meanwhile and after.
	db := openDB(t, proxyDSN(p, appUser, appPass, "", ""))
	if got := queryString(t, db, "SELECT 1"); got != "1" {
		t.Fatal(got)
	}
}

// TestStreamedExecuteManyParams: a prepared statement whose parameter
// types do not fit in the head of a streamed COM_STMT_EXECUTE (tens of
// thousands of placeholders, a bulk insert) runs as on the server.
func TestStreamedExecuteManyParams(t *testing.T) {
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS stream", "CREATE TABLE IF NOT EXISTS stream.many (id INT PRIMARY KEY, v VARCHAR(64))", "DELETE FROM stream.many")
	p := startProxy(t, proxyConfig(t, srv, ""))
	const rows = 20000 // 40000 parameters: 80000 bytes of types
	var sb strings.Builder
	sb.WriteString("INSERT INTO many VALUES ")
	args := make([]any, 0, 2*rows)
	val := strings.Repeat("v", 50)
	for i := range rows {
		if i > 0 {
			sb.WriteString(",")
		}
		sb.WriteString("(?,?)")
		args = append(args, i, val)
	}
	db := openDB(t, proxyDSN(p, appUser, appPass, "stream", "maxAllowedPacket=67108864"))
	res, err := db.Exec(sb.String(), args...) // a packet of about 1.2 MB
	if err != nil {
		t.Fatalf("prepared INSERT of %d parameters: %v", 2*rows, err)
	}
	if n, _ := res.RowsAffected(); n != rows {
		t.Fatalf("affected %d rows, want %d", n, rows)
	}
}

// TestStreamedOverBackendLimit: a streamed statement over the backend's
// own max_allowed_packet (lower than the proxy's) gets the server's 1153,
// as one the proxy holds does, not a lost connection.
func TestStreamedOverBackendLimit(t *testing.T) {
	srv := testenv.Start(t, testenv.Options{ExtraArgs: []string{"--max-allowed-packet=2M"}})
	cfg := proxyConfig(t, srv, "")
	cfg.Server.MaxAllowedPacket = 64 << 20
	p := startProxy(t, cfg)
	db := openDB(t, proxyDSN(p, appUser, appPass, "", "maxAllowedPacket=67108864"))
	db.SetMaxOpenConns(1)
	for i := range 3 {
		_, err := db.Exec("SELECT LENGTH('" + strings.Repeat("z", 8<<20) + "')")
		if code := mysqlErrCode(err); code != mysql.ERNetPacketTooLarge {
			t.Fatalf("round %d: streamed statement over the backend's max_allowed_packet: want 1153, got %v", i, err)
		}
	}
}
