package proxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shardgate/shardgate/internal/testenv"
)

func TestPreparedStatementsAcrossBackendConns(t *testing.T) {
	srv := testenv.Start(t, testenv.Options{}) // own server: Prepared_stmt_count is global
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS ps", "CREATE TABLE IF NOT EXISTS ps.t (id INT PRIMARY KEY, s VARCHAR(50), d DOUBLE, b BLOB, dt DATETIME(6))")
	srv.Exec(t, "DELETE FROM ps.t")
	cfg := proxyConfig(t, srv, "")
	cfg.Clusters[0].Pool.MaxOpen, cfg.Clusters[0].Pool.MaxIdle, cfg.Clusters[0].Pool.MinIdle = 3, 3, 3
	cfg.Clusters[0].Pool.PreparedStatementsPerConn = 2 // force LRU eviction
	p := startProxy(t, cfg)
	db := openDB(t, proxyDSN(p, appUser, appPass, "ps", "parseTime=true"))
	db.SetMaxOpenConns(8)
	ins, err := db.Prepare("INSERT INTO t (id, s, d, b, dt) VALUES (?, ?, ?, ?, NOW(6))")
	if err != nil {
		t.Fatal(err)
	}
	defer ins.Close()
	sel, err := db.Prepare("SELECT s, d, b FROM t WHERE id = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer sel.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				id := w*1000 + i
				s := fmt.Sprintf("row-%d", id)
				if _, err := ins.Exec(id, s, float64(id)/3, []byte{byte(i), 0, 0xff}); err != nil {
					errs <- fmt.Errorf("insert %d: %w", id, err)
					return
				}
				var gs string
				var gd float64
				var gb []byte
				if err := sel.QueryRow(id).Scan(&gs, &gd, &gb); err != nil {
					errs <- fmt.Errorf("select %d: %w", id, err)
					return
				}
				if gs != s || gd != float64(id)/3 || len(gb) != 3 || gb[0] != byte(i) || gb[2] != 0xff {
					errs <- fmt.Errorf("row %d: got %q %v %v", id, gs, gd, gb)
					return
				}
				// A third statement on the same connection evicts one of
				// the others from the backend connection's cache.
				var n int
				if err := db.QueryRow("SELECT COUNT(*) FROM t WHERE id < ?", id+1).Scan(&n); err != nil {
					errs <- fmt.Errorf("count: %w", err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Backend prepared statements stay bounded: 3 conns x 2 statements.
	var name string
	var count int
	root := srv.RootDB(t)
	if err := root.QueryRow("SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'").Scan(&name, &count); err != nil {
		t.Fatal(err)
	}
	if count > 3*2 {
		t.Fatalf("Prepared_stmt_count = %d, want <= 6 (LRU bound per backend connection)", count)
	}
}

func TestMultiStatementsAndResultSets(t *testing.T) {
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS ms",
		"DROP PROCEDURE IF EXISTS ms.two",
		"CREATE PROCEDURE ms.two() BEGIN SELECT 1 AS a; SELECT 'x' AS b, 2 AS c; END")
	p := startProxy(t, proxyConfig(t, srv, ""))
	db := openDB(t, proxyDSN(p, appUser, appPass, "ms", "multiStatements=true"))
	conn := oneConn(t, db)
	rows, err := conn.QueryContext(context.Background(), "SELECT 1; SELECT 2, 3; DO 1; SELECT 'end'")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]sql.RawBytes, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			var parts []string
			for _, v := range vals {
				parts = append(parts, string(v))
			}
			got = append(got, strings.Join(parts, ","))
		}
		if !rows.NextResultSet() {
			break
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if strings.Join(got, "|") != "1|2,3|end" {
		t.Fatalf("multi-statement results: %q", got)
	}
	// Stored procedure with two result sets, via CALL.
	rows, err = conn.QueryContext(context.Background(), "CALL two()")
	if err != nil {
		t.Fatal(err)
	}
	sets := 0
	for {
		for rows.Next() {
		}
		sets++
		if !rows.NextResultSet() {
			break
		}
	}
	rows.Close()
	if sets < 2 {
		t.Fatalf("CALL returned %d result sets", sets)
	}
	// Without multiStatements, a multi-statement is a syntax error, as on
	// the server.
	db2 := openDB(t, proxyDSN(p, appUser, appPass, "ms", ""))
	if _, err := db2.Exec("DO 1; DO 2"); mysqlErrCode(err) != 1064 {
		t.Fatalf("multi-statement without the flag: %v", err)
	}
}

func TestLoadDataLocalInfile(t *testing.T) {
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS ld", "CREATE TABLE IF NOT EXISTS ld.t (id INT, name VARCHAR(20))", "DELETE FROM ld.t",
		"SET GLOBAL local_infile=1")
	p := startProxy(t, proxyConfig(t, srv, ""))
	file := filepath.Join(t.TempDir(), "rows.csv")
	var sb strings.Builder
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&sb, "%d,name-%d\n", i, i)
	}
	if err := os.WriteFile(file, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	mysql.RegisterLocalFile(file)
	db := openDB(t, proxyDSN(p, appUser, appPass, "ld", ""))
	res, err := db.Exec(fmt.Sprintf("LOAD DATA LOCAL INFILE '%s' INTO TABLE t FIELDS TERMINATED BY ','", file))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 5000 {
		t.Fatalf("rows affected %d", n)
	}
	if got := queryString(t, db, "SELECT COUNT(*) FROM t"); got != "5000" {
		t.Fatalf("count %s", got)
	}
	// The proxy never reads a file of its own host: a name the client does
	// not allow fails on the client side, and nothing is loaded.
	if _, err := db.Exec("LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE t"); err == nil {
		t.Fatal("loading an unregistered file succeeded")
	}
	if got := queryString(t, db, "SELECT COUNT(*) FROM t"); got != "5000" {
		t.Fatalf("count after refused load %s", got)
	}
}

