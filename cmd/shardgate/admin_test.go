package main_test

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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

// Two RELOAD CONFIGs at once, the file changed between them, end with the
// file's last content in force. The first reload reads the file from a
// FIFO, so that it is held between reading the file and applying it while
// the second one starts on the changed file.
func TestAdminReloadConfigConcurrent(t *testing.T) {
	srv := testenv.Shared(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "shardgate.yaml")
	adminAddr := freeAddr(t)
	content := func(level, user string) []byte {
		return fmt.Appendf(nil, "log:\n  level: %s\nadmin:\n  sql: %s\n  users: [{name: ops, password: ops-pw}]\nusers:\n  - {name: %s, password: %s}\n  - {name: %s, password: pw}\nclusters:\n  - {name: main, user: %s, password: %s, primary: {address: \"%s\"}}\n",
			level, adminAddr, testenv.User, testenv.Password, user, testenv.User, testenv.Password, srv.Addr)
	}
	if err := os.WriteFile(file, content("info", "initial"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, _ := startServe(t, "--config", file)
	adminA, adminB := openAdmin(t, adminAddr), openAdmin(t, adminAddr)

	// The file becomes a FIFO (also linked as fifo, to write it later).
	fifo := filepath.Join(dir, "fifo")
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(file, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(file, fifo); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() { _, err := adminA.Exec("RELOAD CONFIG"); first <- err }()
	w := openFIFOWriter(t, fifo) // the first reload has the FIFO open: it reads

	// The file is changed; a second reload starts.
	tmp := filepath.Join(dir, "new.yaml")
	if err := os.WriteFile(tmp, content("debug", "second"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() { _, err := adminB.Exec("RELOAD CONFIG"); second <- err }()
	select {
	case err := <-second: // it did not wait for the first one
		second <- err
	case <-time.After(time.Second):
	}

	// The first reload reads what the file held when it started.
	if _, err := w.Write(content("warn", "first")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	for _, done := range []chan error{first, second} {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("RELOAD CONFIG: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("RELOAD CONFIG did not return")
		}
	}

	settings := map[string]string{}
	rows, err := adminA.Query("SHOW CONFIG")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var key, value string
		if err := rows.Scan(&key, &value); err != nil {
			t.Fatal(err)
		}
		settings[key] = value
	}
	rows.Close()
	if settings["log.level"] != "debug" || settings["users[second].cluster"] == "" || settings["users[first].cluster"] != "" {
		t.Errorf("after the reloads: log.level %q, users[second] %q, users[first] %q; want the file's last content (debug, second)",
			settings["log.level"], settings["users[second].cluster"], settings["users[first].cluster"])
	}
	// The log level in force is the file's too: SIGHUP's debug line shows.
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(p.stderr.String(), "SIGHUP: reading the configuration") {
		if time.Now().After(deadline) {
			t.Fatal("no debug line after SIGHUP: the log level in force is not the file's (debug)")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func openAdmin(t *testing.T, addr string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", "ops:ops-pw@tcp("+addr+")/")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	return db
}

// openFIFOWriter opens the FIFO for writing once a reader has it open.
func openFIFOWriter(t *testing.T, path string) *os.File {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			return f
		}
		if !errors.Is(err, syscall.ENXIO) || time.Now().After(deadline) {
			t.Fatalf("no reader opened the configuration FIFO: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
