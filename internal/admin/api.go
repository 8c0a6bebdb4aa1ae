package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// apiRoutes serves the admin views as JSON, read-only: the rows of the
// SQL views (views.go), each an object keyed by column name.
func apiRoutes(mux *http.ServeMux, src Source) {
	view := func(path string, f func(r *http.Request) (*View, error)) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, HEAD")
				http.Error(w, "read-only: actions are statements of the admin SQL port", http.StatusMethodNotAllowed)
				return
			}
			v, err := f(r)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			writeJSON(w, v)
		})
	}
	view("/api/backends", func(*http.Request) (*View, error) { return BackendsView(src), nil })
	view("/api/sessions", func(*http.Request) (*View, error) { return SessionsView(src, time.Now()), nil })
	view("/api/digests", func(r *http.Request) (*View, error) { return digestsRequest(src, r) })
	view("/api/sharding", func(*http.Request) (*View, error) { return ShardingView(src), nil })
	view("/api/config", func(*http.Request) (*View, error) { return ConfigView(src), nil })
	view("/api/version", func(r *http.Request) (*View, error) {
		ctx, cancel := context.WithTimeout(r.Context(), versionTimeout)
		defer cancel()
		return VersionView(ctx, src), nil
	})
	view("/api/status", func(*http.Request) (*View, error) { return StatusView(src, time.Now()), nil })
	view("/api/transactions", func(*http.Request) (*View, error) { return TransactionsView(src), nil })
	view("/api/proxies", func(*http.Request) (*View, error) { return ProxiesView(src), nil })
}

// digestsRequest is /api/digests?order=<column> [asc|desc]&limit=<n>.
func digestsRequest(src Source, r *http.Request) (*View, error) {
	q := r.URL.Query()
	var order string
	var desc bool
	if o := q.Get("order"); o != "" {
		var err error
		if order, desc, err = ParseOrder(o); err != nil {
			return nil, fmt.Errorf("order: %w", err)
		}
	}
	limit := -1
	if l := q.Get("limit"); l != "" {
		n, err := strconv.ParseUint(l, 10, 31)
		if err != nil {
			return nil, fmt.Errorf("limit: want a non-negative integer, got %q", l)
		}
		limit = int(n)
	}
	return DigestsView(src, order, desc, limit)
}

// writeJSON writes a view as an array of objects whose keys are in column
// order.
func writeJSON(w http.ResponseWriter, v *View) {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, row := range v.Rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n{")
		for j, val := range row {
			if j > 0 {
				b.WriteByte(',')
			}
			name, _ := json.Marshal(v.Columns[j].Name)
			b.Write(name)
			b.WriteByte(':')
			b.Write(jsonValue(val))
		}
		b.WriteByte('}')
	}
	b.WriteString("\n]\n")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b.Bytes())
}

// jsonValue renders a view's value: durations as numbers of milliseconds
// or seconds with three decimals, times as RFC 3339, unknown as null.
func jsonValue(v any) []byte {
	switch x := v.(type) {
	case Millis, Seconds, float64:
		return []byte(text(x))
	case time.Time:
		if x.IsZero() {
			return []byte("null")
		}
	}
	out, err := json.Marshal(v)
	if err != nil {
		out, _ = json.Marshal(fmt.Sprint(v))
	}
	return out
}
