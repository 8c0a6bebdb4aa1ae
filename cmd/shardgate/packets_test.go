package main_test

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/mysql/auth"
	"github.com/shardgate/shardgate/internal/testenv"
)

// TestLargeStatementMemory: a 64 MB statement costs the proxy a few MB,
// whether the backend refuses it (max_allowed_packet 16 MB: 1153) or runs
// it (1 GB). Measured as the growth of the proxy's peak RSS (VmHWM).
func TestLargeStatementMemory(t *testing.T) {
	const size = 64 << 20
	query := make([]byte, 0, size)
	query = append(query, mysql.ComQuery)
	query = append(query, "SELECT LENGTH('"...)
	query = append(query, strings.Repeat("z", size-1-len("SELECT LENGTH('')"))...)
	query = append(query, "')"...)
	for _, tc := range []struct {
		maxPacket string
		wantErr   uint16
	}{{"16M", mysql.ERNetPacketTooLarge}, {"1G", 0}} {
		t.Run("backend max_allowed_packet "+tc.maxPacket, func(t *testing.T) {
			srv := testenv.Start(t, testenv.Options{ExtraArgs: []string{"--max-allowed-packet=" + tc.maxPacket}})
			p, listen := startServe(t, "--backend", fmt.Sprintf("%s:%s@%s", testenv.User, testenv.Password, srv.Addr))
			nc, err := idleLogin(listen)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			pid := p.cmd.Process.Pid
			before := procStatusKB(t, pid, "VmHWM")
			c := mysql.NewConn(nc)
			go func() { // the client keeps sending while the proxy may answer early
				if err := c.WritePacket(query); err == nil {
					_ = c.Flush()
				}
			}()
			_ = nc.SetReadDeadline(time.Now().Add(60 * time.Second))
			r := mysql.NewConn(nc)
			r.SetSeq(1)
			first, err := r.ReadPacket()
			if err != nil {
				t.Fatalf("reply: %v", err)
			}
			switch {
			case tc.wantErr != 0:
				if !mysql.IsErr(first) || mysql.ParseErr(first).Code != tc.wantErr {
					t.Fatalf("want error %d, got %x", tc.wantErr, first[:min(len(first), 64)])
				}
			case mysql.IsErr(first):
				t.Fatalf("want a result, got %v", mysql.ParseErr(first))
			}
			growth := procStatusKB(t, pid, "VmHWM") - before
			t.Logf("peak RSS growth for a 64 MB statement: %d KB", growth)
			if growth > 8<<10 {
				t.Fatalf("a 64 MB statement grew the proxy's peak RSS by %d KB, want < 8 MB", growth)
			}
		})
	}
}

// TestMemoryReturnedAfterLoginFlood: after a flood of logins that all went
// away, an idle proxy gives the memory back within seconds, so its RSS
// tells an operator the truth.
func TestMemoryReturnedAfterLoginFlood(t *testing.T) {
	srv := testenv.Shared(t)
	p, listen := startServe(t, "--backend", fmt.Sprintf("%s:%s@%s", testenv.User, testenv.Password, srv.Addr))
	pid := p.cmd.Process.Pid
	time.Sleep(500 * time.Millisecond)
	before := procStatusKB(t, pid, "VmRSS")
	// 5,000 clients log in at once and leave together.
	const clients = 5000
	conns := make([]net.Conn, 0, clients)
	for range clients {
		c, err := idleLogin(listen)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Close()
	}
	peak := procStatusKB(t, pid, "VmHWM")
	// What is left is the runtime's own (stacks, span metadata): the heap
	// the flood used is back with the OS. The proxy gives it back once the
	// flood has been quiet for a few seconds (frontend.memoryRelief); the
	// test polls for it, for longer than that on a busy machine, rather
	// than read the RSS once at a fixed time.
	left := time.Now()
	const within = 30 * time.Second
	after := 0
	for {
		time.Sleep(250 * time.Millisecond)
		after = procStatusKB(t, pid, "VmRSS")
		if after-before <= (peak-before)/3 {
			break
		}
		if time.Since(left) > within {
			t.Fatalf("%v after a login flood the proxy's RSS is %d KB above where it started, of a peak %d KB above: want most of it returned",
				within, after-before, peak-before)
		}
	}
	t.Logf("RSS before %d KB, peak %d KB, %v after %d logins %d KB", before, peak, time.Since(left).Round(100*time.Millisecond), clients, after)
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
