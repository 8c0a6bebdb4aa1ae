package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxUserNameLen bounds proxy user names (in characters).
const maxUserNameLen = 80

// Stored password forms: shardgate's own ($sg1$ SHA1(SHA1(pw)) $ SHA256(SHA256(pw)),
// lowercase hex) and MySQL's mysql_native_password authentication_string.
var (
	sg1HashRE    = regexp.MustCompile(`^\$sg1\$[0-9a-f]{40}\$[0-9a-f]{64}$`)
	nativeHashRE = regexp.MustCompile(`^\*[0-9A-F]{40}$`)
)

// validator checks decoded values, resolves derived defaults (pool sizes,
// user clusters, file paths) and collects problems and warnings.
type validator struct {
	file     string
	baseDir  string          // relative file paths resolve against it
	lines    map[string]int  // key path → line; presence means the key was set
	bad      map[string]bool // paths that failed to decode; not re-reported
	problems []Problem
	warnings []Problem

	// plaintextWarnings is off for QuickStart, where a plaintext password
	// on the command line is the whole point.
	plaintextWarnings bool
}

func newValidator(file, baseDir string, lines map[string]int, bad map[string]bool) *validator {
	return &validator{file: file, baseDir: baseDir, lines: lines, bad: bad}
}

// has reports whether the key at path was present in the input.
func (v *validator) has(path string) bool {
	_, ok := v.lines[path]
	return ok
}

// line returns the line of path, or of its nearest present ancestor: a
// missing key is reported at the line of its parent.
func (v *validator) line(path string) int {
	for p := path; ; p = parentPath(p) {
		if l, ok := v.lines[p]; ok {
			return l
		}
		if p == "" {
			return 0
		}
	}
}

// isBad reports whether path or an ancestor failed to decode, in which
// case its value is a default and complaints about it would be noise.
func (v *validator) isBad(path string) bool {
	for p := path; ; p = parentPath(p) {
		if v.bad[p] {
			return true
		}
		if p == "" {
			return false
		}
	}
}

func (v *validator) fail(path, format string, args ...any) {
	if v.isBad(path) {
		return
	}
	v.problems = append(v.problems, Problem{File: v.file, Line: v.line(path), Key: path, Reason: fmt.Sprintf(format, args...)})
}

// warn records a warning about key, cited at the line of linePath.
func (v *validator) warn(key, linePath string, format string, args ...any) {
	v.warnings = append(v.warnings, Problem{File: v.file, Line: v.line(linePath), Key: key, Reason: fmt.Sprintf(format, args...)})
}

func (v *validator) config(c *Config) {
	v.listeners(c.Listeners)
	v.admin(c.Admin, c.Listeners)
	v.server(&c.Server)
	v.log(c.Log)
	v.telemetry(&c.Telemetry)
	v.transactions(&c.Transactions)
	v.clusters(c.Clusters)
	buildSchemas(c.Schemas, c.Clusters, v.fail)
	v.users(c.Users, c.Clusters, c.Schemas)
}

func (v *validator) listeners(ls []Listener) {
	if len(ls) == 0 {
		v.fail("listeners", "must contain at least one listener (leave the key out to get one at %s)", DefaultListenAddress)
	}
	seen := map[string]int{}
	for i := range ls {
		l := &ls[i]
		p := fmt.Sprintf("listeners[%d]", i)
		if v.address(p+".address", l.Address, false) {
			if j, dup := seen[l.Address]; dup {
				v.fail(p+".address", "duplicate address %q (also listeners[%d])", l.Address, j)
			}
			seen[l.Address] = i
		}
		v.positive(p+".max_connections", l.MaxConnections)
		if l.ReservedAdminConnections < 0 {
			v.fail(p+".reserved_admin_connections", "must be >= 0 (got %d)", l.ReservedAdminConnections)
		}
		v.oneOf(p+".tls.mode", l.TLS.Mode, "off", "optional", "required")
		v.filePair(p+".tls", "cert_file", &l.TLS.CertFile, "key_file", &l.TLS.KeyFile)
	}
}

