package admin

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/telemetry"
)

// pageSource is a Source with what the status page reads; the page calls
// nothing else (the embedded nil interface would panic if it did).
type pageSource struct {
	Source
	backends []Backend
	digests  []telemetry.DigestStat
	sharding []SubTable
	history  []Sample
	fleet    []Proxy
}

func (s *pageSource) Backends() []Backend             { return s.backends }
func (s *pageSource) Digests() []telemetry.DigestStat { return s.digests }
func (s *pageSource) Sharding() []SubTable            { return s.sharding }
func (s *pageSource) History() []Sample               { return s.history }
func (s *pageSource) Fleet() []Proxy                  { return s.fleet }
func (s *pageSource) Status() Status {
	return Status{Started: time.Now().Add(-time.Minute), Queries: 600, Clients: 3}
}

const hostile = `SELECT '<script>alert("x")</script>' FROM t`

func newPageSource() *pageSource {
	lag := 2 * time.Second
	src := &pageSource{
		backends: []Backend{
			{Cluster: "main", Address: "10.0.0.1:3306", Writer: true, Checked: true, Up: true, Open: 4, Idle: 3, InUse: 1},
			{Cluster: "main", Address: "10.0.0.2:3306", Checked: true, Up: false, BreakerOpen: true, Lag: &lag,
				LastError: "connect: connection refused"},
			{Cluster: "main", Address: "10.0.0.3:3306", Checked: true, Up: true, Offline: true},
			{Cluster: "main", Address: "10.0.0.4:3306"},
		},
		sharding: []SubTable{{Schema: "shop", Table: "orders", Type: "sharded", Rule: "hash", ShardKey: "customer_id",
			SubTable: "orders_0000", Cluster: "shard0"}},
	}
	at := time.Now().Add(-20 * time.Second)
	for i := range 10 {
		src.history = append(src.history, Sample{At: at.Add(time.Duration(i) * 2 * time.Second),
			Clusters: []ClusterSample{{Cluster: "main", QPS: float64(100 + i), P50: 0.001, P99: 0.004, ErrorsPS: 0.5}},
			Servers: []ServerSample{{Cluster: "main", Address: "10.0.0.1:3306", InUse: 1, Idle: 3, Max: 4},
				{Cluster: "main", Address: "10.0.0.2:3306", Replica: true, Lag: 2 * time.Second, LagKnown: i%3 != 0}}})
	}
	// 25 digests whose total latency grows with i, the hostile one the
	// slowest.
	for i := range 25 {
		text := fmt.Sprintf("SELECT c FROM t%02d WHERE id = ?", i)
		if i == 24 {
			text = hostile
		}
		src.digests = append(src.digests, telemetry.DigestStat{Digest: uint64(i + 1), Text: text, User: "app",
			Count: 10, Total: time.Duration(i+1) * time.Millisecond})
	}
	return src
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func statusServer(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	statusRoutes(mux, newPageSource())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// The page and its sections: each view's table under its id, backend
// rows classed by state, the top 20 digests by total latency, every value
// escaped, and the links to the rest of the admin port.
func TestStatusPage(t *testing.T) {
	srv := statusServer(t)
	page, body := get(t, srv.URL+"/")
	if page.StatusCode != http.StatusOK || page.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /: %d %s", page.StatusCode, page.Header.Get("Content-Type"))
	}
	for _, want := range []string{`<title>shardgate status</title>`,
		`<noscript><meta http-equiv="refresh" content="2"></noscript>`, `data-refresh-ms="2000"`,
		`href="/api/backends"`, `href="/api/digests"`, `href="/metrics"`, `href="/debug/pprof/"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	_, fragment := get(t, srv.URL+"/status/sections")
	if strings.Contains(fragment, "<html") || strings.Contains(fragment, "<script") {
		t.Errorf("the sections fragment is more than the sections:\n%s", fragment)
	}
	for name, html := range map[string]string{"page": body, "sections": fragment} {
		t.Run(name, func(t *testing.T) {
			for _, id := range []string{"backends", "sharding", "digests"} {
				if !strings.Contains(html, `<table id="`+id+`">`) {
					t.Errorf("no table #%s", id)
				}
			}
			for _, want := range []string{`<dl id="status" class="tiles">`, `<section id="fleet-section">`, `<section id="trends">`,
				`<figure id="chart-qps" class="chart"><svg`, `<figure id="chart-latency" class="chart"><svg`,
				`<figure id="chart-errors" class="chart"><svg`, `<figure id="chart-pool-main-10-0-0-1-3306" class="chart"><svg`,
				`<figure id="chart-lag" class="chart"><svg`} {
				if !strings.Contains(html, want) {
					t.Errorf("lacks %s", want)
				}
			}
			for addr, state := range map[string]string{"10.0.0.1:3306": "up", "10.0.0.2:3306": "down",
				"10.0.0.3:3306": "offline", "10.0.0.4:3306": "unchecked"} {
				row := regexp.MustCompile(`<tr class="` + state + `"><td class="status">` + state + `</td><td class="c-cluster">main</td><td class="c-address">` + regexp.QuoteMeta(addr) + `</td>`)
				if !row.MatchString(html) {
					t.Errorf("no %s row for %s", state, addr)
				}
			}
			for _, want := range []string{`<td class="c-lag_seconds num">2</td>`, `<td class="c-lag_seconds num null">NULL</td>`,
				`<span class="c-sub_table">orders_0000</span>`, `<td class="c-total_ms num">25.000</td>`,
				`<div class="tile c-queries"><dt>queries</dt><dd>600</dd></div>`} {
				if !strings.Contains(html, want) {
					t.Errorf("lacks %s", want)
				}
			}
			if strings.Contains(html, `<script>alert`) || !strings.Contains(html, `title="SELECT &#39;&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&#39; FROM t">SELECT &#39;&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&#39; FROM t</td>`) {
				t.Errorf("the hostile statement is not escaped")
			}
			digests := html[strings.Index(html, `<table id="digests">`):]
			if n := strings.Count(digests, `<td class="c-digest">`); n != 20 {
				t.Errorf("%d digests shown, want the top 20", n)
			}
			if strings.Contains(digests, "FROM t04 ") || !strings.Contains(digests, "FROM t05 ") {
				t.Errorf("the digests shown are not the 20 with the most total latency")
			}
		})
	}
}

