// Package config parses and validates the shardgate YAML configuration and
// fills in defaults.
//
// Every problem found in a file (syntax errors, unknown keys, wrong types and
// impossible values) is reported together, each with the file, line and
// dotted key path it concerns, so an operator can fix a file in one pass.
package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"time"
)

// Config is a parsed, validated configuration with all defaults applied.
//
// The reload tags say what a running proxy cannot apply on SIGHUP (see
// Diff): "restart" keys need a restart.
type Config struct {
	Listeners []Listener `yaml:"listeners" reload:"restart,byposition"`
	Admin     Admin      `yaml:"admin"`
	Server    Server     `yaml:"server"`
	Log       Log        `yaml:"log"`
	Telemetry Telemetry  `yaml:"telemetry"`
	Users     []User     `yaml:"users"`
	Clusters  []Cluster  `yaml:"clusters" reload:"addonly"`
	// Schemas are the logical databases whose tables are sharded or
	// copied to every shard (see schemas.go). A reload adds schemas and
	// tables; changing or removing a running one needs a restart.
	Schemas []Schema `yaml:"schemas" reload:"additems"`
	// Transactions configures atomic transactions across shards
	// (schemas[].cross_shard_writes: atomic) and their recovery.
	Transactions Transactions `yaml:"transactions" reload:"restart"`

	// File is the file name the configuration was parsed from, as given to
	// Load or Parse ("" for QuickStart). It is used in messages only.
	File string `yaml:"-"`

	warnings []Problem
}

// Listener is a MySQL-protocol endpoint clients connect to.
type Listener struct {
	Address        string      `yaml:"address"`
	MaxConnections int         `yaml:"max_connections"`
	TLS            ListenerTLS `yaml:"tls"`
	// ReservedAdminConnections are accepted beyond MaxConnections for users
	// with admin set, as MySQL keeps one for SUPER: an operator can log in
	// while clients hold every other connection.
	ReservedAdminConnections int `yaml:"reserved_admin_connections"`
	// ReusePort opens the listener with SO_REUSEPORT, so that a new process
	// listens on the same port before the old one stops (restarts that
	// refuse no client). Default true.
	ReusePort bool `yaml:"reuse_port"`
}

