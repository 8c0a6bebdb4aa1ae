package proxy_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
)

// TestBackendCrashAndRecovery kills the server under load: clients get
// errors, the proxy stays up, and service resumes by itself when the server
// is back.
func TestBackendCrashAndRecovery(t *testing.T) {
	srv := testenv.Start(t, testenv.Options{})
	srv.Exec(t, "CREATE DATABASE crash", "CREATE TABLE crash.t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
	cfg := proxyConfig(t, srv, "")
	cfg.Clusters[0].Pool.WaitTimeout = 2 * time.Second
	cfg.Clusters[0].Pool.ConnectTimeout = time.Second
	p := startProxy(t, cfg)
	db := openDB(t, proxyDSN(p, appUser, appPass, "crash", ""))
	db.SetMaxOpenConns(16)

	var ok, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				if w%2 == 0 {
					_, err = db.Exec("INSERT INTO t (v) VALUES (?)", w)
				} else {
					var n int
					err = db.QueryRow("SELECT COUNT(*) FROM t").Scan(&n)
				}
				if err != nil {
					failed.Add(1)
					time.Sleep(10 * time.Millisecond)
				} else {
					ok.Add(1)
				}
			}
		}(w)
	}
	time.Sleep(500 * time.Millisecond)
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if failed.Load() == 0 {
		t.Fatal("no client saw an error while the server was down")
	}
	// The proxy itself is up: a login without a database needs no backend.
	probe := openDB(t, proxyDSN(p, appUser, appPass, "", ""))
	if err := probe.Ping(); err != nil {
		t.Fatalf("proxy not answering while the backend is down: %v", err)
	}
	_, err := probe.Exec("DO 1")
	if mysqlErrCode(err) != 9001 {
		t.Fatalf("statement while the backend is down: want error 9001, got %v", err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// Every worker succeeds again within a few seconds, with no restart of
	// the proxy.
	deadline := time.Now().Add(15 * time.Second)
	for {
		before := ok.Load()
		failedBefore := failed.Load()
		time.Sleep(time.Second)
		if ok.Load() > before+50 && failed.Load() == failedBefore {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery: ok=%d failed=%d", ok.Load(), failed.Load())
		}
	}
	close(stop)
	wg.Wait()
}

// TestLargePackets moves rows over 16 MB both ways: client packets joined
// from several frames, result rows relayed frame by frame.
func TestLargePackets(t *testing.T) {
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS big", "CREATE TABLE IF NOT EXISTS big.t (id INT PRIMARY KEY, b LONGBLOB)", "DELETE FROM big.t")
	p := startProxy(t, proxyConfig(t, srv, ""))
	blob := make([]byte, 20<<20+17)
	if _, err := rand.Read(blob); err != nil {
		t.Fatal(err)
	}
	for i, params := range []string{
		"",                         // binary protocol, one 20 MB execute packet
		"interpolateParams=true",   // text protocol, one 20 MB COM_QUERY
		"maxAllowedPacket=4194304", // COM_STMT_SEND_LONG_DATA chunks
	} {
		db := openDB(t, proxyDSN(p, appUser, appPass, "big", params))
		if _, err := db.Exec("INSERT INTO t VALUES (?, ?)", i, blob); err != nil {
			t.Fatalf("%q: insert: %v", params, err)
		}
		var got []byte
		var rdb *sql.DB = openDB(t, proxyDSN(p, appUser, appPass, "big", ""))
		if err := rdb.QueryRowContext(context.Background(), "SELECT b FROM t WHERE id = ?", i).Scan(&got); err != nil {
			t.Fatalf("%q: select: %v", params, err)
		}
		if !bytes.Equal(got, blob) {
			t.Fatalf("%q: blob differs (len %d vs %d)", params, len(got), len(blob))
		}
		text := openDB(t, proxyDSN(p, appUser, appPass, "big", "interpolateParams=true"))
		if err := text.QueryRow("SELECT b FROM t WHERE id = ?", i).Scan(&got); err != nil || !bytes.Equal(got, blob) {
			t.Fatalf("%q: text select: %v (equal=%v)", params, err, bytes.Equal(got, blob))
		}
	}
}

// TestRecoveryAfterLongOutage: however long a server was down, and however
// far its breaker's backoff has grown, it is back in use within 2 s of
// accepting connections again (the checker tries a plain connect every
// health.reconnect_interval while it is out).
func TestRecoveryAfterLongOutage(t *testing.T) {
	srv := testenv.Start(t, testenv.Options{})
	srv.Exec(t, "CREATE DATABASE outage", "CREATE TABLE outage.t (id INT AUTO_INCREMENT PRIMARY KEY)")
	// The default breaker: its backoff doubles from 1 s, so the full checks
	// of the server taken out come about 1, 3, 7, 15, 31 s later (each at
	// the first check interval past its period). Back after about 10 s, it
	// waited 5 s for the next one before the reconnect probes.
	p := startProxy(t, proxyConfig(t, srv, ""))
	db := openDB(t, proxyDSN(p, appUser, appPass, "outage", ""))
	insert := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := db.ExecContext(ctx, "INSERT INTO t VALUES ()")
		return err
	}
	if err := insert(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Halt(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the halted server taken out (error 9001)", 10*time.Second, func() bool { return mysqlErrCode(insert()) == 9001 })
	out := time.Now()
	time.Sleep(10 * time.Second)

	restarted := make(chan error, 1)
	go func() { restarted <- srv.Restart() }()
	direct := openDB(t, srv.DSN("outage"))
	direct.SetMaxIdleConns(0) // every ping logs in anew
	var accepts, serves time.Time
	for deadline := time.Now().Add(60 * time.Second); serves.IsZero(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no statement through the proxy succeeded within 60 s of the restart (server accepting since %v)", accepts)
		}
		if accepts.IsZero() && direct.Ping() == nil {
			accepts = time.Now()
		}
		if !accepts.IsZero() && insert() == nil {
			serves = time.Now()
		}
	}
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	t.Logf("server taken out for %v; proxy served again %v after it accepted connections", accepts.Sub(out).Round(time.Millisecond), serves.Sub(accepts).Round(time.Millisecond))
	if d := serves.Sub(accepts); d > 2*time.Second {
		t.Fatalf("the proxy served again %v after the server accepted connections, want within 2 s", d)
	}
}
