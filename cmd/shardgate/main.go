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
	log := newLogger(cfg, stderr)
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
wait:
	for {
		select {
		case s := <-sig:
			log.Info("shutting down", "signal", s.String(), "deadline", cfg.Server.ShutdownTimeout.String())
			break wait
		case <-hup:
			reload(p, *cfgFile, log)
		case err := <-p.Err():
			log.Error("serving failed", "err", err)
			p.Close()
			return 1
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownTimeout)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		log.Warn("shutdown deadline reached; remaining clients were disconnected", "err", err)
	}
	log.Info("stopped")
	return 0
}

// reload re-reads the configuration file on SIGHUP and applies what can
// change while serving (backend states: draining); a file with errors
// changes nothing.
func reload(p *proxy.Proxy, file string, log *slog.Logger) {
	if file == "" {
		log.Warn("SIGHUP ignored: started without --config, nothing to reload")
		return
	}
	cfg, err := config.Load(file)
	if err != nil {
		log.Error("configuration not reloaded", "err", err)
		return
	}
	for _, w := range p.Reload(cfg) {
		log.Warn("configuration change needs a restart", "change", w)
	}
	log.Info("configuration reloaded", "file", file)
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

func newLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Log.Level))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
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
