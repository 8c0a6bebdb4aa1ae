package proxy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/testenv"
)

// metaTables are the logical tables of the metadata tests, as a reference
// server holds them. Through the proxy, t is sharded over s0 and s1 (2
// sub-tables each), u over s1 then s0 (its sub-table 0 is not on the
// default cluster), city is a reference table and plain and t1 are
// unlisted.
var metaTables = map[string]string{
	"t":     "(id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20) COMMENT 'a value', KEY kv (v)) COMMENT 'sharded'",
	"u":     "(uid BIGINT NOT NULL PRIMARY KEY, note TEXT, UNIQUE KEY un (note(10)))",
	"city":  "(id INT PRIMARY KEY, name VARCHAR(20))",
	"plain": "(id INT PRIMARY KEY)",
	"t1":    "(x INT)",
}

// metaEnv starts the reference server and a proxy over two shards for
// schema db, with metaTables created and the same rows in both.
func metaEnv(t *testing.T, db string) (ref, got difftest.Target, p *proxy.Proxy) {
	t.Helper()
	srvs := testenv.StartN(t, 2, testenv.Options{})
	s0, s1, rs := testenv.Shared(t), srvs[0], srvs[1]
	for _, s := range []*testenv.Server{s0, s1, rs} {
		s.Exec(t, "DROP DATABASE IF EXISTS "+db, "CREATE DATABASE "+db)
	}
	on := func(s *testenv.Server, name, table string) {
		s.Exec(t, fmt.Sprintf("CREATE TABLE %s.%s %s", db, name, metaTables[table]))
	}
	for name := range metaTables {
		on(rs, name, name)
	}
	on(s0, "t_0000", "t")
	on(s0, "t_0001", "t")
	on(s1, "t_0002", "t")
	on(s1, "t_0003", "t")
	on(s1, "u_0000", "u")
	on(s0, "u_0001", "u")
	on(s0, "city", "city")
	on(s1, "city", "city")
	on(s0, "plain", "plain")
	on(s0, "t1", "t1")
	yaml := fmt.Sprintf(`
listeners: [{address: "127.0.0.1:0"}]
users:
  - {name: %s, password_hash: "%s", default_database: %s}
clusters:
  - {name: s0, user: %s, password: %s, pool: {max_open: 4}, primary: {address: "%s"}}
  - {name: s1, user: %s, password: %s, pool: {max_open: 4}, primary: {address: "%s"}}
schemas:
  - name: %s
    default_cluster: s0
    tables:
      - {name: t, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: 2}
      - {name: u, shard_key: uid, rule: hash, shards: [s1, s0], sub_tables: 1}
      - {name: city, type: reference}
`, appUser, hashOf(appPass), db, testenv.User, testenv.Password, s0.Addr, testenv.User, testenv.Password, s1.Addr, db)
	cfg, err := config.Parse([]byte(yaml), "meta.yaml")
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	p = startProxy(t, cfg)
	ref = difftest.ServerTarget("reference", rs, db)
	got = difftest.Target{Name: "shardgate", Addr: p.Addrs()[0], User: appUser, Password: appPass, Database: db}
	rc, pc := metaDial(t, ref), metaDial(t, got)
	for i := 1; i <= 8; i++ {
		for _, q := range []string{
			fmt.Sprintf("INSERT INTO t (id, v) VALUES (%d, 'v%d')", i*3, i),
			fmt.Sprintf("INSERT INTO u (uid, note) VALUES (%d, 'n%d')", i, i),
		} {
			metaQuery(t, rc, q)
			metaQuery(t, pc, q)
		}
	}
	return ref, got, p
}

