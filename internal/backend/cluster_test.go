package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// testServer is a server whose pool never dials (MinIdle 0) and whose
// health is set by the test.
func testServer(t *testing.T, addr string, weight int) *Server {
	t.Helper()
	p := NewPool("t/"+addr, &DialConfig{Addr: addr, ConnectTimeout: 10 * time.Millisecond}, PoolConfig{MaxOpen: 1}, quietLog)
	t.Cleanup(p.Close)
	return NewServer(p, weight, BreakerConfig{Failures: 3, Backoff: time.Second, MaxBackoff: 4 * time.Second})
}

func replicaHealth(lag time.Duration) *Health {
	return &Health{Checked: true, Up: true, ReadOnly: true, Replica: true, Replicating: true, Lag: lag}
}

// testCluster builds a cluster without starting health checkers.
func testCluster(servers ...*Server) *Cluster {
	c := &Cluster{Name: "t", Primary: servers[0].Pool, log: quietLog}
	c.servers.Store(&servers)
	c.setWriter(servers[0])
	for _, s := range servers {
		s.setOnTrip(c.UpdateTopology)
	}
	return c
}

func TestReaderByWeightAndEligibility(t *testing.T) {
	p, a, b := testServer(t, "p:1", 1), testServer(t, "a:1", 1), testServer(t, "b:1", 3)
	p.health.Store(&Health{Checked: true, Up: true})
	a.health.Store(replicaHealth(0))
	b.health.Store(replicaHealth(time.Second))
	c := testCluster(p, a, b)

	counts := map[*Server]int{}
	for i := 0; i < 4000; i++ {
		counts[c.Reader(10*time.Second, nil)]++
	}
	if counts[p] != 0 || counts[nil] != 0 {
		t.Fatalf("reads went to the writer or nowhere: %v", counts)
	}
	// Weights 1:3 with equal load: about 1000 and 3000.
	if counts[a] < 800 || counts[a] > 1200 {
		t.Errorf("weight 1 replica got %d of 4000 reads, want about 1000", counts[a])
	}

	// Too far behind, not replicating, drained, breaker open, avoided:
	// not a candidate.
	if r := c.Reader(500*time.Millisecond, nil); r != a {
		t.Errorf("with b lagging 1s over a 500ms limit: got %v", r)
	}
	if r := c.Reader(10*time.Second, a); r != b {
		t.Errorf("avoiding a: got %v", r)
	}
	h := *replicaHealth(0)
	h.Replicating = false
	a.health.Store(&h)
	b.SetOffline(true)
	if r := c.Reader(10*time.Second, nil); r != nil {
		t.Errorf("no replica qualifies, got %v", r.Addr())
	}
	b.SetOffline(false)
	b.trip(time.Now())
	if r := c.Reader(10*time.Second, nil); r != nil {
		t.Errorf("b's breaker is open, got %v", r.Addr())
	}
}

func TestReaderPrefersLessBusy(t *testing.T) {
	p, a, b := testServer(t, "p:1", 1), testServer(t, "a:1", 1), testServer(t, "b:1", 1)
	a.health.Store(replicaHealth(0))
	b.health.Store(replicaHealth(0))
	c := testCluster(p, a, b)
	for i := 0; i < 10; i++ {
		a.Begin()
	}
	n := 0
	for i := 0; i < 1000; i++ {
		if c.Reader(time.Minute, nil) == b {
			n++
		}
	}
	// Two draws by weight, the less busy wins: b unless both draws are a
	// (1/4 of the time).
	if n < 650 || n > 850 {
		t.Errorf("less busy replica got %d of 1000 reads, want about 750", n)
	}
}

