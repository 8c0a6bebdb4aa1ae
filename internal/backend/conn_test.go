package backend

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/testenv"
)

func TestDialSession(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS bk_dial")
	dc := dialConfig(srv)
	dc.Database = "bk_dial"
	c := dialT(t, dc, false)

	if got := queryOne(t, c, "SELECT CONNECTION_ID()"); got != strconv.FormatUint(uint64(c.ThreadID), 10) {
		t.Errorf("ThreadID %d, server says CONNECTION_ID() = %s", c.ThreadID, got)
	}
	if c.DB != "bk_dial" {
		t.Errorf("DB = %q", c.DB)
	}
	if got := queryOne(t, c, "SELECT DATABASE()"); got != "bk_dial" {
		t.Errorf("DATABASE() = %q, want bk_dial", got)
	}
	for _, cap := range []uint32{mysql.ClientSessionTrack, mysql.ClientDeprecateEOF, mysql.ClientMultiStatements, mysql.ClientConnectWithDB} {
		if c.Caps&cap == 0 {
			t.Errorf("capability %#x not negotiated (caps %#x)", cap, c.Caps)
		}
	}
	if c.FoundRows || c.Caps&mysql.ClientFoundRows != 0 {
		t.Errorf("FoundRows set without asking")
	}
	if !strings.Contains(strings.ToLower(c.ServerVersion), "mariadb") {
		t.Errorf("ServerVersion %q", c.ServerVersion)
	}
	if got := queryOne(t, c, "SELECT @@session.session_track_system_variables"); got != "*" {
		t.Errorf("session_track_system_variables = %q, want *", got)
	}
	if got := queryOne(t, c, "SELECT CONCAT(@@character_set_client, '/', @@collation_connection)"); got != "utf8mb4/utf8mb4_general_ci" {
		t.Errorf("charset after handshake %q", got)
	}
	if err := c.Ping(); err != nil {
		t.Errorf("Ping: %v", err)
	}

	// Without a database: no CONNECT_WITH_DB, no current database.
	c2 := dialT(t, dialConfig(srv), false)
	if c2.Caps&mysql.ClientConnectWithDB != 0 || c2.DB != "" {
		t.Errorf("no database asked: caps %#x DB %q", c2.Caps, c2.DB)
	}
	if got := queryOne(t, c2, "SELECT DATABASE()"); got != "" {
		t.Errorf("DATABASE() = %q, want NULL", got)
	}
}

func TestDialErrors(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	dc := dialConfig(srv)
	dc.Password = "wrong-password"
	start := time.Now()
	c, err := Dial(context.Background(), dc, false)
	if err == nil {
		c.Close()
		t.Fatal("Dial with a wrong password succeeded")
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("rejected login took %v", time.Since(start))
	}
	wantContains(t, err.Error(), "1045", srv.Addr, testenv.User)
	wantSQLError(t, err, mysql.ERAccessDenied)

	dc = dialConfig(srv)
	dc.Database = "bk_no_such_db"
	if c, err := Dial(context.Background(), dc, false); err == nil {
		c.Close()
		t.Error("Dial into a missing database succeeded")
	} else {
		wantSQLError(t, err, mysql.ERBadDB)
	}

	dc = dialConfig(srv)
	dc.Addr = closedAddr(t)
	start = time.Now()
	if c, err := Dial(context.Background(), dc, false); err == nil {
		c.Close()
		t.Error("Dial to a closed port succeeded")
	} else {
		wantContains(t, err.Error(), dc.Addr)
		if time.Since(start) > 2*time.Second {
			t.Errorf("refused connect took %v", time.Since(start))
		}
	}
}

func TestExecAndQueryRows(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS bk_exec",
		"CREATE OR REPLACE TABLE bk_exec.t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(10))")
	dc := dialConfig(srv)
	dc.Database = "bk_exec"
	c := dialT(t, dc, false)

	mustExec(t, c, "INSERT INTO t (v) VALUES ('a'), ('b')")
	if c.LastInsertID != 1 {
		t.Errorf("LastInsertID after a two-row insert = %d, want 1 (the first id)", c.LastInsertID)
	}
	mustExec(t, c, "INSERT INTO t (v) VALUES (NULL)")
	if c.LastInsertID != 3 {
		t.Errorf("LastInsertID = %d, want 3", c.LastInsertID)
	}
	rows, err := c.QueryRows("SELECT id, v FROM t ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rows) != "[[1 a] [2 b] [3 ]]" {
		t.Errorf("rows %q", rows)
	}
	if rows, err := c.QueryRows("SELECT id FROM t WHERE id > 100"); err != nil || len(rows) != 0 {
		t.Errorf("empty result: %q, %v", rows, err)
	}
	if rows, err := c.QueryRows("DO 1"); err != nil || rows != nil {
		t.Errorf("QueryRows of a statement without a result: %q, %v", rows, err)
	}

	// Multi-statements: all results drained, the connection stays in step.
	mustExec(t, c, "SELECT 1; SET @a = 5; SELECT * FROM t; DO 2")
	if got := queryOne(t, c, "SELECT @a"); got != "5" {
		t.Errorf("@a = %q after a multi-statement Exec", got)
	}
	err = c.Exec("SELECT 1; SELECT no_such_column FROM t; SET @a = 6")
	wantSQLError(t, err, 1054)
	if got := queryOne(t, c, "SELECT @a"); got != "5" {
		t.Errorf("@a = %q: statements after the failing one ran", got)
	}
	_, err = c.QueryRows("SELECT no_such_column FROM t")
	wantSQLError(t, err, 1054)
	if got := queryOne(t, c, "SELECT 'still in step'"); got != "still in step" {
		t.Errorf("after errors: %q", got)
	}
}

