package main_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/testenv"
)

// TestCheckSchemaReportsDrift: check-schema against two real shards, alike
// first (exit 0), then with a sub-table altered, one dropped, one on the
// wrong shard and a reference table's copy changed (exit 1, each named).
func TestCheckSchemaReportsDrift(t *testing.T) {
	srv := testenv.StartN(t, 2, testenv.Options{})
	s0, s1 := srv[0], srv[1]
	const db = "cschema"
	def := func(name string) string {
		return "CREATE TABLE " + db + "." + name + " (id INT AUTO_INCREMENT PRIMARY KEY, u_id INT, v VARCHAR(10), KEY (v))"
	}
	for i, s := range srv {
		s.Exec(t, "CREATE DATABASE "+db, "CREATE TABLE "+db+".city (id INT PRIMARY KEY, name VARCHAR(20))")
		for j := 2 * i; j < 2*i+2; j++ {
			u := fmt.Sprintf("u_%04d", j)
			s.Exec(t, def(fmt.Sprintf("t_%04d", j)), "CREATE TABLE "+db+"."+u+" (uid INT PRIMARY KEY, t_id INT, FOREIGN KEY (t_id) REFERENCES "+fmt.Sprintf("t_%04d", j)+" (id))")
		}
	}
	// Sub-tables fill differently: their AUTO_INCREMENT counters differ.
	s1.Exec(t, "INSERT INTO "+db+".t_0003 (v) VALUES ('a'), ('b')")
	file := filepath.Join(t.TempDir(), "sharded.yaml")
	cfg := fmt.Sprintf(`
listeners: [{address: "127.0.0.1:0"}]
users: [{name: app, password: app-pw, default_database: %s}]
clusters:
  - {name: s0, user: %s, password: %s, primary: {address: "%s"}}
  - {name: s1, user: %s, password: %s, primary: {address: "%s"}}
schemas:
  - name: %s
    default_cluster: s0
    tables:
      - {name: t, shard_key: id, rule: hash, shards: [s0, s1], sub_tables: 2}
      - {name: u, shard_key: uid, like: t}
      - {name: city, type: reference}
      - {name: later, type: reference}
`, db, testenv.User, testenv.Password, s0.Addr, testenv.User, testenv.Password, s1.Addr, db)
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	check := func() (string, int) {
		out, err := exec.Command(binary, "check-schema", file).CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}

	out, code := check()
	for _, want := range []string{"cschema.t (4 sub-tables): OK, alike", "cschema.u (4 sub-tables): OK, alike",
		"cschema.city (reference, on s0, s1): OK, alike", "cschema.later (reference, on s0, s1): not created on any shard"} {
		if !strings.Contains(out, want) {
			t.Errorf("alike shards: output lacks %q:\n%s", want, out)
		}
	}
	if code != 0 {
		t.Fatalf("alike shards: exit %d, want 0:\n%s", code, out)
	}

	s1.Exec(t, "ALTER TABLE "+db+".t_0002 MODIFY v VARCHAR(20)", "DROP TABLE "+db+".u_0003",
		"ALTER TABLE "+db+".city ADD COLUMN zip CHAR(5)", "CREATE TABLE "+db+".t_0000 (id INT)", "CREATE TABLE "+db+".t_0009 (id INT)")
	out, code = check()
	for _, want := range []string{
		"cschema.t (4 sub-tables): DIFFERENT",
		"t_0002 on shard s1 differs from t_0000 on shard s0: line 4: \"`v` varchar(20) DEFAULT NULL,\", not \"`v` varchar(10) DEFAULT NULL,\"",
		"u_0003 on shard s1: missing",
		"city on shard s1 differs from city on shard s0",
		"cschema.t_0000 on shard s1: belongs on shard s0",
		"cschema.t_0009 on shard s1: table t has only 4 sub-tables",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("drifted shards: output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "t_0003 on shard s1 differs") {
		t.Errorf("an AUTO_INCREMENT counter counts as a difference:\n%s", out)
	}
	if code != 1 {
		t.Fatalf("drifted shards: exit %d, want 1:\n%s", code, out)
	}
}
