package proxy_test

import (
	"testing"

	"github.com/shardgate/shardgate/internal/testenv"
)

func TestBasicQueries(t *testing.T) {
	srv := testenv.Shared(t)
	srv.Exec(t, "CREATE DATABASE IF NOT EXISTS basic", "CREATE TABLE IF NOT EXISTS basic.t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20))")
	p := startProxy(t, proxyConfig(t, srv, ""))
	for _, params := range []string{"", "interpolateParams=true"} {
		db := openDB(t, proxyDSN(p, appUser, appPass, "basic", params))
		if got := queryString(t, db, "SELECT 1+1"); got != "2" {
			t.Fatalf("SELECT 1+1 = %q", got)
		}
		res, err := db.Exec("INSERT INTO t (v) VALUES (?)", "hello")
		if err != nil {
			t.Fatal(err)
		}
		id, _ := res.LastInsertId()
		if got := queryString(t, db, "SELECT v FROM t WHERE id = ?", id); got != "hello" {
			t.Fatalf("got %q", got)
		}
	}
}
