package backend

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/shardgate/shardgate/internal/testenv"
)

// gatherPool scrapes p's collector and returns its metric families by name.
func gatherPool(t *testing.T, p *Pool) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewPoolCollector(p))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	return byName
}

func waitHistogram(t *testing.T, p *Pool) *dto.Histogram {
	t.Helper()
	mf := gatherPool(t, p)["shardgate_backend_pool_wait_seconds"]
	if mf == nil || len(mf.Metric) != 1 {
		t.Fatalf("shardgate_backend_pool_wait_seconds: %v, want one histogram", mf)
	}
	m := mf.Metric[0]
	labels := map[string]string{}
	for _, l := range m.Label {
		labels[l.GetName()] = l.GetValue()
	}
	if labels["pool"] != p.Name || labels["addr"] != p.Addr() {
		t.Errorf("wait histogram labels %v, want pool=%s addr=%s", labels, p.Name, p.Addr())
	}
	return m.Histogram
}

// An acquire that queues behind max_open is observed in the wait
// histogram with the time it waited; one served at once is not.
func TestPoolWaitSecondsHistogram(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	p := newPool(t, "test/waithist", dialConfig(srv), PoolConfig{MaxOpen: 1, WaitTimeout: 5 * time.Second, MaxWaiters: 5})
	a := acquire(t, p, false)
	p.Release(a)
	a = acquire(t, p, false) // from the idle stack: no wait
	if h := waitHistogram(t, p); h.GetSampleCount() != 0 {
		t.Fatalf("acquires that did not wait were observed: count %d", h.GetSampleCount())
	}

	const held = 50 * time.Millisecond
	ch := acquireAsync(p, context.Background(), false)
	waitOpen(t, p, 1, 0, 1)
	time.Sleep(held)
	p.Release(a)
	got := <-ch
	if got.err != nil {
		t.Fatalf("waiter: %v", got.err)
	}
	h := waitHistogram(t, p)
	if h.GetSampleCount() != 1 || h.GetSampleSum() < held.Seconds() || h.GetSampleSum() > 5 {
		t.Errorf("after one wait of at least %v: count %d, sum %gs", held, h.GetSampleCount(), h.GetSampleSum())
	}

	// A wait that times out is observed too: the statement was held up.
	short := newPool(t, "test/waithist-timeout", dialConfig(srv), PoolConfig{MaxOpen: 1, WaitTimeout: 100 * time.Millisecond, MaxWaiters: 5})
	b := acquire(t, short, false)
	if c, err := short.Acquire(context.Background(), false); err == nil {
		short.Release(c)
		t.Fatal("Acquire on a full pool succeeded")
	}
	short.Release(b)
	if h := waitHistogram(t, short); h.GetSampleCount() != 1 || h.GetSampleSum() < 0.09 {
		t.Errorf("after a timed-out wait: count %d, sum %gs", h.GetSampleCount(), h.GetSampleSum())
	}
	p.Release(got.c)
}

// connections_max follows max_open, reloads included, so saturation
// (open / max) is computable from the scrape.
func TestPoolCollectorMaxOpen(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	p := newPool(t, "test/maxgauge", dialConfig(srv), PoolConfig{MaxOpen: 3, WaitTimeout: time.Second})
	maxOpen := func() float64 {
		mf := gatherPool(t, p)["shardgate_backend_pool_connections_max"]
		if mf == nil || len(mf.Metric) != 1 {
			t.Fatalf("shardgate_backend_pool_connections_max: %v", mf)
		}
		return mf.Metric[0].GetGauge().GetValue()
	}
	if v := maxOpen(); v != 3 {
		t.Errorf("connections_max = %g, want 3", v)
	}
	p.SetConfig(PoolConfig{MaxOpen: 7, WaitTimeout: time.Second})
	if v := maxOpen(); v != 7 {
		t.Errorf("connections_max after SetConfig = %g, want 7", v)
	}
}
