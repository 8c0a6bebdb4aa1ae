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
	"maps"
	"net"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardgate/shardgate/internal/admin"
	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/frontend"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/mysql/auth"
	"github.com/shardgate/shardgate/internal/planner"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sequence"
	"github.com/shardgate/shardgate/internal/telemetry"
	"github.com/shardgate/shardgate/internal/tracing"
	"github.com/shardgate/shardgate/internal/xa"
)

// Proxy is a running shardgate.
type Proxy struct {
	cfg      atomic.Pointer[config.Config] // what runs now (runningConfig); Reload replaces it
	log      *slog.Logger
	servers  []*frontend.Server
	guard    *frontend.AuthGuard // failed logins, for every listener
	lns      []net.Listener
	admin    *admin.Server
	registry *prometheus.Registry
	metrics  *frontend.Metrics     // the client listeners'
	fleet    atomic.Pointer[Fleet] // nil unless the configuration comes from etcd
	draining atomic.Bool           // Shutdown began
	// inherited are listening sockets a live upgrade handed over, by
	// configured address, until a listener takes its own (upgrade.go).
	inherited map[string]*os.File

	// The admin SQL port (adminsource.go): its server and listener, nil
	// when admin.sql is off, and its accounts, swapped whole by Reload.
	adminSQL   *frontend.Server
	adminLn    net.Listener
	adminUsers atomic.Pointer[map[string]*frontend.User]
	// ids numbers the sessions of every listener, so that a connection id
	// names one session of the proxy.
	ids atomic.Uint32
	// What the admin views read besides the clusters: statement telemetry,
	// the start time, the recent QPS, shardgate's build version and the
	// binary's RELOAD CONFIG.
	telemetry    *telemetry.Recorder
	tracer       *tracing.Tracer // nil: tracing off
	started      time.Time
	qps          qpsSampler
	history      *admin.History // the status page's charts (history.go)
	buildVersion atomic.Pointer[string]
	reloadFn     atomic.Pointer[ReloadFunc]

	// users is swapped whole by Reload; a login looks a user up in it.
	users atomic.Pointer[map[string]*frontend.User]
	// accounts are the logins of the backend's own accounts (a cluster's
	// users: from_backend); nil without.
	accounts *backendAccounts

	reloadMu sync.Mutex // one Reload at a time, from reading the running configuration to replacing it
	// stepMu is held while a Reload changes the clusters' servers and the
	// running configuration together, and by those that need the two in
	// step (a configured address naming each server). A Reload takes it
	// only once it has resolved host names: the admin views do not wait
	// for DNS.
	stepMu   sync.Mutex
	mu       sync.Mutex // guards clusters and poolCollectors, which Reload extends
	clusters map[string]*backend.Cluster
	// keyspaces are the sharded schemas bound to clusters, replaced by a
	// reload that adds schemas or tables (schemas.go).
	keyspaces atomic.Pointer[planner.Keyspaces]
	// sequences are the keyspaces' sequence stores by schema (sequences.go).
	sequences map[string]*sequence.Store
	// Atomic transactions across shards (transactions.go).
	xaReg          *xa.Registry
	xaMetrics      *xa.Metrics
	recoverer      *xa.Recoverer // nil: no atomic schema
	recoveryCancel context.CancelFunc
	// poolCollectors are the pools' metrics, unregistered when a reload
	// removes a server.
	poolCollectors map[*backend.Pool]prometheus.Collector

	wg        sync.WaitGroup
	errOnce   sync.Once
	err       chan error
	closeOnce sync.Once
	closed    chan struct{} // closed by Close

	// The primary's identity, when it could not be learnt at start, is
	// learnt later (identity.go).
	learnPending bool
	learnCancel  context.CancelFunc
	learnDone    chan struct{}
}

// New builds the proxy and opens its listeners; Start begins serving.
func New(cfg *config.Config, log *slog.Logger) (*Proxy, error) {
	return NewInherited(cfg, log, nil)
}

// NewInherited is New for the new process of a live upgrade: it serves on
// the listening sockets the old process handed over (by configured
// address) where the configuration lists the same addresses.
func NewInherited(cfg *config.Config, log *slog.Logger, listeners map[string]*os.File) (*Proxy, error) {
	p := &Proxy{log: log, clusters: map[string]*backend.Cluster{}, inherited: listeners,
		poolCollectors: map[*backend.Pool]prometheus.Collector{}, registry: prometheus.NewRegistry(), err: make(chan error, 1),
		closed: make(chan struct{}), started: time.Now(),
		history: admin.NewHistory(admin.HistoryLength)}
	p.cfg.Store(cfg)
	if err := p.buildClusters(); err != nil {
		p.closeClusters()
		return nil, err
	}
	if err := p.buildKeyspaces(); err != nil {
		p.closeClusters()
		return nil, err
	}
	if err := p.buildSequences(); err != nil {
		p.closeClusters()
		return nil, err
	}
	if err := p.buildTransactions(); err != nil {
		p.closeClusters()
		return nil, err
	}
	if err := p.buildUsers(); err != nil {
		p.closeClusters()
		return nil, err
	}
	if err := p.buildAccounts(); err != nil {
		p.closeClusters()
		return nil, err
	}
	if err := p.buildServers(); err != nil {
		p.Close()
		return nil, err
	}
	for addr, f := range p.inherited {
		p.log.Warn("live upgrade: the old process listened on an address this configuration does not list; closed here", "addr", addr)
		f.Close()
	}
	p.inherited = nil
	return p, nil
}

