//go:build race

package proxy_test

// raceEnabled: the race detector randomly drops sync.Pool items, so
// allocation counts are meaningless in race builds.
const raceEnabled = true
