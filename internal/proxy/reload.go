package proxy

import (
	"errors"
	"fmt"
	"slices"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/frontend"
	"github.com/shardgate/shardgate/internal/mysql/auth"
)

// Reload applies a new configuration to the running proxy: everything
// that can change without dropping a client (users, routing, pool limits,
// health settings, replicas added, removed, re-weighted or drained, new
// clusters, the client idle, handshake and net timeouts, the login failure
// delay, the admin port's accounts). It returns every difference from the running configuration;
// those marked Restart were left as they are (see docs/configuration.md).
// log.level and server.shutdown_timeout are the caller's to apply. On
// error nothing changed. Reloads run one at a time; the admin views read
// the running configuration meanwhile, and wait only while the changes
// are applied, not while host names resolve.
//
// Sessions see a change at their next statement: a user's routing policy,
// a cluster's server list and a pool's limits are each swapped atomically.
// A session keeps the user record it logged in with, so a new password or
// default database concerns later logins, and a user moved to another
// cluster leaves its running sessions on the old one. A removed replica is
// drained: no new statements; its connections close as they come back.
func (p *Proxy) Reload(cfg *config.Config) ([]config.Change, error) {
	p.reloadMu.Lock()
	defer p.reloadMu.Unlock()
	old := p.runningConfig()
	plan, err := prepareReload(old, cfg)
	if err == nil {
		plan.admins, err = adminUserTable(cfg)
	}
	if err == nil {
		plan.schemas, err = p.prepareSchemas(old, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("configuration not applied: %w", err)
	}
	changes := config.Diff(old, cfg)
	p.stepMu.Lock()
	defer p.stepMu.Unlock()
	for i := range cfg.Clusters {
		p.applyCluster(old.Cluster(cfg.Clusters[i].Name), &cfg.Clusters[i], plan)
	}
	p.applySchemas(plan.schemas, old)
	plan.schemas.refuseChanges(changes)
	p.applyUsers(old, cfg, plan)
	p.applyAdminUsers(old, cfg, plan.admins)
	for _, srv := range p.servers {
		srv.SetClientIdleTimeout(cfg.Server.ClientIdleTimeout)
		srv.SetNetTimeouts(cfg.Server.NetReadTimeout, cfg.Server.NetWriteTimeout)
		srv.SetHandshakeTimeout(cfg.Server.HandshakeTimeout)
	}
	p.guard.SetConfig(authDelay(cfg))
	p.telemetry.Configure(telemetryConfig(cfg))
	rc := running(old, cfg)
	rc.Schemas = plan.schemas.configs
	p.cfg.Store(rc)
	return changes, nil
}

// reloadPlan is what a reload resolves before it changes anything, so that
// a failure (a host name that does not resolve) changes nothing.
type reloadPlan struct {
	clusters map[string][]*backend.DialConfig // new clusters' servers
	replicas map[string][]*backend.DialConfig // added replicas, by replicaKey
	stored   map[string]auth.Stored           // users' passwords
	admins   map[string]*frontend.User        // the admin port's accounts
	schemas  *schemaPlan
}

func replicaKey(cluster, address string) string { return cluster + "\x00" + address }

func prepareReload(old, cfg *config.Config) (*reloadPlan, error) {
	plan := &reloadPlan{clusters: map[string][]*backend.DialConfig{},
		replicas: map[string][]*backend.DialConfig{}, stored: map[string]auth.Stored{}}
	var errs []error
	for i := range cfg.Clusters {
		cc := &cfg.Clusters[i]
		oc := old.Cluster(cc.Name)
		if oc == nil {
			dcs, err := clusterDialConfigs(cc)
			if err != nil {
				errs = append(errs, err)
			}
			plan.clusters[cc.Name] = dcs
			continue
		}
		running := map[string]int{}
		for _, r := range oc.Replicas {
			running[r.Address]++
		}
		for _, r := range cc.Replicas {
			if running[r.Address] > 0 {
				running[r.Address]--
				continue
			}
			// Backend credentials and TLS need a restart: the running ones.
			dc, err := dialConfig(oc, r.Address)
			if err != nil {
				errs = append(errs, fmt.Errorf("cluster %s: %w", cc.Name, err))
				continue
			}
			k := replicaKey(cc.Name, r.Address)
			plan.replicas[k] = append(plan.replicas[k], dc)
		}
	}
	for _, u := range cfg.Users {
		stored, err := storedPassword(u)
		if err != nil {
			errs = append(errs, err)
		}
		plan.stored[u.Name] = stored
	}
	return plan, errors.Join(errs...)
}

// applyCluster applies a cluster's new settings; oc is its running
// configuration, nil for a new cluster.
func (p *Proxy) applyCluster(oc, cc *config.Cluster, plan *reloadPlan) {
	if oc == nil {
		cl := p.newCluster(cc, plan.clusters[cc.Name])
		p.mu.Lock()
		p.clusters[cc.Name] = cl
		p.mu.Unlock()
		return
	}
	cl := p.Cluster(cc.Name)
	cur := cl.Servers()
	if len(cur) != len(oc.Replicas)+1 {
		// The running configuration lists the servers in order; a
		// mismatch is a bug, and guessing could drain the wrong server.
		p.log.Error("cluster servers not reloaded: running configuration out of step", "cluster", cc.Name)
		return
	}
	byAddr := map[string][]*backend.Server{}
	for i, r := range oc.Replicas {
		byAddr[r.Address] = append(byAddr[r.Address], cur[i+1])
	}
	names := map[string]bool{}
	for _, s := range cur {
		names[s.Pool.Name] = true
	}
	cur[0].SetOffline(cc.Primary.State == "offline")
	next := []*backend.Server{cur[0]}
	for _, r := range cc.Replicas {
		if q := byAddr[r.Address]; len(q) > 0 {
			s := q[0]
			byAddr[r.Address] = q[1:]
			s.SetWeight(r.Weight)
			s.SetOffline(r.State == "offline")
			next = append(next, s)
			continue
		}
		k := replicaKey(cc.Name, r.Address)
		dc := plan.replicas[k][0]
		plan.replicas[k] = plan.replicas[k][1:]
		next = append(next, p.newServer(cc, freeReplicaName(cc.Name, names), dc, r))
	}
	pc := poolConfig(cc)
	for _, s := range next {
		s.Pool.SetConfig(pc)
	}
	cl.SetHealth(healthConfig(cc), breakerConfig(cc))
	cl.SetServers(next)
	for _, removed := range byAddr {
		for _, s := range removed {
			p.unregisterPool(s.Pool)
			p.unregisterPool(s.Pool.Evaluator())
		}
	}
}

// freeReplicaName names an added replica's pool (for logs and metrics)
// with the first replicaN of the cluster not in use.
func freeReplicaName(cluster string, used map[string]bool) string {
	for i := 1; ; i++ {
		if name := fmt.Sprintf("%s/replica%d", cluster, i); !used[name] {
			used[name] = true
			return name
		}
	}
}

func (p *Proxy) unregisterPool(pool *backend.Pool) {
	p.mu.Lock()
	c := p.poolCollectors[pool]
	delete(p.poolCollectors, pool)
	p.mu.Unlock()
	if c != nil {
		p.registry.Unregister(c)
	}
}

// applyUsers publishes the new user table. A user whose password, default
// database and cluster did not change keeps its record; every user on an
// unchanged cluster shares its routing policy with the sessions logged in
// before (frontend.User).
func (p *Proxy) applyUsers(old, cfg *config.Config, plan *reloadPlan) {
	cur := *p.users.Load()
	next := make(map[string]*frontend.User, len(cfg.Users))
	for _, u := range cfg.Users {
		cl, pol := p.Cluster(u.Cluster), policy(cfg, u)
		prev, ou := cur[u.Name], old.User(u.Name)
		samePassword := ou != nil && ou.Password == u.Password && ou.PasswordHash == u.PasswordHash
		switch {
		case prev == nil || ou == nil || prev.Cluster != cl:
			next[u.Name] = newUser(u, plan.stored[u.Name], cl, pol)
		case samePassword && ou.DefaultDatabase == u.DefaultDatabase && ou.Admin == u.Admin && ou.Process == u.Process:
			prev.SetPolicy(pol)
			next[u.Name] = prev
		default:
			renewed := prev.Renewed(plan.stored[u.Name], u.DefaultDatabase, u.Admin, u.Process)
			renewed.SetPolicy(pol)
			next[u.Name] = renewed
		}
		if !samePassword {
			p.forgetFastAuth(u.Name)
		}
	}
	for name := range cur {
		if next[name] == nil {
			p.forgetFastAuth(name)
		}
	}
	p.users.Store(&next)
}

func (p *Proxy) forgetFastAuth(user string) {
	for _, srv := range p.servers {
		srv.ForgetFastAuth(user)
	}
}

// running is the configuration that runs after cfg was reloaded over old:
// cfg, with old's values wherever a change needs a restart (the keys
// tagged reload:"restart" in package config), and the clusters cfg left
// out, which keep serving the sessions logged in to them.
func running(old, cfg *config.Config) *config.Config {
	r := *cfg
	r.Listeners = old.Listeners
	r.Admin.HTTP, r.Admin.SQL = old.Admin.HTTP, old.Admin.SQL
	srv := old.Server
	srv.ShutdownTimeout, srv.ClientIdleTimeout = cfg.Server.ShutdownTimeout, cfg.Server.ClientIdleTimeout
	srv.NetReadTimeout, srv.NetWriteTimeout = cfg.Server.NetReadTimeout, cfg.Server.NetWriteTimeout
	srv.HandshakeTimeout = cfg.Server.HandshakeTimeout
	srv.AuthFailureDelay = cfg.Server.AuthFailureDelay
	r.Server = srv
	r.Log.Format = old.Log.Format
	r.Users = slices.Clone(cfg.Users)
	r.Clusters = nil
	for _, cc := range cfg.Clusters {
		if oc := old.Cluster(cc.Name); oc != nil {
			cc.User, cc.Password, cc.TLS = oc.User, oc.Password, oc.TLS
			cc.Pool.PreparedStatementsPerConn = oc.Pool.PreparedStatementsPerConn
			cc.Primary.Address = oc.Primary.Address
		}
		r.Clusters = append(r.Clusters, cc)
	}
	for _, oc := range old.Clusters {
		if cfg.Cluster(oc.Name) == nil {
			r.Clusters = append(r.Clusters, oc)
		}
	}
	return &r
}
