package proxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/testenv"
)

// TestConnectionIDColumns: the proxy answers CONNECTION_ID() with its own
// connection id, in the column the server would have returned: the same
// name (the expression as written, or the alias) and type.
func TestConnectionIDColumns(t *testing.T) {
	srv := testenv.Shared(t)
	p := startProxy(t, proxyConfig(t, srv, ""))
	direct := oneConn(t, openDB(t, srv.DSN("")))
	proxied := oneConn(t, openDB(t, proxyDSN(p, appUser, appPass, "", "")))
	proxyID := queryString(t, proxied, "SELECT CONNECTION_ID()")
	for _, q := range []string{
		"SELECT CONNECTION_ID()",
		"select connection_id()",
		"SELECT CONNECTION_ID( )",
		"SELECT CONNECTION_ID() + 0",
		"SELECT CONNECTION_ID() AS id",
		"SELECT CONNECTION_ID() id",
		"SELECT 1, /* c */ CONNECTION_ID() FROM dual",
		"SELECT (SELECT CONNECTION_ID())",
		"SELECT DISTINCT CONNECTION_ID() FROM dual WHERE CONNECTION_ID() > 0",
		"SELECT /* a */ CONNECTION_ID() /* b */ + 0 /* c */, /* d */ CONNECTION_ID() -- e\n",
		"SELECT 1 /*!50000 , CONNECTION_ID() */",
		"SELECT CONNECTION_ID() UNION SELECT CONNECTION_ID()",
	} {
		want, _ := columnsOf(t, direct, q)
		got, vals := columnsOf(t, proxied, q)
		if got != want {
			t.Errorf("%s: columns through the proxy %s, direct %s", q, got, want)
		}
		if last := vals[len(vals)-1]; last != proxyID {
			t.Errorf("%s: got %s, want the proxy's connection id %s", q, last, proxyID)
		}
	}
}

// columnsOf runs q and describes its columns (name, type, Go scan type) and
// returns the values of its first row.
func columnsOf(t *testing.T, conn *sql.Conn, q string) (string, []string) {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var desc []string
	for _, ct := range types {
		nullable, _ := ct.Nullable()
		desc = append(desc, fmt.Sprintf("%q %s %v null=%v", ct.Name(), ct.DatabaseTypeName(), ct.ScanType(), nullable))
	}
	vals := make([]sql.NullString, len(types))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if !rows.Next() {
		t.Fatalf("%s: no row (%v)", q, rows.Err())
	}
	if err := rows.Scan(ptrs...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = v.String
	}
	return "[" + strings.Join(desc, ", ") + "]", out
}
