package proxy_test

// Real, unmodified clients on sharded tables (issue 13, Acceptance): the
// mariadb command line client, PyMySQL and sysbench, through shardgate over
// two shards, their tables created through shardgate (DDL fan-out). The
// helpers are those of clients_test.go; go-sql-driver is covered by the
// other shards tests (text and binary protocol).

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/testenv"
)

// clientShards is shardgate over two shards s0, s1 with schema db, whose
// tables are the YAML flow mappings of tables (sharded over [s0, s1]),
// and a reference server holding db unsharded. The database exists on
// every server, without tables.
type clientShards struct {
	db     string
	p      *proxy.Proxy
	ref    *testenv.Server
	shards []*testenv.Server
	direct []*sql.DB // per shard, in db
}

func startClientShards(t *testing.T, db string, tables ...string) *clientShards {
	t.Helper()
	return startClientShardsWith(t, testenv.Options{}, db, tables...)
}

// startClientShardsWith is startClientShards with the servers started
// with opts.
func startClientShardsWith(t *testing.T, opts testenv.Options, db string, tables ...string) *clientShards {
	t.Helper()
	srvs := testenv.StartN(t, 3, opts)
	for _, s := range srvs {
		s.Exec(t, "CREATE DATABASE "+db)
	}
	return &clientShards{
		db: db, p: startProxy(t, clientShardsConfig(t, db, srvs[1:], "", tables)), ref: srvs[0], shards: srvs[1:],
		direct: []*sql.DB{openDB(t, srvs[1].DSN(db)), openDB(t, srvs[2].DSN(db))},
	}
}

// clientShardsConfig is the configuration of shardgate over shards with
// schema db of tables, with schemaKeys (YAML lines) added to the schema.
func clientShardsConfig(t *testing.T, db string, shards []*testenv.Server, schemaKeys string, tables []string) *config.Config {
	t.Helper()
	var b strings.Builder
	for _, tb := range tables {
		b.WriteString("      - " + tb + "\n")
	}
	return parseConfig(t, twoShardYAML(db, shards[0].Addr, shards[1].Addr, 8, schemaKeys+"    tables:\n"+b.String(), ""), "clients-sharded.yaml")
}

// ---------------------------------------------------------------------------
// sysbench

const (
	sbShardedTables    = 2
	sbShardedTableSize = 3000
	sbShardedSubTables = 4 // 2 shards × 2
)

// sbShardedTableList is the sbtest tables' YAML flow mappings: hash on
// id over [s0, s1], perShard sub-tables on each shard.
func sbShardedTableList(perShard int) []string {
	var tables []string
	for i := 1; i <= sbShardedTables; i++ {
		tables = append(tables, fmt.Sprintf("{name: sbtest%d, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: %d}", i, perShard))
	}
	return tables
}

// sbShardedArgs are sysbench's options for script on the sharded sbtest
// tables through tg.
func sbShardedArgs(tg clientsTarget, db, script string, extra ...string) []string {
	args := []string{script,
		"--db-driver=mysql",
		"--mysql-host=" + tg.host, "--mysql-port=" + tg.port,
		"--mysql-user=" + tg.user, "--mysql-password=" + tg.pass,
		"--mysql-db=" + db, "--mysql-ssl=off",
		"--tables=" + strconv.Itoa(sbShardedTables), "--table-size=" + strconv.Itoa(sbShardedTableSize),
	}
	return append(args, extra...)
}

