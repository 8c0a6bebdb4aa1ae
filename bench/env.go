package bench

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shardgate/shardgate/internal/testenv"
)

// Target is what sysbench or the rate generator connects to.
type Target string

// The targets.
const (
	Direct    Target = "direct"    // mariadbd itself
	Relay     Target = "relay"     // HAProxy in TCP mode in front of it
	Shardgate Target = "shardgate" // shardgate in front of it
	// Sharded is shardgate with the sysbench tables hash-sharded on id
	// over ShardedShards shards of ShardedSubTables sub-tables each
	// (sharded.go). Only the tests in ShardedTests run on it.
	Sharded Target = "sharded"
	// ShardgateNoTele is shardgate with statement telemetry off
	// (telemetry.enabled: false), beside Shardgate in the same run, to
	// measure what telemetry costs. Only on request (--targets).
	ShardgateNoTele Target = "shardgate-notele"
	// ShardgatePipelined is shardgate pipelining reads
	// (pool.pipeline_connections, PipelinedPool), beside Shardgate (one
	// at a time) and the relay: issue 23 §1.
	ShardgatePipelined Target = "pipelined"
	// ShardgateBase and ShardedBase are Shardgate and Sharded run by a
	// second build (EnvOptions.BaseBin or BaseRef: the code before a
	// change), interleaved with them in the same run, so that a change's
	// before and after meet the same machine. Only on request (--targets).
	ShardgateBase Target = "shardgate-base"
	ShardedBase   Target = "sharded-base"
)

// IsSharded reports a target whose tables are sharded (Sharded, or
// ShardedBase).
func (t Target) IsSharded() bool { return t == Sharded || t == ShardedBase }

// Unsharded is the unsharded shardgate target of the same build as t.
func (t Target) Unsharded() Target {
	if t == ShardedBase {
		return ShardgateBase
	}
	return Shardgate
}

// ShardedOf are the sharded targets in targets, Sharded first.
func ShardedOf(targets []Target) []Target {
	var ts []Target
	for _, t := range []Target{Sharded, ShardedBase} {
		if slices.Contains(targets, t) {
			ts = append(ts, t)
		}
	}
	return ts
}

// AllTargets lists the unsharded targets in their default order (round 1).
var AllTargets = []Target{Direct, Relay, Shardgate}

// MatrixTargets are the targets of the default matrix: the unsharded ones
// and Sharded.
var MatrixTargets = []Target{Direct, Relay, Shardgate, ShardgatePipelined, Sharded}

// ParseTarget checks a target name.
func ParseTarget(s string) (Target, error) {
	for _, t := range append(slices.Clone(MatrixTargets), ShardgateNoTele, ShardgateBase, ShardedBase) {
		if string(t) == s {
			return t, nil
		}
	}
	return "", fmt.Errorf("unknown target %q (want direct, relay, shardgate, pipelined, sharded, shardgate-notele, shardgate-base or sharded-base)", s)
}

// Database is the schema the sysbench tables live in.
const Database = "sbtest"

// DefaultBufferPool is the InnoDB buffer pool of the benchmark server: large
// enough for the default data set (4 tables x 100000 rows is about 100 MB),
// so that the benchmark measures the proxies, not the disk.
const DefaultBufferPool = "512M"

const (
	readyTimeout = 60 * time.Second
	stopGrace    = 15 * time.Second
)

// EnvOptions configure StartEnv.
type EnvOptions struct {
	// Targets to start besides the server (Direct needs nothing). Empty
	// means all.
	Targets []Target
	// BufferPool is mariadbd's --innodb-buffer-pool-size (DefaultBufferPool
	// when empty).
	BufferPool string
	// ServerArgs are more mariadbd options, after the buffer pool's (the
	// memory benchmark's bulk load: no doublewrite, a larger redo log).
	ServerArgs []string
	// ShardgateBin is a prebuilt shardgate binary; empty builds one from
	// ./cmd/shardgate of the module the harness runs in.
	ShardgateBin string
	// ShardgateRef builds shardgate from this git revision (exported with
	// the read-only `git archive`) instead of the working tree, e.g. HEAD
	// while others edit the tree, or two commits to compare.
	ShardgateRef string
	// AdminAddr is shardgate's --admin-http address; empty picks a free
	// port. A fixed one makes profiling under load easy (docs/profiling.md).
	AdminAddr string
	// BaseBin or BaseRef (a git revision to build) is the shardgate the
	// ShardgateBase and ShardedBase targets run.
	BaseBin string
	BaseRef string
	// Log receives progress messages (nil: discarded).
	Log io.Writer
}

