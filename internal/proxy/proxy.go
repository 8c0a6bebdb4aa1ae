// Package proxy assembles a running shardgate from a configuration: backend
// clusters and pools, users, client listeners and the admin endpoint. The
// binary and the integration tests both start the proxy through it.
package proxy

import (
	"context"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardgate/shardgate/internal/admin"
	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/frontend"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/mysql/auth"
	"github.com/shardgate/shardgate/internal/router"
)

// Proxy is a running shardgate.
type Proxy struct {
	cfg      *config.Config
	log      *slog.Logger
	clusters map[string]*backend.Cluster
	users    map[string]*frontend.User
	servers  []*frontend.Server
	lns      []net.Listener
	admin    *admin.Server
	registry *prometheus.Registry

	wg      sync.WaitGroup
	errOnce sync.Once
	err     chan error

	// The primary's identity, when it could not be learnt at start, is
	// learnt later (identity.go).
	learnPending bool
	learnCancel  context.CancelFunc
	learnDone    chan struct{}
}

// New builds the proxy and opens its listeners; Start begins serving.
func New(cfg *config.Config, log *slog.Logger) (*Proxy, error) {
	p := &Proxy{cfg: cfg, log: log, clusters: map[string]*backend.Cluster{},
		users: map[string]*frontend.User{}, registry: prometheus.NewRegistry(), err: make(chan error, 1)}
	if err := p.buildClusters(); err != nil {
		p.closeClusters()
		return nil, err
	}
	if err := p.buildUsers(); err != nil {
		p.closeClusters()
		return nil, err
	}
	if err := p.buildServers(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func (p *Proxy) buildClusters() error {
	for i := range p.cfg.Clusters {
		cc := &p.cfg.Clusters[i]
		pc := backend.PoolConfig{
			MaxOpen: cc.Pool.MaxOpen, MaxIdle: cc.Pool.MaxIdle, MinIdle: cc.Pool.MinIdle,
			IdleTimeout: cc.Pool.IdleTimeout, MaxLifetime: cc.Pool.MaxLifetime,
			WaitTimeout: cc.Pool.WaitTimeout, MaxWaiters: cc.Pool.MaxWaiters,
			HealthCheckInterval: cc.Pool.HealthCheckInterval,
		}
		bc := backend.BreakerConfig{Failures: cc.Health.Failures, Backoff: cc.Health.Backoff, MaxBackoff: cc.Health.MaxBackoff}
		var servers []*backend.Server
		for j, b := range append([]config.Backend{cc.Primary}, cc.Replicas...) {
			dc, err := dialConfig(cc, b.Address)
			if err != nil {
				closeServers(servers)
				return fmt.Errorf("cluster %s: %w", cc.Name, err)
			}
			name := cc.Name + "/primary"
			if j > 0 {
				name = fmt.Sprintf("%s/replica%d", cc.Name, j)
			}
			pool := backend.NewPool(name, dc, pc, p.log)
			p.registry.MustRegister(backend.NewPoolCollector(pool))
			s := backend.NewServer(pool, b.Weight, bc)
			s.SetOffline(b.State == "offline")
			servers = append(servers, s)
		}
		hc := backend.HealthConfig{Interval: cc.Health.Interval, Timeout: cc.Health.Timeout}
		cl := backend.NewCluster(cc.Name, servers, hc, p.log)
		p.clusters[cc.Name] = cl
		p.registry.MustRegister(backend.NewServerCollector(cl))
	}
	return nil
}

func closeServers(servers []*backend.Server) {
	for _, s := range servers {
		s.Pool.Close()
	}
}

// dialConfig resolves the server address once, so no connect waits on DNS.
func dialConfig(cc *config.Cluster, address string) (*backend.DialConfig, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("address %q: %w", address, err)
	}
	addr := address
	if net.ParseIP(host) == nil {
		ips, err := net.DefaultResolver.LookupIPAddr(context.Background(), host)
		if err != nil || len(ips) == 0 {
			return nil, fmt.Errorf("resolve %s: %w", host, err)
		}
		addr = net.JoinHostPort(ips[0].IP.String(), port)
	}
	tc, required, err := backendTLS(&cc.TLS, host)
	if err != nil {
		return nil, err
	}
	return &backend.DialConfig{
		Addr: addr, User: cc.User, Password: cc.Password, TLS: tc, TLSRequired: required,
		ConnectTimeout: cc.Pool.ConnectTimeout, Charset: mysql.CollationUTF8MB4GeneralCI,
		StmtLimit: cc.Pool.PreparedStatementsPerConn,
	}, nil
}

// backendTLS turns tls.mode into a client TLS config: preferred and required
// encrypt without verifying (like MySQL's ssl-mode of the same names),
// verify checks the chain and host name.
func backendTLS(t *config.BackendTLS, host string) (*tls.Config, bool, error) {
	if t.Mode == "" || t.Mode == "off" {
		return nil, false, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host}
	if t.ServerName != "" {
		tc.ServerName = t.ServerName
	}
	if t.CertFile != "" {
		cert, err := auth.LoadCertificate(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, false, err
		}
		tc.Certificates = []tls.Certificate{*cert}
	}
	switch t.Mode {
	case "preferred":
		tc.InsecureSkipVerify = true
		return tc, false, nil
	case "required":
		tc.InsecureSkipVerify = true
		return tc, true, nil
	}
	pem, err := os.ReadFile(t.CAFile)
	if err != nil {
		return nil, false, fmt.Errorf("tls.ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, false, fmt.Errorf("tls.ca_file %s: no certificates found", t.CAFile)
	}
	tc.RootCAs = pool
	return tc, true, nil
}

func (p *Proxy) buildUsers() error {
	for _, u := range p.cfg.Users {
		var stored auth.Stored
		if u.PasswordHash != "" {
			var err error
			if stored, err = auth.ParseStored(u.PasswordHash); err != nil {
				return fmt.Errorf("user %s: %w", u.Name, err)
			}
		} else {
			stored = auth.StoredFromPlain(u.Password)
		}
		p.users[u.Name] = &frontend.User{Name: u.Name, Stored: stored, Cluster: p.clusters[u.Cluster],
			DefaultDB: u.DefaultDatabase, Policy: p.policy(u)}
	}
	return nil
}

// policy builds a user's read/write splitting policy: its cluster's
// routing, with the user's read_from when set.
func (p *Proxy) policy(u config.User) *router.Policy {
	var r config.Routing
	for _, c := range p.cfg.Clusters {
		if c.Name == u.Cluster {
			r = c.Routing
		}
	}
	cons, _ := router.ParseConsistency(r.Consistency)
	pol := &router.Policy{
		ReadFromPrimary: r.ReadFrom == "primary", MaxReplicaLag: r.MaxReplicaLag, Consistency: cons,
		WriteWindow: r.WriteWindow, CausalWaitTimeout: r.CausalWaitTimeout,
		AutocommitOffReplicaReads: r.AutocommitOffReads == "replica",
	}
	if u.ReadFrom != "" {
		pol.ReadFromPrimary = u.ReadFrom == "primary"
	}
	if len(r.PrimaryDatabases) > 0 {
		pol.PrimaryDatabases = make(map[string]bool, len(r.PrimaryDatabases))
		for _, db := range r.PrimaryDatabases {
			pol.PrimaryDatabases[db] = true
		}
	}
	return pol
}

func (p *Proxy) buildServers() error {
	rsaKey, err := p.rsaKey()
	if err != nil {
		return err
	}
	ident := p.startIdentity()
	metrics := frontend.NewMetrics(p.registry)
	poller := mysql.NewPoller(p.cfg.Server.BusyPoll, runtime.NumCPU())
	registerPollerMetrics(p.registry, poller)
	for _, l := range p.cfg.Listeners {
		tc, err := listenerTLS(&l.TLS)
		if err != nil {
			return fmt.Errorf("listener %s: %w", l.Address, err)
		}
		srv, err := frontend.NewServer(frontend.Options{
			Identity: ident, FullAuth: p.cfg.Server.CachingSHA2FullAuth, TLS: tc, TLSRequired: l.TLS.Mode == "required",
			RSAKey: rsaKey, Users: p.lookupUser, ClientIdleTimeout: p.cfg.Server.ClientIdleTimeout,
			MaxConnections: l.MaxConnections, MaxStmtsPerSess: p.cfg.Server.MaxPreparedStatementsPerSession,
			Log: p.log, Metrics: metrics, Poller: poller,
		})
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", l.Address)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", l.Address, err)
		}
		p.servers = append(p.servers, srv)
		p.lns = append(p.lns, ln)
	}
	if p.cfg.Admin.HTTP != "" {
		a, err := admin.Listen(p.cfg.Admin.HTTP, p.registry, p.log)
		if err != nil {
			return err
		}
		p.admin = a
	}
	p.startLearning()
	return nil
}

