// Package testenv starts real, throw-away MariaDB servers (mariadbd) for
// tests and benchmarks.
//
// A pristine data directory is created once with mariadb-install-db into a
// template under os.TempDir()/shardgate-testenv (shared by all test processes
// and guarded by a file lock); every server gets its own copy of it, a free
// TCP port on 127.0.0.1 and a unix socket inside its data directory.
//
// Each server has two accounts besides root@localhost (no password, used over
// the unix socket): User/Password ('shardgate'@'%') and
// RootUser/RootPassword (root@'127.0.0.1', for TCP), both with all privileges.
//
// Typical use:
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }
//
//	func TestX(t *testing.T) {
//		srv := testenv.Shared(t)          // or testenv.Start(t, testenv.Options{})
//		db, _ := sql.Open("mysql", srv.DSN("test"))
//		...
//	}
//
// A missing MariaDB installation is a test failure, never a skip: run
// scripts/install-deps.sh. mariadbd and mariadb-install-db are looked up in
// $PATH and then in /usr/sbin and friends; SHARDGATE_MARIADBD and
// SHARDGATE_MARIADB_INSTALL_DB name other executables, and
// SHARDGATE_TESTENV_DIR moves the working directory (default
// os.TempDir()/shardgate-testenv, with a -<uid> suffix for non-root users).
package testenv

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Credentials of the accounts every server has.
const (
	// User and Password are the test account ('shardgate'@'%', ALL PRIVILEGES
	// WITH GRANT OPTION). Server.DSN uses it.
	User     = "shardgate"
	Password = "shardgate-pw"
	// RootUser and RootPassword log in as root over TCP (root@'127.0.0.1').
	// Over the unix socket root@localhost has no password.
	RootUser     = "root"
	RootPassword = "root-pw"
)

const (
	innodbLogFileSize = "48M"
	readyTimeout      = 60 * time.Second
	stopTimeout       = 30 * time.Second
	startAttempts     = 5
	// maxSocketPath keeps the socket path below the sun_path limit (108).
	maxSocketPath = 100
)

// Options configure a server.
type Options struct {
	// ExtraArgs are appended to the mariadbd command line (last one wins, so
	// they can override the defaults).
	ExtraArgs []string
	// TLS generates a CA and a server certificate (ECDSA P-256) and starts
	// mariadbd with --ssl-ca/--ssl-cert/--ssl-key. See Server.CAFile and
	// Server.TLSConfig.
	TLS bool
	// LogBin enables the binary log (--log-bin=mysql-bin in the datadir)
	// instead of --skip-log-bin.
	LogBin bool
	// ServerID sets --server-id when non-zero.
	ServerID int
}

// Server is a running (or stopped) mariadbd instance.
type Server struct {
	Addr     string // "127.0.0.1:<port>"
	Port     int
	Socket   string // unix socket path
	DataDir  string
	CAFile   string // CA certificate (PEM) when started with Options.TLS
	User     string // test account, == User constant
	Password string // == Password constant
	ErrorLog string // mariadbd's stderr (its error log)

	bin     *binaries
	dir     string // instance directory: holds DataDir, ErrorLog, certificates
	sockDir string // separate directory for the socket when the path is too long
	opts    Options
	tls     *tlsFiles

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd has been waited for
	removed bool
}

// Start starts a server for the test and registers its Stop with tb.Cleanup.
// It fails the test (tb.Fatalf) if the server cannot be started, including
// when MariaDB is not installed.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s, err := StartE(opts)
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Stop(); err != nil {
			tb.Errorf("testenv: stop mariadbd: %v", err)
		}
	})
	return s
}

