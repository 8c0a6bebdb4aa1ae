package proxy_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/proxy"
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
	p := startProxy(t, statusPageConfig(t, r, testenv.Shared(t), healthInterval, healthTimeout))
	waitChecked(t, p)

	b := testenv.StartBrowser(t)
	b.SetViewport(t, statusViewportWidth, statusViewportHeight)
	b.Open(t, "http://"+p.AdminAddr()+"/")
	if got := b.Title(t); got != "shardgate status" {
		t.Fatalf("title %q, want shardgate status", got)
	}
	for _, id := range []string{"#status", "#fleet", "#trends", "#backends", "#sharding", "#digests"} {
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
	checkStatusPageLayout(t, p, b)

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

// The viewport the page is checked in: a laptop's browser window.
const (
	statusViewportWidth  = 1280
	statusViewportHeight = 900
	statusNarrowWidth    = 720
)

// statusPageDB is the sharded schema the status page test serves.
const statusPageDB = "status_page"

// statusPageConfig is a cluster main on r (its primary and replica, with
// the health checks given) and a cluster s1 on other, and the schema
// statusPageDB sharded over both: orders in 8 sub-tables, items placed
// like it, codes a reference table.
func statusPageConfig(t *testing.T, r *testenv.Replicated, other *testenv.Server, interval, timeout time.Duration) *config.Config {
	t.Helper()
	for _, srv := range []*testenv.Server{r.Primary, other} {
		srv.Exec(t, "DROP DATABASE IF EXISTS "+statusPageDB, "CREATE DATABASE "+statusPageDB)
	}
	yaml := fmt.Sprintf(`
listeners: [{address: "127.0.0.1:0"}]
admin: {http: "127.0.0.1:0"}
users:
  - {name: %s, password_hash: "%s", default_database: %s}
clusters:
  - name: main
    user: %s
    password: %s
    pool: {max_open: 4, wait_timeout: 10s}
    primary: {address: "%s"}
    replicas: [{address: "%s", weight: 1}]
    health: {interval: %s, timeout: %s}
  - {name: s1, user: %s, password: %s, pool: {max_open: 4, wait_timeout: 10s}, primary: {address: "%s"}}
schemas:
  - name: %s
    default_cluster: main
    tables:
      - {name: orders, shard_key: id, rule: mod, shards: [main, s1], sub_tables: 4}
      - {name: items, shard_key: id, like: orders}
      - {name: codes, type: reference}
`, appUser, hashOf(appPass), statusPageDB, testenv.User, testenv.Password, r.Primary.Addr, r.Replicas[0].Addr,
		interval, timeout, testenv.User, testenv.Password, other.Addr, statusPageDB)
	return parseConfig(t, yaml, "status-page.yaml")
}

// statusLongStatement is a statement whose digest text is much longer
// than its column on the page.
const statusLongStatement = "SELECT 1 AS first_column_with_a_long_name, 2 AS second_column_with_a_long_name, " +
	"3 AS third_column_with_a_long_name, 4 AS fourth_column_with_a_long_name, 5 AS fifth_column_with_a_long_name, " +
	"'some text' AS sixth_column_with_a_long_name, NOW() AS seventh_column_with_a_long_name"

// statusTraffic runs statements through the proxy until ctx ends, so
// that the charts have something to show: writes and point reads on the
// sharded table (each on one cluster), reads over both clusters, a long
// statement, and statements that fail (a table that does not exist).
func statusTraffic(ctx context.Context, t *testing.T, db *sql.DB, worker int) {
	for i := 0; ctx.Err() == nil; i++ {
		id := worker*1_000_000 + i
		for _, q := range []struct {
			sql    string
			args   []any
			broken bool
		}{
			{sql: "INSERT INTO orders (id, note) VALUES (?, ?)", args: []any{id, "note"}},
			{sql: "SELECT note FROM orders WHERE id = ?", args: []any{id}},
			{sql: "SELECT COUNT(*) FROM orders"},
			{sql: statusLongStatement},
			{sql: "SELECT * FROM no_such_table", broken: true},
		} {
			rows, err := db.QueryContext(ctx, q.sql, q.args...)
			if err == nil {
				for rows.Next() {
				}
				err = rows.Err()
				rows.Close()
			}
			if ctx.Err() != nil {
				return
			}
			if (err != nil) != q.broken {
				t.Errorf("%s: %v", q.sql, err)
				return
			}
		}
	}
}

// checkStatusPageLayout generates traffic until every chart has data,
// then checks the page as an operator sees it: every section and chart
// visible and within the viewport's width, no two of them overlapping,
// no text wrapped into a column of single characters, the sharding
// layout's <details> kept open across refreshes, and a screenshot that
// shows the charts' lines.
func checkStatusPageLayout(t *testing.T, p *proxy.Proxy, b *testenv.Browser) {
	t.Helper()
	db := openDB(t, proxyDSN(p, appUser, appPass, statusPageDB, ""))
	mustExec(t, db,
		"CREATE TABLE orders (id BIGINT PRIMARY KEY, note VARCHAR(64)) ENGINE=InnoDB",
		"CREATE TABLE items (id BIGINT PRIMARY KEY, name VARCHAR(64)) ENGINE=InnoDB",
		"CREATE TABLE codes (code VARCHAR(8) PRIMARY KEY) ENGINE=InnoDB")
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statusTraffic(ctx, t, db, w)
		}()
	}
	defer wg.Wait()
	defer stop()

	// Samples are taken every 2 s and the page refreshes every 2 s: wait
	// for lines of 3 samples at least on every chart, however slow the
	// machine.
	var missing []string
	waitFor(t, "every chart to show data", 90*time.Second, func() bool {
		b.Execute(t, chartsMissingData, &missing)
		return len(missing) == 0
	})
	stop()
	wg.Wait()

	b.Execute(t, `document.querySelector('details[data-key="sharding:`+statusPageDB+`.orders"]').open = true;`, nil)
	asOf, _ := b.Text(t, "#as-of")
	waitFor(t, "the page to refresh", 30*time.Second, func() bool {
		now, _ := b.Text(t, "#as-of")
		return now != asOf
	})
	var open bool
	b.Execute(t, `return document.querySelector('details[data-key="sharding:`+statusPageDB+`.orders"]').open;`, &open)
	if !open {
		t.Errorf("the sub-tables the operator opened closed at the next refresh")
	}
	subTables, _ := b.Text(t, "#sharding ul.subtables")
	if !strings.Contains(subTables, "orders_0007") {
		t.Errorf("the opened list of orders's sub-tables shows %q, want orders_0000 to orders_0007", subTables)
	}

	var layout struct {
		Problems []string
		Charts   []struct {
			ID         string
			X, Y, W, H float64
		}
		DPR float64
	}
	// A narrow window too (a laptop's half screen): the wide tables
	// scroll within their sections, the charts stack.
	b.SetViewport(t, statusNarrowWidth, statusViewportHeight)
	b.Execute(t, statusLayoutScript, &layout, statusNarrowWidth)
	for _, problem := range layout.Problems {
		t.Errorf("layout at %d px: %s", statusNarrowWidth, problem)
	}
	b.SetViewport(t, statusViewportWidth, statusViewportHeight)
	b.Execute(t, statusLayoutScript, &layout, statusViewportWidth)
	for _, problem := range layout.Problems {
		t.Errorf("layout: %s", problem)
	}
	// The screenshot is of the whole page in a viewport as tall as the
	// page: a capture beyond a shorter viewport lays the page out again
	// without its scroll bar, wider than where the charts were measured.
	var height int
	b.Execute(t, "return document.documentElement.scrollHeight;", &height)
	b.SetViewport(t, statusViewportWidth, height+200) // room for the page to grow when laid out wider
	b.Execute(t, statusLayoutScript, &layout, statusViewportWidth)
	for _, problem := range layout.Problems {
		t.Errorf("layout in a viewport as tall as the page: %s", problem)
	}
	shot := b.Screenshot(t)
	file := filepath.Join(t.ArtifactDir(), "status-page.png")
	if err := os.WriteFile(file, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("the status page's screenshot: %s", file)
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if n := distinctColours(img, img.Bounds()); n < 50 {
		t.Errorf("the screenshot has %d distinct colours: blank or nearly", n)
	}
	if len(layout.Charts) < 5 {
		t.Errorf("%d charts on the page, want per cluster QPS, latency, errors, the pools and the lag", len(layout.Charts))
	}
	scale := max(layout.DPR, 1)
	for _, c := range layout.Charts {
		// A few pixels around the plot: a line at 0 (no lag) is drawn on
		// its lower edge.
		area := image.Rect(int(c.X*scale)-4, int(c.Y*scale)-4, int((c.X+c.W)*scale)+4, int((c.Y+c.H)*scale)+4).Intersect(img.Bounds())
		if n := colouredPixels(img, area); n < 20 {
			t.Errorf("the plot of chart %s (%v in the screenshot) has %d coloured pixels: no line drawn", c.ID, area, n)
		}
	}
}

