package proxy_test

import (
	"encoding/binary"
	"testing"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/mysql/auth"
	"github.com/shardgate/shardgate/internal/testenv"
)

// query runs sql on a raw client and returns its single result.
func (cl *mfClient) query(t testing.TB, sql string) mfResult {
	t.Helper()
	cl.writePacket(0, append([]byte{mysql.ComQuery}, sql...))
	res, err := cl.readResult()
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return res
}

func (cl *mfClient) scalar(t testing.TB, sql string) string {
	t.Helper()
	res := cl.query(t, sql)
	if res.err != nil || len(res.rows) != 1 {
		t.Fatalf("%s: %+v", sql, res)
	}
	return res.rows[0][0]
}

// fetch sends COM_STMT_FETCH of n rows of statement id's cursor and
// returns the row packets and whether the server said the last row was
// sent.
func (cl *mfClient) fetch(t testing.TB, id, n uint32) (rows [][]byte, last bool) {
	t.Helper()
	fetch := []byte{mysql.ComStmtFetch, 0, 0, 0, 0, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(fetch[1:], id)
	binary.LittleEndian.PutUint32(fetch[5:], n)
	cl.writePacket(0, fetch)
	for {
		pkt, err := cl.c.ReadPacket()
		if err != nil {
			t.Fatal(err)
		}
		if mysql.IsErr(pkt) {
			t.Fatalf("fetch: %v", mysql.ParseErr(pkt))
		}
		if mysql.IsEOF(pkt) {
			_, st, _ := mysql.ParseEOF(pkt)
			return rows, st&mysql.StatusLastRowSent != 0
		}
		rows = append(rows, append([]byte(nil), pkt...))
	}
}

func (cl *mfClient) mustOK(t testing.TB, what string) {
	t.Helper()
	p, err := cl.c.ReadPacket()
	if err != nil || !mysql.IsOK(p) {
		t.Fatalf("%s: want OK, got %x %v", what, p, err)
	}
}

func TestProtocolCommands(t *testing.T) {
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS cmds", "CREATE TABLE IF NOT EXISTS cmds.t (id INT PRIMARY KEY, name VARCHAR(10)) ENGINE=InnoDB", "DELETE FROM cmds.t")
	cfg := proxyConfig(t, srv, "")
	cfg.Clusters[0].Pool.MaxOpen, cfg.Clusters[0].Pool.MaxIdle, cfg.Clusters[0].Pool.MinIdle = 2, 2, 2
	p := startProxy(t, cfg)
	addr := p.Addrs()[0]

	t.Run("COM_INIT_DB and COM_FIELD_LIST", func(t *testing.T) {
		cl := mfDial(t, addr)
		cl.mustLogin(t)
		cl.writePacket(0, append([]byte{mysql.ComInitDB}, "cmds"...))
		cl.mustOK(t, "COM_INIT_DB")
		cl.writePacket(0, append([]byte{mysql.ComFieldList}, "t\x00"...))
		n := 0
		for {
			pkt, err := cl.c.ReadPacket()
			if err != nil {
				t.Fatal(err)
			}
			if mysql.IsEOF(pkt) {
				break
			}
			if mysql.IsErr(pkt) {
				t.Fatalf("COM_FIELD_LIST: %v", mysql.ParseErr(pkt))
			}
			n++
		}
		if n != 2 {
			t.Fatalf("COM_FIELD_LIST returned %d columns", n)
		}
		cl.writePacket(0, append([]byte{mysql.ComInitDB}, "no_such_db"...))
		if e := cl.expectErr(t); e.Code != 1049 {
			t.Fatalf("COM_INIT_DB unknown: %v", e)
		}
		if got := cl.scalar(t, "SELECT DATABASE()"); got != "cmds" {
			t.Fatalf("database after failed COM_INIT_DB: %q", got)
		}
	})

	t.Run("COM_STATISTICS and COM_PING", func(t *testing.T) {
		cl := mfDial(t, addr)
		cl.mustLogin(t)
		cl.writePacket(0, []byte{mysql.ComStatistics})
		pkt, err := cl.c.ReadPacket()
		if err != nil || !contains(string(pkt), "Uptime") {
			t.Fatalf("COM_STATISTICS: %q %v", pkt, err)
		}
		cl.writePacket(0, []byte{mysql.ComPing})
		cl.mustOK(t, "COM_PING")
	})

	t.Run("COM_SET_OPTION", func(t *testing.T) {
		cl := mfDial(t, addr)
		cl.mustLogin(t)
		if res := cl.query(t, "DO 1; DO 2"); res.err == nil || res.err.Code != 1064 {
			t.Fatalf("multi-statement without the option: %+v", res)
		}
		cl.writePacket(0, []byte{mysql.ComSetOption, 0, 0}) // MYSQL_OPTION_MULTI_STATEMENTS_ON
		if pkt, err := cl.c.ReadPacket(); err != nil || !mysql.IsEOF(pkt) {
			t.Fatalf("COM_SET_OPTION: %x %v", pkt, err)
		}
		cl.writePacket(0, append([]byte{mysql.ComQuery}, "DO 1; DO 2"...))
		for i := 0; i < 2; i++ {
			pkt, err := cl.c.ReadPacket()
			if err != nil || !mysql.IsOK(pkt) {
				t.Fatalf("multi-statement result %d: %x %v", i, pkt, err)
			}
		}
	})

	t.Run("COM_RESET_CONNECTION", func(t *testing.T) {
		cl := mfDial(t, addr)
		cl.mustLogin(t)
		cl.query(t, "USE cmds")
		cl.query(t, "SET @x = 1")
		cl.query(t, "SET SESSION sql_mode = 'ANSI_QUOTES'")
		cl.query(t, "BEGIN")
		cl.query(t, "INSERT INTO t VALUES (1, 'reset')")
		cl.writePacket(0, []byte{mysql.ComResetConnection})
		cl.mustOK(t, "COM_RESET_CONNECTION")
		res := cl.query(t, "SELECT @x IS NULL, @@session.sql_mode <> 'ANSI_QUOTES', DATABASE()")
		if res.err != nil || len(res.rows) != 1 || res.rows[0][0] != "1" || res.rows[0][1] != "1" || res.rows[0][2] != "cmds" {
			t.Fatalf("after reset: %+v", res)
		}
		if got := cl.scalar(t, "SELECT COUNT(*) FROM t WHERE id = 1"); got != "0" {
			t.Fatalf("transaction survived COM_RESET_CONNECTION: %s rows", got)
		}
	})

	t.Run("COM_CHANGE_USER", func(t *testing.T) {
		cl := mfDial(t, addr)
		cl.mustLogin(t)
		cl.query(t, "SET @y = 5")
		change := func(user, pass, db string) {
			b := []byte{mysql.ComChangeUser}
			b = append(b, user...)
			b = append(b, 0)
			resp := auth.NativeScramble([]byte(pass), cl.g.AuthData)
			b = append(b, byte(len(resp)))
			b = append(b, resp...)
			b = append(b, db...)
			b = append(b, 0)
			b = binary.LittleEndian.AppendUint16(b, uint16(mysql.CollationUTF8MB4GeneralCI))
			b = append(b, auth.PluginNative...)
			b = append(b, 0)
			cl.writePacket(0, b)
		}
		change(appUser, appPass, "cmds")
		cl.mustOK(t, "COM_CHANGE_USER")
		res := cl.query(t, "SELECT @y IS NULL, DATABASE()")
		if res.err != nil || res.rows[0][0] != "1" || res.rows[0][1] != "cmds" {
			t.Fatalf("after change user: %+v", res)
		}
		change(appUser, "wrong", "")
		if e := cl.expectErr(t); e.Code != 1045 {
			t.Fatalf("change user with a wrong password: %v", e)
		}
		cl.expectClosed(t, false)
	})

	t.Run("cursor fetch", func(t *testing.T) {
		srv.Exec(t, "CREATE DATABASE IF NOT EXISTS cmds")
		cl := mfDial(t, addr)
		cl.mustLogin(t)
		cl.query(t, "USE cmds")
		id, _ := cl.mustPrepare(t, "SELECT seq FROM seq_1_to_10")
		exec := []byte{mysql.ComStmtExecute, 0, 0, 0, 0, mysql.CursorTypeReadOnly, 1, 0, 0, 0}
		binary.LittleEndian.PutUint32(exec[1:], id)
		cl.writePacket(0, exec)
		// Metadata, then one EOF carrying SERVER_STATUS_CURSOR_EXISTS.
		pkt, err := cl.c.ReadPacket()
		if err != nil || pkt[0] != 1 {
			t.Fatalf("cursor execute: column count %x %v", pkt, err)
		}
		if _, err := cl.c.ReadPacket(); err != nil {
			t.Fatal(err)
		}
		pkt, err = cl.c.ReadPacket()
		_, status, ok := mysql.ParseEOF(pkt)
		if err != nil || !ok || status&mysql.StatusCursorExists == 0 {
			t.Fatalf("cursor execute: want EOF with CURSOR_EXISTS, got %x %v", pkt, err)
		}
		// Meanwhile another session works normally.
		other := mfDial(t, addr)
		other.mustLogin(t)
		other.mustSelect1(t)
		rows := 0
		for done := false; !done; {
			var got [][]byte
			got, done = cl.fetch(t, id, 4)
			rows += len(got)
			if rows > 20 {
				t.Fatal("cursor never ended")
			}
		}
		if rows != 10 {
			t.Fatalf("fetched %d rows, want 10", rows)
		}
		cl.mustSelect1(t)
	})
}
