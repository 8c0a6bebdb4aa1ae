package proxy

import (
	"context"
	"crypto/rsa"
	"crypto/tls"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/shardgate/shardgate/internal/admin"
	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/frontend"
	"github.com/shardgate/shardgate/internal/sharding"
	"github.com/shardgate/shardgate/internal/telemetry"
)

// The proxy is the admin views' Source: what they show is read here from
// the clusters, listeners, keyspaces, configuration and telemetry.
var _ admin.Source = (*Proxy)(nil)

// ReloadFunc re-reads the configuration and applies it with Reload, as
// the binary does on SIGHUP; RELOAD CONFIG calls it.
type ReloadFunc func() ([]config.Change, error)

// SetReloadFunc sets what RELOAD CONFIG runs; without one it fails (the
// proxy has no file to re-read).
func (p *Proxy) SetReloadFunc(f ReloadFunc) { p.reloadFn.Store(&f) }

// SetBuildVersion sets the version SHOW VERSION reports for shardgate.
func (p *Proxy) SetBuildVersion(v string) { p.buildVersion.Store(&v) }

// Backends implements admin.Source.
func (p *Proxy) Backends() []admin.Backend {
	var out []admin.Backend
	for _, cs := range p.serverList() {
		out = append(out, backendRow(cs.cluster, cs.addr, cs.server, cs.server == cs.writer))
	}
	return out
}

// clusterServer is a server of a cluster, by its configured address.
type clusterServer struct {
	cluster, addr  string
	server, writer *backend.Server // writer: the cluster's now
}

// serverList lists every server, by cluster name and then in
// configuration order (the primary first).
func (p *Proxy) serverList() []clusterServer {
	// Under stepMu, the running configuration and the clusters' server
	// lists are in step: a configured address names each server.
	p.stepMu.Lock()
	defer p.stepMu.Unlock()
	var out []clusterServer
	for _, nc := range p.clusterList() {
		servers := nc.cluster.Servers()
		addrs := configuredAddrs(p.runningConfig().Cluster(nc.name), servers)
		w := nc.cluster.Writer()
		for i, s := range servers {
			out = append(out, clusterServer{nc.name, addrs[i], s, w})
		}
	}
	return out
}

// configuredAddrs are the addresses the configuration gives servers (the
// primary first), or where it does not list them in step (a bug), the
// addresses they were resolved to.
func configuredAddrs(cc *config.Cluster, servers []*backend.Server) []string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = s.Addr()
	}
	if cc == nil || len(cc.Replicas)+1 != len(servers) {
		return out
	}
	out[0] = cc.Primary.Address
	for i, r := range cc.Replicas {
		out[i+1] = r.Address
	}
	return out
}

func backendRow(cluster, addr string, s *backend.Server, writer bool) admin.Backend {
	h := s.Health()
	open, idle, waiting := s.Pool.Open()
	b := admin.Backend{Cluster: cluster, Address: addr, Writer: writer, Checked: h.Checked, Up: h.Up,
		BreakerOpen: s.BreakerOpen(), Offline: s.Offline(), Weight: s.Weight(),
		Open: open, Idle: idle, InUse: open - idle, Waiting: waiting, Running: s.Outstanding(),
		Errors:       s.Pool.Stats.DialErrors.Load() + s.Pool.Stats.Discarded.Load(),
		WaitTimeouts: s.Pool.Stats.Timeouts.Load()}
	if h.Checked && !h.Up {
		b.LastError = errText(h.Err)
	}
	if h.Checked && h.Up && !h.ReadOnlyUnknown {
		b.ReadOnly = &h.ReadOnly
	}
	if h.Checked && h.Up && !h.ReplicationUnknown {
		b.Replicating = &h.Replicating
	}
	if h.Lag >= 0 {
		b.Lag = &h.Lag
	}
	return b
}