// Env is a running benchmark environment: one mariadbd and the proxies in
// front of it. Close stops everything.
type Env struct {
	Server *testenv.Server
	Tools  Tools

	// Commands describes how every process was started, for the report.
	Commands []string
	// HAProxyConfig is the relay's configuration file, for the report.
	HAProxyConfig string
	// ShardgateRev is the git revision shardgate was built from ("unknown"
	// for a prebuilt binary whose origin is not known); BaseRev the base
	// targets' ("" without them).
	ShardgateRev string
	BaseRev      string
	// AdminAddr is shardgate's admin HTTP address (/metrics, /debug/pprof).
	AdminAddr string
	// admins are the admin HTTP addresses of the shardgate targets, whose
	// /metrics give the allocations per query.
	admins map[Target]string

	log   io.Writer
	dir   string
	relay *child
	proxy *child
	addrs map[Target]string
	// shardgateBin is the binary the Sharded target runs; its proxy
	// (sharded) starts once the tables are prepared (StartSharded).
	shardgateBin string
	sharded      *child
	noTele       *child // ShardgateNoTele's proxy
	pipelined    *child // ShardgatePipelined's proxy
	// baseBin runs the base targets: base (ShardgateBase) and
	// shardedBase (ShardedBase, started by StartSharded when
	// shardedTargets asks for it).
	baseBin        string
	base           *child
	shardedBase    *child
	shardedTargets []Target
	// transfer is the transfer benchmark's proxy (transfer.go), serving
	// at transferAddr.
	transfer     *child
	transferAddr string
}

