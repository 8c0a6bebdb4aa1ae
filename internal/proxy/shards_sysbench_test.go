package proxy_test

// sysbench's OLTP mixes on the sharded sbtest layout (issue 14,
// Acceptance): oltp_read_only and oltp_read_write at 16 threads, with and
// without server-side prepared statements, with no error; after
// oltp_read_write, the tables read through shardgate equal what one server
// holds after applying the same run's writes.
//
// The writes are taken from the shards' statement-based binary logs:
// each shard's committed writes, in the order it committed them, are
// replayed on the reference server (which starts from a copy of the
// tables), the sub-table names replaced by the logical ones. The binary
// log's order is a serial order of the shard's run (the general log's is
// only the order statements arrived in, which two autocommitted UPDATEs
// of one row can overtake); each row lives on one shard, so the shards'
// orders need no merging. The number of writes the shards ran
// must equal the number sysbench sent: a write lost or run twice by the
// proxy shows there, one changed on its way in the contents.

import (
	"crypto/sha256"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
)

var sbWritesRe = regexp.MustCompile(`(?m)^\s*write:\s+(\d+)\s*$`)

// TestShardedSysbenchMerges: oltp_read_only and oltp_read_write, whose
// range queries (SUM, ORDER BY, DISTINCT over 100 ids) need merges.
func TestShardedSysbenchMerges(t *testing.T) {
	bin := clientsBinary(t, "sysbench")
	const db = "sb_merges"
	tables := sbShardedTableList(sbShardedSubTables / 2)
	// Statement-based binary logs hold each shard's writes in commit order.
	e := startClientShardsWith(t, testenv.Options{LogBin: true, ExtraArgs: []string{"--binlog-format=STATEMENT"}}, db, tables...)
	clientsMustExec(t, 2*time.Minute, nil, bin, sbShardedArgs(clientsProxyTarget(t, e.p), db, "oltp_read_write", "prepare")...)
	// oltp_read_write's transactions write to both shards.
	px := clientsProxyTarget(t, startProxy(t, clientShardsConfig(t, db, e.shards, "    cross_shard_writes: allow\n", tables)))
	ref := openDB(t, e.ref.DSN(db))
	proxyDB := openDB(t, proxyDSN(e.p, appUser, appPass, db, ""))
	copySbtest(t, proxyDB, ref)

	// run runs script with the mix's options and returns sysbench's count
	// of writes. The mix leaves out DELETE+INSERT of one id, which two
	// threads deadlock on on one server too (1213 is an error here).
	run := func(t *testing.T, script, psMode string, threads int, extra ...string) int {
		t.Helper()
		args := sbShardedArgs(px, db, script, append([]string{"--db-ps-mode=" + psMode, "--threads=" + strconv.Itoa(threads), "--time=3",
			"--report-interval=0", "--mysql-ignore-errors=none", "--delete_inserts=0"}, extra...)...)
		r := clientsExec(t, 2*time.Minute, nil, bin, append(args, "run")...)
		if r.exitCode != 0 || strings.Contains(r.stdout+r.stderr, "FATAL") {
			t.Fatalf("sysbench %s failed:\n%s", script, r)
		}
		s := clientsParseSysbench(t, r)
		if s.queries <= 0 || s.transactions <= 0 || s.ignoredErrors != 0 || s.reconnects != 0 {
			t.Fatalf("sysbench %s: %d transactions, %d queries, %d ignored errors, %d reconnects; want queries and no errors:\n%s",
				script, s.transactions, s.queries, s.ignoredErrors, s.reconnects, r)
		}
		m := sbWritesRe.FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("sysbench output has no write count:\n%s", r)
		}
		writes, _ := strconv.Atoi(m[1])
		t.Logf("%s --db-ps-mode=%s --threads=%d %s: %d transactions, %d writes, %s", script, psMode, threads, strings.Join(extra, " "), s.transactions, writes, s.qpsLine)
		return writes
	}
	// readWrite runs oltp_read_write, replays the shards' binary logs and
	// compares the tables with the reference's after the replay.
	readWrite := func(t *testing.T, psMode string, threads int, extra ...string) {
		t.Helper()
		tails := startBinlogs(t, e.shards)
		writes := run(t, "oltp_read_write", psMode, threads, extra...)
		replayed := 0
		for _, tl := range tails {
			replayed += replayCommitted(t, tl.statements(t), ref)
		}
		if replayed != writes {
			t.Errorf("the shards ran %d writes, sysbench sent %d", replayed, writes)
		}
		compareSbtest(t, proxyDB, ref)
		e.checkSbtest(t)
	}

	// At 16 threads, oltp_read_write runs each statement in autocommit
	// (--skip_trx): its transactions write rows on both shards in random
	// order, and two of them waiting on each other's rows on different
	// shards is a deadlock no server sees (each waits out
	// innodb_lock_wait_timeout, 1205); one server would find it and
	// answer 1213. The stock transactions run on one thread.
	for _, psMode := range []string{"disable", "auto"} {
		t.Run("read-only-ps-"+psMode, func(t *testing.T) {
			run(t, "oltp_read_only", psMode, 16)
		})
		t.Run("read-write-ps-"+psMode, func(t *testing.T) {
			readWrite(t, psMode, 16, "--skip_trx=on")
		})
		t.Run("read-write-transactions-ps-"+psMode, func(t *testing.T) {
			readWrite(t, psMode, 1)
		})
	}
}

