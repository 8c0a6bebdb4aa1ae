package proxy

import (
	"time"

	"github.com/shardgate/shardgate/internal/admin"
	"github.com/shardgate/shardgate/internal/telemetry"
)

// History implements admin.Source: the samples the status page charts.
func (p *Proxy) History() []admin.Sample { return p.history.Samples() }

// sampleHistory adds a sample to the history every admin.HistoryEvery
// until the proxy closes. It reads what statements update anyway (the
// statement metrics' histograms and counters, the pools' and servers'
// state), in this goroutine only: statements pay nothing for it.
func (p *Proxy) sampleHistory() {
	defer p.wg.Done()
	tick := time.NewTicker(admin.HistoryEvery)
	defer tick.Stop()
	// The counters started at zero with the proxy: the first sample
	// counts from then.
	s := historySampler{prev: map[string]telemetry.ClusterTotal{}, prevAt: p.started}
	for {
		select {
		case <-p.closed:
			return
		case now := <-tick.C:
			p.history.Add(s.sample(p, now))
		}
	}
}

// historySampler turns the counters' totals into rates: it keeps the
// totals of the sample before.
type historySampler struct {
	prev   map[string]telemetry.ClusterTotal
	prevAt time.Time
}

func (s *historySampler) sample(p *Proxy, now time.Time) admin.Sample {
	out := admin.Sample{At: now}
	secs := now.Sub(s.prevAt).Seconds()
	if p.telemetry != nil && secs > 0 {
		for _, t := range p.telemetry.ClusterTotals() {
			d := t.Since(s.prev[t.Name])
			s.prev[t.Name] = t
			out.Clusters = append(out.Clusters, admin.ClusterSample{Cluster: t.Name,
				QPS: float64(d.Count) / secs, ErrorsPS: float64(d.Errors) / secs,
				P50: d.Quantile(0.5), P99: d.Quantile(0.99), Statements: d.Count, Errors: d.Errors})
		}
	}
	s.prevAt = now
	for _, cs := range p.serverList() {
		open, idle, _ := cs.server.Pool.Open()
		h := cs.server.Health()
		out.Servers = append(out.Servers, admin.ServerSample{Cluster: cs.cluster, Address: cs.addr,
			Replica: h.Replica || isReplicaAddr(p, cs.cluster, cs.addr),
			InUse:   open - idle, Idle: idle, Max: cs.server.Pool.MaxOpen(),
			Lag: max(h.Lag, 0), LagKnown: h.Checked && h.Up && h.Lag >= 0})
	}
	return out
}

// isReplicaAddr reports whether the running configuration lists addr as
// a replica of the cluster: a replica whose server is down still has a
// line in the lag chart (a gap: its lag is unknown).
func isReplicaAddr(p *Proxy, cluster, addr string) bool {
	cc := p.runningConfig().Cluster(cluster)
	if cc == nil {
		return false
	}
	for _, r := range cc.Replicas {
		if r.Address == addr {
			return true
		}
	}
	return false
}
