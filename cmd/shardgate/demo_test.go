package main_test

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// freePorts returns a base port whose n consecutive ports are free now.
func freePorts(t *testing.T, n int) int {
	t.Helper()
	for range 50 {
		base := 20000 + rand.IntN(30000)
		free := true
		for i := range n {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
			if err != nil {
				free = false
				break
			}
			l.Close()
		}
		if free {
			return base
		}
	}
	t.Fatal("no free ports")
	return 0
}

// runDemo runs scripts/demo.sh in check mode (bring everything up, run the
// queries to try, stop) with its servers in a temporary directory.
func runDemo(t *testing.T, shards string) string {
	t.Helper()
	base := freePorts(t, 7)
	cmd := exec.Command("bash", "scripts/demo.sh")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(),
		"SHARDGATE_SKIP_DEPS=1",
		"SHARDGATE_DEMO_CHECK=1",
		"SHARDGATE_DEMO_SHARDS="+shards,
		"SHARDGATE_DEMO_DIR="+t.TempDir(),
		fmt.Sprintf("SHARDGATE_DEMO_DB_PORT=%d", base),
		fmt.Sprintf("SHARDGATE_DEMO_LISTEN=127.0.0.1:%d", base+4),
		fmt.Sprintf("SHARDGATE_DEMO_ADMIN=127.0.0.1:%d", base+5),
		fmt.Sprintf("SHARDGATE_DEMO_ADMIN_SQL=127.0.0.1:%d", base+6),
	)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
		case <-time.After(3 * time.Minute):
			_ = cmd.Process.Signal(os.Interrupt)
		}
	}()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/demo.sh (SHARDGATE_DEMO_SHARDS=%s): %v\n%s", shards, err, out)
	}
	return string(out)
}

// TestDemoSharded brings the sharded demo up: shards with a replica, the
// sample schema loaded through shardgate, and the queries it suggests
// answering as it says.
func TestDemoSharded(t *testing.T) {
	out := runDemo(t, "2")
	for _, want := range []string{
		"shard s0: primary 127.0.0.1:",
		"replica 127.0.0.1:",
		"shop.customers  hash(id)",
		"| Margaret Hamilton | margaret@example.com |",           // one key
		"| Ada Lovelace |  2 |        2 | Wireless mouse      |", // a join with a reference table
		"| 15 | Karen Spärck Jones  |",                           // a scatter read
		"|  5 | Barbara Liskov |",                                // the shard hint
		"| 20 | Leslie Lamport   |\n| 19 | Shafi Goldwasser |\n| 18 | Monty Widenius   |", // a merge: ORDER BY … LIMIT
		"| US      |         9 |\n| GB      |         5 |\n| FI      |         2 |",       // a merge: GROUP BY, ORDER BY COUNT(*)
		"| digest           | user      | db   | text",                                    // the admin port's digests
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the sharded demo's output lacks %q:\n%s", want, out)
		}
	}
}

// TestDemoOneServer: SHARDGATE_DEMO_SHARDS=0 is the demo in front of one
// server, as before shards.
func TestDemoOneServer(t *testing.T) {
	out := runDemo(t, "0")
	if want := "| Ada Lovelace | Mechanical keyboard |        1 |"; !strings.Contains(out, want) {
		t.Errorf("the one-server demo's output lacks %q:\n%s", want, out)
	}
}