func (v *validator) admin(a Admin, ls []Listener) {
	if a.HTTP != "" && v.address("admin.http", a.HTTP, false) && !isLoopback(a.HTTP) {
		v.warn("admin.http", "admin.http",
			"%s is not a loopback address; the status page, /api, /metrics and /debug/pprof have no authentication", a.HTTP)
	}
	v.adminSQL(a, ls)
	seen := map[string]int{}
	for i := range a.Users {
		u := &a.Users[i]
		p := fmt.Sprintf("admin.users[%d]", i)
		v.accountName(p, "admin.users", "admin user", u.Name, i, seen)
		v.password(p, u.Name, u.Password, u.PasswordHash)
	}
}

// accountName checks the name of account i of list (users, admin.users):
// present, not too long, not the name of an earlier one (seen, by name).
func (v *validator) accountName(p, list, what, name string, i int, seen map[string]int) {
	if !v.required(p+".name", name) {
		return
	}
	if n := utf8.RuneCountInString(name); n > maxUserNameLen {
		v.fail(p+".name", "must be at most %d characters (got %d)", maxUserNameLen, n)
	}
	if j, dup := seen[name]; dup {
		v.fail(p+".name", "duplicate %s name %q (also %s[%d])", what, name, list, j)
	}
	seen[name] = i
}

// adminSQL checks admin.sql: an address no other listener of the proxy
// has, and at least one admin user to log in with. admin.users without it
// is a warning: nobody can use them.
func (v *validator) adminSQL(a Admin, ls []Listener) {
	if a.SQL == "" {
		if len(a.Users) > 0 {
			v.warn("admin.users", "admin.users", "admin.sql is not set, so the admin SQL port is off and these accounts cannot log in")
		}
		return
	}
	if !v.address("admin.sql", a.SQL, false) {
		return
	}
	_, port, _ := net.SplitHostPort(a.SQL)
	fixed := port != "0" // port 0 picks a free port: no clash
	if fixed && a.SQL == a.HTTP {
		v.fail("admin.sql", "same address as admin.http (%s)", a.HTTP)
	}
	for i, l := range ls {
		if fixed && l.Address == a.SQL {
			v.fail("admin.sql", "same address as listeners[%d].address (%s): the admin port is a listener of its own", i, l.Address)
		}
	}
	if len(a.Users) == 0 {
		v.fail("admin.users", "at least one admin user is required when admin.sql is set (users[] cannot log in on the admin port)")
	}
}

func (v *validator) server(s *Server) {
	switch {
	case s.Version == "":
		// Empty: advertise the primary backend's own version.
	case s.Version[0] < '0' || s.Version[0] > '9':
		// Clients and connectors parse the leading "major.minor.patch".
		v.fail("server.version", "must start with a digit, like %q (got %q)", "8.0.36-shardgate", s.Version)
	case strings.ContainsRune(s.Version, 0):
		// The handshake carries the version as a NUL-terminated string.
		v.fail("server.version", "must not contain a NUL character")
	}
	if s.DefaultAuthPlugin != "" { // empty: the primary's (see proxy.authPluginOf)
		v.oneOf("server.default_auth_plugin", s.DefaultAuthPlugin, "caching_sha2_password", "mysql_native_password")
	}
	v.oneOf("server.caching_sha2_full_auth", s.CachingSHA2FullAuth, "first_login", "always", "never")
	v.filePair("server", "rsa_private_key_file", &s.RSAPrivateKeyFile, "rsa_public_key_file", &s.RSAPublicKeyFile)
	v.positiveDuration("server.shutdown_timeout", s.ShutdownTimeout)
	v.positiveDuration("server.client_idle_timeout", s.ClientIdleTimeout)
	v.positiveDuration("server.handshake_timeout", s.HandshakeTimeout)
	v.positive("server.max_prepared_statements_per_session", s.MaxPreparedStatementsPerSession)
	v.positiveDuration("server.net_read_timeout", s.NetReadTimeout)
	v.positiveDuration("server.net_write_timeout", s.NetWriteTimeout)
	if m := s.MaxAllowedPacket; m != 0 && (m < minAllowedPacket || m > maxAllowedPacket) {
		v.fail("server.max_allowed_packet", "must be 0 (the primary's) or between %d and %d bytes, as on the server (got %d)",
			minAllowedPacket, maxAllowedPacket, m)
	}
	if s.GOMAXPROCS < 0 {
		v.fail("server.gomaxprocs", "must be >= 0 (0 = automatic; got %d)", s.GOMAXPROCS)
	}
	if s.BusyPoll < 0 || s.BusyPoll > maxBusyPoll {
		v.fail("server.busy_poll", "must be between 0 (off) and %v (got %v)", maxBusyPoll, s.BusyPoll)
	}
	v.authFailureDelay("server.auth_failure_delay", &s.AuthFailureDelay)
}

