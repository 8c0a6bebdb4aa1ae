package proxy_test

import (
	"context"
	"database/sql"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/shardgate/shardgate/internal/testenv"
)

// busyPolls reads shardgate_busy_polls_total from the proxy's metrics.
func busyPolls(t *testing.T, metrics string) (caught, missed int) {
	t.Helper()
	get := func(result string) int {
		m := regexp.MustCompile(`shardgate_busy_polls_total\{result="` + result + `"\} (\d+)`).FindStringSubmatch(metrics)
		if m == nil {
			t.Fatalf("no shardgate_busy_polls_total{result=%q} in the metrics", result)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return get("caught"), get("missed")
}

// TestBusyPollOnlyForASingleClient: one client alone gets its replies and
// next commands through busy polling (server.busy_poll, on by default);
// two clients busy at once stop it, so a loaded proxy burns no CPU polling.
func TestBusyPollOnlyForASingleClient(t *testing.T) {
	srv := testenv.Shared(t)
	p := startProxy(t, proxyConfig(t, srv, ""))
	db := openDB(t, proxyDSN(p, appUser, appPass, "", ""))
	db.SetMaxIdleConns(4)
	ctx := context.Background()
	one := oneConn(t, db)
	for i := 0; i < 100; i++ { // prepare, execute, close: 300 commands in a row
		queryString(t, one, "SELECT ?", i) // opens the gate (200 in a row)
	}
	caught0, missed0 := busyPolls(t, scrapeMetrics(t, p))
	for i := 0; i < 200; i++ {
		queryString(t, one, "SELECT ?", i)
	}
	caught1, missed1 := busyPolls(t, scrapeMetrics(t, p))
	// Whether a poll catches its input within the budget depends on the
	// machine's load (CI once caught 72); that the waits poll does not.
	if polls := (caught1 - caught0) + (missed1 - missed0); polls < 100 {
		t.Fatalf("one client, 200 queries: %d waits polled, want most of 400", polls)
	}

	// Two clients at once: polling stops after at most the first commands.
	// They run their queries in rounds, one each at a time: left free, one
	// could run 200 commands in a row while the other waits for a CPU on
	// a loaded machine, which is single-stream traffic again, and polls
	// (CI failed so: 91 polls).
	two := oneConn(t, db)
	queryString(t, two, "SELECT 1")
	const queries = 300
	for i := 0; i < queries; i++ {
		var wg sync.WaitGroup
		for _, c := range []*sql.Conn{one, two} {
			wg.Go(func() {
				var n int
				if err := c.QueryRowContext(ctx, "SELECT ?", i).Scan(&n); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	caught2, missed2 := busyPolls(t, scrapeMetrics(t, p))
	polls := (caught2 - caught1) + (missed2 - missed1)
	t.Logf("one client: %d caught, %d missed; two clients: %d polls", caught1-caught0, missed1-missed0, polls)
	if polls > 2*queries/10 {
		t.Fatalf("two busy clients, %d queries: %d waits polled, want (almost) none", 2*queries, polls)
	}
}