// StartEnv starts mariadbd, creates the benchmark database and starts the
// requested proxies. On error everything already started is stopped.
func StartEnv(ctx context.Context, opts EnvOptions) (env *Env, err error) {
	targets := opts.Targets
	if len(targets) == 0 {
		targets = AllTargets
	}
	if opts.ShardgateBin != "" && opts.ShardgateRef != "" || opts.BaseBin != "" && opts.BaseRef != "" {
		return nil, errors.New("use either a prebuilt shardgate binary or a git revision to build, not both")
	}
	if wantsBase(targets) && opts.BaseBin == "" && opts.BaseRef == "" {
		return nil, fmt.Errorf("targets %s and %s need a base build (--base-ref or --base-bin)", ShardgateBase, ShardedBase)
	}
	tools, err := FindTools(slices.Contains(targets, Relay))
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sgbench-")
	if err != nil {
		return nil, fmt.Errorf("create work directory: %w", err)
	}
	e := &Env{Tools: tools, log: opts.Log, dir: dir, addrs: map[Target]string{}, admins: map[Target]string{}, ShardgateRev: "unknown",
		shardedTargets: ShardedOf(targets)}
	if e.log == nil {
		e.log = io.Discard
	}
	defer func() {
		if err != nil {
			if cerr := e.Close(); cerr != nil {
				err = fmt.Errorf("%w (and cleaning up: %v)", err, cerr)
			}
		}
	}()
	if err := e.startServer(opts.BufferPool, opts.ServerArgs); err != nil {
		return nil, err
	}
	if slices.Contains(targets, Relay) {
		if err := e.startRelay(ctx); err != nil {
			return nil, err
		}
	}
	if slices.ContainsFunc(targets, func(t Target) bool {
		return t == Shardgate || t == Sharded || t == ShardgateNoTele || t == ShardgatePipelined
	}) {
		bin := opts.ShardgateBin
		if bin != "" {
			e.ShardgateRev = "prebuilt " + bin + ": " + toolVersion(ctx, bin, "version")
		} else if bin, err = e.buildShardgate(ctx, opts.ShardgateRef); err != nil {
			return nil, err
		}
		e.shardgateBin = bin
	}
	if slices.Contains(targets, Shardgate) {
		if err := e.startShardgate(ctx, e.shardgateBin, opts.AdminAddr); err != nil {
			return nil, err
		}
	}
	if wantsBase(targets) {
		if err := e.prepareBase(ctx, opts); err != nil {
			return nil, err
		}
	}
	if slices.Contains(targets, ShardgateNoTele) {
		if err := e.startShardgateNoTele(ctx, e.shardgateBin); err != nil {
			return nil, err
		}
	}
	if slices.Contains(targets, ShardgatePipelined) {
		if err := e.startShardgatePipelined(ctx, e.shardgateBin); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Addr returns the host:port of a target ("" when it was not started).
func (e *Env) Addr(t Target) string { return e.addrs[t] }

// ProxyPid returns the process id of the proxy of a target (haproxy for
// Relay, shardgate for Shardgate) or 0 for Direct.
func (e *Env) ProxyPid(t Target) int {
	switch {
	case t == Relay && e.relay != nil:
		return e.relay.Pid()
	case t == Shardgate && e.proxy != nil:
		return e.proxy.Pid()
	case t == Sharded && e.sharded != nil:
		return e.sharded.Pid()
	case t == ShardgateNoTele && e.noTele != nil:
		return e.noTele.Pid()
	case t == ShardgatePipelined && e.pipelined != nil:
		return e.pipelined.Pid()
	case t == ShardgateBase && e.base != nil:
		return e.base.Pid()
	case t == ShardedBase && e.shardedBase != nil:
		return e.shardedBase.Pid()
	}
	return 0
}

// Close stops the proxies and the server and removes the work directory.
func (e *Env) Close() error {
	var errs []error
	for _, c := range []*child{e.transfer, e.sharded, e.shardedBase, e.noTele, e.pipelined, e.base, e.proxy, e.relay} {
		if c != nil {
			errs = append(errs, c.stop(stopGrace))
		}
	}
	if e.Server != nil {
		if err := e.Server.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop mariadbd: %w", err))
		}
	}
	if e.dir != "" {
		if err := os.RemoveAll(e.dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", e.dir, err))
		}
	}
	return errors.Join(errs...)
}

func (e *Env) logf(format string, args ...any) {
	fmt.Fprintf(e.log, "sgbench: "+format+"\n", args...)
}

// startServer starts mariadbd with a buffer pool that holds the data set and
// creates the benchmark database.
func (e *Env) startServer(bufferPool string, extra []string) error {
	if bufferPool == "" {
		bufferPool = DefaultBufferPool
	}
	args := append([]string{"--innodb-buffer-pool-size=" + bufferPool}, extra...)
	e.logf("starting mariadbd (%s)", strings.Join(args, " "))
	srv, err := testenv.StartE(testenv.Options{ExtraArgs: args})
	if err != nil {
		if errors.Is(err, testenv.ErrNotInstalled) {
			return fmt.Errorf("%w: %v", ErrMissingTool, err)
		}
		return fmt.Errorf("start mariadbd: %w", err)
	}
	e.Server = srv
	e.addrs[Direct] = srv.Addr
	if err := srv.ExecE("CREATE DATABASE IF NOT EXISTS " + Database); err != nil {
		return fmt.Errorf("create database %s: %w", Database, err)
	}
	e.Commands = append(e.Commands, "mariadbd: "+processCmdline(srv.Pid()))
	return nil
}

// processCmdline reads the command line of a running process.
func processCmdline(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return fmt.Sprintf("(cannot read command line of pid %d: %v)", pid, err)
	}
	return strings.Join(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), " ")
}

// haproxyTemplate is the relay configuration: plain TCP forwarding, no
// health checks, timeouts long enough for any benchmark run. The global
// maxconn is left to HAProxy, which derives it from the file descriptor
// limit (a fixed one fails when that limit is lower).
const haproxyTemplate = `global

defaults
    mode tcp
    timeout connect 5s
    timeout client 1h
    timeout server 1h

frontend mysql
    bind %s
    default_backend mariadb

backend mariadb
    server mariadb %s
`

