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

// BenchmarkIdleConnections opens 10,000 authenticated client connections to
// a shardgate process, leaves them idle and reports the growth of its RSS
// per connection as a user sees it from outside: sampled 3, 5 and 10 s
// after the last login, with no help from the test (no forced GC), and the
// worst sample reported (the target: <= 4 KB).
//
//	go test ./cmd/shardgate -run '^$' -bench IdleConnections -benchtime 1x
func BenchmarkIdleConnections(b *testing.B) {
	const conns = 10000
	srv := testenv.Shared(b)
	admin := freeAddr(&testing.T{})
	p, listen := startServe(&testing.T{}, "--backend", fmt.Sprintf("%s:%s@%s", testenv.User, testenv.Password, srv.Addr), "--admin-http", admin)
	time.Sleep(500 * time.Millisecond)
	pid := p.cmd.Process.Pid
	before := procStatusKB(&testing.T{}, pid, "VmRSS")
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
	loggedIn := time.Now()
	worst := 0
	for _, at := range []time.Duration{3 * time.Second, 5 * time.Second, 10 * time.Second} {
		time.Sleep(time.Until(loggedIn.Add(at)))
		rss := procStatusKB(&testing.T{}, pid, "VmRSS")
		b.Logf("%v after the last login: RSS %d KB, %.0f bytes per connection", at, rss, float64(rss-before)*1024/conns)
		worst = max(worst, rss)
	}
	logRuntimeMemory(b, admin)
	b.ReportMetric(float64(worst-before)*1024/conns, "bytes/conn")
	b.ReportMetric(float64(worst), "KB-rss")
	runtime.KeepAlive(open)
}

// logRuntimeMemory logs the Go runtime's view of the proxy's memory.
func logRuntimeMemory(b *testing.B, admin string) {
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		b.Logf("metrics: %v", err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, line := range strings.Split(string(body), "\n") {
		for _, m := range []string{"go_memstats_stack_inuse_bytes", "go_memstats_heap_inuse_bytes", "go_memstats_heap_alloc_bytes", "go_memstats_heap_released_bytes", "go_memstats_sys_bytes", "go_goroutines"} {
			if strings.HasPrefix(line, m+" ") {
				b.Log(line)
			}
		}
	}
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
