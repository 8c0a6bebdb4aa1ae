// Command shardgate is a MySQL-protocol proxy: it pools and multiplexes
// backend connections behind one MySQL endpoint.
//
//	shardgate serve --config FILE|etcd://HOST:PORT/PREFIX
//	shardgate config push|get|history|rollback|diff --etcd etcd://HOST:PORT/PREFIX
//	shardgate serve --listen 127.0.0.1:6033 --backend USER:PASSWORD@HOST:PORT[/DB] [--admin-http ADDR]
//	shardgate check-config FILE
//	shardgate check-schema FILE
//	shardgate import-kingshard FILE
//	shardgate hash-password [PASSWORD]   (prompts on a terminal, else reads stdin, when no argument)
//	shardgate version
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/mysql/auth"
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
	case "config":
		return configCommand(args[1:], stdout, stderr)
	case "upgrade":
		return upgradeCommand(args[1:], stdout, stderr)
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
  shardgate serve --config etcd://HOST:PORT/PREFIX [--config-cache FILE]   (a fleet sharing its configuration)
  shardgate config push|get|history|rollback|diff --etcd etcd://HOST:PORT/PREFIX
  shardgate upgrade PID                 (live upgrade: the process hands its sockets and sessions to the binary now at its path)
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
