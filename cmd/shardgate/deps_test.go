package main_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestDemoInstallsOnlyWhatItNeeds: the demo asks scripts/install-deps.sh for
// its own set, which is the MariaDB server and client, not the benchmark
// tools the test suite needs.
func TestDemoInstallsOnlyWhatItNeeds(t *testing.T) {
	demo, err := os.ReadFile("../../scripts/demo.sh")
	if err != nil {
		t.Fatal(err)
	}
	calls := regexp.MustCompile(`(?m)^\s*\./scripts/install-deps\.sh(.*)$`).FindAllStringSubmatch(string(demo), -1)
	if len(calls) != 1 || strings.TrimSpace(calls[0][1]) != "demo" {
		t.Fatalf("scripts/demo.sh must run `./scripts/install-deps.sh demo` once, runs %q", calls)
	}
	for set, want := range map[string]string{
		"demo": "mariadb-server mariadb-client",
		"test": "mariadb-server mariadb-client sysbench haproxy python3-pymysql python3-venv default-jdk-headless maven prometheus chromium chromium-driver etcd-server",
	} {
		out, err := exec.Command("bash", "../../scripts/install-deps.sh", "--packages", set).Output()
		if err != nil {
			t.Fatalf("install-deps.sh --packages %s: %v", set, err)
		}
		if got := strings.TrimSpace(string(out)); got != want {
			t.Errorf("set %s installs %q, want %q", set, got, want)
		}
	}
}