func (p *Proxy) lookupUser(name string) *frontend.User { return p.users[name] }

func (p *Proxy) rsaKey() (*rsa.PrivateKey, error) {
	if p.cfg.Server.RSAPrivateKeyFile != "" {
		return auth.LoadRSAKeyPair(p.cfg.Server.RSAPrivateKeyFile, p.cfg.Server.RSAPublicKeyFile)
	}
	return auth.GenerateRSAKey()
}

// listenerTLS returns the server TLS config: the configured certificate, or
// a self-signed one generated now (as MySQL 8 does at first start).
func listenerTLS(t *config.ListenerTLS) (*tls.Config, error) {
	if t.Mode == "off" {
		return nil, nil
	}
	var cert *tls.Certificate
	var err error
	if t.CertFile != "" {
		cert, err = auth.LoadCertificate(t.CertFile, t.KeyFile)
	} else {
		cert, err = auth.SelfSignedTLS("localhost", "127.0.0.1", "::1")
	}
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12}, nil
}

// Start serves every listener in the background. Errors arrive on Err.
func (p *Proxy) Start() {
	for i, srv := range p.servers {
		srv, ln := srv, p.lns[i]
		p.log.Info("listening for MySQL clients", "addr", ln.Addr().String())
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			if err := srv.Serve(ln); err != nil {
				p.fail(err)
			}
		}()
	}
	if p.admin != nil {
		p.log.Info("admin HTTP listening", "addr", p.admin.Addr())
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			if err := p.admin.Serve(); err != nil {
				p.fail(err)
			}
		}()
	}
}

