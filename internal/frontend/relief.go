package frontend

import (
	"runtime"
	"runtime/debug"
	"sync"
	"time"
)

// After a burst of clients, the heap still holds what their logins left
// behind and the Go runtime keeps freed memory mapped until its background
// scavenger gets to it, minutes later: with 10,000 idle clients the proxy's
// RSS stood at 5.1 KB per client while its live heap was 2.2 KB per
// client, and after a flood of logins that had all gone an idle proxy sat
// at +62 MB with a live heap of 2 MB. So when a burst is over (many
// sessions parked, many clients connected, or many connections gone, since
// memory was last given back) and no client connected or sent a command
// since the previous sweep, the proxy collects and returns freed memory
// to the OS at once. It costs two garbage collections, at a moment when
// no client waits for the proxy. Connections gone count for the logins
// that end after the burst that brought them: a flood of wrong passwords
// is quiet long before its logins, each waiting for its failure delay,
// give back what they hold (issue 23: 2,000 of them left the RSS 36 MB
// above its start, 30 s after the flood).
const (
	reliefBurst = 1000            // parked sessions, connections made or gone
	reliefEvery = 2 * time.Second // at most this often
)

// memoryRelief decides when to return memory; one per listener.
type memoryRelief struct {
	mu           sync.Mutex
	low          int       // fewest parked sessions seen since the last relief
	high         int       // most clients connected since the last relief
	connects     uint64    // connections accepted by the last relief
	prevActivity uint64    // connections and commands at the previous sweep
	last         time.Time // the last relief
	free         func()    // returnMemory; replaced in tests
}

func newMemoryRelief() *memoryRelief { return &memoryRelief{free: returnMemory} }

// returnMemory collects twice, so that buffers idle in sync.Pools (which a
// collection only moves to their victim cache) go too, and gives what is
// free back to the OS.
func returnMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

// sweep is told, after each sweep, how many sessions are parked, how many
// clients are connected, how many have connected in all, and how many
// connections and commands the proxy has served in all. It returns memory
// when, since the last time, the parked count has grown by reliefBurst,
// or as many clients connected, or the clients connected fell by as many
// from their peak, and nothing happened since the previous sweep.
func (m *memoryRelief) sweep(parked, clients int, connects, activity uint64, now time.Time) bool {
	m.mu.Lock()
	m.low = min(m.low, parked)
	m.high = max(m.high, clients)
	burst := parked-m.low >= reliefBurst || connects-m.connects >= reliefBurst || m.high-clients >= reliefBurst
	due := burst && activity == m.prevActivity && now.Sub(m.last) >= reliefEvery
	m.prevActivity = activity
	if due {
		m.low, m.high, m.connects, m.last = parked, clients, connects, now
	}
	m.mu.Unlock()
	if due {
		m.free()
	}
	return due
}