// ListenerTLS controls TLS between clients and the proxy.
type ListenerTLS struct {
	Mode     string `yaml:"mode"` // off | optional | required
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// Admin configures the operator endpoints: the HTTP server and the admin
// SQL port with its own accounts.
type Admin struct {
	HTTP string `yaml:"http" reload:"restart"` // "" disables it
	// SQL is the address of the admin MySQL-protocol listener; "" disables it.
	SQL string `yaml:"sql" reload:"restart"`
	// Users are the accounts of the admin SQL port, and only of it: they
	// cannot log in on the client listeners, nor users[] on this port.
	Users []AdminUser `yaml:"users"`
}

// AdminUser is an account of the admin SQL port. The password forms are
// those of users[].
type AdminUser struct {
	Name         string `yaml:"name"`
	Password     string `yaml:"password" reload:"secret"`
	PasswordHash string `yaml:"password_hash" reload:"secret"`
}

// Server holds settings of the MySQL server the proxy presents to clients.
type Server struct {
	Version                         string        `yaml:"version" reload:"restart"`             // "": the primary's
	DefaultAuthPlugin               string        `yaml:"default_auth_plugin" reload:"restart"` // "": the primary's default
	CachingSHA2FullAuth             string        `yaml:"caching_sha2_full_auth" reload:"restart"`
	RSAPrivateKeyFile               string        `yaml:"rsa_private_key_file" reload:"restart"`
	RSAPublicKeyFile                string        `yaml:"rsa_public_key_file" reload:"restart"`
	ShutdownTimeout                 time.Duration `yaml:"shutdown_timeout"`
	ClientIdleTimeout               time.Duration `yaml:"client_idle_timeout"`
	MaxPreparedStatementsPerSession int           `yaml:"max_prepared_statements_per_session" reload:"restart"`
	// HandshakeTimeout bounds a client's login, from the greeting to the
	// final OK: a connection that stalls in it holds a connection slot.
	HandshakeTimeout time.Duration `yaml:"handshake_timeout"`
	// GOMAXPROCS is how many goroutines run at once; 0 picks
	// ProcsPerCPU per CPU (see cmd/shardgate).
	GOMAXPROCS int `yaml:"gomaxprocs" reload:"restart"`
	// BusyPoll is how long a wait for input polls its socket before it
	// parks while the proxy is nearly idle (mysql.Poller); 0 turns it off.
	BusyPoll time.Duration `yaml:"busy_poll" reload:"restart"`
	// MaxAllowedPacket bounds a client packet; 0: the primary's
	// max_allowed_packet.
	MaxAllowedPacket int `yaml:"max_allowed_packet" reload:"restart"`
	// NetReadTimeout: a client that stops sending in the middle of a
	// packet this long is closed (MySQL's net_read_timeout).
	NetReadTimeout time.Duration `yaml:"net_read_timeout"`
	// NetWriteTimeout: a client that stops reading what the proxy sends it
	// this long is closed (MySQL's net_write_timeout).
	NetWriteTimeout time.Duration `yaml:"net_write_timeout"`
	// AuthFailureDelay slows down password guessing from one client
	// address, as MySQL's connection_control plugin does.
	AuthFailureDelay AuthFailureDelay `yaml:"auth_failure_delay"`
}

// AuthFailureDelay configures the delay before answering a login from a
// client address after Threshold consecutive failed logins from it: the
// delay is MinDelay for the first attempt over the threshold and grows by
// MinDelay with each further failure, up to MaxDelay. A successful login
// resets the count. Threshold 0 turns the delay off.
type AuthFailureDelay struct {
	Threshold int           `yaml:"threshold"`
	MinDelay  time.Duration `yaml:"min_delay"`
	MaxDelay  time.Duration `yaml:"max_delay"`
}

// Transactions configures two-phase commit across shards: the name of
// this instance in the XA ids it writes, and the recovery of branches
// left prepared (docs/sharding.md, "Atomic transactions").
type Transactions struct {
	// Instance names this shardgate process in XA ids: unique among the
	// processes sharing backends, at most one process at a time. "": the
	// host name and the first listener's port.
	Instance string `yaml:"instance"`
	// RecoveryInterval is how often recovery scans the shards for
	// prepared branches (and once at start).
	RecoveryInterval time.Duration `yaml:"recovery_interval"`
	// AbandonAfter: a prepared branch of another instance with no
	// decision, seen this long, is rolled back (its coordinator's
	// transaction would have decided by then).
	AbandonAfter time.Duration `yaml:"abandon_after"`
}

// Log configures the proxy's own log output.
type Log struct {
	Level  string `yaml:"level"`                   // debug | info | warn | error
	Format string `yaml:"format" reload:"restart"` // text | json
}

// Telemetry configures statement telemetry: the per-digest statistics of
// SHOW QUERY DIGESTS and the slow query log (internal/telemetry).
type Telemetry struct {
	// Enabled: time and record every client statement (the statement
	// metrics too). Off only to measure what telemetry costs.
	Enabled bool `yaml:"enabled" reload:"restart"`
	// Digests: keep per-digest statistics, at most MaxDigests rows (the
	// statements of further digests count in one overflow row).
	Digests    bool    `yaml:"digests"`
	MaxDigests int     `yaml:"max_digests"`
	SlowLog    SlowLog `yaml:"slow_log"`
	Tracing    Tracing `yaml:"tracing" reload:"restart"`
}

// Tracing configures OpenTelemetry spans of client statements, exported
// over OTLP/HTTP to Endpoint ("" = off, the default).
type Tracing struct {
	Endpoint    string  `yaml:"endpoint"`     // http(s)://collector:4318
	SampleRatio float64 `yaml:"sample_ratio"` // 0 < r <= 1: the fraction of statements traced
	ServiceName string  `yaml:"service_name"`
}

// SlowLog configures the slow query log: JSON lines, one per statement
// over Threshold, and SampleRate of all the others.
type SlowLog struct {
	File         string        `yaml:"file" reload:"restart"` // "": off
	Threshold    time.Duration `yaml:"threshold"`
	SampleRate   float64       `yaml:"sample_rate"`   // 0..1
	MaskLiterals bool          `yaml:"mask_literals"` // log the digest text instead of the statement
}

// User is an account clients use to log in to the proxy.
type User struct {
	Name            string `yaml:"name"`
	Password        string `yaml:"password" reload:"secret"`
	PasswordHash    string `yaml:"password_hash" reload:"secret"`
	Cluster         string `yaml:"cluster"`
	DefaultDatabase string `yaml:"default_database"`
	// ReadFrom overrides the cluster's routing.read_from for this user
	// ("primary" or "replica"); empty = the cluster's.
	ReadFrom string `yaml:"read_from"`
	// Admin lets the user log in on the listeners' reserved admin
	// connections when max_connections are in use.
	Admin bool `yaml:"admin"`
	// Process is MySQL's PROCESS privilege over the proxy's sessions:
	// SHOW PROCESSLIST and information_schema.PROCESSLIST list every
	// client session, not only the user's own. The proxy answers those
	// itself, so the backend account's grants do not decide it: every
	// user of a cluster shares that account.
	Process bool `yaml:"process"`
}

// Cluster is a set of backend MySQL servers and how the proxy connects to them.
type Cluster struct {
	Name     string     `yaml:"name"`
	User     string     `yaml:"user" reload:"restart"`
	Password string     `yaml:"password" reload:"restart,secret"`
	TLS      BackendTLS `yaml:"tls" reload:"restart"`
	Pool     Pool       `yaml:"pool"`
	Primary  Backend    `yaml:"primary"`
	Replicas []Backend  `yaml:"replicas"`
	Routing  Routing    `yaml:"routing"`
	Health   Health     `yaml:"health"`
	// Users is where the accounts clients log in with are: "configured"
	// (users[] only, the default) or "from_backend": a name users[] does
	// not list logs in with the account of that name on this cluster's
	// servers, checked by the servers themselves, and its statements run
	// on connections logged in as it (docs/configuration.md).
	Users string `yaml:"users" reload:"restart"`
	// UsersCacheTTL: with users: from_backend, a login whose password the
	// servers accepted less than this long ago is not checked again.
	UsersCacheTTL time.Duration `yaml:"users_cache_ttl" reload:"restart"`
}

// Where a cluster's accounts come from (Cluster.Users).
const (
	UsersConfigured  = "configured"
	UsersFromBackend = "from_backend"
)

// AccountsCluster is the cluster whose servers' accounts log in when
// users[] does not list a name (users: from_backend), or nil.
func (c *Config) AccountsCluster() *Cluster {
	for i := range c.Clusters {
		if c.Clusters[i].Users == UsersFromBackend {
			return &c.Clusters[i]
		}
	}
	return nil
}

// Routing decides which server of a cluster a statement goes to.
type Routing struct {
	// ReadFrom is where reads go: "replica" (the default: replicas, the
	// primary when none qualifies) or "primary".
	ReadFrom string `yaml:"read_from"`
	// PrimaryDatabases are databases whose reads always go to the primary.
	PrimaryDatabases []string `yaml:"primary_databases"`
	// MaxReplicaLag: a replica further behind gets no reads.
	MaxReplicaLag time.Duration `yaml:"max_replica_lag"`
	// Consistency is what a session reads after its own writes: "causal"
	// (wait on the replica until it has applied the session's last write,
	// by GTID), "window" (read from the primary for WriteWindow after a
	// write) or "none".
	Consistency string `yaml:"consistency"`
	// WriteWindow: with consistency window, and with causal when the
	// write's GTID is unknown, reads go to the primary this long after the
	// session's last write.
	WriteWindow time.Duration `yaml:"write_window"`
	// CausalWaitTimeout: how long a causal read waits on a replica before
	// it goes to the primary instead.
	CausalWaitTimeout time.Duration `yaml:"causal_wait_timeout"`
	// AutocommitOffReads is where a session with autocommit off sends a
	// read that would start its implicit transaction: "primary" (the
	// default: the whole transaction runs there) or "replica" (the read
	// runs outside any transaction on a replica; the transaction starts on
	// the primary with its first statement that is not such a read).
	AutocommitOffReads string `yaml:"autocommit_off_reads"`
}

// Health configures the health checks and circuit breaker of each server.
type Health struct {
	Interval   time.Duration `yaml:"interval"`    // between checks of one server
	Timeout    time.Duration `yaml:"timeout"`     // connect plus queries of one check
	Failures   int           `yaml:"failures"`    // failed checks or statements in a row that take a server out
	Backoff    time.Duration `yaml:"backoff"`     // first period out before a probe; doubles per failed probe
	MaxBackoff time.Duration `yaml:"max_backoff"` // cap of the period
	// ReconnectInterval: how often a server that is out and accepts no
	// connections is tried with a plain TCP connect (no login), so that it
	// is back in use this soon after it accepts again, whatever the backoff.
	ReconnectInterval time.Duration `yaml:"reconnect_interval"`
}

// BackendTLS controls TLS between the proxy and backend servers.
type BackendTLS struct {
	Mode       string `yaml:"mode"` // off | preferred | required | verify
	CAFile     string `yaml:"ca_file"`
	ServerName string `yaml:"server_name"`
	CertFile   string `yaml:"cert_file"`
	KeyFile    string `yaml:"key_file"`
}

// Pool bounds and times the backend connections of one cluster.
type Pool struct {
	MaxOpen                   int           `yaml:"max_open"`
	MaxIdle                   int           `yaml:"max_idle"`
	MinIdle                   int           `yaml:"min_idle"`
	ConnectTimeout            time.Duration `yaml:"connect_timeout"`
	IdleTimeout               time.Duration `yaml:"idle_timeout"`
	MaxLifetime               time.Duration `yaml:"max_lifetime"`
	WaitTimeout               time.Duration `yaml:"wait_timeout"`
	MaxWaiters                int           `yaml:"max_waiters"`
	PreparedStatementsPerConn int           `yaml:"prepared_statements_per_conn" reload:"restart"`
	HealthCheckInterval       time.Duration `yaml:"health_check_interval"`
	// EvaluatorMaxOpen bounds the connections of each server's evaluator
	// pool (backend.Pool.Evaluator): statements across shards evaluated
	// on the server at once.
	EvaluatorMaxOpen int `yaml:"evaluator_max_open"`
	// PipelineConnections: how many of each server's connections carry
	// several sessions' reads at once (0: none, the default);
	// PipelineDepth: the reads in flight on one of them.
	PipelineConnections int `yaml:"pipeline_connections"`
	PipelineDepth       int `yaml:"pipeline_depth"`
}

// Backend is one MySQL server. Weight is meaningful for replicas only; the
// primary always has weight 1.
type Backend struct {
	// Address identifies a replica, so only the primary's can change (it
	// needs a restart); replicas are added and removed.
	Address string `yaml:"address" reload:"restart"`
	Weight  int    `yaml:"weight"`
	// State "offline" drains the server: no new statements, running ones
	// finish. Default "online". Applied on config reload (SIGHUP).
	State string `yaml:"state"`
}

// Load reads the file at path and parses it with Parse.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(data, path)
}

