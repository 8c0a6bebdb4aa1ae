package testenv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// Browser is a headless Debian Chromium driven over WebDriver by its
// chromedriver, for tests of pages the proxy serves. Both come from
// scripts/install-deps.sh (packages chromium, chromium-driver); a missing
// one fails the test, it never skips.
type Browser struct {
	base    string // the session's WebDriver URL
	driver  *exec.Cmd
	session string
	profile string // Chromium's --user-data-dir

	// afterLookup, when set (by this package's tests), runs between Text's
	// look-up of an element and the read of its text: where a live page
	// replacing the element makes the reference stale.
	afterLookup func()
}

// StartBrowser starts chromedriver and a headless Chromium session; both
// end with the test.
func StartBrowser(tb testing.TB) *Browser {
	tb.Helper()
	chromium, err := lookBinary("chromium", "chromium-browser")
	if err != nil {
		tb.Fatalf("testenv: chromium not found (run scripts/install-deps.sh): %v", err)
	}
	driverBin, err := lookBinary("chromedriver")
	if err != nil {
		tb.Fatalf("testenv: chromedriver not found (run scripts/install-deps.sh): %v", err)
	}
	port, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	// The profile is the browser's own, removed by close once Chromium has
	// quit: a t.TempDir registered after close would be removed first
	// (cleanups run last-in first-out), under a browser still writing it.
	profile, err := os.MkdirTemp("", "shardgate-chromium-")
	if err != nil {
		tb.Fatal(err)
	}
	b := &Browser{driver: exec.Command(driverBin, "--port="+strconv.Itoa(port)), profile: profile}
	b.driver.Stdout, b.driver.Stderr = io.Discard, io.Discard
	if err := b.driver.Start(); err != nil {
		_ = os.RemoveAll(profile)
		tb.Fatalf("testenv: start chromedriver: %v", err)
	}
	tb.Cleanup(func() { b.close(tb) })
	root := fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := waitHTTP(root+"/status", 20*time.Second); err != nil {
		tb.Fatalf("testenv: chromedriver: %v", err)
	}
	// The flags keep Chromium off the network it cannot reach here (it
	// would try Google's hosts at every start) and let it run as root.
	caps := map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"browserName": "chrome",
		"goog:chromeOptions": map[string]any{
			"binary": chromium,
			"args": []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
				"--disable-quic", "--no-first-run", "--disable-background-networking",
				"--disable-component-update", "--disable-sync", "--user-data-dir=" + profile},
		},
	}}}
	var created struct {
		SessionID string `json:"sessionId"`
	}
	if err := call(http.MethodPost, root+"/session", caps, &created); err != nil {
		tb.Fatalf("testenv: start a chromium session: %v", err)
	}
	b.session = created.SessionID
	b.base = root + "/session/" + created.SessionID
	return b
}

