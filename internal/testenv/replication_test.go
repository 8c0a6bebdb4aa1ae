package testenv

import (
	"fmt"
	"testing"
	"time"
)

func TestReplicated(t *testing.T) {
	r := StartReplicated(t, 2)
	r.Primary.Exec(t, "CREATE DATABASE rt", "CREATE TABLE rt.t (id INT PRIMARY KEY)", "INSERT INTO rt.t VALUES (1)")
	r.WaitCaughtUp(t)
	for i, s := range r.Replicas {
		if got := s.Scalar(t, "SELECT COUNT(*) FROM rt.t"); got != "1" {
			t.Fatalf("replica %d has %s rows, want 1", i, got)
		}
		if got := s.Scalar(t, "SELECT @@read_only"); got != "1" {
			t.Fatalf("replica %d read_only = %s", i, got)
		}
	}

	// A stopped replica falls behind; restarted, it catches up.
	r.StopReplication(t, 0)
	r.Primary.Exec(t, "INSERT INTO rt.t VALUES (2)")
	r.WaitCaughtUp(t, 1)
	if got := r.Replicas[0].Scalar(t, "SELECT COUNT(*) FROM rt.t"); got != "1" {
		t.Fatalf("stopped replica has %s rows, want 1", got)
	}
	r.StartReplication(t, 0)
	waitScalar(t, r.Replicas[0], "SELECT COUNT(*) FROM rt.t", "2")

	// Promotion: replica 1 takes writes, replica 0 follows it.
	r.Promote(t, 1)
	r.Primary.Exec(t, "SET GLOBAL read_only = ON")
	r.Replicas[1].Exec(t, "INSERT INTO rt.t VALUES (3)")
	waitScalar(t, r.Replicas[0], "SELECT COUNT(*) FROM rt.t", "3")
}

// waitScalar polls until query returns want on s.
func waitScalar(t *testing.T, s *Server, query, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var got string
	for time.Now().Before(deadline) {
		got = s.Scalar(t, query)
		if got == want {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal(fmt.Sprintf("%s on %s: got %s, want %s", query, s.Addr, got, want))
}
