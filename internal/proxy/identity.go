package proxy

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/frontend"
	"github.com/shardgate/shardgate/internal/mysql/auth"
	"github.com/shardgate/shardgate/internal/router"
)

// The proxy presents itself to clients as its first cluster's primary
// does: the same version string (client libraries look for "MariaDB" and
// the version to decide what to use), a default authentication plugin the
// server has, and the server's collation table for handshake character
// sets. Configured server.version and server.default_auth_plugin win.

// fallbackVersion is advertised until the primary has been reached.
const fallbackVersion = "8.0.36-shardgate"

var builtinCollations = []frontend.Collation{
	{ID: 8, Name: "latin1_swedish_ci", Charset: "latin1"},
	{ID: 33, Name: "utf8mb3_general_ci", Charset: "utf8mb3"},
	{ID: 45, Name: "utf8mb4_general_ci", Charset: "utf8mb4"},
	{ID: 46, Name: "utf8mb4_bin", Charset: "utf8mb4"},
	{ID: 63, Name: "binary", Charset: "binary"},
	{ID: 83, Name: "utf8mb3_bin", Charset: "utf8mb3"},
	{ID: 224, Name: "utf8mb4_unicode_ci", Charset: "utf8mb4"},
}

// learnTimeout bounds one attempt to learn the primary's identity.
const learnTimeout = 5 * time.Second

// startIdentity returns the identity to start with. When the primary could
// not be reached, the proxy starts with a generic one and learns the real
// one in the background once the health checks see the primary up.
func (p *Proxy) startIdentity() frontend.Identity {
	cfg := p.runningConfig()
	if len(cfg.Clusters) == 0 {
		return identityOf(cfg.Server, learnt{})
	}
	ctx, cancel := context.WithTimeout(context.Background(), learnTimeout)
	defer cancel()
	primary := p.firstPrimary()
	l, err := learnBackend(ctx, primary.Pool)
	if err != nil {
		p.log.Warn("could not reach the primary at start; advertising a generic version and mysql_native_password until it is reachable",
			"backend", primary.Addr(), "err", err,
			"hint", "set server.version and server.default_auth_plugin to fix what clients see")
		p.learnPending = true
		return identityOf(cfg.Server, learnt{})
	}
	router.SetServerVersion(l.version)
	return identityOf(cfg.Server, l)
}

// firstPrimary is the first cluster's configured primary, whose identity
// the proxy presents.
func (p *Proxy) firstPrimary() *backend.Server {
	return p.Cluster(p.runningConfig().Clusters[0].Name).Servers()[0]
}

// learnt is what the primary said of itself; zero values when unknown.
type learnt struct {
	version   string
	colls     []frontend.Collation
	maxPacket int // @@global.max_allowed_packet
}

// identityOf combines what the primary said with the configuration.
func identityOf(sc config.Server, l learnt) frontend.Identity {
	id := frontend.Identity{Version: sc.Version, AuthPlugin: sc.DefaultAuthPlugin, MaxPacket: sc.MaxAllowedPacket}
	if id.Version == "" {
		id.Version = l.version
		if id.Version == "" {
			id.Version = fallbackVersion
		}
	}
	if id.AuthPlugin == "" {
		id.AuthPlugin = authPluginOf(l.version)
	}
	if id.MaxPacket == 0 {
		// Unknown: the most a server accepts; the backend refuses more.
		id.MaxPacket = l.maxPacket
		if id.MaxPacket == 0 {
			id.MaxPacket = fallbackMaxPacket
		}
	}
	colls := l.colls
	if colls == nil {
		colls = builtinCollations
	}
	id.Collations = frontend.NewCollations(colls)
	return id
}

// fallbackMaxPacket bounds client packets while the primary's
// max_allowed_packet is unknown: the largest a server allows.
const fallbackMaxPacket = 1 << 30

// authPluginOf is the default authentication plugin of a server with this
// version string: caching_sha2_password from MySQL 8.0 on;
// mysql_native_password for MariaDB, which has no caching_sha2_password
// (clients that check the plugin name refuse one MariaDB would not
// offer), for older MySQL, and while the version is unknown, since every
// client speaks it.
func authPluginOf(version string) string {
	if version == "" || strings.Contains(strings.ToLower(version), "mariadb") {
		return auth.PluginNative
	}
	major, _, _ := strings.Cut(version, ".")
	if n, err := strconv.Atoi(major); err == nil && n >= 8 {
		return auth.PluginCachingSHA2
	}
	return auth.PluginNative
}

// learnBackend asks a server for its version string, collation table and
// max_allowed_packet.
func learnBackend(ctx context.Context, pool *backend.Pool) (learnt, error) {
	rows, version, err := pool.QueryVersion(ctx,
		"SELECT ID, COLLATION_NAME, CHARACTER_SET_NAME, @@global.max_allowed_packet FROM information_schema.COLLATIONS WHERE ID IS NOT NULL AND ID < 256")
	if err != nil {
		return learnt{}, fmt.Errorf("learn the server's version, collations and max_allowed_packet: %w", err)
	}
	l := learnt{version: version, colls: make([]frontend.Collation, 0, len(rows))}
	for _, r := range rows {
		id, err := strconv.Atoi(r[0])
		if err != nil || id <= 0 || id > 255 {
			continue
		}
		l.colls = append(l.colls, frontend.Collation{ID: byte(id), Name: r[1], Charset: r[2]})
		l.maxPacket, _ = strconv.Atoi(r[3])
	}
	return l, nil
}

// startLearning starts learnLater when the start could not learn the
// primary's identity; the listeners must exist.
func (p *Proxy) startLearning() {
	if !p.learnPending {
		return
	}
	cfg := p.runningConfig()
	ctx, cancel := context.WithCancel(context.Background())
	p.learnCancel, p.learnDone = cancel, make(chan struct{})
	go p.learnLater(ctx, p.firstPrimary(), cfg.Clusters[0].Health.Interval, cfg.Server)
}

// learnLater waits until the health checks see the first cluster's
// primary up, learns its identity and gives it to the listeners, for the
// logins that follow. It tries again at the next check if that fails.
func (p *Proxy) learnLater(ctx context.Context, primary *backend.Server, every time.Duration, sc config.Server) {
	defer close(p.learnDone)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !primary.Health().Up {
			continue
		}
		actx, cancel := context.WithTimeout(ctx, learnTimeout)
		l, err := learnBackend(actx, primary.Pool)
		cancel()
		if err != nil {
			p.log.Debug("primary up, but learning its version failed; trying again", "err", err)
			continue
		}
		router.SetServerVersion(l.version)
		id := identityOf(sc, l)
		for _, srv := range p.servers {
			srv.SetIdentity(id)
		}
		p.log.Info("primary reachable: advertising its version and authentication plugin",
			"backend", primary.Addr(), "version", id.Version, "auth_plugin", id.AuthPlugin)
		return
	}
}

// stopLearning ends learnLater, if it runs, and waits for it.
func (p *Proxy) stopLearning() {
	if p.learnCancel != nil {
		p.learnCancel()
		<-p.learnDone
	}
}