// stmtExists asks the server whether statement id is prepared on c
// (COM_STMT_RESET answers OK, or ERR 1243 for an unknown handler).
func stmtExists(t *testing.T, c *Conn, id uint32) bool {
	t.Helper()
	if err := c.WriteCommand(mysql.AppendUint32([]byte{mysql.ComStmtReset}, id)); err != nil {
		t.Fatal(err)
	}
	p, err := c.ReadPacket()
	if err != nil {
		t.Fatal(err)
	}
	if mysql.IsErr(p) {
		if se := mysql.ParseErr(p); se.Code != mysql.ERUnknownStmtHandler {
			t.Fatalf("COM_STMT_RESET %d: %v", id, se)
		}
		return false
	}
	if !mysql.IsOK(p) {
		t.Fatalf("COM_STMT_RESET %d: unexpected reply %x", id, p)
	}
	return true
}

func globalPrepared(t *testing.T, c *Conn) int {
	t.Helper()
	rows, err := c.QueryRows("SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'")
	if err != nil || len(rows) != 1 {
		t.Fatalf("Prepared_stmt_count: %q, %v", rows, err)
	}
	n, err := strconv.Atoi(rows[0][1])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPrepareLRU uses a server of its own: Prepared_stmt_count is global.
func TestPrepareLRU(t *testing.T) {
	t.Parallel()
	srv := testenv.Start(t, testenv.Options{})
	dc := dialConfig(srv)
	dc.StmtLimit = 2
	c := dialT(t, dc, false)
	observer := dialT(t, dialConfig(srv), false)

	if n := globalPrepared(t, observer); n != 0 {
		t.Fatalf("fresh server has %d prepared statements", n)
	}
	a, err := c.Prepare("SELECT ?", "")
	if err != nil {
		t.Fatal(err)
	}
	if a.Params != 1 || a.Columns != 1 || a.SQL != "SELECT ?" {
		t.Errorf("statement %+v", a)
	}
	b, err := c.Prepare("SELECT ?, ?", "")
	if err != nil {
		t.Fatal(err)
	}
	if b.Params != 2 || b.Columns != 2 || b.ID == a.ID {
		t.Errorf("statement %+v (first %+v)", b, a)
	}
	// Touch a: b becomes the least recently used.
	if got := c.LookupStmt([]byte("SELECT ?"), ""); got != a {
		t.Fatalf("LookupStmt(SELECT ?) = %+v, want %+v", got, a)
	}
	d, err := c.Prepare("DO ?", "")
	if err != nil {
		t.Fatal(err)
	}
	if c.StmtCount() != 2 {
		t.Errorf("StmtCount = %d, want the limit 2", c.StmtCount())
	}
	if c.LookupStmt([]byte("SELECT ?, ?"), "") != nil {
		t.Errorf("least recently used statement still recorded")
	}
	if c.LookupStmt([]byte("SELECT ?"), "") != a || c.LookupStmt([]byte("DO ?"), "") != d {
		t.Errorf("recently used statements lost")
	}
	// The eviction's COM_STMT_CLOSE is queued and goes out with the next
	// command.
	mustExec(t, c, "DO 0")
	if n := globalPrepared(t, observer); n != 2 {
		t.Errorf("server holds %d prepared statements, want 2", n)
	}
	if stmtExists(t, c, b.ID) {
		t.Errorf("evicted statement %d still prepared on the server", b.ID)
	}
	if !stmtExists(t, c, a.ID) || !stmtExists(t, c, d.ID) {
		t.Errorf("kept statements %d, %d not prepared on the server", a.ID, d.ID)
	}

	// Preparing the same SQL again replaces (and closes) the old one.
	a2, err := c.Prepare("SELECT ?", "")
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "DO 0")
	if a2.ID == a.ID || c.StmtCount() != 2 || c.LookupStmt([]byte("SELECT ?"), "") != a2 {
		t.Errorf("re-prepare: new %+v old %+v count %d", a2, a, c.StmtCount())
	}
	if n := globalPrepared(t, observer); n != 2 {
		t.Errorf("after re-prepare the server holds %d prepared statements, want 2", n)
	}
	if stmtExists(t, c, a.ID) {
		t.Errorf("replaced statement %d still prepared", a.ID)
	}

	// Many more: never above the limit, on either side.
	for i := 0; i < 20; i++ {
		if _, err := c.Prepare(fmt.Sprintf("SELECT %d + ?", i), ""); err != nil {
			t.Fatal(err)
		}
	}
	mustExec(t, c, "DO 0")
	if c.StmtCount() != 2 || globalPrepared(t, observer) != 2 {
		t.Errorf("after 20 more: StmtCount %d, server %d; want 2, 2", c.StmtCount(), globalPrepared(t, observer))
	}

	// A failing prepare records nothing.
	_, err = c.Prepare("SELECT FROM WHERE", "")
	wantSQLError(t, err, mysql.ERParse)
	if c.StmtCount() != 2 {
		t.Errorf("failed prepare changed StmtCount to %d", c.StmtCount())
	}

	// Closing the connection frees them on the server.
	c.Close()
	waitFor(t, 5*time.Second, "statements of a closed connection to be freed", func() bool {
		return globalPrepared(t, observer) == 0
	})
}

