package proxy_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/testenv"
)

// A backend connection's state sync rides in the packet of the statement
// it prepares (backend.Conn.DeferSync): these tests check that sessions
// whose state differs still each see their own, through merges and
// routed statements sharing one connection per shard, that the sync
// really rode along, and that a sync the server refuses is the
// statement's answer and leaves the connection's record true.

// foldPair starts two shards (testZone known to s0 only) and a proxy
// whose pools hold one connection per shard, so that every statement of
// a session whose state differs from the last one's needs a sync. It
// returns shard s1 and a function opening a client of the proxy.
func foldPair(t *testing.T) (s1 *testenv.Server, proxyDB func() *sql.DB) {
	t.Helper()
	const db = "fold"
	srvs := testenv.StartN(t, 2, testenv.Options{})
	s0, s1 := srvs[0], srvs[1]
	for _, s := range srvs {
		s.Exec(t, "CREATE DATABASE "+db)
	}
	s0.Exec(t, "CREATE TABLE fold.t_0000 (id INT PRIMARY KEY, v INT)", "CREATE TABLE fold.t_0001 (id INT PRIMARY KEY, v INT)",
		"INSERT INTO mysql.time_zone (Time_zone_id, Use_leap_seconds) VALUES (900, 'N')",
		"INSERT INTO mysql.time_zone_name (Name, Time_zone_id) VALUES ('"+testZone+"', 900)",
		"INSERT INTO mysql.time_zone_transition_type (Time_zone_id, Transition_type_id, `Offset`, Is_DST, Abbreviation) VALUES (900, 0, 7200, 0, 'TZ')")
	s1.Exec(t, "CREATE TABLE fold.t_0002 (id INT PRIMARY KEY, v INT)", "CREATE TABLE fold.t_0003 (id INT PRIMARY KEY, v INT)")
	p := startProxy(t, parseConfig(t, twoShardYAML(db, s0.Addr, s1.Addr, 1, `    tables:
      - {name: t, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: 2}
`, ""), "fold.yaml"))
	return s1, func() *sql.DB {
		d := openDB(t, proxyDSN(p, appUser, appPass, db, ""))
		d.SetMaxOpenConns(1)
		return d
	}
}

// testZone is a named time zone (UTC+2) that only shard s0 knows.
const testZone = "Test/Zone"

// epochIn is what FROM_UNIXTIME(0) reads in a session of time zone
// offset off.
func epochIn(off string) string { return "1970-01-01 " + off + ":00:00" }

// TestShardedFoldedSync: two sessions, one of them in another time zone,
// take turns on one connection per shard: merges and routed statements
// each answer in their own session's zone.
func TestShardedFoldedSync(t *testing.T) {
	s1, proxyDB := foldPair(t)
	a, b := proxyDB(), proxyDB()
	mustExec(t, a, "SET time_zone = '+00:00'")
	mustExec(t, a, "INSERT INTO t VALUES (1, 10), (2, 20), (3, 30), (4, 40), (5, 50), (6, 60), (7, 70), (8, 80)")
	mustExec(t, b, "SET time_zone = '+05:00'")
	onS1 := "SELECT id, FROM_UNIXTIME(0) FROM t WHERE id = " + s1.Scalar(t, "SELECT MIN(id) FROM fold.t_0002")
	s1.Exec(t, "SET GLOBAL log_output = 'TABLE'", "TRUNCATE mysql.general_log", "SET GLOBAL general_log = 1")
	for range 3 {
		for _, c := range []struct {
			db   *sql.DB
			want string
		}{{a, epochIn("00")}, {b, epochIn("05")}} {
			checkEpochs(t, c.db, "SELECT id, FROM_UNIXTIME(0) FROM t ORDER BY id", 8, c.want)
			checkEpochs(t, c.db, onS1, 1, c.want)
		}
	}
	s1.Exec(t, "SET GLOBAL general_log = 0")
	// The syncs rode in the statements' packets: the server logged each
	// with its statement, as one multi-statement.
	log := openDB(t, s1.DSN(""))
	folded := queryString(t, log, "SELECT COUNT(*) FROM mysql.general_log WHERE command_type = 'Query' AND argument LIKE 'SET @@session.%;%'")
	separate := queryString(t, log, "SELECT COUNT(*) FROM mysql.general_log WHERE command_type = 'Query' AND argument LIKE 'SET @@session.%' AND argument NOT LIKE 'SET @@session.%;%'")
	if folded == "0" || separate != "0" {
		t.Errorf("shard s1 logged %s syncs in a statement's packet and %s on their own, want only the former", folded, separate)
	}
}

// TestShardedFoldedSyncRefused: a session's time zone that shard s1 does
// not know: each statement that needs s1 fails with the server's error,
// as a sync of its own did, again and again (the connection's record
// stays true: it does not take the zone for set); a session in another
// zone and the first one still answer right on that connection.
func TestShardedFoldedSyncRefused(t *testing.T) {
	s1, proxyDB := foldPair(t)
	a, b := proxyDB(), proxyDB()
	mustExec(t, a, "SET time_zone = '+00:00'")
	mustExec(t, a, "INSERT INTO t VALUES (1, 10), (2, 20), (3, 30), (4, 40), (5, 50), (6, 60), (7, 70), (8, 80)")
	onS1 := "SELECT id, FROM_UNIXTIME(0) FROM t WHERE id = " + s1.Scalar(t, "SELECT MIN(id) FROM fold.t_0002")
	mustExec(t, b, "SET time_zone = '"+testZone+"'") // on s0, which knows it
	for _, q := range []string{"SELECT id, FROM_UNIXTIME(0) FROM t ORDER BY id", "SELECT id, FROM_UNIXTIME(0) FROM t ORDER BY id", onS1} {
		_, err := b.Query(q)
		if mysqlErrCode(err) != 1298 || !contains(err.Error(), testZone) {
			t.Fatalf("%s in a zone s1 does not know: %v, want 1298 naming it", q, err)
		}
	}
	// (b stays in a zone s1 refuses, where any statement of its goes
	// through s1's connection, as when each sync had a round trip.)
	b.Close()
	c := proxyDB()
	mustExec(t, c, "SET time_zone = '+05:00'")
	checkEpochs(t, c, "SELECT id, FROM_UNIXTIME(0) FROM t ORDER BY id", 8, epochIn("05"))
	checkEpochs(t, a, "SELECT id, FROM_UNIXTIME(0) FROM t ORDER BY id", 8, epochIn("00"))
	checkEpochs(t, c, onS1, 1, epochIn("05"))
	checkEpochs(t, a, onS1, 1, epochIn("00"))
}

// checkEpochs runs q, whose rows are (id, FROM_UNIXTIME(0)), and checks
// it gives n rows, each with want.
func checkEpochs(t *testing.T, db *sql.DB, q string, n int, want string) {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	got := 0
	for rows.Next() {
		var id int
		var epoch string
		if err := rows.Scan(&id, &epoch); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(epoch, want) {
			t.Fatalf("%s: row %d has %s, want %s", q, id, epoch, want)
		}
		got++
	}
	if err := rows.Err(); err != nil || got != n {
		t.Fatalf("%s: %d rows (%v), want %d", q, got, err, n)
	}
}
