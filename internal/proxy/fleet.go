package proxy

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardgate/shardgate/internal/admin"
	"github.com/shardgate/shardgate/internal/fleet"
)

// Fleet is the fleet of shardgates this instance belongs to, when its
// configuration comes from etcd: the registered instances, and how the
// configuration source stands.
type Fleet interface {
	Instances() []fleet.Instance
	Self() fleet.Instance
	ConfigState() fleet.State
}

// SetFleet makes the instance show its fleet (SHOW PROXIES, /api/proxies,
// the status page) and export the configuration revision it applied, so
// that an alert can tell when instances disagree. Call it once.
func (p *Proxy) SetFleet(f Fleet) {
	p.fleet.Store(&f)
	state := func(v func(fleet.State) float64) func() float64 {
		return func() float64 { return v(f.ConfigState()) }
	}
	gauges := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "shardgate_config_revision",
			Help: "The configuration revision (etcd's mod revision) this instance applied; instances that disagree for long are out of step.",
		}, state(func(s fleet.State) float64 { return float64(s.Applied) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "shardgate_config_rejected_revision",
			Help: "The newest configuration revision this instance rejected, while it is newer than the one applied; 0 when none.",
		}, state(func(s fleet.State) float64 { return float64(s.Rejected) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "shardgate_config_source_up",
			Help: "1 while the last request to the configuration source (etcd) succeeded.",
		}, state(func(s fleet.State) float64 { return b2f(s.Reachable) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "shardgate_config_from_cache",
			Help: "1 while the configuration in force was read from the local cache because etcd could not be reached at start.",
		}, state(func(s fleet.State) float64 { return b2f(s.FromCache) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "shardgate_fleet_instances",
			Help: "The instances registered in the fleet, this one included, as this instance last saw them.",
		}, func() float64 { return float64(len(f.Instances())) }),
	}
	for _, g := range gauges {
		p.registry.MustRegister(g)
	}
}

// Fleet implements admin.Source: the registered instances, this one
// marked Self; nil when the configuration does not come from etcd.
func (p *Proxy) Fleet() []admin.Proxy {
	fp := p.fleet.Load()
	if fp == nil {
		return nil
	}
	f := *fp
	self := f.Self().ID
	var out []admin.Proxy
	for _, in := range f.Instances() {
		out = append(out, admin.Proxy{ID: in.ID, Addr: in.Address, Admin: in.Admin, Version: in.Version, Started: in.Started,
			ConfigRevision: in.ConfigRevision, ConfigChecksum: in.ConfigChecksum, Self: in.ID == self})
	}
	return out
}

// configSource is SHOW STATUS's view of the etcd source; nil for a file.
func (p *Proxy) configSource() *admin.ConfigSource {
	fp := p.fleet.Load()
	if fp == nil {
		return nil
	}
	s := (*fp).ConfigState()
	return &admin.ConfigSource{URL: s.Source, Revision: s.Applied, Checksum: s.Checksum, FromCache: s.FromCache,
		Rejected: s.Rejected, RejectedError: s.RejectedError, Reachable: s.Reachable, LastError: s.LastError}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
