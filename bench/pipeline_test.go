package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/testenv"
)

// BenchmarkServerPipelining measures what pipelining statements of
// several sessions on one server connection could spare MariaDB (issue
// 23 §1), with no proxy in the way: the ceiling of what a proxy that
// pipelines could gain. The same 16 clients' point selects, each client
// waiting for its answer before its next statement, go over 16
// connections with one statement in flight each (depth=1: what every
// proxy and the relay do today), or over 16/depth connections carrying
// depth clients' statements at once: written together, answered in
// order. It reports QPS and the server's CPU per query.
func BenchmarkServerPipelining(b *testing.B) {
	srv := testenv.Start(b, testenv.Options{})
	srv.Exec(b, "CREATE DATABASE pl", "USE pl", "CREATE TABLE pl.t (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL)",
		"INSERT INTO pl.t SELECT seq, seq * 7 % 10000, REPEAT('c', 120) FROM seq_1_to_10000")
	const clients = 16
	for _, depth := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			conns := dialPipelined(b, srv, clients/depth)
			cpu0, err := cpuTime(srv.Pid())
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			began := time.Now()
			runPipelined(b, conns, depth, b.N)
			elapsed := time.Since(began)
			b.StopTimer()
			cpu1, err := cpuTime(srv.Pid())
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "qps")
			b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(b.N), "server-µs/q")
		})
	}
}

// dialPipelined opens n connections to srv's database pl.
func dialPipelined(b *testing.B, srv *testenv.Server, n int) []*backend.Conn {
	b.Helper()
	conns := make([]*backend.Conn, n)
	for i := range conns {
		c, err := backend.Dial(context.Background(), &backend.DialConfig{Addr: srv.Addr, User: testenv.User,
			Password: testenv.Password, Database: "pl", ConnectTimeout: 10 * time.Second}, false)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		conns[i] = c
	}
	return conns
}

// runPipelined runs total point selects over conns, depth at once on
// each: depth commands written, then their depth answers read, in turn.
func runPipelined(b *testing.B, conns []*backend.Conn, depth, total int) {
	var wg sync.WaitGroup
	per := (total + len(conns) - 1) / len(conns)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var rs mysql.RowStream
			for n := 0; n < per; n += depth {
				for d := range depth {
					q := fmt.Appendf([]byte{mysql.ComQuery}, "SELECT c FROM t WHERE id = %d", 1+(i*per+n+d)%10000)
					if err := c.WriteCommand(q); err != nil {
						b.Error(err)
						return
					}
				}
				for range depth {
					rs.Reset(c.Conn, c.Caps, nil, false)
					if err := rs.Start(); err != nil {
						b.Error(err)
						return
					}
					if _, err := rs.Drain(true); err != nil {
						b.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}