// Sessions implements admin.Source: the sessions of every client
// listener (not the admin port's).
func (p *Proxy) Sessions() []frontend.Activity {
	var out []frontend.Activity
	for _, srv := range p.servers {
		for s := range srv.Sessions() {
			out = append(out, s.Activity())
		}
	}
	return out
}

// Digests implements admin.Source.
func (p *Proxy) Digests() []telemetry.DigestStat { return p.telemetry.Digests() }

// ResetDigests implements admin.Source.
func (p *Proxy) ResetDigests() { p.telemetry.ResetDigests() }

// Sharding implements admin.Source: per schema, where its unlisted tables
// live, then each listed table's sub-tables (a reference table's copies)
// and their clusters.
func (p *Proxy) Sharding() []admin.SubTable {
	cfg := p.runningConfig()
	var out []admin.SubTable
	for i := range cfg.Schemas {
		cs := &cfg.Schemas[i]
		ks := p.keyspaceMap()[cs.Name]
		if ks == nil {
			continue
		}
		out = append(out, admin.SubTable{Schema: cs.Name, Table: "*", Type: "unlisted", Cluster: cs.DefaultCluster})
		for j := range cs.Tables {
			out = append(out, subTables(cs, &cs.Tables[j], ks.Schema)...)
		}
	}
	return out
}

func subTables(cs *config.Schema, t *config.Table, s *sharding.Schema) []admin.SubTable {
	st := s.Table(t.Name)
	var out []admin.SubTable
	if st.Type == sharding.TableReference {
		for _, shard := range s.Shards {
			out = append(out, admin.SubTable{Schema: cs.Name, Table: t.Name, Type: "reference", SubTable: t.Name, Cluster: shard})
		}
		return out
	}
	rt := cs.RuleTable(t)
	rule := rt.Rule
	if rt != t {
		rule += " like " + t.Like
	}
	for i := range st.Group.Layout.SubTables() {
		name, shard := st.SubTable(i)
		out = append(out, admin.SubTable{Schema: cs.Name, Table: t.Name, Type: "sharded", Rule: rule,
			ShardKey: t.ShardKey, SubTable: name, Cluster: shard})
	}
	return out
}

// Config implements admin.Source.
func (p *Proxy) Config() []config.Setting { return config.Settings(p.runningConfig()) }

// Versions implements admin.Source; it asks every server for its
// @@version, all at once, until ctx ends.
func (p *Proxy) Versions(ctx context.Context) admin.Versions {
	v := admin.Versions{Shardgate: "unknown"}
	if b := p.buildVersion.Load(); b != nil {
		v.Shardgate = *b
	}
	if len(p.servers) > 0 {
		v.Advertised = p.servers[0].Identity().Version
	}
	servers := p.serverList()
	v.Servers = make([]admin.ServerVersion, len(servers))
	var wg sync.WaitGroup
	for i, cs := range servers {
		sv := &v.Servers[i]
		sv.Cluster, sv.Address = cs.cluster, cs.addr
		wg.Add(1)
		go func() {
			defer wg.Done()
			sv.Version, sv.Err = serverVersion(ctx, cs.server.Pool)
		}()
	}
	wg.Wait()
	return v
}

func serverVersion(ctx context.Context, pool *backend.Pool) (string, error) {
	rows, err := pool.Query(ctx, "SELECT @@version")
	if err != nil {
		return "", err
	}
	if len(rows) != 1 || len(rows[0]) != 1 {
		return "", fmt.Errorf("SELECT @@version answered %d rows", len(rows))
	}
	return rows[0][0], nil
}

// Status implements admin.Source, from the proxy's metrics.
func (p *Proxy) Status() admin.Status {
	m := p.metricSums()
	queries := uint64(m["shardgate_commands_total"])
	recent := p.qps.rate(time.Now(), queries)
	return admin.Status{Started: p.started, Clients: int64(m["shardgate_client_connections"]),
		ClientsTotal: uint64(m["shardgate_client_connections_total"]), Queries: queries,
		Errors: uint64(m["shardgate_statement_errors_total"]), ProxyErrors: uint64(m["shardgate_client_errors_total"]),
		BackendFailures: uint64(m["shardgate_backend_failures_total"]), AuthFailures: uint64(m["shardgate_client_auth_failures_total"]),
		RecentQPS: recent, Config: p.configSource()}
}