// StartE starts a server. The caller must call Stop. Errors wrapping
// ErrNotInstalled mean mariadbd or mariadb-install-db is missing.
func StartE(opts Options) (*Server, error) {
	b, err := findBinaries()
	if err != nil {
		return nil, err
	}
	base, err := baseDir()
	if err != nil {
		return nil, err
	}
	sweepStale(base)
	tmplDir, manifest, err := ensureTemplate(base, b)
	if err != nil {
		return nil, err
	}

	dir, err := os.MkdirTemp(base, instancePrefix)
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	s := &Server{
		User:     User,
		Password: Password,
		DataDir:  filepath.Join(dir, "data"),
		ErrorLog: filepath.Join(dir, "mysqld.err"),
		bin:      b,
		dir:      dir,
		opts:     opts,
	}
	ok := false
	defer func() {
		if !ok {
			_ = s.Stop()
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	if err := copyTemplate(tmplDir, s.DataDir, manifest); err != nil {
		return nil, err
	}
	// The server's temporary tables live in the instance's own directory,
	// not in the machine's /tmp, where anything cleaning it could take a
	// file from under a running query (seen once: error 6 on a reference
	// server's GROUP BY).
	if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o700); err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	s.Socket = filepath.Join(s.DataDir, "mysqld.sock")
	if len(s.Socket) > maxSocketPath {
		sd, err := os.MkdirTemp("/tmp", "sg-sock-")
		if err != nil {
			return nil, fmt.Errorf("testenv: %w", err)
		}
		s.sockDir = sd
		s.Socket = filepath.Join(sd, "mysqld.sock")
	}
	if opts.TLS {
		f, err := generateTLS(dir)
		if err != nil {
			return nil, fmt.Errorf("testenv: generate TLS certificates: %w", err)
		}
		s.tls = f
		s.CAFile = f.caFile
	}

	var lastErr error
	for attempt := 0; attempt < startAttempts; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s.Port = port
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		lastErr = s.launch()
		if lastErr == nil {
			break
		}
		if !errors.Is(lastErr, errPortInUse) {
			return nil, lastErr
		}
	}
	if lastErr != nil {
		return nil, lastErr
	}
	if err := s.setupAccounts(); err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

// errPortInUse marks a start that failed because the TCP port was taken.
var errPortInUse = errors.New("port in use")

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("testenv: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) args() []string {
	args := []string{
		"--no-defaults",
		"--datadir=" + s.DataDir,
		"--socket=" + s.Socket,
		"--port=" + strconv.Itoa(s.Port),
		"--bind-address=127.0.0.1",
		"--pid-file=" + filepath.Join(s.DataDir, "mysqld.pid"),
		"--tmpdir=" + filepath.Join(s.dir, "tmp"),
	}
	if s.opts.LogBin {
		args = append(args, "--log-bin=mysql-bin")
	} else {
		args = append(args, "--skip-log-bin")
	}
	if s.opts.ServerID != 0 {
		args = append(args, "--server-id="+strconv.Itoa(s.opts.ServerID))
	}
	args = append(args,
		"--innodb-buffer-pool-size=64M",
		"--innodb-log-file-size="+innodbLogFileSize,
		"--max-connections=4000",
		"--max-allowed-packet=1G",
		"--skip-name-resolve",
	)
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	if s.tls != nil {
		args = append(args,
			"--ssl-ca="+s.tls.caFile,
			"--ssl-cert="+s.tls.certFile,
			"--ssl-key="+s.tls.keyFile,
		)
	}
	return append(args, s.opts.ExtraArgs...)
}

// launch starts mariadbd and waits until it accepts connections.
func (s *Server) launch() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.removed {
		return errors.New("testenv: server has been removed")
	}
	if s.running() {
		return errors.New("testenv: mariadbd is already running")
	}
	cmd, done, logStart, err := startLogged(s.bin.mariadbd, s.args(), s.dir, s.ErrorLog)
	if err != nil {
		return err
	}
	s.cmd, s.done = cmd, done

	if err := s.waitReady(done); err != nil {
		s.killLocked()
		logTail := s.logTail(logStart, 30)
		if strings.Contains(logTail, "Address already in use") || strings.Contains(logTail, "Bind on TCP/IP port") {
			return fmt.Errorf("%w: %v", errPortInUse, err)
		}
		return fmt.Errorf("testenv: mariadbd on %s did not become ready: %v\n--- tail of %s ---\n%s", s.Addr, err, s.ErrorLog, logTail)
	}
	return nil
}