func TestWriterFollowsReadOnly(t *testing.T) {
	p, a := testServer(t, "p:1", 1), testServer(t, "a:1", 1)
	c := testCluster(p, a)
	a.health.Store(replicaHealth(0))
	c.UpdateTopology()
	if c.Writer() != p {
		t.Fatal("before any check the configured primary is the writer")
	}
	p.health.Store(&Health{Checked: true, Up: true, ReadOnly: true})
	c.UpdateTopology()
	if c.Writer() != nil {
		t.Fatalf("primary read-only, no writable server: writer %v", c.Writer().Addr())
	}
	a.health.Store(&Health{Checked: true, Up: true, ReadOnly: false})
	c.UpdateTopology()
	if c.Writer() != a {
		t.Fatal("writes must follow the writable server")
	}
	// The old primary writable again: the current writer stays.
	p.health.Store(&Health{Checked: true, Up: true})
	c.UpdateTopology()
	if c.Writer() != a {
		t.Fatal("the writer must not flap back while it stays writable")
	}
	// The writer taken out: the other writable server takes over at once.
	a.trip(time.Now())
	if c.Writer() != p {
		t.Fatal("a tripped writer must hand over to a writable server")
	}
	// Drained: likewise.
	a.breaker.probed(time.Now(), true)
	p.SetOffline(true)
	c.UpdateTopology()
	if c.Writer() != a {
		t.Fatal("a drained writer must hand over")
	}
	// A refused write marks the writer read-only until the next check.
	a.MarkReadOnly()
	c.UpdateTopology()
	if c.Writer() != nil {
		t.Fatal("a server known read-only must not take writes")
	}
}

func TestBreaker(t *testing.T) {
	var b breaker
	b.cfg.Store(&BreakerConfig{Failures: 3, Backoff: time.Second, MaxBackoff: 3 * time.Second})
	now := time.Unix(1000, 0)
	b.failure(now)
	b.failure(now)
	b.success()
	b.failure(now)
	if b.failure(now) || b.isOpen() {
		t.Fatal("failures after a success must start counting again")
	}
	if !b.failure(now) || !b.isOpen() {
		t.Fatal("the third failure in a row must open the breaker")
	}
	if b.probeDue(now.Add(999 * time.Millisecond)) {
		t.Fatal("probe before the backoff")
	}
	if !b.probeDue(now.Add(time.Second)) {
		t.Fatal("probe due after the backoff")
	}
	b.probed(now.Add(time.Second), false) // backoff 2s
	if b.probeDue(now.Add(2900*time.Millisecond)) || !b.probeDue(now.Add(3*time.Second)) {
		t.Fatal("a failed probe must double the backoff")
	}
	b.probed(now.Add(3*time.Second), false) // 4s, capped at 3s
	if !b.probeDue(now.Add(6 * time.Second)) {
		t.Fatal("backoff must be capped at MaxBackoff")
	}
	if !b.probed(now.Add(6*time.Second), true) || b.isOpen() {
		t.Fatal("a passing probe must close the breaker")
	}
	if !b.trip(now) || !b.isOpen() {
		t.Fatal("trip must open a closed breaker at once")
	}
}

func TestApplyReplicaStatus(t *testing.T) {
	cols := []string{"Slave_IO_State", "Slave_IO_Running", "Slave_SQL_Running", "Seconds_Behind_Master"}
	h := &Health{Lag: -1}
	applyReplicaStatus(h, cols, []string{"Waiting", "Yes", "Yes", "3"})
	if !h.Replica || !h.Replicating || h.Lag != 3*time.Second {
		t.Errorf("running replica: %+v", h)
	}
	h = &Health{Lag: -1}
	applyReplicaStatus(h, cols, []string{"", "Yes", "No", ""})
	if !h.Replica || h.Replicating || h.Lag != -1 {
		t.Errorf("stopped SQL thread: %+v", h)
	}
	h = &Health{Lag: -1}
	applyReplicaStatus(h, []string{"Replica_IO_Running", "Replica_SQL_Running", "Seconds_Behind_Source"}, []string{"Yes", "Yes", "0"})
	if !h.Replicating || h.Lag != 0 {
		t.Errorf("MySQL 8 column names: %+v", h)
	}
}

// A failed connect takes the server out at once: the next statements do
// not each wait for a connect to a dead server.
func TestFailedConnectTripsBreaker(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connects are refused
	s := testServer(t, addr, 1)
	tripped := 0
	s.setOnTrip(func() { tripped++ })
	if _, err := s.Pool.Acquire(context.Background(), false); err == nil {
		t.Fatal("acquire from a dead server succeeded")
	}
	if !s.BreakerOpen() || s.Available() || tripped != 1 {
		t.Fatalf("after a refused connect: breaker open %v, available %v, trips %d", s.BreakerOpen(), s.Available(), tripped)
	}
	// Before any health check failed, the refused connect is the reason.
	if got := testCluster(s).DescribeUnwritable(); !strings.Contains(got, addr+" taken out (circuit breaker open until ") ||
		!strings.Contains(got, "last connect failed: ") || !strings.Contains(got, "connection refused") {
		t.Fatalf("why the server is out: %s", got)
	}
}