// buildKeyspaces binds the sharded schemas to their clusters.
func (p *Proxy) buildKeyspaces() error {
	schemas, err := p.runningConfig().ShardingSchemas()
	if err != nil {
		return err
	}
	var all planner.Keyspaces
	for _, s := range schemas {
		ks, err := planner.NewKeyspace(s, p.clusters)
		if err != nil {
			return err
		}
		if all == nil {
			all = planner.Keyspaces{}
		}
		all[s.Name] = ks
	}
	p.keyspaces.Store(&all)
	return nil
}

func (p *Proxy) buildClusters() error {
	cfg := p.runningConfig()
	for i := range cfg.Clusters {
		cc := &cfg.Clusters[i]
		dcs, err := clusterDialConfigs(cc)
		if err != nil {
			return err
		}
		p.clusters[cc.Name] = p.newCluster(cc, dcs)
	}
	return nil
}

// clusterDialConfigs resolves the dial configurations of a cluster's
// servers, the primary first.
func clusterDialConfigs(cc *config.Cluster) ([]*backend.DialConfig, error) {
	var dcs []*backend.DialConfig
	for _, b := range append([]config.Backend{cc.Primary}, cc.Replicas...) {
		dc, err := dialConfig(cc, b.Address)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", cc.Name, err)
		}
		dcs = append(dcs, dc)
	}
	return dcs, nil
}

// newCluster starts a cluster over servers dialed with dcs (the primary's
// first, then the replicas' in configuration order) and exports its
// metrics.
func (p *Proxy) newCluster(cc *config.Cluster, dcs []*backend.DialConfig) *backend.Cluster {
	var servers []*backend.Server
	for j, b := range append([]config.Backend{cc.Primary}, cc.Replicas...) {
		name := cc.Name + "/primary"
		if j > 0 {
			name = fmt.Sprintf("%s/replica%d", cc.Name, j)
		}
		servers = append(servers, p.newServer(cc, name, dcs[j], b))
	}
	cl := backend.NewCluster(cc.Name, servers, healthConfig(cc), p.log)
	p.register(backend.NewServerCollector(cl))
	return cl
}

// newServer starts a server's pool and exports its metrics and its
// evaluator pool's.
func (p *Proxy) newServer(cc *config.Cluster, name string, dc *backend.DialConfig, b config.Backend) *backend.Server {
	pool := backend.NewPool(name, dc, poolConfig(cc), p.log)
	p.registerPool(pool)
	p.registerPool(pool.Evaluator())
	s := backend.NewServer(pool, b.Weight, breakerConfig(cc))
	s.SetOffline(b.State == "offline")
	return s
}

// registerPool exports a pool's metrics.
func (p *Proxy) registerPool(pool *backend.Pool) {
	pc := backend.NewPoolCollector(pool)
	if p.register(pc) {
		p.mu.Lock()
		p.poolCollectors[pool] = pc
		p.mu.Unlock()
	}
}

// register exports a collector; a clash (a bug) costs the metrics, not the
// proxy.
func (p *Proxy) register(c prometheus.Collector) bool {
	if err := p.registry.Register(c); err != nil {
		p.log.Error("metrics not exported", "err", err)
		return false
	}
	return true
}

func poolConfig(cc *config.Cluster) backend.PoolConfig {
	return backend.PoolConfig{
		MaxOpen: cc.Pool.MaxOpen, MaxIdle: cc.Pool.MaxIdle, MinIdle: cc.Pool.MinIdle,
		IdleTimeout: cc.Pool.IdleTimeout, MaxLifetime: cc.Pool.MaxLifetime,
		WaitTimeout: cc.Pool.WaitTimeout, MaxWaiters: cc.Pool.MaxWaiters,
		HealthCheckInterval: cc.Pool.HealthCheckInterval, ConnectTimeout: cc.Pool.ConnectTimeout,
		EvaluatorMaxOpen:    cc.Pool.EvaluatorMaxOpen,
		PipelineConnections: cc.Pool.PipelineConnections, PipelineDepth: cc.Pool.PipelineDepth,
	}
}

