package main_test

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/testenv"
)

// RELOAD CONFIG on the admin SQL port runs what SIGHUP runs: the file is
// re-read, the changes are applied, logged and answered; a broken file
// changes nothing and its problems are the answer. SHOW VERSION reports
// the binary's version.
func TestAdminReloadConfigBinary(t *testing.T) {
	srv := testenv.Shared(t)
	file := filepath.Join(t.TempDir(), "shardgate.yaml")
	adminAddr := freeAddr(t)
	write := func(level, extraUser string) {
		t.Helper()
		cfg := fmt.Sprintf("log:\n  level: %s\nadmin:\n  sql: %s\n  users: [{name: ops, password: ops-pw}]\nusers:\n  - {name: %s, password: %s}\n%sclusters:\n  - {name: main, user: %s, password: %s, primary: {address: \"%s\"}}\n",
			level, adminAddr, testenv.User, testenv.Password, extraUser, testenv.User, testenv.Password, srv.Addr)
		if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("info", "")
	p, listen := startServe(t, "--config", file)
	admin, err := sql.Open("mysql", "ops:ops-pw@tcp("+adminAddr+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var component, addr, version string
	if err := admin.QueryRow("SHOW VERSION").Scan(&component, &addr, &version); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(strings.TrimPrefix(string(out), "shardgate ")); component != "shardgate" || version != want {
		t.Errorf("SHOW VERSION: %s %q, want shardgate %q", component, version, want)
	}

	write("debug", "  - {name: newbie, password: n-pw}\n")
	rows, err := admin.Query("RELOAD CONFIG")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var key, old, new, result string
		if err := rows.Scan(&key, &old, &new, &result); err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.Join([]string{key, old, new, result}, " "))
	}
	rows.Close()
	want := []string{"log.level info debug applied", "users[newbie] (none) (added) applied"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("RELOAD CONFIG answered %q, want %q", got, want)
	}
	newbie := open(t, listen, "")
	newbie.SetMaxIdleConns(0)
	if err := newbie.Ping(); err != nil {
		t.Fatal(err)
	}
	log := p.stderr.String()
	for _, w := range []string{`msg="admin: RELOAD CONFIG" listener=admin admin_user=ops client=127.0.0.1:`, `msg="configuration change applied" key=users[newbie]`,
		`msg="configuration reloaded"`} {
		if !strings.Contains(log, w) {
			t.Errorf("log lacks %q:\n%s", w, log)
		}
	}

	if err := os.WriteFile(file, []byte("clusters: [oops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = admin.Exec("RELOAD CONFIG")
	if err == nil || !strings.Contains(err.Error(), file+":") || !strings.Contains(err.Error(), "nothing changed") {
		t.Errorf("RELOAD CONFIG of a broken file: %v, want its FILE:LINE problem", err)
	}
	db, err := sql.Open("mysql", fmt.Sprintf("newbie:n-pw@tcp(%s)/", listen))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err != nil {
		t.Errorf("after a broken file, the reloaded user cannot log in: %v", err)
	}
}
