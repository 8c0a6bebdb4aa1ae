package config

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// storedHash computes the $sg1$ stored form the way `shardgate
// hash-password` documents it, to keep test data honest.
func storedHash(pw string) string {
	s1 := sha1.Sum([]byte(pw))
	s1 = sha1.Sum(s1[:])
	s2 := sha256.Sum256([]byte(pw))
	s2 = sha256.Sum256(s2[:])
	return "$sg1$" + hex.EncodeToString(s1[:]) + "$" + hex.EncodeToString(s2[:])
}

const appSecretHash = "$sg1$6c7a370c07660bc788681b3238d93e08bd74303c$07a99d33e023ea491bc3f7b999efcfb76c32ff9abe1cf29ff3c5ee8b85ea015d"

func TestStoredHashFixture(t *testing.T) {
	if got := storedHash("app-secret"); got != appSecretHash {
		t.Fatalf("storedHash(app-secret) = %s, fixture has %s", got, appSecretHash)
	}
}

// validTail is a valid users+clusters section appended to snippets that
// test other sections, so those snippets keep their own line numbers.
const validTail = `users:
  - name: app
    password_hash: "` + appSecretHash + `"
clusters:
  - name: main
    user: shardgate
    password: secret
    primary:
      address: 127.0.0.1:3306
`

func problemsOf(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		t.Fatal("expected an error, got nil")
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error is %T, want *ValidationError: %v", err, err)
	}
	if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, problemStrings(ve)) {
		t.Fatalf("Error() lines %q differ from Problems %q", got, problemStrings(ve))
	}
	return problemStrings(ve)
}

func problemStrings(ve *ValidationError) []string {
	out := make([]string, len(ve.Problems))
	for i, p := range ve.Problems {
		out[i] = p.String()
	}
	return out
}

