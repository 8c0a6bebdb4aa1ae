package main_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/mysql/auth"
	"github.com/shardgate/shardgate/internal/testenv"
)

// Issue 23's flood of wrong passwords: 2,000 connections at once from one
// address, each trying a password for root, which the proxy does not
// know, and trying again once answered (or closed). Before issue 23 the
// proxy's RSS went from 37 to 122 MB and stayed there after the flood,
// and a user logging in from the same address meanwhile timed out: every
// login from the address waited the failures' delay, longer than the
// handshake timeout.
const (
	floodConns = 2000
	floodFor   = 8 * time.Second
	// floodRSSAllowance is how far above where it started the proxy's RSS
	// may be 30 s after the flood.
	floodRSSAllowance = 16 << 10 // KB
	// floodLoginWithin is how long the legitimate login may take during
	// the flood: a login on a busy 2-core machine shared with the flood's
	// 2,000 clients, well under the handshake timeout (10 s) it hit before.
	floodLoginWithin = 5 * time.Second
)

// TestLoginFlood: during the flood a user logging in from the flood's
// address with the right password gets in, within floodLoginWithin; the
// flood's own attempts are still answered with 1045 or not at all (the
// failure delays of issue 12); and 30 s after the flood the proxy's RSS
// is back within floodRSSAllowance of where it started.
func TestLoginFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 2,000 connections at once")
	}
	srv := testenv.Shared(t)
	admin := freeAddr(t)
	p, listen := startServe(t, "--backend", fmt.Sprintf("%s:%s@%s", testenv.User, testenv.Password, srv.Addr), "--admin-http", admin)
	pid := p.cmd.Process.Pid
	waitSettled(t, pid)
	before := procStatusKB(t, pid, "VmRSS")

	f := startFlood(listen, floodConns, floodFor)
	time.Sleep(floodFor / 2) // the flood in full swing: its addresses' logins are delayed
	took, err := legitimateLogin(listen)
	peakDuring := procStatusKB(t, pid, "VmRSS")
	stats := f.wait()
	t.Logf("flood: %s; RSS before %d KB, %d KB during, peak %d KB", stats, before, peakDuring, procStatusKB(t, pid, "VmHWM"))
	if err != nil {
		t.Fatalf("a login with the right password from the flood's address during the flood: %v after %v", err, took.Round(time.Millisecond))
	}
	if took > floodLoginWithin {
		t.Fatalf("a login with the right password from the flood's address took %v during the flood, want <= %v", took.Round(time.Millisecond), floodLoginWithin)
	}
	if stats.unexpected.Load() > 0 {
		t.Fatalf("the flood's logins got answers other than 1045 or a close: %s", stats)
	}
	if stats.denied.Load()+stats.closed.Load() == 0 {
		t.Fatalf("the flood made no attempt: %s", stats)
	}

	ended := time.Now()
	var after int
	for deadline := ended.Add(30 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		if after = procStatusKB(t, pid, "VmRSS"); after-before <= floodRSSAllowance {
			break
		}
		if time.Now().After(deadline) {
			logRuntimeMemory(t, admin)
			t.Fatalf("30 s after the flood the proxy's RSS is %d KB above where it started (%d KB), want <= %d KB",
				after-before, before, floodRSSAllowance)
		}
	}
	t.Logf("the right password took %v during the flood; RSS %d KB above the start %v after the flood",
		took.Round(time.Millisecond), after-before, time.Since(ended).Round(100*time.Millisecond))
	logRuntimeMemory(t, admin)
}

// legitimateLogin logs in as the proxy's user with its password, as an
// application does, and reports how long it took.
func legitimateLogin(listen string) (time.Duration, error) {
	start := time.Now()
	db, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/", testenv.User, testenv.Password, listen))
	if err != nil {
		return 0, err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err = db.PingContext(ctx)
	return time.Since(start), err
}

// flood is floodConns clients trying wrong passwords as fast as the proxy
// answers them.
type flood struct {
	wg    sync.WaitGroup
	stats floodStats
}

type floodStats struct {
	denied, closed, dialFailed, unexpected atomic.Int64
}

func (s *floodStats) String() string {
	return fmt.Sprintf("%d attempts answered 1045, %d closed without an answer, %d dials failed, %d other answers",
		s.denied.Load(), s.closed.Load(), s.dialFailed.Load(), s.unexpected.Load())
}

// startFlood starts conns clients that each try a wrong password for
// root at addr, again and again, for d.
func startFlood(addr string, conns int, d time.Duration) *flood {
	f := &flood{}
	stop := time.Now().Add(d)
	for range conns {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			for time.Now().Before(stop) {
				f.attempt(addr)
			}
		}()
	}
	return f
}

// wait waits for the flood's last attempts to end.
func (f *flood) wait() *floodStats {
	f.wg.Wait()
	return &f.stats
}

// attempt logs in once as root with a wrong password and counts how the
// proxy answered.
func (f *flood) attempt(addr string) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		f.stats.dialFailed.Add(1)
		time.Sleep(10 * time.Millisecond)
		return
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second)) // past the handshake timeout
	c := mysql.NewConn(nc)
	p, err := c.ReadPacket()
	if err != nil {
		f.countEnd(err)
		return
	}
	g, err := mysql.ParseGreeting(p)
	if err != nil {
		f.stats.unexpected.Add(1)
		return
	}
	hr := &mysql.HandshakeResponse{
		Capabilities: mysql.ClientProtocol41 | mysql.ClientSecureConnection | mysql.ClientPluginAuth | mysql.ClientLongPassword,
		MaxPacket:    1 << 24, Charset: mysql.CollationUTF8MB4GeneralCI, User: "root",
		AuthResponse: auth.NativeScramble([]byte("not-the-password"), g.AuthData), AuthPlugin: auth.PluginNative,
	}
	if err := c.EndPacket(mysql.AppendHandshakeResponse(c.BeginPacket(), hr)); err != nil {
		f.countEnd(err)
		return
	}
	if err := c.Flush(); err != nil {
		f.countEnd(err)
		return
	}
	p, err = c.ReadPacket()
	switch {
	case err != nil:
		f.countEnd(err)
	case mysql.IsErr(p) && mysql.ParseErr(p).Code == mysql.ERAccessDenied:
		f.stats.denied.Add(1)
	default:
		f.stats.unexpected.Add(1)
	}
}

// countEnd counts an attempt the proxy ended without an answer.
func (f *flood) countEnd(err error) {
	var ne net.Error
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.As(err, &ne) && !ne.Timeout() || isReset(err) {
		f.stats.closed.Add(1)
		return
	}
	f.stats.unexpected.Add(1)
}

// isReset reports a connection the proxy reset (closed with input unread).
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