func (p *Proxy) fail(err error) {
	p.errOnce.Do(func() { p.err <- err })
}

// Err delivers the first fatal serving error.
func (p *Proxy) Err() <-chan error { return p.err }

// Addrs returns the client listeners' addresses.
func (p *Proxy) Addrs() []string {
	out := make([]string, len(p.lns))
	for i, ln := range p.lns {
		out[i] = ln.Addr().String()
	}
	return out
}

// AdminAddr returns the admin HTTP address, or "".
func (p *Proxy) AdminAddr() string {
	if p.admin == nil {
		return ""
	}
	return p.admin.Addr()
}

// Cluster returns a cluster by name (for tests and admin).
func (p *Proxy) Cluster(name string) *backend.Cluster { return p.clusters[name] }

// Shutdown stops accepting clients, lets running statements finish until
// ctx ends, closes idle clients with an error, then closes the pools.
func (p *Proxy) Shutdown(ctx context.Context) error {
	var errs []error
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, srv := range p.servers {
		wg.Add(1)
		go func(srv *frontend.Server) {
			defer wg.Done()
			if err := srv.Shutdown(ctx); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}(srv)
	}
	wg.Wait()
	p.Close()
	return errors.Join(errs...)
}

// Close releases everything at once.
func (p *Proxy) Close() {
	p.stopLearning()
	for _, ln := range p.lns {
		_ = ln.Close()
	}
	if p.admin != nil {
		_ = p.admin.Close()
	}
	p.closeClusters()
}

func (p *Proxy) closeClusters() {
	for _, c := range p.clusters {
		c.Close()
	}
}

// ParkedSessions reports idle client sessions held without a goroutine.
func (p *Proxy) ParkedSessions() int {
	n := 0
	for _, s := range p.servers {
		n += s.ParkedSessions()
	}
	return n
}

// Clients reports connected clients.
func (p *Proxy) Clients() int64 {
	var n int64
	for _, s := range p.servers {
		n += s.Clients()
	}
	return n
}

// Reload applies a new configuration's backend states without a restart:
// a backend marked offline is drained (no new statements; running ones
// finish, and pinned sessions move on once they unpin, at their next
// transaction boundary), one marked online takes statements again. It
// returns what differs but needs a restart to apply.
func (p *Proxy) Reload(cfg *config.Config) []string {
	var needRestart []string
	for _, cc := range cfg.Clusters {
		cl := p.clusters[cc.Name]
		if cl == nil {
			needRestart = append(needRestart, fmt.Sprintf("cluster %s is new", cc.Name))
			continue
		}
		backends := append([]config.Backend{cc.Primary}, cc.Replicas...)
		if len(backends) != len(cl.Servers) {
			needRestart = append(needRestart, fmt.Sprintf("cluster %s: servers added or removed", cc.Name))
			continue
		}
		for i, b := range backends {
			s := cl.Servers[i]
			if addr, err := dialConfig(&cc, b.Address); err != nil || addr.Addr != s.Addr() {
				needRestart = append(needRestart, fmt.Sprintf("cluster %s: server %d address changed", cc.Name, i))
				continue
			}
			offline := b.State == "offline"
			if offline != s.Offline() {
				p.log.Info("backend state changed", "cluster", cc.Name, "backend", s.Addr(), "state", b.State)
				s.SetOffline(offline)
			}
		}
		cl.UpdateTopology()
	}
	return needRestart
}

// registerPollerMetrics exports how busy polling fares (server.busy_poll).
func registerPollerMetrics(reg prometheus.Registerer, poller *mysql.Poller) {
	if poller == nil {
		return
	}
	counter := func(result string, value func() uint64) {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "shardgate_busy_polls_total",
			Help:        "Waits for input that polled the socket (server.busy_poll), by whether the input came within the budget.",
			ConstLabels: prometheus.Labels{"result": result},
		}, func() float64 { return float64(value()) }))
	}
	counter("caught", func() uint64 { c, _ := poller.Stats(); return c })
	counter("missed", func() uint64 { _, m := poller.Stats(); return m })
}