func (v *validator) authFailureDelay(p string, d *AuthFailureDelay) {
	if d.Threshold < 0 {
		v.fail(p+".threshold", "must be >= 0 (0 = no delay; got %d)", d.Threshold)
	}
	if d.Threshold == 0 {
		return
	}
	v.positiveDuration(p+".min_delay", d.MinDelay)
	if d.MaxDelay < d.MinDelay {
		v.fail(p+".max_delay", "must be >= min_delay (%v; got %v)", d.MinDelay, d.MaxDelay)
	}
}

// The server's bounds of max_allowed_packet.
const (
	minAllowedPacket = 1024
	maxAllowedPacket = 1 << 30
)

func (v *validator) log(l Log) {
	v.oneOf("log.level", l.Level, "debug", "info", "warn", "error")
	v.oneOf("log.format", l.Format, "text", "json")
}

func (v *validator) telemetry(t *Telemetry) {
	v.tracing(&t.Tracing, t.Enabled)
	v.positive("telemetry.max_digests", t.MaxDigests)
	v.positiveDuration("telemetry.slow_log.threshold", t.SlowLog.Threshold)
	if r := t.SlowLog.SampleRate; r < 0 || r > 1 || r != r {
		v.fail("telemetry.slow_log.sample_rate", "must be between 0 and 1 (got %v)", r)
	}
	if f := &t.SlowLog.File; *f != "" {
		if !filepath.IsAbs(*f) {
			*f = filepath.Join(v.baseDir, *f)
		}
		*f = filepath.Clean(*f)
		if info, err := os.Stat(filepath.Dir(*f)); err != nil || !info.IsDir() {
			v.fail("telemetry.slow_log.file", "directory %s does not exist", filepath.Dir(*f))
		}
	}
}

func (v *validator) transactions(t *Transactions) {
	v.positiveDuration("transactions.recovery_interval", t.RecoveryInterval)
	v.positiveDuration("transactions.abandon_after", t.AbandonAfter)
	if strings.ContainsAny(t.Instance, ": \t") {
		v.fail("transactions.instance", "must not hold ':' or blanks (got %q)", t.Instance)
	}
}

// InstanceName is transactions.instance, or the host name and the first
// listener's port, which name one process of a host; with reuse_port,
// under which two processes share the port while one replaces the other,
// followed by a mark of this process's start.
func (c *Config) InstanceName() string {
	if c.Transactions.Instance != "" {
		return c.Transactions.Instance
	}
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r == ':' || r == ' ' || r == '\t' {
			return '-'
		}
		return r
	}, host)
	if host == "" {
		host = "shardgate"
	}
	if len(c.Listeners) > 0 {
		if _, port, err := net.SplitHostPort(c.Listeners[0].Address); err == nil {
			host += "-" + port
		}
		if c.Listeners[0].ReusePort {
			host += "-" + processMark
		}
	}
	return host
}

// processMark tells apart processes that share a listener's port: the
// start time in milliseconds, in base 36, modulo 36^6 (25 days).
var processMark = strconv.FormatInt(time.Now().UnixMilli()%2176782336, 36)

func (v *validator) clusters(cs []Cluster) {
	if len(cs) == 0 {
		v.fail("clusters", "at least one cluster is required")
	}
	seen := map[string]int{}
	for i := range cs {
		c := &cs[i]
		p := fmt.Sprintf("clusters[%d]", i)
		if v.required(p+".name", c.Name) {
			if j, dup := seen[c.Name]; dup {
				v.fail(p+".name", "duplicate cluster name %q (also clusters[%d])", c.Name, j)
			}
			seen[c.Name] = i
		}
		v.required(p+".user", c.User)
		v.backendTLS(p+".tls", &c.TLS)
		v.pool(p+".pool", &c.Pool)
		v.address(p+".primary.address", c.Primary.Address, true)
		if v.has(p + ".primary.weight") {
			v.fail(p+".primary.weight", "only replicas have a weight")
		}
		c.Primary.Weight = 1
		for j := range c.Replicas {
			r := &c.Replicas[j]
			rp := fmt.Sprintf("%s.replicas[%d]", p, j)
			v.address(rp+".address", r.Address, true)
			if r.Weight < 1 {
				v.fail(rp+".weight", "must be >= 1 (got %d)", r.Weight)
			}
			v.oneOf(rp+".state", r.State, "online", "offline")
		}
		v.oneOf(p+".primary.state", c.Primary.State, "online", "offline")
		v.routing(p+".routing", &c.Routing)
		v.health(p+".health", &c.Health)
		v.clusterUsers(p, c, cs[:i])
	}
}