// chartsMissingData lists the charts that do not yet show a line of a
// few samples (none missing: every one does).
const chartsMissingData = `
const missing = [];
for (const id of ["chart-qps", "chart-latency", "chart-errors", "chart-lag"]) {
  if (!document.getElementById(id)) missing.push(id + ": not on the page");
}
const pools = document.querySelectorAll("figure.chart[id^=chart-pool-]");
if (pools.length < 3) missing.push(pools.length + " pool charts, want 3");
for (const f of document.querySelectorAll("figure.chart")) {
  const paths = f.querySelectorAll("path.series");
  if (!Array.from(paths).some(p => (p.getAttribute("d").match(/L/g) || []).length >= 2))
    missing.push(f.id + ": no line of 3 samples");
}
return missing;`

// statusLayoutScript checks the page's layout in the browser and returns
// what is wrong, the charts' boxes in the page (CSS pixels) and the
// device pixel ratio. A chart's box is its plot area, without its
// legend (whose coloured keys would be there with no data). arguments[0] is the viewport width expected.
const statusLayoutScript = `
const problems = [];
const vw = document.documentElement.clientWidth; // the viewport without its scroll bar
if (window.innerWidth !== arguments[0]) problems.push("the viewport is " + window.innerWidth + " px wide, want " + arguments[0]);
if (document.documentElement.scrollWidth > vw + 1)
  problems.push("the page scrolls sideways: " + document.documentElement.scrollWidth + " px wide in a " + vw + " px viewport");
const describe = el => el.id ? "#" + el.id : el.tagName.toLowerCase() + (el.className ? "." + el.className : "");
const visible = (el, what) => {
  const r = el.getBoundingClientRect();
  if (r.width < 1 || r.height < 1) problems.push(what + " has no box (" + r.width + "x" + r.height + ")");
  if (r.left < -0.5 || r.right > vw + 0.5) problems.push(what + " spans x " + r.left + ".." + r.right + ", outside the viewport's width " + vw);
  return r;
};
const sections = ["#status-section", "#fleet-section", "#trends", "#backends-section", "#sharding-section", "#digests-section"];
for (const sel of sections) {
  const el = document.querySelector(sel);
  if (!el) { problems.push(sel + " is not on the page"); continue; }
  visible(el, sel);
}
const charts = [];
for (const f of document.querySelectorAll("figure.chart")) {
  visible(f, "chart #" + f.id);
  const plot = f.querySelector("rect.plot");
  if (!plot) { problems.push("chart #" + f.id + " has no plot area"); continue; }
  const r = plot.getBoundingClientRect();
  charts.push({ID: f.id, X: r.left + window.scrollX, Y: r.top + window.scrollY, W: r.width, H: r.height});
}
const overlaps = (list, what) => {
  const boxes = list.filter(el => el.getClientRects().length > 0).map(el => [el, el.getBoundingClientRect()]);
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const [a, ra] = boxes[i], [b, rb] = boxes[j];
    const w = Math.min(ra.right, rb.right) - Math.max(ra.left, rb.left);
    const h = Math.min(ra.bottom, rb.bottom) - Math.max(ra.top, rb.top);
    if (w > 0.5 && h > 0.5) problems.push(what + ": " + describe(a) + " and " + describe(b) + " overlap by " + w.toFixed(1) + "x" + h.toFixed(1));
  }
};
overlaps([...document.body.children].filter(el => el.tagName !== "SCRIPT"), "top level");
overlaps([...document.getElementById("sections").children], "sections");
overlaps([...document.querySelectorAll("figure.chart")], "charts");
overlaps([...document.querySelectorAll("#status .tile")], "status tiles");
// Text wrapped into a column: an element with more than 3 characters
// rendered narrower than 2 characters, or on several lines of fewer than
// 4 characters each.
for (const el of document.querySelectorAll("h1, h2, p, th, td, dt, dd, summary, li, nav a")) {
  const text = el.textContent.trim();
  if (text.length <= 3 || el.getClientRects().length === 0) continue; // short, or not rendered (a closed <details>)
  const font = parseFloat(getComputedStyle(el).fontSize);
  const r = el.getBoundingClientRect();
  if (r.width < 1.2 * font) problems.push(describe(el) + " " + JSON.stringify(text.slice(0, 40)) + " is " + r.width.toFixed(1) + " px wide");
  const range = document.createRange();
  range.selectNodeContents(el);
  const tops = new Set();
  for (const lr of range.getClientRects()) if (lr.width > 0 && lr.height > 0) tops.add(Math.round(lr.top));
  const lines = Math.max(tops.size, 1);
  if (lines >= 3 && text.length / lines < 4)
    problems.push(describe(el) + " " + JSON.stringify(text.slice(0, 40)) + " is wrapped into " + lines + " lines of " + (text.length / lines).toFixed(1) + " characters");
}
return {Problems: problems.slice(0, 40), Charts: charts, DPR: window.devicePixelRatio};`

