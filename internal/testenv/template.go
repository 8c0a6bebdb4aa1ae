package testenv

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// templateFormat is mixed into the template key; bump it whenever the way the
// template is built changes so that stale templates are not reused.
const templateFormat = "shardgate-testenv-template-v1"

// markerName is the file inside a template directory that marks it complete.
// It holds a manifest of every directory and file of the template, so that a
// template partially eaten by a /tmp cleaner is detected and rebuilt.
const markerName = ".shardgate-template-complete"

// installDBTimeout bounds one mariadb-install-db run.
const installDBTimeout = 3 * time.Minute

// ErrNotInstalled is returned (wrapped) by StartE when mariadbd or
// mariadb-install-db cannot be found.
var ErrNotInstalled = errors.New("MariaDB is not installed: run scripts/install-deps.sh")

// binaries holds the resolved MariaDB executables and the template key
// derived from them.
type binaries struct {
	mariadbd  string
	installDB string
	version   string // first line of `mariadbd --version`
	key       string // short hash identifying the template
}

var (
	binOnce sync.Once
	binVal  *binaries
	binErr  error
)

// extraBinDirs are searched after $PATH: Debian installs mariadbd into
// /usr/sbin, which is not in the PATH of unprivileged users.
var extraBinDirs = []string{"/usr/sbin", "/usr/local/sbin", "/usr/local/mysql/bin", "/usr/local/bin", "/usr/bin", "/sbin"}

func lookBinary(names ...string) (string, error) {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	for _, n := range names {
		for _, d := range extraBinDirs {
			p := filepath.Join(d, n)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%w (%s not found in $PATH or %s)", ErrNotInstalled, names[0], strings.Join(extraBinDirs, ", "))
}

func findBinaries() (*binaries, error) {
	binOnce.Do(func() {
		binVal, binErr = resolveBinaries()
	})
	return binVal, binErr
}

// binaryFromEnv returns the executable named by the environment variable
// env, or looks up names when it is unset.
func binaryFromEnv(env string, names ...string) (string, error) {
	p := os.Getenv(env)
	if p == "" {
		return lookBinary(names...)
	}
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%w ($%s=%s is not an executable file)", ErrNotInstalled, env, p)
	}
	return p, nil
}

func resolveBinaries() (*binaries, error) {
	mariadbd, err := binaryFromEnv("SHARDGATE_MARIADBD", "mariadbd", "mysqld")
	if err != nil {
		return nil, err
	}
	installDB, err := binaryFromEnv("SHARDGATE_MARIADB_INSTALL_DB", "mariadb-install-db", "mysql_install_db")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, mariadbd, "--version").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("testenv: %s --version: %v: %s", mariadbd, err, bytes.TrimSpace(out))
	}
	version := strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00", templateFormat, mariadbd, installDB, version)
	if st, err := os.Stat(mariadbd); err == nil {
		fmt.Fprintf(h, "%d\x00%d\x00", st.Size(), st.ModTime().UnixNano())
	}
	fmt.Fprintf(h, "%d\x00", os.Geteuid())
	return &binaries{
		mariadbd:  mariadbd,
		installDB: installDB,
		version:   version,
		key:       hex.EncodeToString(h.Sum(nil))[:16],
	}, nil
}

// baseDir is the directory holding templates and instance directories.
// SHARDGATE_TESTENV_DIR overrides it. Non-root users get their own directory
// so that a root-owned one does not get in their way.
func baseDir() (string, error) {
	dir := os.Getenv("SHARDGATE_TESTENV_DIR")
	if dir == "" {
		name := "shardgate-testenv"
		if os.Geteuid() != 0 {
			name += "-" + strconv.Itoa(os.Geteuid())
		}
		dir = filepath.Join(os.TempDir(), name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("testenv: create %s: %w", dir, err)
	}
	return dir, nil
}

// templateMu serialises template building within one process; the flock
// serialises it between processes.
var templateMu sync.Mutex

// ensureTemplate returns the path of a complete template datadir together
// with its manifest, building it if necessary.
func ensureTemplate(base string, b *binaries) (string, []manifestEntry, error) {
	final := filepath.Join(base, "template-"+b.key)
	if m, err := readManifest(final, b); err == nil {
		return final, m, nil
	}

	templateMu.Lock()
	defer templateMu.Unlock()

	unlock, err := lockFile(filepath.Join(base, "template-"+b.key+".lock"), true)
	if err != nil {
		return "", nil, err
	}
	defer unlock()

	// Someone else may have built it while we waited for the lock.
	if m, err := readManifest(final, b); err == nil {
		return final, m, nil
	}

	// We hold the lock, so any leftover build directory is stale.
	removeGlob(filepath.Join(base, "template-"+b.key+".tmp-*"))

	// A template directory without a valid marker is incomplete or damaged:
	// move it out of the way (rename is atomic, removal may take a while).
	if _, err := os.Lstat(final); err == nil {
		trash, err := os.MkdirTemp(base, "template-"+b.key+".tmp-trash-")
		if err != nil {
			return "", nil, fmt.Errorf("testenv: %w", err)
		}
		if err := os.Rename(final, filepath.Join(trash, "old")); err != nil {
			return "", nil, fmt.Errorf("testenv: move damaged template %s away: %w", final, err)
		}
		_ = os.RemoveAll(trash)
	}

	tmp, err := os.MkdirTemp(base, "template-"+b.key+".tmp-")
	if err != nil {
		return "", nil, fmt.Errorf("testenv: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(tmp)
		}
	}()
	datadir := filepath.Join(tmp, "data")
	args := []string{
		"--no-defaults",
		"--auth-root-authentication-method=normal",
		"--datadir=" + datadir,
		"--skip-test-db",
		"--skip-name-resolve",
		// Passed through to the bootstrap mariadbd: build the redo log with
		// the size the instances use, so they need not resize it.
		"--innodb-log-file-size=" + innodbLogFileSize,
	}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), installDBTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.installDB, args...)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "PATH="+os.Getenv("PATH")+":/usr/sbin:/usr/local/sbin:/sbin")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", nil, fmt.Errorf("testenv: %s %s failed: %v\n%s", b.installDB, strings.Join(args, " "), err, tail(out, 40))
	}
	manifest, err := writeManifest(datadir, b)
	if err != nil {
		return "", nil, err
	}
	if err := os.Rename(datadir, final); err != nil {
		return "", nil, fmt.Errorf("testenv: install template: %w", err)
	}
	ok = true
	_ = os.RemoveAll(tmp)
	return final, manifest, nil
}

