package mysql_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/testenv"
)

// Tables standing in for shards: t_0, t_1 (empty) and t_2 hold, in that
// order, the rows t_all holds; t_all is what one server holding everything
// answers. Renaming the parts' tables to t_all makes even their column
// definitions those of one server.
const scatterDB = "scatter_test"

var scatterParts = []string{"t_0", "t_1", "t_2"}

func renameToAll(schema, table []byte) ([]byte, bool) {
	if string(schema) == scatterDB && len(table) == 3 && string(table[:2]) == "t_" {
		return []byte("t_all"), true
	}
	return nil, false
}

func setupScatter(t *testing.T, srv *testenv.Server) {
	t.Helper()
	c := dialServer(t, srv, "", 0)
	c.exec(t, "DROP DATABASE IF EXISTS "+scatterDB, "CREATE DATABASE "+scatterDB, "USE "+scatterDB)
	ddl := "CREATE TABLE %s (id INT PRIMARY KEY, v VARCHAR(20) NOT NULL DEFAULT 'none', w VARCHAR(10))"
	rows := map[string]string{
		"t_0": "(1,'one','1'),(2,'two','x'),(3,'three',NULL),(4,'four','4y')",
		"t_2": "(5,'five','z'),(6,'six','6'),(7,'seven','q7')",
	}
	for _, tbl := range append([]string{"t_all"}, scatterParts...) {
		c.exec(t, fmt.Sprintf(ddl, tbl))
	}
	for _, tbl := range []string{"t_0", "t_2"} {
		c.exec(t, "INSERT INTO "+tbl+" VALUES "+rows[tbl], "INSERT INTO t_all VALUES "+rows[tbl])
	}
}

// compareWithServer checks the client's stream against the one server's
// frames. A client without DEPRECATE_EOF of a backend with it gets the
// column EOF from the proxy, which cannot know the status the server would
// have put there: that status is not compared.
func compareWithServer(t *testing.T, got []byte, want []frame, ownColumnEOF int) {
	t.Helper()
	frames := splitFrames(t, got)
	if len(frames) != len(want) {
		t.Fatalf("client got %d frames, one server sends %d", len(frames), len(want))
	}
	for i := range frames {
		g, w := frames[i], want[i]
		if i == ownColumnEOF && len(g.payload) == 5 && len(w.payload) == 5 {
			g.payload, w.payload = g.payload[:3], w.payload[:3]
		}
		if g.seq != w.seq || !bytes.Equal(g.payload, w.payload) {
			t.Fatalf("frame %d: got seq %d %q, one server sends seq %d %q", i, g.seq, trunc(g.payload), w.seq, trunc(w.payload))
		}
	}
}

func trunc(p []byte) []byte {
	if len(p) > 80 {
		return p[:80]
	}
	return p
}

// terminatorStatus is the status of a result set's last frame.
func terminatorStatus(t *testing.T, f frame, caps uint32) uint16 {
	t.Helper()
	if caps&mysql.ClientDeprecateEOF != 0 {
		ok, valid := mysql.ParseOK(f.payload, caps)
		if !valid {
			t.Fatalf("terminator %q", f.payload)
		}
		return ok.Status
	}
	_, status, valid := mysql.ParseEOF(f.payload)
	if !valid {
		t.Fatalf("terminator %q", f.payload)
	}
	return status
}

// TestConcatAgainstServer: the rows of t_0, t_1 (empty) and t_2 relayed as
// parts with Concat reach the client, byte for byte, as a real server sends
// the same rows from t_all, text and binary protocol, for every combination
// of client and backend DEPRECATE_EOF: column definitions (renamed, an
// alias kept), rows, sequence ids, summed warnings.
func TestConcatAgainstServer(t *testing.T) {
	srv := testenv.Shared(t)
	setupScatter(t, srv)
	queries := []string{
		"SELECT id, v, CAST(w AS SIGNED) AS n FROM %s", // a warning per non-numeric w
		"SELECT a.id AS x, a.v FROM %s a",
		"SELECT id FROM %s WHERE id > 100",
	}
	for _, sel := range []struct{ client, backend bool }{{false, false}, {true, true}, {false, true}, {true, false}} {
		caps := func(dep bool) uint32 {
			if dep {
				return mysql.ClientSessionTrack | mysql.ClientDeprecateEOF
			}
			return mysql.ClientSessionTrack
		}
		ref := dialServer(t, srv, scatterDB, caps(sel.client))
		back := dialServer(t, srv, scatterDB, caps(sel.backend))
		for qi, q := range queries {
			for _, binary := range []bool{false, true} {
				name := fmt.Sprintf("query%d/binary=%v/clientDeprecateEOF=%v,backendDeprecateEOF=%v", qi, binary, sel.client, sel.backend)
				t.Run(name, func(t *testing.T) {
					run := func(c *serverConn, table string) {
						sql := fmt.Sprintf(q, table)
						if !binary {
							c.send(t, mysql.ComQuery, []byte(sql))
							return
						}
						c.execute(t, c.prepare(t, sql+andParam(sql)), 0)
					}
					run(ref, "t_all")
					want := ref.readResultSet(t)
					bc := &bufConn{}
					client := mysql.NewConn(bc)
					client.SetSeq(1)
					var c mysql.Concat
					c.Reset()
					for _, tbl := range scatterParts {
						run(back, tbl)
						r := &mysql.Relay{Client: client, Backend: back.Conn, ClientCaps: ref.caps, BackendCaps: back.caps, RenameTable: renameToAll}
						if err := c.Part(r); err != nil || c.Info.Err != nil {
							t.Fatalf("part %s: %v %v", tbl, err, c.Info.Err)
						}
					}
					if err := c.Finish(terminatorStatus(t, want[len(want)-1], ref.caps)); err != nil {
						t.Fatal(err)
					}
					ownEOF := -1
					if !sel.client && sel.backend {
						cols, _, _, _ := mysql.ReadLenEncInt(want[0].payload)
						ownEOF = 1 + int(cols)
					}
					compareWithServer(t, bc.out.Bytes(), want, ownEOF)
				})
			}
		}
	}
}

