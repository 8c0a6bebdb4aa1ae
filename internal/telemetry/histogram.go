package telemetry

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// Histogram is a latency histogram safe for concurrent writers: a fixed
// log-linear array of atomic counters (as HdrHistogram lays out its
// buckets). Each power of two from 1µs (2^10 ns) to about 137s (2^37 ns)
// is split into 16 equal buckets, so a bucket's midpoint is within 3.1% of
// any value in it; below 1µs the buckets are 64ns wide, and the last one
// takes everything above. Recording is one atomic add.
type Histogram struct {
	counts [histBuckets]atomic.Uint64
}

const (
	histSubBits  = 4 // 16 buckets per power of two
	histSub      = 1 << histSubBits
	histMinExp   = 10 // 2^10 ns ≈ 1µs: the first power of two split
	histMaxExp   = 36 // 2^37 ns ≈ 137s: where the last one ends
	histGroups   = histMaxExp - histMinExp + 2
	histBuckets  = histGroups * histSub
	histLinWidth = 1 << (histMinExp - histSubBits) // width of the buckets below 1µs
)

// bucketOf returns the bucket of a duration of ns nanoseconds.
func bucketOf(ns int64) int {
	if ns < 1<<histMinExp {
		if ns < 0 {
			return 0
		}
		return int(ns) / histLinWidth
	}
	e := bits.Len64(uint64(ns)) - 1
	if e > histMaxExp {
		return histBuckets - 1
	}
	sub := int(uint64(ns)>>(e-histSubBits)) - histSub
	return (e-histMinExp+1)*histSub + sub
}

// bucketMid returns the midpoint of bucket i, in nanoseconds.
func bucketMid(i int) int64 {
	g, sub := i/histSub, i%histSub
	if g == 0 {
		return int64(sub*histLinWidth + histLinWidth/2)
	}
	shift := g + histMinExp - 1 - histSubBits
	lower := int64(histSub+sub) << shift
	return lower + int64(1)<<shift/2
}

// Record counts one duration.
func (h *Histogram) Record(d time.Duration) {
	h.counts[bucketOf(int64(d))].Add(1)
}

// Quantiles returns the durations under which the fractions qs (0..1,
// ascending) of the recorded durations fall, each a bucket's midpoint
// (0 when nothing was recorded). Concurrent writers may make the result a
// mix of before and after, never wrong by more than their records.
func (h *Histogram) Quantiles(qs ...float64) []time.Duration {
	var counts [histBuckets]uint64
	var total uint64
	for i := range counts {
		counts[i] = h.counts[i].Load()
		total += counts[i]
	}
	out := make([]time.Duration, len(qs))
	if total == 0 {
		return out
	}
	var seen uint64
	i := 0
	for qi, q := range qs {
		rank := uint64(math.Ceil(q * float64(total)))
		if rank < 1 {
			rank = 1
		}
		if rank > total {
			rank = total
		}
		for ; i < histBuckets; i++ {
			if seen+counts[i] >= rank {
				break
			}
			seen += counts[i]
		}
		if i == histBuckets {
			i = histBuckets - 1
		}
		out[qi] = time.Duration(bucketMid(i))
	}
	return out
}
