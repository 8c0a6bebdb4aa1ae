package bench

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrMissingTool is wrapped by the errors for a missing external program.
var ErrMissingTool = errors.New("missing tool")

// installHint is appended to every missing-tool error.
const installHint = "run scripts/install-deps.sh (installs mariadb-server, mariadb-client, sysbench, haproxy)"

// toolDirs are searched after $PATH: Debian installs haproxy and mariadbd
// into /usr/sbin, which is not in every user's PATH.
var toolDirs = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// Tools are the external programs the harness runs.
type Tools struct {
	Sysbench string
	HAProxy  string
	Go       string
}

// FindTools looks up sysbench, haproxy and go. needHAProxy is false when the
// relay target is not used.
func FindTools(needHAProxy bool) (Tools, error) {
	var t Tools
	var missing []string
	var err error
	if t.Sysbench, err = findTool("sysbench"); err != nil {
		missing = append(missing, "sysbench")
	}
	if needHAProxy {
		if t.HAProxy, err = findTool("haproxy"); err != nil {
			missing = append(missing, "haproxy")
		}
	}
	if t.Go, err = findTool("go"); err != nil {
		missing = append(missing, "go (the Go toolchain, needed to build shardgate)")
	}
	if len(missing) > 0 {
		return t, fmt.Errorf("%w: %s not found in $PATH or %s: %s",
			ErrMissingTool, strings.Join(missing, ", "), strings.Join(toolDirs, ", "), installHint)
	}
	return t, nil
}

// findTool returns the path of an executable named name.
func findTool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if goroot := os.Getenv("GOROOT"); name == "go" && goroot != "" {
		if p := filepath.Join(goroot, "bin", "go"); isExecutable(p) {
			return p, nil
		}
	}
	for _, d := range toolDirs {
		if p := filepath.Join(d, name); isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s", ErrMissingTool, name)
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}
