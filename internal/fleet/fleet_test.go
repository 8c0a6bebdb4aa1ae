package fleet_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/shardgate/shardgate/internal/fleet"
	"github.com/shardgate/shardgate/internal/testenv"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func openStore(t *testing.T, e *testenv.Etcd, prefix string) *fleet.Store {
	t.Helper()
	o, err := fleet.ParseURL("etcd://" + e.Endpoint + "/" + prefix)
	if err != nil {
		t.Fatal(err)
	}
	s, err := fleet.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestParseURL(t *testing.T) {
	o, err := fleet.ParseURL("etcd://a:2379,b:2379/shardgate/prod/")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.Endpoints, " ") != "a:2379 b:2379" || o.Prefix != "/shardgate/prod" {
		t.Fatalf("got %+v", o)
	}
	if o.URL() != "etcd://a:2379,b:2379/shardgate/prod" {
		t.Fatalf("URL() = %q", o.URL())
	}
	for _, bad := range []string{"etcd://a:2379", "etcd://a:2379/", "etcd://a/x", "etcd://a:1/x?tls=1", "file.yaml", "etcd://,a:1/x"} {
		if _, err := fleet.ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) accepted", bad)
		}
	}
}

func TestStorePushConflictHistory(t *testing.T) {
	e := testenv.StartEtcd(t)
	s := openStore(t, e, "t1")
	ctx := ctxT(t)
	if _, err := s.Get(ctx); !errors.Is(err, fleet.ErrNoConfig) {
		t.Fatalf("empty store: %v", err)
	}
	r1, err := s.Put(ctx, []byte("a: 1\n"), 0, fleet.PushMeta{User: "u1", Source: "one.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	// A push based on "nothing stored" is refused once something is.
	var ce *fleet.ConflictError
	if _, err := s.Put(ctx, []byte("a: 9\n"), 0, fleet.PushMeta{}); !errors.As(err, &ce) || ce.Current != r1 {
		t.Fatalf("stale push: %v", err)
	}
	r2, err := s.Put(ctx, []byte("a: 2\n"), r1, fleet.PushMeta{User: "u2"})
	if err != nil {
		t.Fatal(err)
	}
	// Something else moves the revision counter between the two pushes.
	r3, err := s.Put(ctx, []byte("a: 3\n"), r2, fleet.PushMeta{RollbackOf: r1})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := s.Get(ctx)
	if err != nil || doc.Revision != r3 || string(doc.Data) != "a: 3\n" {
		t.Fatalf("Get = %+v, %v", doc, err)
	}
	old, err := s.At(ctx, r1)
	if err != nil || string(old.Data) != "a: 1\n" {
		t.Fatalf("At(%d) = %+v, %v", r1, old, err)
	}
	if _, err := s.At(ctx, r3+100); err == nil {
		t.Fatal("At a future revision succeeded")
	}
	hist, truncated, err := s.History(ctx, 10)
	if err != nil || truncated {
		t.Fatalf("History: %v truncated=%v", err, truncated)
	}
	var revs []int64
	for _, h := range hist {
		revs = append(revs, h.Revision)
	}
	if len(hist) != 3 || revs[0] != r3 || revs[1] != r2 || revs[2] != r1 {
		t.Fatalf("history revisions %v, want %d %d %d", revs, r3, r2, r1)
	}
	if hist[2].Meta == nil || hist[2].Meta.User != "u1" || hist[2].Meta.Source != "one.yaml" || hist[0].Meta.RollbackOf != r1 {
		t.Fatalf("history meta: %+v %+v", hist[2].Meta, hist[0].Meta)
	}
	if hist[1].Checksum != fleet.Checksum([]byte("a: 2\n")) {
		t.Fatalf("checksum %s", hist[1].Checksum)
	}
	if hist, _, _ := s.History(ctx, 2); len(hist) != 2 {
		t.Fatalf("limit 2 gave %d entries", len(hist))
	}
}

// recorder is an ApplyFunc that rejects documents starting with "bad".
type recorder struct {
	mu      sync.Mutex
	applied []string
}

func (r *recorder) apply(d fleet.Document) error {
	if strings.HasPrefix(string(d.Data), "bad") {
		return errors.New("rejected by the test")
	}
	r.mu.Lock()
	r.applied = append(r.applied, string(d.Data))
	r.mu.Unlock()
	return nil
}

func (r *recorder) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.applied) == 0 {
		return ""
	}
	return r.applied[len(r.applied)-1]
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestFollowerAppliesRejectsAndStartsFromCache(t *testing.T) {
	e := testenv.StartEtcd(t)
	s := openStore(t, e, "t2")
	ctx := ctxT(t)
	r1, err := s.Put(ctx, []byte("v1"), 0, fleet.PushMeta{})
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(t.TempDir(), "cache", "config.yaml")
	var rec recorder
	f := fleet.NewFollower(s, cache, quiet())
	f.PollInterval = 200 * time.Millisecond
	if err := f.Start(ctx, 5*time.Second, rec.apply); err != nil {
		t.Fatal(err)
	}
	if st := f.State(); st.Applied != r1 || st.FromCache || rec.last() != "v1" {
		t.Fatalf("after start: %+v, applied %q", st, rec.last())
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { f.Run(rctx, rec.apply); close(done) }()
	defer func() { stop(); <-done }()

	r2, _ := s.Put(ctx, []byte("v2"), r1, fleet.PushMeta{})
	waitFor(t, "v2 applied", func() bool { return f.State().Applied == r2 })
	r3, _ := s.Put(ctx, []byte("bad v3"), r2, fleet.PushMeta{})
	waitFor(t, "v3 rejected", func() bool { return f.State().Rejected == r3 })
	if st := f.State(); st.Applied != r2 || !strings.Contains(st.RejectedError, "rejected by the test") {
		t.Fatalf("after a rejected revision: %+v", st)
	}
	b, err := os.ReadFile(cache)
	if err != nil || !strings.HasSuffix(string(b), "\nv2") {
		t.Fatalf("cache holds %q (%v), want the last good revision", b, err)
	}

	// etcd away: the follower keeps v2, and a new instance starts from the
	// cache. Back with a new revision: both converge on it.
	e.Kill()
	waitFor(t, "etcd seen unreachable", func() bool { return !f.State().Reachable })
	var rec2 recorder
	f2 := fleet.NewFollower(s, cache, quiet())
	f2.PollInterval = 200 * time.Millisecond
	if err := f2.Start(ctx, time.Second, rec2.apply); err != nil {
		t.Fatal(err)
	}
	if st := f2.State(); !st.FromCache || st.Applied != r2 || rec2.last() != "v2" {
		t.Fatalf("start while etcd is down: %+v, applied %q", st, rec2.last())
	}
	go f2.Run(rctx, rec2.apply)
	if err := e.Restart(); err != nil {
		t.Fatal(err)
	}
	r4, err := s.Put(ctx, []byte("v4"), r3, fleet.PushMeta{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both on v4", func() bool { return f.State().Applied == r4 && f2.State().Applied == r4 })
	if st := f.State(); st.Rejected != 0 || !st.Reachable {
		t.Fatalf("after recovery: %+v", st)
	}

	// A cache of another source is not used.
	o, _ := fleet.ParseURL("etcd://" + e.Endpoint + "/other")
	other, _ := fleet.Open(o)
	defer other.Close()
	e.Kill()
	f3 := fleet.NewFollower(other, cache, quiet())
	if err := f3.Start(ctx, time.Second, rec2.apply); err == nil || !strings.Contains(err.Error(), "caches") {
		t.Fatalf("start from another source's cache: %v", err)
	}
}

func TestRegistryListsInstancesAndForgetsTheGone(t *testing.T) {
	e := testenv.StartEtcd(t)
	s := openStore(t, e, "t3")
	ctx := ctxT(t)
	a := fleet.NewRegistry(s, fleet.Instance{ID: "a", Address: "h:1"}, quiet())
	b := fleet.NewRegistry(s, fleet.Instance{ID: "b", Address: "h:2"}, quiet())
	actx, stopA := context.WithCancel(ctx)
	bctx, stopB := context.WithCancel(ctx)
	doneA, doneB := make(chan struct{}), make(chan struct{})
	go func() { a.Run(actx); close(doneA) }()
	go func() { b.Run(bctx); close(doneB) }()
	defer func() { stopA(); stopB(); <-doneA; <-doneB }()
	ids := func(r *fleet.Registry) string {
		var out []string
		for _, in := range r.Instances() {
			out = append(out, in.ID)
		}
		return strings.Join(out, ",")
	}
	waitFor(t, "a and b see each other", func() bool { return ids(a) == "a,b" && ids(b) == "a,b" })
	b.SetConfig(fleet.Document{Revision: 42, Data: []byte("x")})
	waitFor(t, "a sees b's revision", func() bool {
		for _, in := range a.Instances() {
			if in.ID == "b" && in.ConfigRevision == 42 && in.ConfigChecksum == fleet.Checksum([]byte("x")) {
				return true
			}
		}
		return false
	})
	stopB()
	<-doneB
	waitFor(t, "b gone from a's list", func() bool { return ids(a) == "a" })
}

// etcd over TLS with its authentication on: the store reaches it with the
// CA and the account, and not without either.
func TestStoreOverTLSWithAuth(t *testing.T) {
	e := testenv.StartEtcdTLS(t)
	ctx := ctxT(t)
	// Turn authentication on, as an operator would: a root account first.
	admin, err := fleetTestClient(e)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error { _, err := admin.UserAdd(ctx, "root", "root-pw"); return err },
		func() error { _, err := admin.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := admin.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	admin.Close()

	o, err := fleet.ParseURL("etcd://" + e.Endpoint + "/secure")
	if err != nil {
		t.Fatal(err)
	}
	o.CACert, o.Username, o.Password = e.CAFile, "root", "root-pw"
	o.DialTimeout = 2 * time.Second
	s, err := fleet.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rev, err := s.Put(ctx, []byte("a: 1\n"), 0, fleet.PushMeta{})
	if err != nil {
		t.Fatalf("push over TLS with the account: %v", err)
	}
	if doc, err := s.Get(ctx); err != nil || doc.Revision != rev {
		t.Fatalf("get over TLS with the account: %+v, %v", doc, err)
	}

	bad := o
	bad.Password = "wrong"
	if s2, err := fleet.Open(bad); err == nil {
		_, err = s2.Get(ctx)
		s2.Close()
		if err == nil {
			t.Error("a wrong etcd password read the configuration")
		}
	}
	noCA := o
	noCA.CACert = ""
	if s3, err := fleet.Open(noCA); err == nil {
		short, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err = s3.Get(short)
		cancel()
		s3.Close()
		if err == nil {
			t.Error("a client without TLS read from a TLS-only etcd")
		}
	}
}

// fleetTestClient is an etcd client of the test's own, over e's TLS.
func fleetTestClient(e *testenv.Etcd) (*clientv3.Client, error) {
	pem, err := os.ReadFile(e.CAFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return clientv3.New(clientv3.Config{Endpoints: []string{e.Endpoint}, DialTimeout: 5 * time.Second,
		TLS: &tls.Config{RootCAs: pool}, Logger: zap.NewNop()})
}

// etcd compacted beyond the configuration's own revision (auto-compaction,
// a configuration pushed long ago): the follower watches from after what
// it read, not from its revision, which etcd no longer holds; it does not
// open watch after watch, and applies the next push.
func TestFollowerAfterCompaction(t *testing.T) {
	e := testenv.StartEtcd(t)
	s := openStore(t, e, "t4")
	ctx := ctxT(t)
	r1, err := s.Put(ctx, []byte("v1"), 0, fleet.PushMeta{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := clientv3.New(clientv3.Config{Endpoints: []string{e.Endpoint}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for i := range 20 { // other keys move etcd's revision on
		if _, err := raw.Put(ctx, fmt.Sprintf("/other/%d", i), "x"); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := raw.Get(ctx, "/other/0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	var rec recorder
	f := fleet.NewFollower(s, "", quiet())
	f.PollInterval = 200 * time.Millisecond
	if err := f.Start(ctx, 5*time.Second, rec.apply); err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { f.Run(rctx, rec.apply); close(done) }()
	defer func() { stop(); <-done }()
	time.Sleep(time.Second)
	if n := f.Watches(); n > 2 {
		t.Errorf("%d watches opened in a second after a compaction: the follower spins", n)
	}
	r2, err := s.Put(ctx, []byte("v2"), r1, fleet.PushMeta{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "v2 applied", func() bool { return f.State().Applied == r2 })
}
