package proxy_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/testenv"
)

// waitFor polls cond until it holds or a deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestIdleSessionsPark: idle sessions are held without a goroutine and
// resume transparently, in and out of transactions.
func TestIdleSessionsPark(t *testing.T) {
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS park", "CREATE TABLE IF NOT EXISTS park.t (id INT PRIMARY KEY) ENGINE=InnoDB", "DELETE FROM park.t")
	p := startProxy(t, proxyConfig(t, srv, ""))
	db := openDB(t, proxyDSN(p, appUser, appPass, "park", ""))
	const n = 20
	cs := make([]*sql.Conn, n)
	for i := range cs {
		cs[i] = oneConn(t, db)
		mustExec(t, cs[i], "SET SESSION sql_mode = 'ANSI_QUOTES'")
	}
	mustExec(t, cs[0], "BEGIN", "INSERT INTO t VALUES (1)") // parks inside a transaction
	waitFor(t, "sessions to park", 6*time.Second, func() bool { return p.ParkedSessions() == n })
	for i, c := range cs {
		if got := queryString(t, c, "SELECT @@session.sql_mode"); got != "ANSI_QUOTES" {
			t.Fatalf("session %d after parking: sql_mode %q", i, got)
		}
	}
	if got := queryString(t, cs[1], "SELECT COUNT(*) FROM t"); got != "0" {
		t.Fatalf("uncommitted row visible to another session: %s", got)
	}
	mustExec(t, cs[0], "COMMIT")
	if got := queryString(t, cs[1], "SELECT COUNT(*) FROM t"); got != "1" {
		t.Fatalf("committed row after parking: %s", got)
	}
}

// TestParkedSessionEnds: the idle timeout, KILL and shutdown reach parked
// sessions, which then end and are accounted for.
func TestParkedSessionEnds(t *testing.T) {
	srv := testenv.Shared(t)
	t.Run("idle timeout", func(t *testing.T) {
		cfg := proxyConfig(t, srv, "")
		cfg.Server.ClientIdleTimeout = 3 * time.Second
		p := startProxy(t, cfg)
		cl := mfDial(t, p.Addrs()[0])
		cl.mustLogin(t)
		cl.mustSelect1(t)
		waitFor(t, "the session to park", 5*time.Second, func() bool { return p.ParkedSessions() == 1 })
		_ = cl.nc.SetDeadline(time.Now().Add(5 * time.Second))
		pkt, err := cl.c.ReadPacket()
		if err != nil || !mysql.IsErr(pkt) || mysql.ParseErr(pkt).Code != 4031 {
			t.Fatalf("parked idle client: want ERR 4031, got %x %v", pkt, err)
		}
		waitFor(t, "the session to end", 2*time.Second, func() bool { return p.Clients() == 0 })
	})
	t.Run("KILL", func(t *testing.T) {
		p := startProxy(t, proxyConfig(t, srv, ""))
		a, b := mfDial(t, p.Addrs()[0]), mfDial(t, p.Addrs()[0])
		a.mustLogin(t)
		b.mustLogin(t)
		aID := a.scalar(t, "SELECT CONNECTION_ID()")
		waitFor(t, "the sessions to park", 5*time.Second, func() bool { return p.ParkedSessions() == 2 })
		if res := b.query(t, "KILL "+aID); res.err != nil {
			t.Fatalf("KILL: %v", res.err)
		}
		a.expectClosed(t, false)
		waitFor(t, "the killed session to end", 2*time.Second, func() bool { return p.Clients() == 1 })
	})
	t.Run("shutdown", func(t *testing.T) {
		cfg := proxyConfig(t, srv, "")
		p := startProxy(t, cfg)
		cl := mfDial(t, p.Addrs()[0])
		cl.mustLogin(t)
		waitFor(t, "the session to park", 5*time.Second, func() bool { return p.ParkedSessions() == 1 })
		// Without waking parked sessions, Shutdown would wait for this one
		// until its deadline and report the deadline.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := p.Shutdown(ctx); err != nil {
			t.Fatalf("shutdown with a parked session: %v", err)
		}
		_ = cl.nc.SetDeadline(time.Now().Add(2 * time.Second))
		pkt, err := cl.c.ReadPacket()
		if err != nil || !mysql.IsErr(pkt) || mysql.ParseErr(pkt).Code != 1053 {
			t.Fatalf("parked client at shutdown: want ERR 1053, got %x %v", pkt, err)
		}
	})
}
