package admin

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/shardgate/shardgate/internal/frontend"
)

// The status page: the admin views as HTML tables, rendered on the server
// and refreshed in place by a small inline script. Its files are embedded,
// so the page needs nothing but this server (no build step, no CDN).
//
//go:embed status
var statusFiles embed.FS

// statusRefresh is how often the page fetches its sections again.
const statusRefresh = 2 * time.Second

// statusTopDigests is how many digests the page shows, by total latency.
const statusTopDigests = 20

// statusPage is the parsed page with its inline style and script, and the
// Content-Security-Policy that lets those two run and nothing else: the
// page shows text clients chose (statements), so even if one slipped past
// the escaping it could not run or send anything anywhere.
type statusPage struct {
	tmpl   *template.Template
	style  template.CSS
	script template.JS
	csp    string
}

// thePage is parsed once, at start; its files are compiled in, so a
// broken one is a build defect every test of this package catches.
var thePage = mustStatusPage()

func mustStatusPage() *statusPage {
	p, err := newStatusPage()
	if err != nil {
		panic(err)
	}
	return p
}

func newStatusPage() (*statusPage, error) {
	tmpl, err := template.ParseFS(statusFiles, "status/page.html")
	if err != nil {
		return nil, fmt.Errorf("status page template: %w", err)
	}
	style, err := statusFiles.ReadFile("status/page.css")
	if err != nil {
		return nil, fmt.Errorf("status page style: %w", err)
	}
	script, err := statusFiles.ReadFile("status/refresh.js")
	if err != nil {
		return nil, fmt.Errorf("status page script: %w", err)
	}
	csp := fmt.Sprintf("default-src 'none'; script-src '%s'; style-src '%s'; connect-src 'self'; "+
		"base-uri 'none'; form-action 'none'; frame-ancestors 'none'", cspHash(script), cspHash(style))
	return &statusPage{tmpl: tmpl, style: template.CSS(style), script: template.JS(script), csp: csp}, nil
}

// cspHash is a CSP source that allows exactly one inline element's text.
func cspHash(text []byte) string {
	sum := sha256.Sum256(text)
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// statusRoutes serves the page at / and its sections, the fragment the
// script swaps in, at /status/sections.
func statusRoutes(mux *http.ServeMux, src Source) {
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		thePage.serve(w, r, "page.html", src, func(s sections) any {
			return map[string]any{
				"RefreshSeconds": int(statusRefresh / time.Second),
				"RefreshMillis":  statusRefresh.Milliseconds(),
				"Style":          thePage.style,
				"Script":         thePage.script,
				"Sections":       s,
			}
		})
	})
	mux.HandleFunc("/status/sections", func(w http.ResponseWriter, r *http.Request) {
		thePage.serve(w, r, "sections", src, func(s sections) any { return s })
	})
}

