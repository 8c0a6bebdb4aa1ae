// Command shardgate is a MySQL-protocol proxy: it pools and multiplexes
// backend connections behind one MySQL endpoint.
//
//	shardgate serve --config FILE
//	shardgate serve --listen 127.0.0.1:6033 --backend USER:PASSWORD@HOST:PORT[/DB] [--admin-http ADDR]
//	shardgate check-config FILE
//	shardgate hash-password [PASSWORD]   (reads stdin when no argument)
//	shardgate version
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/mysql/auth"
	"github.com/shardgate/shardgate/internal/proxy"
)

// version is set at build time with -ldflags "-X main.version=..."; without
// it the module's build info is used.
var version = ""

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stderr)
	case "check-config":
		return checkConfig(args[1:], stdout, stderr)
	case "hash-password":
		return hashPassword(args[1:], stdin, stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "shardgate", buildVersion())
		return 0
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "shardgate: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  shardgate serve --config FILE
  shardgate serve --listen 127.0.0.1:6033 --backend USER:PASSWORD@HOST:PORT[/DB] [--admin-http ADDR]
  shardgate check-config FILE
  shardgate hash-password [PASSWORD]    (reads the password from stdin when not given)
  shardgate version
`)
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
		if bi.Main.Version != "" {
			return bi.Main.Version
		}
	}
	return "dev"
}

func serve(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgFile := fs.String("config", "", "YAML configuration file")
	listen := fs.String("listen", "", "quick start: address to listen on (default "+config.DefaultListenAddress+")")
	backendDSN := fs.String("backend", "", "quick start: USER:PASSWORD@HOST:PORT[/DB] of the one backend server")
	adminHTTP := fs.String("admin-http", "", "address for /metrics and /debug/pprof (overrides admin.http)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := loadServeConfig(*cfgFile, *listen, *backendDSN, *adminHTTP)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	log, level := newLogger(cfg, stderr)
	for _, w := range cfg.Warnings() {
		log.Warn(w)
	}
	applyGOMAXPROCS(cfg.Server.GOMAXPROCS, log)
	p, err := proxy.New(cfg, log)
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	p.Start()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	shutdownTimeout := cfg.Server.ShutdownTimeout
wait:
	for {
		select {
		case s := <-sig:
			log.Info("shutting down", "signal", s.String(), "deadline", shutdownTimeout.String())
			break wait
		case <-hup:
			if c := reload(p, reloadSource{*cfgFile, *listen, *adminHTTP}, log, level); c != nil {
				shutdownTimeout = c.Server.ShutdownTimeout
			}
		case err := <-p.Err():
			log.Error("serving failed", "err", err)
			p.Close()
			return 1
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		log.Warn("shutdown deadline reached; remaining clients were disconnected", "err", err)
	}
	log.Info("stopped")
	return 0
}

// reloadSource is where serve's configuration came from: the file and the
// flags that override it, applied again on every reload.
type reloadSource struct {
	file, listen, adminHTTP string
}

// reload re-reads the configuration file on SIGHUP and applies what can
// change while serving (proxy.Reload; the log level here), logging one
// line per change and a summary. A file with errors changes nothing. It
// returns the configuration read, or nil when nothing was applied.
func reload(p *proxy.Proxy, src reloadSource, log *slog.Logger, level *slog.LevelVar) *config.Config {
	if src.file == "" {
		log.Warn("SIGHUP ignored: started without --config, nothing to reload")
		return nil
	}
	log.Debug("SIGHUP: reading the configuration", "file", src.file)
	cfg, err := loadServeConfig(src.file, src.listen, "", src.adminHTTP)
	if err == nil {
		var changes []config.Change
		if changes, err = p.Reload(cfg); err == nil {
			logReload(log, src.file, cfg, changes)
			level.Set(logLevel(cfg.Log.Level))
			return cfg
		}
	}
	var ve *config.ValidationError
	if errors.As(err, &ve) {
		for _, pr := range ve.Problems {
			log.Error("configuration problem", "problem", pr.String())
		}
	}
	log.Error("configuration not reloaded: nothing changed; fix the file and send SIGHUP again", "file", src.file, "err", err)
	return nil
}

func logReload(log *slog.Logger, file string, cfg *config.Config, changes []config.Change) {
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
	log.Info("configuration reloaded", "file", file, "applied", applied, "need_restart", restart)
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
		if adminHTTP != "" {
			cfg.Admin.HTTP = adminHTTP
		}
		if listen != "" {
			cfg.Listeners = cfg.Listeners[:1]
			cfg.Listeners[0].Address = listen
		}
		return cfg, nil
	case backendDSN != "":
		return config.QuickStart(listen, backendDSN, adminHTTP)
	}
	return nil, errors.New("shardgate serve: need --config FILE or --backend USER:PASSWORD@HOST:PORT[/DB]")
}

// newLogger returns the proxy's logger and its level, which a reload sets.
func newLogger(cfg *config.Config, w io.Writer) (*slog.Logger, *slog.LevelVar) {
	level := new(slog.LevelVar)
	level.Set(logLevel(cfg.Log.Level))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), level
	}
	return slog.New(slog.NewTextHandler(w, opts)), level
}

// logLevel maps log.level (validated) to a slog level.
func logLevel(name string) slog.Level {
	var level slog.Level
	_ = level.UnmarshalText([]byte(name))
	return level
}

func checkConfig(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: shardgate check-config FILE")
		return 2
	}
	cfg, err := config.Load(args[0])
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintln(stderr, "warning:", w)
	}
	fmt.Fprintf(stdout, "%s: OK (%d listener(s), %d user(s), %d cluster(s))\n",
		args[0], len(cfg.Listeners), len(cfg.Users), len(cfg.Clusters))
	return 0
}

func hashPassword(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var pw string
	switch len(args) {
	case 0:
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			fmt.Fprintln(stderr, "hash-password: read stdin:", err)
			return 1
		}
		pw = strings.TrimRight(line, "\r\n")
	case 1:
		pw = args[0]
	default:
		fmt.Fprintln(stderr, "usage: shardgate hash-password [PASSWORD]")
		return 2
	}
	fmt.Fprintln(stdout, auth.HashPassword(pw))
	return 0
}
