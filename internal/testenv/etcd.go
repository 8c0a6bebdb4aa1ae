package testenv

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Etcd is a real etcd server (Debian's etcd-server package) started for a
// test: one member, its own data directory and free client and peer ports
// on 127.0.0.1, no TLS, no authentication.
type Etcd struct {
	Endpoint string // "127.0.0.1:<client port>"
	Log      string // etcd's stderr
	// CAFile is the CA certificate (PEM) of a TLS etcd (StartEtcdTLS).
	CAFile string
	tls    *tlsFiles

	bin      string
	dir      string
	peerPort int

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	removed bool
}

// StartEtcd starts etcd for the test and registers its removal with
// tb.Cleanup. A missing etcd binary fails the test: run
// scripts/install-deps.sh (package etcd-server), or set SHARDGATE_ETCD.
func StartEtcd(tb testing.TB) *Etcd {
	tb.Helper()
	return startEtcd(tb, false)
}

// StartEtcdTLS is StartEtcd with clients served over TLS only, with a
// server certificate for 127.0.0.1 signed by a CA of its own (CAFile).
func StartEtcdTLS(tb testing.TB) *Etcd {
	tb.Helper()
	return startEtcd(tb, true)
}

func startEtcd(tb testing.TB, withTLS bool) *Etcd {
	tb.Helper()
	e, err := startEtcdE(withTLS)
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	tb.Cleanup(func() {
		if err := e.Stop(); err != nil {
			tb.Errorf("testenv: stop etcd: %v", err)
		}
	})
	return e
}

// StartEtcdE starts etcd; the caller must call Stop.
func StartEtcdE() (*Etcd, error) { return startEtcdE(false) }

func startEtcdE(withTLS bool) (*Etcd, error) {
	bin, err := binaryFromEnv("SHARDGATE_ETCD", "etcd")
	if err != nil {
		return nil, fmt.Errorf("%w: install Debian's etcd-server (scripts/install-deps.sh)", err)
	}
	base, err := baseDir()
	if err != nil {
		return nil, err
	}
	sweepStale(base)
	dir, err := os.MkdirTemp(base, instancePrefix)
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	e := &Etcd{bin: bin, dir: dir, Log: filepath.Join(dir, "etcd.log")}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("testenv: %w", err)
	}
	if withTLS {
		f, err := generateTLS(dir)
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("testenv: etcd certificates: %w", err)
		}
		e.tls, e.CAFile = f, f.caFile
	}
	var lastErr error
	for attempt := 0; attempt < startAttempts; attempt++ {
		client, err1 := freePort()
		peer, err2 := freePort()
		if err := errors.Join(err1, err2); err != nil {
			_ = e.Stop()
			return nil, err
		}
		e.Endpoint = net.JoinHostPort("127.0.0.1", strconv.Itoa(client))
		e.peerPort = peer
		if lastErr = e.launch(); lastErr == nil {
			return e, nil
		}
		if !errors.Is(lastErr, errPortInUse) {
			break
		}
	}
	_ = e.Stop()
	return nil, lastErr
}

func (e *Etcd) args() []string {
	client := e.clientURL()
	peer := "http://127.0.0.1:" + strconv.Itoa(e.peerPort)
	var tlsArgs []string
	if e.tls != nil {
		tlsArgs = []string{"--cert-file=" + e.tls.certFile, "--key-file=" + e.tls.keyFile}
	}
	return append(tlsArgs,
		"--name=test",
		"--data-dir="+filepath.Join(e.dir, "data"),
		"--listen-client-urls="+client,
		"--advertise-client-urls="+client,
		"--listen-peer-urls="+peer,
		"--initial-advertise-peer-urls="+peer,
		"--initial-cluster=test="+peer,
		// A test's etcd is alone on a busy machine: small fsync and
		// election delays must not make it step down.
		"--heartbeat-interval=250",
		"--election-timeout=2500",
		"--logger=zap",
	)
}

func (e *Etcd) clientURL() string {
	if e.tls != nil {
		return "https://" + e.Endpoint
	}
	return "http://" + e.Endpoint
}

// launch starts etcd and waits until it answers /health.
func (e *Etcd) launch() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.removed {
		return errors.New("testenv: etcd has been removed")
	}
	if e.runningLocked() {
		return errors.New("testenv: etcd is already running")
	}
	cmd, done, logStart, err := startLogged(e.bin, e.args(), e.dir, e.Log)
	if err != nil {
		return err
	}
	e.cmd, e.done = cmd, done
	if err := e.waitHealthy(done); err != nil {
		e.killLocked()
		tail := fileTail(e.Log, logStart, 30)
		if strings.Contains(tail, "address already in use") {
			return fmt.Errorf("%w: %v", errPortInUse, err)
		}
		return fmt.Errorf("testenv: etcd on %s did not become ready: %v\n--- tail of %s ---\n%s", e.Endpoint, err, e.Log, tail)
	}
	return nil
}

// waitHealthy polls etcd's /health until it reports a leader.
func (e *Etcd) waitHealthy(done chan struct{}) error {
	deadline := time.Now().Add(readyTimeout)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return errors.New("etcd exited")
		default:
		}
		if lastErr = e.health(); lastErr == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return lastErr
}

func (e *Etcd) health() error {
	c := http.Client{Timeout: 2 * time.Second}
	if e.tls != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(e.tls.caPEM)
		c.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	}
	resp, err := c.Get(e.clientURL() + "/health")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var health struct {
		Health string `json:"health"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&health); err != nil {
		return fmt.Errorf("etcd /health: %w", err)
	}
	if health.Health != "true" {
		return fmt.Errorf("etcd /health: %q", health.Health)
	}
	return nil
}

func fileTail(name string, from int64, lines int) string {
	b, err := os.ReadFile(name)
	if err != nil || from > int64(len(b)) {
		return ""
	}
	ls := strings.Split(strings.TrimRight(string(b[from:]), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

func (e *Etcd) runningLocked() bool {
	if e.cmd == nil || e.done == nil {
		return false
	}
	select {
	case <-e.done:
		return false
	default:
		return true
	}
}

func (e *Etcd) killLocked() {
	if !e.runningLocked() {
		return
	}
	pid := e.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	done := e.done
	e.mu.Unlock()
	<-done
	e.mu.Lock()
}

// Kill SIGKILLs etcd, keeping its data for Restart.
func (e *Etcd) Kill() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.killLocked()
}

// Restart starts a killed etcd again on the same ports and data.
func (e *Etcd) Restart() error {
	e.Kill()
	return e.launch()
}

// Stop kills etcd and removes its data directory; safe to call twice.
func (e *Etcd) Stop() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.killLocked()
	if e.removed {
		return nil
	}
	e.removed = true
	return os.RemoveAll(e.dir)
}
