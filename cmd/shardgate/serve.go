package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/fleet"
	"github.com/shardgate/shardgate/internal/proxy"
)

func serve(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("serve", "--config FILE|etcd://HOST:PORT/PREFIX | --backend USER:PASSWORD@HOST:PORT[/DB] [flags]",
		"Runs the proxy until SIGTERM or SIGINT; SIGHUP (or RELOAD CONFIG on the admin SQL port) reloads --config.\n"+
			"With --config etcd://..., the instance applies every revision written there (shardgate config push),\n"+
			"keeps the last good one when a revision is rejected or etcd is away, and registers in the fleet.")
	cfgFile := fs.String("config", "", "YAML configuration file, or etcd://HOST:PORT[,HOST:PORT...]/PREFIX")
	listen := fs.String("listen", "", "quick start: address to listen on (default "+config.DefaultListenAddress+")")
	backendDSN := fs.String("backend", "", "quick start: USER:PASSWORD@HOST:PORT[/DB] of the one backend server")
	adminHTTP := fs.String("admin-http", "", "address of the admin HTTP server: /metrics, /healthz, /readyz, /debug/pprof (overrides admin.http)")
	ef := addEtcdFlags(fs, true)
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "shardgate serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	over := overrides{listen: *listen, adminHTTP: *adminHTTP}
	var src *etcdSource
	var cfg *config.Config
	var err error
	if fleet.IsURL(*cfgFile) && *backendDSN == "" {
		if src, err = openEtcdSource(*cfgFile, ef, over, stderr); src != nil {
			cfg = src.first
			defer src.store.Close()
		}
	} else {
		// A file, the quick start, or both given: loadServeConfig says so.
		cfg, err = loadServeConfig(*cfgFile, *listen, *backendDSN, *adminHTTP)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	log, level := newLogger(cfg, stderr)
	for _, w := range cfg.Warnings() {
		log.Warn(w)
	}
	applyGOMAXPROCS(cfg.Server.GOMAXPROCS, log)
	up, err := inheritUpgrade(log)
	if err != nil {
		log.Error("cannot start as a live upgrade's new process", "err", err)
		return 1
	}
	p, err := proxy.NewInherited(cfg, log, up.listeners)
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	p.SetNextSessionID(up.hello.NextID)
	p.SetBuildVersion(buildVersion())
	r := &reloader{p: p, log: log, level: level, file: *cfgFile, over: over, etcd: src}
	r.shutdownTimeout.Store(int64(cfg.Server.ShutdownTimeout))
	if *cfgFile != "" {
		p.SetReloadFunc(r.reload)
	}
	p.Start()
	up.serve(p, log)
	go p.LogStartup(buildVersion())
	fleetCtx, leaveFleet := context.WithCancel(context.Background())
	var fleetDone sync.WaitGroup
	if src != nil {
		src.run(fleetCtx, &fleetDone, p, r, *ef.advertise, log)
	}
	defer func() {
		leaveFleet()
		fleetDone.Wait()
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	usr2 := make(chan os.Signal, 1)
	signal.Notify(usr2, syscall.SIGUSR2)
wait:
	for {
		select {
		case s := <-sig:
			log.Info("shutting down", "signal", s.String(), "deadline", time.Duration(r.shutdownTimeout.Load()).String())
			break wait
		case <-hup:
			if *cfgFile == "" {
				log.Warn("SIGHUP ignored: started without --config, nothing to reload")
				continue
			}
			log.Debug("SIGHUP: reading the configuration", "source", *cfgFile)
			_, _ = r.reload()
		case <-usr2:
			if liveUpgrade(p, log, stderr, time.Duration(r.shutdownTimeout.Load())) {
				break wait // the rest drains as at SIGTERM
			}
		case err := <-p.Err():
			log.Error("serving failed", "err", err)
			p.Close()
			return 1
		}
	}
	// Leave the fleet's list first: the instance stops being one to count on.
	leaveFleet()
	fleetDone.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.shutdownTimeout.Load()))
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		log.Warn("shutdown deadline reached; remaining clients were disconnected", "err", err)
	}
	log.Info("stopped")
	return 0
}

// overrides are serve's flags that replace values of every configuration
// read, at start and at each reload.
type overrides struct {
	listen, adminHTTP string
}