// copySbtest creates the sbtest tables on the reference as shardgate
// shows them and copies their rows.
func copySbtest(t *testing.T, from, to *sql.DB) {
	t.Helper()
	for n := 1; n <= sbShardedTables; n++ {
		table := fmt.Sprintf("sbtest%d", n)
		var name, ddl string
		if err := from.QueryRow("SHOW CREATE TABLE "+table).Scan(&name, &ddl); err != nil {
			t.Fatalf("SHOW CREATE TABLE %s: %v", table, err)
		}
		mustExec(t, to, "DROP TABLE IF EXISTS "+table, ddl)
		rows := sbtestRows(t, from, table)
		for len(rows) > 0 {
			chunk := rows[:min(len(rows), 500)]
			rows = rows[len(chunk):]
			values := make([]string, len(chunk))
			for i, r := range chunk {
				values[i] = fmt.Sprintf("(%d, %d, '%s', '%s')", r.id, r.k, r.c, r.pad)
			}
			mustExec(t, to, "INSERT INTO "+table+" (id, k, c, pad) VALUES "+strings.Join(values, ", "))
		}
	}
}

type sbRow struct {
	id, k  int64
	c, pad string // digits and dashes: no quoting needed
}

// sbtestRows reads a table's rows sorted by id (sorted here: shardgate
// reads without ORDER BY across shards).
func sbtestRows(t *testing.T, db *sql.DB, table string) []sbRow {
	t.Helper()
	rows, err := db.Query("SELECT id, k, c, pad FROM " + table)
	if err != nil {
		t.Fatalf("%s: %v", table, err)
	}
	defer rows.Close()
	var out []sbRow
	for rows.Next() {
		var r sbRow
		if err := rows.Scan(&r.id, &r.k, &r.c, &r.pad); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(out, func(a, b sbRow) int { return int(a.id - b.id) })
	return out
}

// compareSbtest compares the sbtest tables read through shardgate with
// the reference's: checksums of the sorted rows, and the first rows that
// differ.
func compareSbtest(t *testing.T, proxyDB, ref *sql.DB) {
	t.Helper()
	for n := 1; n <= sbShardedTables; n++ {
		table := fmt.Sprintf("sbtest%d", n)
		got, want := sbtestRows(t, proxyDB, table), sbtestRows(t, ref, table)
		sum := func(rows []sbRow) string { return fmt.Sprintf("%x", sha256.Sum256([]byte(fmt.Sprint(rows))))[:16] }
		if sum(got) == sum(want) {
			t.Logf("%s: %d rows, checksum %s through shardgate and on the reference after the replay", table, len(got), sum(got))
			continue
		}
		t.Errorf("%s: checksum %s (%d rows) through shardgate, %s (%d rows) on the reference after the replay", table, sum(got), len(got), sum(want), len(want))
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Errorf("%s: first difference: through shardgate %+v, reference %+v", table, got[i], want[i])
				break
			}
		}
	}
}

