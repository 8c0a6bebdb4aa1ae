package proxy_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
)

// The status page in headless Chromium: it renders every section with the
// backends up, and when a replica's server dies it shows that backend down
// within one refresh of the proxy knowing it, without the page being
// reloaded.
func TestStatusPageInBrowser(t *testing.T) {
	const (
		healthInterval = 100 * time.Millisecond
		healthTimeout  = 500 * time.Millisecond
		refresh        = 2 * time.Second // the page's refresh period (admin.statusRefresh)
		// slack is for the browser's fetch and rendering on a busy machine:
		// a page that did not refresh itself would never show the change.
		slack = 5 * time.Second
	)
	r := testenv.StartReplicated(t, 1)
	replica := r.Replicas[0]
	extra := splitConfig(t, r, []int{1}, "    health:\n      interval: "+healthInterval.String()+"\n      timeout: "+healthTimeout.String()+"\n")
	p := startProxy(t, proxyConfig(t, r.Primary, extra))
	waitChecked(t, p)

	b := testenv.StartBrowser(t)
	b.Open(t, "http://"+p.AdminAddr()+"/")
	if got := b.Title(t); got != "shardgate status" {
		t.Fatalf("title %q, want shardgate status", got)
	}
	for _, id := range []string{"#status", "#backends", "#sharding", "#digests"} {
		if _, ok := b.Text(t, id); !ok {
			t.Errorf("the page has no %s", id)
		}
	}
	backends, _ := b.Text(t, "#backends")
	for _, addr := range []string{r.Primary.Addr, replica.Addr} {
		if state := rowState(backends, addr); state != "up" {
			t.Errorf("#backends shows %s as %q, want up:\n%s", addr, state, backends)
		}
	}
	if row, ok := b.Text(t, "#backends tr.down"); ok {
		t.Fatalf("a backend is down before any was stopped: %s", row)
	}

	if err := replica.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	// First the proxy's health check finds the server down (how long that
	// takes on a busy machine is the health checker's business, tested in
	// internal/backend); from then on the page has a refresh to show it.
	waitFor(t, "the proxy's health check to find the killed replica down", 30*time.Second, func() bool {
		h := p.Cluster("main").Servers()[1].Health()
		return h.Checked && !h.Up || p.Cluster("main").Servers()[1].BreakerOpen()
	})
	known := time.Now()
	within := refresh + slack
	for {
		all, _ := b.Text(t, "#backends")
		if rowState(all, replica.Addr) == "down" {
			t.Logf("the page showed %s down %s after it was killed", replica.Addr, time.Since(killed).Round(time.Millisecond))
			break
		}
		if time.Since(known) > within {
			t.Fatalf("%s after the proxy found %s down the page does not show it (proxy's health: %+v):\n%s",
				within, replica.Addr, p.Cluster("main").Servers()[1].Health(), all)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The page's own script swapped the sections in: the test opened it
	// once, and the noscript refresh does not run with scripts on.
	if note, _ := b.Text(t, "#refresh"); !strings.HasPrefix(note, "Live: refreshed at ") {
		t.Errorf("#refresh says %q, want the script's last refresh time", note)
	}
	if row, _ := b.Text(t, "#backends tr.down"); !strings.Contains(row, replica.Addr) {
		t.Errorf("the first row classed down is %q, want the replica's", row)
	}
	if all, _ := b.Text(t, "#backends"); rowState(all, r.Primary.Addr) != "up" {
		t.Errorf("the primary is not shown up:\n%s", all)
	}
}

// rowState is the status (first) cell of the row of a table's rendered
// text, one line per row, that shows addr; "" when none does.
func rowState(table, addr string) string {
	for _, line := range strings.Split(table, "\n") {
		if fields := strings.Fields(line); slices.Contains(fields, addr) {
			return fields[0]
		}
	}
	return ""
}