func waitHTTP(url string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer within %s: %w", url, within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// call sends a WebDriver command and decodes its "value" into out.
func call(method, url string, body, out any) error {
	var rd io.Reader
	if body != nil {
		js, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var env struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("webdriver %s %s: %d %s", method, url, resp.StatusCode, raw)
	}
	if resp.StatusCode != http.StatusOK {
		var werr struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(env.Value, &werr)
		return &webdriverError{code: werr.Error, msg: fmt.Sprintf("webdriver %s %s: %d %s", method, url, resp.StatusCode, env.Value)}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(env.Value, out); err != nil {
		// Some commands answer {"value": {"sessionId": ...}} at the top.
		return json.Unmarshal(raw, out)
	}
	return nil
}

// webdriverError is a WebDriver command's error; code is the W3C error
// code, such as "no such element" or "stale element reference".
type webdriverError struct{ code, msg string }

func (e *webdriverError) Error() string { return e.msg }

// Open loads url in the browser and waits for the page to load.
func (b *Browser) Open(tb testing.TB, url string) {
	tb.Helper()
	if err := call(http.MethodPost, b.base+"/url", map[string]string{"url": url}, nil); err != nil {
		tb.Fatalf("testenv: browser open %s: %v", url, err)
	}
}

// Text returns the rendered text of the first element matching the CSS
// selector, or "" and false when there is none. A live page may replace
// the element between its look-up and the read of its text (WebDriver's
// "stale element reference"); Text then looks it up again.
func (b *Browser) Text(tb testing.TB, selector string) (string, bool) {
	tb.Helper()
	for attempt := 1; ; attempt++ {
		var el map[string]string
		if err := call(http.MethodPost, b.base+"/element", map[string]string{"using": "css selector", "value": selector}, &el); err != nil {
			return "", false
		}
		var id string
		for _, v := range el { // the key is the W3C element identifier
			id = v
		}
		if b.afterLookup != nil {
			b.afterLookup()
		}
		var text string
		err := call(http.MethodGet, b.base+"/element/"+id+"/text", nil, &text)
		var werr *webdriverError
		switch {
		case err == nil:
			return text, true
		case errors.As(err, &werr) && werr.code == "stale element reference" && attempt < staleRetries:
			continue
		}
		tb.Fatalf("testenv: browser text of %s: %v", selector, err)
	}
}

// staleRetries bounds Text's look-ups of an element a page keeps replacing.
const staleRetries = 20

// Title returns the page's title.
func (b *Browser) Title(tb testing.TB) string {
	tb.Helper()
	var title string
	if err := call(http.MethodGet, b.base+"/title", nil, &title); err != nil {
		tb.Fatalf("testenv: browser title: %v", err)
	}
	return title
}

// Execute runs script in the page as a function body (its arguments in
// the array arguments) and decodes what it returns into out (nil: not
// read). A script that throws fails the test.
func (b *Browser) Execute(tb testing.TB, script string, out any, args ...any) {
	tb.Helper()
	if args == nil {
		args = []any{}
	}
	if err := call(http.MethodPost, b.base+"/execute/sync", map[string]any{"script": script, "args": args}, out); err != nil {
		tb.Fatalf("testenv: browser script: %v", err)
	}
}

// SetViewport sizes the browser window so that the page's viewport is
// width by height CSS pixels (the window's frame, if any, added).
func (b *Browser) SetViewport(tb testing.TB, width, height int) {
	tb.Helper()
	var frame struct{ W, H int }
	b.Execute(tb, "return {W: window.outerWidth - window.innerWidth, H: window.outerHeight - window.innerHeight};", &frame)
	rect := map[string]int{"width": width + frame.W, "height": height + frame.H}
	if err := call(http.MethodPost, b.base+"/window/rect", rect, nil); err != nil {
		tb.Fatalf("testenv: browser window size: %v", err)
	}
	// The page sees the new size, and lays itself out again, a moment
	// later: wait for it, then for a frame to be rendered.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var size struct{ W, H int }
		b.Execute(tb, "return {W: window.innerWidth, H: window.innerHeight};", &size)
		if size.W == width && size.H == height {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("testenv: browser viewport is %dx%d, want %dx%d", size.W, size.H, width, height)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := call(http.MethodPost, b.base+"/execute/async", map[string]any{
		"script": "const done = arguments[arguments.length - 1]; requestAnimationFrame(() => requestAnimationFrame(() => done(true)));",
		"args":   []any{}}, nil); err != nil {
		tb.Fatalf("testenv: browser frame after resizing: %v", err)
	}
}

// Screenshot returns a PNG of the whole page, beyond the viewport too,
// taken through the DevTools protocol (WebDriver's own screenshot is of
// the viewport only).
func (b *Browser) Screenshot(tb testing.TB) []byte {
	tb.Helper()
	var metrics struct {
		Content struct{ Width, Height float64 } `json:"cssContentSize"`
	}
	b.cdp(tb, "Page.getLayoutMetrics", map[string]any{}, &metrics)
	var shot struct {
		Data []byte `json:"data"` // base64 in JSON
	}
	b.cdp(tb, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true,
		"clip": map[string]any{"x": 0, "y": 0, "width": metrics.Content.Width, "height": metrics.Content.Height, "scale": 1}}, &shot)
	if len(shot.Data) == 0 {
		tb.Fatalf("testenv: browser screenshot: no image")
	}
	return shot.Data
}

// cdp sends a DevTools protocol command through chromedriver.
func (b *Browser) cdp(tb testing.TB, cmd string, params, out any) {
	tb.Helper()
	if err := call(http.MethodPost, b.base+"/goog/cdp/execute", map[string]any{"cmd": cmd, "params": params}, out); err != nil {
		tb.Fatalf("testenv: browser %s: %v", cmd, err)
	}
}

func (b *Browser) close(tb testing.TB) {
	if b.session != "" {
		_ = call(http.MethodDelete, b.base, nil, nil)
	}
	if b.driver.Process != nil {
		_ = b.driver.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = b.driver.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = b.driver.Process.Kill()
			<-done
		}
	}
	removeProfile(tb, b.profile)
}

// removeProfile removes Chromium's profile, retrying for a while: helper
// processes of a browser that has just quit can still be closing files in it.
func removeProfile(tb testing.TB, dir string) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := os.RemoveAll(dir)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Errorf("testenv: remove the chromium profile %s: %v", dir, err)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