// The page's inline style and script are exactly those its
// Content-Security-Policy allows (a browser would not run them otherwise),
// and the policy allows nothing else and no other origin.
func TestStatusPageContentSecurityPolicy(t *testing.T) {
	resp, body := get(t, statusServer(t).URL+"/")
	csp := resp.Header.Get("Content-Security-Policy")
	for _, el := range []string{"script", "style"} {
		m := regexp.MustCompile(`(?s)<`+el+`>(.*?)</`+el+`>`).FindAllStringSubmatch(body, -1)
		if len(m) != 1 {
			t.Fatalf("%d inline %s elements, want 1", len(m), el)
		}
		if want := el + "-src '" + cspHash([]byte(m[0][1])) + "'"; !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	for _, want := range []string{"default-src 'none'", "connect-src 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
}

func TestStatusPageRequests(t *testing.T) {
	srv := statusServer(t)
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/", http.StatusOK},
		{http.MethodHead, "/", http.StatusOK},
		{http.MethodGet, "/status/sections", http.StatusOK},
		{http.MethodPost, "/", http.StatusMethodNotAllowed},
		{http.MethodPost, "/status/sections", http.StatusMethodNotAllowed},
		{http.MethodGet, "/nothing", http.StatusNotFound},
	} {
		req, err := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
		}
	}
}

// The fleet: each instance with its configuration revision, the one most
// run named, and an instance that runs another shown as differing; alone,
// the section says so. The sharding: one line per table with its
// placement, its sub-tables listed only in a <details>.
func TestStatusPageFleetAndSharding(t *testing.T) {
	src := newPageSource()
	render := func() string {
		s, err := statusSections(src, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := thePage.tmpl.ExecuteTemplate(&b, "sections", s); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if html := render(); !strings.Contains(html, `<p id="fleet" class="note">Not part of a fleet`) {
		t.Errorf("without a fleet the section does not say so")
	}

	started := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	src.fleet = []Proxy{
		{ID: "sg-b", Addr: "10.0.1.2:6033", Version: "1.4.0", Started: started, ConfigRevision: 42, ConfigChecksum: "9f86d081884c7d65"},
		{ID: "sg-a", Addr: "10.0.1.1:6033", Version: "1.4.0", Started: started, ConfigRevision: 42, ConfigChecksum: "9f86d081884c7d65", Self: true},
		{ID: "sg-c", Addr: "10.0.1.3:6033", Version: "1.3.9", Started: started, ConfigRevision: 41, ConfigChecksum: "60303ae22b998861"},
	}
	var subs []SubTable
	subs = append(subs, SubTable{Schema: "shop", Table: "*", Type: "unlisted", Cluster: "s0"})
	for i := range 8 {
		subs = append(subs, SubTable{Schema: "shop", Table: "orders", Type: "sharded", Rule: "hash", ShardKey: "customer_id",
			SubTable: fmt.Sprintf("orders_%04d", i), Cluster: []string{"s0", "s1"}[i/4]})
	}
	subs = append(subs, SubTable{Schema: "shop", Table: "codes", Type: "reference", SubTable: "codes", Cluster: "s0"},
		SubTable{Schema: "shop", Table: "codes", Type: "reference", SubTable: "codes", Cluster: "s1"})
	src.sharding = subs
	html := render()

	for _, want := range []string{
		`<p class="agreement disagree">1 of 3 instances run another configuration than revision 42 (checksum 9f86d081884c7d65).</p>`,
		`<tr class="agrees self"><td>sg-a (this one)</td><td>10.0.1.1:6033</td>`,
		`<tr class="disagrees"><td>sg-c</td><td>10.0.1.3:6033</td><td>1.3.9</td><td>2026-11-28 09:00:00.000</td><td class="num">41</td><td title="60303ae22b998861">60303ae22b99…</td><td class="status">differs</td></tr>`,
		`<td>other tables</td><td>unlisted</td><td></td><td></td><td>s0</td><td>—</td>`,
		`<td>orders</td><td>sharded</td><td>hash</td><td>customer_id</td><td>s0 ×4 · s1 ×4</td><td><details data-key="sharding:shop.orders"><summary>8 sub-tables</summary>`,
		`<li><span class="c-sub_table">orders_0007</span> <span class="c-cluster">s1</span></li>`,
		`<td>codes</td><td>reference</td><td></td><td></td><td>s0 · s1</td><td><details data-key="sharding:shop.codes"><summary>2 copies</summary>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("lacks %s", want)
		}
	}
	sharding := html[strings.Index(html, `<table id="sharding">`):]
	sharding = sharding[:strings.Index(sharding, "</table>")]
	if n := strings.Count(sharding, "<tr"); n != 4 {
		t.Errorf("the sharding table has %d rows, want a heading and one per table (3)", n)
	}

	src.fleet[2].ConfigRevision, src.fleet[2].ConfigChecksum = 42, "9f86d081884c7d65"
	if html := render(); !strings.Contains(html, `<p class="agreement agree">All 3 instances run configuration revision 42 (checksum 9f86d081884c7d65).</p>`) ||
		strings.Contains(html, "disagrees") {
		t.Errorf("a fleet that agrees is not shown so")
	}
}
