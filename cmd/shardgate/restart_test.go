package main_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
)

// restartInstance is one of the processes sharing the listener's port.
type restartInstance struct {
	p     *proc
	admin string
}

func (ri *restartInstance) clients(t *testing.T) float64 {
	v, err := metricE(ri.admin, "shardgate_client_connections")
	if err != nil {
		t.Fatalf("instance on %s: %v", ri.admin, err)
	}
	return v
}

func readyz(admin string) int {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + admin + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Two instances share one port (reuse_port); Go clients through
// database/sql (64 connections, reads and short transactions) run while
// one instance is replaced: its successor starts on the same port, then it
// gets SIGTERM and drains. No statement fails: busy sessions end right
// after a response with the shutdown error queued behind it (the driver
// takes another connection), idle ones after a quiet second, and a
// transaction open at SIGTERM runs to its COMMIT on the draining process.
func TestRestartBehindReusePortFailsNoStatement(t *testing.T) {
	srv := testenv.Shared(t)
	const db = "restarts"
	srv.Exec(t, "DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db,
		"CREATE TABLE "+db+".t (id INT PRIMARY KEY, n INT NOT NULL)", "INSERT INTO "+db+".t VALUES (1, 0), (2, 0)")
	file := filepath.Join(t.TempDir(), "shardgate.yaml")
	cfg := fmt.Sprintf("users:\n  - {name: %s, password: %q}\nclusters:\n  - {name: main, user: %s, password: %q, primary: {address: %q}}\nserver: {shutdown_timeout: 60s}\n",
		testenv.User, testenv.Password, testenv.User, testenv.Password, srv.Addr)
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	listen := freeAddr(t)
	start := func() *restartInstance {
		t.Helper()
		ri := &restartInstance{admin: freeAddr(t)}
		var err error
		ri.p, _, err = startServeOn(t, nil, listen, "--config", file, "--admin-http", ri.admin)
		if err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 30*time.Second, "the instance's admin port", func() bool { return readyz(ri.admin) == http.StatusOK })
		return ri
	}
	old := start()
	// A transaction opened on the instance to be replaced, before the
	// other one listens.
	txDB := open(t, listen, db)
	tx, err := txDB.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("UPDATE t SET n = n + 1 WHERE id = 2"); err != nil {
		t.Fatal(err)
	}
	other := start()

	var stmts, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	load := open(t, listen, db)
	load.SetMaxOpenConns(64)
	load.SetMaxIdleConns(64)
	for w := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				if w%4 == 0 {
					err = shortTransaction(load)
				} else {
					var n int
					err = load.QueryRow("SELECT n FROM t WHERE id = 1").Scan(&n)
				}
				stmts.Add(1)
				if err != nil {
					failed.Add(1)
					t.Logf("statement failed: %v", err)
				}
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	waitUntil(t, 30*time.Second, "load on both instances", func() bool {
		return old.clients(t) > 2 && other.clients(t) > 2 && stmts.Load() > 1000
	})

	successor := start()
	if err := old.p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "the old instance to report draining", func() bool { return readyz(old.admin) == http.StatusServiceUnavailable })
	// The transaction opened before SIGTERM goes on and commits there.
	if _, err := tx.Exec("UPDATE t SET n = n + 1 WHERE id = 2"); err != nil {
		t.Fatalf("a statement of a transaction open at SIGTERM: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("COMMIT of a transaction open at SIGTERM: %v", err)
	}
	select {
	case err := <-old.p.done:
		old.p.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("the old instance exited with %v:\n%s", err, old.p.stderr.String())
		}
	case <-time.After(50 * time.Second):
		t.Fatalf("the old instance did not finish draining:\n%s", old.p.stderr.String())
	}
	before := stmts.Load()
	waitUntil(t, 30*time.Second, "load on the successor", func() bool {
		return successor.clients(t) > 0 && stmts.Load() > before+1000
	})
	close(stop)
	wg.Wait()
	stop = make(chan struct{})
	var n int
	if err := txDB.QueryRow("SELECT n FROM t WHERE id = 2").Scan(&n); err != nil || n != 2 {
		t.Fatalf("the transaction's rows after its COMMIT: n = %d, %v", n, err)
	}
	t.Logf("%d statements, %d failed; successor serves %v clients, the other %v", stmts.Load(), failed.Load(), successor.clients(t), other.clients(t))
	if failed.Load() != 0 {
		t.Fatalf("%d of %d statements failed while an instance was replaced", failed.Load(), stmts.Load())
	}
}

func shortTransaction(db *sql.DB) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if _, err := tx.Exec("UPDATE t SET n = n + 1 WHERE id = 1"); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
