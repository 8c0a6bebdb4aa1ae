package proxy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/config"
)

// Ready reports whether every cluster has a writer that takes statements
// now: known writable by its last health check, up, not drained and its
// breaker closed. When not, why says which clusters lack one and the state
// of each of their servers, one line per cluster. It serves the admin
// /readyz probe.
func (p *Proxy) Ready() (ready bool, why string) {
	if p.draining.Load() {
		return false, "draining: shutting down; new clients go to the other instances\n"
	}
	var b strings.Builder
	for _, nc := range p.clusterList() {
		if problem := writerProblem(nc.cluster); problem != "" {
			fmt.Fprintf(&b, "cluster %s: %s\n", nc.name, problem)
		}
	}
	return b.Len() == 0, b.String()
}

type namedCluster struct {
	name    string
	cluster *backend.Cluster
}

// clusterList returns the clusters by name; a reload may add some.
func (p *Proxy) clusterList() []namedCluster {
	p.mu.Lock()
	out := make([]namedCluster, 0, len(p.clusters))
	for name, cl := range p.clusters {
		out = append(out, namedCluster{name, cl})
	}
	p.mu.Unlock()
	slices.SortFunc(out, func(a, b namedCluster) int { return strings.Compare(a.name, b.name) })
	return out
}

// runningConfig is the configuration in force (a reload replaces it).
func (p *Proxy) runningConfig() *config.Config {
	return p.cfg.Load()
}

// writerProblem says why the cluster has no usable writer, or "" when it
// has one.
func writerProblem(cl *backend.Cluster) string {
	w := cl.Writer()
	if w == nil {
		return "no writable server (" + cl.DescribeUnwritable() + ")"
	}
	if state := serverState(w); state != "up" {
		return "writer " + w.Addr() + " " + state
	}
	return ""
}

// serverState says in a few words whether s can take statements now and,
// when not, why: "up", "read-only", "offline", "down: ERR", "out: ...",
// "not checked yet".
func serverState(s *backend.Server) string {
	h := s.Health()
	switch {
	case s.Offline():
		return "offline (state: offline in the configuration)"
	case !h.Checked:
		return "not checked yet"
	case !h.Up:
		return "down: " + errText(h.Err)
	case s.BreakerOpen():
		return "out (circuit breaker open after failed statements)"
	case h.ReadOnly:
		return "read-only"
	}
	return "up"
}

func errText(err error) string {
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}

// LogStartup logs what the proxy runs with, once: version, listeners,
// admin address, and each cluster and server with its state. It waits for
// the first health check of every server, but no longer than those checks
// may take, so a server that does not answer shows as such rather than
// delaying the log; serving does not wait for it (call it after Start, in a
// goroutine of its own if need be).
func (p *Proxy) LogStartup(version string) {
	cfg := p.runningConfig()
	if !p.waitFirstChecks(firstCheckWait(cfg)) {
		return // closed meanwhile: the summary would describe nothing running
	}
	clusters := p.clusterList()
	p.log.Info("shardgate started", "version", version, "listeners", len(p.lns),
		"admin", adminText(p.AdminAddr()), "admin_sql", adminText(p.AdminSQLAddr()), "clusters", len(clusters), "users", len(*p.users.Load()))
	for i, l := range cfg.Listeners {
		if i >= len(p.lns) {
			break
		}
		p.log.Info("listener", "addr", p.lns[i].Addr().String(), "tls", l.TLS.Mode,
			"certificate", certificateText(l.TLS), "max_connections", l.MaxConnections,
			"reserved_admin_connections", l.ReservedAdminConnections)
	}
	for i := range cfg.Clusters {
		p.logCluster(&cfg.Clusters[i])
	}
}

// logCluster logs one cluster's writer and servers; a cluster without a
// usable writer is a warning, since writes fail until one appears.
func (p *Proxy) logCluster(cc *config.Cluster) {
	cl := p.Cluster(cc.Name)
	if cl == nil {
		return
	}
	writer := "none"
	if w := cl.Writer(); w != nil {
		writer = w.Addr()
	}
	if problem := writerProblem(cl); problem != "" {
		p.log.Warn("cluster has no usable writer; writes fail until one is", "cluster", cc.Name,
			"writer", writer, "servers", len(cl.Servers()), "why", problem)
	} else {
		p.log.Info("cluster", "cluster", cc.Name, "writer", writer, "servers", len(cl.Servers()),
			"read_from", cc.Routing.ReadFrom, "consistency", cc.Routing.Consistency)
	}
	backends := append([]config.Backend{cc.Primary}, cc.Replicas...)
	for i, s := range cl.Servers() {
		if i >= len(backends) {
			break
		}
		role := "replica"
		if i == 0 {
			role = "primary"
		}
		h := s.Health()
		attrs := []any{"cluster", cc.Name, "role", role, "addr", backends[i].Address,
			"state", serverState(s), "read_only", h.ReadOnly, "writer", s == cl.Writer(),
			"weight", s.Weight(), "offline", s.Offline()}
		if h.Replica {
			attrs = append(attrs, "replicating", h.Replicating, "lag", lagText(h.Lag))
		}
		p.log.Info("backend server", attrs...)
	}
}

// waitFirstChecks waits until every server has had a health check, at most
// d; it returns false if the proxy is closed meanwhile.
func (p *Proxy) waitFirstChecks(d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !p.allChecked() {
		select {
		case <-deadline.C:
			return true
		case <-p.closed:
			return false
		case <-tick.C:
		}
	}
	return true
}

func (p *Proxy) allChecked() bool {
	for _, nc := range p.clusterList() {
		for _, s := range nc.cluster.Servers() {
			if !s.Health().Checked {
				return false
			}
		}
	}
	return true
}

// firstCheckWait bounds the wait for the first health checks: a check is a
// connect and a query, each within health.timeout.
func firstCheckWait(cfg *config.Config) time.Duration {
	d := time.Second
	for _, cc := range cfg.Clusters {
		d = max(d, 2*cc.Health.Timeout+500*time.Millisecond)
	}
	return min(d, 10*time.Second)
}

func adminText(addr string) string {
	if addr == "" {
		return "off"
	}
	return addr
}

func certificateText(t config.ListenerTLS) string {
	switch {
	case t.Mode == "off":
		return "none"
	case t.CertFile != "":
		return t.CertFile
	}
	return "self-signed"
}

func lagText(lag time.Duration) string {
	if lag < 0 {
		return "unknown"
	}
	return lag.String()
}
