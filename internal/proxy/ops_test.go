package proxy_test

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/testenv"
)

// adminGet returns the status and body of an admin endpoint.
func adminGet(t *testing.T, p *proxy.Proxy, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + p.AdminAddr() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, string(b)
}

// waitReadyz polls /readyz until it answers status, and returns the body.
func waitReadyz(t *testing.T, p *proxy.Proxy, status int, what string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body := adminGet(t, p, "/readyz")
		if code == status {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: /readyz still %d, want %d:\n%s", what, code, status, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// /healthz says the process is alive; /readyz follows whether the cluster
// has a usable writer: not when it turns read-only or is shut down, again
// once it is writable or back.
func TestHealthzReadyz(t *testing.T) {
	srv := testenv.Start(t, testenv.Options{})
	p := startProxy(t, proxyConfig(t, srv, fastHealth))

	if code, body := adminGet(t, p, "/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz = %d %q", code, body)
	}
	if body := waitReadyz(t, p, 200, "live server"); body != "ready\n" {
		t.Fatalf("/readyz body %q", body)
	}

	srv.Exec(t, "SET GLOBAL read_only = 1")
	body := waitReadyz(t, p, 503, "server read_only")
	if !strings.Contains(body, "cluster main: ") || !strings.Contains(body, srv.Addr+" read-only") {
		t.Fatalf("/readyz does not name the read-only cluster and server:\n%s", body)
	}
	srv.Exec(t, "SET GLOBAL read_only = 0")
	waitReadyz(t, p, 200, "server writable again")

	if err := srv.Halt(); err != nil {
		t.Fatal(err)
	}
	body = waitReadyz(t, p, 503, "server halted")
	if !strings.Contains(body, "cluster main: ") || !strings.Contains(body, srv.Addr) {
		t.Fatalf("/readyz does not name the cluster and its server:\n%s", body)
	}
	if code, _ := adminGet(t, p, "/healthz"); code != 200 {
		t.Fatalf("/healthz = %d while the backend is down; liveness must not follow the backends", code)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	waitReadyz(t, p, 200, "server restarted")
}

// closedAddr is a local address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// The startup summary names the version, the listeners and admin address,
// and every server with its role and state.
func TestStartupSummary(t *testing.T) {
	srv := testenv.Shared(t)
	down, drained := closedAddr(t), closedAddr(t)
	cfg := proxyConfig(t, srv, "    replicas:\n      - address: "+down+"\n        weight: 3\n"+
		"      - address: "+drained+"\n        state: offline\n"+fastHealth)
	var logBuf logCapture
	log := slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	p, err := proxy.New(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.Start()
	p.LogStartup("v9.9.9-test")

	lines := strings.Split(logBuf.String(), "\n")
	find := func(parts ...string) {
		t.Helper()
		for _, l := range lines {
			ok := true
			for _, part := range parts {
				ok = ok && strings.Contains(l, part)
			}
			if ok {
				return
			}
		}
		t.Errorf("no log line with all of %q in:\n%s", parts, logBuf.String())
	}
	find(`msg="shardgate started"`, "version=v9.9.9-test", "listeners=1", "admin="+p.AdminAddr(), "clusters=1")
	find(`msg=listener`, "addr="+p.Addrs()[0], "tls=optional", "certificate=self-signed")
	find(`msg=cluster`, "cluster=main", "writer="+srv.Addr, "servers=3")
	find(`msg="backend server"`, "role=primary", "addr="+srv.Addr, "state=up", "read_only=false", "writer=true", "offline=false")
	find(`msg="backend server"`, "role=replica", "addr="+down, `state="down: `, "weight=3", "writer=false")
	find(`msg="backend server"`, "role=replica", "addr="+drained, `state="offline`, "offline=true")
}