// TestShardedSysbench runs sysbench through shardgate on sbtest tables
// hash-sharded on id (2 shards × 2 sub-tables): prepare (CREATE TABLE and
// CREATE INDEX fanned out, multi-row INSERTs without ids split over the
// sub-tables with ids from the proxy's sequences), then oltp_point_select
// and oltp_write_only with and without server-side prepared statements,
// with no error; after each run every row is on the sub-table its key
// names, once.
func TestShardedSysbench(t *testing.T) {
	bin := clientsBinary(t, "sysbench")
	const db = "sb_sharded"
	tables := sbShardedTableList(sbShardedSubTables / 2)
	e := startClientShards(t, db, tables...)
	px := clientsProxyTarget(t, e.p)

	r := clientsMustExec(t, 2*time.Minute, nil, bin, sbShardedArgs(px, db, "oltp_read_write", "prepare")...)
	for i := 1; i <= sbShardedTables; i++ {
		if want := fmt.Sprintf("Inserting %d records into 'sbtest%d'", sbShardedTableSize, i); !strings.Contains(r.stdout, want) {
			t.Fatalf("sysbench prepare through the proxy did not insert the rows:\n%s", r)
		}
	}
	e.checkSbtest(t)
	// A second proxy on the same shards, started once the tables exist,
	// lets transactions write on both (its sequences share the counters
	// with the first's).
	allow := clientsProxyTarget(t, startProxy(t, clientShardsConfig(t, db, e.shards, "    cross_shard_writes: allow\n", tables)))

	var runOn func(t *testing.T, px clientsTarget, script, psMode string, threads int, extra ...string)
	run := func(t *testing.T, script, psMode string, threads int, extra ...string) {
		t.Helper()
		runOn(t, px, script, psMode, threads, extra...)
	}
	runOn = func(t *testing.T, px clientsTarget, script, psMode string, threads int, extra ...string) {
		t.Helper()
		args := sbShardedArgs(px, db, script, append([]string{"--db-ps-mode=" + psMode, "--threads=" + strconv.Itoa(threads), "--time=3",
			"--report-interval=0", "--mysql-ignore-errors=none"}, extra...)...)
		r := clientsExec(t, 2*time.Minute, nil, bin, append(args, "run")...)
		if r.exitCode != 0 || strings.Contains(r.stdout+r.stderr, "FATAL") {
			t.Fatalf("sysbench %s failed:\n%s", script, r)
		}
		s := clientsParseSysbench(t, r)
		if s.queries <= 0 || s.transactions <= 0 || s.ignoredErrors != 0 || s.reconnects != 0 {
			t.Fatalf("sysbench %s: %d transactions, %d queries, %d ignored errors, %d reconnects; want queries and no errors:\n%s",
				script, s.transactions, s.queries, s.ignoredErrors, s.reconnects, r)
		}
		t.Logf("%s --db-ps-mode=%s --threads=%d %s: %d transactions, %s", script, psMode, threads, strings.Join(extra, " "), s.transactions, s.qpsLine)
	}
	for _, psMode := range []string{"disable", "auto"} {
		t.Run("point-select-ps-"+psMode, func(t *testing.T) {
			run(t, "oltp_point_select", psMode, 4)
		})
		// oltp_write_only's transaction writes three random ids, mostly on
		// both shards: cross_shard_writes: refuse refuses it (below). In
		// autocommit mode (--skip_trx) each statement is its own
		// transaction. Its DELETE and INSERT of one id then race between
		// threads (a duplicate key on one server too), so the 4 threads
		// update rows, and one thread deletes and inserts them as well.
		t.Run("write-only-autocommit-ps-"+psMode, func(t *testing.T) {
			run(t, "oltp_write_only", psMode, 4, "--skip_trx=on", "--delete_inserts=0")
			e.checkSbtest(t)
			run(t, "oltp_write_only", psMode, 1, "--skip_trx=on")
			e.checkSbtest(t)
		})
	}
	// oltp_read_only and oltp_read_write with their merges across shards:
	// TestShardedSysbenchMerges (shards_sysbench_test.go).
	// The stock transaction, where the schema allows a transaction to
	// write on several shards (cross_shard_writes: allow).
	for _, psMode := range []string{"disable", "auto"} {
		t.Run("write-only-transactions-allowed-ps-"+psMode, func(t *testing.T) {
			runOn(t, allow, "oltp_write_only", psMode, 1)
			e.checkSbtest(t)
		})
	}
	// The stock transaction under the default cross_shard_writes: refuse:
	// refused with the documented error as soon as it writes to a second
	// shard, before that write runs.
	t.Run("write-only-transactions-refused", func(t *testing.T) {
		args := sbShardedArgs(px, db, "oltp_write_only", "--threads=1", "--time=3", "--report-interval=0", "--mysql-ignore-errors=none", "run")
		r := clientsExec(t, time.Minute, nil, bin, args...)
		if r.exitCode == 0 || !strings.Contains(r.stdout, "error 1235 (shardgate: this transaction already wrote to shard s") ||
			!strings.Contains(r.stdout, "(cross_shard_writes: refuse)") {
			t.Fatalf("oltp_write_only in transactions: want sysbench stopped by error 1235 naming cross_shard_writes:\n%s", r)
		}
		e.checkSbtest(t)
	})
}