// Each server's reason for not taking writes, as error 9001 gives it.
func TestDescribeUnwritable(t *testing.T) {
	p, a, b, d := testServer(t, "p:1", 1), testServer(t, "a:1", 1), testServer(t, "b:1", 1), testServer(t, "d:1", 1)
	c := testCluster(p, a, b, d)
	p.SetOffline(true)
	a.health.Store(&Health{Checked: true, Up: true, ReadOnly: true})
	b.trip(time.Now())
	b.health.Store(&Health{Checked: true, Err: errors.New("connect b:1: refused")})
	d.health.Store(&Health{Checked: true, Err: errors.New("read_only: i/o timeout")})
	c.UpdateTopology()
	if c.Writer() != nil {
		t.Fatalf("writer %v, want none", c.Writer().Addr())
	}
	got := c.DescribeUnwritable()
	want := "p:1 offline (drained); a:1 read-only; b:1 taken out (circuit breaker open until " +
		b.breaker.until().Format("15:04:05.000") + "), last check failed: connect b:1: refused; d:1 down: read_only: i/o timeout"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// An account that may not read read_only: only the configured primary is
// assumed writable (as before the first check); one refused SHOW SLAVE
// STATUS neither stops writes nor makes a read replica.
func TestWriterWithUnknownState(t *testing.T) {
	p, a := testServer(t, "p:1", 1), testServer(t, "a:1", 1)
	c := testCluster(p, a)
	p.health.Store(&Health{Checked: true, Up: true, ReadOnly: true})
	a.health.Store(&Health{Checked: true, Up: true, ReadOnlyUnknown: true, Lag: -1})
	c.UpdateTopology()
	if c.Writer() != nil {
		t.Fatal("a replica whose read_only is unknown must not take writes")
	}
	if got := c.DescribeUnwritable(); got != "p:1 read-only; a:1 read_only unknown (the backend account may not read @@global.read_only)" {
		t.Fatalf("got %s", got)
	}
	p.health.Store(&Health{Checked: true, Up: true, ReadOnlyUnknown: true, ReplicationUnknown: true, Lag: -1})
	a.health.Store(&Health{Checked: true, Up: true, ReadOnly: true, ReplicationUnknown: true, Lag: -1})
	c.UpdateTopology()
	if c.Writer() != p {
		t.Fatal("the configured primary with read_only unknown must take writes")
	}
	if r := c.Reader(time.Hour, nil); r != nil {
		t.Fatalf("a replica whose replication state is unknown got a read")
	}
}

func TestReplicationPrivilege(t *testing.T) {
	for v, want := range map[string]string{
		"10.11.19-MariaDB-0+deb12u1":  "SLAVE MONITOR",
		"5.5.5-10.6.4-MariaDB-log":    "SLAVE MONITOR",
		"10.5.9-MariaDB":              "SLAVE MONITOR",
		"10.5.8-MariaDB":              "REPLICATION SLAVE ADMIN",
		"5.5.5-10.5.2-MariaDB":        "REPLICATION SLAVE ADMIN",
		"10.4.32-MariaDB":             "REPLICATION CLIENT",
		"11.4.2-MariaDB":              "SLAVE MONITOR",
		"8.0.36":                      "REPLICATION CLIENT",
		"8.0.36-0ubuntu0.22.04.1-log": "REPLICATION CLIENT",
	} {
		if got := replicationPrivilege(v); got != want {
			t.Errorf("%s: got %s, want %s", v, got, want)
		}
	}
}

// Failed checks that differ only by the local port of their connection
// fail for the same reason (logged at DEBUG, not WARN, when repeated).
func TestReasonKey(t *testing.T) {
	timeout := func(port int) error {
		return fmt.Errorf("read_only: %w", &net.OpError{Op: "read", Net: "tcp",
			Source: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port},
			Addr:   &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 3306}, Err: os.ErrDeadlineExceeded})
	}
	if a, b := reasonKey(timeout(50000)), reasonKey(timeout(50001)); a != b || a != "read_only: read i/o timeout" {
		t.Fatalf("same failure, different reasons: %q, %q", a, b)
	}
	if reasonKey(timeout(1)) == reasonKey(errors.New("read_only: ERROR 1227")) {
		t.Fatal("different failures, one reason")
	}
}
