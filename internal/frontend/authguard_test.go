package frontend

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestAuthDelayGrowsPerFailure(t *testing.T) {
	c := AuthDelayConfig{Threshold: 3, MinDelay: time.Second, MaxDelay: 4500 * time.Millisecond}
	want := []time.Duration{0, 0, 0, time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second, 4500 * time.Millisecond, 4500 * time.Millisecond}
	for failures, w := range want {
		if got := c.delayAfter(failures); got != w {
			t.Errorf("after %d failures: %v, want %v", failures, got, w)
		}
	}
	// MySQL's maximum: no overflow.
	c.MaxDelay = 2147483647 * time.Millisecond
	if got := c.delayAfter(1 << 40); got != c.MaxDelay {
		t.Errorf("after 2^40 failures: %v, want %v", got, c.MaxDelay)
	}
	if got := (AuthDelayConfig{MinDelay: time.Second, MaxDelay: time.Minute}).delayAfter(100); got != 0 {
		t.Errorf("threshold 0: %v, want no delay", got)
	}
}

func TestAuthAddrKey(t *testing.T) {
	for host, want := range map[string]string{
		"192.0.2.7":                 "192.0.2.7",
		"::ffff:192.0.2.7":          "192.0.2.7",
		"2001:db8:1:2:3:4:5:6":      "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::1":      "2001:db8:1:2::/64",
		"fe80::1%eth0":              "fe80::/64",
		"not an address (a socket)": "not an address (a socket)",
	} {
		if got := addrKey(host); got != want {
			t.Errorf("addrKey(%q) = %q, want %q", host, got, want)
		}
	}
}

// TestAuthGuardCountsPerUser: failures count per address and user name,
// as MySQL's connection_control counts them per 'user'@'host': a flood of
// wrong passwords for one name delays that name's logins from that
// address, not another name's, nor the same name's from another address.
func TestAuthGuardCountsPerUser(t *testing.T) {
	log, _ := guardLog(t)
	m := NewMetrics(nil)
	g := NewAuthGuard(AuthDelayConfig{Threshold: 3, MinDelay: time.Second, MaxDelay: 30 * time.Second}, log, m)
	defer g.Close()
	for range 2000 {
		g.Failed("192.0.2.1", "root", "unknown user")
	}
	if d := g.Delay("192.0.2.1", "root"); d != 30*time.Second {
		t.Errorf("root after 2,000 failures: delay %v, want max_delay", d)
	}
	if d := g.Delay("192.0.2.1", "app"); d != 0 {
		t.Errorf("another user from the flood's address: delay %v, want none", d)
	}
	if d := g.Delay("192.0.2.2", "root"); d != 0 {
		t.Errorf("root from another address: delay %v, want none", d)
	}
	g.Failed("192.0.2.1", "app", "wrong password")
	g.Succeeded("192.0.2.1", "app")
	if d := g.Delay("192.0.2.1", "root"); d != 30*time.Second {
		t.Errorf("root after another user's success: delay %v, want max_delay still", d)
	}
	if n := gaugeValue(m.AuthDelayedAddrs); n != 1 {
		t.Errorf("delayed gauge %v, want 1 (root at 192.0.2.1)", n)
	}
}

// TestAuthGuardBoundsWaiting: at most maxWaitingPerAddress logins of one
// address wait for their delay at once; the next is told to end (and the
// address's log line counts it), one that ends frees a place, and
// another address has places of its own.
func TestAuthGuardBoundsWaiting(t *testing.T) {
	log, records := guardLog(t)
	g := NewAuthGuard(AuthDelayConfig{Threshold: 1, MinDelay: time.Second, MaxDelay: time.Minute}, log, nil)
	defer g.Close()
	g.Failed("192.0.2.1", "root", "unknown user")
	for i := range maxWaitingPerAddress {
		if !g.Wait("192.0.2.1") {
			t.Fatalf("wait %d of %d refused", i+1, maxWaitingPerAddress)
		}
	}
	if g.Wait("192.0.2.1") {
		t.Fatalf("wait %d admitted, want at most %d", maxWaitingPerAddress+1, maxWaitingPerAddress)
	}
	if !g.Wait("192.0.2.2") {
		t.Fatal("another address's first wait refused")
	}
	g.Done("192.0.2.1")
	if !g.Wait("192.0.2.1") {
		t.Fatal("a wait after one ended refused")
	}
	records()
	g.tick()
	r := records()
	if len(r) != 1 || r[0]["client"] != "192.0.2.1" || r[0]["closed_unanswered"] != float64(1) {
		t.Fatalf("end of interval: %v, want the address's line counting 1 login closed unanswered", r)
	}
}

