package proxy

import (
	"context"
	"net"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/shardgate/shardgate/internal/config"
)

// listenTCP opens a listener on addr, or serves on the socket a live
// upgrade handed over for it. With reusePort, the socket shares its port
// with the other processes that open it the same way: a new process serves
// before the old one stops, and the kernel spreads new connections over
// the processes listening.
func (p *Proxy) listenTCP(addr string, reusePort bool) (net.Listener, error) {
	if f := p.inherited[addr]; f != nil {
		delete(p.inherited, addr)
		defer f.Close()
		return net.FileListener(f)
	}
	lc := net.ListenConfig{}
	if reusePort {
		lc.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
			})
			if err != nil {
				return err
			}
			return serr
		}
	}
	return lc.Listen(context.Background(), "tcp", addr)
}

// adminReusePort: the admin ports share their port with a successor's as
// the first client listener does, or the successor could not start while
// this process drains.
func adminReusePort(cfg *config.Config) bool {
	return len(cfg.Listeners) > 0 && cfg.Listeners[0].ReusePort
}