// startRelay writes the HAProxy configuration and starts haproxy in the
// foreground (-db) as a child process.
func (e *Env) startRelay(ctx context.Context) error {
	return retryPort(func(addr string) error {
		cfg := fmt.Sprintf(haproxyTemplate, addr, e.Server.Addr)
		path := filepath.Join(e.dir, "haproxy.cfg")
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			return fmt.Errorf("write haproxy config: %w", err)
		}
		argv := []string{e.Tools.HAProxy, "-f", path, "-db"}
		e.logf("starting haproxy on %s", addr)
		c, err := startChild("haproxy", filepath.Join(e.dir, "haproxy.log"), argv)
		if err != nil {
			return err
		}
		if err := waitMySQL(ctx, c, addr); err != nil {
			_ = c.stop(stopGrace)
			return err
		}
		e.relay, e.addrs[Relay], e.HAProxyConfig = c, addr, cfg
		e.Commands = append(e.Commands, "haproxy: "+strings.Join(argv, " "))
		return nil
	})
}

// buildShardgate builds ./cmd/shardgate into the work directory, from the
// working tree of the enclosing module or, when ref is set, from that git
// revision; the revision is stamped into `shardgate version`.
func (e *Env) buildShardgate(ctx context.Context, ref string) (string, error) {
	bin, rev, err := e.build(ctx, ref, "shardgate")
	if err == nil {
		e.ShardgateRev = rev
	}
	return bin, err
}

// build builds ./cmd/shardgate into the work directory as name (see
// buildShardgate) and returns the binary and its revision.
func (e *Env) build(ctx context.Context, ref, name string) (bin, rev string, err error) {
	root, err := moduleRoot(ctx, e.Tools.Go)
	if err != nil {
		return "", "", err
	}
	src := root
	if ref == "" {
		rev = gitRevision(ctx, root)
	} else if src, rev, err = e.exportRevision(ctx, root, ref); err != nil {
		return "", "", err
	}
	bin = filepath.Join(e.dir, name)
	e.logf("building %s (%s) from %s", name, rev, src)
	cmd := exec.CommandContext(ctx, e.Tools.Go, "build", "-o", bin,
		"-ldflags", "-X main.version="+rev, "./cmd/shardgate")
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("go build ./cmd/shardgate in %s: %w\n%s", src, err, out)
	}
	return bin, rev, nil
}

// wantsBase reports targets that need the base build.
func wantsBase(targets []Target) bool {
	return slices.Contains(targets, ShardgateBase) || slices.Contains(targets, ShardedBase)
}

// prepareBase builds or takes the base targets' binary and starts
// ShardgateBase when asked for (ShardedBase starts with StartSharded).
func (e *Env) prepareBase(ctx context.Context, opts EnvOptions) error {
	if opts.BaseBin != "" {
		e.baseBin, e.BaseRev = opts.BaseBin, "prebuilt "+opts.BaseBin+": "+toolVersion(ctx, opts.BaseBin, "version")
	} else {
		var err error
		if e.baseBin, e.BaseRev, err = e.build(ctx, opts.BaseRef, "shardgate-base"); err != nil {
			return err
		}
	}
	if !slices.Contains(opts.Targets, ShardgateBase) {
		return nil
	}
	admin, err := freeAddr()
	if err != nil {
		return err
	}
	return retryPort(func(addr string) error {
		backend := fmt.Sprintf("%s:%s@%s/%s", testenv.User, testenv.Password, e.Server.Addr, Database)
		argv := []string{e.baseBin, "serve", "--listen", addr, "--backend", backend, "--admin-http", admin}
		e.logf("starting shardgate-base (%s) on %s", e.BaseRev, addr)
		c, err := e.startServing(ctx, string(ShardgateBase), argv, addr, admin)
		if err != nil {
			return err
		}
		e.base, e.addrs[ShardgateBase], e.admins[ShardgateBase] = c, addr, admin
		e.Commands = append(e.Commands, "shardgate-base: "+strings.Join(argv, " "))
		return nil
	})
}

