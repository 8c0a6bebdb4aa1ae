package proxy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/testenv"
)

// metaTables are the logical tables of the metadata tests, as a reference
// server holds them, in the order they are created. Through the proxy, t
// is sharded over s0 and s1 (2 sub-tables each), o like t with a foreign
// key to it (sub-table i to t's sub-table i), u over s1 then s0 (its
// sub-table 0 is not on the default cluster), city is a reference table
// and plain and t1 are unlisted.
var metaTables = []struct{ name, ddl string }{
	{"t", "(id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20) COMMENT 'a value', KEY kv (v)) COMMENT 'sharded'"},
	{"o", "(oid INT NOT NULL, tid INT NOT NULL, PRIMARY KEY (oid, tid), FOREIGN KEY (tid) REFERENCES t (id), FOREIGN KEY (oid) REFERENCES t (id))"},
	{"u", "(uid BIGINT NOT NULL PRIMARY KEY, note TEXT, UNIQUE KEY un (note(10)))"},
	{"city", "(id INT PRIMARY KEY, name VARCHAR(20))"},
	{"plain", "(id INT PRIMARY KEY)"},
	{"t1", "(x INT)"},
}

// metaDDL is the definition of metaTables' table, its foreign keys
// referencing sub-table sub of t (sub < 0: t itself).
func metaDDL(table string, sub int) string {
	for _, m := range metaTables {
		if m.name == table {
			if sub >= 0 {
				return strings.ReplaceAll(m.ddl, "REFERENCES t ", fmt.Sprintf("REFERENCES t_%04d ", sub))
			}
			return m.ddl
		}
	}
	panic("no table " + table)
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
	on := func(s *testenv.Server, name, table string, sub int) {
		s.Exec(t, fmt.Sprintf("CREATE TABLE %s.%s %s", db, name, metaDDL(table, sub)))
	}
	for _, m := range metaTables {
		on(rs, m.name, m.name, -1)
	}
	for i, s := range []*testenv.Server{s0, s0, s1, s1} {
		on(s, fmt.Sprintf("t_%04d", i), "t", -1)
		on(s, fmt.Sprintf("o_%04d", i), "o", i)
	}
	on(s1, "u_0000", "u", -1)
	on(s0, "u_0001", "u", -1)
	on(s0, "city", "city", -1)
	on(s1, "city", "city", -1)
	on(s0, "plain", "plain", -1)
	on(s0, "t1", "t1", -1)
	cfg := parseConfig(t, twoShardYAML(db, s0.Addr, s1.Addr, 4, `    tables:
      - {name: t, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: 2}
      - {name: o, shard_key: tid, like: t}
      - {name: u, shard_key: uid, rule: hash, shards: [s1, s0], sub_tables: 1}
      - {name: city, type: reference}
`, ""), "meta.yaml")
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
	for _, q := range []string{"SHOW TABLES WHERE Tables_in_smetaref = 't'", "SHOW TRIGGERS",
		// information_schema shapes whose answer the rewriting cannot make
		// exactly one server's
		"SELECT * FROM information_schema.PARTITIONS WHERE TABLE_SCHEMA = 'smetaref'",
		"SELECT * FROM information_schema.TRIGGERS",
		"SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'smetaref'",
		"SELECT DISTINCT TABLE_SCHEMA FROM information_schema.COLUMNS",
		"SELECT TABLE_SCHEMA, COUNT(*) FROM information_schema.STATISTICS GROUP BY TABLE_SCHEMA",
		"SELECT CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) FROM information_schema.TABLES",
		"SELECT UPPER(INDEX_NAME) FROM information_schema.STATISTICS",
		"SELECT TABLE_NAME FROM information_schema.TABLES ORDER BY LENGTH(TABLE_NAME)",
		"SELECT TABLE_NAME FROM information_schema.TABLES HAVING TABLE_NAME = 't'",
		"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_NAME IN (SELECT TABLE_NAME FROM information_schema.COLUMNS)",
		"SELECT * FROM (SELECT TABLE_NAME FROM information_schema.TABLES) x",
		"SELECT TABLE_NAME FROM information_schema.TABLES UNION SELECT TABLE_NAME FROM information_schema.COLUMNS",
		"SELECT t.TABLE_NAME FROM information_schema.TABLES t JOIN t ON 1",
		"SELECT TABLE_NAME FROM information_schema.TABLES JOIN information_schema.SCHEMATA ON SCHEMA_NAME = TABLE_SCHEMA",
		"SELECT 1 FROM information_schema.STATISTICS s JOIN information_schema.KEY_COLUMN_USAGE k USING (TABLE_SCHEMA) WHERE TABLE_NAME = 't'",
		"SELECT TABLE_NAME FROM information_schema.TABLES LIMIT 1 FOR UPDATE",
		"SET @n = 't'", "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_NAME = @n"} {
		a, err := pc.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(q, "SET") {
			continue
		}
		if a.Err == nil || a.Err.Code != mysql.ERNotSupportedYet {
			t.Errorf("%s: %+v, want error 1235", q, a.Err)
		}
	}
	// Prepared statements on them are refused at PREPARE.
	if _, a, err := pc.Prepare("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?"); err != nil {
		t.Fatal(err)
	} else if a.Err == nil || a.Err.Code != mysql.ERNotSupportedYet {
		t.Errorf("PREPARE on information_schema.TABLES: %+v, want error 1235", a.Err)
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
	// By default Connector/J sends SHOW statements; with
	// useInformationSchema=true it queries information_schema.
	for _, opts := range []string{"", "&useInformationSchema=true"} {
		run := func(tg difftest.Target) string {
			url := "jdbc:mysql://" + tg.Addr + "/" + tg.Database + "?sslMode=DISABLED&allowPublicKeyRetrieval=true" + opts
			return clientsMustExec(t, 2*time.Minute, nil, java, "-cp", jar+string(os.PathListSeparator)+dir, "Meta",
				url, tg.User, tg.Password, tg.Database, "t", "u", "o", "city", "plain").stdout
		}
		want, have := run(ref), run(got)
		if !strings.Contains(want, "|t|") || !strings.Contains(want, "PRIMARY") {
			t.Fatalf("%s: the reference's metadata lacks table t:\n%s", opts, want)
		}
		if want != have {
			t.Errorf("Connector/J metadata %s differs:\n--- reference ---\n%s\n--- shardgate ---\n%s", opts, want, have)
		}
	}
}

// infoSchemaQueries are information_schema queries answered through the
// proxy as by one server holding the logical tables (%[1]s is the
// database): what tools send, and the shapes around them. Those without
// ORDER BY are compared as sets of rows, and so are those marked ties:
// their ORDER BY leaves rows equal (o's two foreign keys to t), which a
// server returns in an order that depends on the other databases it
// holds.
var infoSchemaQueries = []string{
	// go tools, Rails, Flyway
	"SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()",
	"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 't'",
	"SELECT table_name FROM information_schema.tables WHERE table_schema = '%[1]s' AND table_type IN ('BASE TABLE', 'VIEW') ORDER BY table_name",
	// whole tables
	"SELECT * FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%[1]s' ORDER BY TABLE_NAME",
	"SELECT * FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '%[1]s' ORDER BY TABLE_NAME, ORDINAL_POSITION",
	"SELECT * FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = '%[1]s' ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX",
	"SELECT * FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = '%[1]s' ORDER BY TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION",
	"SELECT * FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = '%[1]s' ORDER BY TABLE_NAME, CONSTRAINT_NAME",
	"SELECT * FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = '%[1]s'",
	"SELECT TABLE_NAME, AUTO_INCREMENT, TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%[1]s' ORDER BY 1",
	// names compared as the server compares them: = looks the exact name
	// up, LIKE and expressions compare under the collation
	"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%[1]s' AND TABLE_NAME = 'T'",
	"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%[1]s' AND TABLE_NAME LIKE 'T'",
	"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%[1]s' AND 'u' = TABLE_NAME",
	"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%[1]s' AND TABLE_NAME IN ('u')",
	"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%[1]s' AND TABLE_NAME IN ('T', 'u', 'city') ORDER BY TABLE_NAME DESC",
	"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%[1]s' AND (TABLE_NAME = 'T' OR TABLE_NAME = 'plain')",
	"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%[1]s' AND TABLE_NAME = 't_0000'",
	"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%[1]s' AND TABLE_NAME LIKE 't%%' ORDER BY TABLE_NAME",
	"SELECT COLUMN_NAME, COLUMN_TYPE FROM INFORMATION_SCHEMA.COLUMNS c WHERE c.TABLE_SCHEMA = '%[1]s' AND c.`table_name` = 'u' ORDER BY ORDINAL_POSITION",
	"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%[1]s' ORDER BY TABLE_NAME DESC LIMIT 1, 3",
	"SELECT TABLE_NAME n FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%[1]s' ORDER BY n LIMIT 2",
	// other databases, through the same rewriting
	"SELECT TABLE_NAME, ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'mysql' ORDER BY TABLE_NAME",
	// joins
	"SELECT t.TABLE_NAME, c.COLUMN_NAME FROM information_schema.TABLES t JOIN information_schema.COLUMNS c ON c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME WHERE t.TABLE_SCHEMA = '%[1]s' AND t.TABLE_COMMENT = 'sharded' ORDER BY 1, 2",
	// MySQL Connector/J 9.7's DatabaseMetaData with useInformationSchema=true
	// (getTables, getColumns, getPrimaryKeys, getIndexInfo), as it sends them
	"SELECT TABLE_SCHEMA AS TABLE_CAT, NULL AS TABLE_SCHEM, TABLE_NAME, CASE WHEN TABLE_TYPE = 'BASE TABLE' THEN CASE WHEN TABLE_SCHEMA = 'mysql' OR TABLE_SCHEMA = 'performance_schema' OR TABLE_SCHEMA = 'sys' THEN 'SYSTEM TABLE' ELSE 'TABLE' END WHEN TABLE_TYPE = 'TEMPORARY' THEN 'LOCAL_TEMPORARY' ELSE TABLE_TYPE END AS TABLE_TYPE, TABLE_COMMENT AS REMARKS, NULL AS TYPE_CAT, NULL AS TYPE_SCHEM, NULL AS TYPE_NAME, NULL AS SELF_REFERENCING_COL_NAME, NULL AS REF_GENERATION FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = '%[1]s' AND TABLE_NAME = 'o' HAVING TABLE_TYPE IN ('TABLE',null,null,null,null) ORDER BY TABLE_TYPE, TABLE_SCHEMA, TABLE_NAME",
	"SELECT TABLE_SCHEMA AS TABLE_CAT, NULL AS TABLE_SCHEM, TABLE_NAME, CASE WHEN TABLE_TYPE = 'BASE TABLE' THEN CASE WHEN TABLE_SCHEMA = 'mysql' OR TABLE_SCHEMA = 'performance_schema' OR TABLE_SCHEMA = 'sys' THEN 'SYSTEM TABLE' ELSE 'TABLE' END WHEN TABLE_TYPE = 'TEMPORARY' THEN 'LOCAL_TEMPORARY' ELSE TABLE_TYPE END AS TABLE_TYPE, TABLE_COMMENT AS REMARKS, NULL AS TYPE_CAT, NULL AS TYPE_SCHEM, NULL AS TYPE_NAME, NULL AS SELF_REFERENCING_COL_NAME, NULL AS REF_GENERATION FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = '%[1]s' AND TABLE_NAME LIKE '%%' ORDER BY TABLE_TYPE, TABLE_SCHEMA, TABLE_NAME",
	"SELECT TABLE_SCHEMA AS TABLE_CAT, NULL AS TABLE_SCHEM, TABLE_NAME, COLUMN_NAME, SEQ_IN_INDEX AS KEY_SEQ, 'PRIMARY' AS PK_NAME FROM INFORMATION_SCHEMA.STATISTICS WHERE TABLE_SCHEMA = '%[1]s' AND TABLE_NAME = 'o' AND INDEX_NAME = 'PRIMARY' ORDER BY TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, SEQ_IN_INDEX",
	"SELECT TABLE_SCHEMA AS TABLE_CAT, NULL AS TABLE_SCHEM, TABLE_NAME, COLUMN_NAME, SEQ_IN_INDEX AS KEY_SEQ, 'PRIMARY' AS PK_NAME FROM INFORMATION_SCHEMA.STATISTICS WHERE TABLE_SCHEMA = '%[1]s' AND TABLE_NAME = 'u' AND INDEX_NAME = 'PRIMARY' ORDER BY TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, SEQ_IN_INDEX",
	"SELECT TABLE_SCHEMA AS TABLE_CAT, NULL AS TABLE_SCHEM, TABLE_NAME, NON_UNIQUE, NULL AS INDEX_QUALIFIER, INDEX_NAME, 3 AS TYPE, SEQ_IN_INDEX AS ORDINAL_POSITION, COLUMN_NAME, COLLATION AS ASC_OR_DESC, CARDINALITY, 0 AS PAGES, NULL AS FILTER_CONDITION FROM INFORMATION_SCHEMA.STATISTICS WHERE TABLE_SCHEMA = '%[1]s' AND TABLE_NAME = 'u' ORDER BY NON_UNIQUE, INDEX_NAME, SEQ_IN_INDEX",
	"SELECT TABLE_SCHEMA, NULL, TABLE_NAME, COLUMN_NAME, CASE WHEN UPPER(DATA_TYPE) = 'DECIMAL' THEN 3 WHEN UPPER(DATA_TYPE) = 'DECIMAL UNSIGNED' THEN 3 WHEN UPPER(DATA_TYPE) = 'TINYINT' THEN IF(LOCATE('ZEROFILL', UPPER(COLUMN_TYPE)) = 0 AND LOCATE('UNSIGNED', UPPER(COLUMN_TYPE)) = 0 AND LOCATE('(1)', COLUMN_TYPE) != 0, -7, -6) WHEN UPPER(DATA_TYPE) = 'TINYINT UNSIGNED' THEN IF(LOCATE('ZEROFILL', UPPER(COLUMN_TYPE)) = 0 AND LOCATE('UNSIGNED', UPPER(COLUMN_TYPE)) = 0 AND LOCATE('(1)', COLUMN_TYPE) != 0, -7, -6) WHEN UPPER(DATA_TYPE) = 'BOOLEAN' THEN 16 WHEN UPPER(DATA_TYPE) = 'SMALLINT' THEN 5 WHEN UPPER(DATA_TYPE) = 'SMALLINT UNSIGNED' THEN 5 WHEN UPPER(DATA_TYPE) = 'INT' THEN 4 WHEN UPPER(DATA_TYPE) = 'INT UNSIGNED' THEN 4 WHEN UPPER(DATA_TYPE) = 'FLOAT' THEN 7 WHEN UPPER(DATA_TYPE) = 'FLOAT UNSIGNED' THEN 7 WHEN UPPER(DATA_TYPE) = 'DOUBLE' THEN 8 WHEN UPPER(DATA_TYPE) = 'DOUBLE UNSIGNED' THEN 8 WHEN UPPER(DATA_TYPE) = 'NULL' THEN 0 WHEN UPPER(DATA_TYPE) = 'TIMESTAMP' THEN 93 WHEN UPPER(DATA_TYPE) = 'BIGINT' THEN -5 WHEN UPPER(DATA_TYPE) = 'BIGINT UNSIGNED' THEN -5 WHEN UPPER(DATA_TYPE) = 'MEDIUMINT' THEN 4 WHEN UPPER(DATA_TYPE) = 'MEDIUMINT UNSIGNED' THEN 4 WHEN UPPER(DATA_TYPE) = 'DATE' THEN 91 WHEN UPPER(DATA_TYPE) = 'TIME' THEN 92 WHEN UPPER(DATA_TYPE) = 'DATETIME' THEN 93 WHEN UPPER(DATA_TYPE) = 'YEAR' THEN 91 WHEN UPPER(DATA_TYPE) = 'VARCHAR' THEN 12 WHEN UPPER(DATA_TYPE) = 'VARBINARY' THEN -3 WHEN UPPER(DATA_TYPE) = 'BIT' THEN -7 WHEN UPPER(DATA_TYPE) = 'JSON' THEN -1 WHEN UPPER(DATA_TYPE) = 'ENUM' THEN 1 WHEN UPPER(DATA_TYPE) = 'SET' THEN 1 WHEN UPPER(DATA_TYPE) = 'TINYBLOB' THEN -3 WHEN UPPER(DATA_TYPE) = 'TINYTEXT' THEN 12 WHEN UPPER(DATA_TYPE) = 'MEDIUMBLOB' THEN -4 WHEN UPPER(DATA_TYPE) = 'MEDIUMTEXT' THEN -1 WHEN UPPER(DATA_TYPE) = 'LONGBLOB' THEN -4 WHEN UPPER(DATA_TYPE) = 'LONGTEXT' THEN -1 WHEN UPPER(DATA_TYPE) = 'BLOB' THEN -4 WHEN UPPER(DATA_TYPE) = 'TEXT' THEN -1 WHEN UPPER(DATA_TYPE) = 'CHAR' THEN 1 WHEN UPPER(DATA_TYPE) = 'BINARY' THEN -2 WHEN UPPER(DATA_TYPE) = 'GEOMETRY' THEN -2 WHEN UPPER(DATA_TYPE) = 'VECTOR' THEN -4 WHEN UPPER(DATA_TYPE) = 'UNKNOWN' THEN 1111 WHEN UPPER(DATA_TYPE) = 'POINT' THEN -2 WHEN UPPER(DATA_TYPE) = 'LINESTRING' THEN -2 WHEN UPPER(DATA_TYPE) = 'POLYGON' THEN -2 WHEN UPPER(DATA_TYPE) = 'MULTIPOINT' THEN -2 WHEN UPPER(DATA_TYPE) = 'MULTILINESTRING' THEN -2 WHEN UPPER(DATA_TYPE) = 'MULTIPOLYGON' THEN -2 WHEN UPPER(DATA_TYPE) = 'GEOMETRYCOLLECTION' THEN -2 WHEN UPPER(DATA_TYPE) = 'GEOMCOLLECTION' THEN -2 ELSE 1111 END AS DATA_TYPE, UPPER(CASE WHEN UPPER(DATA_TYPE) = 'TINYINT' THEN CASE WHEN LOCATE('ZEROFILL', UPPER(COLUMN_TYPE)) = 0 AND LOCATE('UNSIGNED', UPPER(COLUMN_TYPE)) = 0 AND LOCATE('(1)', COLUMN_TYPE) != 0 THEN 'BIT' WHEN LOCATE('UNSIGNED', UPPER(COLUMN_TYPE)) != 0 AND LOCATE('UNSIGNED', UPPER(DATA_TYPE)) = 0 THEN 'TINYINT UNSIGNED' ELSE DATA_TYPE END WHEN LOCATE('UNSIGNED', UPPER(COLUMN_TYPE)) != 0 AND LOCATE('UNSIGNED', UPPER(DATA_TYPE)) = 0 AND LOCATE('SET', UPPER(DATA_TYPE)) <> 1 AND LOCATE('ENUM', UPPER(DATA_TYPE)) <> 1 THEN CONCAT(DATA_TYPE, ' UNSIGNED') WHEN UPPER(DATA_TYPE) = 'POINT' THEN 'GEOMETRY' WHEN UPPER(DATA_TYPE) = 'LINESTRING' THEN 'GEOMETRY' WHEN UPPER(DATA_TYPE) = 'POLYGON' THEN 'GEOMETRY' WHEN UPPER(DATA_TYPE) = 'MULTIPOINT' THEN 'GEOMETRY' WHEN UPPER(DATA_TYPE) = 'MULTILINESTRING' THEN 'GEOMETRY' WHEN UPPER(DATA_TYPE) = 'MULTIPOLYGON' THEN 'GEOMETRY' WHEN UPPER(DATA_TYPE) = 'GEOMETRYCOLLECTION' THEN 'GEOMETRY' WHEN UPPER(DATA_TYPE) = 'GEOMCOLLECTION' THEN 'GEOMETRY' ELSE UPPER(DATA_TYPE) END) AS TYPE_NAME, UPPER(CASE WHEN UPPER(DATA_TYPE) = 'YEAR' THEN 4 WHEN UPPER(DATA_TYPE) = 'DATE' THEN 10 WHEN UPPER(DATA_TYPE) = 'DATETIME' OR UPPER(DATA_TYPE) = 'TIMESTAMP' THEN 19 WHEN UPPER(DATA_TYPE) = 'TIME' THEN 8 WHEN UPPER(DATA_TYPE) = 'TINYINT' AND LOCATE('ZEROFILL', UPPER(COLUMN_TYPE)) = 0 AND LOCATE('UNSIGNED', UPPER(COLUMN_TYPE)) = 0 AND LOCATE('(1)', COLUMN_TYPE) != 0 THEN 1 WHEN UPPER(DATA_TYPE) = 'MEDIUMINT' AND LOCATE('UNSIGNED', UPPER(COLUMN_TYPE)) != 0 THEN 8 WHEN UPPER(DATA_TYPE) = 'JSON' THEN 1073741824 WHEN UPPER(DATA_TYPE) = 'GEOMETRY' THEN 65535 WHEN UPPER(DATA_TYPE) = 'POINT' THEN 65535 WHEN UPPER(DATA_TYPE) = 'LINESTRING' THEN 65535 WHEN UPPER(DATA_TYPE) = 'POLYGON' THEN 65535 WHEN UPPER(DATA_TYPE) = 'MULTIPOINT' THEN 65535 WHEN UPPER(DATA_TYPE) = 'MULTILINESTRING' THEN 65535 WHEN UPPER(DATA_TYPE) = 'MULTIPOLYGON' THEN 65535 WHEN UPPER(DATA_TYPE) = 'GEOMETRYCOLLECTION' THEN 65535 WHEN UPPER(DATA_TYPE) = 'GEOMCOLLECTION' THEN 65535 WHEN CHARACTER_MAXIMUM_LENGTH IS NULL THEN NUMERIC_PRECISION WHEN CHARACTER_MAXIMUM_LENGTH > 2147483647 THEN 2147483647 ELSE CHARACTER_MAXIMUM_LENGTH END) AS COLUMN_SIZE, 65535 AS BUFFER_LENGTH, UPPER(CASE WHEN UPPER(DATA_TYPE) = 'DECIMAL' THEN NUMERIC_SCALE WHEN UPPER(DATA_TYPE) = 'FLOAT' OR UPPER(DATA_TYPE) = 'DOUBLE' THEN IF(NUMERIC_SCALE IS NULL, 0, NUMERIC_SCALE) ELSE NULL END) AS DECIMAL_DIGITS, 10 AS NUM_PREC_RADIX, CASE WHEN IS_NULLABLE COLLATE utf8mb3_general_ci= 'NO' THEN 0 ELSE CASE WHEN IS_NULLABLE COLLATE utf8mb3_general_ci= 'YES' THEN 1 ELSE 2 END END AS NULLABLE, COLUMN_COMMENT AS REMARKS, COLUMN_DEFAULT AS COLUMN_DEF, 0 AS SQL_DATA_TYPE, 0 AS SQL_DATETIME_SUB, CASE WHEN CHARACTER_OCTET_LENGTH > 2147483647 THEN 2147483647 ELSE CHARACTER_OCTET_LENGTH END AS CHAR_OCTET_LENGTH, ORDINAL_POSITION, IS_NULLABLE, NULL AS SCOPE_CATALOG, NULL AS SCOPE_SCHEMA, NULL AS SCOPE_TABLE, NULL AS SOURCE_DATA_TYPE, IF (EXTRA COLLATE utf8mb3_general_ci LIKE '%%auto_increment%%','YES','NO') AS IS_AUTOINCREMENT, IF (EXTRA COLLATE utf8mb3_general_ci LIKE  '%%GENERATED%%','YES','NO') AS IS_GENERATEDCOLUMN FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = '%[1]s' AND TABLE_NAME = 'u' AND COLUMN_NAME LIKE '%%' ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION",
	// MariaDB Connector/J's DatabaseMetaData (getTables, getColumns,
	// getPrimaryKeys, getIndexInfo, getImportedKeys)
	"SELECT TABLE_SCHEMA TABLE_CAT, NULL TABLE_SCHEM, TABLE_NAME,   IF(TABLE_SCHEMA IN ('mysql', 'performance_schema', 'sys'), IF(TABLE_TYPE='BASE TABLE', 'SYSTEM TABLE', IF(TABLE_TYPE='VIEW', 'SYSTEM VIEW', TABLE_TYPE)), IF(TABLE_TYPE='BASE TABLE' or TABLE_TYPE='SYSTEM VERSIONED', 'TABLE', IF(TABLE_TYPE='TEMPORARY', 'LOCAL TEMPORARY', TABLE_TYPE))) as TABLE_TYPE,  TABLE_COMMENT REMARKS, NULL TYPE_CAT, NULL TYPE_SCHEM, NULL TYPE_NAME, NULL SELF_REFERENCING_COL_NAME,  NULL REF_GENERATION FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = database() AND  TABLE_TYPE IN ('BASE TABLE','SYSTEM VERSIONED') ORDER BY TABLE_TYPE,TABLE_CAT,TABLE_SCHEMA,TABLE_NAME",
	"SELECT TABLE_SCHEMA TABLE_CAT, NULL TABLE_SCHEM, TABLE_NAME, COLUMN_NAME, UCASE(IF( COLUMN_TYPE LIKE '%%(%%)%%', CONCAT(SUBSTRING( COLUMN_TYPE,1, LOCATE('(',COLUMN_TYPE) - 1 ), SUBSTRING(COLUMN_TYPE ,1+locate(')', COLUMN_TYPE))), COLUMN_TYPE)) TYPE_NAME, CASE DATA_TYPE WHEN 'date' THEN 10  WHEN 'time' THEN IF(DATETIME_PRECISION = 0, 10, CAST(11 + DATETIME_PRECISION as signed integer))  ELSE   IF(NUMERIC_PRECISION IS NULL, LEAST(CHARACTER_MAXIMUM_LENGTH,2147483647), NUMERIC_PRECISION)  END COLUMN_SIZE, 65535 BUFFER_LENGTH,  CONVERT (CASE DATA_TYPE WHEN 'year' THEN NUMERIC_SCALE WHEN 'tinyint' THEN 0 ELSE NUMERIC_SCALE END, UNSIGNED INTEGER) DECIMAL_DIGITS, 10 NUM_PREC_RADIX, IF(IS_NULLABLE = 'yes',1,0) NULLABLE,COLUMN_COMMENT REMARKS, COLUMN_DEFAULT COLUMN_DEF, 0 SQL_DATA_TYPE, 0 SQL_DATETIME_SUB,   LEAST(CHARACTER_OCTET_LENGTH,2147483647) CHAR_OCTET_LENGTH, ORDINAL_POSITION, IS_NULLABLE, NULL SCOPE_CATALOG, NULL SCOPE_SCHEMA, NULL SCOPE_TABLE, NULL SOURCE_DATA_TYPE, IF(EXTRA = 'auto_increment','YES','NO') IS_AUTOINCREMENT,  IF(EXTRA in ('VIRTUAL', 'PERSISTENT', 'VIRTUAL GENERATED', 'STORED GENERATED') ,'YES','NO') IS_GENERATEDCOLUMN  FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = database() AND TABLE_NAME LIKE 't%%' ORDER BY TABLE_CAT, TABLE_SCHEM, TABLE_NAME, ORDINAL_POSITION",
	"SELECT TABLE_SCHEMA TABLE_CAT, NULL TABLE_SCHEM, TABLE_NAME, COLUMN_NAME, SEQ_IN_INDEX KEY_SEQ, INDEX_NAME PK_NAME  FROM INFORMATION_SCHEMA.STATISTICS WHERE INDEX_NAME='PRIMARY' AND TABLE_SCHEMA = '%[1]s' AND TABLE_NAME = 'o' ORDER BY COLUMN_NAME",
	"SELECT TABLE_SCHEMA TABLE_CAT, NULL TABLE_SCHEM, TABLE_NAME, NON_UNIQUE, TABLE_SCHEMA INDEX_QUALIFIER, INDEX_NAME, 3 TYPE, SEQ_IN_INDEX ORDINAL_POSITION, COLUMN_NAME, COLLATION ASC_OR_DESC, NULL PAGES, NULL FILTER_CONDITION FROM INFORMATION_SCHEMA.STATISTICS WHERE TABLE_SCHEMA = '%[1]s' AND TABLE_NAME = 'u' ORDER BY NON_UNIQUE, TYPE, INDEX_NAME, ORDINAL_POSITION",
	"/* ties */ SELECT KCU.REFERENCED_TABLE_SCHEMA PKTABLE_CAT, NULL PKTABLE_SCHEM,  KCU.REFERENCED_TABLE_NAME PKTABLE_NAME, KCU.REFERENCED_COLUMN_NAME PKCOLUMN_NAME, KCU.TABLE_SCHEMA FKTABLE_CAT, NULL FKTABLE_SCHEM, KCU.TABLE_NAME FKTABLE_NAME, KCU.COLUMN_NAME FKCOLUMN_NAME, KCU.POSITION_IN_UNIQUE_CONSTRAINT KEY_SEQ, CASE update_rule    WHEN 'RESTRICT' THEN 1   WHEN 'NO ACTION' THEN 3   WHEN 'CASCADE' THEN 0   WHEN 'SET NULL' THEN 2   WHEN 'SET DEFAULT' THEN 4 END UPDATE_RULE, CASE DELETE_RULE  WHEN 'RESTRICT' THEN 1  WHEN 'NO ACTION' THEN 3  WHEN 'CASCADE' THEN 0  WHEN 'SET NULL' THEN 2  WHEN 'SET DEFAULT' THEN 4 END DELETE_RULE, RC.CONSTRAINT_NAME FK_NAME, RC.UNIQUE_CONSTRAINT_NAME PK_NAME, 7 DEFERRABILITY FROM INFORMATION_SCHEMA.KEY_COLUMN_USAGE KCU INNER JOIN INFORMATION_SCHEMA.REFERENTIAL_CONSTRAINTS RC ON KCU.CONSTRAINT_CATALOG = RC.CONSTRAINT_CATALOG AND KCU.CONSTRAINT_SCHEMA = RC.CONSTRAINT_SCHEMA AND KCU.CONSTRAINT_NAME = RC.CONSTRAINT_NAME AND KCU.TABLE_NAME = RC.TABLE_NAME  WHERE KCU.TABLE_SCHEMA = '%[1]s' AND KCU.TABLE_NAME = 'o' ORDER BY PKTABLE_CAT, PKTABLE_SCHEM, PKTABLE_NAME, KEY_SEQ",
	"SELECT KCU.TABLE_NAME FKTABLE_NAME, KCU.COLUMN_NAME FKCOLUMN_NAME, RC.CONSTRAINT_NAME FK_NAME FROM INFORMATION_SCHEMA.KEY_COLUMN_USAGE KCU INNER JOIN INFORMATION_SCHEMA.REFERENTIAL_CONSTRAINTS RC ON KCU.CONSTRAINT_SCHEMA = RC.CONSTRAINT_SCHEMA AND KCU.CONSTRAINT_NAME = RC.CONSTRAINT_NAME AND KCU.TABLE_NAME = RC.TABLE_NAME WHERE KCU.REFERENCED_TABLE_SCHEMA = '%[1]s' AND KCU.REFERENCED_TABLE_NAME = 't' ORDER BY FKTABLE_NAME, FK_NAME, FKCOLUMN_NAME",
}

// TestShardedInfoSchemaAsOneServer compares information_schema queries
// through the proxy with a server holding the logical tables: rows
// (sizes and times masked: estimates that differ between any two
// servers; row counts exact after ANALYZE) and every field of the column
// definitions.
func TestShardedInfoSchemaAsOneServer(t *testing.T) {
	ref, got, _ := metaEnv(t, "sinfo")
	rc, pc := metaDial(t, ref), metaDial(t, got)
	metaQuery(t, rc, "ANALYZE TABLE t, u")
	for _, q := range []string{"/* shardgate:shard=s0 */ ANALYZE TABLE t_0000, t_0001, u_0001", "/* shardgate:shard=s1 */ ANALYZE TABLE t_0002, t_0003, u_0000"} {
		metaQuery(t, pc, q)
	}
	for _, q := range infoSchemaQueries {
		q = strings.ReplaceAll(strings.ReplaceAll(q, "%[1]s", "sinfo"), "%%", "%")
		ra, err := rc.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		ga, err := pc.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		if ra.Err != nil {
			t.Fatalf("reference: %s: %v", q, ra.Err)
		}
		for _, a := range []*difftest.Answer{&ra, &ga} {
			maskColumns(a, "CREATE_TIME", "UPDATE_TIME", "CHECK_TIME", "DATA_LENGTH", "INDEX_LENGTH", "AVG_ROW_LENGTH", "DATA_FREE", "MAX_DATA_LENGTH", "CARDINALITY")
		}
		if d := difftest.Diff(ra, ga, strings.Contains(q, "ORDER BY") && !strings.Contains(q, "/* ties */")); d != "" {
			t.Errorf("%s:\n%s", q, d)
		}
	}
}
