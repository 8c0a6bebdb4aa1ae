package proxy

import (
	"testing"

	"github.com/shardgate/shardgate/internal/config"
)

// running must keep exactly the keys config tags reload:"restart": what
// differs from the file afterwards needs a restart, what differs from the
// old configuration was applied.
func TestRunningKeepsRestartKeys(t *testing.T) {
	parse := func(yaml string) *config.Config {
		t.Helper()
		cfg, err := config.Parse([]byte(yaml), "r.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	old := parse(`
users:
  - {name: app, password: a, cluster: main}
clusters:
  - name: main
    user: sg
    primary: {address: 10.0.0.1:3306}
    replicas:
      - {address: 10.0.0.2:3306}
  - name: gone
    user: sg
    primary: {address: 10.0.1.1:3306}
`)
	next := parse(`
listeners:
  - {address: 127.0.0.1:7033, max_connections: 5, reserved_admin_connections: 3, tls: {mode: off}}
admin: {http: 127.0.0.1:9090}
server:
  version: 9.9.9
  default_auth_plugin: mysql_native_password
  caching_sha2_full_auth: always
  shutdown_timeout: 3s
  client_idle_timeout: 1m
  handshake_timeout: 2s
  max_prepared_statements_per_session: 10
  gomaxprocs: 3
  busy_poll: 0s
  auth_failure_delay: {threshold: 5, min_delay: 2s, max_delay: 1m}
log: {level: debug, format: json}
users:
  - {name: app, password: b, cluster: main, read_from: primary, admin: true}
  - {name: new, password: c, cluster: added}
clusters:
  - name: main
    user: other
    password: pw
    tls: {mode: required}
    pool: {max_open: 3, prepared_statements_per_conn: 7, connect_timeout: 2s}
    primary: {address: 10.0.0.9:3306, state: offline}
    replicas:
      - {address: 10.0.0.3:3306, weight: 4}
    routing: {read_from: primary, max_replica_lag: 3s}
    health: {interval: 2s, failures: 5, reconnect_interval: 100ms}
  - name: added
    user: sg
    primary: {address: 10.0.2.1:3306}
`)
	run := running(old, next)
	if len(config.Diff(run, next)) == 0 {
		t.Fatal("running took every key of the file")
	}
	for _, c := range config.Diff(run, next) {
		if !c.Restart {
			t.Errorf("running did not take %s (%s -> %s), which applies live", c.Key, c.Old, c.New)
		}
	}
	for _, c := range config.Diff(old, run) {
		if c.Restart {
			t.Errorf("running took %s (%s -> %s), which needs a restart", c.Key, c.Old, c.New)
		}
	}
}