func metaDial(t *testing.T, tgt difftest.Target) *difftest.Client {
	t.Helper()
	c, err := difftest.Dial(context.Background(), tgt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func metaQuery(t *testing.T, c *difftest.Client, q string) difftest.Answer {
	t.Helper()
	a, err := c.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	if a.Err != nil {
		t.Fatalf("%s: %v", q, a.Err)
	}
	return a
}

// TestShardedMetadataAsOneServer compares the answers of metadata
// statements through the proxy with a server holding the logical tables:
// rows, their order and every field of the column definitions.
func TestShardedMetadataAsOneServer(t *testing.T) {
	ref, got, _ := metaEnv(t, "smeta")
	rc, pc := metaDial(t, ref), metaDial(t, got)
	for _, q := range []string{
		"SHOW TABLES", "SHOW FULL TABLES", "SHOW TABLES IN smeta", "SHOW FULL TABLES FROM `smeta` LIKE '%'",
		"SHOW TABLES LIKE 't'", "SHOW TABLES LIKE 't%'", "SHOW TABLES LIKE 'u'", "SHOW TABLES LIKE 'T'", "SHOW TABLES LIKE 't\\_%'",
		"SHOW CREATE TABLE t", "SHOW CREATE TABLE smeta.u", "SHOW CREATE TABLE `t`", "SHOW CREATE TABLE city",
		"SHOW COLUMNS FROM t", "SHOW FULL COLUMNS FROM t FROM smeta", "SHOW FIELDS FROM u LIKE 'n%'",
		"SHOW COLUMNS FROM t WHERE Field = 'v'", "SHOW FULL FIELDS IN smeta.u",
		"SHOW INDEX FROM t", "SHOW KEYS FROM smeta.u", "SHOW INDEXES IN t WHERE Key_name = 'kv'", "SHOW INDEX FROM plain",
		"DESCRIBE t", "DESC t v", "EXPLAIN u", "DESCRIBE t 'i%'", "DESC smeta.u",
		"SHOW COLUMNS FROM nosuch", "SHOW CREATE TABLE nosuch",
		// What MySQL Connector/J's DatabaseMetaData sends (getTables,
		// getColumns, getPrimaryKeys, getIndexInfo; useInformationSchema off).
		"SHOW FULL TABLES FROM `smeta` LIKE 't'", "SHOW FULL COLUMNS FROM `t` FROM `smeta` LIKE '%'",
		"SHOW KEYS FROM `t` FROM `smeta`", "SHOW INDEX FROM `u` FROM `smeta`",
	} {
		ra, err := rc.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		ga, err := pc.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		maskColumns(&ra, "Cardinality")
		maskColumns(&ga, "Cardinality")
		if d := difftest.Diff(ra, ga, true); d != "" {
			t.Errorf("%s:\n%s", q, d)
		}
	}
}

// maskColumns replaces the values of the named columns, estimates that
// differ between any two servers (index cardinality, sizes, times).
func maskColumns(a *difftest.Answer, names ...string) {
	for _, r := range a.Results {
		for j, c := range r.Columns {
			for _, n := range names {
				if c.Name != n {
					continue
				}
				for _, row := range r.Rows {
					row[j] = difftest.Value{Bytes: "(varies)"}
				}
			}
		}
	}
}

// TestShardedTableStatus checks SHOW TABLE STATUS: the columns one server
// reports alike exactly, and the row count summed over the sub-tables
// (sizes and times are the server's estimates: they differ between any
// two servers).
func TestShardedTableStatus(t *testing.T) {
	ref, got, _ := metaEnv(t, "sstatus")
	rc, pc := metaDial(t, ref), metaDial(t, got)
	metaQuery(t, rc, "ANALYZE TABLE t, u")
	for _, sub := range []string{"t_0000", "t_0001", "t_0002", "t_0003", "u_0000", "u_0001"} {
		metaQuery(t, pc, "/* shardgate:shard="+map[bool]string{true: "s0", false: "s1"}[sub == "t_0000" || sub == "t_0001" || sub == "u_0001"]+" */ ANALYZE TABLE "+sub)
	}
	for _, q := range []string{"SHOW TABLE STATUS", "SHOW TABLE STATUS LIKE 't'", "SHOW TABLE STATUS FROM sstatus LIKE '%u%'"} {
		ra, ga := metaQuery(t, rc, q), metaQuery(t, pc, q)
		for _, a := range []*difftest.Answer{&ra, &ga} {
			maskColumns(a, "Avg_row_length", "Data_length", "Max_data_length", "Index_length", "Data_free", "Create_time", "Update_time", "Check_time")
		}
		if d := difftest.Diff(ra, ga, true); d != "" {
			t.Errorf("%s:\n%s", q, d)
		}
	}
}

func TestShardedMetadataRefusals(t *testing.T) {
	_, got, _ := metaEnv(t, "smetaref")
	pc := metaDial(t, got)
	for _, q := range []string{"SHOW TABLES WHERE Tables_in_smetaref = 't'", "SHOW TRIGGERS", "EXPLAIN SELECT * FROM t",
		"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'smetaref'",
		"SELECT c.COLUMN_NAME FROM INFORMATION_SCHEMA.columns c WHERE c.TABLE_NAME = 't'",
		"SELECT 1 FROM information_schema.STATISTICS s JOIN information_schema.KEY_COLUMN_USAGE k USING (TABLE_NAME)"} {
		a, err := pc.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		if a.Err == nil || a.Err.Code != mysql.ERNotSupportedYet {
			t.Errorf("%s: %+v, want error 1235", q, a.Err)
		}
	}
	// information_schema tables that list no tables still answer.
	a := metaQuery(t, pc, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'smetaref'")
	if len(a.Results) != 1 || len(a.Results[0].Rows) != 1 {
		t.Errorf("SCHEMATA: %+v", a.Results)
	}
}

// TestShardedFieldList compares COM_FIELD_LIST through the proxy with the
// reference: a sharded table's fields carry its logical name.
func TestShardedFieldList(t *testing.T) {
	ref, got, _ := metaEnv(t, "sfields")
	rc, pc := metaDial(t, ref), metaDial(t, got)
	for _, tc := range [][2]string{{"t", ""}, {"u", "n%"}, {"city", ""}, {"plain", ""}, {"nosuch", ""}} {
		rcols, rerr, err := rc.FieldList(tc[0], tc[1])
		if err != nil {
			t.Fatal(err)
		}
		gcols, gerr, err := pc.FieldList(tc[0], tc[1])
		if err != nil {
			t.Fatal(err)
		}
		if tc[0] == "t" && len(rcols) != 2 {
			t.Fatalf("reference fields of t: %+v", rcols)
		}
		if fmt.Sprint(rerr) != fmt.Sprint(gerr) || fmt.Sprintf("%+v", rcols) != fmt.Sprintf("%+v", gcols) {
			t.Errorf("COM_FIELD_LIST %s %q:\nreference %+v %v\ngot       %+v %v", tc[0], tc[1], rcols, rerr, gcols, gerr)
		}
	}
}

// connectorJ is the MySQL Connector/J jar: $SHARDGATE_CONNECTOR_J, else
// version 9.7.0 in the local Maven repository (scripts/install-deps.sh
// fetches it).
func connectorJ(t *testing.T) string {
	t.Helper()
	jar := os.Getenv("SHARDGATE_CONNECTOR_J")
	if jar == "" {
		home, _ := os.UserHomeDir()
		jar = filepath.Join(home, ".m2/repository/com/mysql/mysql-connector-j/9.7.0/mysql-connector-j-9.7.0.jar")
	}
	if _, err := os.Stat(jar); err != nil {
		t.Fatalf("MySQL Connector/J: %v: run scripts/install-deps.sh (or set SHARDGATE_CONNECTOR_J)", err)
	}
	return jar
}

// TestConnectorJMetadata runs MySQL Connector/J's DatabaseMetaData
// (getTables, getColumns, getPrimaryKeys, getIndexInfo) against the
// reference server and the proxy over two shards: the outputs must be
// equal.
func TestConnectorJMetadata(t *testing.T) {
	jar := connectorJ(t)
	javac, java := clientsBinary(t, "javac"), clientsBinary(t, "java")
	dir := t.TempDir()
	clientsMustExec(t, 2*time.Minute, nil, javac, "-d", dir, filepath.Join("testdata", "jdbc", "Meta.java"))
	ref, got, _ := metaEnv(t, "sjdbc")
	run := func(tg difftest.Target) string {
		url := "jdbc:mysql://" + tg.Addr + "/" + tg.Database + "?sslMode=DISABLED&allowPublicKeyRetrieval=true"
		return clientsMustExec(t, 2*time.Minute, nil, java, "-cp", jar+string(os.PathListSeparator)+dir, "Meta",
			url, tg.User, tg.Password, tg.Database, "t", "u", "city", "plain").stdout
	}
	want, have := run(ref), run(got)
	if !strings.Contains(want, "|t|") || !strings.Contains(want, "PRIMARY") {
		t.Fatalf("the reference's metadata lacks table t:\n%s", want)
	}
	if want != have {
		t.Errorf("Connector/J metadata differs:\n--- reference ---\n%s\n--- shardgate ---\n%s", want, have)
	}
}