// andParam gives a statement the parameter the binary-protocol runs bind.
func andParam(sql string) string {
	if strings.Contains(sql, "WHERE") {
		return " AND id > ?"
	}
	return " WHERE id > ?"
}

// readUntilEOF reads frames up to and including an EOF or ERR (a
// COM_FIELD_LIST response).
func (c *serverConn) readUntilEOF(t *testing.T) []frame {
	t.Helper()
	var fs []frame
	for {
		p := c.readPacketFrames(t)
		fs = append(fs, p...)
		if len(p) == 1 && (mysql.IsErr(p[0].payload) || mysql.IsEOF(p[0].payload)) {
			return fs
		}
	}
}

// readPrepareResponse reads a COM_STMT_PREPARE response as frames.
func (c *serverConn) readPrepareResponse(t *testing.T) []frame {
	t.Helper()
	fs := c.readPacketFrames(t)
	p := fs[0].payload
	for _, n := range []int{int(p[7]) | int(p[8])<<8, int(p[5]) | int(p[6])<<8} {
		for i := 0; i < n; i++ {
			fs = append(fs, c.readPacketFrames(t)...)
		}
		if n > 0 && c.caps&mysql.ClientDeprecateEOF == 0 {
			fs = append(fs, c.readPacketFrames(t)...)
		}
	}
	return fs
}

// TestRenameAgainstServer: a prepare response and a COM_FIELD_LIST response
// for sub-table t_0, relayed with RenameTable, are byte for byte a real
// server's for t_all.
func TestRenameAgainstServer(t *testing.T) {
	srv := testenv.Shared(t)
	setupScatter(t, srv)
	for _, dep := range []bool{false, true} {
		extra := mysql.ClientSessionTrack
		if dep {
			extra |= mysql.ClientDeprecateEOF
		}
		ref := dialServer(t, srv, scatterDB, extra)
		back := dialServer(t, srv, scatterDB, extra)
		for _, tc := range []struct {
			name string
			cmd  byte
			arg  func(table string) string
		}{
			{name: "prepare", cmd: mysql.ComStmtPrepare, arg: func(tbl string) string { return "SELECT a.id AS x, v, w FROM " + tbl + " a WHERE id > ?" }},
			{name: "field list", cmd: mysql.ComFieldList, arg: func(tbl string) string { return tbl + "\x00" }},
		} {
			t.Run(fmt.Sprintf("%s/deprecateEOF=%v", tc.name, dep), func(t *testing.T) {
				ref.send(t, tc.cmd, []byte(tc.arg("t_all")))
				var want []frame
				if tc.cmd == mysql.ComStmtPrepare {
					want = ref.readPrepareResponse(t)
				} else {
					want = ref.readUntilEOF(t)
				}
				bc := &bufConn{}
				r := &mysql.Relay{Client: mysql.NewConn(bc), Backend: back.Conn, ClientCaps: ref.caps, BackendCaps: back.caps, RenameTable: renameToAll}
				r.Client.SetSeq(1)
				back.send(t, tc.cmd, []byte(tc.arg("t_0")))
				var err error
				if tc.cmd == mysql.ComStmtPrepare {
					p := want[0].payload
					_, _, _, _, err = r.Prepare(uint32(p[1]) | uint32(p[2])<<8 | uint32(p[3])<<16 | uint32(p[4])<<24)
				} else {
					err = r.FieldList()
				}
				if err != nil {
					t.Fatal(err)
				}
				compareWithServer(t, bc.out.Bytes(), want, -1)
			})
		}
	}
}