// guardLog captures a guard's log records.
func guardLog(t *testing.T) (*slog.Logger, func() []map[string]any) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	return log, func() []map[string]any {
		var out []map[string]any
		for _, line := range bytes.Split(buf.Bytes(), []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			var r map[string]any
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			out = append(out, r)
		}
		buf.Reset()
		return out
	}
}

// TestAuthGuardLogsPerInterval checks the log lines: the first failure of
// an address at once, then at the end of the interval one line with the
// count and the user names tried (bounded), nothing for a quiet interval,
// and the next failure after one at once again.
func TestAuthGuardLogsPerInterval(t *testing.T) {
	log, records := guardLog(t)
	g := NewAuthGuard(AuthDelayConfig{}, log, nil)
	defer g.Close()
	g.Failed("192.0.2.1", "root", "unknown user")
	for i := 0; i < 50; i++ {
		g.Failed("192.0.2.1", fmt.Sprintf("user%d", i%8), "unknown user")
	}
	g.Failed("192.0.2.1", strings.Repeat("x", 1000), "unknown user")
	r := records()
	if len(r) != 1 || r[0]["msg"] != "client authentication failed" || r[0]["user"] != "root" || r[0]["client"] != "192.0.2.1" {
		t.Fatalf("first failure: %v", r)
	}
	g.tick()
	r = records()
	if len(r) != 1 || r[0]["msg"] != "client authentication failures" || r[0]["failures"] != float64(51) || r[0]["more_users"] != true {
		t.Fatalf("end of interval: %v", r)
	}
	if users := r[0]["users"].([]any); len(users) != maxLoggedUsers {
		t.Errorf("users %v: want the first %d", users, maxLoggedUsers)
	}
	g.tick()
	if r := records(); len(r) != 0 {
		t.Fatalf("quiet interval logged %v", r)
	}
	g.tick() // the interval closed: the next failure is logged at once
	g.Failed("192.0.2.1", strings.Repeat("y", 1000), "unknown user")
	r = records()
	if len(r) != 1 || r[0]["msg"] != "client authentication failed" || len(r[0]["user"].(string)) > maxLoggedUserLen+3 {
		t.Fatalf("failure after a quiet interval: %v", r)
	}
}