type manifestEntry struct {
	dir  bool
	size int64
	path string // slash-separated, relative to the template root
}

func manifestHeader(b *binaries) string {
	return templateFormat + " " + b.key + " " + b.version
}

func writeManifest(root string, b *binaries) ([]manifestEntry, error) {
	var entries []manifestEntry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if strings.ContainsAny(rel, "\n\r") {
			return fmt.Errorf("unexpected file name %q", rel)
		}
		switch {
		case d.IsDir():
			entries = append(entries, manifestEntry{dir: true, path: rel})
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			entries = append(entries, manifestEntry{size: info.Size(), path: rel})
		default:
			// Sockets, pid files' symlinks etc. are not part of a template.
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("testenv: scan template: %w", err)
	}
	var buf bytes.Buffer
	buf.WriteString(manifestHeader(b) + "\n")
	for _, e := range entries {
		if e.dir {
			fmt.Fprintf(&buf, "D 0 %s\n", e.path)
		} else {
			fmt.Fprintf(&buf, "F %d %s\n", e.size, e.path)
		}
	}
	buf.WriteString("END\n")
	if err := writeFileSync(filepath.Join(root, markerName), buf.Bytes()); err != nil {
		return nil, fmt.Errorf("testenv: write template marker: %w", err)
	}
	return entries, nil
}

// readManifest returns the manifest of a complete template, checking that
// every listed file is still there with its size.
func readManifest(root string, b *binaries) ([]manifestEntry, error) {
	f, err := os.Open(filepath.Join(root, markerName))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() || sc.Text() != manifestHeader(b) {
		return nil, errors.New("template marker: wrong header")
	}
	var entries []manifestEntry
	complete := false
	for sc.Scan() {
		line := sc.Text()
		if line == "END" {
			complete = true
			break
		}
		parts := strings.SplitN(line, " ", 3)
		if len(parts) != 3 || (parts[0] != "D" && parts[0] != "F") {
			return nil, fmt.Errorf("template marker: bad line %q", line)
		}
		size, err := strconv.ParseInt(parts[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("template marker: bad line %q", line)
		}
		e := manifestEntry{dir: parts[0] == "D", size: size, path: parts[2]}
		st, err := os.Stat(filepath.Join(root, filepath.FromSlash(e.path)))
		if err != nil {
			return nil, err
		}
		if e.dir != st.IsDir() || (!e.dir && st.Size() != e.size) {
			return nil, fmt.Errorf("template file %s changed", e.path)
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !complete || len(entries) == 0 {
		return nil, errors.New("template marker: truncated")
	}
	return entries, nil
}

// copyTemplate copies the template files listed in the manifest into dst
// (which must not exist yet). Runs of zero bytes become holes: most of the
// redo log is zeros, so this keeps instances cheap on disk.
func copyTemplate(src, dst string, manifest []manifestEntry) error {
	if err := os.Mkdir(dst, 0o750); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	buf := make([]byte, 128<<10)
	for _, e := range manifest {
		to := filepath.Join(dst, filepath.FromSlash(e.path))
		if e.dir {
			if err := os.MkdirAll(to, 0o750); err != nil {
				return fmt.Errorf("testenv: %w", err)
			}
			continue
		}
		if err := copyFileSparse(to, filepath.Join(src, filepath.FromSlash(e.path)), buf); err != nil {
			return fmt.Errorf("testenv: copy template file %s: %w", e.path, err)
		}
	}
	return nil
}

var zeroBlock = make([]byte, 128<<10)

func copyFileSparse(dst, src string, buf []byte) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o660)
	if err != nil {
		return err
	}
	var off int64
	for {
		n, rerr := io.ReadFull(in, buf)
		if n > 0 {
			if !bytes.Equal(buf[:n], zeroBlock[:n]) {
				if _, err := out.WriteAt(buf[:n], off); err != nil {
					out.Close()
					return err
				}
			}
			off += int64(n)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			out.Close()
			return rerr
		}
	}
	if err := out.Truncate(off); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func writeFileSync(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// lockFile takes an exclusive flock on name. With block=false it returns
// errLocked when another open file description holds the lock.
func lockFile(name string, block bool) (func(), error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("testenv: open lock %s: %w", name, err)
	}
	how := syscall.LOCK_EX
	if !block {
		how |= syscall.LOCK_NB
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errLocked
		}
		return nil, fmt.Errorf("testenv: lock %s: %w", name, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

var errLocked = errors.New("locked")

func removeGlob(pattern string) {
	matches, _ := filepath.Glob(pattern)
	for _, m := range matches {
		_ = os.RemoveAll(m)
	}
}

// tail returns the last n lines of b.
func tail(b []byte, n int) string {
	s := strings.TrimRight(string(b), "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