// binlogTail is where a shard's binary log stood when a run started.
type binlogTail struct {
	db   *sql.DB
	file string
	pos  int64
}

// startBinlogs notes where each shard's binary log stands.
func startBinlogs(t *testing.T, shards []*testenv.Server) []binlogTail {
	t.Helper()
	var tails []binlogTail
	for _, s := range shards {
		db := openDB(t, s.DSN(""))
		db.SetMaxOpenConns(1)
		tl := binlogTail{db: db}
		var doDB, ignoreDB sql.NullString
		if err := db.QueryRow("SHOW MASTER STATUS").Scan(&tl.file, &tl.pos, &doDB, &ignoreDB); err != nil {
			t.Fatalf("SHOW MASTER STATUS: %v", err)
		}
		tails = append(tails, tl)
	}
	return tails
}

// binlogStmtRe takes the statement out of a Query event's Info.
var binlogStmtRe = regexp.MustCompile("(?s)^use `[^`]*`; (.*)$")

// statements returns the statements the shard binlogged since the tail,
// in the order it committed them.
func (tl binlogTail) statements(t *testing.T) []string {
	t.Helper()
	var files []string
	rows, err := tl.db.Query("SHOW BINARY LOGS")
	if err != nil {
		t.Fatalf("SHOW BINARY LOGS: %v", err)
	}
	for rows.Next() {
		var name string
		var size sql.RawBytes
		if err := rows.Scan(&name, &size); err != nil {
			t.Fatal(err)
		}
		if name >= tl.file {
			files = append(files, name)
		}
	}
	rows.Close()
	var out []string
	for _, f := range files {
		q := fmt.Sprintf("SHOW BINLOG EVENTS IN '%s'", f)
		if f == tl.file {
			q += fmt.Sprintf(" FROM %d", tl.pos)
		}
		rows, err := tl.db.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		for rows.Next() {
			var logName, eventType, info string
			var pos, serverID, endPos int64
			if err := rows.Scan(&logName, &pos, &eventType, &serverID, &endPos, &info); err != nil {
				t.Fatal(err)
			}
			if eventType != "Query" {
				continue
			}
			if m := binlogStmtRe.FindStringSubmatch(info); m != nil {
				info = m[1]
			}
			out = append(out, info)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return out
}

var (
	sbWriteRe    = regexp.MustCompile(`(?is)^\s*(UPDATE|DELETE|INSERT|REPLACE)\b.*\bsbtest\d+_\d{4}\b`)
	sbSubTableRe = regexp.MustCompile(`\b(sbtest\d+)_\d{4}\b`)
)

// replayCommitted replays a shard's binlogged writes on ref, in the
// order the shard committed them, with the logical table names, and
// returns how many it replayed.
func replayCommitted(t *testing.T, stmts []string, ref *sql.DB) int {
	t.Helper()
	conn := oneConn(t, ref)
	n := 0
	for _, s := range stmts {
		if sbWriteRe.MatchString(s) {
			mustExec(t, conn, sbSubTableRe.ReplaceAllString(s, "$1"))
			n++
		}
	}
	return n
}

// sbIgnoredRe finds the errors sysbench ignored (--verbosity=5) and how
// many times each line repeated.
var sbIgnoredRe = regexp.MustCompile(`(?m)^DEBUG: Ignoring error (\d+) .*\n(?:\(last message repeated (\d+) times\)\n)?`)

// TestShardedSysbenchAtomic runs oltp_read_write's stock transactions at
// 16 threads, with and without server-side prepared statements, on the
// sbtest tables hash-sharded on id over 2 shards × 4 sub-tables under
// cross_shard_writes: atomic (issue 21, Acceptance): most transactions
// read and write on both shards, and commit in two phases. sysbench
// stops at any error but a deadlock (1213) or a lock wait timeout
// (1205) (its default list has 1020 too, which no shard gives here),
// after which it runs the transaction again: a deadlock on one
// shard happens on one server too (DELETE and INSERT of one id by two
// threads), and one across shards, which no server sees, is broken by
// innodb_lock_wait_timeout (1 s here); either rolls the transaction back
// on every shard. Those it ignored are counted and logged. After each
// run every row is on its sub-table, once, the row counts unchanged, and
// no transaction is left open or prepared on the shards.
func TestShardedSysbenchAtomic(t *testing.T) {
	bin := clientsBinary(t, "sysbench")
	const db = "sb_atomic"
	const perShard = 4
	tables := sbShardedTableList(perShard)
	e := startClientShardsWith(t, testenv.Options{ExtraArgs: []string{"--innodb-lock-wait-timeout=1"}}, db, tables...)
	clientsMustExec(t, 2*time.Minute, nil, bin, sbShardedArgs(clientsProxyTarget(t, e.p), db, "oltp_read_write", "prepare")...)
	e.checkSbtestLayout(t, perShard)
	cfg := clientShardsConfig(t, db, e.shards, "    cross_shard_writes: atomic\n", tables)
	for i := range cfg.Clusters {
		// A connection per thread on each shard: with fewer, transactions
		// holding one shard's connection wait for another's held by
		// transactions waiting for theirs, until wait_timeout ends it
		// with 1213 (TestShardedConnectionDeadlock; under a loaded CI it
		// stalled this run to 16 transactions).
		cfg.Clusters[i].Pool.MaxOpen = 16
	}
	px := clientsProxyTarget(t, startProxy(t, cfg))
	for _, psMode := range []string{"disable", "auto"} {
		t.Run("ps-"+psMode, func(t *testing.T) {
			xa0 := xaStatements(t, e.shards)
			args := sbShardedArgs(px, db, "oltp_read_write", "--db-ps-mode="+psMode, "--threads=16", "--time=3",
				"--report-interval=0", "--mysql-ignore-errors=1213,1205", "--verbosity=5", "run")
			r := clientsExec(t, 2*time.Minute, nil, bin, args...)
			if r.exitCode != 0 || strings.Contains(r.stdout+r.stderr, "FATAL") {
				t.Fatalf("sysbench oltp_read_write failed:\n%s", r)
			}
			s := clientsParseSysbench(t, r)
			ignored := map[string]int{}
			n := 0
			for _, m := range sbIgnoredRe.FindAllStringSubmatch(r.stdout, -1) {
				times := 1
				if m[2] != "" {
					more, _ := strconv.Atoi(m[2])
					times += more
				}
				ignored[m[1]] += times
				n += times
			}
			// A bound only a cascade of timeouts would exceed (each costs
			// its thread a second), not the run's luck. (The codes found
			// in the log are for the report: any other is fatal.)
			if s.transactions <= 0 || s.reconnects != 0 || s.ignoredErrors*10 > s.transactions {
				t.Fatalf("sysbench: %d transactions, %d reconnects, %d ignored errors (%d in its log: %v); want transactions, at most one ignored error in ten:\n%s",
					s.transactions, s.reconnects, s.ignoredErrors, n, ignored, r)
			}
			for _, d := range e.direct {
				checkNoTrx(t, d, db, "a shard")
			}
			e.checkSbtestLayout(t, perShard)
			xa := xaStatements(t, e.shards)
			for k := range xa {
				xa[k] -= xa0[k]
			}
			if xa["Com_xa_prepare"] == 0 {
				t.Fatalf("the shards ran %v: no transaction committed in two phases", xa)
			}
			t.Logf("oltp_read_write --db-ps-mode=%s --threads=16: %d transactions, %s; %d ignored errors by code %v; the shards ran %v",
				psMode, s.transactions, s.qpsLine, s.ignoredErrors, ignored, xa)
		})
	}
}

// xaStatements sums the shards' counters of XA statements.
func xaStatements(t *testing.T, shards []*testenv.Server) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, s := range shards {
		for _, name := range []string{"Com_xa_start", "Com_xa_prepare", "Com_xa_commit", "Com_xa_rollback"} {
			out[name] += statusCounter(t, s, name)
		}
	}
	return out
}
