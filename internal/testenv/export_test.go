package testenv

import "net/http"

// StaleRetries is staleRetries, for the tests of Text.
const StaleRetries = staleRetries

// SetAfterLookup makes b run f between Text's look-up of an element and
// the read of its text.
func SetAfterLookup(b *Browser, f func()) { b.afterLookup = f }

// RunScript runs a script in the page b shows.
func RunScript(b *Browser, script string) error {
	return call(http.MethodPost, b.base+"/execute/sync", map[string]any{"script": script, "args": []any{}}, nil)
}