// startLogged starts bin with args in dir, its output appended to logPath
// (after a line naming the command), in a process group of its own that
// dies with the test process. done closes once it has exited and been
// reaped; logStart is where its output starts in the log.
func startLogged(bin string, args []string, dir, logPath string) (cmd *exec.Cmd, done chan struct{}, logStart int64, err error) {
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("testenv: %w", err)
	}
	logStart, _ = logf.Seek(0, 2)
	fmt.Fprintf(logf, "### testenv: %s %s\n", bin, strings.Join(args, " "))
	cmd = exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	logf.Close()
	if err != nil {
		return nil, nil, 0, fmt.Errorf("testenv: start %s: %w", bin, err)
	}
	done = make(chan struct{})
	// Wait reaps the process; ProcessState may be read once done is closed.
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	return cmd, done, logStart, nil
}

// waitReady polls a root connection over the unix socket until it succeeds,
// the process exits or readyTimeout passes.
func (s *Server) waitReady(done chan struct{}) error {
	deadline := time.Now().Add(readyTimeout)
	cfg := s.rootConfig()
	cfg.Timeout = 2 * time.Second
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	var lastErr error
	for {
		select {
		case <-done:
			return fmt.Errorf("mariadbd exited during startup (%s)", s.exitStatus())
		default:
		}
		if _, err := os.Stat(s.Socket); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			conn, err := connector.Connect(ctx)
			cancel()
			if err == nil {
				conn.Close()
				return nil
			}
			lastErr = err
		}
		if time.Now().After(deadline) {
			if lastErr == nil {
				lastErr = fmt.Errorf("socket %s never appeared", s.Socket)
			}
			return fmt.Errorf("timed out after %v: %v", readyTimeout, lastErr)
		}
		select {
		case <-done:
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// exitStatus describes how the process ended; only valid after done closed.
func (s *Server) exitStatus() string {
	if s.cmd != nil && s.cmd.ProcessState != nil {
		return s.cmd.ProcessState.String()
	}
	return "unknown status"
}

func (s *Server) logTail(from int64, lines int) string {
	b, err := os.ReadFile(s.ErrorLog)
	if err != nil {
		return fmt.Sprintf("(cannot read error log: %v)", err)
	}
	if from > 0 && from <= int64(len(b)) {
		b = b[from:]
	}
	return tail(b, lines)
}

// running reports whether the process is alive (not yet waited for).
func (s *Server) running() bool {
	if s.done == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// wait waits for the process to exit, up to timeout. Called with s.mu held;
// it releases the lock while waiting so the waiter goroutine can finish.
func (s *Server) wait(timeout time.Duration) bool {
	done := s.done
	if done == nil {
		return true
	}
	s.mu.Unlock()
	defer s.mu.Lock()
	select {
	case <-done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// killLocked SIGKILLs the process group and waits for the process.
func (s *Server) killLocked() {
	if !s.running() {
		return
	}
	pid := s.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = s.cmd.Process.Kill()
	s.wait(time.Hour)
}

// Kill SIGKILLs mariadbd, like a crash, and keeps the data directory so that
// Restart can bring it back.
func (s *Server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
	return nil
}

// Halt shuts mariadbd down cleanly (SIGTERM; SIGKILL if it has not exited
// after 30 s) and keeps the data directory so that Restart can bring it back.
func (s *Server) Halt() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.haltLocked()
}

func (s *Server) haltLocked() error {
	if !s.running() {
		return nil
	}
	pid := s.cmd.Process.Pid
	// mariadbd ignores SIGINT; SIGTERM triggers a normal shutdown.
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("testenv: SIGTERM mariadbd: %w", err)
	}
	if s.wait(stopTimeout) {
		_ = syscall.Kill(-pid, syscall.SIGKILL) // anything left in the group
		return nil
	}
	s.killLocked()
	return fmt.Errorf("testenv: mariadbd (pid %d) did not shut down within %v after SIGTERM; killed it", pid, stopTimeout)
}

// Stop shuts mariadbd down (see Halt) and removes its data directory. It is
// safe to call more than once.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.haltLocked()
	if !s.removed {
		s.removed = true
		if rerr := os.RemoveAll(s.dir); rerr != nil && err == nil {
			err = fmt.Errorf("testenv: remove %s: %w", s.dir, rerr)
		}
		if s.sockDir != "" {
			_ = os.RemoveAll(s.sockDir)
		}
	}
	return err
}

// Restart starts mariadbd again on the same port and data directory and
// waits until it is ready. A running server is halted first. It fails after
// Stop (the data directory is gone); use Kill or Halt before Restart.
func (s *Server) Restart() error {
	s.mu.Lock()
	if err := s.haltLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	s.mu.Unlock()
	var err error
	// The port may be briefly taken by someone else; retry a little.
	for attempt := 0; attempt < 20; attempt++ {
		err = s.launch()
		if err == nil || !errors.Is(err, errPortInUse) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	return s.setupAccounts()
}

// Running reports whether mariadbd is running.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running()
}

// Pid returns the process id of mariadbd, or 0 if it is not running.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running() {
		return 0
	}
	return s.cmd.Process.Pid
}

