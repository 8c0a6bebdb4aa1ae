package proxy_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/proxy"
)

// apiGet fetches an /api/ endpoint of the admin HTTP port and decodes its
// rows.
func apiGet(t *testing.T, p *proxy.Proxy, path string) []map[string]any {
	t.Helper()
	resp, err := http.Get("http://" + p.AdminAddr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %s %s\n%s", path, resp.Status, resp.Header.Get("Content-Type"), body)
	}
	var rows []map[string]any
	if err := json.Unmarshal(body, &rows); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, body)
	}
	return rows
}

// sameRows checks that the JSON rows are the SQL view's, in the columns
// given (the others change between two looks: pools, times).
func sameRows(t *testing.T, what string, api []map[string]any, sqlRows []map[string]string, cols ...string) {
	t.Helper()
	if len(api) != len(sqlRows) {
		t.Fatalf("%s: %d rows over HTTP, %d over SQL:\n%v\n%v", what, len(api), len(sqlRows), api, sqlRows)
	}
	for i := range api {
		for _, c := range cols {
			got := api[i][c]
			want := sqlRows[i][c]
			if s, ok := got.(bool); ok {
				got = map[bool]string{true: "yes", false: "no"}[s]
			}
			if got == nil {
				got = ""
			}
			if fmt.Sprint(got) != want {
				t.Errorf("%s row %d %s: %v over HTTP, %q over SQL", what, i, c, got, want)
			}
		}
	}
}

// Each /api/ endpoint answers the rows of its SQL view, as JSON, and
// only to GET.
func TestAdminAPI(t *testing.T) {
	srv, p, db, client := startAdminProxy(t)
	mustExec(t, client, "SELECT 1")

	sameRows(t, "backends", apiGet(t, p, "/api/backends"), adminTable(t, db, "SHOW BACKENDS"),
		"cluster", "address", "role", "up", "read_only", "breaker", "state", "weight", "last_error")
	sameRows(t, "sessions", apiGet(t, p, "/api/sessions"), adminTable(t, db, "SHOW SESSIONS"), "id", "user", "client")
	sameRows(t, "config", apiGet(t, p, "/api/config"), adminTable(t, db, "SHOW CONFIG"), "key", "value")
	sameRows(t, "sharding", apiGet(t, p, "/api/sharding"), adminTable(t, db, "SHOW SHARDING"), "schema", "table", "sub_table", "cluster")
	sameRows(t, "version", apiGet(t, p, "/api/version"), adminTable(t, db, "SHOW VERSION"), "component", "address", "version")
	sameRows(t, "status", apiGet(t, p, "/api/status"), adminTable(t, db, "SHOW STATUS"), "name")
	sameRows(t, "digests", apiGet(t, p, "/api/digests?order="+url.QueryEscape("count desc")+"&limit=3"),
		adminTable(t, db, "SHOW QUERY DIGESTS ORDER BY count DESC LIMIT 3"), "digest", "user", "db", "text", "count")

	backends := apiGet(t, p, "/api/backends")
	if b := backends[0]; b["up"] != true || b["address"] != srv.Addr || b["pool_waiting"] != float64(0) {
		t.Errorf("/api/backends: %v, want typed values", b)
	}
	status := map[string]any{}
	for _, r := range apiGet(t, p, "/api/status") {
		status[r["name"].(string)] = r["value"]
	}
	if n, ok := status["queries"].(float64); !ok || n < 1 {
		t.Errorf("/api/status queries = %v, want a number ≥ 1", status["queries"])
	}

	for path, want := range map[string]int{
		"/api/digests?order=nope":             http.StatusBadRequest,
		"/api/digests?limit=-1":               http.StatusBadRequest,
		"/api/digests?order=count%20sideways": http.StatusBadRequest,
	} {
		resp, err := http.Get("http://" + p.AdminAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %s, want %d", path, resp.Status, want)
		}
	}
	resp, err := http.Post("http://"+p.AdminAddr()+"/api/backends", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /api/backends: %s, want 405 (read-only)", resp.Status)
	}
}