// clusterUsers checks where the cluster's accounts come from: one cluster
// at most takes logins with its servers' accounts, since a name users[]
// does not list must mean one account.
func (v *validator) clusterUsers(p string, c *Cluster, before []Cluster) {
	v.oneOf(p+".users", c.Users, UsersConfigured, UsersFromBackend)
	if c.UsersCacheTTL < 0 {
		v.fail(p+".users_cache_ttl", "must be >= 0 (got %s)", c.UsersCacheTTL)
	}
	if c.Users != UsersFromBackend {
		return
	}
	for j := range before {
		if before[j].Users == UsersFromBackend {
			v.fail(p+".users", "only one cluster may have users: from_backend (clusters[%d] %q has it): "+
				"a client's user name must name one account", j, before[j].Name)
			return
		}
	}
}

func (v *validator) routing(p string, r *Routing) {
	v.oneOf(p+".read_from", r.ReadFrom, "replica", "primary")
	v.oneOf(p+".consistency", r.Consistency, "causal", "window", "none")
	v.positiveDuration(p+".max_replica_lag", r.MaxReplicaLag)
	if r.WriteWindow < 0 {
		v.fail(p+".write_window", "must be >= 0 (got %s)", r.WriteWindow)
	}
	v.positiveDuration(p+".causal_wait_timeout", r.CausalWaitTimeout)
	v.oneOf(p+".autocommit_off_reads", r.AutocommitOffReads, "primary", "replica")
	for i, db := range r.PrimaryDatabases {
		v.required(fmt.Sprintf("%s.primary_databases[%d]", p, i), db)
	}
}

func (v *validator) health(p string, h *Health) {
	v.positiveDuration(p+".interval", h.Interval)
	v.positiveDuration(p+".timeout", h.Timeout)
	v.positive(p+".failures", h.Failures)
	v.positiveDuration(p+".backoff", h.Backoff)
	if h.MaxBackoff < h.Backoff {
		v.fail(p+".max_backoff", "must be >= backoff (%s; got %s)", h.Backoff, h.MaxBackoff)
	}
	v.positiveDuration(p+".reconnect_interval", h.ReconnectInterval)
}

func (v *validator) backendTLS(p string, t *BackendTLS) {
	v.oneOf(p+".mode", t.Mode, "off", "preferred", "required", "verify")
	if t.Mode == "verify" && t.CAFile == "" {
		v.fail(p+".ca_file", "required when mode is verify")
	}
	v.checkFile(p+".ca_file", &t.CAFile)
	v.filePair(p, "cert_file", &t.CertFile, "key_file", &t.KeyFile)
}

// pool checks pool bounds and resolves MaxIdle (0 = MaxOpen) and MinIdle
// (absent = MaxIdle).
func (v *validator) pool(p string, pl *Pool) {
	v.positive(p+".max_open", pl.MaxOpen)
	switch {
	case pl.MaxIdle < 0:
		v.fail(p+".max_idle", "must be >= 0 (got %d)", pl.MaxIdle)
	case pl.MaxIdle == 0:
		pl.MaxIdle = pl.MaxOpen
	case pl.MaxIdle > pl.MaxOpen:
		v.fail(p+".max_idle", "must be <= max_open (%d)", pl.MaxOpen)
	}
	if !v.has(p + ".min_idle") {
		pl.MinIdle = pl.MaxIdle
	} else if pl.MinIdle < 0 {
		v.fail(p+".min_idle", "must be >= 0 (got %d)", pl.MinIdle)
	} else if pl.MinIdle > pl.MaxIdle {
		v.fail(p+".min_idle", "must be <= max_idle (%d)", pl.MaxIdle)
	}
	v.positiveDuration(p+".connect_timeout", pl.ConnectTimeout)
	v.positiveDuration(p+".idle_timeout", pl.IdleTimeout)
	v.positiveDuration(p+".max_lifetime", pl.MaxLifetime)
	v.positiveDuration(p+".wait_timeout", pl.WaitTimeout)
	v.positive(p+".max_waiters", pl.MaxWaiters)
	v.positive(p+".prepared_statements_per_conn", pl.PreparedStatementsPerConn)
	v.positiveDuration(p+".health_check_interval", pl.HealthCheckInterval)
	v.positive(p+".evaluator_max_open", pl.EvaluatorMaxOpen)
	if pl.PipelineConnections < 0 || pl.PipelineConnections > 0 && pl.PipelineConnections >= pl.MaxOpen {
		// At least one connection is left for writes and transactions.
		v.fail(p+".pipeline_connections", "must be between 0 and max_open - 1 (%d) (got %d)", pl.MaxOpen-1, pl.PipelineConnections)
	}
	v.positive(p+".pipeline_depth", pl.PipelineDepth)
}