// checkSbtest reads every sub-table of the sbtest tables directly from its
// shard and checks that each row is on the sub-table its id hashes to, that
// no id is stored twice and that the tables hold sbShardedTableSize rows.
func (e *clientShards) checkSbtest(t *testing.T) {
	t.Helper()
	e.checkSbtestLayout(t, sbShardedSubTables/2)
}

// checkSbtestLayout is checkSbtest for perShard sub-tables on each shard.
func (e *clientShards) checkSbtestLayout(t *testing.T, perShard int) {
	t.Helper()
	subTables := perShard * len(e.direct)
	for n := 1; n <= sbShardedTables; n++ {
		seen := map[int64]string{}
		for sub := 0; sub < subTables; sub++ {
			name := fmt.Sprintf("sbtest%d_%04d", n, sub)
			rows, err := e.direct[sub/perShard].Query("SELECT id FROM " + name)
			if err != nil {
				t.Fatalf("%s on s%d: %v", name, sub/perShard, err)
			}
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					t.Fatal(err)
				}
				if want := subTableOf(t, id, subTables); want != sub {
					t.Errorf("id %d is on %s, its key names sub-table %d", id, name, want)
				}
				if other, dup := seen[id]; dup {
					t.Errorf("id %d is on %s and on %s", id, other, name)
				}
				seen[id] = name
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			rows.Close()
		}
		// sysbench picks ids in 1..table-size: prepare's ids came from the
		// sequence in one run, and DELETE+INSERT keeps them.
		for id := int64(1); id <= sbShardedTableSize; id++ {
			if _, ok := seen[id]; !ok {
				t.Errorf("sbtest%d has no row with id %d", n, id)
				break
			}
		}
		if len(seen) != sbShardedTableSize {
			t.Errorf("sbtest%d holds %d rows, want %d with ids 1..%d", n, len(seen), sbShardedTableSize, sbShardedTableSize)
		}
	}
}

// ---------------------------------------------------------------------------
// PyMySQL

