package difftest_test

import (
	"context"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/testenv"
)

func dial(t *testing.T, tgt difftest.Target) *difftest.Client {
	t.Helper()
	c, err := difftest.Dial(context.Background(), tgt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func query(t *testing.T, c *difftest.Client, sql string) difftest.Answer {
	t.Helper()
	a, err := c.Query(sql)
	if err != nil {
		t.Fatal(err)
	}
	if a.Err != nil {
		t.Fatalf("%s: %v", sql, a.Err)
	}
	return a
}

// TestClientBinaryParamsAndRows sends every parameter type the generator
// uses through COM_STMT_EXECUTE, reads them back as text, and reads them
// as binary rows: both targets get the same parameters, so a wrong
// encoding would go unnoticed by the differential test itself.
func TestClientBinaryParamsAndRows(t *testing.T) {
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS client_test", "USE client_test", "DROP TABLE IF EXISTS p, a",
		`CREATE TABLE p (i BIGINT, u BIGINT UNSIGNED, f DOUBLE, s VARCHAR(20), b VARBINARY(20),
		  d DECIMAL(10,3), dt DATE, ts DATETIME(6), n INT) DEFAULT CHARSET=utf8mb4`)
	c := dial(t, difftest.ServerTarget("server", srv, "client_test"))

	st, a, err := c.Prepare("INSERT INTO p VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
	if err != nil || st == nil {
		t.Fatalf("prepare: %v %v", err, a.Err)
	}
	if a.Prepare.Params != 9 {
		t.Fatalf("prepare: %d parameters", a.Prepare.Params)
	}
	ts := time.Date(2024, 2, 29, 23, 59, 58, 123456000, time.UTC)
	ex, err := st.Execute(int64(-42), uint64(18446744073709551615), 1.5, "Ève ", []byte{0, 1, 0xff},
		difftest.Decimal("-12.345"), difftest.Date{Year: 2023, Month: 12, Day: 31}, ts, nil)
	if err != nil || ex.Err != nil {
		t.Fatalf("execute: %v %v", err, ex.Err)
	}
	if r := ex.Results[0]; r.AffectedRows != 1 || r.Columns != nil {
		t.Fatalf("execute: %+v", r)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	text := query(t, c, "SELECT i, u, f, s, HEX(b), d, dt, ts, n FROM p")
	want := `("-42", "18446744073709551615", "1.5", "Ève ", "0001FF", "-12.345", "2023-12-31", "2024-02-29 23:59:58.123456", NULL)`
	if got := difftest.FormatRow(text.Results[0].Columns, text.Results[0].Rows[0], false); got != want {
		t.Errorf("text row %s\nwant     %s", got, want)
	}

	st, _, err = c.Prepare("SELECT i, u, f, s, b, d, dt, ts, n FROM p WHERE i = ?")
	if err != nil || st == nil {
		t.Fatal(err)
	}
	bin, err := st.Execute(difftest.Decimal("-42.0"))
	if err != nil || bin.Err != nil || len(bin.Results) != 1 || len(bin.Results[0].Rows) != 1 {
		t.Fatalf("execute: %v %+v", err, bin)
	}
	r := bin.Results[0]
	want = `(-42, 18446744073709551615, 1.5, "Ève ", "\x00\x01\xff", "-12.345", 2023-12-31 00:00:00.000000/4, 2024-02-29 23:59:58.123456/11, NULL)`
	if got := difftest.FormatRow(r.Columns, r.Rows[0], true); !r.Binary || got != want {
		t.Errorf("binary row %s\nwant       %s", got, want)
	}
	col := r.Columns[3]
	if col.Catalog != "def" || col.Schema != "client_test" || col.Table != "p" || col.OrgTable != "p" ||
		col.Name != "s" || col.OrgName != "s" || col.Charset != 45 || col.Length != 80 || col.Type != 0xfd {
		t.Errorf("column definition %+v", col)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// OK fields, the info string and SHOW WARNINGS.
	query(t, c, "CREATE TABLE a (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
	ins := query(t, c, "INSERT INTO a (v) VALUES (1), (2)")
	if r := ins.Results[0]; r.AffectedRows != 2 || r.LastInsertID != 1 || r.Info != "Records: 2  Duplicates: 0  Warnings: 0" {
		t.Errorf("insert OK %+v", r)
	}
	query(t, c, "INSERT INTO p (i, n) VALUES (1, 1)")
	upd := query(t, c, "UPDATE IGNORE p SET n = 99999999999 WHERE i = 1")
	if r := upd.Results[0]; r.AffectedRows != 1 || r.Info != "Rows matched: 1  Changed: 1  Warnings: 1" || r.Warnings != 1 {
		t.Errorf("update OK %+v", r)
	}
	ws, err := c.Warnings()
	if err != nil || len(ws) != 1 || ws[0].Level != "Warning" || ws[0].Code != 1264 {
		t.Errorf("warnings %+v, %v", ws, err)
	}
}