func (v *validator) users(us []User, cs []Cluster, schemas []Schema) {
	if len(us) == 0 && !slices.ContainsFunc(cs, func(c Cluster) bool { return c.Users == UsersFromBackend }) {
		v.fail("users", "at least one user is required (or a cluster with users: from_backend)")
	}
	seen := map[string]int{}
	for i := range us {
		u := &us[i]
		p := fmt.Sprintf("users[%d]", i)
		v.accountName(p, "users", "user", u.Name, i, seen)
		v.password(p, u.Name, u.Password, u.PasswordHash)
		v.userCluster(p, u, cs, schemas)
		if u.ReadFrom != "" {
			v.oneOf(p+".read_from", u.ReadFrom, "primary", "replica")
		}
	}
}

// password requires exactly one of password and password_hash in the
// account at p (users[i], admin.users[i]) named name. Presence of the key
// counts, so `password: ""` is an (empty) password.
func (v *validator) password(p, name, password, hash string) {
	hasPlain, hasHash := v.has(p+".password"), v.has(p+".password_hash")
	switch {
	case hasPlain && hasHash:
		v.fail(p+".password_hash", "password and password_hash are both set; set exactly one")
	case !hasPlain && !hasHash:
		v.fail(p+".password_hash", "required (or password); create it with: shardgate hash-password")
	case hasHash:
		if !sg1HashRE.MatchString(hash) && !nativeHashRE.MatchString(hash) {
			v.fail(p+".password_hash",
				"not a valid stored password: want $sg1$<40 hex>$<64 hex> from shardgate hash-password, or *<40 uppercase hex> (MySQL mysql_native_password)")
		}
	case v.plaintextWarnings:
		who := fmt.Sprintf("%s (%s)", p, name)
		if password == "" {
			v.warn(who, p+".password", "empty plaintext password; anyone who knows the user name can log in")
		} else {
			v.warn(who, p+".password", "plaintext password; store password_hash instead (shardgate hash-password)")
		}
	}
}

// userCluster checks user.cluster and defaults it when there is exactly
// one cluster. With schemas it may stay empty: the user's statements on a
// schema go where the schema places them, so the user reaches data unless
// its default database is neither a schema nor on a named cluster.
func (v *validator) userCluster(p string, u *User, cs []Cluster, schemas []Schema) {
	key := p + ".cluster"
	if !v.has(key) {
		switch {
		case len(cs) == 0: // already reported under clusters
		case len(cs) == 1:
			u.Cluster = cs[0].Name
		case len(schemas) == 0:
			v.fail(key, "required when more than one cluster is defined and there are no schemas")
		case u.DefaultDatabase != "" && !slices.ContainsFunc(schemas, func(s Schema) bool { return strings.EqualFold(s.Name, u.DefaultDatabase) }):
			v.fail(key, "required: default_database %q is not one of the schemas, so name the cluster that holds it", u.DefaultDatabase)
		}
		return
	}
	if u.Cluster == "" {
		v.fail(key, "must not be empty")
		return
	}
	names := make([]string, 0, len(cs))
	for _, c := range cs {
		if c.Name == u.Cluster {
			return
		}
		names = append(names, c.Name)
	}
	v.fail(key, "unknown cluster %q (defined: %s)", u.Cluster, strings.Join(names, ", "))
}

