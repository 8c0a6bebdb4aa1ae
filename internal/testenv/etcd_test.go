package testenv_test

import (
	"net/http"
	"testing"

	"github.com/shardgate/shardgate/internal/testenv"
)

func TestEtcdStartsKillsAndRestarts(t *testing.T) {
	e := testenv.StartEtcd(t)
	get := func() error {
		resp, err := http.Get("http://" + e.Endpoint + "/health")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(); err != nil {
		t.Fatalf("etcd not serving after start: %v", err)
	}
	e.Kill()
	if err := get(); err == nil {
		t.Fatal("etcd still serving after Kill")
	}
	if err := e.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := get(); err != nil {
		t.Fatalf("etcd not serving after Restart: %v", err)
	}
}
