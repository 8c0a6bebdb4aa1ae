package proxy_test

import (
	"errors"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/testenv"
)

func TestClientLimits(t *testing.T) {
	srv := testenv.Shared(t)
	t.Run("idle timeout", func(t *testing.T) {
		cfg := proxyConfig(t, srv, "")
		cfg.Server.ClientIdleTimeout = 300 * time.Millisecond
		p := startProxy(t, cfg)
		cl := mfDial(t, p.Addrs()[0])
		cl.mustLogin(t)
		cl.mustSelect1(t)
		_ = cl.nc.SetDeadline(time.Now().Add(5 * time.Second))
		pkt, err := cl.c.ReadPacket()
		if err != nil || !mysql.IsErr(pkt) || mysql.ParseErr(pkt).Code != 4031 {
			t.Fatalf("idle client: want ERR 4031, got %x %v", pkt, err)
		}
		cl.expectClosed(t, false)
	})
	t.Run("max connections", func(t *testing.T) {
		cfg := proxyConfig(t, srv, "")
		cfg.Listeners[0].MaxConnections = 2
		cfg.Listeners[0].ReservedAdminConnections = 0
		p := startProxy(t, cfg)
		a, b := mfDial(t, p.Addrs()[0]), mfDial(t, p.Addrs()[0])
		a.mustLogin(t)
		b.mustLogin(t)
		c := mfDial(t, p.Addrs()[0])
		pkt, err := c.c.ReadPacket()
		if err != nil || !mysql.IsErr(pkt) || mysql.ParseErr(pkt).Code != 1040 {
			t.Fatalf("third client: want ERR 1040, got %x %v", pkt, err)
		}
		a.close()
		time.Sleep(100 * time.Millisecond)
		d := mfDial(t, p.Addrs()[0])
		d.mustLogin(t)
		d.mustSelect1(t)
	})
	t.Run("reserved admin connection", func(t *testing.T) {
		// Clients that connect and never answer the greeting hold every
		// connection; the one reserved (the default) lets an administrator
		// in, and only an administrator.
		cfg := proxyConfig(t, srv, "")
		cfg.Listeners[0].MaxConnections = 2
		p := startProxy(t, cfg)
		addr := p.Addrs()[0]
		for i := 0; i < 2; i++ {
			mfDial(t, addr).mustGreeting(t)
		}
		expectTooMany := func(user, password string) {
			t.Helper()
			cl := mfDial(t, addr)
			cl.mustGreeting(t)
			var e *mysql.SQLError
			if err := cl.authenticateAs(user, password); !errors.As(err, &e) || e.Code != mysql.ERConCount ||
				e.State != mysql.StateConnRejected || e.Message != "Too many connections" {
				t.Fatalf("%s beyond max_connections: got %v, want ERR 1040 (08004) Too many connections", user, err)
			}
			cl.expectClosed(t, false)
			waitClients(t, p, 2) // the refused session is gone only after its close
		}
		expectTooMany(appUser, appPass)
		expectTooMany(testenv.User, testenv.Password) // not an administrator yet

		next := proxyConfig(t, srv, "")
		next.Listeners[0].MaxConnections = 2
		next.User(testenv.User).Admin = true
		if _, err := p.Reload(next); err != nil {
			t.Fatal(err)
		}
		admin := mfDial(t, addr)
		admin.mustLogin(t)
		admin.mustSelect1(t)
		// The reserve is taken: refused before the handshake.
		cl := mfDial(t, addr)
		if pkt, err := cl.c.ReadPacket(); err != nil || !mysql.IsErr(pkt) || mysql.ParseErr(pkt).Code != mysql.ERConCount {
			t.Fatalf("connection beyond the reserve: want ERR 1040, got %x %v", pkt, err)
		}
		admin.mustSelect1(t)
	})
	t.Run("handshake timeout", func(t *testing.T) {
		// A connection that stalls in the handshake holds the only slot
		// until server.handshake_timeout closes it.
		cfg := proxyConfig(t, srv, "")
		cfg.Listeners[0].MaxConnections = 1
		cfg.Listeners[0].ReservedAdminConnections = 0
		cfg.Server.HandshakeTimeout = 300 * time.Millisecond
		p := startProxy(t, cfg)
		addr := p.Addrs()[0]
		stalled := mfDial(t, addr)
		stalled.mustGreeting(t)
		start := time.Now()
		if pkt, err := mfDial(t, addr).c.ReadPacket(); err != nil || !mysql.IsErr(pkt) || mysql.ParseErr(pkt).Code != mysql.ERConCount {
			t.Fatalf("second client while one stalls: want ERR 1040, got %x %v", pkt, err)
		}
		_ = stalled.nc.SetDeadline(time.Now().Add(3 * time.Second))
		stalled.expectClosed(t, false)
		if took := time.Since(start); took < 250*time.Millisecond || took > 2*time.Second {
			t.Fatalf("stalled handshake closed after %v, want about 300ms", took)
		}
		waitClients(t, p, 0)
		cl := mfDial(t, addr)
		cl.mustLogin(t)
		cl.mustSelect1(t)
		cl.close()
		waitClients(t, p, 0)

		// A reload applies to the handshakes that start after it.
		next := proxyConfig(t, srv, "")
		next.Listeners[0].MaxConnections = 1
		next.Listeners[0].ReservedAdminConnections = 0
		next.Server.HandshakeTimeout = 10 * time.Second
		if _, err := p.Reload(next); err != nil {
			t.Fatal(err)
		}
		stalled = mfDial(t, addr)
		stalled.mustGreeting(t)
		time.Sleep(700 * time.Millisecond)
		if err := stalled.authenticate(); err != nil {
			t.Fatalf("login 700ms after the greeting, with a 10s handshake timeout: %v", err)
		}
		stalled.mustSelect1(t)
	})
}

// waitClients waits until the proxy has n client connections.
func waitClients(t *testing.T, p *proxy.Proxy, n int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for p.Clients() != n {
		if time.Now().After(deadline) {
			t.Fatalf("proxy has %d client connections, want %d", p.Clients(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
