package proxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"
)

// A transaction begun on a sharded schema before the drain began, whose
// BEGIN was answered at once and opens on a shard with its first statement
// (nothing is held on a backend yet), is not ended by the drain: neither
// after a quiet second nor at its next response; it runs to its COMMIT.
func TestDrainWaitsForALazyTransaction(t *testing.T) {
	p, p0, p1, _, _, proxyDB := shardedPairProxy(t, "drainlazy")
	ctx := context.Background()
	conn, err := proxyDB("").Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		done <- p.Shutdown(sctx)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for ready, _ := p.Ready(); ready; ready, _ = p.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("the proxy did not start draining")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Longer than the drain's quiet second: an idle session holding
	// nothing would be closed by now.
	time.Sleep(1500 * time.Millisecond)
	for _, stmt := range []string{"INSERT INTO t VALUES (1, 10)", "UPDATE t SET v = 11 WHERE id = 1", "COMMIT"} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s in a transaction begun before the drain: %v", stmt, err)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("drain: %v", err)
	}
	got := ""
	for _, q := range []struct {
		db    interface{ QueryRow(string, ...any) *sql.Row }
		table string
	}{{p0, "t_0000"}, {p0, "t_0001"}, {p1, "t_0002"}, {p1, "t_0003"}} {
		var v sql.NullInt64
		if err := q.db.QueryRow("SELECT MAX(v) FROM " + q.table + " WHERE id = 1").Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v.Valid {
			got += fmt.Sprint(v.Int64)
		}
	}
	if got != "11" {
		t.Fatalf("the committed row's value on the shards: %q, want 11 once", got)
	}
}