func TestFullExampleParses(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"server.crt", "server.key", "rsa.pem", "rsa.pub", "ca.pem", "client.crt", "client.key"} {
		if err := os.WriteFile(filepath.Join(dir, "certs-"+f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	src := `listeners:
  - address: 0.0.0.0:6033
    max_connections: 500
    reserved_admin_connections: 3
    tls:
      mode: required
      cert_file: certs-server.crt
      key_file: certs-server.key
  - address: ":6034"
admin:
  http: 127.0.0.1:6080
server:
  version: 8.0.99-test
  default_auth_plugin: mysql_native_password
  caching_sha2_full_auth: always
  rsa_private_key_file: certs-rsa.pem
  rsa_public_key_file: certs-rsa.pub
  shutdown_timeout: 10s
  client_idle_timeout: 1h
  max_prepared_statements_per_session: 100
  handshake_timeout: 3s
  busy_poll: 50us
  auth_failure_delay:
    threshold: 5
    min_delay: 250ms
    max_delay: 1m
log:
  level: debug
  format: json
users:
  - name: app
    password_hash: "` + appSecretHash + `"
    cluster: main
    default_database: shop
    admin: true
  - name: legacy
    password_hash: "*6C7A370C07660BC788681B3238D93E08BD74303C"
    cluster: reports
clusters:
  - name: main
    user: shardgate
    password: "p:w@d"
    tls:
      mode: verify
      ca_file: certs-ca.pem
      server_name: db.internal
      cert_file: certs-client.crt
      key_file: certs-client.key
    pool:
      max_open: 32
      max_idle: 8
      min_idle: 0
      connect_timeout: 250ms
      idle_timeout: 1m
      max_lifetime: 30m
      wait_timeout: 2s
      max_waiters: 50
      prepared_statements_per_conn: 64
      health_check_interval: 3s
      evaluator_max_open: 2
    primary:
      address: db1.internal:3306
    replicas:
      - address: db2.internal:3306
        weight: 3
      - address: db3.internal:3306
  - name: reports
    user: ro
    password: ""
    primary:
      address: "[::1]:3307"
`
	cfg, err := Parse([]byte(src), filepath.Join(dir, "shardgate.yaml"))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	abs := func(name string) string { return filepath.Join(dir, "certs-"+name) }
	defaultPool := Pool{
		MaxOpen: 16, MaxIdle: 16, MinIdle: 16,
		ConnectTimeout: 5 * time.Second, IdleTimeout: 10 * time.Minute, MaxLifetime: time.Hour,
		WaitTimeout: 5 * time.Second, MaxWaiters: 10000, PreparedStatementsPerConn: 256,
		HealthCheckInterval: 10 * time.Second, EvaluatorMaxOpen: 4, PipelineDepth: 8,
	}
	want := &Config{
		File: filepath.Join(dir, "shardgate.yaml"),
		Listeners: []Listener{
			{Address: "0.0.0.0:6033", MaxConnections: 500, ReservedAdminConnections: 3, ReusePort: true,
				TLS: ListenerTLS{Mode: "required", CertFile: abs("server.crt"), KeyFile: abs("server.key")}},
			{Address: ":6034", MaxConnections: 10000, ReservedAdminConnections: 1, ReusePort: true, TLS: ListenerTLS{Mode: "optional"}},
		},
		Admin: Admin{HTTP: "127.0.0.1:6080"},
		Server: Server{
			Version: "8.0.99-test", DefaultAuthPlugin: "mysql_native_password", CachingSHA2FullAuth: "always",
			RSAPrivateKeyFile: abs("rsa.pem"), RSAPublicKeyFile: abs("rsa.pub"),
			ShutdownTimeout: 10 * time.Second, ClientIdleTimeout: time.Hour, NetReadTimeout: 30 * time.Second, NetWriteTimeout: time.Minute, MaxPreparedStatementsPerSession: 100,
			HandshakeTimeout: 3 * time.Second, BusyPoll: 50 * time.Microsecond,
			AuthFailureDelay: AuthFailureDelay{Threshold: 5, MinDelay: 250 * time.Millisecond, MaxDelay: time.Minute},
		},
		Log:          Log{Level: "debug", Format: "json"},
		Transactions: Transactions{RecoveryInterval: DefaultRecoveryInterval, AbandonAfter: DefaultAbandonAfter},
		Telemetry: Telemetry{Enabled: true, Digests: true, MaxDigests: DefaultMaxDigests,
			SlowLog: SlowLog{Threshold: DefaultSlowThreshold},
			Tracing: Tracing{SampleRatio: DefaultTraceSampleRatio, ServiceName: "shardgate"}},
		Users: []User{
			{Name: "app", PasswordHash: appSecretHash, Cluster: "main", DefaultDatabase: "shop", Admin: true},
			{Name: "legacy", PasswordHash: "*6C7A370C07660BC788681B3238D93E08BD74303C", Cluster: "reports"},
		},
		Clusters: []Cluster{
			{
				Name: "main", User: "shardgate", Password: "p:w@d",
				TLS: BackendTLS{Mode: "verify", CAFile: abs("ca.pem"), ServerName: "db.internal",
					CertFile: abs("client.crt"), KeyFile: abs("client.key")},
				Pool: Pool{MaxOpen: 32, MaxIdle: 8, MinIdle: 0,
					ConnectTimeout: 250 * time.Millisecond, IdleTimeout: time.Minute, MaxLifetime: 30 * time.Minute,
					WaitTimeout: 2 * time.Second, MaxWaiters: 50, PreparedStatementsPerConn: 64,
					HealthCheckInterval: 3 * time.Second, EvaluatorMaxOpen: 2, PipelineDepth: 8},
				Primary:  Backend{Address: "db1.internal:3306", Weight: 1, State: "online"},
				Replicas: []Backend{{Address: "db2.internal:3306", Weight: 3, State: "online"}, {Address: "db3.internal:3306", Weight: 1, State: "online"}},
				Routing:  defaultRouting(), Health: defaultHealth(), Users: UsersConfigured, UsersCacheTTL: 10 * time.Second,
			},
			{
				Name: "reports", User: "ro", Password: "",
				TLS:     BackendTLS{Mode: "off"},
				Pool:    defaultPool,
				Primary: Backend{Address: "[::1]:3307", Weight: 1, State: "online"},
				Routing: defaultRouting(), Health: defaultHealth(), Users: UsersConfigured, UsersCacheTTL: 10 * time.Second,
			},
		},
	}
	if len(cfg.Warnings()) != 0 {
		t.Errorf("unexpected warnings: %q", cfg.Warnings())
	}
	cfg.warnings = nil
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("Parse result differs\n got: %+v\nwant: %+v", cfg, want)
	}
	if c := cfg.Cluster("reports"); c == nil || c.User != "ro" {
		t.Errorf("Cluster(reports) = %+v", c)
	}
	if u := cfg.User("legacy"); u == nil || u.Cluster != "reports" {
		t.Errorf("User(legacy) = %+v", u)
	}
	if cfg.Cluster("nope") != nil || cfg.User("nope") != nil {
		t.Error("lookup of an unknown name should return nil")
	}
}

// threshold 0 turns the delay off: the delays need no value then.
func TestAuthFailureDelayOff(t *testing.T) {
	cfg, err := Parse([]byte("server:\n  auth_failure_delay:\n    threshold: 0\n    min_delay: 0s\n    max_delay: 0s\n"+validTail), "shardgate.yaml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if d := cfg.Server.AuthFailureDelay; d.Threshold != 0 {
		t.Errorf("auth_failure_delay = %+v", d)
	}
}

func TestDefaults(t *testing.T) {
	cfg, err := Parse([]byte(validTail), "shardgate.yaml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := &Config{
		File:      "shardgate.yaml",
		Listeners: []Listener{{Address: "127.0.0.1:6033", MaxConnections: 10000, ReservedAdminConnections: 1, ReusePort: true, TLS: ListenerTLS{Mode: "optional"}}},
		Server: Server{
			Version: "", DefaultAuthPlugin: "", CachingSHA2FullAuth: "first_login",
			ShutdownTimeout: 30 * time.Second, ClientIdleTimeout: 8 * time.Hour, NetReadTimeout: 30 * time.Second, NetWriteTimeout: time.Minute, MaxPreparedStatementsPerSession: 16382,
			HandshakeTimeout: 10 * time.Second, BusyPoll: DefaultBusyPoll,
			AuthFailureDelay: AuthFailureDelay{Threshold: 3, MinDelay: time.Second, MaxDelay: 30 * time.Second},
		},
		Log:          Log{Level: "info", Format: "text"},
		Transactions: Transactions{RecoveryInterval: DefaultRecoveryInterval, AbandonAfter: DefaultAbandonAfter},
		Telemetry: Telemetry{Enabled: true, Digests: true, MaxDigests: DefaultMaxDigests,
			SlowLog: SlowLog{Threshold: DefaultSlowThreshold},
			Tracing: Tracing{SampleRatio: DefaultTraceSampleRatio, ServiceName: "shardgate"}},
		Users: []User{{Name: "app", PasswordHash: appSecretHash, Cluster: "main"}},
		Clusters: []Cluster{{
			Name: "main", User: "shardgate", Password: "secret",
			TLS: BackendTLS{Mode: "off"},
			Pool: Pool{
				MaxOpen: 16, MaxIdle: 16, MinIdle: 16,
				ConnectTimeout: 5 * time.Second, IdleTimeout: 10 * time.Minute, MaxLifetime: time.Hour,
				WaitTimeout: 5 * time.Second, MaxWaiters: 10000, PreparedStatementsPerConn: 256,
				HealthCheckInterval: 10 * time.Second, EvaluatorMaxOpen: 4, PipelineDepth: 8,
			},
			Primary: Backend{Address: "127.0.0.1:3306", Weight: 1, State: "online"},
			Routing: defaultRouting(), Health: defaultHealth(), Users: UsersConfigured, UsersCacheTTL: 10 * time.Second,
		}},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("defaults differ\n got: %+v\nwant: %+v", cfg, want)
	}
}

func TestPoolIdleResolution(t *testing.T) {
	tests := []struct {
		pool              string
		wantIdle, wantMin int
	}{
		{"max_open: 10", 10, 10},                  // max_idle 0 → max_open; min_idle → max_idle
		{"max_open: 10\n      max_idle: 4", 4, 4}, // min_idle follows max_idle
		{"max_idle: 0\n      min_idle: 0", 16, 0}, // explicit min_idle 0 is kept
		{"max_idle: 5\n      min_idle: 2", 5, 2},
	}
	for _, tt := range tests {
		src := `users: [{name: app, password: x}]
clusters:
  - name: main
    user: u
    primary: {address: "h:1"}
    pool:
      ` + tt.pool + "\n"
		cfg, err := Parse([]byte(src), "p.yaml")
		if err != nil {
			t.Fatalf("%q: %v", tt.pool, err)
		}
		p := cfg.Clusters[0].Pool
		if p.MaxIdle != tt.wantIdle || p.MinIdle != tt.wantMin {
			t.Errorf("%q: max_idle=%d min_idle=%d, want %d %d", tt.pool, p.MaxIdle, p.MinIdle, tt.wantIdle, tt.wantMin)
		}
	}
}

func TestUserClusterDefaultsToOnlyCluster(t *testing.T) {
	cfg, err := Parse([]byte(validTail), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Users[0].Cluster; got != "main" {
		t.Errorf("user cluster = %q, want main", got)
	}
}

func TestProblems(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cert.pem"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o700); err != nil {
		t.Fatal(err)
	}
	const f = "shardgate.yaml"
	tests := []struct {
		name string
		src  string
		want []string
	}{
		// --- YAML syntax ---
		{"syntax error", "log:\n  level: info\n    format: text\n", []string{
			f + ":3: YAML syntax error: mapping values are not allowed in this context"}},
		{"tab indentation", "users:\n\t- name: a\n", []string{
			f + ":2: YAML syntax error: found character that cannot start any token"}},
		{"two documents", validTail + "---\nlog: {level: debug}\n", []string{
			f + ":10: multiple YAML documents; put the whole configuration in one document"}},

		// --- unknown keys ---
		{"unknown key with suggestion", "listeners:\n  - adress: 127.0.0.1:6033\n" + validTail, []string{
			f + `:2: listeners[0].adress: unknown key (did you mean "address"?)`,
			f + ":2: listeners[0].address: required"}},
		{"unknown deep key", "users: [{name: a, password: x}]\nclusters:\n  - name: m\n    user: u\n    primary: {address: \"h:1\"}\n    pool:\n      max_opn: 3\n", []string{
			f + `:7: clusters[0].pool.max_opn: unknown key (did you mean "max_open"?)`}},
		{"unknown key camel case", "server:\n  shutdownTimeout: 5s\n" + validTail, []string{
			f + `:2: server.shutdownTimeout: unknown key (did you mean "shutdown_timeout"?)`}},
		{"unknown key without suggestion", "frobnicate: 1\n" + validTail, []string{
			f + ":1: frobnicate: unknown key (known keys: listeners, admin, server, log, telemetry, users, clusters, schemas, transactions)"}},
		{"non-string key", "log:\n  [a]: b\n" + validTail, []string{
			f + ":2: log: keys must be strings, got a list"}},
		{"bad merge value", "log:\n  <<: [1]\n" + validTail, []string{
			f + ":2: log: merge key (<<) needs a mapping, got integer 1"}},
		{"unknown anchor", "users: *nope\n", []string{
			"shardgate.yaml: YAML syntax error: unknown anchor 'nope' referenced"}},
		{"duplicate key", "log:\n  level: info\n  level: debug\n" + validTail, []string{
			f + ":3: log.level: duplicate key (first set at line 2)"}},

		// --- wrong types ---
		{"string for int", "listeners:\n  - address: h:1\n    max_connections: many\n" + validTail, []string{
			f + `:3: listeners[0].max_connections: expected an integer, got string "many"`}},
		{"quoted int", "listeners:\n  - address: h:1\n    max_connections: \"5\"\n" + validTail, []string{
			f + `:3: listeners[0].max_connections: expected an integer, got string "5"`}},
		{"float for int", "server:\n  max_prepared_statements_per_session: 1.5\n" + validTail, []string{
			f + `:2: server.max_prepared_statements_per_session: expected an integer, got number 1.5`}},
		{"bad duration", "server:\n  shutdown_timeout: 5 seconds\n" + validTail, []string{
			f + `:2: server.shutdown_timeout: invalid duration "5 seconds": use a Go duration such as "5s", "250ms" or "1h"`}},
		{"duration without unit", "server:\n  client_idle_timeout: 30\n" + validTail, []string{
			f + `:2: server.client_idle_timeout: invalid duration "30": use a Go duration such as "5s", "250ms" or "1h"`}},
		{"list where duration", "server:\n  shutdown_timeout: [1]\n" + validTail, []string{
			f + `:2: server.shutdown_timeout: expected a duration such as "5s", got a list`}},
		{"list where mapping", "admin:\n  - http\n" + validTail, []string{
			f + `:2: admin: expected a mapping, got a list`}},
		{"mapping where list, no follow-up noise", "users:\n  name: app\nclusters:\n  - {name: m, user: u, primary: {address: \"h:1\"}}\n", []string{
			f + `:2: users: expected a list, got a mapping`}},
		{"mapping where string", "log:\n  level: {a: b}\n" + validTail, []string{
			f + `:2: log.level: expected a string, got a mapping`}},
		{"scalar where mapping, no follow-up noise", "users: [{name: a, password: x}]\nclusters:\n  - name: m\n    user: u\n    primary: \"h:3306\"\n", []string{
			f + `:5: clusters[0].primary: expected a mapping, got string "h:3306"`}},
		{"int overflow", "listeners:\n  - address: h:1\n    max_connections: 99999999999999999999\n" + validTail, []string{
			f + `:3: listeners[0].max_connections: expected an integer, got number 99999999999999999999`}},
		{"string for bool", "users:\n  - name: a\n    password: x\n    admin: yes please\nclusters:\n  - {name: m, user: u, primary: {address: \"h:1\"}}\n", []string{
			f + `:4: users[0].admin: expected true or false, got string "yes please"`}},
		{"root is a list", "- a\n", []string{
			f + `:1: expected a mapping, got a list`}},

		// --- impossible values ---
		{"empty file", "", []string{
			f + ":1: clusters: at least one cluster is required",
			f + ":1: users: at least one user is required (or a cluster with users: from_backend)"}},
		{"only comments", "# nothing\n", []string{
			f + ":1: clusters: at least one cluster is required",
			f + ":1: users: at least one user is required (or a cluster with users: from_backend)"}},
		{"empty listeners list", "listeners: []\n" + validTail, []string{
			f + ":1: listeners: must contain at least one listener (leave the key out to get one at 127.0.0.1:6033)"}},
		{"connection limits", "listeners:\n  - address: h:1\n    reserved_admin_connections: -1\nserver:\n  handshake_timeout: 0s\n" + validTail, []string{
			f + ":3: listeners[0].reserved_admin_connections: must be >= 0 (got -1)",
			f + ":5: server.handshake_timeout: must be > 0 (got 0s)"}},
		{"negative gomaxprocs", "server:\n  gomaxprocs: -1\n" + validTail, []string{
			f + ":2: server.gomaxprocs: must be >= 0 (0 = automatic; got -1)"}},
		{"busy_poll out of range", "server:\n  busy_poll: 2ms\n" + validTail, []string{
			f + ":2: server.busy_poll: must be between 0 (off) and 1ms (got 2ms)"}},
		{"negative busy_poll", "server:\n  busy_poll: -1us\n" + validTail, []string{
			f + ":2: server.busy_poll: must be between 0 (off) and 1ms (got -1µs)"}},
		{"auth_failure_delay out of range", "server:\n  auth_failure_delay:\n    threshold: -1\n" + validTail, []string{
			f + ":3: server.auth_failure_delay.threshold: must be >= 0 (0 = no delay; got -1)"}},
		{"auth_failure_delay delays", "server:\n  auth_failure_delay:\n    min_delay: 0s\n    max_delay: -1s\n" + validTail, []string{
			f + ":3: server.auth_failure_delay.min_delay: must be > 0 (got 0s)",
			f + ":4: server.auth_failure_delay.max_delay: must be >= min_delay (0s; got -1s)"}},
		{"max_idle above max_open", "users: [{name: a, password: x}]\nclusters:\n  - name: m\n    user: u\n    primary: {address: \"h:1\"}\n    pool:\n      max_idle: 17\n", []string{
			f + ":7: clusters[0].pool.max_idle: must be <= max_open (16)"}},
		{"pipelining every connection", "users: [{name: a, password: x}]\nclusters:\n  - name: m\n    user: u\n    primary: {address: \"h:1\"}\n    pool:\n      max_open: 4\n      pipeline_connections: 4\n      pipeline_depth: 0\n", []string{
			f + ":8: clusters[0].pool.pipeline_connections: must be between 0 and max_open - 1 (3) (got 4)",
			f + ":9: clusters[0].pool.pipeline_depth: must be > 0 (got 0)"}},
		{"min_idle above max_idle", "users: [{name: a, password: x}]\nclusters:\n  - name: m\n    user: u\n    primary: {address: \"h:1\"}\n    pool:\n      max_idle: 4\n      min_idle: 5\n", []string{
			f + ":8: clusters[0].pool.min_idle: must be <= max_idle (4)"}},
		{"pool zero and negative values", "users: [{name: a, password: x}]\nclusters:\n  - name: m\n    user: u\n    primary: {address: \"h:1\"}\n    pool:\n      max_open: 0\n      max_idle: -1\n      min_idle: -1\n      wait_timeout: 0s\n      max_lifetime: -1m\n      max_waiters: 0\n      prepared_statements_per_conn: -3\n      evaluator_max_open: 0\n", []string{
			f + ":7: clusters[0].pool.max_open: must be > 0 (got 0)",
			f + ":8: clusters[0].pool.max_idle: must be >= 0 (got -1)",
			f + ":9: clusters[0].pool.min_idle: must be >= 0 (got -1)",
			f + ":10: clusters[0].pool.wait_timeout: must be > 0 (got 0s)",
			f + ":11: clusters[0].pool.max_lifetime: must be > 0 (got -1m0s)",
			f + ":12: clusters[0].pool.max_waiters: must be > 0 (got 0)",
			f + ":13: clusters[0].pool.prepared_statements_per_conn: must be > 0 (got -3)",
			f + ":14: clusters[0].pool.evaluator_max_open: must be > 0 (got 0)"}},
		{"enums", "listeners:\n  - address: h:1\n    tls: {mode: on}\nserver:\n  default_auth_plugin: sha256_password\n  caching_sha2_full_auth: sometimes\nlog:\n  level: verbose\n  format: xml\n" + validTail, []string{
			f + `:3: listeners[0].tls.mode: must be one of off, optional, required (got "on")`,
			f + `:5: server.default_auth_plugin: must be one of caching_sha2_password, mysql_native_password (got "sha256_password")`,
			f + `:6: server.caching_sha2_full_auth: must be one of first_login, always, never (got "sometimes")`,
			f + `:8: log.level: must be one of debug, info, warn, error (got "verbose")`,
			f + `:9: log.format: must be one of text, json (got "xml")`}},
		{"telemetry", "telemetry:\n  max_digests: 0\n  slow_log:\n    file: /nonexistent/dir/slow.log\n    threshold: 0s\n    sample_rate: 1.5\n    mask_literals: maybe\n" + validTail, []string{
			f + ":2: telemetry.max_digests: must be > 0 (got 0)",
			f + ":4: telemetry.slow_log.file: directory /nonexistent/dir does not exist",
			f + ":5: telemetry.slow_log.threshold: must be > 0 (got 0s)",
			f + ":6: telemetry.slow_log.sample_rate: must be between 0 and 1 (got 1.5)",
			f + ":7: telemetry.slow_log.mask_literals: expected true or false, got string \"maybe\""}},
		{"tracing", "telemetry:\n  tracing:\n    endpoint: collector:4318\n    sample_ratio: 0\n    service_name: \"\"\n" + validTail, []string{
			f + ":3: telemetry.tracing.endpoint: want the OTLP/HTTP collector's URL, http://host:port or https://host:port (got \"collector:4318\")",
			f + ":4: telemetry.tracing.sample_ratio: must be greater than 0 and at most 1 (got 0)",
			f + ":5: telemetry.tracing.service_name: must not be empty"}},
		{"tracing endpoint credentials", "telemetry:\n  tracing:\n    endpoint: https://user:s3cret@collector:4318\n" + validTail, []string{
			f + ":3: telemetry.tracing.endpoint: must not hold credentials (user:password@ before collector:4318): they would not be sent; " +
				"authenticating to the collector (a header) is not supported yet, so point it at a collector that needs none, on localhost or a private network"}},
		{"tracing endpoint query", "telemetry:\n  tracing:\n    endpoint: http://collector:4318/v1/traces?api_key=s3cret\n" + validTail, []string{
			f + ":3: telemetry.tracing.endpoint: must not have a query or fragment (after ? or #): they would not be sent; want http(s)://host:port[/path]"}},
		{"telemetry sample rate type", "telemetry:\n  slow_log:\n    sample_rate: often\n" + validTail, []string{
			f + ":3: telemetry.slow_log.sample_rate: expected a number, got string \"often\""}},
		{"server version", "server:\n  version: v8.0\n  shutdown_timeout: 0s\n  max_prepared_statements_per_session: 0\n" + validTail, []string{
			f + `:2: server.version: must start with a digit, like "8.0.36-shardgate" (got "v8.0")`,
			f + ":3: server.shutdown_timeout: must be > 0 (got 0s)",
			f + ":4: server.max_prepared_statements_per_session: must be > 0 (got 0)"}},
		{"NUL in server version", "server:\n  version: \"8.0\\0x\"\n" + validTail, []string{
			f + ":2: server.version: must not contain a NUL character"}},
		{"addresses", "listeners:\n  - address: localhost\n  - address: h:-1\n  - address: h:http\n  - address: h:70000\n  - address: \":6033\"\n  - address: \":6033\"\nadmin:\n  http: \"[::1\"\n" + validTail, []string{
			f + `:2: listeners[0].address: invalid address "localhost": missing port in address; want host:port`,
			f + `:3: listeners[1].address: invalid address "h:-1": port -1 is out of range 1..65535`,
			f + `:4: listeners[2].address: invalid address "h:http": port "http" is not a number`,
			f + `:5: listeners[3].address: invalid address "h:70000": port 70000 is out of range 1..65535`,
			f + `:7: listeners[5].address: duplicate address ":6033" (also listeners[4])`,
			f + `:9: admin.http: invalid address "[::1": missing ']' in address; want host:port`}},
		{"backend addresses need a host", "users: [{name: a, password: x}]\nclusters:\n  - name: m\n    user: u\n    primary:\n      address: \":3306\"\n    replicas:\n      - address: \"r:3306\"\n        weight: 0\n      - weight: 2\n", []string{
			f + `:6: clusters[0].primary.address: invalid address ":3306": missing host; want host:port`,
			f + ":9: clusters[0].replicas[0].weight: must be >= 1 (got 0)",
			f + ":10: clusters[0].replicas[1].address: required"}},
		{"routing enums", "users: [{name: a, password: x}]\nclusters:\n  - name: m\n    user: u\n    primary: {address: \"h:1\"}\n    routing:\n      autocommit_off_reads: sometimes\n", []string{
			f + `:7: clusters[0].routing.autocommit_off_reads: must be one of primary, replica (got "sometimes")`}},
		{"primary weight", "users: [{name: a, password: x}]\nclusters:\n  - name: m\n    user: u\n    primary:\n      address: h:1\n      weight: 2\n", []string{
			f + ":7: clusters[0].primary.weight: only replicas have a weight"}},
		{"missing cluster fields", "users: [{name: a, password: x}]\nclusters:\n  - password: p\n  - name: \"\"\n    user: \"\"\n    primary: {}\n", []string{
			f + ":1: users[0].cluster: required when more than one cluster is defined and there are no schemas",
			f + ":3: clusters[0].name: required",
			f + ":3: clusters[0].user: required",
			f + ":3: clusters[0].primary.address: required",
			f + ":4: clusters[1].name: must not be empty",
			f + ":5: clusters[1].user: must not be empty",
			f + ":6: clusters[1].primary.address: required"}},
		{"duplicate names", "users:\n  - {name: a, password: x}\n  - {name: a, password: y}\nclusters:\n  - {name: m, user: u, primary: {address: \"h:1\"}}\n  - {name: m, user: u, primary: {address: \"h:2\"}}\n", []string{
			f + ":2: users[0].cluster: required when more than one cluster is defined and there are no schemas",
			f + `:3: users[1].name: duplicate user name "a" (also users[0])`,
			f + ":3: users[1].cluster: required when more than one cluster is defined and there are no schemas",
			f + `:6: clusters[1].name: duplicate cluster name "m" (also clusters[0])`}},
		{"user cluster", "users:\n  - {name: a, password: x, cluster: nope}\n  - {name: b, password: x, cluster: \"\"}\n  - {name: c, password: x}\nclusters:\n  - {name: m1, user: u, primary: {address: \"h:1\"}}\n  - {name: m2, user: u, primary: {address: \"h:2\"}}\n", []string{
			f + `:2: users[0].cluster: unknown cluster "nope" (defined: m1, m2)`,
			f + ":3: users[1].cluster: must not be empty",
			f + ":4: users[2].cluster: required when more than one cluster is defined and there are no schemas"}},
		{"user names", "users:\n  - password: x\n  - name: " + strings.Repeat("é", 81) + "\n    password: x\nclusters:\n  - {name: m, user: u, primary: {address: \"h:1\"}}\n", []string{
			f + ":2: users[0].name: required",
			f + ":3: users[1].name: must be at most 80 characters (got 81)"}},
		{"passwords", "users:\n  - name: both\n    password: x\n    password_hash: \"" + appSecretHash + "\"\n  - name: neither\n  - name: badhash\n    password_hash: \"$sg1$ABC\"\n  - name: lowernative\n    password_hash: \"*6c7a370c07660bc788681b3238d93e08bd74303c\"\n  - name: nullhash\n    password_hash:\nclusters:\n  - {name: m, user: u, primary: {address: \"h:1\"}}\n", []string{
			f + ":4: users[0].password_hash: password and password_hash are both set; set exactly one",
			f + ":5: users[1].password_hash: required (or password); create it with: shardgate hash-password",
			f + ":7: users[2].password_hash: not a valid stored password: want $sg1$<40 hex>$<64 hex> from shardgate hash-password, or *<40 uppercase hex> (MySQL mysql_native_password)",
			f + ":9: users[3].password_hash: not a valid stored password: want $sg1$<40 hex>$<64 hex> from shardgate hash-password, or *<40 uppercase hex> (MySQL mysql_native_password)",
			f + ":11: users[4].password_hash: not a valid stored password: want $sg1$<40 hex>$<64 hex> from shardgate hash-password, or *<40 uppercase hex> (MySQL mysql_native_password)"}},
		{"cert and key both or neither", "listeners:\n  - address: h:1\n    tls:\n      cert_file: " + filepath.Join(dir, "cert.pem") + "\nserver:\n  rsa_public_key_file: " + filepath.Join(dir, "cert.pem") + "\n" + validTail, []string{
			// A missing key is reported at the line of its parent.
			f + ":3: listeners[0].tls.key_file: required when cert_file is set",
			f + ":5: server.rsa_private_key_file: required when rsa_public_key_file is set"}},
		{"files must exist", "listeners:\n  - address: h:1\n    tls:\n      cert_file: missing.crt\n      key_file: adir\n" + validTail, []string{
			f + ":4: listeners[0].tls.cert_file: file " + filepath.Join(dir, "missing.crt") + " does not exist",
			f + ":5: listeners[0].tls.key_file: " + filepath.Join(dir, "adir") + " is a directory, not a file"}},
		{"backend tls", "users: [{name: a, password: x, cluster: m}]\nclusters:\n  - name: m\n    user: u\n    primary: {address: \"h:1\"}\n    tls:\n      mode: verify\n      key_file: cert.pem\n  - name: n\n    user: u\n    primary: {address: \"h:1\"}\n    tls:\n      mode: strict\n      ca_file: nope.pem\n", []string{
			f + ":6: clusters[0].tls.ca_file: required when mode is verify",
			f + ":6: clusters[0].tls.cert_file: required when key_file is set",
			f + `:13: clusters[1].tls.mode: must be one of off, preferred, required, verify (got "strict")`,
			f + ":14: clusters[1].tls.ca_file: file " + filepath.Join(dir, "nope.pem") + " does not exist"}},

		// --- admin SQL port ---
		{"admin sql without users", "admin:\n  sql: 127.0.0.1:6034\n" + validTail, []string{
			f + ":1: admin.users: at least one admin user is required when admin.sql is set (users[] cannot log in on the admin port)"}},
		{"admin sql bad address", "admin:\n  sql: nope\n  users: [{name: root, password: x}]\n" + validTail, []string{
			f + `:2: admin.sql: invalid address "nope": missing port in address; want host:port`}},
		{"admin sql clashes", "listeners: [{address: \"127.0.0.1:6033\"}]\nadmin:\n  http: 127.0.0.1:6033\n  sql: 127.0.0.1:6033\n  users: [{name: root, password: x}]\n" + validTail, []string{
			f + ":4: admin.sql: same address as admin.http (127.0.0.1:6033)",
			f + ":4: admin.sql: same address as listeners[0].address (127.0.0.1:6033): the admin port is a listener of its own"}},
		{"admin users", "admin:\n  sql: 127.0.0.1:0\n  users:\n    - name: root\n    - {name: root, password: a, password_hash: b}\n    - {password: x}\n" + validTail, []string{
			f + ":4: admin.users[0].password_hash: required (or password); create it with: shardgate hash-password",
			f + `:5: admin.users[1].name: duplicate admin user name "root" (also admin.users[0])`,
			f + ":5: admin.users[1].password_hash: password and password_hash are both set; set exactly one",
			f + ":6: admin.users[2].name: required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src), filepath.Join(dir, f))
			got := problemsOf(t, err)
			want := make([]string, len(tt.want))
			for i, w := range tt.want {
				want[i] = dir + string(filepath.Separator) + w // problems carry the file name as given
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("problems:\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
			}
		})
	}
}

// TestManyProblemsAllReported checks that problems of different kinds in
// one file are all reported, in line order.
func TestManyProblemsAllReported(t *testing.T) {
	src := `listeners:
  - adress: 127.0.0.1:6033
    max_connections: lots
server:
  shutdown_timeout: 5 seconds
users:
  - name: app
    password: x
    cluster: other
clusters:
  - name: main
    user: shardgate
    pool:
      max_open: 8
      max_idle: 9
    primary:
      address: db:99999
`
	got := problemsOf(t, func() error { _, err := Parse([]byte(src), "shardgate.yaml"); return err }())
	want := []string{
		`shardgate.yaml:2: listeners[0].adress: unknown key (did you mean "address"?)`,
		`shardgate.yaml:2: listeners[0].address: required`,
		`shardgate.yaml:3: listeners[0].max_connections: expected an integer, got string "lots"`,
		`shardgate.yaml:5: server.shutdown_timeout: invalid duration "5 seconds": use a Go duration such as "5s", "250ms" or "1h"`,
		`shardgate.yaml:9: users[0].cluster: unknown cluster "other" (defined: main)`,
		`shardgate.yaml:15: clusters[0].pool.max_idle: must be <= max_open (8)`,
		`shardgate.yaml:17: clusters[0].primary.address: invalid address "db:99999": port 99999 is out of range 1..65535`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}
}

func TestWarnings(t *testing.T) {
	src := `admin:
  http: 0.0.0.0:6080
users:
  - name: app
    password: s3cret
  - name: empty
    password: ""
  - name: hashed
    password_hash: "` + appSecretHash + `"
clusters:
  - {name: m, user: u, primary: {address: "h:1"}}
`
	cfg, err := Parse([]byte(src), "shardgate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"shardgate.yaml:2: admin.http: 0.0.0.0:6080 is not a loopback address; the status page, /api, /metrics and /debug/pprof have no authentication",
		"shardgate.yaml:5: users[0] (app): plaintext password; store password_hash instead (shardgate hash-password)",
		"shardgate.yaml:7: users[1] (empty): empty plaintext password; anyone who knows the user name can log in",
	}
	if got := cfg.Warnings(); !reflect.DeepEqual(got, want) {
		t.Errorf("warnings:\n got: %q\nwant: %q", got, want)
	}
	if got := cfg.User("empty"); got == nil || got.Password != "" {
		t.Errorf("User(empty) = %+v", got)
	}
}

// An admin SQL port with its accounts parses; admin.users without the port
// is only a warning.
func TestAdminSQL(t *testing.T) {
	cfg, err := Parse([]byte("admin:\n  sql: 0.0.0.0:6034\n  users:\n    - {name: ops, password_hash: \""+appSecretHash+"\"}\n"+validTail), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Admin.SQL != "0.0.0.0:6034" || len(cfg.Admin.Users) != 1 || cfg.Admin.Users[0].Name != "ops" {
		t.Errorf("admin = %+v", cfg.Admin)
	}
	if w := cfg.Warnings(); len(w) != 0 {
		t.Errorf("unexpected warnings %q", w)
	}
	cfg, err = Parse([]byte("admin:\n  users:\n    - {name: ops, password_hash: \""+appSecretHash+"\"}\n"+validTail), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a.yaml:2: admin.users: admin.sql is not set, so the admin SQL port is off and these accounts cannot log in"}
	if got := cfg.Warnings(); !reflect.DeepEqual(got, want) {
		t.Errorf("warnings %q, want %q", got, want)
	}
}

func TestAdminLoopbackHasNoWarning(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:6080", "localhost:6080", "[::1]:6080"} {
		cfg, err := Parse([]byte("admin: {http: \""+addr+"\"}\n"+validTail), "a.yaml")
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		if w := cfg.Warnings(); len(w) != 0 {
			t.Errorf("%s: unexpected warnings %q", addr, w)
		}
	}
}

// TestNullKeepsDefault: "key:" with no value keeps the default, but a null
// string key still counts as present (so "password:" is an empty password).
func TestNullKeepsDefault(t *testing.T) {
	src := `listeners:
  - address: h:1
    max_connections:
    tls:
server:
  shutdown_timeout: ~
users:
  - name: a
    password:
clusters:
  - {name: m, user: u, primary: {address: "h:1"}, pool: {min_idle: }}
`
	cfg, err := Parse([]byte(src), "n.yaml")
	if err != nil {
		t.Fatal(err)
	}
	l := cfg.Listeners[0]
	if l.MaxConnections != 10000 || l.TLS.Mode != "optional" || cfg.Server.ShutdownTimeout != 30*time.Second {
		t.Errorf("defaults not kept: %+v %+v", l, cfg.Server)
	}
	if p := cfg.Clusters[0].Pool; p.MinIdle != 16 {
		t.Errorf("min_idle = %d, want the default 16", p.MinIdle)
	}
	want := []string{"n.yaml:9: users[0] (a): empty plaintext password; anyone who knows the user name can log in"}
	if got := cfg.Warnings(); !reflect.DeepEqual(got, want) {
		t.Errorf("warnings = %q, want %q", got, want)
	}
}

func TestAnchorsAndMergeKeys(t *testing.T) {
	src := `users:
  - name: app
    password: x
    cluster: a
  - name: ro
    password: y
    cluster: b
clusters:
  - &base
    name: a
    user: u
    pool: {max_open: 4}
    primary: {address: "h:1"}
  - <<: *base
    name: b
  - <<: [{user: first, pool: {max_open: 2}}, *base]
    name: c
`
	cfg, err := Parse([]byte(src), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.Cluster("b")
	if b == nil || b.User != "u" || b.Pool.MaxOpen != 4 || b.Primary.Address != "h:1" {
		t.Errorf("merged cluster = %+v", b)
	}
	// In a list of merged mappings the earlier one wins.
	c := cfg.Cluster("c")
	if c == nil || c.User != "first" || c.Pool.MaxOpen != 2 || c.Primary.Address != "h:1" {
		t.Errorf("merged cluster = %+v", c)
	}
}

func TestQuickStart(t *testing.T) {
	tests := []struct {
		name                  string
		listen, backend, http string
		user, password, addr  string
		db                    string
	}{
		{"plain", "127.0.0.1:6033", "app:secret@127.0.0.1:3306", "", "app", "secret", "127.0.0.1:3306", ""},
		{"with database", "127.0.0.1:6033", "app:secret@db:3306/shop", "127.0.0.1:6080", "app", "secret", "db:3306", "shop"},
		{"password with : and @", "127.0.0.1:6033", "root:p@ss:w@rd@db.example:3306/shop", "", "root", "p@ss:w@rd", "db.example:3306", "shop"},
		{"empty password", ":6033", "app:@db:3306", "", "app", "", "db:3306", ""},
		{"ipv6 backend, trailing slash", "[::1]:6033", "app:x@[::1]:3306/", "", "app", "x", "[::1]:3306", ""},
		{"default listen", "", "app:x@db:3306", "", "app", "x", "db:3306", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := QuickStart(tt.listen, tt.backend, tt.http)
			if err != nil {
				t.Fatalf("QuickStart: %v", err)
			}
			wantListen := tt.listen
			if wantListen == "" {
				wantListen = DefaultListenAddress
			}
			if len(cfg.Listeners) != 1 || cfg.Listeners[0].Address != wantListen || cfg.Listeners[0].MaxConnections != 10000 {
				t.Errorf("listeners = %+v", cfg.Listeners)
			}
			if cfg.Admin.HTTP != tt.http {
				t.Errorf("admin.http = %q", cfg.Admin.HTTP)
			}
			c := cfg.Cluster("default")
			if c == nil || len(cfg.Clusters) != 1 {
				t.Fatalf("clusters = %+v", cfg.Clusters)
			}
			if c.User != tt.user || c.Password != tt.password || c.Primary.Address != tt.addr {
				t.Errorf("cluster = %+v", c)
			}
			if c.Pool.MaxOpen != 16 || c.Pool.MaxIdle != 16 || c.Pool.MinIdle != 16 || c.TLS.Mode != "off" {
				t.Errorf("cluster defaults not applied: %+v", c)
			}
			wantUser := User{Name: tt.user, Password: tt.password, Cluster: "default", DefaultDatabase: tt.db}
			if len(cfg.Users) != 1 || cfg.Users[0] != wantUser {
				t.Errorf("users = %+v, want %+v", cfg.Users, wantUser)
			}
			if w := cfg.Warnings(); len(w) != 0 {
				t.Errorf("unexpected warnings %q", w)
			}
			if cfg.Server.Version != "" || cfg.Log.Level != "info" {
				t.Errorf("server/log defaults not applied: %+v %+v", cfg.Server, cfg.Log)
			}
		})
	}
}

func TestQuickStartRejects(t *testing.T) {
	const form = "USER:PASSWORD@HOST:PORT[/DB]"
	tests := []struct {
		name                  string
		listen, backend, http string
		want                  []string
	}{
		{"user@host without port or password", "127.0.0.1:6033", "user@host", "", []string{
			"--backend: missing ':PASSWORD' after the user; want " + form + " (USER:@HOST:PORT for an empty password)",
			`--backend: invalid address "host": missing port in address; want host:port`}},
		{"missing port", "127.0.0.1:6033", "app:pw@db", "", []string{
			`--backend: invalid address "db": missing port in address; want host:port`}},
		{"missing host", "127.0.0.1:6033", "app:pw@:3306", "", []string{
			`--backend: invalid address ":3306": missing host; want host:port`}},
		{"no @, password not echoed", "127.0.0.1:6033", "app:topsecret", "", []string{
			"--backend: missing '@'; want " + form}},
		{"empty", "127.0.0.1:6033", "", "", []string{
			"--backend: required; want " + form}},
		{"missing user", "127.0.0.1:6033", ":pw@db:3306", "", []string{
			"--backend: missing user; want " + form}},
		{"missing address", "127.0.0.1:6033", "app:pw@/shop", "", []string{
			"--backend: missing HOST:PORT after '@'; want " + form}},
		{"backend port 0", "127.0.0.1:6033", "app:pw@db:0/x", "", []string{
			`--backend: invalid address "db:0": port 0 is out of range 1..65535`}},
		{"port out of range", "127.0.0.1:6033", "app:pw@db:99999/x", "", []string{
			`--backend: invalid address "db:99999": port 99999 is out of range 1..65535`}},
		{"database with slash", "127.0.0.1:6033", "app:pw@db:3306/a/b", "", []string{
			`--backend: database name "a/b" must not contain '/'`}},
		{"user name too long", "127.0.0.1:6033", strings.Repeat("u", 81) + ":pw@db:3306", "", []string{
			"--backend: must be at most 80 characters (got 81)"}},
		{"bad listen and admin", "6033", "app:pw@db:3306", "localhost", []string{
			`--listen: invalid address "6033": missing port in address; want host:port`,
			`--admin-http: invalid address "localhost": missing port in address; want host:port`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := QuickStart(tt.listen, tt.backend, tt.http)
			got := problemsOf(t, err)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("problems:\n got: %q\nwant: %q", got, tt.want)
			}
			if strings.Contains(err.Error(), "topsecret") {
				t.Errorf("error echoes the password: %v", err)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "shardgate.yaml")
	if err := os.WriteFile(path, []byte(validTail), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if cfg.File != path {
		t.Errorf("File = %q, want %q", cfg.File, path)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) error = %v, want a not-exist error", err)
	}
}

func TestExamplesParse(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("found %d example files, want at least 2", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			cfg, err := Load(f)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if len(cfg.Users) == 0 || len(cfg.Clusters) == 0 {
				t.Errorf("example has no users or clusters")
			}
			for _, u := range cfg.Users {
				if u.Password != "" {
					t.Errorf("example user %q uses a plaintext password; examples should show password_hash", u.Name)
				}
			}
			if w := cfg.Warnings(); len(w) != 0 {
				t.Errorf("example has warnings: %q", w)
			}
		})
	}
}

func TestProblemString(t *testing.T) {
	tests := []struct {
		p    Problem
		want string
	}{
		{Problem{File: "a.yaml", Line: 7, Key: "clusters[0].pool.max_idle", Reason: "must be <= max_open (16)"},
			"a.yaml:7: clusters[0].pool.max_idle: must be <= max_open (16)"},
		{Problem{File: "a.yaml", Line: 3, Reason: "YAML syntax error: x"}, "a.yaml:3: YAML syntax error: x"},
		{Problem{File: "a.yaml", Reason: "YAML syntax error: x"}, "a.yaml: YAML syntax error: x"},
		{Problem{Key: "--backend", Reason: "required"}, "--backend: required"},
		{Problem{Line: 4, Key: "log.level", Reason: "x"}, "line 4: log.level: x"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"adress", "address", 1}, {"max_opn", "max_open", 1}, {"abc", "", 3}, {"kitten", "sitting", 3},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func defaultRouting() Routing {
	var c Cluster
	c.setDefaults()
	return c.Routing
}

func defaultHealth() Health {
	var c Cluster
	c.setDefaults()
	return c.Health
}

func TestRoutingAndHealthDefaults(t *testing.T) {
	r, h := defaultRouting(), defaultHealth()
	if r.ReadFrom != "replica" || r.MaxReplicaLag != 10*time.Second || r.Consistency != "causal" ||
		r.WriteWindow != 2*time.Second || r.CausalWaitTimeout != time.Second || len(r.PrimaryDatabases) != 0 ||
		r.AutocommitOffReads != "primary" {
		t.Errorf("routing defaults: %+v", r)
	}
	if h.Interval != time.Second || h.Timeout != time.Second || h.Failures != 3 ||
		h.Backoff != time.Second || h.MaxBackoff != 30*time.Second || h.ReconnectInterval != 250*time.Millisecond {
		t.Errorf("health defaults: %+v", h)
	}
}

// users: from_backend on a cluster: users[] may then be empty, one cluster
// at most has it, and unknown values are refused with FILE:LINE.
func TestClusterUsersFromBackend(t *testing.T) {
	const f = "shardgate.yaml"
	cluster := func(name, extra string) string {
		return "  - name: " + name + "\n    user: shardgate\n    password: secret\n    primary:\n      address: 127.0.0.1:3306\n" + extra
	}
	cfg, err := Parse([]byte("clusters:\n"+cluster("main", "    users: from_backend\n    users_cache_ttl: 2s\n")), f)
	if err != nil {
		t.Fatal(err)
	}
	if ac := cfg.AccountsCluster(); ac == nil || ac.Name != "main" || ac.UsersCacheTTL != 2*time.Second {
		t.Fatalf("accounts cluster %+v, want main with a 2s cache", ac)
	}
	cfg, err = Parse([]byte(validTail), f)
	if err != nil {
		t.Fatal(err)
	}
	if c := cfg.Clusters[0]; c.Users != UsersConfigured || c.UsersCacheTTL != 10*time.Second || cfg.AccountsCluster() != nil {
		t.Fatalf("defaults: users %q, users_cache_ttl %s", c.Users, c.UsersCacheTTL)
	}
	tests := []struct {
		name, src string
		want      []string
	}{
		{"unknown value", "clusters:\n" + cluster("main", "    users: backend\n"), []string{
			f + `:7: clusters[0].users: must be one of configured, from_backend (got "backend")`,
			f + ":1: users: at least one user is required (or a cluster with users: from_backend)"}},
		{"negative cache", "clusters:\n" + cluster("main", "    users: from_backend\n    users_cache_ttl: -1s\n"), []string{
			f + ":8: clusters[0].users_cache_ttl: must be >= 0 (got -1s)"}},
		{"two clusters", "users: [{name: a, password: x, cluster: a}]\nclusters:\n" + cluster("a", "    users: from_backend\n") + cluster("b", "    users: from_backend\n"), []string{
			f + `:14: clusters[1].users: only one cluster may have users: from_backend (clusters[0] "a" has it): a client's user name must name one account`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src), f)
			got := problemsOf(t, err)
			slices.Sort(got)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("problems:\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
			}
		})
	}
}
