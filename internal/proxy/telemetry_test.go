package proxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