// startsLater reports a target StartEnv leaves to its benchmark to start
// (the sharded ones, once their tables are there) and can start.
func (e *Env) startsLater(t Target) bool {
	switch t {
	case Sharded:
		return e.shardgateBin != ""
	case ShardedBase:
		return e.baseBin != ""
	}
	return false
}

// exportRevision extracts the tree of git revision ref into the work
// directory with `git archive` (which changes nothing in the repository) and
// returns the directory and the short commit hash.
func (e *Env) exportRevision(ctx context.Context, root, ref string) (string, string, error) {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--verify", "--short=12", ref+"^{commit}").Output()
	if err != nil {
		return "", "", fmt.Errorf("git revision %q not found in %s: %w", ref, root, err)
	}
	rev := strings.TrimSpace(string(out))
	src := filepath.Join(e.dir, "src-"+rev)
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", "", fmt.Errorf("export %s: %w", rev, err)
	}
	tarball := src + ".tar"
	if out, err := exec.CommandContext(ctx, "git", "-C", root, "archive", "--format=tar", "-o", tarball, rev).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("git archive %s: %w\n%s", rev, err, out)
	}
	if out, err := exec.CommandContext(ctx, "tar", "-xf", tarball, "-C", src).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("extract git archive of %s: %w\n%s", rev, err, out)
	}
	return src, rev, nil
}

// moduleRoot is the directory of the main module's go.mod.
func moduleRoot(ctx context.Context, goBin string) (string, error) {
	out, err := exec.CommandContext(ctx, goBin, "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the shardgate module: run sgbench from the repository (or pass --shardgate-bin)")
	}
	return filepath.Dir(gomod), nil
}

// gitRevision describes the checked-out revision with read-only git
// commands ("+dirty" when tracked files differ from it).
func gitRevision(ctx context.Context, root string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	rev := strings.TrimSpace(string(out))
	st, err := exec.CommandContext(ctx, "git", "--no-optional-locks", "-C", root,
		"status", "--porcelain", "--untracked-files=no").Output()
	if err == nil && len(strings.TrimSpace(string(st))) > 0 {
		rev += "+dirty"
	}
	return rev
}

// startShardgate starts the binary with the quick-start flags and an admin
// port, and waits until it serves MySQL and /metrics.
func (e *Env) startShardgate(ctx context.Context, bin, admin string) error {
	if admin == "" {
		var err error
		if admin, err = freeAddr(); err != nil {
			return err
		}
	}
	return retryPort(func(addr string) error {
		backend := fmt.Sprintf("%s:%s@%s/%s", testenv.User, testenv.Password, e.Server.Addr, Database)
		argv := []string{bin, "serve", "--listen", addr, "--backend", backend, "--admin-http", admin}
		e.logf("starting shardgate on %s (admin http://%s)", addr, admin)
		c, err := e.startServing(ctx, "shardgate", argv, addr, admin)
		if err != nil {
			return err
		}
		e.proxy, e.addrs[Shardgate], e.AdminAddr, e.admins[Shardgate] = c, addr, admin, admin
		e.Commands = append(e.Commands, "shardgate: "+strings.Join(argv, " "))
		return nil
	})
}

// startShardgateNoTele starts a second shardgate as the quick start does,
// from a file that only adds telemetry.enabled: false.
func (e *Env) startShardgateNoTele(ctx context.Context, bin string) error {
	c, err := e.startVariant(ctx, bin, ShardgateNoTele, "without telemetry", "", "telemetry:\n  enabled: false\n")
	e.noTele = c
	return err
}

// startShardgatePipelined starts a shardgate as the quick start does,
// from a file that only turns pipelining on (PipelinedPool).
func (e *Env) startShardgatePipelined(ctx context.Context, bin string) error {
	c, err := e.startVariant(ctx, bin, ShardgatePipelined, "pipelining", PipelinedPool, "")
	e.pipelined = c
	return err
}

// PipelinedPool is the pool section of the ShardgatePipelined target:
// 4 of the default 16 connections pipeline, 8 reads deep (what
// BenchmarkServerPipelining found best: depth 4 to 8).
const PipelinedPool = "    pool:\n      pipeline_connections: 4\n      pipeline_depth: 8\n"

