package testenv_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
)

// TestBrowserSeesScriptedChanges: the browser runs a page's script, and
// Text reads what the script rendered after it changed.
func TestBrowserSeesScriptedChanges(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/n" {
			fmt.Fprint(w, n.Load())
			return
		}
		fmt.Fprint(w, `<!doctype html><title>probe</title><p id="n">none</p>
<script>setInterval(async () => { document.getElementById("n").textContent = "n=" + await (await fetch("/n")).text(); }, 100);</script>`)
	}))
	defer srv.Close()
	b := testenv.StartBrowser(t)
	b.Open(t, srv.URL)
	if got := b.Title(t); got != "probe" {
		t.Fatalf("title %q, want probe", got)
	}
	n.Store(42)
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, ok := b.Text(t, "#n")
		if ok && strings.TrimSpace(got) == "n=42" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page shows %q, want n=42", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
