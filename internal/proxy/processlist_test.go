package proxy_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/testenv"
)

// Proxy users of the processlist tests besides appUser: another one
// without the PROCESS privilege, and one with it.
const (
	otherUser, otherPass = "other", "other-pw"
	opsUser, opsPass     = "ops", "ops-pw"
)

// processlistConfig is one cluster on srv with appUser and otherUser
// (without PROCESS) and opsUser (process: true); extra is more YAML.
func processlistConfig(t testing.TB, srv *testenv.Server, extra string) *config.Config {
	t.Helper()
	return parseConfig(t, fmt.Sprintf(`
listeners: [{address: "127.0.0.1:0"}]
users:
  - {name: %s, password_hash: "%s"}
  - {name: %s, password_hash: "%s"}
  - {name: %s, password_hash: "%s", process: true}
  - {name: %s, password: %s}
clusters:
  - name: main
    user: %s
    password: %s
    pool: {max_open: 8, wait_timeout: 10s}
    primary: {address: "%s"}
%s`, appUser, hashOf(appPass), otherUser, hashOf(otherPass), opsUser, hashOf(opsPass),
		testenv.User, testenv.Password, testenv.User, testenv.Password, srv.Addr, extra), "processlist.yaml")
}

// killQueryAndWait runs KILL QUERY id on killer and waits for the killed
// statement's end (done): interrupted (1317) or finished.
func killQueryAndWait(t testing.TB, killer *sql.Conn, id string, done <-chan error) {
	t.Helper()
	mustExec(t, killer, "KILL QUERY "+id)
	select {
	case err := <-done:
		if err != nil && mysqlErrCode(err) != 1317 {
			t.Fatalf("the killed statement: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("KILL QUERY did not stop the statement")
	}
}

// plRows runs a query and returns its column names and rows, NULL as
// nil.
func plRows(t testing.TB, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, text string) ([]string, [][]*string) {
	t.Helper()
	rows, err := q.QueryContext(context.Background(), text)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]*string
	for rows.Next() {
		vals, err := scanNullStrings(rows, len(cols))
		if err != nil {
			t.Fatal(err)
		}
		row := make([]*string, len(cols))
		for i, v := range vals {
			if v.Valid {
				s := v.String
				row[i] = &s
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	return cols, out
}

// plIDs returns the first column of rows.
func plIDs(rows [][]*string) []string {
	var ids []string
	for _, r := range rows {
		ids = append(ids, str(r[0]))
	}
	return ids
}

// showRow formats a row for a test's message.
func showRow(r []*string) string {
	var vals []string
	for _, v := range r {
		if v == nil {
			vals = append(vals, "NULL")
		} else {
			vals = append(vals, strconv.Quote(*v))
		}
	}
	return "(" + strings.Join(vals, ", ") + ")"
}

func showRows(rows [][]*string) string {
	var out []string
	for _, r := range rows {
		out = append(out, showRow(r))
	}
	return "[" + strings.Join(out, " ") + "]"
}

func str(p *string) string {
	if p == nil {
		return "NULL"
	}
	return *p
}

// rowByID returns the row whose first column is id, or nil.
func rowByID(rows [][]*string, id string) []*string {
	for _, r := range rows {
		if str(r[0]) == id {
			return r
		}
	}
	return nil
}

// A client finds its own session in SHOW [FULL] PROCESSLIST and in
// information_schema.PROCESSLIST by CONNECTION_ID(), with the proxy's
// values; another connection of the same user stops its statement with
// KILL QUERY and ends it with KILL, by the id from the list.
func TestProcesslistFindAndKill(t *testing.T) {
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS plkill")
	p := startProxy(t, processlistConfig(t, srv, ""))
	db := openDB(t, proxyDSN(p, appUser, appPass, "plkill", ""))
	ctx := context.Background()
	a, b := oneConn(t, db), oneConn(t, db)
	aID := queryString(t, a, "SELECT CONNECTION_ID()")

	_, rows := plRows(t, a, "SHOW PROCESSLIST")
	own := rowByID(rows, aID)
	if own == nil {
		t.Fatalf("SHOW PROCESSLIST has no row %s: ids %v", aID, plIDs(rows))
	}
	host, _, err := net.SplitHostPort(str(own[2]))
	if str(own[1]) != appUser || host != "127.0.0.1" || str(own[3]) != "plkill" || str(own[4]) != "Query" ||
		str(own[6]) != "starting" || str(own[7]) != "SHOW PROCESSLIST" || err != nil {
		t.Fatalf("own row of SHOW PROCESSLIST: %s", showRow(own))
	}
	_, rows = plRows(t, a, "SHOW FULL PROCESSLIST")
	if own := rowByID(rows, aID); own == nil || str(own[7]) != "SHOW FULL PROCESSLIST" {
		t.Fatalf("SHOW FULL PROCESSLIST: own row %s in %v", showRow(own), plIDs(rows))
	}
	q := "SELECT ID, USER, HOST, DB, COMMAND, TIME, STATE, INFO FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()"
	_, rows = plRows(t, a, q)
	if len(rows) != 1 || str(rows[0][0]) != aID || str(rows[0][1]) != appUser || str(rows[0][4]) != "Query" ||
		str(rows[0][6]) != "Filling schema table" || str(rows[0][7]) != q {
		t.Fatalf("own row of information_schema.PROCESSLIST: %s", showRows(rows))
	}
	cols, rows := plRows(t, a, "SELECT * FROM information_schema.PROCESSLIST")
	if len(cols) != 18 || cols[0] != "ID" || cols[17] != "TID" || rowByID(rows, aID) == nil {
		t.Fatalf("SELECT *: columns %v, ids %v", cols, plIDs(rows))
	}

	// b sees a idle, then running a statement, and kills the statement.
	// (a's answer reaches its client a moment before its session marks
	// itself idle, as on a server: wait for it.)
	waitFor(t, "a idle: Sleep, state '', no statement", 30*time.Second, func() bool {
		_, rows := plRows(t, b, "SELECT COMMAND, STATE, INFO FROM information_schema.PROCESSLIST WHERE ID = "+aID)
		return len(rows) == 1 && str(rows[0][0]) == "Sleep" && str(rows[0][1]) == "" && rows[0][2] == nil
	})
	done := make(chan error, 1)
	go func() {
		_, err := a.ExecContext(ctx, "SELECT SLEEP(100)")
		done <- err
	}()
	waitFor(t, "a's SLEEP in the process list", 30*time.Second, func() bool {
		_, rows := plRows(t, b, "SELECT COMMAND, INFO FROM information_schema.PROCESSLIST WHERE ID = "+aID)
		return len(rows) == 1 && str(rows[0][0]) == "Query" && str(rows[0][1]) == "SELECT SLEEP(100)"
	})
	_, rows = plRows(t, b, "SHOW PROCESSLIST")
	if r := rowByID(rows, aID); r == nil || str(r[4]) != "Query" || str(r[6]) != "Executing" || str(r[7]) != "SELECT SLEEP(100)" {
		t.Fatalf("a running, in SHOW PROCESSLIST: %s", showRow(r))
	}
	killQueryAndWait(t, b, aID, done)
	if got := queryString(t, a, "SELECT 'alive'"); got != "alive" {
		t.Fatalf("a after KILL QUERY: %q", got)
	}

	// KILL ends a's session: it leaves the list and its connection is gone.
	mustExec(t, b, "KILL "+aID)
	waitFor(t, "a to leave the process list", 30*time.Second, func() bool {
		_, rows := plRows(t, b, "SELECT ID FROM information_schema.PROCESSLIST WHERE ID = "+aID)
		return len(rows) == 0
	})
	if _, err := a.ExecContext(ctx, "SELECT 1"); err == nil {
		t.Fatal("a still works after KILL of its listed id")
	}
}

// A user without PROCESS sees its own sessions only, as on the server;
// one with it (users[].process) sees every client session.
func TestProcesslistPrivilege(t *testing.T) {
	srv := testenv.Shared(t)
	p := startProxy(t, processlistConfig(t, srv, ""))
	app := oneConn(t, openDB(t, proxyDSN(p, appUser, appPass, "", "")))
	app2 := oneConn(t, openDB(t, proxyDSN(p, appUser, appPass, "", "")))
	other := oneConn(t, openDB(t, proxyDSN(p, otherUser, otherPass, "", "")))
	ops := oneConn(t, openDB(t, proxyDSN(p, opsUser, opsPass, "", "")))
	id := func(c *sql.Conn) string { return queryString(t, c, "SELECT CONNECTION_ID()") }
	appID, app2ID, otherID, opsID := id(app), id(app2), id(other), id(ops)

	sorted := sortIDs
	for _, tc := range []struct {
		c    *sql.Conn
		want []string
	}{
		{app, sorted(appID, app2ID)},
		{other, []string{otherID}},
		{ops, sorted(appID, app2ID, otherID, opsID)},
	} {
		_, rows := plRows(t, tc.c, "SHOW PROCESSLIST")
		if got := plIDs(rows); !slices.Equal(got, tc.want) {
			t.Errorf("SHOW PROCESSLIST of %s: ids %v, want %v", queryString(t, tc.c, "SELECT USER FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()"), got, tc.want)
		}
		_, rows = plRows(t, tc.c, "SELECT ID FROM information_schema.PROCESSLIST ORDER BY ID")
		if got := plIDs(rows); !slices.Equal(got, tc.want) {
			t.Errorf("information_schema.PROCESSLIST: ids %v, want %v", got, tc.want)
		}
	}
	// Seeing a session is not owning it: KILL of another user's session
	// stays refused.
	if _, err := ops.ExecContext(context.Background(), "KILL QUERY "+appID); mysqlErrCode(err) != mysql.ERKillDenied {
		t.Fatalf("KILL QUERY of another user's listed session: %v, want 1095", err)
	}
}

// rawResult is a text result set as a raw client reads it: the column
// definition packets and the rows, NULL as nil.
type rawResult struct {
	defs [][]byte
	rows [][]*string
	err  *mysql.SQLError
}

// rawQuery sends a COM_QUERY on cl (classic EOF packets) and reads the
// answer.
func rawQuery(t testing.TB, cl *mfClient, text string) rawResult {
	t.Helper()
	cl.writePacket(0, append([]byte{mysql.ComQuery}, text...))
	r, err := cl.readResult()
	switch {
	case err != nil:
		t.Fatalf("%s: %v", text, err)
	case r.ok:
		t.Fatalf("%s: an OK packet, not a result set", text)
	}
	res := rawResult{defs: r.defs, err: r.err}
	for i, vals := range r.rows {
		row := make([]*string, len(vals))
		for j := range vals {
			if !r.nulls[i][j] {
				row[j] = &vals[j]
			}
		}
		res.rows = append(res.rows, row)
	}
	return res
}

func rawLogin(t testing.TB, addr, user, pass string) *mfClient {
	t.Helper()
	cl := mfDial(t, addr)
	cl.mustGreeting(t)
	if err := cl.authenticateAs(user, pass); err != nil {
		t.Fatalf("login %s at %s: %v", user, addr, err)
	}
	_ = cl.nc.SetDeadline(time.Time{})
	return cl
}

// rawOwnID returns the connection id of cl's session.
func rawOwnID(t testing.TB, cl *mfClient) string {
	t.Helper()
	res := rawQuery(t, cl, "SELECT CONNECTION_ID()")
	if res.err != nil || len(res.rows) != 1 {
		t.Fatalf("CONNECTION_ID(): %+v", res)
	}
	return *res.rows[0][0]
}

// The column definitions (names, types, lengths, character sets, flags,
// tables) are the server's for each statement, and the querying
// session's own row reads as on the server, but for what names the
// proxy's session (id, user, host) or measures a server thread (time,
// memory, query id, thread id).
func TestProcesslistColumnsAsServer(t *testing.T) {
	srv := testenv.Shared(t)
	p := startProxy(t, processlistConfig(t, srv, ""))
	viaProxy := rawLogin(t, p.Addrs()[0], testenv.User, testenv.Password)
	direct := rawLogin(t, srv.Addr, testenv.User, testenv.Password)
	proxyID, directID := rawOwnID(t, viaProxy), rawOwnID(t, direct)

	// skip lists the columns (by name) whose values differ by nature.
	serverOnly := []string{"Id", "User", "Host", "Time", "ID", "USER", "HOST", "TIME", "TIME_MS", "MEMORY_USED", "MAX_MEMORY_USED", "QUERY_ID", "TID", "x", "user", "u"}
	for _, q := range []string{
		"SHOW PROCESSLIST",
		"SHOW FULL PROCESSLIST",
		"show full processlist",
		"SELECT * FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()",
		"SELECT ID, USER, HOST, DB, COMMAND, TIME, STATE, INFO FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()",
		"select id AS x, p.user, `Info`, p.State FROM INFORMATION_SCHEMA.processlist p WHERE p.id = connection_id()",
		"SELECT pl.*, pl.USER AS u FROM `information_schema`.`PROCESSLIST` AS pl WHERE ID IN (CONNECTION_ID()) ORDER BY 1 DESC LIMIT 5",
	} {
		want, got := rawQuery(t, direct, q), rawQuery(t, viaProxy, q)
		if want.err != nil || got.err != nil {
			t.Fatalf("%s: server %v, proxy %v", q, want.err, got.err)
		}
		if len(want.defs) != len(got.defs) {
			t.Fatalf("%s: %d columns, the server's %d", q, len(got.defs), len(want.defs))
		}
		var names []string
		for i := range want.defs {
			if !bytes.Equal(want.defs[i], got.defs[i]) {
				w, _ := mysql.ParseColumnDef(want.defs[i])
				g, _ := mysql.ParseColumnDef(got.defs[i])
				t.Errorf("%s: column %d is %+v, the server's %+v", q, i, g, w)
			}
			d, _ := mysql.ParseColumnDef(want.defs[i])
			names = append(names, string(d.Name))
		}
		wantRow, gotRow := rowByID(want.rows, directID), rowByID(got.rows, proxyID)
		if strings.HasPrefix(q, "select id AS x") || strings.Contains(q, "pl.*") {
			wantRow, gotRow = nil, nil
			if len(want.rows) == 1 && len(got.rows) == 1 {
				wantRow, gotRow = want.rows[0], got.rows[0]
			}
		}
		if wantRow == nil || gotRow == nil {
			t.Fatalf("%s: own row: server %s, proxy %s", q, showRows(want.rows), showRows(got.rows))
		}
		for i, name := range names {
			if slices.Contains(serverOnly, name) {
				continue
			}
			if str(wantRow[i]) != str(gotRow[i]) {
				t.Errorf("%s: own row's %s = %q, the server's %q", q, name, str(gotRow[i]), str(wantRow[i]))
			}
		}
	}
}

// The proxy answers these statements on a sharded schema too: none of
// them reaches a shard's thread list.
func TestProcesslistShardedSchema(t *testing.T) {
	p, _, _, _, _, proxyDB := shardedPairProxy(t, "plshard")
	_ = p
	c := oneConn(t, proxyDB(""))
	id := queryString(t, c, "SELECT CONNECTION_ID()")
	for _, q := range []string{"SHOW PROCESSLIST", "SHOW FULL PROCESSLIST", "SELECT ID, DB, INFO FROM information_schema.PROCESSLIST",
		"/* shardgate:shard=s1 */ SHOW PROCESSLIST"} {
		_, rows := plRows(t, c, q)
		if len(rows) != 1 || str(rows[0][0]) != id {
			t.Errorf("%s: ids %v, want only %s", q, plIDs(rows), id)
		}
	}
	_, rows := plRows(t, c, "SELECT DB, INFO FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()")
	if len(rows) != 1 || str(rows[0][0]) != "plshard" {
		t.Fatalf("own row on the sharded schema: %s", showRows(rows))
	}
}

// The shapes of queries on information_schema.PROCESSLIST the proxy
// answers (column lists, WHERE, ORDER BY, LIMIT), compared with what the
// rows must be; the rest is refused with 1235, never answered with the
// backend's threads.
func TestProcesslistQueries(t *testing.T) {
	srv := testenv.Shared(t)
	p := startProxy(t, processlistConfig(t, srv, ""))
	ops := oneConn(t, openDB(t, proxyDSN(p, opsUser, opsPass, "", "")))
	app := oneConn(t, openDB(t, proxyDSN(p, appUser, appPass, "", "")))
	other := oneConn(t, openDB(t, proxyDSN(p, otherUser, otherPass, "", "")))
	opsID := queryString(t, ops, "SELECT CONNECTION_ID()")
	appID := queryString(t, app, "SELECT CONNECTION_ID()")
	otherID := queryString(t, other, "SELECT CONNECTION_ID()")
	all := sortIDs(opsID, appID, otherID)
	desc := slices.Clone(all)
	slices.Reverse(desc)
	// The others' answers reach their clients a moment before their
	// sessions mark themselves idle: wait for that, the rows below
	// depend on it.
	waitFor(t, "the other sessions idle", 30*time.Second, func() bool {
		_, rows := plRows(t, ops, "SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND = 'Sleep' AND INFO IS NULL ORDER BY ID")
		return slices.Equal(plIDs(rows), without(all, opsID))
	})

	for _, tc := range []struct {
		q    string
		want []string // the ids, in order
	}{
		{"SELECT ID FROM information_schema.PROCESSLIST WHERE USER = 'app'", []string{appID}},
		{"SELECT ID FROM information_schema.PROCESSLIST WHERE USER = 'APP '", []string{appID}}, // utf8mb3_general_ci, PAD SPACE
		{"SELECT ID FROM information_schema.PROCESSLIST WHERE USER <> 'app' AND USER <> 'other'", []string{opsID}},
		{"SELECT ID FROM information_schema.PROCESSLIST WHERE USER IN ('other', 'app') ORDER BY USER DESC", []string{otherID, appID}},
		{"SELECT ID FROM information_schema.PROCESSLIST WHERE ID = " + otherID, []string{otherID}},
		{"SELECT ID FROM information_schema.PROCESSLIST WHERE ID = '" + otherID + "'", []string{otherID}},
		{"SELECT ID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID() OR USER LIKE 'ot%' ORDER BY ID", sortIDs(opsID, otherID)},
		{"SELECT ID FROM information_schema.PROCESSLIST WHERE INFO IS NULL ORDER BY ID", without(all, opsID)},
		{"SELECT ID FROM information_schema.PROCESSLIST WHERE DB IS NULL AND NOT (STATE = '') ORDER BY ID", []string{opsID}},
		{"SELECT ID FROM information_schema.PROCESSLIST ORDER BY ID", all},
		{"SELECT ID FROM information_schema.PROCESSLIST ORDER BY ID DESC", desc},
		{"SELECT ID AS n FROM information_schema.PROCESSLIST ORDER BY n DESC LIMIT 2", desc[:2]},
		{"SELECT ID FROM information_schema.PROCESSLIST ORDER BY 1 LIMIT 1, 2", all[1:]},
		{"SELECT ID FROM information_schema.PROCESSLIST ORDER BY ID LIMIT 2 OFFSET 1", all[1:]},
		{"SELECT ID, USER FROM information_schema.PROCESSLIST ORDER BY USER, ID", []string{appID, opsID, otherID}},
		{"SELECT ID FROM information_schema.PROCESSLIST p WHERE p.USER = 'ops' ORDER BY p.ID", []string{opsID}},
		{"SELECT ID FROM information_schema.PROCESSLIST WHERE TIME >= 0 AND ID BETWEEN 1 AND 4294967295 ORDER BY ID LIMIT 0", nil},
		{"SELECT ID FROM information_schema.processlist WHERE `user` = 'app';", []string{appID}},
	} {
		_, rows := plRows(t, ops, tc.q)
		if got := plIDs(rows); !slices.Equal(got, tc.want) {
			t.Errorf("%s: ids %v, want %v", tc.q, got, tc.want)
		}
	}
	// Sleeping sessions: the query itself runs, so COMMAND = 'Sleep'
	// finds the others.
	_, rows := plRows(t, ops, "SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND = 'Sleep' ORDER BY ID")
	if got := plIDs(rows); !slices.Equal(got, without(all, opsID)) {
		t.Errorf("COMMAND = 'Sleep': %v, want %v", got, without(all, opsID))
	}

	// With information_schema as the current database, PROCESSLIST
	// unqualified is the same table.
	is := oneConn(t, openDB(t, proxyDSN(p, opsUser, opsPass, "information_schema", "")))
	isID := queryString(t, is, "SELECT CONNECTION_ID()")
	_, rows = plRows(t, is, "SELECT ID FROM PROCESSLIST WHERE ID = CONNECTION_ID()")
	if got := plIDs(rows); !slices.Equal(got, []string{isID}) {
		t.Errorf("unqualified PROCESSLIST in information_schema: %v, want %v", got, []string{isID})
	}
	// Elsewhere a table of that name is an ordinary table.
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS plq", "CREATE TABLE IF NOT EXISTS plq.processlist (id INT)", "DELETE FROM plq.processlist", "INSERT INTO plq.processlist VALUES (7)")
	if got := queryString(t, ops, "SELECT id FROM plq.processlist"); got != "7" {
		t.Errorf("a table named processlist: %q", got)
	}
	mustExec(t, ops, "USE plq")
	if got := queryString(t, ops, "SELECT processlist.id FROM processlist"); got != "7" {
		t.Errorf("a table named processlist, unqualified: %q", got)
	}

	// Refused, never answered from the backend's threads.
	for _, q := range []string{
		"SELECT COUNT(*) FROM information_schema.PROCESSLIST",
		"SELECT ID + 1 FROM information_schema.PROCESSLIST",
		"SELECT DISTINCT USER FROM information_schema.PROCESSLIST",
		"SELECT USER FROM information_schema.PROCESSLIST GROUP BY USER",
		"SELECT * FROM information_schema.PROCESSLIST a JOIN information_schema.PROCESSLIST b USING (ID)",
		"SELECT * FROM information_schema.PROCESSLIST, plq.processlist",
		"SELECT * FROM plq.processlist WHERE id IN (SELECT ID FROM information_schema.PROCESSLIST)",
		"SELECT * FROM (SELECT * FROM information_schema.PROCESSLIST) t",
		"SELECT ID FROM information_schema.PROCESSLIST WHERE USER = CURRENT_USER()",
		"SELECT ID FROM information_schema.PROCESSLIST WHERE ID = @id",
		"SELECT ID FROM information_schema.PROCESSLIST ORDER BY RAND()",
		"SELECT ID FROM information_schema.PROCESSLIST UNION SELECT 1",
		"SELECT ID FROM information_schema.PROCESSLIST FOR UPDATE",
		"INSERT INTO plq.processlist SELECT ID FROM information_schema.PROCESSLIST",
		"CREATE VIEW plq.v AS SELECT * FROM information_schema.PROCESSLIST",
		"WITH x AS (SELECT ID FROM information_schema.PROCESSLIST) SELECT * FROM x",
	} {
		_, err := ops.ExecContext(context.Background(), q)
		if mysqlErrCode(err) != mysql.ERNotSupportedYet || !strings.Contains(err.Error(), "PROCESSLIST") {
			t.Errorf("%s: %v, want 1235 naming PROCESSLIST", q, err)
		}
	}
	// The server's own errors come first: unknown column, bad syntax.
	if _, err := ops.ExecContext(context.Background(), "SELECT nope FROM information_schema.PROCESSLIST"); mysqlErrCode(err) != 1054 {
		t.Errorf("unknown column: %v, want 1054", err)
	}
	// Statements that describe the table, not its rows, run as usual.
	if got := queryString(t, ops, "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'information_schema' AND TABLE_NAME = 'PROCESSLIST' AND COLUMN_NAME = 'INFO'"); got != "1" {
		t.Errorf("COLUMNS of PROCESSLIST: %s", got)
	}
	cols, _ := plRows(t, ops, "DESCRIBE information_schema.PROCESSLIST")
	if len(cols) == 0 {
		t.Errorf("DESCRIBE information_schema.PROCESSLIST: no columns")
	}

	// Prepared (binary protocol): refused with 1235, as is a
	// multi-statement text that holds one.
	pdb := openDB(t, proxyDSN(p, opsUser, opsPass, "", "multiStatements=true"))
	if _, err := pdb.Query("SELECT ID FROM information_schema.PROCESSLIST WHERE ID = ?", 1); mysqlErrCode(err) != mysql.ERNotSupportedYet {
		t.Errorf("prepared: %v, want 1235", err)
	}
	if _, err := pdb.Exec("DO 1; SHOW PROCESSLIST"); mysqlErrCode(err) != mysql.ERNotSupportedYet {
		t.Errorf("in a multi-statement: %v, want 1235", err)
	}
	for _, q := range []string{"PREPARE s FROM 'SHOW PROCESSLIST'", "EXECUTE IMMEDIATE 'SELECT ID FROM information_schema.PROCESSLIST'"} {
		if _, err := ops.ExecContext(context.Background(), q); mysqlErrCode(err) != mysql.ERNotSupportedYet {
			t.Errorf("%s: %v, want 1235", q, err)
		}
	}
	mustExec(t, ops, "PREPARE s FROM 'DESCRIBE information_schema.PROCESSLIST'", "EXECUTE s", "DEALLOCATE PREPARE s")
}

// sortIDs sorts connection ids as numbers.
func sortIDs(ids ...string) []string {
	slices.SortFunc(ids, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	return ids
}

func without(ids []string, id string) []string {
	var out []string
	for _, x := range ids {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}

var _ = proxy.New

// A running statement is listed cut at 100 bytes (SHOW PROCESSLIST) or
// 65,535 (information_schema) as the server cuts it, and by SHOW FULL
// PROCESSLIST whole up to 65,535 bytes (the proxy keeps no more of it;
// the server shows all); a prepared statement's execution is listed as
// Execute, with the text it was prepared from.
func TestProcesslistRunningStatements(t *testing.T) {
	srv := testenv.Shared(t)
	p := startProxy(t, processlistConfig(t, srv, ""))
	db := openDB(t, proxyDSN(p, appUser, appPass, "", ""))
	ctx := context.Background()
	a, b := oneConn(t, db), oneConn(t, db)
	aID := queryString(t, a, "SELECT CONNECTION_ID()")
	row := func() []*string {
		_, rows := plRows(t, b, "SELECT COMMAND, INFO FROM information_schema.PROCESSLIST WHERE ID = "+aID)
		if len(rows) != 1 {
			t.Fatalf("a's rows: %s", showRows(rows))
		}
		return rows[0]
	}
	stop := func(done <-chan error) {
		t.Helper()
		killQueryAndWait(t, b, aID, done)
	}

	long := "SELECT SLEEP(100) /* " + strings.Repeat("x", 70000) + " */"
	midsize := "SELECT SLEEP(100) /* " + strings.Repeat("m", 60000) + " */"
	done := make(chan error, 1)
	go func() {
		_, err := a.ExecContext(ctx, long)
		done <- err
	}()
	waitFor(t, "a's long statement in the list", 30*time.Second, func() bool {
		r := row()
		return str(r[0]) == "Query" && strings.HasPrefix(str(r[1]), "SELECT SLEEP(100)")
	})
	if info := str(row()[1]); info != long[:65535] {
		t.Errorf("information_schema INFO: %d bytes, want the first 65535", len(info))
	}
	_, rows := plRows(t, b, "SHOW PROCESSLIST")
	if r := rowByID(rows, aID); r == nil || str(r[7]) != long[:100] {
		t.Errorf("SHOW PROCESSLIST Info: %s, want the first 100 bytes", showRow(r))
	}
	_, rows = plRows(t, b, "SHOW FULL PROCESSLIST")
	if r := rowByID(rows, aID); r == nil || str(r[7]) != long[:65535] {
		t.Errorf("SHOW FULL PROCESSLIST Info of a 70,000-byte statement is not its first 65,535 bytes")
	}
	stop(done)

	go func() {
		_, err := a.ExecContext(ctx, midsize)
		done <- err
	}()
	waitFor(t, "a's 60,000-byte statement in the list", 30*time.Second, func() bool {
		_, rows := plRows(t, b, "SHOW FULL PROCESSLIST")
		r := rowByID(rows, aID)
		return r != nil && str(r[7]) == midsize
	})
	stop(done)

	go func() {
		_, err := a.ExecContext(ctx, "SELECT SLEEP(?)", 100) // prepared: the driver interpolates nothing
		done <- err
	}()
	waitFor(t, "a's prepared statement in the list", 30*time.Second, func() bool {
		r := row()
		return str(r[0]) == "Execute" && str(r[1]) == "SELECT SLEEP(?)"
	})
	stop(done)
	waitFor(t, "a idle again", 30*time.Second, func() bool {
		r := row()
		return str(r[0]) == "Sleep" && r[1] == nil
	})
}

// PyMySQL's own test of KILL (test_issue_36): a connection finds itself
// in SHOW PROCESSLIST by its statement, the id listed is its thread_id()
// (the handshake's), another connection kills it by that id
// (COM_PROCESS_KILL), the killed connection breaks, and it leaves the
// list.
func TestProcesslistPyMySQLKill(t *testing.T) {
	srv := testenv.Shared(t)
	p := startProxy(t, processlistConfig(t, srv, ""))
	py := clientsPython(t)
	host, port, err := net.SplitHostPort(p.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	script := `
import sys, time, pymysql
args = dict(host=sys.argv[1], port=int(sys.argv[2]), user=sys.argv[3], password=sys.argv[4])
killer, conn = pymysql.connect(**args), pymysql.connect(**args)
c = conn.cursor()
c.execute("show processlist")
kill_id = None
for row in c.fetchall():
    if row[7] == "show processlist":
        kill_id = row[0]
        break
assert kill_id == conn.thread_id(), (kill_id, conn.thread_id())
killer.kill(kill_id)
try:
    c.execute("show tables")
    sys.exit("the killed connection still works")
except Exception:
    pass
k = killer.cursor()
deadline = time.time() + 30
while True:
    k.execute("show processlist")
    if kill_id not in [row[0] for row in k.fetchall()]:
        break
    if time.time() > deadline:
        sys.exit("the killed connection is still listed")
    time.sleep(0.05)
print("ok")
`
	r := clientsExec(t, 60*time.Second, nil, py, "-c", script, host, port, appUser, appPass)
	if r.exitCode != 0 || strings.TrimSpace(r.stdout) != "ok" {
		t.Fatalf("PyMySQL's KILL test through shardgate:\n%s", r)
	}
}

// delayingRelay forwards TCP connections to target, holding for delay
// whatever a client sends that contains marker: a statement so marked
// reaches the server late, as when a backend thread is slow to read it.
func delayingRelay(t *testing.T, target, marker string, delay time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go func() {
				defer s.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						if bytes.Contains(buf[:n], []byte(marker)) {
							time.Sleep(delay)
						}
						if _, err := s.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, s)
			}()
		}
	}()
	return ln.Addr().String()
}

// A statement is listed as running once it has its backend connection,
// a moment before the backend thread reads it; a KILL QUERY sent to the
// thread in that moment is lost on the server (it clears a kill at the
// next command). The proxy repeats the kill while the statement runs, so
// a statement seen in the list and killed stops, as on one server. Here
// the statement reaches the server two seconds late, every time.
func TestProcesslistKillBeforeTheBackendReadsIt(t *testing.T) {
	srv := testenv.Shared(t)
	cfg := processlistConfig(t, srv, "")
	cfg.Clusters[0].Primary.Address = delayingRelay(t, srv.Addr, "/* late */", 2*time.Second)
	p := startProxy(t, cfg)
	db := openDB(t, proxyDSN(p, appUser, appPass, "", ""))
	a, b := oneConn(t, db), oneConn(t, db)
	aID := queryString(t, a, "SELECT CONNECTION_ID()")
	const q = "SELECT SLEEP(100) /* late */"
	done := make(chan error, 1)
	go func() {
		_, err := a.ExecContext(context.Background(), q)
		done <- err
	}()
	waitFor(t, "a's statement in the list", 30*time.Second, func() bool {
		_, rows := plRows(t, b, "SELECT INFO FROM information_schema.PROCESSLIST WHERE ID = "+aID)
		return len(rows) == 1 && str(rows[0][0]) == q
	})
	start := time.Now()
	mustExec(t, b, "KILL QUERY "+aID)
	select {
	case err := <-done:
		if err != nil && mysqlErrCode(err) != 1317 {
			t.Fatalf("a's killed statement: %v", err)
		}
		t.Logf("stopped %v after the KILL QUERY", time.Since(start).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("KILL QUERY sent before the backend had the statement did not stop it")
	}
}