// slowReader yields its data in two halves with a pause between them.
type slowReader struct {
	halves [2]string
	pause  time.Duration
	i      int
}

func (r *slowReader) Read(p []byte) (int, error) {
	if r.i == 2 {
		return 0, io.EOF
	}
	if r.i == 1 {
		time.Sleep(r.pause)
	}
	n := copy(p, r.halves[r.i])
	r.halves[r.i] = r.halves[r.i][n:]
	if r.halves[r.i] == "" {
		r.i++
	}
	return n, nil
}

// An upload slower than the proxy's 2 s idle wait before parking must not
// be cut off: the wait for the command must leave no read deadline behind.
func TestLoadDataLocalSlowUpload(t *testing.T) {
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS ld", "CREATE TABLE IF NOT EXISTS ld.slow (id INT)", "DELETE FROM ld.slow",
		"SET GLOBAL local_infile=1")
	p := startProxy(t, proxyConfig(t, srv, ""))
	mysql.RegisterReaderHandler("slow", func() io.Reader {
		return &slowReader{halves: [2]string{"1\n2\n", "3\n"}, pause: 2500 * time.Millisecond}
	})
	defer mysql.DeregisterReaderHandler("slow")
	db := openDB(t, proxyDSN(p, appUser, appPass, "ld", ""))
	conn := oneConn(t, db)
	ctx := context.Background()
	// Let the session wait for its next command first, as an application
	// would between statements.
	time.Sleep(100 * time.Millisecond)
	res, err := conn.ExecContext(ctx, "LOAD DATA LOCAL INFILE 'Reader::slow' INTO TABLE slow")
	if err != nil {
		t.Fatalf("slow upload: %v", err)
	}
	if n, _ := res.RowsAffected(); n != 3 {
		t.Fatalf("rows affected %d, want 3", n)
	}
}