func breakerConfig(cc *config.Cluster) backend.BreakerConfig {
	return backend.BreakerConfig{Failures: cc.Health.Failures, Backoff: cc.Health.Backoff, MaxBackoff: cc.Health.MaxBackoff}
}

func healthConfig(cc *config.Cluster) backend.HealthConfig {
	return backend.HealthConfig{Interval: cc.Health.Interval, Timeout: cc.Health.Timeout, Reconnect: cc.Health.ReconnectInterval}
}

// DialConfig is how the proxy connects to the server at address of
// cluster cc, for tools that talk to the backends as it does
// (shardgate check-schema).
func DialConfig(cc *config.Cluster, address string) (*backend.DialConfig, error) {
	return dialConfig(cc, address)
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
	cfg := p.runningConfig()
	users := map[string]*frontend.User{}
	for _, u := range cfg.Users {
		stored, err := storedPassword(u)
		if err != nil {
			return err
		}
		users[u.Name] = newUser(u, stored, p.clusters[u.Cluster], policy(cfg, u))
	}
	p.users.Store(&users)
	return nil
}

// newUser makes the record logins as u check against.
func newUser(u config.User, stored auth.Stored, cl *backend.Cluster, pol *router.Policy) *frontend.User {
	fu := frontend.NewUser(u.Name, stored, cl, u.DefaultDatabase, pol)
	fu.Admin, fu.Process = u.Admin, u.Process
	return fu
}

// storedPassword is the form of a user's password logins are checked
// against.
func storedPassword(u config.User) (auth.Stored, error) {
	if u.PasswordHash == "" {
		return auth.StoredFromPlain(u.Password), nil
	}
	stored, err := auth.ParseStored(u.PasswordHash)
	if err != nil {
		return stored, fmt.Errorf("user %s: %w", u.Name, err)
	}
	return stored, nil
}

// userCluster names the cluster whose routing policy a user follows: its
// own, or for a user that reaches its data through sharded schemas, the
// default cluster of its default database's schema (else the first
// schema's).
func userCluster(cfg *config.Config, u config.User) string {
	if u.Cluster != "" || len(cfg.Schemas) == 0 {
		return u.Cluster
	}
	for _, s := range cfg.Schemas {
		if s.Name == u.DefaultDatabase {
			return s.DefaultCluster
		}
	}
	return cfg.Schemas[0].DefaultCluster
}

// policy builds a user's read/write splitting policy: its cluster's
// routing, with the user's read_from when set.
func policy(cfg *config.Config, u config.User) *router.Policy {
	var r config.Routing
	if c := cfg.Cluster(userCluster(cfg, u)); c != nil {
		r = c.Routing
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
	cfg := p.runningConfig()
	rsaKey, err := p.rsaKey()
	if err != nil {
		return err
	}
	ident := p.startIdentity()
	metrics := frontend.NewMetrics(p.registry)
	p.metrics = metrics
	rec, err := telemetry.New(telemetryConfig(cfg), p.registry, p.log)
	if err != nil {
		return err
	}
	p.telemetry = rec
	tc := cfg.Telemetry.Tracing
	p.tracer, err = tracing.New(tracing.Options{Endpoint: tc.Endpoint, SampleRatio: tc.SampleRatio, ServiceName: tc.ServiceName})
	if err != nil {
		return err
	}
	p.guard = frontend.NewAuthGuard(authDelay(cfg), p.log, metrics)
	poller := mysql.NewPoller(cfg.Server.BusyPoll, runtime.NumCPU())
	registerPollerMetrics(p.registry, poller)
	for i, l := range cfg.Listeners {
		tc, err := listenerTLS(&l.TLS)
		if err != nil {
			return fmt.Errorf("listener %s: %w", l.Address, err)
		}
		if i == 0 {
			// The admin port offers the first listener's TLS.
			if err := p.buildAdminSQL(ident, tc, l.TLS.Mode == "required", rsaKey); err != nil {
				return err
			}
		}
		srv, err := frontend.NewServer(frontend.Options{
			Identity: ident, FullAuth: cfg.Server.CachingSHA2FullAuth, TLS: tc, TLSRequired: l.TLS.Mode == "required",
			RSAKey: rsaKey, Users: p.lookupUser, BackendUser: p.backendUser, ClientIdleTimeout: cfg.Server.ClientIdleTimeout,
			NetReadTimeout: cfg.Server.NetReadTimeout, NetWriteTimeout: cfg.Server.NetWriteTimeout,
			HandshakeTimeout: cfg.Server.HandshakeTimeout, MaxConnections: l.MaxConnections,
			ReservedAdmin: l.ReservedAdminConnections, MaxStmtsPerSess: cfg.Server.MaxPreparedStatementsPerSession,
			Log: p.log, Metrics: metrics, Poller: poller, AuthGuard: p.guard, Keyspaces: p.keyspaceMap(), XA: p.xaReg, XAMetrics: p.xaMetrics, IDs: &p.ids, Peer: p.clientSession,
			Peers:     p.clientSessions,
			Telemetry: p.telemetry, Tracer: p.tracer,
		})
		if err != nil {
			return err
		}
		ln, err := p.listenTCP(l.Address, l.ReusePort)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", l.Address, err)
		}
		p.servers = append(p.servers, srv)
		p.lns = append(p.lns, ln)
	}
	if cfg.Admin.HTTP != "" {
		ln, err := p.listenTCP(cfg.Admin.HTTP, adminReusePort(cfg))
		if err != nil {
			return fmt.Errorf("admin listen on %s: %w", cfg.Admin.HTTP, err)
		}
		p.admin = admin.ListenOn(ln, p.registry, p.Ready, p, p.log)
	}
	p.startLearning()
	return nil
}

