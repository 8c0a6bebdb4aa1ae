package main_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/testenv"
)

// config push, get, history, diff and rollback against a real etcd, as an
// operator runs them: a push's changes are printed, a push based on a
// revision that is no longer the stored one is refused, history names
// who pushed which file, diff names the keys, and rollback writes an old
// revision's document again as a new revision.
func TestConfigCommands(t *testing.T) {
	etcd := testenv.StartEtcd(t)
	url := "etcd://" + etcd.Endpoint + "/cmdtest"
	dir := t.TempDir()
	write := func(name, content string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	v1 := write("v1.yaml", fleetConfig("127.0.0.1:3306", nil))
	v2 := write("v2.yaml", fleetConfig("127.0.0.1:3306", map[string]string{"bob": "b-pw"}))
	cfgRun := func(args ...string) (string, string, int) {
		t.Helper()
		return run(t, "", append([]string{"config"}, append(args, "--etcd", url)...)...)
	}
	out, errOut, code := cfgRun("push", v1)
	if code != 0 {
		t.Fatalf("push v1: %d %s%s", code, out, errOut)
	}
	r1 := pushed(t, out)
	if out, _, code := cfgRun("push", v1); code != 0 || !strings.Contains(out, "unchanged") {
		t.Errorf("pushing the stored document again: exit %d, %q", code, out)
	}
	out, errOut, code = cfgRun("push", v2)
	if code != 0 || !strings.Contains(out, "users[bob]: (none) -> (added)") {
		t.Fatalf("push v2: exit %d\n%s%s", code, out, errOut)
	}
	r2 := pushed(t, out)
	// A push reviewed against r1 is refused now that r2 is stored.
	_, errOut, code = cfgRun("push", v1, "--expect-revision", strconv.FormatInt(r1, 10))
	if code != 1 || !strings.Contains(errOut, "is revision "+strconv.FormatInt(r2, 10)) {
		t.Errorf("a push based on a stale revision: exit %d, %q", code, errOut)
	}
	out, errOut, code = cfgRun("get")
	if code != 0 || out != fleetConfig("127.0.0.1:3306", map[string]string{"bob": "b-pw"}) || !strings.Contains(errOut, "revision "+strconv.FormatInt(r2, 10)) {
		t.Errorf("get: exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
	out, _, code = cfgRun("history")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[1], strconv.FormatInt(r2, 10)) || !strings.Contains(lines[1], v2) || !strings.Contains(lines[2], v1) {
		t.Errorf("history: exit %d\n%s", code, out)
	}
	if out, _, code := cfgRun("diff", v1); code != 0 || !strings.Contains(out, "users[bob]: (present) -> (removed)") {
		t.Errorf("diff FILE: exit %d\n%s", code, out)
	}
	if out, _, code := cfgRun("diff", strconv.FormatInt(r1, 10), strconv.FormatInt(r2, 10)); code != 0 || !strings.Contains(out, "users[bob]: (none) -> (added)") {
		t.Errorf("diff REV REV: exit %d\n%s", code, out)
	}
	out, errOut, code = cfgRun("rollback", strconv.FormatInt(r1, 10))
	if code != 0 || !strings.Contains(out, "rolled back to revision "+strconv.FormatInt(r1, 10)) {
		t.Fatalf("rollback: exit %d\n%s%s", code, out, errOut)
	}
	if out, _, _ := cfgRun("get"); out != fleetConfig("127.0.0.1:3306", nil) {
		t.Errorf("after the rollback, get prints:\n%s", out)
	}
	if out, _, _ := cfgRun("history", "--limit", "1"); !strings.Contains(out, "rollback to "+strconv.FormatInt(r1, 10)) {
		t.Errorf("history does not name the rollback:\n%s", out)
	}
	if _, errOut, code := cfgRun("rollback", "999999"); code != 1 || errOut == "" {
		t.Errorf("rollback to a revision that does not exist: exit %d, %q", code, errOut)
	}
}
