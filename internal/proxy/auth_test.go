package proxy_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/testenv"
)

// TestClientAuthentication logs in with go-sql-driver through every
// authentication path the proxy offers.
func TestClientAuthentication(t *testing.T) {
	srv := testenv.Shared(t)
	certFile, keyFile, roots := writeTestCert(t)
	if err := mysql.RegisterTLSConfig("shardgate-test", &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	nativeUser := "" // "legacy": MySQL native hash of "password"
	cases := []struct {
		name, plugin, fullAuth, tlsParam, user, pass string
	}{
		{"sha2 full auth via RSA", "caching_sha2_password", "always", "", appUser, appPass},
		{"sha2 full auth over TLS (self-signed, skip-verify)", "caching_sha2_password", "always", "skip-verify", appUser, appPass},
		{"sha2 full auth over TLS (verified certificate)", "caching_sha2_password", "always", "shardgate-test", appUser, appPass},
		{"tls=true against a certificate from a trusted CA", "caching_sha2_password", "always", "true", appUser, appPass},
		{"sha2 fast auth", "caching_sha2_password", "never", "", appUser, appPass},
		{"sha2 first login then fast", "caching_sha2_password", "first_login", "", appUser, appPass},
		{"native plugin", "mysql_native_password", "first_login", "", appUser, appPass},
		{"native stored hash under sha2 default (RSA)", "caching_sha2_password", "always", "", "legacy", "password"},
		{"native stored hash under sha2 default (TLS)", "caching_sha2_password", "always", "skip-verify", "legacy", "password"},
		{"native stored hash under native default", "mysql_native_password", "first_login", "", "legacy", "password"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := proxyConfig(t, srv, "")
			cfg.Server.DefaultAuthPlugin = tc.plugin
			cfg.Server.CachingSHA2FullAuth = tc.fullAuth
			switch tc.tlsParam {
			case "shardgate-test":
				cfg.Listeners[0].TLS.CertFile, cfg.Listeners[0].TLS.KeyFile = certFile, keyFile
			case "true":
				cfg.Listeners[0].TLS.CertFile, cfg.Listeners[0].TLS.KeyFile = systemCA.certFile, systemCA.keyFile
			}
			addLegacyUser(t, cfg, nativeUser)
			p := startProxy(t, cfg)
			params := ""
			if tc.tlsParam != "" {
				params = "tls=" + tc.tlsParam
			}
			for i := 0; i < 2; i++ { // the second login may take the fast path
				db := openDB(t, proxyDSN(p, tc.user, tc.pass, "", params))
				if got := queryString(t, db, "SELECT 'ok'"); got != "ok" {
					t.Fatalf("got %q", got)
				}
				db.Close()
			}
			db := openDB(t, proxyDSN(p, tc.user, "wrong", "", params))
			err := db.Ping()
			me, ok := err.(*mysql.MySQLError)
			if !ok || me.Number != 1045 || string(me.SQLState[:]) != "28000" {
				t.Fatalf("wrong password: %v", err)
			}
		})
	}
	t.Run("unknown user", func(t *testing.T) {
		p := startProxy(t, proxyConfig(t, srv, ""))
		err := openDB(t, proxyDSN(p, "nobody", "x", "", "")).Ping()
		if mysqlErrCode(err) != 1045 {
			t.Fatalf("unknown user: %v", err)
		}
	})
	t.Run("TLS required", func(t *testing.T) {
		cfg := proxyConfig(t, srv, "")
		cfg.Listeners[0].TLS.Mode = "required"
		p := startProxy(t, cfg)
		if err := openDB(t, proxyDSN(p, appUser, appPass, "", "")).Ping(); mysqlErrCode(err) != 3159 {
			t.Fatalf("plain connection to a TLS-required listener: %v", err)
		}
		if err := openDB(t, proxyDSN(p, appUser, appPass, "", "tls=skip-verify")).Ping(); err != nil {
			t.Fatalf("TLS connection: %v", err)
		}
	})
	t.Run("unknown database at login", func(t *testing.T) {
		p := startProxy(t, proxyConfig(t, srv, ""))
		if err := openDB(t, proxyDSN(p, appUser, appPass, "no_such_db", "")).Ping(); mysqlErrCode(err) != 1049 {
			t.Fatalf("login with unknown database: %v", err)
		}
	})
}

// addLegacyUser adds a user stored in MySQL's native form only.
func addLegacyUser(t *testing.T, cfg *config.Config, _ string) {
	t.Helper()
	cfg.Users = append(cfg.Users, config.User{Name: "legacy", PasswordHash: "*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19", Cluster: cfg.Clusters[0].Name})
}

// TestBackendTLS connects the proxy to a TLS-enabled server in each mode.
func TestBackendTLS(t *testing.T) {
	srv := testenv.Start(t, testenv.Options{TLS: true})
	srv.Exec(t, "CREATE USER IF NOT EXISTS 'tlsonly'@'%' IDENTIFIED BY 'tls-pw' REQUIRE SSL", "GRANT ALL ON *.* TO 'tlsonly'@'%'")
	for _, mode := range []string{"preferred", "required", "verify"} {
		t.Run(mode, func(t *testing.T) {
			cfg := proxyConfig(t, srv, "")
			cfg.Clusters[0].User, cfg.Clusters[0].Password = "tlsonly", "tls-pw"
			cfg.Clusters[0].TLS.Mode = mode
			cfg.Clusters[0].TLS.CAFile = srv.CAFile
			cfg.Clusters[0].TLS.ServerName = "127.0.0.1"
			p := startProxy(t, cfg)
			db := openDB(t, proxyDSN(p, appUser, appPass, "", ""))
			if got := queryString(t, db, "SELECT VARIABLE_VALUE <> '' FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'Ssl_cipher'"); got != "1" {
				t.Fatalf("backend connection is not encrypted (Ssl_cipher empty)")
			}
		})
	}
	t.Run("off against REQUIRE SSL account", func(t *testing.T) {
		cfg := proxyConfig(t, srv, "")
		cfg.Clusters[0].User, cfg.Clusters[0].Password = "tlsonly", "tls-pw"
		p := startProxy(t, cfg)
		_, err := openDB(t, proxyDSN(p, appUser, appPass, "", "")).Exec("DO 1")
		if err == nil {
			t.Fatal("plain backend login with a REQUIRE SSL account succeeded")
		}
		if me, ok := err.(*mysql.MySQLError); !ok || me.Number != 9001 || !contains(me.Message, "1045") {
			t.Fatalf("want error 9001 naming the backend's 1045, got %v", err)
		}
	})
}

type testCA struct{ caFile, certFile, keyFile string }

// writeCA writes a CA certificate and a server certificate for 127.0.0.1
// signed by it.
func writeCA(dir string) testCA {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "shardgate test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		panic(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		panic(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	out := testCA{filepath.Join(dir, "ca.pem"), filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem")}
	for f, b := range map[string]*pem.Block{
		out.caFile:   {Type: "CERTIFICATE", Bytes: caDER},
		out.certFile: {Type: "CERTIFICATE", Bytes: der},
		out.keyFile:  {Type: "EC PRIVATE KEY", Bytes: kder},
	} {
		if err := os.WriteFile(f, pem.EncodeToMemory(b), 0o600); err != nil {
			panic(err)
		}
	}
	return out
}

// writeTestCert writes a self-signed certificate for 127.0.0.1 and returns
// its files and a pool trusting it.
func writeTestCert(t *testing.T) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "shardgate test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	roots = x509.NewCertPool()
	roots.AddCert(cert)
	return certFile, keyFile, roots
}
