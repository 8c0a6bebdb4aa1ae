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

// TestBrowserTextOfReplacedElement: Text reads an element that the page
// keeps replacing (as a live page re-rendering does) without failing on
// the reference it looked up going stale.
func TestBrowserTextOfReplacedElement(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>churn</title><div id="box"><p id="p">v0</p></div>
<script>let n = 0; setInterval(() => { document.getElementById("box").innerHTML = '<p id="p">v' + (++n) + '</p>'; }, 20);</script>`)
	}))
	defer srv.Close()
	b := testenv.StartBrowser(t)
	b.Open(t, srv.URL)
	for range 200 {
		if got, ok := b.Text(t, "#p"); !ok || !strings.HasPrefix(got, "v") {
			t.Fatalf("#p: %q %v", got, ok)
		}
	}
}