// clientsShardedPyScript runs PyMySQL's everyday calls on a sharded table
// and prints what it gets, rows of reads without a key sorted (their order
// across sub-tables is not one server's). argv: host port user password
// database mode; mode "compare" prints what must equal a reference
// server's output, "refusal" shows what a transaction writing to two shards
// gets through shardgate.
const clientsShardedPyScript = `
import sys, datetime, decimal
import pymysql

host, port, user, password, db, mode = sys.argv[1:7]
kw = dict(host=host, port=int(port), user=user, password=password, database=db,
          charset="utf8mb4", ssl_disabled=True)

def p(*a):
    print(*a, flush=True)

if mode == "refusal":
    # PyMySQL's default: autocommit off, so writes are a transaction.
    conn = pymysql.connect(**kw)
    cur = conn.cursor()
    cur.execute("SELECT @@autocommit")
    p("autocommit", cur.fetchone())
    cur.execute("INSERT INTO items (id, name) VALUES (%s, %s)", (1000, "a"))
    try:
        cur.executemany("INSERT INTO items (id, name) VALUES (%s, %s)", [(1001 + i, "b") for i in range(8)])
        p("no error")
    except pymysql.MySQLError as e:
        p("error", e.args[0], e.args[1])
    conn.rollback()
    cur.execute("SELECT id FROM items WHERE id BETWEEN 1000 AND 1008")
    p("after rollback", cur.fetchall())
    conn.close()
    sys.exit(0)

conn = pymysql.connect(autocommit=True, **kw)
cur = conn.cursor()
cur.execute("SELECT DATABASE(), @@autocommit")
p("database", cur.fetchone())

# DDL through the proxy: fanned out to the sub-tables.
cur.execute("""CREATE TABLE items (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(64) NOT NULL,
  qty INT NULL,
  price DECIMAL(10,2) NULL,
  born DATE NULL,
  seen DATETIME(3) NULL,
  ratio DOUBLE NULL,
  data BLOB NULL,
  KEY name_idx (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4""")
cur.execute("CREATE TABLE tags (name VARCHAR(32) NOT NULL PRIMARY KEY, uses INT NOT NULL DEFAULT 0) DEFAULT CHARSET=utf8mb4")
cur.execute("SHOW TABLES")
p("tables", cur.fetchall())

def rows(sql, args=None):
    cur.execute(sql, args)
    return sorted(cur.fetchall(), key=repr)

# Parameters are interpolated by PyMySQL (text protocol): keys of every
# sub-table, typed values, quotes and unicode.
cur.execute("INSERT INTO items (name, qty, price, born, seen, ratio, data) VALUES (%s, %s, %s, %s, %s, %s, %s)",
            ("first", 1, decimal.Decimal("9.99"), datetime.date(2024, 2, 29),
             datetime.datetime(2024, 1, 2, 3, 4, 5, 678000), 0.5, b"\x00\xff'\\"))
p("insert rowcount", cur.rowcount, "lastrowid", cur.lastrowid, "insert_id", conn.insert_id())

# executemany: one multi-row INSERT, its rows on every sub-table.
many = [("n%d" % i, i, decimal.Decimal(i) / 4, None, None, i / 3.0, None) for i in range(2, 22)]
many.append(("d'or \"quoted\" \\ back", 99, None, None, None, None, None))
many.append(("héllo ✓ 😀", 7, None, None, None, None, None))
n = cur.executemany("INSERT INTO items (name, qty, price, born, seen, ratio, data) VALUES (%s, %s, %s, %s, %s, %s, %s)", many)
p("executemany", n, "rowcount", cur.rowcount, "lastrowid", cur.lastrowid)
cur.execute("SELECT LAST_INSERT_ID()")
p("last_insert_id", cur.fetchone())
n = cur.executemany("INSERT INTO tags (name, uses) VALUES (%s, %s) ON DUPLICATE KEY UPDATE uses = uses + VALUES(uses)",
                    [("red", 1), ("Green", 2), ("blue", 3), ("RED", 4), ("green ", 5)])
p("tags executemany", n, "rowcount", cur.rowcount)

# SELECT by key (one sub-table) and without (every sub-table).
for key in (1, 2, 7, 13, 23, "5", 1000):
    cur.execute("SELECT * FROM items WHERE id = %s", (key,))
    p("by key", key, cur.rowcount, cur.fetchall())
p("description", cur.description)
p("in", rows("SELECT id, name FROM items WHERE id IN %s", ((3, 4, 5, 6, 20),)))
p("all", rows("SELECT id, name, qty, price, ratio FROM items"))
p("description", cur.description)
p("where", rows("SELECT name FROM items WHERE qty > %s", (10,)))
cur.execute("SELECT name, uses FROM tags WHERE name = %s", ("Red",))
p("tag", cur.fetchall(), cur.description)
p("tags", rows("SELECT * FROM tags"))

# UPDATE and DELETE by key and without.
p("update by key", cur.execute("UPDATE items SET qty = qty + 1, seen = %s WHERE id = %s", (datetime.datetime(2025, 5, 6), 3)))
p("update all", cur.execute("UPDATE items SET price = price * 2 WHERE price IS NOT NULL"))
p("update none", cur.execute("UPDATE items SET qty = 0 WHERE id = %s", (12345,)))
p("delete by key", cur.execute("DELETE FROM items WHERE id = %s", (4,)))
p("delete by keys", cur.execute("DELETE FROM items WHERE id IN (5, 6, 7, 8)"))
p("delete other", cur.execute("DELETE FROM items WHERE qty > %s", (18,)))
p("after", rows("SELECT id, qty, price, seen FROM items"))
cur.execute("SELECT * FROM items WHERE id = 3")
p("row 3", cur.fetchall())

# Errors keep the connection usable.
for q, args in (("INSERT INTO items (id, name) VALUES (%s, %s)", (1, "dup")),
                ("SELECT nope FROM items WHERE id = 1", None)):
    try:
        cur.execute(q, args)
        p("no error for", q)
    except pymysql.MySQLError as e:
        p("error", type(e).__name__, e.args[0])

# PyMySQL's default (autocommit off): writes on one shard, committed.
conn2 = pymysql.connect(**kw)
c2 = conn2.cursor()
c2.execute("UPDATE items SET name = %s WHERE id = %s", ("renamed", 2))
c2.execute("SELECT name FROM items WHERE id = %s", (2,))
p("in transaction", c2.fetchall())
conn2.commit()
c2.execute("INSERT INTO items (name) VALUES (%s)", ("in a transaction",))
p("transaction lastrowid", c2.lastrowid)
conn2.rollback()
c2.execute("SELECT id FROM items WHERE name = 'in a transaction'")
p("rolled back", c2.fetchall())
conn2.commit()
conn2.close()

cur.execute("DROP TABLE items, tags")
cur.execute("SHOW TABLES")
p("tables", cur.fetchall())
conn.close()
p("done")
`