// telemetryConfig is the telemetry section for the recorder.
func telemetryConfig(cfg *config.Config) telemetry.Config {
	t := cfg.Telemetry
	return telemetry.Config{Enabled: t.Enabled, Digests: t.Digests, MaxDigests: t.MaxDigests,
		SlowLog: telemetry.SlowLogConfig{File: t.SlowLog.File, Threshold: t.SlowLog.Threshold,
			SampleRate: t.SlowLog.SampleRate, MaskLiterals: t.SlowLog.MaskLiterals}}
}

// Telemetry returns the proxy's statement telemetry (the digests of SHOW
// QUERY DIGESTS).
func (p *Proxy) Telemetry() *telemetry.Recorder { return p.telemetry }

// authDelay is server.auth_failure_delay for the frontend.
func authDelay(cfg *config.Config) frontend.AuthDelayConfig {
	d := cfg.Server.AuthFailureDelay
	return frontend.AuthDelayConfig{Threshold: d.Threshold, MinDelay: d.MinDelay, MaxDelay: d.MaxDelay}
}

func (p *Proxy) lookupUser(name string) *frontend.User { return (*p.users.Load())[name] }

func (p *Proxy) rsaKey() (*rsa.PrivateKey, error) {
	cfg := p.runningConfig()
	if cfg.Server.RSAPrivateKeyFile != "" {
		return auth.LoadRSAKeyPair(cfg.Server.RSAPrivateKeyFile, cfg.Server.RSAPublicKeyFile)
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
	p.startKeyTypes()
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
	p.wg.Add(1)
	go p.sampleQPS()
	p.wg.Add(1)
	go p.sampleHistory()
	p.startRecovery()
	if p.adminSQL != nil {
		p.log.Info("admin SQL listening", "addr", p.adminLn.Addr().String())
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			if err := p.adminSQL.Serve(p.adminLn); err != nil {
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
func (p *Proxy) Cluster(name string) *backend.Cluster {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.clusters[name]
}

// Shutdown drains the proxy (frontend.Server.Shutdown): /readyz says it is
// draining, the listeners close, sessions end at a statement boundary or
// once idle, transactions finish until ctx ends; then the pools close.
func (p *Proxy) Shutdown(ctx context.Context) error {
	p.draining.Store(true)
	var errs []error
	var wg sync.WaitGroup
	var mu sync.Mutex
	servers := p.servers
	if p.adminSQL != nil {
		servers = append(slices.Clip(servers), p.adminSQL)
	}
	for _, srv := range servers {
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
	p.closeOnce.Do(func() { close(p.closed) })
	p.stopLearning()
	if p.guard != nil {
		p.guard.Close()
	}
	for _, ln := range p.lns {
		_ = ln.Close()
	}
	if p.adminLn != nil {
		_ = p.adminLn.Close()
	}
	if p.admin != nil {
		_ = p.admin.Close()
	}
	if p.telemetry != nil {
		if err := p.telemetry.Close(); err != nil {
			p.log.Warn("closing the slow log", "err", err)
		}
	}
	p.closeTracer()
	p.stopRecovery()
	p.closeSequences()
	p.closeAccounts()
	p.closeClusters()
}

// closeTracer exports the spans not sent yet, waiting a little for the
// collector.
func (p *Proxy) closeTracer() {
	if p.tracer == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := p.tracer.Shutdown(ctx); err != nil {
		p.log.Warn("the last statement spans could not be exported", "err", err,
			"endpoint", p.runningConfig().Telemetry.Tracing.Endpoint)
	}
}

func (p *Proxy) closeClusters() {
	p.mu.Lock()
	clusters := maps.Values(p.clusters)
	p.mu.Unlock()
	for c := range clusters {
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

// keyspaceMap is the sharded schemas now.
func (p *Proxy) keyspaceMap() planner.Keyspaces {
	if m := p.keyspaces.Load(); m != nil {
		return *m
	}
	return nil
}
