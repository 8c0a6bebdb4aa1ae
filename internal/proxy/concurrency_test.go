package proxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
)

// TestManySessionsFewBackendConns runs 2,000 client sessions over 16 backend
// connections with a mix of autocommit statements, transactions and SET
// statements; every session checks it sees exactly its own state.
func TestManySessionsFewBackendConns(t *testing.T) {
	const sessions, rounds = 2000, 6
	raiseFDLimit(t, uint64(3*sessions+500))
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS many",
		"CREATE TABLE IF NOT EXISTS many.t (sess INT, n INT, KEY(sess)) ENGINE=InnoDB", "DELETE FROM many.t")
	cfg := proxyConfig(t, srv, "")
	cfg.Clusters[0].Pool.MaxOpen, cfg.Clusters[0].Pool.MaxIdle, cfg.Clusters[0].Pool.MinIdle = 16, 16, 16
	cfg.Clusters[0].Pool.WaitTimeout = 60 * time.Second
	p := startProxy(t, cfg)
	db := openDB(t, proxyDSN(p, appUser, appPass, "many", "timeout=60s"))
	db.SetMaxOpenConns(sessions)
	db.SetMaxIdleConns(sessions)

	committed := make([]int, sessions)
	errs := make(chan error, sessions)
	var ready, wg sync.WaitGroup
	start := make(chan struct{})
	ready.Add(sessions)
	for s := 0; s < sessions; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			conn, err := db.Conn(context.Background())
			ready.Done()
			if err != nil {
				errs <- fmt.Errorf("session %d: connect: %w", s, err)
				return
			}
			defer conn.Close()
			<-start
			n, err := runSession(conn, s, rounds)
			committed[s] = n
			if err != nil {
				errs <- fmt.Errorf("session %d: %w", s, err)
			}
		}(s)
	}
	ready.Wait()
	close(start)
	wg.Wait()
	close(errs)
	n := 0
	for err := range errs {
		if n++; n <= 10 {
			t.Error(err)
		}
	}
	if n > 0 {
		t.Fatalf("%d sessions failed", n)
	}
	// What each session committed is in the table, and nothing else.
	rows, err := srv.RootDB(t).Query("SELECT sess, COUNT(*) FROM many.t GROUP BY sess")
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]int{}
	for rows.Next() {
		var s, c int
		if err := rows.Scan(&s, &c); err != nil {
			t.Fatal(err)
		}
		got[s] = c
	}
	for s, want := range committed {
		if got[s] != want {
			t.Fatalf("session %d: %d rows in the table, committed %d", s, got[s], want)
		}
	}
	if open, _, _ := p.Cluster("main").Primary.Open(); open > 16 {
		t.Fatalf("%d backend connections open, pool max is 16", open)
	}
}

// runSession does a random mix of work, checking the session's own
// variables and transactions, and returns the rows it committed.
func runSession(conn *sql.Conn, s, rounds int) (int, error) {
	ctx := context.Background()
	rng := rand.New(rand.NewSource(int64(s)))
	gcml := 4096 + s // group_concat_max_len unique to this session
	// A string variable too. (Not time_zone: MariaDB 10.11 confuses cached
	// offset zones, e.g. '+05:07' after '+07:23' was used on any connection
	// gives +07:23, with or without a proxy.)
	locales := []string{"en_US", "de_DE", "fr_FR", "ja_JP", "pt_BR", "sv_SE", "it_IT"}
	tz := locales[s%len(locales)]
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("SET SESSION group_concat_max_len = %d, lc_time_names = '%s'", gcml, tz)); err != nil {
		return 0, err
	}
	committed := 0
	check := func(where string, q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) error {
		var g int
		var z string
		if err := q.QueryRowContext(ctx, "SELECT @@session.group_concat_max_len, @@session.lc_time_names").Scan(&g, &z); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if g != gcml || z != tz {
			return fmt.Errorf("%s: sees group_concat_max_len=%d lc_time_names=%s, set %d %s (state leaked between sessions)", where, g, z, gcml, tz)
		}
		return nil
	}
	for r := 0; r < rounds; r++ {
		switch rng.Intn(3) {
		case 0: // autocommit statements
			if err := check("autocommit", conn); err != nil {
				return committed, err
			}
			if _, err := conn.ExecContext(ctx, "INSERT INTO t VALUES (?, ?)", s, r); err != nil {
				return committed, err
			}
			committed++
		case 1: // explicit transaction, committed or rolled back
			tx, err := conn.BeginTx(ctx, nil)
			if err != nil {
				return committed, err
			}
			defer tx.Rollback() // on an error path; a no-op after Commit/Rollback
			if _, err := tx.ExecContext(ctx, "INSERT INTO t VALUES (?, ?)", s, r); err != nil {
				return committed, err
			}
			var mine int
			if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM t WHERE sess = ?", s).Scan(&mine); err != nil {
				return committed, err
			}
			if mine != committed+1 {
				return committed, fmt.Errorf("inside transaction: %d own rows, want %d", mine, committed+1)
			}
			if err := check("transaction", tx); err != nil {
				return committed, err
			}
			if rng.Intn(2) == 0 {
				if err := tx.Commit(); err != nil {
					return committed, err
				}
				committed++
			} else if err := tx.Rollback(); err != nil {
				return committed, err
			}
		case 2: // change a variable
			gcml += 1000
			if _, err := conn.ExecContext(ctx, fmt.Sprintf("SET group_concat_max_len = %d", gcml)); err != nil {
				return committed, err
			}
			if err := check("after SET", conn); err != nil {
				return committed, err
			}
		}
		var mine int
		if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM t WHERE sess = ?", s).Scan(&mine); err != nil {
			return committed, err
		}
		if mine != committed {
			return committed, fmt.Errorf("round %d: %d own rows visible, committed %d", r, mine, committed)
		}
	}
	return committed, nil
}

func raiseFDLimit(t *testing.T, want uint64) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur >= want {
		return
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < want {
		t.Fatalf("need %d file descriptors, limit is %d (%v)", want, lim.Cur, err)
	}
}