// serve renders the named template with the sections now, to a buffer
// first, so that a failure answers 500 instead of half a page.
func (p *statusPage) serve(w http.ResponseWriter, r *http.Request, name string, src Source, data func(sections) any) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "read-only: actions are statements of the admin SQL port", http.StatusMethodNotAllowed)
		return
	}
	s, err := statusSections(src, time.Now())
	if err != nil {
		http.Error(w, "status page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	var b bytes.Buffer
	if err := p.tmpl.ExecuteTemplate(&b, name, data(s)); err != nil {
		http.Error(w, "status page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", p.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(b.Bytes())
}

// sections are the page's parts at one moment: the status counters as
// tiles, the fleet, the charts of the history, and the tables.
type sections struct {
	At       string
	Status   []statusTile
	Fleet    fleetSection
	Charts   []Chart
	Backends section
	Sharding []shardGroup
	Digests  section
}

// section is a view as an HTML table. Stateful sections start each row
// with a status cell whose text is also the row's CSS class.
type section struct {
	ID, Title string
	Columns   []string
	Stateful  bool
	Rows      []sectionRow
}

type sectionRow struct {
	State string
	Cells []sectionCell
}

// sectionCell is a value's text; Title, when set, is the full text of a
// cell the page may cut short.
type sectionCell struct {
	Text, Class, Title string
}

// Width is the number of the table's columns.
func (s section) Width() int {
	if s.Stateful {
		return len(s.Columns) + 1
	}
	return len(s.Columns)
}

// Heading is a column's name where a narrow column may break it: after
// its first underscore only, so that a heading takes at most two lines
// (pool_ in_use, not pool_ in_ use).
func (section) Heading(name string) template.HTML {
	return template.HTML(strings.Replace(template.HTMLEscapeString(name), "_", "_<wbr>", 1))
}

// statusTile is one counter of SHOW STATUS.
type statusTile struct {
	Name, Value string
}

// digestPageColumns are the columns of SHOW QUERY DIGESTS the page shows;
// the rest are in /api/digests.
var digestPageColumns = []string{"digest", "user", "db", "text", "count", "total_ms", "p50_ms", "p99_ms",
	"max_ms", "rows_sent", "errors", "shards_touched"}

// backendPageColumns are the columns of SHOW BACKENDS the page shows: up
// and state are in each row's status cell.
var backendPageColumns = []string{"cluster", "address", "role", "read_only", "replicating", "lag_seconds", "breaker",
	"weight", "pool_open", "pool_idle", "pool_in_use", "pool_waiting", "running", "errors", "wait_timeouts", "last_error"}

// statusSections renders the views the page shows.
func statusSections(src Source, now time.Time) (sections, error) {
	digests, err := DigestsView(src, "total_ms", true, statusTopDigests)
	if err != nil {
		return sections{}, err
	}
	return sections{
		At:       text(now),
		Status:   statusTiles(StatusView(src, now)),
		Fleet:    fleetOf(src.Fleet()),
		Charts:   statusCharts(src.History(), now),
		Backends: backendsSection(src),
		Sharding: shardGroups(src.Sharding()),
		Digests: sectionOf("digests", fmt.Sprintf("Top %d query digests by total latency", statusTopDigests),
			pick(digests, digestPageColumns...), nil),
	}, nil
}

// backendsSection is SHOW BACKENDS with the columns the page shows, each
// row's state read from the whole view.
func backendsSection(src Source) section {
	v := BackendsView(src)
	states := make([]string, len(v.Rows))
	for i, row := range v.Rows {
		states[i] = backendState(v, row)
	}
	s := sectionOf("backends", "Backends and pools", pick(v, backendPageColumns...), nil)
	s.Stateful = true
	for i := range s.Rows {
		s.Rows[i].State = states[i]
	}
	return s
}

// statusTiles are SHOW STATUS's rows, name and value.
func statusTiles(v *View) []statusTile {
	out := make([]statusTile, 0, len(v.Rows))
	for _, row := range v.Rows {
		val := "NULL"
		if c := cell(row[1]); c != nil {
			val = *c
		}
		out = append(out, statusTile{Name: fmt.Sprint(row[0]), Value: val})
	}
	return out
}

// pick is v with only the named columns, in that order.
func pick(v *View, names ...string) *View {
	var idx []int
	out := &View{}
	for _, n := range names {
		if i := slices.IndexFunc(v.Columns, func(c Column) bool { return c.Name == n }); i >= 0 {
			idx = append(idx, i)
			out.Columns = append(out.Columns, v.Columns[i])
		}
	}
	for _, row := range v.Rows {
		r := make([]any, len(idx))
		for j, i := range idx {
			r[j] = row[i]
		}
		out.Rows = append(out.Rows, r)
	}
	return out
}

// sectionOf renders a view's cells as the SQL port does (cell), NULL for
// unknown; state, when not nil, names each row's state.
func sectionOf(id, title string, v *View, state func(v *View, row []any) string) section {
	s := section{ID: id, Title: title, Stateful: state != nil}
	for _, c := range v.Columns {
		s.Columns = append(s.Columns, c.Name)
	}
	for _, row := range v.Rows {
		r := sectionRow{Cells: make([]sectionCell, len(row))}
		if state != nil {
			r.State = state(v, row)
		}
		for i, val := range row {
			r.Cells[i] = htmlCell(v.Columns[i], val)
		}
		s.Rows = append(s.Rows, r)
	}
	return s
}

// htmlCell is a value's text and class: c-<column> to style one column,
// num to right-align numbers, null for an unknown value.
func htmlCell(c Column, val any) sectionCell {
	class := "c-" + c.Name
	if c.Type == frontend.LocalInteger || c.Type == frontend.LocalDecimal {
		class += " num"
	}
	s := cell(val)
	if s == nil {
		return sectionCell{Text: "NULL", Class: class + " null"}
	}
	if c.Name == "text" || c.Name == "last_error" {
		// Cut short by the page's style (an ellipsis); the title shows it
		// whole.
		return sectionCell{Text: *s, Class: class + " long", Title: *s}
	}
	return sectionCell{Text: *s, Class: class}
}

// backendState is what an operator needs first about a server: up, down
// (its health check fails or its breaker took it out), offline (drained
// by SET BACKEND) or unchecked (no health check has finished yet).
func backendState(v *View, row []any) string {
	at := func(name string) any {
		i := slices.IndexFunc(v.Columns, func(c Column) bool { return c.Name == name })
		if i < 0 {
			return nil
		}
		return row[i]
	}
	switch up := at("up"); {
	case up == nil:
		return "unchecked"
	case up == false || at("breaker") == "open":
		return "down"
	case at("state") == "offline":
		return "offline"
	}
	return "up"
}
