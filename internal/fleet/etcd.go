// Package fleet keeps what the shardgate instances of one fleet share in
// etcd: the configuration document, its revisions and the registry of
// running instances. It knows nothing of how a configuration is applied;
// the caller hands it a function that applies one revision.
//
// Layout under a prefix P (etcd://HOST:PORT/P):
//
//	P/config         the YAML document a configuration file holds
//	P/config-meta    who pushed each revision (JSON), written in the same
//	                 transaction as P/config, so its revisions match
//	P/proxies/ID     one running instance (JSON), under its lease
//
// A configuration revision is etcd's mod revision of P/config: it orders
// the fleet's revisions, `config history` walks them and every instance
// reports the one it applied.
package fleet

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Scheme is the configuration source's URL scheme.
const Scheme = "etcd://"

// IsURL says whether a --config value names etcd rather than a file.
func IsURL(s string) bool { return strings.HasPrefix(s, Scheme) }

// Options say how to reach etcd and where the fleet's keys are.
type Options struct {
	Endpoints []string // host:port, at least one
	Prefix    string   // without a trailing slash, e.g. "/shardgate/prod"
	// CACert, Cert and Key are PEM files: CACert alone turns TLS on and
	// verifies etcd's certificate; Cert and Key add a client certificate.
	CACert, Cert, Key string
	// Username and Password use etcd's authentication when Username is set.
	Username, Password string
	// DialTimeout bounds each attempt to reach an endpoint.
	DialTimeout time.Duration
}

// ParseURL reads etcd://HOST:PORT[,HOST:PORT...]/PREFIX into o's
// endpoints and prefix.
func ParseURL(s string) (Options, error) {
	if !IsURL(s) {
		return Options{}, fmt.Errorf("%q is not an etcd URL: want %sHOST:PORT[,HOST:PORT...]/PREFIX", s, Scheme)
	}
	rest := strings.TrimPrefix(s, Scheme)
	hosts, prefix, ok := strings.Cut(rest, "/")
	prefix = strings.TrimRight(prefix, "/")
	if !ok || prefix == "" {
		return Options{}, fmt.Errorf("%q names no key prefix: want %sHOST:PORT/PREFIX, e.g. %s127.0.0.1:2379/shardgate", s, Scheme, Scheme)
	}
	if strings.ContainsAny(prefix, "?#") {
		return Options{}, fmt.Errorf("%q: the prefix may not hold '?' or '#'; etcd's TLS and authentication are set by flags", s)
	}
	var o Options
	for _, h := range strings.Split(hosts, ",") {
		if h == "" || !strings.Contains(h, ":") {
			return Options{}, fmt.Errorf("%q: endpoint %q is not HOST:PORT", s, h)
		}
		if _, err := url.Parse("http://" + h); err != nil {
			return Options{}, fmt.Errorf("%q: endpoint %q: %w", s, h, err)
		}
		o.Endpoints = append(o.Endpoints, h)
	}
	o.Prefix = "/" + strings.TrimLeft(prefix, "/")
	return o, nil
}

// URL is the source's name in logs and messages.
func (o Options) URL() string {
	return Scheme + strings.Join(o.Endpoints, ",") + o.Prefix
}

func (o Options) configKey() string  { return o.Prefix + "/config" }
func (o Options) metaKey() string    { return o.Prefix + "/config-meta" }
func (o Options) proxiesKey() string { return o.Prefix + "/proxies/" }

// client opens an etcd client. It does not wait for etcd: requests fail
// (after their own deadlines) while no endpoint answers, and the client
// keeps trying to reach one.
func (o Options) client() (*clientv3.Client, error) {
	if len(o.Endpoints) == 0 {
		return nil, errors.New("no etcd endpoint")
	}
	cfg := clientv3.Config{
		Endpoints:            o.Endpoints,
		DialTimeout:          o.DialTimeout,
		DialKeepAliveTime:    5 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		Username:             o.Username,
		Password:             o.Password,
		// Errors reach shardgate's own log through the callers; the
		// client's retries would only repeat them there.
		Logger: zap.NewNop(),
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	tc, err := o.tlsConfig()
	if err != nil {
		return nil, err
	}
	cfg.TLS = tc
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcd %s: %w", o.URL(), err)
	}
	return cli, nil
}

func (o Options) tlsConfig() (*tls.Config, error) {
	if o.CACert == "" && o.Cert == "" {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CACert != "" {
		pem, err := os.ReadFile(o.CACert)
		if err != nil {
			return nil, fmt.Errorf("etcd CA certificate: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("etcd CA certificate %s: no PEM certificate in it", o.CACert)
		}
		tc.RootCAs = pool
	}
	if o.Cert != "" || o.Key != "" {
		cert, err := tls.LoadX509KeyPair(o.Cert, o.Key)
		if err != nil {
			return nil, fmt.Errorf("etcd client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
