package proxy_test

import (
	"testing"

	"github.com/shardgate/shardgate/internal/mysql"
)

// A syntax error on a sharded schema is the server's 1064, with the
// server's message; syntax the proxy's parser does not read but the
// server does stays a 1235 naming the statement.
func TestShardedSyntaxErrorIsTheServers(t *testing.T) {
	_, d0, _, _, _, proxyDB := shardedPairProxy(t, "sxsyntax")
	db := proxyDB("")
	for _, q := range []string{
		"SELECT * FORM t",
		"SELECT id FROM t WHERE",
		"UPDATE t SET v = WHERE id = 1",
		"INSERT INTO t VALUES (1, 2",
		"SELECT 'é' FRM t",
	} {
		_, errServer := d0.Exec(q)
		if mysqlErrCode(errServer) != mysql.ERParse {
			t.Fatalf("%s on the server: %v, want 1064 (the test's statement is a syntax error)", q, errServer)
		}
		_, errProxy := db.Exec(q)
		if errProxy == nil || errProxy.Error() != errServer.Error() {
			t.Errorf("%s: through shardgate %v, want the server's %v", q, errProxy, errServer)
		}
		// Prepared (the binary protocol) as the server prepares it.
		stmt, errPrep := db.Prepare(q)
		if stmt != nil {
			_ = stmt.Close()
		}
		if errPrep == nil || errPrep.Error() != errServer.Error() {
			t.Errorf("%s prepared: through shardgate %v, want the server's %v", q, errPrep, errServer)
		}
	}
	// MariaDB's LIMIT ROWS EXAMINED: valid syntax, unknown to the parser.
	if _, err := db.Exec("SELECT * FROM t WHERE id = 1 LIMIT ROWS EXAMINED 10"); mysqlErrCode(err) != mysql.ERNotSupportedYet {
		t.Fatalf("syntax the parser does not read: %v, want 1235", err)
	}
	// The connection the check borrowed went back usable.
	if got := queryString(t, db, "SELECT COUNT(*) FROM t"); got != "0" {
		t.Fatalf("COUNT(*) = %s after the checks", got)
	}
}