// required reports a missing or empty string value and returns whether the
// value is usable.
func (v *validator) required(path, value string) bool {
	switch {
	case value != "":
		return true
	case !v.has(path):
		v.fail(path, "required")
	default:
		v.fail(path, "must not be empty")
	}
	return false
}

// address checks host:port with a numeric port in 1..65535. needHost is
// false for addresses the proxy listens on: there an empty host (":6033",
// all interfaces) and port 0 (any free port, as tests use) are accepted.
func (v *validator) address(path, value string, needHost bool) bool {
	if !v.required(path, value) {
		return false
	}
	host, port, err := net.SplitHostPort(value)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			err = errors.New(ae.Err)
		}
		v.fail(path, "invalid address %q: %v; want host:port", value, err)
		return false
	}
	if host == "" && needHost {
		v.fail(path, "invalid address %q: missing host; want host:port", value)
		return false
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		v.fail(path, "invalid address %q: port %q is not a number", value, port)
		return false
	}
	if (n < 1 && needHost) || n < 0 || n > 65535 {
		v.fail(path, "invalid address %q: port %d is out of range 1..65535", value, n)
		return false
	}
	return true
}

func (v *validator) oneOf(path, value string, allowed ...string) {
	for _, a := range allowed {
		if value == a {
			return
		}
	}
	v.fail(path, "must be one of %s (got %q)", strings.Join(allowed, ", "), value)
}

func (v *validator) positive(path string, n int) {
	if n <= 0 {
		v.fail(path, "must be > 0 (got %d)", n)
	}
}

func (v *validator) positiveDuration(path string, d time.Duration) {
	if d <= 0 {
		v.fail(path, "must be > 0 (got %s)", d)
	}
}

// filePair checks a certificate/key style pair: both set or neither, and
// each set file exists.
func (v *validator) filePair(parent, aKey string, a *string, bKey string, b *string) {
	aPath, bPath := joinPath(parent, aKey), joinPath(parent, bKey)
	switch {
	case *a != "" && *b == "":
		v.fail(bPath, "required when %s is set", aKey)
	case *a == "" && *b != "":
		v.fail(aPath, "required when %s is set", bKey)
	}
	v.checkFile(aPath, a)
	v.checkFile(bPath, b)
}

// checkFile resolves a set path against the config file's directory, stores the
// absolute result and checks that it names an existing regular file.
// Checking here turns a typo into a config error instead of a failure at
// the first TLS handshake.
func (v *validator) checkFile(path string, p *string) {
	if *p == "" {
		return
	}
	abs := *p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(v.baseDir, abs)
	}
	abs = filepath.Clean(abs)
	info, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		v.fail(path, "file %s does not exist", abs)
	case err != nil:
		v.fail(path, "cannot use file: %v", err)
	case info.IsDir():
		v.fail(path, "%s is a directory, not a file", abs)
	}
	*p = abs
}

// isLoopback reports whether a valid host:port only accepts local
// connections.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (v *validator) tracing(t *Tracing, telemetry bool) {
	if t.Endpoint == "" {
		return
	}
	u, err := url.Parse(t.Endpoint)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		v.fail("telemetry.tracing.endpoint", "want the OTLP/HTTP collector's URL, http://host:port or https://host:port (got %q)", t.Endpoint)
	case u.User != nil:
		// Not echoed: the message is logged, and the credentials are not
		// a secret SHOW CONFIG masks.
		v.fail("telemetry.tracing.endpoint", "must not hold credentials (user:password@ before %s): they would not be sent; "+
			"authenticating to the collector (a header) is not supported yet, so point it at a collector that needs none, "+
			"on localhost or a private network", u.Host)
	case u.RawQuery != "" || u.Fragment != "":
		v.fail("telemetry.tracing.endpoint", "must not have a query or fragment (after ? or #): they would not be sent; "+
			"want http(s)://host:port[/path]")
	}
	if r := t.SampleRatio; !(r > 0 && r <= 1) {
		v.fail("telemetry.tracing.sample_ratio", "must be greater than 0 and at most 1 (got %v)", r)
	}
	v.required("telemetry.tracing.service_name", t.ServiceName)
	if !telemetry {
		v.warn("telemetry.tracing", "telemetry.tracing",
			"telemetry.enabled is false, so no statement is traced; turn it on or remove telemetry.tracing.endpoint")
	}
}