// distinctColours counts the colours of img within r.
func distinctColours(img image.Image, r image.Rectangle) int {
	seen := map[[3]uint32]bool{}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			seen[[3]uint32{cr >> 8, cg >> 8, cb >> 8}] = true
		}
	}
	return len(seen)
}

// colouredPixels counts the pixels of img within r that are neither
// background nor grey: the charts' lines (axes, grid and text are grey).
func colouredPixels(img image.Image, r image.Rectangle) int {
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			hi, lo := max(cr, cg, cb)>>8, min(cr, cg, cb)>>8
			if hi-lo > 60 {
				n++
			}
		}
	}
	return n
}

// The history the status page charts: every 2 s a sample with each
// cluster's statements per second, latency and errors since the sample
// before, and each server's pool.
func TestStatusHistory(t *testing.T) {
	srv := testenv.Shared(t)
	p := startProxy(t, proxyConfig(t, srv, ""))
	db := openDB(t, proxyDSN(p, appUser, appPass, "", ""))
	for range 50 {
		mustExec(t, db, "SELECT 1")
	}
	for range 5 {
		if _, err := db.Exec("SELECT * FROM mysql.no_such_table"); mysqlErrCode(err) != 1146 {
			t.Fatalf("a missing table: %v, want 1146", err)
		}
	}
	// The statements fall in one interval or two: wait until the samples
	// have counted all of them.
	var got struct {
		statements, errors uint64
		p50ms              float64
	}
	waitFor(t, "the history to count the statements", 60*time.Second, func() bool {
		got.statements, got.errors = 0, 0
		for _, s := range p.History() {
			for _, c := range s.Clusters {
				if c.Cluster != "main" {
					continue
				}
				got.statements += c.Statements
				got.errors += c.Errors
				if c.Statements > 0 {
					got.p50ms = c.P50 * 1000
				}
			}
		}
		return got.statements >= 55
	})
	samples := p.History()
	if got.statements != 55 || got.errors != 5 {
		t.Errorf("the samples count %d statements and %d errors on main, want 55 and 5", got.statements, got.errors)
	}
	if got.p50ms <= 0 || got.p50ms > 10_000 {
		t.Errorf("p50 %g ms, want a latency", got.p50ms)
	}
	last := samples[len(samples)-1]
	if len(last.Servers) != 1 || last.Servers[0].Cluster != "main" || last.Servers[0].Address != srv.Addr ||
		last.Servers[0].Max != 4 || last.Servers[0].Replica {
		t.Errorf("servers %+v, want main's primary with max_open 4", last.Servers)
	}
	if len(samples) > 1 {
		if d := last.At.Sub(samples[len(samples)-2].At); d < time.Second || d > 10*time.Second {
			t.Errorf("samples %s apart, want about 2 s", d)
		}
	}
}