// TestAuthGuardBounded checks that addresses rotating past the table's
// limit neither grow it nor the log: the oldest are forgotten, and at most
// maxAuthLogLines addresses per interval get a line of their own.
func TestAuthGuardBounded(t *testing.T) {
	log, records := guardLog(t)
	m := NewMetrics(nil)
	g := NewAuthGuard(AuthDelayConfig{Threshold: 1, MinDelay: time.Second, MaxDelay: time.Minute}, log, m)
	defer g.Close()
	const n = maxAuthRecords + 500
	for i := 0; i < n; i++ {
		g.Failed(fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), "root", "unknown user")
	}
	if got := g.lru.Len(); got != maxAuthRecords || len(g.recs) != maxAuthRecords || len(g.addrs) != maxAuthRecords {
		t.Fatalf("tables hold %d (%d) records and %d addresses, want the limit %d", got, len(g.recs), len(g.addrs), maxAuthRecords)
	}
	if got := gaugeValue(m.AuthDelayedAddrs); got != maxAuthRecords {
		t.Errorf("delayed gauge %v, want %d", got, maxAuthRecords)
	}
	if d := g.Delay("10.0.0.0", "root"); d != 0 {
		t.Errorf("forgotten address: delay %v, want none", d)
	}
	if d := g.Delay(fmt.Sprintf("10.%d.%d.%d", (n-1)>>16&255, (n-1)>>8&255, (n-1)&255), "root"); d != time.Second {
		t.Errorf("latest address: delay %v, want 1s", d)
	}
	if r := records(); len(r) != maxAuthLogLines {
		t.Errorf("%d addresses failing once logged %d lines, want %d", n, len(r), maxAuthLogLines)
	}
	for i := 0; i < 3*maxAuthLogLines; i++ {
		g.Failed(fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), "admin", "unknown user")
	}
	g.tick()
	r := records()
	if len(r) != maxAuthLogLines+2 {
		t.Fatalf("end of interval: %d lines, want %d addresses, one line for the rest, one for the forgotten", len(r), maxAuthLogLines)
	}
	if last := r[len(r)-1]; last["forgotten"] != float64(n-maxAuthRecords+3*maxAuthLogLines) {
		t.Errorf("last line %v", last)
	}
}

// TestAuthGuardLapses checks that a failure count lapses after max_delay
// without a failure, that a success resets it, and that the table forgets
// idle addresses. Time passes by moving the records' last failure back:
// with a max_delay short enough to wait for, a busy machine could let it
// lapse between two calls that must see the count.
func TestAuthGuardLapses(t *testing.T) {
	log, _ := guardLog(t)
	m := NewMetrics(nil)
	g := NewAuthGuard(AuthDelayConfig{Threshold: 1, MinDelay: 10 * time.Millisecond, MaxDelay: time.Minute}, log, m)
	age := func(d time.Duration) {
		g.mu.Lock()
		defer g.mu.Unlock()
		for e := g.lru.Front(); e != nil; e = e.Next() {
			e.Value.(*authRecord).last = time.Now().Add(-d)
		}
	}
	defer g.Close()
	if d := g.Failed("192.0.2.1", "a", "wrong password"); d != 0 {
		t.Fatalf("first failure delayed %v", d)
	}
	if d := g.Failed("192.0.2.1", "a", "wrong password"); d != 10*time.Millisecond {
		t.Fatalf("second failure delayed %v, want 10ms", d)
	}
	if d := g.Delay("192.0.2.1", "a"); d != 20*time.Millisecond {
		t.Fatalf("next login: %v, want 20ms", d)
	}
	g.Succeeded("192.0.2.1", "a")
	if d, n := g.Delay("192.0.2.1", "a"), gaugeValue(m.AuthDelayedAddrs); d != 0 || n != 0 {
		t.Fatalf("after a success: delay %v, gauge %v, want none", d, n)
	}
	g.Failed("192.0.2.1", "a", "wrong password")
	age(time.Minute - time.Second)
	if d := g.Delay("192.0.2.1", "a"); d != 10*time.Millisecond {
		t.Fatalf("just under max_delay after the last failure: delay %v, want 10ms", d)
	}
	age(time.Minute + time.Second)
	if d, n := g.Delay("192.0.2.1", "a"), gaugeValue(m.AuthDelayedAddrs); d != 0 || n != 0 {
		t.Fatalf("max_delay after the last failure: delay %v, gauge %v, want none", d, n)
	}
	age(time.Hour)
	g.tick()
	g.tick() // the log interval of the address ends quiet
	if g.lru.Len() != 0 || len(g.recs) != 0 || len(g.addrs) != 0 {
		t.Fatalf("idle records kept: %d, %d addresses", g.lru.Len(), len(g.addrs))
	}
}

func gaugeValue(g prometheus.Gauge) float64 {
	var v dto.Metric
	if err := g.Write(&v); err != nil || v.Gauge == nil {
		return -1
	}
	return v.Gauge.GetValue()
}
