package frontend

import (
	"runtime/debug"
	"sync"
	"time"
)

// After a burst of clients that then go idle, the heap still holds what
// their logins left behind and the Go runtime keeps freed memory mapped
// until its background scavenger gets to it: with 10,000 idle clients the
// proxy's RSS stood at 5.1 KB per client for minutes, while its live heap
// was 2.2 KB per client. So when many sessions have parked since memory was
// last given back, and no client connected or sent a command since the
// previous sweep, the proxy collects and returns freed memory to the OS at
// once. It costs one garbage collection, at a moment when no client waits
// for the proxy.
const (
	reliefParked = 1000
	reliefEvery  = 2 * time.Second // at most this often
)

// memoryRelief decides when to return memory; one per process.
type memoryRelief struct {
	mu           sync.Mutex
	low          int       // fewest parked sessions seen since the last relief
	prevActivity uint64    // connections and commands at the previous sweep
	last         time.Time // the last relief
	free         func()    // debug.FreeOSMemory; replaced in tests
}

var relief = memoryRelief{free: debug.FreeOSMemory}

// sweep is told, after each sweep, how many sessions are parked and how
// many connections and commands the proxy has served in all. It returns
// memory when the parked count has grown by reliefParked since the last
// time and nothing happened since the previous sweep: a burst is over.
func (m *memoryRelief) sweep(parked int, activity uint64, now time.Time) bool {
	m.mu.Lock()
	m.low = min(m.low, parked)
	due := parked-m.low >= reliefParked && activity == m.prevActivity && now.Sub(m.last) >= reliefEvery
	m.prevActivity = activity
	if due {
		m.low, m.last = parked, now
	}
	m.mu.Unlock()
	if due {
		m.free()
	}
	return due
}
