package proxy_test

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/proxy"
)

// Until routing by schema lands, a configuration with schemas passes
// check-config but is refused by serve: its rows would go astray.
func TestNewRefusesSchemas(t *testing.T) {
	cfg, err := config.Parse([]byte(`users: [{name: app, password_hash: "*6C7A370C07660BC788681B3238D93E08BD74303C"}]
clusters:
  - {name: s0, user: u, primary: {address: "127.0.0.1:1"}}
  - {name: s1, user: u, primary: {address: "127.0.0.1:2"}}
schemas:
  - name: shop
    default_cluster: s0
    tables: [{name: t, shard_key: id, rule: hash, shards: [s0, s1]}]
`), "sharded.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil {
		p.Close()
		t.Fatal("proxy.New accepted a configuration with schemas")
	}
	for _, want := range []string{"sharded.yaml", "shop", "not wired", "check-config"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}
