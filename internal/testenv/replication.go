package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"
)

// Replicated is a primary with replicas replicating from it by GTID, all
// real mariadbd instances.
type Replicated struct {
	Primary  *Server
	Replicas []*Server
}

// replicationArgs make a server fit to be a primary or a replica, and to be
// promoted: binary log with replica updates, strict GTIDs, crash-safe
// replica position.
var replicationArgs = []string{
	"--log-slave-updates=ON",
	"--gtid-strict-mode=ON",
	"--relay-log=relay-bin",
	"--binlog-format=ROW",
	"--slave-net-timeout=5",
}

// StartReplicated starts a primary and n replicas replicating from it,
// stopped when the test ends. Replicas start read-only (--read-only=ON), as
// a failover tool would leave them.
func StartReplicated(tb testing.TB, n int) *Replicated {
	tb.Helper()
	r := &Replicated{}
	r.Primary = Start(tb, Options{LogBin: true, ServerID: 1, ExtraArgs: replicationArgs})
	for i := 0; i < n; i++ {
		args := append(append([]string(nil), replicationArgs...), "--read-only=ON")
		r.Replicas = append(r.Replicas, Start(tb, Options{LogBin: true, ServerID: 2 + i, ExtraArgs: args}))
	}
	// Every instance is a copy of the same template: replicas start from
	// the primary's current position instead of replaying its start-up.
	pos := r.Primary.Scalar(tb, "SELECT @@gtid_binlog_pos")
	for i := range r.Replicas {
		r.Replicas[i].Exec(tb,
			"SET GLOBAL gtid_slave_pos = '"+pos+"'",
			r.changeMasterTo(r.Primary),
			"START SLAVE")
	}
	// Replicated to every server, like any account created on a primary.
	r.Primary.Exec(tb,
		"CREATE USER '"+AppUser+"'@'%' IDENTIFIED BY '"+AppPassword+"'",
		"GRANT "+appGrants+" ON *.* TO '"+AppUser+"'@'%'")
	r.WaitCaughtUp(tb)
	return r
}

// AppUser and AppPassword are an account as an application (or a proxy in
// front of one) has it: no SUPER or READ_ONLY ADMIN, so read_only stops its
// writes, unlike the all-privileges test account's. StartReplicated
// creates it.
const (
	AppUser     = "sgapp"
	AppPassword = "sgapp-pw"
)

const appGrants = "SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, INDEX, ALTER, CREATE TEMPORARY TABLES, " +
	"LOCK TABLES, EXECUTE, CREATE VIEW, SHOW VIEW, CREATE ROUTINE, ALTER ROUTINE, TRIGGER, PROCESS, " +
	"SLAVE MONITOR, BINLOG MONITOR"

// changeMasterTo is the statement that points a server at primary p.
func (r *Replicated) changeMasterTo(p *Server) string {
	return fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='%s', "+
		"MASTER_PASSWORD='%s', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1", p.Port, User, Password)
}

// WaitCaughtUp waits until the given replicas (all when none are given)
// have applied everything the primary has binlogged so far.
func (r *Replicated) WaitCaughtUp(tb testing.TB, replicas ...int) {
	tb.Helper()
	if len(replicas) == 0 {
		for i := range r.Replicas {
			replicas = append(replicas, i)
		}
	}
	pos := r.Primary.Scalar(tb, "SELECT @@gtid_binlog_pos")
	for _, i := range replicas {
		s := r.Replicas[i]
		if got := s.Scalar(tb, "SELECT MASTER_GTID_WAIT('"+pos+"', 30)"); got != "0" {
			tb.Fatalf("testenv: replica %d did not reach %s within 30s (MASTER_GTID_WAIT = %s)", i, pos, got)
		}
	}
}

// StopReplication stops replica i's replication threads (its lag then
// grows with every write on the primary).
func (r *Replicated) StopReplication(tb testing.TB, i int) {
	tb.Helper()
	r.Replicas[i].Exec(tb, "STOP SLAVE")
}

// StartReplication restarts replica i's replication threads.
func (r *Replicated) StartReplication(tb testing.TB, i int) {
	tb.Helper()
	r.Replicas[i].Exec(tb, "START SLAVE")
}

// Promote makes replica i the primary, as an external failover tool would:
// it stops replicating and turns writable; the other replicas follow it.
// The old primary is left as it is (dead, or to be made read-only by the
// caller).
func (r *Replicated) Promote(tb testing.TB, i int) {
	tb.Helper()
	np := r.Replicas[i]
	np.Exec(tb, "STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL read_only = OFF")
	for j, s := range r.Replicas {
		if j == i || !s.Running() {
			continue
		}
		s.Exec(tb, "STOP SLAVE", r.changeMasterTo(np), "START SLAVE")
	}
}

// Scalar runs a query as root and returns the first column of its first
// row as a string ("NULL" for NULL).
func (s *Server) Scalar(tb testing.TB, query string) string {
	tb.Helper()
	v, err := s.ScalarE(query)
	if err != nil {
		tb.Fatalf("testenv: %s: %v", query, err)
	}
	return v
}

// ScalarE is Scalar returning the error.
func (s *Server) ScalarE(query string) (string, error) {
	db, err := s.openRoot()
	if err != nil {
		return "", err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var v sql.NullString
	if err := db.QueryRowContext(ctx, query).Scan(&v); err != nil {
		return "", fmt.Errorf("query %q on %s: %w", query, s.Addr, err)
	}
	if !v.Valid {
		return "NULL", nil
	}
	return v.String, nil
}