// Parse parses and validates a configuration. filename is used in messages
// and as the base directory of relative file paths in the configuration.
// On failure the error is a *ValidationError listing every problem found.
func Parse(data []byte, filename string) (*Config, error) {
	baseDir, err := filepath.Abs(filepath.Dir(filename))
	if err != nil {
		return nil, fmt.Errorf("config: resolve directory of %s: %w", filename, err)
	}
	return ParseIn(data, filename, baseDir)
}

// ParseIn is Parse for a configuration that is not a file of its own, such
// as a revision read from etcd: source names it in messages, and relative
// file paths in it are relative to baseDir.
func ParseIn(data []byte, source, baseDir string) (*Config, error) {
	filename := source
	root, syntaxErr := parseYAML(data, filename)
	if syntaxErr != nil {
		return nil, &ValidationError{Problems: []Problem{*syntaxErr}}
	}

	cfg := defaultConfig()
	cfg.File = filename

	d := newDecoder(filename)
	d.lines[""] = 1
	if root != nil {
		d.lines[""] = root.Line
		d.value(root, "", reflect.ValueOf(cfg).Elem())
	}

	v := newValidator(filename, baseDir, d.lines, d.bad)
	v.plaintextWarnings = true
	v.config(cfg)

	if problems := append(d.problems, v.problems...); len(problems) > 0 {
		return nil, newValidationError(problems)
	}
	cfg.warnings = v.warnings
	return cfg, nil
}

// Warnings returns non-fatal remarks about the configuration, one per line
// in the same FILE:LINE: KEY: REASON form as errors.
func (c *Config) Warnings() []string {
	out := make([]string, len(c.warnings))
	for i, w := range c.warnings {
		out[i] = w.String()
	}
	return out
}

// Cluster returns the cluster with the given name, or nil.
func (c *Config) Cluster(name string) *Cluster {
	for i := range c.Clusters {
		if c.Clusters[i].Name == name {
			return &c.Clusters[i]
		}
	}
	return nil
}

// User returns the proxy user with the given name, or nil.
func (c *Config) User(name string) *User {
	for i := range c.Users {
		if c.Users[i].Name == name {
			return &c.Users[i]
		}
	}
	return nil
}
