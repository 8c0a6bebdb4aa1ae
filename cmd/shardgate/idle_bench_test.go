package main_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/mysql/auth"
	"github.com/shardgate/shardgate/internal/testenv"
)

// BenchmarkIdleConnections opens SHARDGATE_IDLE_CONNS (default 10,000)
// authenticated, idle client connections to a shardgate process and
// reports its RSS per connection (the target: <= 5 KB).
//
//	go test ./cmd/shardgate -run '^$' -bench IdleConnections -benchtime 1x
func BenchmarkIdleConnections(b *testing.B) {
	const conns = 10000
	srv := testenv.Shared(b)
	admin := freeAddr(&testing.T{})
	p, listen := startServe(&testing.T{}, "--backend", fmt.Sprintf("%s:%s@%s", testenv.User, testenv.Password, srv.Addr), "--admin-http", admin)
	_ = p
	time.Sleep(500 * time.Millisecond)
	before := procStatusKB(&testing.T{}, p.cmd.Process.Pid, "VmRSS")
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	for i := 0; i < conns; i++ {
		c, err := idleLogin(listen)
		if err != nil {
			b.Fatalf("connection %d: %v", i, err)
		}
		open = append(open, c)
	}
	// Sessions idle for 2 s are parked without a goroutine; wait for that.
	time.Sleep(3 * time.Second)
	// The Go runtime forces a GC at least every two minutes; each GC halves
	// the stacks of goroutines using little of theirs. Trigger a few now
	// (through pprof) to see the steady state of an idle proxy.
	for i := 0; i < 4; i++ {
		resp, err := http.Get("http://" + admin + "/debug/pprof/heap?gc=1")
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
	time.Sleep(time.Second)
	if resp, err := http.Get("http://" + admin + "/metrics"); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(body), "\n") {
			for _, m := range []string{"go_memstats_stack_inuse_bytes", "go_memstats_heap_inuse_bytes", "go_memstats_heap_alloc_bytes", "go_memstats_sys_bytes", "go_goroutines"} {
				if strings.HasPrefix(line, m+" ") {
					b.Log(line)
				}
			}
		}
	}
	after := procStatusKB(&testing.T{}, p.cmd.Process.Pid, "VmRSS")
	perConn := float64(after-before) * 1024 / conns
	b.ReportMetric(perConn, "bytes/conn")
	b.ReportMetric(float64(after), "KB-rss")
	runtime.KeepAlive(open)
}

// idleLogin logs in with mysql_native_password and leaves the session idle.
func idleLogin(addr string) (net.Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	c := mysql.NewConn(nc)
	p, err := c.ReadPacket()
	if err != nil {
		nc.Close()
		return nil, err
	}
	g, err := mysql.ParseGreeting(p)
	if err != nil {
		nc.Close()
		return nil, err
	}
	hr := &mysql.HandshakeResponse{
		Capabilities: mysql.ClientProtocol41 | mysql.ClientSecureConnection | mysql.ClientPluginAuth | mysql.ClientLongPassword,
		MaxPacket:    1 << 24, Charset: mysql.CollationUTF8MB4GeneralCI, User: testenv.User,
		AuthResponse: auth.NativeScramble([]byte(testenv.Password), g.AuthData), AuthPlugin: auth.PluginNative,
	}
	if err := c.EndPacket(mysql.AppendHandshakeResponse(c.BeginPacket(), hr)); err != nil {
		nc.Close()
		return nil, err
	}
	if err := c.Flush(); err != nil {
		nc.Close()
		return nil, err
	}
	if p, err = c.ReadPacket(); err != nil || !mysql.IsOK(p) {
		nc.Close()
		return nil, fmt.Errorf("login: %x %v", p, err)
	}
	// One statement, as a real client would run before idling.
	c.ResetSeq()
	if err := c.WritePacket(append([]byte{mysql.ComQuery}, "SELECT 1"...)); err == nil {
		err = c.Flush()
	}
	for {
		p, err := c.ReadPacket()
		if err != nil {
			nc.Close()
			return nil, err
		}
		if mysql.IsEOF(p) && len(p) < 9 {
			break
		}
	}
	return nc, nil
}
