package proxy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/testenv"
)

// outsideEnv is a proxy over two shards serving two sharded schemas, oq
// (orders hash-sharded by id over s0 and s1, 2 sub-tables each; items
// like orders by order_id; city a reference table; plain unlisted) and
// oq2 (contacts, sharded by id), beside oqo, an unsharded database on
// the default cluster s0; and a reference server holding all of them as
// one server would. The proxy's user reaches every database.
func outsideEnv(t *testing.T) (ref, got func(db string) *difftest.Client, p *proxy.Proxy, s0, s1 *testenv.Server) {
	t.Helper()
	srvs := testenv.StartN(t, 2, testenv.Options{})
	s0, s1, rs := testenv.Shared(t), srvs[0], srvs[1]
	for _, s := range []*testenv.Server{s0, s1, rs} {
		s.Exec(t, "DROP DATABASE IF EXISTS oq", "CREATE DATABASE oq", "DROP DATABASE IF EXISTS oq2", "CREATE DATABASE oq2")
	}
	for _, s := range []*testenv.Server{s0, rs} {
		s.Exec(t, "DROP DATABASE IF EXISTS oqo", "CREATE DATABASE oqo", "CREATE TABLE oqo.t (id INT PRIMARY KEY, w VARCHAR(20))",
			"INSERT INTO oqo.t VALUES (3, 'three'), (4, 'four')")
	}
	orders := "(id INT NOT NULL PRIMARY KEY, v VARCHAR(20), KEY kv (v))"
	items := "(order_id INT NOT NULL, n INT NOT NULL, PRIMARY KEY (order_id, n))"
	contacts := "(id INT NOT NULL PRIMARY KEY, name VARCHAR(20))"
	rs.Exec(t, "CREATE TABLE oq.orders "+orders, "CREATE TABLE oq.items "+items, "CREATE TABLE oq.city (id INT PRIMARY KEY, name VARCHAR(20))",
		"CREATE TABLE oq.plain (id INT PRIMARY KEY)", "CREATE TABLE oq2.contacts "+contacts)
	for i, s := range []*testenv.Server{s0, s0, s1, s1} {
		s.Exec(t, fmt.Sprintf("CREATE TABLE oq.orders_%04d %s", i, orders), fmt.Sprintf("CREATE TABLE oq.items_%04d %s", i, items),
			fmt.Sprintf("CREATE TABLE oq2.contacts_%04d %s", i, contacts))
	}
	for _, s := range []*testenv.Server{s0, s1} {
		s.Exec(t, "CREATE TABLE oq.city (id INT PRIMARY KEY, name VARCHAR(20))")
	}
	s0.Exec(t, "CREATE TABLE oq.plain (id INT PRIMARY KEY)")
	cfg := parseConfig(t, fmt.Sprintf(`
listeners: [{address: "127.0.0.1:0"}]
users:
  - {name: %s, password_hash: "%s", default_database: oq}
clusters:
  - {name: s0, user: %s, password: %s, pool: {max_open: 32}, primary: {address: "%s"}}
  - {name: s1, user: %s, password: %s, pool: {max_open: 32}, primary: {address: "%s"}}
schemas:
  - name: oq
    default_cluster: s0
    tables:
      - {name: orders, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: 2}
      - {name: items, shard_key: order_id, like: orders}
      - {name: city, type: reference}
  - name: oq2
    default_cluster: s0
    tables:
      - {name: contacts, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: 2}
`, appUser, hashOf(appPass), testenv.User, testenv.Password, s0.Addr, testenv.User, testenv.Password, s1.Addr), "outside.yaml")
	p = startProxy(t, cfg)
	dial := func(tgt difftest.Target) *difftest.Client {
		c := metaDial(t, tgt)
		return c
	}
	ref = func(db string) *difftest.Client { return dial(difftest.ServerTarget("reference", rs, db)) }
	got = func(db string) *difftest.Client {
		return dial(difftest.Target{Name: "shardgate", Addr: p.Addrs()[0], User: appUser, Password: appPass, Database: db})
	}
	rc, pc := ref("oq"), got("oq")
	for _, q := range []string{
		"INSERT INTO orders (id, v) VALUES (1, 'one'), (2, 'two'), (3, 'three'), (4, 'four'), (5, 'five'), (6, 'six')",
		"INSERT INTO items (order_id, n) VALUES (1, 10), (3, 30), (3, 31), (5, 50)",
		"INSERT INTO city VALUES (1, 'Oslo'), (2, 'Lima')", "INSERT INTO plain VALUES (7)",
	} {
		metaQuery(t, rc, q)
		metaQuery(t, pc, q)
	}
	q := "INSERT INTO contacts VALUES (1, 'Ann'), (2, 'Bob'), (3, 'Cy')"
	metaQuery(t, ref("oq2"), q)
	metaQuery(t, got("oq2"), q)
	return ref, got, p, s0, s1
}