// metricSums sums each metric of the registry over its labels (a
// histogram by its count).
func (p *Proxy) metricSums() map[string]float64 {
	out := map[string]float64{}
	mfs, err := p.registry.Gather()
	if err != nil {
		p.log.Debug("gathering metrics for SHOW STATUS", "err", err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			out[mf.GetName()] += metricValue(m)
		}
	}
	return out
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// SetBackendOffline implements admin.Source: it drains or restores a
// server as its state: offline / online in the configuration does. The
// next reload applies the file's state again.
func (p *Proxy) SetBackendOffline(cluster, address string, offline bool) error {
	p.stepMu.Lock()
	defer p.stepMu.Unlock()
	cl := p.Cluster(cluster)
	if cl == nil {
		var names []string
		for _, nc := range p.clusterList() {
			names = append(names, nc.name)
		}
		return fmt.Errorf("no cluster %q (clusters: %s)", cluster, strings.Join(names, ", "))
	}
	servers := cl.Servers()
	addrs := configuredAddrs(p.runningConfig().Cluster(cluster), servers)
	for i, s := range servers {
		if addrs[i] == address || s.Addr() == address {
			s.SetOffline(offline)
			return nil
		}
	}
	return fmt.Errorf("cluster %s has no server %s (its servers: %s)", cluster, address, strings.Join(addrs, ", "))
}

// KillSession implements admin.Source.
func (p *Proxy) KillSession(id uint32) error {
	if s := p.clientSession(id); s != nil {
		s.Kill()
		return nil
	}
	return admin.ErrNoSession
}

// clientSession returns the session of a client listener with id (the
// listeners share the numbering), or nil.
func (p *Proxy) clientSession(id uint32) *frontend.Session {
	for _, srv := range p.servers {
		if s := srv.Session(id); s != nil {
			return s
		}
	}
	return nil
}

// clientSessions yields the logged-in sessions of every client listener
// (not the admin port's), for a client's SHOW PROCESSLIST.
func (p *Proxy) clientSessions() iter.Seq[*frontend.Session] {
	return func(yield func(*frontend.Session) bool) {
		for _, srv := range p.servers {
			for s := range srv.Sessions() {
				if !yield(s) {
					return
				}
			}
		}
	}
}

// ReloadConfig implements admin.Source with the function the binary set.
func (p *Proxy) ReloadConfig() ([]config.Change, error) {
	f := p.reloadFn.Load()
	if f == nil {
		return nil, errors.New("the proxy was not started from a configuration file: nothing to re-read")
	}
	return (*f)()
}

// AdminSQLAddr returns the admin SQL port's address, or "".
func (p *Proxy) AdminSQLAddr() string {
	if p.adminLn == nil {
		return ""
	}
	return p.adminLn.Addr().String()
}

// adminMaxConnections bounds the admin port's connections: operators and
// their tools, not applications.
const adminMaxConnections = 64

// buildAdminSQL opens the admin SQL port: a frontend server in
// local-answer mode whose sessions the admin handler answers, with the
// admin accounts, the RSA key, the login guard and TLS (tc, the first
// listener's) of the client listeners.
func (p *Proxy) buildAdminSQL(ident frontend.Identity, tc *tls.Config, tlsRequired bool, rsaKey *rsa.PrivateKey) error {
	cfg := p.runningConfig()
	if cfg.Admin.SQL == "" {
		return nil
	}
	users, err := adminUserTable(cfg)
	if err != nil {
		return err
	}
	p.adminUsers.Store(&users)
	ident.MaxPacket = admin.MaxPacket
	log := p.log.With("listener", "admin")
	srv, err := frontend.NewServer(frontend.Options{
		Identity: ident, FullAuth: cfg.Server.CachingSHA2FullAuth, TLS: tc, TLSRequired: tlsRequired,
		RSAKey: rsaKey, Users: p.lookupAdminUser, ClientIdleTimeout: cfg.Server.ClientIdleTimeout,
		NetReadTimeout: cfg.Server.NetReadTimeout, NetWriteTimeout: cfg.Server.NetWriteTimeout,
		HandshakeTimeout: cfg.Server.HandshakeTimeout, MaxConnections: adminMaxConnections,
		Log: log, Metrics: frontend.NewMetrics(nil), AuthGuard: p.guard, IDs: &p.ids,
		Local: admin.NewHandler(p, ident.Version, log),
	})
	if err != nil {
		return err
	}
	ln, err := p.listenTCP(cfg.Admin.SQL, adminReusePort(cfg))
	if err != nil {
		return fmt.Errorf("admin SQL listen on %s: %w", cfg.Admin.SQL, err)
	}
	p.adminSQL, p.adminLn = srv, ln
	return nil
}

// adminUserTable is the admin accounts of cfg: logins on the admin port
// look them up, and only them.
func adminUserTable(cfg *config.Config) (map[string]*frontend.User, error) {
	users := map[string]*frontend.User{}
	for _, u := range cfg.Admin.Users {
		stored, err := storedPassword(config.User{Name: u.Name, Password: u.Password, PasswordHash: u.PasswordHash})
		if err != nil {
			return nil, fmt.Errorf("admin %w", err)
		}
		users[u.Name] = frontend.NewUser(u.Name, stored, nil, "", nil)
	}
	return users, nil
}

// applyAdminUsers publishes a reload's admin accounts; one whose password
// changed, or that is gone, must authenticate in full again.
func (p *Proxy) applyAdminUsers(old, cfg *config.Config, users map[string]*frontend.User) {
	p.adminUsers.Store(&users)
	if p.adminSQL == nil {
		return
	}
	kept := map[string]config.AdminUser{}
	for _, u := range cfg.Admin.Users {
		kept[u.Name] = u
	}
	for _, u := range old.Admin.Users {
		if k, ok := kept[u.Name]; !ok || k != u {
			p.adminSQL.ForgetFastAuth(u.Name)
		}
	}
}

func (p *Proxy) lookupAdminUser(name string) *frontend.User {
	if m := p.adminUsers.Load(); m != nil {
		return (*m)[name]
	}
	return nil
}

// qpsWindow is how far back SHOW STATUS's recent QPS looks.
const qpsWindow = 10 * time.Second

// qpsSampler keeps a count (client commands) once a second for the last
// qpsWindow, so that the rate over that window can be told at any time.
type qpsSampler struct {
	mu      sync.Mutex
	samples []qpsSample // oldest first
}

type qpsSample struct {
	at    time.Time
	count uint64
}

func (q *qpsSampler) add(at time.Time, count uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.samples = append(q.samples, qpsSample{at, count})
	for len(q.samples) > 1 && at.Sub(q.samples[1].at) >= qpsWindow {
		q.samples = q.samples[1:]
	}
}

// rate is the count's rate per second from the oldest sample kept to
// (now, count).
func (q *qpsSampler) rate(now time.Time, count uint64) float64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.samples) == 0 {
		return 0
	}
	first := q.samples[0]
	span := now.Sub(first.at)
	if span <= 0 || count < first.count {
		return 0
	}
	return float64(count-first.count) / span.Seconds()
}

// sampleQPS samples the client commands counter every second until the
// proxy closes.
func (p *Proxy) sampleQPS() {
	defer p.wg.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		p.qps.add(time.Now(), counterValue(p.metrics.Commands))
		select {
		case <-p.closed:
			return
		case <-tick.C:
		}
	}
}

// counterValue reads a counter (once a second, off the statement path).
func counterValue(c prometheus.Counter) uint64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil || m.Counter == nil {
		return 0
	}
	return uint64(m.Counter.GetValue())
}
