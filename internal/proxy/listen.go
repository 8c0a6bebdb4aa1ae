package proxy

import (
	"context"
	"net"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/shardgate/shardgate/internal/config"
)

// listen opens a client listener. With reuse_port, the socket shares its
// port with the other processes that open it the same way: a new process
// serves before the old one stops, and the kernel spreads new connections
// over the processes listening.
func listen(l config.Listener) (net.Listener, error) {
	lc := net.ListenConfig{}
	if l.ReusePort {
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
	return lc.Listen(context.Background(), "tcp", l.Address)
}