func (o overrides) apply(cfg *config.Config) {
	if o.adminHTTP != "" {
		cfg.Admin.HTTP = o.adminHTTP
	}
	if o.listen != "" {
		cfg.Listeners = cfg.Listeners[:1]
		cfg.Listeners[0].Address = o.listen
	}
}

// reloader applies a new configuration while serving (proxy.Reload; the
// log level and shutdown timeout here), logging one line per change and a
// summary. SIGHUP and the admin port's RELOAD CONFIG run it for a file; for
// etcd, so does every revision written there. A configuration with errors
// changes nothing.
type reloader struct {
	// mu makes reloads run one at a time, from reading the configuration
	// to the log level: two at once could otherwise apply what each read in
	// the other order, leaving an older one in force.
	mu    sync.Mutex
	p     *proxy.Proxy
	log   *slog.Logger
	level *slog.LevelVar
	file  string // --config: a file, or etcd's URL
	over  overrides
	etcd  *etcdSource // nil for a file
	// lastChanges are the changes of the last etcd revision applied, for
	// RELOAD CONFIG's answer.
	lastChanges []config.Change
	// shutdownTimeout is server.shutdown_timeout as last reloaded.
	shutdownTimeout atomic.Int64
}

// reload returns the changes found, or why nothing was applied.
func (r *reloader) reload() ([]config.Change, error) {
	if r.etcd != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.etcd.follower.Reapply(ctx); err != nil {
			return nil, err
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.lastChanges, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cfg, err := loadServeConfig(r.file, r.over.listen, "", r.over.adminHTTP)
	if err != nil {
		r.report(r.file, err)
		return nil, err
	}
	return r.applyLocked(cfg, r.file)
}

// applyDoc applies an etcd revision: the follower's ApplyFunc.
func (r *reloader) applyDoc(doc fleet.Document) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := r.etcd.docName(doc)
	cfg, err := r.etcd.parse(doc)
	if err != nil {
		r.report(name, err)
		return err
	}
	changes, err := r.applyLocked(cfg, name)
	r.lastChanges = changes
	return err
}

func (r *reloader) applyLocked(cfg *config.Config, source string) ([]config.Change, error) {
	changes, err := r.p.Reload(cfg)
	if err != nil {
		r.report(source, err)
		return nil, err
	}
	logReload(r.log, source, cfg, changes)
	r.level.Set(logLevel(cfg.Log.Level))
	r.shutdownTimeout.Store(int64(cfg.Server.ShutdownTimeout))
	return changes, nil
}

// report logs why a configuration was not applied.
func (r *reloader) report(source string, err error) {
	reportProblems(r.log, source, err)
	r.log.Error("configuration not reloaded: nothing changed; fix it and reload again", "source", source, "err", err)
}

// reportProblems logs a configuration's problems, one line each.
func reportProblems(log *slog.Logger, source string, err error) {
	var ve *config.ValidationError
	if errors.As(err, &ve) {
		for _, pr := range ve.Problems {
			log.Error("configuration problem", "source", source, "problem", pr.String())
		}
	}
}

func logReload(log *slog.Logger, source string, cfg *config.Config, changes []config.Change) {
	for _, w := range cfg.Warnings() {
		log.Warn(w)
	}
	applied, restart := 0, 0
	for _, c := range changes {
		if c.Restart {
			restart++
			log.Warn("configuration change needs a restart; the old value stays in effect", "key", c.Key, "old", c.Old, "new", c.New)
			continue
		}
		applied++
		log.Info("configuration change applied", "key", c.Key, "old", c.Old, "new", c.New)
	}
	log.Info("configuration reloaded", "source", source, "applied", applied, "need_restart", restart)
}

func loadServeConfig(file, listen, backendDSN, adminHTTP string) (*config.Config, error) {
	switch {
	case file != "" && backendDSN != "":
		return nil, errors.New("shardgate serve: use either --config or --backend, not both")
	case file != "":
		cfg, err := config.Load(file)
		if err != nil {
			return nil, err
		}
		overrides{listen: listen, adminHTTP: adminHTTP}.apply(cfg)
		return cfg, nil
	case backendDSN != "":
		return config.QuickStart(listen, backendDSN, adminHTTP)
	}
	return nil, errors.New("shardgate serve: need --config FILE or --backend USER:PASSWORD@HOST:PORT[/DB]")
}
