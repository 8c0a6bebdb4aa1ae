package backend

import (
	"testing"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/testenv"
)

// deferTo defers a sync of c to database db (USE first when use) and
// time zone tz, both as the SyncTarget records them.
func deferTo(c *Conn, use bool, db, tz string) {
	vars := Vars{{Name: "time_zone", Value: tz}}
	sql := ""
	stmts := 1
	if use {
		sql, stmts = "USE `"+db+"`;", 2
	}
	sql += "SET @@session.time_zone = '" + tz + "'"
	c.DeferSync([]byte(sql), stmts, &SyncTarget{DB: db, UseDB: use, Vars: vars, VarsFP: vars.Fingerprint()})
}

// TestDeferredSyncRidesOnTheNextQuery: the next COM_QUERY written
// carries the sync in its packet; once its answer is read the record is
// the target, and the query saw the synced state.
func TestDeferredSyncRidesOnTheNextQuery(t *testing.T) {
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS syncdb")
	c := dialT(t, dialConfig(srv), false)
	deferTo(c, true, "syncdb", "+03:00")
	if got := queryOne(t, c, "SELECT CONCAT(DATABASE(), ' ', @@time_zone)"); got != "syncdb +03:00" {
		t.Fatalf("the query saw %q, want syncdb +03:00", got)
	}
	if c.DB != "syncdb" || len(c.Vars) != 1 || c.Vars[0].Value != "+03:00" || c.SyncDeferred() {
		t.Fatalf("record DB %q vars %v (deferred %v), want syncdb and +03:00", c.DB, c.Vars, c.SyncDeferred())
	}
}

// TestDeferredSyncRefused: a sync whose SET the server refuses is the
// query's answer; the record takes the USE that ran before it, not the
// variables.
func TestDeferredSyncRefused(t *testing.T) {
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS syncdb")
	c := dialT(t, dialConfig(srv), false)
	c.DB = ""
	deferTo(c, true, "syncdb", "No/Such_Zone")
	_, err := c.QueryRows("SELECT 1")
	if se, ok := err.(*mysql.SQLError); !ok || se.Code != 1298 {
		t.Fatalf("query after a refused sync: %v, want 1298", err)
	}
	if c.DB != "syncdb" || len(c.Vars) != 0 {
		t.Fatalf("record DB %q vars %v, want syncdb (the USE ran) and no variables", c.DB, c.Vars)
	}
	if got := queryOne(t, c, "SELECT CONCAT(DATABASE(), ' ', @@time_zone)"); got != "syncdb SYSTEM" {
		t.Fatalf("the server's session: %q, want syncdb SYSTEM", got)
	}
}

// TestDeferredSyncDropped: a sync no query carried is dropped by a
// command with an answer that cannot carry it, and by the pool; the
// record still describes the server.
func TestDeferredSyncDropped(t *testing.T) {
	srv := testenv.Shared(t)
	c := dialT(t, dialConfig(srv), false)
	deferTo(c, false, c.DB, "+04:00")
	if err := c.Ping(); err != nil { // no state needed: left for the next query
		t.Fatal(err)
	}
	if !c.SyncDeferred() {
		t.Fatal("a ping dropped the deferred sync")
	}
	if _, err := c.Prepare("SELECT 1", c.DB); err != nil {
		t.Fatal(err)
	}
	if c.SyncDeferred() || len(c.Vars) != 0 {
		t.Fatalf("after a COM_STMT_PREPARE: deferred %v, vars %v; want dropped and none", c.SyncDeferred(), c.Vars)
	}
	if got := queryOne(t, c, "SELECT @@time_zone"); got != "SYSTEM" {
		t.Fatalf("time zone %q, want SYSTEM (the sync never ran)", got)
	}
}
