package proxy_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// dumpRun runs mariadb-dump against tg, dumping database db with args.
func dumpRun(t *testing.T, bin string, tg clientsTarget, db string, args ...string) clientsResult {
	t.Helper()
	all := append([]string{"--no-defaults", "-h", tg.host, "-P", tg.port, "-u", tg.user, "-p" + tg.pass,
		"--protocol=TCP", "--default-character-set=utf8mb4", "--skip-ssl"}, args...)
	return clientsExec(t, 60*time.Second, []string{"LC_ALL=C.UTF-8"}, bin, append(all, db)...)
}

// dumpSchema is the sharded schema the dump tests fill: through shardgate
// its CREATEs fan out to the sub-tables.
const dumpSchema = `
CREATE TABLE customers (id INT NOT NULL PRIMARY KEY, name VARCHAR(40) NOT NULL, country CHAR(2), born DATE NULL) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
CREATE TABLE orders (customer_id INT NOT NULL, id INT NOT NULL, amount DECIMAL(10,2) NOT NULL, note TEXT, PRIMARY KEY (customer_id, id)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
CREATE TABLE products (id INT NOT NULL PRIMARY KEY, name VARCHAR(40) NOT NULL) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
`

// dumpRows is the rows of dumpSchema's tables, as INSERTs: quotes,
// backslashes, NULLs and UTF-8 among them.
func dumpRows() string {
	var b strings.Builder
	names := []string{"Ada", "O'Brien", `back\slash`, "Zoë", "日本", "tab\there"}
	b.WriteString("INSERT INTO customers VALUES ")
	for i := 1; i <= 300; i++ {
		if i > 1 {
			b.WriteString(", ")
		}
		born := "NULL"
		if i%3 != 0 {
			born = fmt.Sprintf("'19%02d-%02d-%02d'", 40+i%60, 1+i%12, 1+i%28)
		}
		name := strings.NewReplacer(`\`, `\\`, "'", `\'`, "\t", `\t`).Replace(fmt.Sprintf("%s %d", names[i%len(names)], i))
		fmt.Fprintf(&b, "(%d, '%s', '%s', %s)", i, name, []string{"GB", "US", "FI"}[i%3], born)
	}
	b.WriteString(";\nINSERT INTO orders VALUES ")
	for i := 1; i <= 900; i++ {
		if i > 1 {
			b.WriteString(", ")
		}
		note := "NULL"
		if i%4 == 0 {
			note = fmt.Sprintf("'order %d, ''urgent'''", i)
		}
		fmt.Fprintf(&b, "(%d, %d, %d.%02d, %s)", 1+i%300, i, i*7%1000, i%100, note)
	}
	b.WriteString(";\nINSERT INTO products VALUES (1, 'pen'), (2, 'paper'), (3, 'ink');\n")
	return b.String()
}

// TestShardedMariaDBDump backs a sharded schema up with mariadb-dump
// through shardgate: the dump equals that of one server holding the same
// rows, byte for byte (--order-by-primary: each table's rows merged in
// key order).
func TestShardedMariaDBDump(t *testing.T) {
	cli, dump := clientsBinary(t, "mariadb"), clientsBinary(t, "mariadb-dump")
	const db = "dump_sharded"
	e := startClientShards(t, db,
		"{name: customers, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: 2}",
		"{name: orders, shard_key: customer_id, like: customers}",
		"{name: products, type: reference}")
	px, ref := clientsProxyTarget(t, e.p), clientsDirectTarget(e.ref)
	for _, tg := range []clientsTarget{ref, px} {
		if r := cliRun(t, cli, tg, db, dumpSchema+dumpRows()); r.exitCode != 0 {
			t.Fatalf("loading the rows through %s: %s", tg.name, r)
		}
	}
	// --single-transaction reads in a transaction (its savepoint set and
	// rolled back to per table); the default mode locks the tables (LOCK
	// TABLES … READ LOCAL) instead.
	for _, mode := range [][]string{{"--single-transaction"}, {"--extended-insert=0", "--hex-blob", "--complete-insert"}} {
		t.Run(strings.Join(mode, " "), func(t *testing.T) {
			args := append([]string{"--order-by-primary", "--skip-dump-date", "--skip-triggers"}, mode...)
			want := dumpRun(t, dump, ref, db, args...)
			got := dumpRun(t, dump, px, db, args...)
			if want.exitCode != 0 || got.exitCode != 0 || got.stdout != want.stdout {
				t.Fatalf("mariadb-dump through shardgate and of the reference server differ:\n%s\n=== through shardgate ===\n%s\n=== reference ===\n%s",
					clientsLineDiff(want.stdout, got.stdout), got.stderr, want.stderr)
			}
			if n := strings.Count(got.stdout, "(300,'"); n != 1 {
				t.Fatalf("the dump has customer 300 %d times, want once", n)
			}
		})
	}
	// The reference's dump loaded through shardgate (its DROP and CREATE
	// TABLE fan out, its INSERTs split by shard) gives the schema back:
	// dumped through shardgate again, it is the same dump.
	t.Run("restore", func(t *testing.T) {
		// (The dump locks each table for writing while it loads it.)
		args := []string{"--order-by-primary", "--skip-dump-date", "--no-tablespaces", "--skip-triggers"}
		want := dumpRun(t, dump, ref, db, args...)
		if !strings.Contains(want.stdout, "LOCK TABLES `customers` WRITE;") {
			t.Fatalf("the reference's dump does not lock its tables:\n%s", want.stdout)
		}
		if want.exitCode != 0 {
			t.Fatalf("dump of the reference: %s", want)
		}
		mustExec(t, e.direct[0], "DELETE FROM customers_0000")
		if r := cliRun(t, cli, px, db, want.stdout); r.exitCode != 0 {
			t.Fatalf("loading the dump through shardgate: %s", r)
		}
		got := dumpRun(t, dump, px, db, args...)
		if got.exitCode != 0 || got.stdout != want.stdout {
			t.Fatalf("the dump loaded through shardgate and dumped again differs:\n%s\n=== through shardgate ===\n%s",
				clientsLineDiff(want.stdout, got.stdout), got.stderr)
		}
	})
}