// startVariant starts shardgate target t (named name) as the quick start
// does, from a file with cluster added to the cluster's settings and top
// to the top level.
func (e *Env) startVariant(ctx context.Context, bin string, t Target, what, cluster, top string) (*child, error) {
	admin, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cfgFile := filepath.Join(e.dir, string(t)+".yaml")
	cfg := fmt.Sprintf(`users:
  - name: %s
    password: %s
    cluster: default
    default_database: %s
clusters:
  - name: default
    user: %s
    password: %s
%s    primary:
      address: %s
%s`, testenv.User, testenv.Password, Database, testenv.User, testenv.Password, cluster, e.Server.Addr, top)
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	var started *child
	err = retryPort(func(addr string) error {
		argv := []string{bin, "serve", "--config", cfgFile, "--listen", addr, "--admin-http", admin}
		e.logf("starting shardgate %s on %s (admin http://%s)", what, addr, admin)
		c, err := e.startServing(ctx, string(t), argv, addr, admin)
		if err != nil {
			return err
		}
		started, e.addrs[t], e.admins[t] = c, addr, admin
		e.Commands = append(e.Commands, string(t)+": "+strings.Join(argv, " ")+" with "+cfgFile+":\n"+cfg)
		return nil
	})
	return started, err
}

// startServing starts a shardgate child (its log: name.log) and waits
// until it serves MySQL at addr and, when admin is not "", /metrics there.
func (e *Env) startServing(ctx context.Context, name string, argv []string, addr, admin string) (*child, error) {
	c, err := startChild(name, filepath.Join(e.dir, name+".log"), argv)
	if err != nil {
		return nil, err
	}
	if err := waitMySQL(ctx, c, addr); err != nil {
		_ = c.stop(stopGrace)
		return nil, err
	}
	if admin != "" {
		if err := waitHTTP(ctx, c, "http://"+admin+"/metrics"); err != nil {
			_ = c.stop(stopGrace)
			return nil, err
		}
	}
	return c, nil
}

// mallocs reads go_memstats_mallocs_total from a shardgate target's
// /metrics (0 for other targets).
func (e *Env) mallocs(ctx context.Context, t Target) (int64, error) {
	admin := e.admins[t]
	if admin == "" {
		return 0, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+admin+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("read %s metrics: %w", t, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_mallocs_total "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return int64(f), err
		}
	}
	return 0, fmt.Errorf("%s metrics: no go_memstats_mallocs_total", t)
}

// retryPort calls start with a free address, again with another one when the
// process exits during start-up because someone else took the port between
// freeAddr and the bind.
func retryPort(start func(addr string) error) error {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		if lastErr = start(addr); lastErr == nil {
			return nil
		}
		if !errors.Is(lastErr, errExited) || !strings.Contains(strings.ToLower(lastErr.Error()), "already in use") {
			return lastErr
		}
	}
	return lastErr
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// errExited marks a child that ended during start-up.
var errExited = errors.New("exited during start-up")

// waitMySQL waits until a MySQL login through addr succeeds.
func waitMySQL(ctx context.Context, c *child, addr string) error {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = testenv.User, testenv.Password, "tcp", addr, Database
	cfg.Timeout = 2 * time.Second
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	return waitReady(ctx, c, "a MySQL login via "+addr, func(ctx context.Context) error {
		return db.PingContext(ctx)
	})
}

// waitHTTP waits until url answers 200.
func waitHTTP(ctx context.Context, c *child, url string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	return waitReady(ctx, c, "GET "+url, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %s", resp.Status)
		}
		return nil
	})
}

// waitReady polls check until it succeeds, the child exits or readyTimeout
// passes.
func waitReady(ctx context.Context, c *child, what string, check func(context.Context) error) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		if done, how := c.exited(); done {
			return fmt.Errorf("%s %w (%s); tail of %s:\n%s", c.name, errExited, how, c.logPath, c.logTail(20))
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := check(cctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("waiting for %s: %w", c.name, ctx.Err())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %v (%s: %v); tail of %s:\n%s", c.name, readyTimeout, what, err, c.logPath, c.logTail(20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
