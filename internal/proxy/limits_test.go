package proxy_test

import (
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
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
}
