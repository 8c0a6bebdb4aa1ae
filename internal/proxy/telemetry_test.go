package proxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/frontend"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/telemetry"
	"github.com/shardgate/shardgate/internal/testenv"
)

// TestStatementTelemetry runs statements through a real client, as text
// and prepared, and reads back what telemetry recorded: per-digest counts,
// rows, errors, and the slow log line of the statement over the threshold.
func TestStatementTelemetry(t *testing.T) {
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS tele",
		"CREATE TABLE IF NOT EXISTS tele.t (id INT PRIMARY KEY, v INT)",
		"DELETE FROM tele.t",
		"INSERT INTO tele.t VALUES (1, 10), (2, 20), (3, 30), (4, 40)")
	slowFile := filepath.Join(t.TempDir(), "slow.log")
	p := startProxy(t, proxyConfig(t, srv, `
telemetry:
  slow_log:
    file: `+slowFile+`
    threshold: 100ms
`))
	p.Telemetry().ResetDigests() // the proxy's own start-up statements, if any
	db := openDB(t, proxyDSN(p, appUser, appPass, "tele", ""))
	ctx := context.Background()
	conn := oneConn(t, db)

	for _, q := range []string{"SELECT v FROM t WHERE id IN (1, 2)", "select v from t where id in (3,4,1)", "SELECT v FROM t WHERE id IN (2,3)"} {
		rows, err := conn.QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
		}
		rows.Close()
	}
	for _, id := range []int{1, 2, 9} { // prepared, binary protocol
		var v int
		_ = conn.QueryRowContext(ctx, "SELECT v FROM t WHERE id = ?", id).Scan(&v)
	}
	mustExec(t, conn, "UPDATE t SET v = v + 1 WHERE id <= 3")
	if _, err := conn.ExecContext(ctx, "SELECT * FROM no_such_table WHERE x = 1"); err == nil {
		t.Fatal("no error from a missing table")
	}
	if _, err := conn.ExecContext(ctx, "SELECT 1; SELECT 2"); err == nil { // refused by the proxy itself
		t.Fatal("a multi-statement went through")
	}
	queryString(t, conn, "SELECT SLEEP(0.2)")

	want := map[string]struct{ count, rows, affected, errors uint64 }{
		"SELECT v FROM t WHERE id IN (...)":       {3, 7, 0, 0},
		"SELECT v FROM t WHERE id = ?":            {3, 2, 0, 0},
		"UPDATE t SET v = v + ? WHERE id <= ?":    {1, 0, 3, 0},
		"SELECT * FROM no_such_table WHERE x = ?": {1, 0, 0, 1},
		"SELECT ?; SELECT ?":                      {1, 0, 0, 1},
		"SELECT SLEEP(?)":                         {1, 1, 0, 0},
	}
	got := map[string]telemetry.DigestStat{}
	for _, d := range p.Telemetry().Digests() {
		got[d.Text] = d
	}
	for text, w := range want {
		d, ok := got[text]
		if !ok {
			t.Errorf("no digest %q; have %v", text, keys(got))
			continue
		}
		if d.Count != w.count || d.RowsSent != w.rows || d.RowsAffected != w.affected || d.Errors != w.errors {
			t.Errorf("%q: count %d, rows %d, affected %d, errors %d; want %+v", text, d.Count, d.RowsSent, d.RowsAffected, d.Errors, w)
		}
		if d.User != appUser || d.DB != "tele" || d.Max < d.P50 || d.Total < d.Max || d.LastSeen.Before(d.FirstSeen) {
			t.Errorf("%q: %+v", text, d)
		}
		if w.errors == 0 && d.ShardsTouched != d.Count {
			t.Errorf("%q: %d shards touched by %d statements", text, d.ShardsTouched, d.Count)
		}
	}
	if d := got["SELECT SLEEP(?)"]; d.P99 < 190*time.Millisecond || d.Max < 200*time.Millisecond {
		t.Errorf("SLEEP(0.2): p99 %v, max %v", d.P99, d.Max)
	}

	rec := waitSlowRecord(t, slowFile, "SELECT SLEEP(0.2)")
	if rec.User != appUser || rec.DB != "tele" || rec.DurationSec < 0.2 || rec.Backend != srv.Addr || rec.Cluster != "main" ||
		rec.RowsSent != 1 || rec.Kind != "select" || rec.Digest != telemetry.DigestHex(got["SELECT SLEEP(?)"].Digest) {
		t.Errorf("slow log record %+v", rec)
	}
}

