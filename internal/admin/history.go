package admin

import (
	"sync"
	"time"
)

// Sample is the proxy at one moment as the status page's charts show it:
// per cluster the rates and latencies since the sample before, per server
// its pool and replication lag. A sampler takes one every HistoryEvery
// from counters the statement path updates anyway, so keeping a history
// costs statements nothing.
type Sample struct {
	At       time.Time
	Clusters []ClusterSample
	Servers  []ServerSample
}

// ClusterSample is a cluster's statements since the sample before.
// Cluster "*" is the statements that ran on several clusters, "-" those
// the proxy answered itself.
type ClusterSample struct {
	Cluster            string
	Statements, Errors uint64  // in the interval
	QPS                float64 // statements per second
	ErrorsPS           float64 // statements answered with an error, per second
	P50, P99           float64 // latency in seconds; NaN when no statement ran
}

// ServerSample is a backend server's pool and replication.
type ServerSample struct {
	Cluster, Address string
	Replica          bool // replication is configured on it
	InUse, Idle, Max int  // pool connections; Max is pool.max_open
	Lag              time.Duration
	LagKnown         bool
}

// HistoryEvery is how often the proxy samples its history, and
// HistoryLength how many samples it keeps: ten minutes.
const (
	HistoryEvery  = 2 * time.Second
	HistoryLength = 300
)

// History is a ring of the last samples. One goroutine adds, any number
// read; a sample is never changed once added.
type History struct {
	mu      sync.Mutex
	samples []Sample // a ring: next is the oldest once it is full
	next    int
	full    bool
}

// NewHistory keeps the last n samples (n >= 1).
func NewHistory(n int) *History {
	return &History{samples: make([]Sample, max(n, 1))}
}

// Add appends a sample, forgetting the oldest when full.
func (h *History) Add(s Sample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.samples[h.next] = s
	h.next++
	if h.next == len(h.samples) {
		h.next, h.full = 0, true
	}
}

// Samples returns the samples kept, oldest first.
func (h *History) Samples() []Sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.full {
		return append([]Sample(nil), h.samples[:h.next]...)
	}
	out := make([]Sample, 0, len(h.samples))
	out = append(out, h.samples[h.next:]...)
	return append(out, h.samples[:h.next]...)
}