func TestLookupStmtKeyedBySQLAndDB(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS bk_stmt1", "CREATE DATABASE IF NOT EXISTS bk_stmt2")
	c := dialT(t, dialConfig(srv), false)

	mustExec(t, c, "USE bk_stmt1")
	s1, err := c.Prepare("SELECT DATABASE(), ?", "bk_stmt1")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.LookupStmt([]byte("SELECT DATABASE(), ?"), "bk_stmt1"); got != s1 {
		t.Errorf("lookup under its database: %+v", got)
	}
	if got := c.LookupStmt([]byte("SELECT DATABASE(), ?"), "bk_stmt2"); got != nil {
		t.Errorf("lookup under another database found %+v", got)
	}
	if got := c.LookupStmt([]byte("SELECT DATABASE(),  ?"), "bk_stmt1"); got != nil {
		t.Errorf("lookup of other SQL text found %+v", got)
	}
	if got := c.LookupStmt([]byte("select database(), ?"), "bk_stmt1"); got != nil {
		t.Errorf("lookup is not byte-exact: found %+v", got)
	}
	mustExec(t, c, "USE bk_stmt2")
	s2, err := c.Prepare("SELECT DATABASE(), ?", "bk_stmt2")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.LookupStmt([]byte("SELECT DATABASE(), ?"), "bk_stmt2"); got != s2 {
		t.Errorf("lookup under the second database: %+v", got)
	}
	if got := c.LookupStmt([]byte("SELECT DATABASE(), ?"), "bk_stmt1"); got != nil {
		t.Errorf("stale statement of the first database found: %+v", got)
	}
	mustExec(t, c, "DO 0")
	if stmtExists(t, c, s1.ID) {
		t.Errorf("statement %d replaced by one for another database is still prepared", s1.ID)
	}
	if c.StmtCount() != 1 {
		t.Errorf("StmtCount = %d, want 1", c.StmtCount())
	}
}

