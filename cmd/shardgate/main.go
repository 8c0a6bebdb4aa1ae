// Command shardgate is a MySQL-protocol proxy: it pools and multiplexes
// backend connections behind one MySQL endpoint.
//
//	shardgate serve --config FILE
//	shardgate serve --listen 127.0.0.1:6033 --backend USER:PASSWORD@HOST:PORT[/DB] [--admin-http ADDR]
//	shardgate check-config FILE
//	shardgate check-schema FILE
//	shardgate import-kingshard FILE
//	shardgate hash-password [PASSWORD]   (prompts on a terminal, else reads stdin, when no argument)
//	shardgate version
package main

import (
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
	"sync"
	"sync/atomic"
	"syscall"
	"time"

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
		return serve(args[1:], stdout, stderr)
	case "check-config":
		return checkConfig(args[1:], stdout, stderr)
	case "check-schema":
		return checkSchema(args[1:], stdout, stderr)
	case "hash-password":
		return hashPassword(args[1:], stdin, stdout, stderr)
	case "import-kingshard":
		return importKingshard(args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fs := newFlagSet("version", "", "Prints the version, the commit it was built from and the Go version.")
		if code, done := parseFlags(fs, args[1:], stdout, stderr); done {
			return code
		}
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
  shardgate check-schema FILE           (compares the sub-tables' definitions on the shards)
  shardgate import-kingshard FILE       (prints a shardgate configuration made from a kingshard one)
  shardgate hash-password [PASSWORD]    (prompts for it on a terminal, else reads stdin, when not given)
  shardgate version

Run "shardgate COMMAND --help" for a command's flags.
`)
}

// newFlagSet is a subcommand's flag set; its usage names the command, its
// arguments and what it does. Usage is printed by parseFlags, not by the
// flag package, so that --help goes to stdout and errors to stderr.
func newFlagSet(name, synopsis, doc string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: shardgate %s", name)
		if synopsis != "" {
			fmt.Fprintf(w, " %s", synopsis)
		}
		fmt.Fprintf(w, "\n\n%s\n", doc)
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintln(w, "\nflags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseFlags parses a subcommand's flags. done is true when the command
// must end with code: 0 after --help or -h (usage on stdout), 2 after a bad
// flag (the error and usage on stderr).
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, done bool) {
	usage := fs.Usage
	fs.Usage = func() {} // printed below, to the right stream
	fs.SetOutput(stderr)
	err := fs.Parse(args)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		return 0, true
	case err != nil:
		fs.Usage()
		return 2, true
	}
	return 0, false
}

// parseFileArgs is parseFlags for a command that takes one FILE argument:
// it returns the file, or done with the exit code (help, bad flags, not
// exactly one argument).
func parseFileArgs(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (file string, code int, done bool) {
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return "", code, true
	}
	if fs.NArg() != 1 {
		fs.SetOutput(stderr)
		fs.Usage()
		return "", 2, true
	}
	return fs.Arg(0), 0, false
}

// buildVersion is the version shardgate reports: the -ldflags version, else
// the module version (a release tag when built with go install), else
// v0.0.0-dev; followed by the commit, its time and the Go version when the
// build recorded them.
func buildVersion() string {
	bi, _ := debug.ReadBuildInfo()
	return formatVersion(version, bi)
}

func formatVersion(ldflagsVersion string, bi *debug.BuildInfo) string {
	v := ldflagsVersion
	if bi == nil {
		if v == "" {
			v = "v0.0.0-dev"
		}
		return v
	}
	var rev, at string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if v == "" {
		v = moduleVersion(bi.Main.Version, rev)
	}
	var details []string
	if rev != "" {
		short := rev[:min(len(rev), 7)]
		if dirty {
			short += "+dirty"
		}
		details = append(details, "rev "+short)
	}
	if at != "" {
		details = append(details, at)
	}
	if bi.GoVersion != "" {
		details = append(details, bi.GoVersion)
	}
	if len(details) == 0 {
		return v
	}
	return v + " (" + strings.Join(details, ", ") + ")"
}

// moduleVersion keeps a release version of the main module; a build from a
// checkout has "(devel)" or a pseudo-version made of the commit, which the
// details already say better.
func moduleVersion(mod, rev string) string {
	if mod == "" || mod == "(devel)" || (len(rev) >= 12 && strings.Contains(mod, rev[:12])) {
		return "v0.0.0-dev"
	}
	return mod
}

func serve(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("serve", "--config FILE | --backend USER:PASSWORD@HOST:PORT[/DB] [flags]",
		"Runs the proxy until SIGTERM or SIGINT; SIGHUP (or RELOAD CONFIG on the admin SQL port) reloads --config.")
	cfgFile := fs.String("config", "", "YAML configuration file")
	listen := fs.String("listen", "", "quick start: address to listen on (default "+config.DefaultListenAddress+")")
	backendDSN := fs.String("backend", "", "quick start: USER:PASSWORD@HOST:PORT[/DB] of the one backend server")
	adminHTTP := fs.String("admin-http", "", "address of the admin HTTP server: /metrics, /healthz, /readyz, /debug/pprof (overrides admin.http)")
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "shardgate serve: unexpected argument %q\n", fs.Arg(0))
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
	p.SetBuildVersion(buildVersion())
	r := &reloader{p: p, src: reloadSource{*cfgFile, *listen, *adminHTTP}, log: log, level: level}
	r.shutdownTimeout.Store(int64(cfg.Server.ShutdownTimeout))
	if *cfgFile != "" {
		p.SetReloadFunc(r.reload)
	}
	p.Start()
	go p.LogStartup(buildVersion())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
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
			log.Debug("SIGHUP: reading the configuration", "file", *cfgFile)
			_, _ = r.reload()
		case err := <-p.Err():
			log.Error("serving failed", "err", err)
			p.Close()
			return 1
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.shutdownTimeout.Load()))
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

// reloader re-reads the configuration file and applies what can change
// while serving (proxy.Reload; the log level and shutdown timeout here),
// logging one line per change and a summary. SIGHUP and the admin port's
// RELOAD CONFIG both run it. A file with errors changes nothing.
type reloader struct {
	// mu makes reloads run one at a time, from reading the file to the
	// log level: two at once could otherwise apply the file each read in
	// the other order, leaving an older one in force.
	mu    sync.Mutex
	p     *proxy.Proxy
	src   reloadSource
	log   *slog.Logger
	level *slog.LevelVar
	// shutdownTimeout is server.shutdown_timeout as last reloaded.
	shutdownTimeout atomic.Int64
}

// reload returns the changes found, or why nothing was applied.
func (r *reloader) reload() ([]config.Change, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cfg, err := loadServeConfig(r.src.file, r.src.listen, "", r.src.adminHTTP)
	if err == nil {
		var changes []config.Change
		if changes, err = r.p.Reload(cfg); err == nil {
			logReload(r.log, r.src.file, cfg, changes)
			r.level.Set(logLevel(cfg.Log.Level))
			r.shutdownTimeout.Store(int64(cfg.Server.ShutdownTimeout))
			return changes, nil
		}
	}
	var ve *config.ValidationError
	if errors.As(err, &ve) {
		for _, pr := range ve.Problems {
			r.log.Error("configuration problem", "problem", pr.String())
		}
	}
	r.log.Error("configuration not reloaded: nothing changed; fix the file and reload again", "file", r.src.file, "err", err)
	return nil, err
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
	fs := newFlagSet("check-config", "FILE",
		"Loads and validates FILE and reports every problem as FILE:LINE: KEY: REASON (exit status 1).\n"+
			"A valid file's schemas are printed: each listed table, its rule and which sub-tables live on which cluster.")
	file, code, done := parseFileArgs(fs, args, stdout, stderr)
	if done {
		return code
	}
	cfg, err := config.Load(file)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintln(stderr, "warning:", w)
	}
	fmt.Fprintf(stdout, "%s: OK (%d listener(s), %d user(s), %d cluster(s), %d schema(s))\n",
		file, len(cfg.Listeners), len(cfg.Users), len(cfg.Clusters), len(cfg.Schemas))
	if err := printLayout(stdout, cfg); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

func hashPassword(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("hash-password", "[PASSWORD]",
		"Prints the stored form of a password for users[].password_hash. Without PASSWORD it asks\n"+
			"twice on a terminal (without echo), else reads one line from stdin. A password\n"+
			"starting with - goes after --.")
	if code, done := parseFlags(fs, args, stdout, stderr); done {
		return code
	}
	var pw string
	switch fs.NArg() {
	case 0:
		var err error
		if pw, err = readPassword(stdin, stderr); err != nil {
			fmt.Fprintln(stderr, "hash-password:", err)
			return 1
		}
	case 1:
		pw = fs.Arg(0)
	default:
		fs.SetOutput(stderr)
		fs.Usage()
		return 2
	}
	if pw == "" {
		fmt.Fprintln(stderr, "hash-password: the password is empty; refusing to hash it (an empty password lets anyone who knows the user name log in)")
		return 1
	}
	fmt.Fprintln(stdout, auth.HashPassword(pw))
	return 0
}