// DSN returns a go-sql-driver DSN for the test account over TCP, e.g.
// "shardgate:shardgate-pw@tcp(127.0.0.1:P)/db?multiStatements=true".
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("%s:%s@tcp(%s)/%s?multiStatements=true", User, Password, s.Addr, db)
}

// RootDSN returns a go-sql-driver DSN for root over TCP (RootPassword).
func (s *Server) RootDSN(db string) string {
	return fmt.Sprintf("%s:%s@tcp(%s)/%s?multiStatements=true", RootUser, RootPassword, s.Addr, db)
}

// RootSocketDSN returns a go-sql-driver DSN for root over the unix socket.
func (s *Server) RootSocketDSN(db string) string {
	cfg := s.rootConfig()
	cfg.DBName = db
	return cfg.FormatDSN()
}

func (s *Server) rootConfig() *mysql.Config {
	cfg := mysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "unix"
	cfg.Addr = s.Socket
	cfg.MultiStatements = true
	return cfg
}

// RootDB returns a connection pool for root over the unix socket; it is
// closed when the test ends.
func (s *Server) RootDB(tb testing.TB) *sql.DB {
	tb.Helper()
	db, err := s.openRoot()
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func (s *Server) openRoot() (*sql.DB, error) {
	connector, err := mysql.NewConnector(s.rootConfig())
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(connector), nil
}

// Exec runs the statements in order as root on a single connection (so USE
// and session variables carry over) and fails the test on the first error.
func (s *Server) Exec(tb testing.TB, stmts ...string) {
	tb.Helper()
	if err := s.ExecE(stmts...); err != nil {
		tb.Fatalf("testenv: %v", err)
	}
}

// ExecE is Exec returning the error instead of failing a test.
func (s *Server) ExecE(stmts ...string) error {
	db, err := s.openRoot()
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect as root via %s: %w", s.Socket, err)
	}
	defer conn.Close()
	for _, st := range stmts {
		if _, err := conn.ExecContext(ctx, st); err != nil {
			return fmt.Errorf("exec %q: %w", st, err)
		}
	}
	return nil
}

func (s *Server) setupAccounts() error {
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	err := s.ExecE(
		"CREATE USER IF NOT EXISTS "+q(User)+"@'%' IDENTIFIED BY "+q(Password),
		"ALTER USER "+q(User)+"@'%' IDENTIFIED BY "+q(Password),
		"GRANT ALL ON *.* TO "+q(User)+"@'%' WITH GRANT OPTION",
		// install-db (auth method "normal") already creates root@127.0.0.1
		// without a password.
		"CREATE USER IF NOT EXISTS "+q(RootUser)+"@'127.0.0.1' IDENTIFIED BY "+q(RootPassword),
		"ALTER USER "+q(RootUser)+"@'127.0.0.1' IDENTIFIED BY "+q(RootPassword),
		"GRANT ALL ON *.* TO "+q(RootUser)+"@'127.0.0.1' WITH GRANT OPTION",
	)
	if err != nil {
		return fmt.Errorf("testenv: create accounts: %w", err)
	}
	return nil
}