func TestReset(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS bk_reset", "CREATE DATABASE IF NOT EXISTS bk_reset2",
		"CREATE OR REPLACE TABLE bk_reset.t (id INT AUTO_INCREMENT PRIMARY KEY) ENGINE=InnoDB")
	dc := dialConfig(srv)
	dc.Database = "bk_reset"
	c := dialT(t, dc, false)
	other := dialT(t, dc, false)

	st, err := c.Prepare("SELECT ?", "bk_reset")
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "SET @x = 42, SESSION sql_mode = 'ANSI_QUOTES', NAMES latin1")
	mustExec(t, c, "CREATE TEMPORARY TABLE tmp (a INT)")
	mustExec(t, c, "BEGIN")
	mustExec(t, c, "INSERT INTO t VALUES (NULL)")
	if c.LastInsertID == 0 {
		t.Fatal("no insert id")
	}
	c.Vars.Set("sql_mode", "ANSI_QUOTES")
	c.VarsFP = c.Vars.Fingerprint()
	c.Dirty = true
	if got := queryOne(t, other, "SELECT COUNT(*) FROM t"); got != "0" {
		t.Fatalf("uncommitted row visible: %s", got)
	}
	if got := queryOne(t, c, "SELECT CONCAT(@@character_set_client, '/', @@collation_connection, '/', @@sql_mode)"); got != "latin1/latin1_swedish_ci/ANSI_QUOTES" {
		t.Fatalf("state before Reset: %s", got)
	}

	if err := c.Reset(); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if len(c.Vars) != 0 || c.VarsFP != 0 || c.Dirty || c.LastInsertID != 0 || c.StmtCount() != 0 {
		t.Errorf("record after Reset: Vars %q FP %x Dirty %v LastInsertID %d stmts %d",
			c.Vars, c.VarsFP, c.Dirty, c.LastInsertID, c.StmtCount())
	}
	if c.LookupStmt([]byte("SELECT ?"), "bk_reset") != nil {
		t.Errorf("statement still recorded after Reset")
	}
	if stmtExists(t, c, st.ID) {
		t.Errorf("statement %d still prepared on the server after Reset", st.ID)
	}
	if got := queryOne(t, c, "SELECT @x"); got != "" {
		t.Errorf("@x = %q after Reset, want NULL", got)
	}
	if got := queryOne(t, c, "SELECT @@in_transaction"); got != "0" {
		t.Errorf("@@in_transaction = %s after Reset", got)
	}
	if got := queryOne(t, other, "SELECT COUNT(*) FROM t"); got != "0" {
		t.Errorf("the open transaction was committed by Reset: %s rows", got)
	}
	if _, err := c.QueryRows("SELECT * FROM tmp"); err == nil {
		t.Errorf("temporary table survived Reset")
	}
	if got := queryOne(t, c, "SELECT LAST_INSERT_ID()"); got != "0" {
		t.Errorf("LAST_INSERT_ID() = %s after Reset, record says 0", got)
	}
	// The record says "fresh connection": the server must agree.
	fresh := sessionVars(t, other, []string{"sql_mode", "character_set_client", "character_set_connection",
		"character_set_results", "collation_connection"})
	got := sessionVars(t, c, []string{"sql_mode", "character_set_client", "character_set_connection",
		"character_set_results", "collation_connection"})
	for n, v := range fresh {
		if got[n] != v {
			t.Errorf("after Reset @@session.%s = %q, a fresh connection has %q", n, got[n], v)
		}
	}
	if got := queryOne(t, c, "SELECT DATABASE()"); got != c.DB {
		t.Errorf("after Reset DATABASE() = %q, record says %q", got, c.DB)
	}

	// Session tracking is back on: a SET reports its change.
	if got := queryOne(t, c, "SELECT @@session.session_track_system_variables"); got != "*" {
		t.Errorf("session_track_system_variables = %q after Reset", got)
	}
	if got := queryOne(t, c, "SELECT @@session.session_track_schema"); got != "1" {
		t.Errorf("session_track_schema = %q after Reset", got)
	}
	if err := c.WriteCommand(append([]byte{mysql.ComQuery}, "SET SESSION time_zone = '+03:00'"...)); err != nil {
		t.Fatal(err)
	}
	p, err := c.ReadPacket()
	if err != nil {
		t.Fatal(err)
	}
	ok, valid := mysql.ParseOK(p, c.Caps)
	if !mysql.IsOK(p) || !valid || ok.Status&mysql.StatusSessionStateChange == 0 {
		t.Fatalf("SET after Reset: no session state change reported (%x)", p)
	}
	c.ApplyStateChanges(ok.SessionState)
	if v, _ := c.Vars.Get("time_zone"); v != "+03:00" {
		t.Errorf("tracked change after Reset: Vars %q", c.Vars)
	}

	// Reset after a database change: the record must match the server.
	mustExec(t, c, "USE bk_reset2")
	c.DB = "bk_reset2"
	if err := c.Reset(); err != nil {
		t.Fatal(err)
	}
	if got := queryOne(t, c, "SELECT DATABASE()"); got != c.DB {
		t.Errorf("after USE + Reset DATABASE() = %q, record says %q", got, c.DB)
	}
}

func TestPingFailsOnKilledConnection(t *testing.T) {
	t.Parallel()
	srv := testenv.Shared(t)
	root := srv.RootDB(t)
	c := dialT(t, dialConfig(srv), false)
	if err := c.Ping(); err != nil {
		t.Fatal(err)
	}
	if _, err := root.Exec(fmt.Sprintf("KILL %d", c.ThreadID)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "killed thread to go", func() bool { return !threadAlive(t, root, c.ThreadID) })
	_ = c.NetConn().SetDeadline(time.Now().Add(3 * time.Second))
	err := c.Ping()
	if err == nil {
		t.Fatal("Ping on a killed connection succeeded")
	}
	var se *mysql.SQLError
	if errors.As(err, &se) && se.Code != 1927 && se.Code != mysql.ERServerShutdown {
		// MariaDB may send ER_CONNECTION_KILLED before closing.
		t.Errorf("unexpected error %v", err)
	}
}