// TestShardedSchemaFromAnotherDatabase: a session whose database is not
// the sharded schema (an unsharded database, none, another sharded
// schema) that names the schema's tables qualified gets the logical
// answer, as one server holding every row gives it: never a sub-table,
// never 1146.
func TestShardedSchemaFromAnotherDatabase(t *testing.T) {
	ref, got, _, s0, s1 := outsideEnv(t)
	ordered := func(q string) bool { return strings.Contains(q, "ORDER BY") || strings.Contains(q, "WHERE id = ") }
	reads := []string{
		"SELECT * FROM oq.orders WHERE id = 3",
		"SELECT id, v FROM oq.orders WHERE id IN (2, 5) ORDER BY id",
		"SELECT id, v FROM oq.orders ORDER BY id DESC LIMIT 4",
		"SELECT COUNT(*), MAX(v) FROM oq.orders",
		"SELECT o.id, i.n FROM oq.orders o JOIN oq.items i ON i.order_id = o.id WHERE o.id = 3 ORDER BY i.n",
		"SELECT o.id, i.n FROM oq.orders o JOIN oq.items i ON i.order_id = o.id ORDER BY o.id, i.n",
		"SELECT `oq`.orders.v FROM `oq`.`orders` WHERE `oq`.orders.id = 5",
		"SELECT * FROM oq.city ORDER BY id", "SELECT * FROM oq.plain",
		"SELECT c.name, o.v FROM oq.orders o JOIN oq.city c ON c.id = o.id WHERE o.id = 2",
		"SHOW TABLES FROM oq", "SHOW FULL TABLES IN oq LIKE 'o%'", "SHOW TABLE STATUS FROM oq LIKE 'zz'",
		"SHOW COLUMNS FROM orders FROM oq", "SHOW FULL COLUMNS FROM oq.orders", "SHOW INDEX FROM orders IN oq",
		"DESCRIBE oq.orders", "DESC oq.items n", "SHOW CREATE TABLE oq.orders", "SHOW COLUMNS FROM plain FROM oq",
		"SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'oq' ORDER BY TABLE_NAME",
		"SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'oq' AND TABLE_NAME = 'orders' ORDER BY ORDINAL_POSITION",
		"SELECT TABLE_NAME, INDEX_NAME FROM information_schema.STATISTICS WHERE table_schema = 'oq' ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX",
	}
	for _, db := range []string{"oqo", "", "oq2", "oq"} {
		rc, pc := ref(db), got(db)
		qs := reads
		if db == "oq" {
			qs = []string{"SELECT * FROM oq2.contacts WHERE id = 2", "SELECT name FROM oq2.contacts ORDER BY name DESC",
				"SHOW TABLES FROM oq2", "DESCRIBE oq2.contacts",
				"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'oq2' ORDER BY TABLE_NAME"}
		}
		for _, q := range qs {
			ra, err := rc.Query(q)
			if err != nil {
				t.Fatal(err)
			}
			ga, err := pc.Query(q)
			if err != nil {
				t.Fatal(err)
			}
			maskColumns(&ra, "Cardinality", "Create_time", "Update_time", "Data_length", "Index_length", "Avg_row_length", "Max_data_length", "Data_free")
			maskColumns(&ga, "Cardinality", "Create_time", "Update_time", "Data_length", "Index_length", "Avg_row_length", "Max_data_length", "Data_free")
			if d := difftest.Diff(ra, ga, ordered(q) || strings.HasPrefix(q, "SHOW") || strings.HasPrefix(q, "DESC")); d != "" {
				t.Errorf("database %q: %s:\n%s", db, q, d)
			}
		}
	}

	// Writes from another database: rows land on the sub-table their key
	// picks, and the answers are one server's.
	rc, pc := ref("oqo"), got("oqo")
	for _, q := range []string{
		"INSERT INTO oq.orders (id, v) VALUES (100, 'hundred')",
		"INSERT INTO oq.orders (id, v) VALUES (101, 'a'), (102, 'b'), (103, 'c')",
		"UPDATE oq.orders SET v = 'HUNDRED' WHERE id = 100",
		"UPDATE oq.orders SET v = CONCAT(v, '!') WHERE id > 100",
		"DELETE FROM oq.orders WHERE id = 103",
		"REPLACE INTO oq.orders (id, v) VALUES (102, 'bb')",
		"SELECT * FROM t WHERE id = 3", // the session's own database, as before
	} {
		ra, ga := metaQuery(t, rc, q), metaQuery(t, pc, q)
		if d := difftest.Diff(ra, ga, true); d != "" {
			t.Errorf("database oqo: %s:\n%s", q, d)
		}
	}
	direct := []*testenv.Server{s0, s0, s1, s1}
	for id, v := range map[int64]string{100: "HUNDRED", 101: "a!", 102: "bb"} {
		i := subTableOf(t, id, 4)
		d := openDB(t, direct[i].DSN("oq"))
		if got := queryString(t, d, fmt.Sprintf("SELECT GROUP_CONCAT(v) FROM orders_%04d WHERE id = %d", i, id)); got != v {
			t.Errorf("row %d on orders_%04d: %q, want v = %q", id, i, got, v)
		}
	}

	// Tables of two sharded schemas, or of a sharded schema and another
	// database, in one statement: 1235 naming both.
	for _, db := range []string{"oqo", "oq"} {
		pc := got(db)
		for _, tc := range []struct{ q, a, b string }{
			{"SELECT * FROM oq.orders o JOIN oq2.contacts c ON c.id = o.id", "oq.orders", "oq2.contacts"},
			{"SELECT * FROM oq2.contacts c WHERE c.id IN (SELECT id FROM oq.orders)", "oq2.contacts", "oq.orders"},
			{"SELECT * FROM oq.orders o JOIN oqo.t ON t.id = o.id WHERE o.id = 3", "orders", "oqo.t"},
		} {
			a, err := pc.Query(tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if a.Err == nil || a.Err.Code != mysql.ERNotSupportedYet || !strings.Contains(a.Err.Message, tc.a) || !strings.Contains(a.Err.Message, tc.b) {
				t.Errorf("database %q: %s: %+v, want 1235 naming %s and %s", db, tc.q, a.Err, tc.a, tc.b)
			}
		}
	}
}

// TestShardedSchemaFromAnotherDatabaseSession: around a statement on a
// sharded schema that is not its database, a session keeps what one
// server gives: the statement's diagnostics (SHOW WARNINGS,
// @@warning_count, FOUND_ROWS()), its own database's tables and commands,
// prepared statements on the schema; what it cannot do exactly is
// refused with 1235.
func TestShardedSchemaFromAnotherDatabaseSession(t *testing.T) {
	ref, got, _, _, _ := outsideEnv(t)
	rc, pc := ref("oqo"), got("oqo")
	same := func(q string) {
		t.Helper()
		ra, err := rc.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		ga, err := pc.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		if d := difftest.Diff(ra, ga, true); d != "" {
			t.Errorf("%s:\n%s", q, d)
		}
	}
	for _, q := range []string{
		"INSERT IGNORE INTO oq.orders (id, v) VALUES (3, 'dup')", "SHOW WARNINGS", "SELECT @@warning_count",
		"INSERT IGNORE INTO oq.orders (id, v) VALUES (3, 'dup')", "SELECT @@warning_count, 1", "SHOW COUNT(*) WARNINGS",
		"SELECT * FROM oq.nosuch", "SHOW ERRORS",
		"SELECT SQL_CALC_FOUND_ROWS id FROM oq.orders WHERE id IN (3) LIMIT 0", "SELECT FOUND_ROWS()",
		"UPDATE oq.orders SET v = 'three' WHERE id = 3", "SELECT ROW_COUNT()",
		"SELECT * FROM t ORDER BY id", "SHOW TABLES", "SELECT DATABASE()",
		// Unlisted tables of the schema with the session's own tables:
		// both on the default cluster, where the session's statements go.
		"SELECT t.w, p.id FROM t JOIN oq.plain p ORDER BY t.id",
		"SELECT c.name FROM oq.city c JOIN t ON t.id = c.id + 2 ORDER BY c.id",
	} {
		same(q)
	}
	// The plan of a statement on the schema, as in a session on it.
	want := fmt.Sprintf("orders_%04d", subTableOf(t, 3, 4))
	if a := metaQuery(t, pc, "/* shardgate:explain */ SELECT * FROM oq.orders WHERE id = 3"); len(a.Results) != 1 || len(a.Results[0].Rows) != 1 ||
		!strings.Contains(a.Results[0].Rows[0][3].Bytes, want) {
		t.Errorf("explain of a statement on oq: %+v, want one step naming %s", a.Results, want)
	}
	same("/* shardgate:explain */ SELECT o.w FROM t o WHERE o.id = 3") // on no sharded schema: the hint is a comment
	same("SELECT * FROM t WHERE id = 3")
	// A shard hint names the schema's sub-tables, as in a session on it.
	if a := metaQuery(t, pc, "/* shardgate:shard=s1 */ SELECT COUNT(*) FROM oq.orders_0002"); len(a.Results) != 1 || len(a.Results[0].Rows) != 1 {
		t.Errorf("a hinted statement on a sub-table: %+v", a)
	}
	for _, f := range []string{"t", "nosuch"} {
		rcols, rerr, err := rc.FieldList(f, "")
		if err != nil {
			t.Fatal(err)
		}
		gcols, gerr, err := pc.FieldList(f, "")
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(rerr) != fmt.Sprint(gerr) || fmt.Sprintf("%+v", rcols) != fmt.Sprintf("%+v", gcols) {
			t.Errorf("COM_FIELD_LIST %s after statements on oq:\nreference %+v %v\ngot       %+v %v", f, rcols, rerr, gcols, gerr)
		}
	}

	// Prepared statements on the schema, from the other database.
	for _, q := range []string{"SELECT v FROM oq.orders WHERE id = ?", "SELECT o.id, i.n FROM oq.orders o JOIN oq.items i ON i.order_id = o.id WHERE o.id = ? ORDER BY i.n"} {
		rs, ra, err := rc.Prepare(q)
		if err != nil || rs == nil {
			t.Fatalf("reference PREPARE %s: %v %+v", q, err, ra.Err)
		}
		gs, ga, err := pc.Prepare(q)
		if err != nil {
			t.Fatal(err)
		}
		if d := difftest.Diff(ra, ga, true); d != "" || gs == nil {
			t.Fatalf("PREPARE %s:\n%s", q, d)
		}
		for _, id := range []any{3, 5, "1", 99} {
			ra, err := rs.Execute(id)
			if err != nil {
				t.Fatal(err)
			}
			ga, err := gs.Execute(id)
			if err != nil {
				t.Fatal(err)
			}
			if d := difftest.Diff(ra, ga, true); d != "" {
				t.Errorf("EXECUTE %s with %v:\n%s", q, id, d)
			}
		}
	}
	same("SELECT * FROM t WHERE id = 4")

	// Refused with 1235: a transaction or table locks of the session's
	// own cluster, which a shard's connection cannot join, and
	// DATABASE(), which the schema's connections would answer with its
	// name.
	refused := func(qs ...string) {
		t.Helper()
		for i, q := range qs {
			a, err := pc.Query(q)
			if err != nil {
				t.Fatal(err)
			}
			if i < len(qs)-1 {
				if a.Err != nil {
					t.Fatalf("%s: %v", q, a.Err)
				}
				continue
			}
			if a.Err == nil || a.Err.Code != mysql.ERNotSupportedYet {
				t.Errorf("%s after %v: %+v, want 1235", q, qs[:i], a.Err)
			}
		}
	}
	refused("BEGIN", "SELECT * FROM oq.orders WHERE id = 3")
	refused("ROLLBACK", "SET autocommit = 0", "SELECT * FROM oq.orders WHERE id = 3")
	refused("SET autocommit = 1", "LOCK TABLES t READ", "SELECT * FROM oq.orders WHERE id = 3")
	refused("UNLOCK TABLES", "SELECT DATABASE(), v FROM oq.orders WHERE id = 3")
	same("SELECT * FROM t WHERE id = 3")

	// A statement prepared in the schema runs there after USE of another
	// database, as it would on one server (its tables resolved at
	// PREPARE).
	rc, pc = ref("oq"), got("oq")
	rs, _, err := rc.Prepare("SELECT v FROM orders WHERE id = ?")
	if err != nil || rs == nil {
		t.Fatal(err)
	}
	gs, _, err := pc.Prepare("SELECT v FROM orders WHERE id = ?")
	if err != nil || gs == nil {
		t.Fatal(err)
	}
	same("USE oqo")
	for _, id := range []any{3, 6} {
		ra, _ := rs.Execute(id)
		ga, _ := gs.Execute(id)
		if d := difftest.Diff(ra, ga, true); d != "" {
			t.Errorf("EXECUTE after USE oqo, id %v:\n%s", id, d)
		}
	}
	same("SELECT * FROM t WHERE id = 4")

	// In a session on a schema, a transaction takes in another schema
	// living on its shards; table locks do not.
	same("USE oq")
	for _, q := range []string{"BEGIN", "SELECT name FROM oq2.contacts WHERE id = 3", "UPDATE oq2.contacts SET name = 'Cyd' WHERE id = 3",
		"SELECT v FROM orders WHERE id = 3", "SELECT name FROM oq2.contacts ORDER BY id", "ROLLBACK", "SELECT name FROM oq2.contacts WHERE id = 3"} {
		same(q)
	}
	refused("LOCK TABLES orders READ", "SELECT * FROM oq2.contacts WHERE id = 3")
	same("UNLOCK TABLES")

	// A session on information_schema names its tables unqualified.
	rc, pc = ref("information_schema"), got("information_schema")
	same("SELECT TABLE_NAME, TABLE_ROWS IS NOT NULL FROM TABLES WHERE TABLE_SCHEMA = 'oq' ORDER BY TABLE_NAME")
	same("SELECT v FROM oq.orders WHERE id = 5")
}
