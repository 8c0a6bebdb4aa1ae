package mysql_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/testenv"
)

// okPart is one part of a statement: its SQL (%s is the sub-table) and, for
// an INSERT, its number of rows.
type okPart struct {
	sql  string
	rows int
}

// TestOKMergeAgainstServer: a write whose parts run on two tables standing
// in for two shards (m_0, m_1), read with PartOK and combined with OKMerge,
// gives the client the OK packet, byte for byte, that a real server sends
// for the whole statement on one table holding all the rows (m_all):
// affected rows, insert id, warnings, status and the info string.
func TestOKMergeAgainstServer(t *testing.T) {
	srv := testenv.Shared(t)
	const plain = "CREATE TABLE %s (id INT PRIMARY KEY, u INT UNIQUE, v VARCHAR(3))"
	for _, tc := range []struct {
		name      string
		ddl       string   // %s: the table; m_1 gets AUTO_INCREMENT=3
		seed      []string // rows of m_0 then m_1 ("" for none); m_all gets both
		whole     string   // %s: m_all
		parts     [2]okPart
		kind      mysql.InsertKind
		insert    bool
		foundRows bool
		lax       bool // sql_mode '': a value too long is cut with a warning
	}{
		{
			name:   "multi-row INSERT, generated ids",
			ddl:    "CREATE TABLE %s (id INT AUTO_INCREMENT PRIMARY KEY, u INT UNIQUE, v VARCHAR(3))",
			whole:  "INSERT INTO %s (u,v) VALUES (1,'a'),(2,'b'),(3,'c'),(4,'d')",
			parts:  [2]okPart{{"INSERT INTO %s (u,v) VALUES (1,'a'),(2,'b')", 2}, {"INSERT INTO %s (u,v) VALUES (3,'c'),(4,'d')", 2}},
			insert: true,
		},
		{
			name:   "multi-row INSERT split into single rows",
			ddl:    plain,
			whole:  "INSERT INTO %s VALUES (1,1,'a'),(2,2,'b')",
			parts:  [2]okPart{{"INSERT INTO %s VALUES (1,1,'a')", 1}, {"INSERT INTO %s VALUES (2,2,'b')", 1}},
			insert: true,
		},
		{
			name:   "INSERT with a converted value",
			ddl:    plain,
			lax:    true,
			whole:  "INSERT INTO %s VALUES (1,1,'abcdef'),(2,2,'b'),(3,3,'c')",
			parts:  [2]okPart{{"INSERT INTO %s VALUES (1,1,'abcdef')", 1}, {"INSERT INTO %s VALUES (2,2,'b'),(3,3,'c')", 2}},
			insert: true,
		},
		{
			name:   "INSERT IGNORE",
			ddl:    plain,
			seed:   []string{"(1,1,'a')", ""},
			whole:  "INSERT IGNORE INTO %s VALUES (1,1,'x'),(2,2,'y'),(3,3,'z')",
			parts:  [2]okPart{{"INSERT IGNORE INTO %s VALUES (1,1,'x')", 1}, {"INSERT IGNORE INTO %s VALUES (2,2,'y'),(3,3,'z')", 2}},
			kind:   mysql.InsertIgnore,
			insert: true,
		},
		{
			name:   "INSERT ... ON DUPLICATE KEY UPDATE",
			ddl:    plain,
			seed:   []string{"(1,1,'a')", "(2,2,'b')"},
			whole:  "INSERT INTO %s VALUES (1,1,'q'),(2,2,'b'),(3,3,'c') ON DUPLICATE KEY UPDATE v=VALUES(v)",
			parts:  [2]okPart{{"INSERT INTO %s VALUES (1,1,'q'),(3,3,'c') ON DUPLICATE KEY UPDATE v=VALUES(v)", 2}, {"INSERT INTO %s VALUES (2,2,'b') ON DUPLICATE KEY UPDATE v=VALUES(v)", 1}},
			kind:   mysql.InsertUpdate,
			insert: true,
		},
		{
			name:   "INSERT ... ON DUPLICATE KEY UPDATE, single-row update",
			ddl:    plain,
			seed:   []string{"(1,1,'a')", "(2,2,'b')"},
			whole:  "INSERT INTO %s VALUES (1,1,'q'),(2,2,'r'),(3,3,'c') ON DUPLICATE KEY UPDATE v=VALUES(v)",
			parts:  [2]okPart{{"INSERT INTO %s VALUES (1,1,'q') ON DUPLICATE KEY UPDATE v=VALUES(v)", 1}, {"INSERT INTO %s VALUES (2,2,'r'),(3,3,'c') ON DUPLICATE KEY UPDATE v=VALUES(v)", 2}},
			kind:   mysql.InsertUpdate,
			insert: true,
		},
		{
			name:   "REPLACE",
			ddl:    plain,
			seed:   []string{"(1,1,'a')", "(2,2,'b')"},
			whole:  "REPLACE INTO %s VALUES (1,1,'b'),(2,2,'c'),(5,5,'e')",
			parts:  [2]okPart{{"REPLACE INTO %s VALUES (1,1,'b')", 1}, {"REPLACE INTO %s VALUES (2,2,'c'),(5,5,'e')", 2}},
			kind:   mysql.InsertReplace,
			insert: true,
		},
		{
			name:  "UPDATE on every sub-table",
			ddl:   plain,
			seed:  []string{"(1,1,'a'),(2,2,'z'),(3,3,'c')", "(4,4,'z'),(5,5,'e')"},
			whole: "UPDATE %s SET v='z' WHERE id <> 3",
			parts: [2]okPart{{sql: "UPDATE %s SET v='z' WHERE id <> 3"}, {sql: "UPDATE %s SET v='z' WHERE id <> 3"}},
		},
		{
			name:      "UPDATE with FOUND_ROWS",
			ddl:       plain,
			seed:      []string{"(1,1,'a'),(2,2,'z'),(3,3,'c')", "(4,4,'z'),(5,5,'e')"},
			whole:     "UPDATE %s SET v='z' WHERE id <> 3",
			parts:     [2]okPart{{sql: "UPDATE %s SET v='z' WHERE id <> 3"}, {sql: "UPDATE %s SET v='z' WHERE id <> 3"}},
			foundRows: true,
		},
		{
			name:  "DELETE on every sub-table",
			ddl:   plain,
			seed:  []string{"(1,1,'a'),(2,2,'b')", "(4,4,'d'),(5,5,'e')"},
			whole: "DELETE FROM %s WHERE id > 1",
			parts: [2]okPart{{sql: "DELETE FROM %s WHERE id > 1"}, {sql: "DELETE FROM %s WHERE id > 1"}},
		},
		{
			name:  "ALTER TABLE on every sub-table",
			ddl:   plain,
			seed:  []string{"(1,1,'a'),(2,2,'b')", "(4,4,'d')"},
			whole: "ALTER TABLE %s ADD COLUMN z INT, ALGORITHM=COPY",
			parts: [2]okPart{{sql: "ALTER TABLE %s ADD COLUMN z INT, ALGORITHM=COPY"}, {sql: "ALTER TABLE %s ADD COLUMN z INT, ALGORITHM=COPY"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			extra := mysql.ClientSessionTrack | mysql.ClientDeprecateEOF
			if tc.foundRows {
				extra |= mysql.ClientFoundRows
			}
			c := dialServer(t, srv, "", extra)
			c.exec(t, "DROP DATABASE IF EXISTS okmerge_test", "CREATE DATABASE okmerge_test", "USE okmerge_test")
			if tc.lax {
				c.exec(t, "SET sql_mode=''")
			}
			for _, tbl := range []string{"m_all", "m_0", "m_1"} {
				c.exec(t, fmt.Sprintf(tc.ddl, tbl))
			}
			c.exec(t, "ALTER TABLE m_1 AUTO_INCREMENT=3")
			for i, rows := range tc.seed {
				if rows != "" {
					c.exec(t, fmt.Sprintf("INSERT INTO m_%d VALUES %s", i, rows), "INSERT INTO m_all VALUES "+rows)
				}
			}
			want := c.single(t, fmt.Sprintf(tc.whole, "m_all"))
			var m mysql.OKMerge
			m.Reset()
			r := &mysql.Relay{Client: mysql.NewConn(&bufConn{}), Backend: c.Conn, ClientCaps: c.caps, BackendCaps: c.caps}
			for i, p := range tc.parts {
				c.send(t, mysql.ComQuery, []byte(fmt.Sprintf(p.sql, fmt.Sprintf("m_%d", i))))
				ok, err := r.PartOK()
				if err != nil || r.Info.Err != nil {
					t.Fatalf("part %d: %v %v", i, err, r.Info.Err)
				}
				if tc.insert {
					m.AddInsert(&ok, p.rows, tc.kind)
				} else {
					m.Add(&ok)
				}
			}
			merged := m.OK()
			if got := mysql.AppendOK(nil, mysql.HeaderOK, &merged, c.caps); !bytes.Equal(got, want) {
				wok, _ := mysql.ParseOK(want, c.caps)
				t.Fatalf("merged OK %+v info %q\none server %+v info %q", merged, merged.Info, wok, wok.Info)
			}
		})
	}
}

// TestPartOKRefusesResultSets: a write's part that answers with rows, or
// announces more results, is a backend error; an ERR is reported, not
// relayed, and leaves the connection usable.
func TestPartOKRefusesResultSets(t *testing.T) {
	srv := testenv.Shared(t)
	for _, tc := range []struct {
		sql     string
		backend bool // a backend error (connection to discard)
	}{
		{sql: "SELECT 1", backend: true},
		{sql: "DO 1; DO 2", backend: true},
		{sql: "INSERT INTO no_such_table VALUES (1)"},
	} {
		t.Run(strings.Fields(tc.sql)[0], func(t *testing.T) {
			c := dialServer(t, srv, "", mysql.ClientSessionTrack|mysql.ClientDeprecateEOF|mysql.ClientMultiStatements)
			c.exec(t, "CREATE DATABASE IF NOT EXISTS okmerge_refuse", "USE okmerge_refuse")
			var out bufConn
			r := &mysql.Relay{Client: mysql.NewConn(&out), Backend: c.Conn, ClientCaps: c.caps, BackendCaps: c.caps}
			c.send(t, mysql.ComQuery, []byte(tc.sql))
			_, err := r.PartOK()
			if mysql.IsBackendError(err) != tc.backend {
				t.Fatalf("PartOK: %v, want a backend error: %v", err, tc.backend)
			}
			if !tc.backend {
				if err != nil || r.Info.Err == nil || r.Info.Err.Code != 1146 {
					t.Fatalf("PartOK: %v, Info.Err %v, want the server's 1146", err, r.Info.Err)
				}
				c.exec(t, "DO 1") // the connection is in step
			}
			if out.out.Len() != 0 || r.Client.Pending() != 0 {
				t.Fatalf("PartOK wrote to the client")
			}
		})
	}
}