// TestShardedPyMySQL runs PyMySQL on a sharded schema through shardgate
// (tables created through it) and on a reference server holding the same
// tables unsharded: the outputs, cursor.description included, are equal.
// With PyMySQL's default autocommit off, an executemany whose rows land on
// two shards is refused (cross_shard_writes) and the transaction rolls
// back.
func TestShardedPyMySQL(t *testing.T) {
	py := clientsPython(t)
	const db = "py_sharded"
	e := startClientShards(t, db,
		"{name: items, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: 2}",
		"{name: tags, shard_key: name, rule: hash, shards: [s0, s1], sub_tables: 2}")
	script := filepath.Join(t.TempDir(), "pymysql_sharded.py")
	if err := os.WriteFile(script, []byte(clientsShardedPyScript), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(tg clientsTarget, mode string) clientsResult {
		t.Helper()
		r := clientsExec(t, time.Minute, []string{"PYTHONIOENCODING=utf-8", "PYTHONDONTWRITEBYTECODE=1"},
			py, script, tg.host, tg.port, tg.user, tg.pass, db, mode)
		if r.exitCode != 0 {
			t.Fatalf("PyMySQL script (%s) against %s failed:\n%s", mode, tg.name, r)
		}
		return r
	}
	ref := run(clientsDirectTarget(e.ref), "compare")
	got := run(clientsProxyTarget(t, e.p), "compare")
	if !strings.HasSuffix(ref.stdout, "done\n") {
		t.Fatalf("reference run incomplete:\n%s", ref)
	}
	if got.stdout != ref.stdout {
		t.Fatalf("PyMySQL through shardgate differs from the reference server:\n%s\n=== through shardgate ===\n%s\n=== reference ===\n%s",
			clientsLineDiff(ref.stdout, got.stdout), got, ref)
	}
	t.Logf("PyMySQL output, equal on both:\n%s", got.stdout)

	mustExec(t, openDB(t, proxyDSN(e.p, appUser, appPass, db, "")), "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(10))")
	r := run(clientsProxyTarget(t, e.p), "refusal")
	want := "autocommit (0,)\nerror 1235 shardgate: this transaction already wrote to shard s"
	if !strings.HasPrefix(r.stdout, want) || !strings.Contains(r.stdout, "(cross_shard_writes: refuse)") || !strings.HasSuffix(r.stdout, "after rollback ()\n") {
		t.Fatalf("executemany across shards with autocommit off: want 1235 naming cross_shard_writes, then nothing written:\n%s", r)
	}
}

// ---------------------------------------------------------------------------
// mariadb command line client

// clientsShardedCLIScript creates and fills the sharded tables: a file
// the client reads with --comments, so comment-only chunks are sent too.
const clientsShardedCLIScript = `-- The sharded tables, created through shardgate.
/* customers: hash on id; orders: like customers, on customer_id;
   products: a reference table. */
CREATE TABLE customers (
  id      INT UNSIGNED NOT NULL PRIMARY KEY,  -- the shard key
  name    VARCHAR(100) NOT NULL,
  country CHAR(2)      NOT NULL,
  born    DATE         NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TABLE orders (
  id          INT UNSIGNED NOT NULL,
  customer_id INT UNSIGNED NOT NULL,
  amount      DECIMAL(10,2) NOT NULL,
  PRIMARY KEY (customer_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
# a reference table
CREATE TABLE products (id INT PRIMARY KEY, name VARCHAR(50)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- rows on every sub-table
INSERT INTO customers VALUES (1, 'Ada', 'GB', '1815-12-10'), (2, 'Grace', 'US', NULL), (3, 'Edsger', 'NL', '1930-05-11'),
  (4, 'Barbara', 'US', NULL), (5, 'Karen', 'GB', NULL), (6, 'Niklaus', 'CH', '1934-02-15'), (7, 'Frances', 'US', NULL);
INSERT INTO orders VALUES (1, 1, 9.50), (2, 1, 20.00), (1, 3, 7.25), (1, 6, 100.00), (2, 6, 0.99);
INSERT INTO products VALUES (1, 'keyboard'), (2, 'mouse');
/* a comment between statements */ SELECT name FROM customers WHERE id = 3;
SELECT o.id, o.amount FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.id = 1 ORDER BY o.id; -- one shard
UPDATE customers SET country = 'SE' WHERE id = 5;
SELECT id, name, country FROM customers WHERE id = 5;
SHOW TABLES;
-- the end: a chunk of comments only, which the client sends as a statement
/* with --comments */
`

// cliRun runs the mariadb client against tg in database db with args,
// sending stdin when it is not empty.
func cliRun(t *testing.T, bin string, tg clientsTarget, db, stdin string, args ...string) clientsResult {
	t.Helper()
	all := append([]string{"--no-defaults", "-h", tg.host, "-P", tg.port, "-u", tg.user, "-p" + tg.pass,
		"--protocol=TCP", "--connect-timeout=10", "--default-character-set=utf8mb4", "--skip-ssl"}, args...)
	all = append(all, db)
	if stdin == "" {
		return clientsExec(t, 30*time.Second, []string{"LC_ALL=C.UTF-8"}, bin, all...)
	}
	f := filepath.Join(t.TempDir(), "script.sql")
	if err := os.WriteFile(f, []byte(stdin), 0o644); err != nil {
		t.Fatal(err)
	}
	return clientsExec(t, 30*time.Second, []string{"LC_ALL=C.UTF-8"}, "sh", append([]string{"-c", `f="$1"; shift; exec "$@" < "$f"`, "sh", f, bin}, all...)...)
}

// TestShardedMariaDBCLI runs the mariadb client through shardgate on a
// sharded schema and directly on a reference server: a script file with
// comments creating the tables (through shardgate: fanned out) and
// writing rows, then batch-mode statements; stdout, stderr and the exit
// code are the same.
func TestShardedMariaDBCLI(t *testing.T) {
	bin := clientsBinary(t, "mariadb")
	const db = "cli_sharded"
	e := startClientShards(t, db,
		"{name: customers, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: 2}",
		"{name: orders, shard_key: customer_id, like: customers}",
		"{name: products, type: reference}")
	px, ref := clientsProxyTarget(t, e.p), clientsDirectTarget(e.ref)
	same := func(t *testing.T, stdin string, args ...string) clientsResult {
		t.Helper()
		want := cliRun(t, bin, ref, db, stdin, args...)
		got := cliRun(t, bin, px, db, stdin, args...)
		if want.exitCode == -1 || got.exitCode != want.exitCode || got.stdout != want.stdout || got.stderr != want.stderr {
			t.Fatalf("mariadb through shardgate and on the reference server differ:\n%s\n=== through shardgate ===\n%s\n=== reference ===\n%s",
				clientsLineDiff(want.stdout, got.stdout), got, want)
		}
		return got
	}

	r := same(t, clientsShardedCLIScript, "--comments", "--batch")
	if want := "name\nEdsger\n"; !strings.HasPrefix(r.stdout, want) || !strings.Contains(r.stdout, "Tables_in_"+db+"\ncustomers\norders\nproducts\n") {
		t.Fatalf("the script's output is not as expected:\n%s", r)
	}
	// The sub-tables were made through shardgate, each on its shard.
	for i, d := range e.direct {
		want := fmt.Sprintf("customers_%04d,customers_%04d,orders_%04d,orders_%04d,products", 2*i, 2*i+1, 2*i, 2*i+1)
		if got := queryString(t, d, "SELECT GROUP_CONCAT(table_name ORDER BY table_name) FROM information_schema.tables WHERE table_schema = '"+db+"'"); got != want {
			t.Fatalf("tables on s%d: %s, want %s", i, got, want)
		}
	}

	for _, sql := range []string{
		"SHOW TABLES",
		"SHOW FULL TABLES LIKE 'c%'",
		"DESCRIBE customers",
		"DESC orders",
		"SHOW COLUMNS FROM customers LIKE 'b%'",
		"SHOW CREATE TABLE customers",
		// (SHOW INDEX is left out: its Cardinality is sub-table 0's
		// estimate, see docs/sharding.md, Metadata.)
		"SELECT * FROM customers WHERE id = 6",
		"SELECT * FROM customers WHERE id IN (2, 4)",
		"SELECT c.name, o.amount FROM customers c JOIN orders o ON o.customer_id = c.id WHERE c.id = 6 ORDER BY o.id",
		"SELECT * FROM customers WHERE id = 6; SELECT name FROM products WHERE id = 2",
		"INSERT INTO customers VALUES (8, 'Tony', 'GB', NULL); SELECT * FROM customers WHERE id = 8",
		"INSERT INTO customers VALUES (9, 'Leslie', 'US', NULL), (10, 'Robin', 'US', NULL), (11, 'Dana', 'US', NULL)",
		"UPDATE customers SET born = '1937-01-11' WHERE id = 8; SELECT born FROM customers WHERE id = 8",
		"UPDATE customers SET country = 'XX' WHERE id = 999",
		"INSERT INTO customers VALUES (1, 'again', 'GB', NULL)",
		"SELECT nope FROM customers WHERE id = 1",
		"DELETE FROM orders WHERE customer_id = 6 AND id = 2; SELECT id FROM orders WHERE customer_id = 6",
	} {
		t.Run(sql, func(t *testing.T) {
			same(t, "", "-B", "-e", sql)
			same(t, "", "--table", "-e", sql)
		})
	}
	// A syntax error is the server's: 1064, its message (the CLI's whole
	// output the same).
	t.Run("syntax error", func(t *testing.T) {
		want := cliRun(t, bin, ref, db, "", "-B", "-e", "SELEC 1")
		got := cliRun(t, bin, px, db, "", "-B", "-e", "SELEC 1")
		if !strings.Contains(want.stderr, "\nERROR 1064 (42000) at line 1: You have an error in your SQL syntax") || got.exitCode != want.exitCode ||
			got.stderr != want.stderr || got.stdout != want.stdout {
			t.Fatalf("syntax error:\n=== through shardgate ===\n%s\n=== reference ===\n%s", got, want)
		}
	})
	// Reads over several sub-tables come shard by shard: the same rows in
	// another order.
	t.Run("scatter", func(t *testing.T) {
		const sql = "SELECT id, name FROM customers WHERE country = 'US'"
		want := cliRun(t, bin, ref, db, "", "-B", "-N", "-e", sql)
		got := cliRun(t, bin, px, db, "", "-B", "-N", "-e", sql)
		sorted := func(s string) string {
			l := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
			slices.Sort(l)
			return strings.Join(l, "\n")
		}
		if got.exitCode != 0 || sorted(got.stdout) != sorted(want.stdout) {
			t.Fatalf("scatter read differs:\n=== through shardgate ===\n%s\n=== reference ===\n%s", got, want)
		}
	})
}

// ---------------------------------------------------------------------------
// Setting a sharded schema up through shardgate

// TestShardedSchemaCreatedFromNothing: with the schema's database on no
// shard yet, a user whose default_database is the schema logs in without
// a database (it does not exist) and creates everything through
// shardgate: CREATE DATABASE on every shard, then the tables fanned out.
// A client naming the missing database is refused as by the server.
func TestShardedSchemaCreatedFromNothing(t *testing.T) {
	const db = "from_nothing"
	e := startClientShards(t, db, "{name: t, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: 2}")
	for _, s := range e.shards {
		s.Exec(t, "DROP DATABASE "+db)
	}
	if err := openDB(t, proxyDSN(e.p, appUser, appPass, db, "")).Ping(); mysqlErrCode(err) != 1049 {
		t.Fatalf("login naming the missing database: %v, want 1049", err)
	}
	conn := oneConn(t, openDB(t, proxyDSN(e.p, appUser, appPass, "", "")))
	if got := queryString(t, conn, "SELECT DATABASE()"); got != "" {
		t.Fatalf("DATABASE() = %q while the default database does not exist, want NULL", got)
	}
	mustExec(t, conn, "CREATE DATABASE "+db, "USE "+db, "CREATE TABLE t (id INT PRIMARY KEY, v INT)",
		"INSERT INTO t VALUES (1, 1), (2, 2), (3, 3), (4, 4)")
	for i, s := range e.shards {
		d := openDB(t, s.DSN(""))
		want := fmt.Sprintf("t_%04d,t_%04d", 2*i, 2*i+1)
		if got := queryString(t, d, "SELECT GROUP_CONCAT(table_name ORDER BY table_name) FROM information_schema.tables WHERE table_schema = '"+db+"'"); got != want {
			t.Fatalf("tables on s%d: %q, want %s", i, got, want)
		}
	}
	// The next login selects the default database again.
	if got := queryString(t, openDB(t, proxyDSN(e.p, appUser, appPass, "", "")), "SELECT DATABASE()"); got != db {
		t.Fatalf("DATABASE() = %q once the default database exists, want %s", got, db)
	}
}
