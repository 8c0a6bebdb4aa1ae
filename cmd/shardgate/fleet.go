package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/fleet"
	"github.com/shardgate/shardgate/internal/proxy"
)

// etcdFlags are the flags that say how to reach etcd: serve's (with the
// cache and the advertised address) and the config commands'.
type etcdFlags struct {
	cacert, cert, key, user *string
	cache, advertise        *string // serve only
}

// etcdPasswordEnv holds etcd's password, kept out of the command line.
const etcdPasswordEnv = "SHARDGATE_ETCD_PASSWORD"

func addEtcdFlags(fs *flag.FlagSet, serve bool) *etcdFlags {
	ef := &etcdFlags{
		cacert: fs.String("etcd-cacert", "", "etcd: CA certificate (PEM) that turns TLS on and verifies etcd's certificate"),
		cert:   fs.String("etcd-cert", "", "etcd: client certificate (PEM) for TLS client authentication"),
		key:    fs.String("etcd-key", "", "etcd: the client certificate's key (PEM)"),
		user:   fs.String("etcd-user", "", "etcd: user name for etcd's authentication (password in $"+etcdPasswordEnv+")"),
	}
	if serve {
		ef.cache = fs.String("config-cache", "", "etcd: file keeping the last good configuration revision, to start from when etcd is down")
		ef.advertise = fs.String("advertise", "", "etcd: HOST:PORT the fleet lists for this instance (default: the first listener, with this host's name for an unspecified address)")
	}
	return ef
}

func (ef *etcdFlags) options(url string) (fleet.Options, error) {
	o, err := fleet.ParseURL(url)
	if err != nil {
		return o, err
	}
	o.CACert, o.Cert, o.Key, o.Username = *ef.cacert, *ef.cert, *ef.key, *ef.user
	o.Password = os.Getenv(etcdPasswordEnv)
	return o, nil
}

// etcdSource is serve's configuration in etcd.
type etcdSource struct {
	store    *fleet.Store
	follower *fleet.Follower
	over     overrides
	first    *config.Config // the configuration to start with
	log      *slog.Logger   // until the configuration says how to log
}

// startTimeout bounds the wait for etcd at start before the cached
// configuration is used.
const startTimeout = 5 * time.Second

// openEtcdSource reads the configuration to start with: etcd's current
// revision, or the cached last good one.
func openEtcdSource(url string, ef *etcdFlags, over overrides, stderr io.Writer) (*etcdSource, error) {
	o, err := ef.options(url)
	if err != nil {
		return nil, fmt.Errorf("shardgate serve: --config: %w", err)
	}
	store, err := fleet.Open(o)
	if err != nil {
		return nil, fmt.Errorf("shardgate serve: %w", err)
	}
	src := &etcdSource{store: store, over: over, log: slog.New(slog.NewTextHandler(stderr, nil))}
	src.follower = fleet.NewFollower(store, *ef.cache, src.log)
	err = src.follower.Start(context.Background(), startTimeout, func(doc fleet.Document) error {
		cfg, err := src.parse(doc)
		if err != nil {
			reportProblems(src.log, src.docName(doc), err)
			return err
		}
		src.first = cfg
		return nil
	})
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("shardgate serve: no configuration to start with from %s: %w", url, err)
	}
	return src, nil
}

// docName names a revision in messages, as a file name would be.
func (s *etcdSource) docName(doc fleet.Document) string {
	return s.store.URL() + "@" + strconv.FormatInt(doc.Revision, 10)
}

// parse validates a revision as a configuration file is validated; file
// paths in it are relative to the working directory.
func (s *etcdSource) parse(doc fleet.Document) (*config.Config, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	cfg, err := config.ParseIn(doc.Data, s.docName(doc), wd)
	if err != nil {
		return nil, err
	}
	s.over.apply(cfg)
	return cfg, nil
}

// fleetView is what the proxy shows of the fleet.
type fleetView struct {
	reg      *fleet.Registry
	follower *fleet.Follower
}

func (v fleetView) Instances() []fleet.Instance { return v.reg.Instances() }
func (v fleetView) Self() fleet.Instance        { return v.reg.Self() }
func (v fleetView) ConfigState() fleet.State    { return v.follower.State() }

// run follows etcd and registers the instance until ctx ends; done is
// released when both have stopped (the registration revoked).
func (s *etcdSource) run(ctx context.Context, done *sync.WaitGroup, p *proxy.Proxy, r *reloader, advertise string, log *slog.Logger) {
	s.follower.SetLog(log)
	self := fleet.Instance{
		Address: advertised(advertise, p.Addrs()),
		Admin:   p.AdminAddr(),
		Version: buildVersion(),
		Started: time.Now().UTC(),
		PID:     os.Getpid(),
	}
	self.Host, _ = os.Hostname()
	self.ID = self.Host + "-" + strconv.Itoa(self.PID)
	st := s.follower.State()
	self.ConfigRevision, self.ConfigChecksum = st.Applied, st.Checksum
	reg := fleet.NewRegistry(s.store, self, log)
	s.follower.OnApplied(reg.SetConfig)
	p.SetFleet(fleetView{reg: reg, follower: s.follower})
	done.Add(2)
	go func() { defer done.Done(); s.follower.Run(ctx, r.applyDoc) }()
	go func() { defer done.Done(); reg.Run(ctx) }()
	log.Info("following the configuration in etcd", "source", s.store.URL(), "revision", st.Applied,
		"from_cache", st.FromCache, "instance", self.ID, "advertised", self.Address)
}

// advertised is the address the fleet lists for this instance: --advertise,
// else the first listener's, with the host's name when it listens on every
// address.
func advertised(flagValue string, addrs []string) string {
	if flagValue != "" || len(addrs) == 0 {
		return flagValue
	}
	host, port, err := net.SplitHostPort(addrs[0])
	if err != nil {
		return addrs[0]
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if name, err := os.Hostname(); err == nil {
			host = name
		}
	}
	return net.JoinHostPort(host, port)
}
