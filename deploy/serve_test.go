package deploy_test

import (
	"bytes"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"

	"github.com/shardgate/shardgate/internal/testenv"
)

// TestKubernetesPodServes runs what a pod of the base runs: the image's
// binary with the container's args, on the ConfigMap's configuration with
// only what a test machine must change (addresses on loopback, the backend
// a real MariaDB and its account). The probes' paths answer 200, the
// ConfigMap's user runs a statement, and SIGTERM stops the proxy within
// the grace period the kubelet gives it after the preStop sleep.
func TestKubernetesPodServes(t *testing.T) {
	img := theImage(t)
	f := render(t, filepath.Join(kubeDir, "base"))
	c := shardgateContainer(t, f.deployment)
	_, data := mountedConfig(t, f, c)
	srv := testenv.Shared(t)

	addrs := map[string]string{"listen": freeAddr(t), "admin.http": freeAddr(t), "admin.sql": freeAddr(t)}
	local, err := onTestMachine(data, addrs, srv)
	if err != nil {
		t.Fatalf("the ConfigMap's configuration: %v", err)
	}
	cfgFile := filepath.Join(t.TempDir(), "shardgate.yaml")
	if err := os.WriteFile(cfgFile, local, 0o600); err != nil {
		t.Fatal(err)
	}
	args := slices.Clone(c.Args)
	args[slices.Index(args, "--config")+1] = cfgFile
	stderr := &syncBuffer{}
	cmd := exec.Command(img.binary, args...)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	done := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
			<-done
		}
	})

	for _, p := range []struct {
		name  string
		probe *corev1.Probe
	}{{"readiness", c.ReadinessProbe}, {"liveness", c.LivenessProbe}} {
		url := "http://" + addrs["admin.http"] + p.probe.HTTPGet.Path
		if err := waitFor200(url, done); err != nil {
			t.Fatalf("%s probe %s: %v\n%s", p.name, url, err, stderr.String())
		}
	}

	// The ConfigMap's user (its hash is of "app-secret") through the
	// ConfigMap's listener.
	db, err := sql.Open("mysql", fmt.Sprintf("app:app-secret@tcp(%s)/", addrs["listen"]))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var one int
	if err := db.QueryRow("SELECT 1").Scan(&one); err != nil {
		t.Errorf("SELECT 1 as the ConfigMap's user app: %v\n%s", err, stderr.String())
	}
	db.Close()

	// What the kubelet does after the preStop sleep: SIGTERM, then SIGKILL
	// once the rest of the grace period has passed.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	grace := time.Duration(*f.deployment.Spec.Template.Spec.TerminationGracePeriodSeconds-c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	select {
	case <-done:
		if waitErr != nil {
			t.Errorf("after SIGTERM shardgate exited with %v\n%s", waitErr, stderr.String())
		}
	case <-time.After(grace):
		t.Errorf("shardgate still runs %v after SIGTERM, when the kubelet would kill it\n%s", grace, stderr.String())
	}
}

// onTestMachine rewrites a configuration for this machine: the listeners
// on the given loopback addresses, the clusters on srv with its account
// and without replicas. Everything else stays as the ConfigMap has it.
func onTestMachine(data []byte, addrs map[string]string, srv *testenv.Server) ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	listeners, _ := doc["listeners"].([]any)
	admin, _ := doc["admin"].(map[string]any)
	clusters, _ := doc["clusters"].([]any)
	if len(listeners) != 1 || admin == nil || len(clusters) == 0 {
		return nil, fmt.Errorf("want one listener, admin and clusters; the test does not know how to run more")
	}
	listeners[0].(map[string]any)["address"] = addrs["listen"]
	admin["http"] = addrs["admin.http"]
	if _, ok := admin["sql"]; ok {
		admin["sql"] = addrs["admin.sql"]
	}
	for _, c := range clusters {
		c := c.(map[string]any)
		c["user"], c["password"] = srv.User, srv.Password
		c["primary"] = map[string]any{"address": srv.Addr}
		delete(c, "replicas")
	}
	return yaml.Marshal(doc)
}

// waitFor200 asks url until it answers 200, the process ends, or a
// minute has passed (a busy machine; the proxy answers in milliseconds).
func waitFor200(url string, exited <-chan struct{}) error {
	deadline := time.Now().Add(time.Minute)
	client := &http.Client{Timeout: 5 * time.Second}
	last := "no answer"
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("shardgate exited")
		default:
		}
		resp, err := client.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, bytes.TrimSpace(body))
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("no 200 within a minute; last answer: %s", last)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// syncBuffer is the proxy's stderr, read while it runs.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
