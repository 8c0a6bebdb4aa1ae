package testenv_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
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
	// The page fetches every 100 ms; the bound only ends a test that would
	// otherwise wait forever, a loaded machine may take several seconds.
	deadline := time.Now().Add(30 * time.Second)
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
// replaces between Text's look-up and its read (as a live page re-rendering
// does) without failing on the reference going stale: it looks the element
// up again, and reads the new one. The page replaces it when the test says
// so, at that very point, so that the stale reference happens on every run
// whatever the machine's load (a page replacing it on a timer made the
// test depend on how many WebDriver round trips fit between two changes).
// A page that replaces it at every look-up makes Text fail after
// StaleRetries look-ups rather than loop.
func TestBrowserTextOfReplacedElement(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>churn</title><div id="box"><p id="p">v0</p></div>
<script>let n = 0; function replace() { document.getElementById("box").innerHTML = '<p id="p">v' + (++n) + '</p>'; }</script>`)
	}))
	defer srv.Close()
	b := testenv.StartBrowser(t)
	b.Open(t, srv.URL)

	// Replaced after each of the first three look-ups: the fourth reads.
	const replaced = 3
	lookups := 0
	var replaceErr error
	testenv.SetAfterLookup(b, func() {
		lookups++
		if lookups <= replaced && replaceErr == nil {
			replaceErr = testenv.RunScript(b, "replace()")
		}
	})
	got, ok := b.Text(t, "#p")
	if replaceErr != nil {
		t.Fatalf("replacing the element: %v", replaceErr)
	}
	if !ok || got != fmt.Sprintf("v%d", replaced) || lookups != replaced+1 {
		t.Fatalf("#p replaced after each of %d look-ups: Text %q %v after %d look-ups, want v%d after %d",
			replaced, got, ok, lookups, replaced, replaced+1)
	}

	// Replaced after every look-up: Text gives up, failing the test.
	lookups = 0
	testenv.SetAfterLookup(b, func() {
		lookups++
		if replaceErr == nil {
			replaceErr = testenv.RunScript(b, "replace()")
		}
	})
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		rec.got, rec.ok = b.Text(rec, "#p")
	}()
	<-done
	if replaceErr != nil {
		t.Fatalf("replacing the element: %v", replaceErr)
	}
	if !strings.Contains(rec.fatal, "stale element reference") || lookups != testenv.StaleRetries {
		t.Fatalf("#p replaced after every look-up: Text %q %v, fatal %q after %d look-ups; want it to fail on the stale reference after %d",
			rec.got, rec.ok, rec.fatal, lookups, testenv.StaleRetries)
	}
}

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the goroutine (as testing's does) without failing the test.
type fatalRecorder struct {
	testing.TB
	fatal string
	got   string
	ok    bool
}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
