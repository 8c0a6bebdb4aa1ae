package proxy_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shardgate/shardgate/internal/testenv"
)

func TestKill(t *testing.T) {
	srv := testenv.Shared(t)
	p := startProxy(t, proxyConfig(t, srv, ""))
	db := openDB(t, proxyDSN(p, appUser, appPass, "", ""))
	ctx := context.Background()
	a, b := oneConn(t, db), oneConn(t, db)
	aID := queryString(t, a, "SELECT CONNECTION_ID()")
	bID := queryString(t, b, "SELECT CONNECTION_ID()")
	if aID == bID {
		t.Fatalf("two sessions share connection id %s", aID)
	}

	// KILL QUERY interrupts a's statement on whichever backend thread runs it.
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := a.ExecContext(ctx, "SELECT SLEEP(20)")
		done <- err
	}()
	// KILL QUERY stops what runs: wait for the statement to run on the
	// server (a fixed pause lost that race on a busy machine, and the
	// KILL then found nothing to stop).
	waitFor(t, "SELECT SLEEP(20) running on the server", 20*time.Second, func() bool {
		return srv.Scalar(t, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND = 'Query' AND INFO = 'SELECT SLEEP(20)'") != "0"
	})
	mustExec(t, b, "KILL QUERY "+aID)
	select {
	case err := <-done:
		if err != nil && mysqlErrCode(err) != 1317 {
			t.Fatalf("killed query: %v", err)
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("KILL QUERY did not interrupt the statement")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("KILL QUERY did not interrupt the statement")
	}
	// a is still usable after KILL QUERY.
	if got := queryString(t, a, "SELECT 'alive'"); got != "alive" {
		t.Fatalf("a after KILL QUERY: %q", got)
	}

	// Errors: unknown id, another user's connection.
	if _, err := b.ExecContext(ctx, "KILL 999999"); mysqlErrCode(err) != 1094 {
		t.Fatalf("KILL unknown id: %v", err)
	}
	other := openDB(t, proxyDSN(p, testenv.User, testenv.Password, "", ""))
	oc := oneConn(t, other)
	oID := queryString(t, oc, "SELECT CONNECTION_ID()")
	if _, err := b.ExecContext(ctx, "KILL "+oID); mysqlErrCode(err) != 1095 {
		t.Fatalf("KILL of another user's connection: %v", err)
	}
	// KILL CONNECTION ends a's session.
	mustExec(t, b, fmt.Sprintf("KILL CONNECTION %s", aID))
	time.Sleep(100 * time.Millisecond)
	_, err := a.ExecContext(ctx, "SELECT 1")
	if err == nil {
		t.Fatal("a still works after KILL CONNECTION")
	}
	if !errors.Is(err, driver.ErrBadConn) && !errors.Is(err, mysql.ErrInvalidConn) && mysqlErrCode(err) == 0 {
		t.Logf("a after KILL CONNECTION: %v", err)
	}
	if got := queryString(t, b, "SELECT 'b alive'"); got != "b alive" {
		t.Fatalf("b: %q", got)
	}
}
