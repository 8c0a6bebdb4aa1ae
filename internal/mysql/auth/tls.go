package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"strings"
	"time"
)

// selfSignedCN is the subject of auto-generated certificates, chosen so that
// an operator who sees it in a client knows it was not provisioned.
const selfSignedCN = "shardgate auto-generated"

// selfSignedValidity mirrors MySQL 8's auto-generated certificates, which
// are valid for ten years.
const selfSignedValidity = 10

// SelfSignedTLS creates a self-signed ECDSA P-256 certificate for the
// server, as MySQL 8 does at start-up when no certificate is configured, so
// that clients can always encrypt (and caching_sha2_password full
// authentication can send the password over TLS). Each host becomes a
// subject alternative name: an IP address if it parses as one (brackets
// around IPv6 are accepted), otherwise a DNS name; empty hosts are
// skipped. The validity starts an hour in the past to tolerate clock skew
// between server and clients.
//
// The certificate is marked as a CA so that clients can pin it as their
// trust root (e.g. --ssl-ca / VERIFY_CA), which many TLS stacks require.
func SelfSignedTLS(hosts ...string) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("auth: generating TLS key: %w", err)
	}
	notBefore := time.Now().Add(-time.Hour)
	tmpl := &x509.Certificate{
		// SerialNumber left nil: x509 generates a random positive one.
		Subject:               pkix.Name{CommonName: selfSignedCN},
		NotBefore:             notBefore,
		NotAfter:              notBefore.AddDate(selfSignedValidity, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	addSANs(tmpl, hosts)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("auth: creating self-signed certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("auth: parsing self-signed certificate: %w", err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// addSANs sorts hosts into IP and DNS subject alternative names.
func addSANs(tmpl *x509.Certificate, hosts []string) {
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			continue
		}
		tmpl.DNSNames = append(tmpl.DNSNames, h)
	}
}

// LoadCertificate loads a PEM certificate chain and its private key.
func LoadCertificate(certFile, keyFile string) (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("auth: loading TLS certificate %s / key %s: %w", certFile, keyFile, err)
	}
	return &cert, nil
}