func keys(m map[string]telemetry.DigestStat) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// waitSlowRecord waits for the slow log's writer to write the record of
// the statement text.
func waitSlowRecord(t *testing.T, file, text string) telemetry.SlowRecord {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		var lines []string
		for sc.Scan() {
			var rec telemetry.SlowRecord
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatalf("slow log line %q: %v", sc.Text(), err)
			}
			if rec.Text == text {
				f.Close()
				return rec
			}
			lines = append(lines, sc.Text())
		}
		f.Close()
		if time.Now().After(deadline) {
			t.Fatalf("no slow log record of %q; the file holds:\n%s", text, strings.Join(lines, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStatementTelemetryUnknownStatementID: a COM_STMT_EXECUTE of a
// statement id the session does not have is recorded under digest 0 (no
// statement), not as the statement before it.
func TestStatementTelemetryUnknownStatementID(t *testing.T) {
	srv := testenv.Shared(t)
	p := startProxy(t, proxyConfig(t, srv, ""))
	p.Telemetry().ResetDigests()
	cl := mfDial(t, p.Addrs()[0])
	cl.mustLogin(t)
	cl.mustSelect1(t)
	for i := 0; i < 3; i++ {
		cl.writePacket(0, executePacket(0xdeadbeef, 0))
		if e := cl.expectErr(t); e.Code != 1243 {
			t.Fatalf("execute of an unknown id: %v", e)
		}
	}
	got := map[string]telemetry.DigestStat{}
	for _, d := range p.Telemetry().Digests() {
		got[d.Text] = d
	}
	if d := got["SELECT ?"]; d.Count != 1 || d.Errors != 0 {
		t.Errorf("SELECT 1 ran once without error; its digest row: %+v", d)
	}
	if d := got[telemetry.NoStatementText]; d.Count != 3 || d.Errors != 3 || d.Digest != 0 {
		t.Errorf("the unknown statement's row: %+v; have %v", d, keys(got))
	}
}

// TestStatementTelemetryFailedBackend: a statement whose backend
// connection died under it is filed under its cluster and server, not
// under "-" (the proxy answered itself).
func TestStatementTelemetryFailedBackend(t *testing.T) {
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS telefail",
		"CREATE TABLE IF NOT EXISTS telefail.t (id INT PRIMARY KEY)", "REPLACE INTO telefail.t VALUES (1)")
	slowFile := filepath.Join(t.TempDir(), "slow.log")
	p := startProxy(t, proxyConfig(t, srv, `
telemetry:
  slow_log:
    file: `+slowFile+`
    sample_rate: 1
`))
	conn := oneConn(t, openDB(t, proxyDSN(p, appUser, appPass, "telefail", "")))
	mustExec(t, conn, "BEGIN")
	mustExec(t, conn, "SELECT id FROM t WHERE id = 1 FOR UPDATE") // pins a connection, in a transaction
	root := srv.RootDB(t)
	var thread int64
	if err := root.QueryRow(`SELECT trx_mysql_thread_id FROM information_schema.INNODB_TRX
		JOIN information_schema.PROCESSLIST ON ID = trx_mysql_thread_id WHERE DB = 'telefail'`).Scan(&thread); err != nil {
		t.Fatal(err)
	}
	if _, err := root.Exec(fmt.Sprintf("KILL %d", thread)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := conn.ExecContext(context.Background(), "SELECT id FROM t WHERE id = 1 /* killed */"); err == nil {
		t.Fatal("a statement on a killed connection succeeded")
	}
	rec := waitSlowRecord(t, slowFile, "SELECT id FROM t WHERE id = 1 /* killed */")
	if rec.Cluster != "main" || rec.ErrorCode == 0 || rec.Shards != 1 {
		t.Errorf("the failed statement's record: %+v", rec)
	}
}

// TestStatementTelemetryCursorFetch: the rows a client fetches from a
// cursor count in the statement's digest row, as the rows of a cursor the
// proxy holds (over several shards) do.
func TestStatementTelemetryCursorFetch(t *testing.T) {
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS telecur")
	p := startProxy(t, proxyConfig(t, srv, ""))
	cl := mfDial(t, p.Addrs()[0])
	cl.mustLogin(t)
	if res := cl.query(t, "USE telecur"); res.err != nil {
		t.Fatal(res.err)
	}
	p.Telemetry().ResetDigests()
	id, _ := cl.mustPrepare(t, "SELECT seq FROM seq_1_to_10")
	cl.writePacket(0, executePacket(id, mysql.CursorTypeReadOnly))
	expectCursorOpened(t, cl)
	rows := 0
	for done := false; !done; {
		var got [][]byte
		got, done = cl.fetch(t, id, 4)
		rows += len(got)
	}
	if rows != 10 {
		t.Fatalf("fetched %d rows", rows)
	}
	// The proxy counts a fetch's rows once it has sent them: the client
	// may look before it has.
	var row *telemetry.DigestStat
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		row = nil
		for _, d := range p.Telemetry().Digests() {
			if d.Text == "SELECT seq FROM seq_1_to_10" {
				row = &d
			}
		}
		if row != nil && row.RowsSent == 10 || time.Now().After(deadline) {
			break
		}
	}
	if row == nil {
		t.Fatalf("no digest row of the cursor's statement: %+v", p.Telemetry().Digests())
	}
	if row.Count != 1 || row.RowsSent != 10 {
		t.Errorf("the cursor's digest row: count %d, rows %d; want 1, 10", row.Count, row.RowsSent)
	}
}

// TestStatementTelemetrySessions: SHOW SESSIONS's statement is the last
// one also when the proxy answered it itself, masked when mask_literals
// is on; time_in_state follows statements with telemetry on and is
// unknown after the first command with it off.
func TestStatementTelemetrySessions(t *testing.T) {
	srv := testenv.Shared(t)
	for _, tc := range []struct {
		on, mask bool
		want     string
	}{
		{true, false, "SELECT 'x'; SELECT 2"},
		{false, false, "SELECT 'x'; SELECT 2"},
		{true, true, "SELECT ?; SELECT ?"},
	} {
		cfg := proxyConfig(t, srv, "")
		cfg.Telemetry.Enabled = tc.on
		cfg.Telemetry.SlowLog.MaskLiterals = tc.mask
		p := startProxy(t, cfg)
		cl := mfDial(t, p.Addrs()[0])
		cl.mustLogin(t)
		time.Sleep(300 * time.Millisecond)
		statements := time.Now() // after the login, by 300 ms or more
		cl.mustSelect1(t)
		cl.writePacket(0, append([]byte{mysql.ComQuery}, "SELECT 'x'; SELECT 2"...)) // refused by the proxy
		if e := cl.expectErr(t); e == nil {
			t.Fatal("a multi-statement went through")
		}
		var a frontend.Activity
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if s := p.Sessions(); len(s) == 1 {
				a = s[0]
			}
			if a.Statement == tc.want || time.Now().After(deadline) {
				break
			}
		}
		if a.Statement != tc.want || a.State != "idle" || a.Digest == 0 {
			t.Errorf("%+v: activity %+v, want statement %q", tc, a, tc.want)
		}
		// With telemetry on the state's start follows the statements, not
		// the login. (A bound on how long ago it was failed on a busy
		// machine; the clock read before the statements does not.)
		if tc.on && a.Since.Before(statements) || !tc.on && !a.Since.IsZero() {
			t.Errorf("%+v: in state since %v ago, the statements began %v ago", tc, time.Since(a.Since), time.Since(statements))
		}
	}
}

// TestStatementTelemetrySlowLogReopen: a reload reopens the slow log
// that logrotate renamed away.
func TestStatementTelemetrySlowLogReopen(t *testing.T) {
	srv := testenv.Shared(t)
	slowFile := filepath.Join(t.TempDir(), "slow.log")
	cfg := proxyConfig(t, srv, `
telemetry:
  slow_log:
    file: `+slowFile+`
    sample_rate: 1
`)
	p := startProxy(t, cfg)
	conn := oneConn(t, openDB(t, proxyDSN(p, appUser, appPass, "", "")))
	queryString(t, conn, "SELECT 'before'")
	waitSlowRecord(t, slowFile, "SELECT 'before'")
	if err := os.Rename(slowFile, slowFile+".1"); err != nil {
		t.Fatal(err)
	}
	again := *cfg
	if _, err := p.Reload(&again); err != nil {
		t.Fatal(err)
	}
	queryString(t, conn, "SELECT 'after'")
	waitSlowRecord(t, slowFile, "SELECT 'after'")
}
