package testenv

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

var shared struct {
	once       sync.Once
	srv        *Server
	err        error
	mu         sync.Mutex
	mainActive bool
	warned     bool
}

// Shared returns the package's shared server, starting it on first use, so
// that a test package starts at most one server for all its tests. It is
// stopped by Main, which the package must call from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }
//
// Tests sharing the server should use their own databases and must not
// Kill/Halt/Stop it; use Start for a private server.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	shared.once.Do(func() {
		shared.srv, shared.err = StartE(Options{})
	})
	if shared.err != nil {
		tb.Fatalf("testenv: shared server: %v", shared.err)
	}
	shared.mu.Lock()
	if !shared.mainActive && !shared.warned {
		shared.warned = true
		tb.Logf("testenv: Shared used without testenv.Main in TestMain; the server is only killed when the test process exits and its data directory is removed by a later run")
	}
	shared.mu.Unlock()
	return shared.srv
}

// Main runs the tests and then stops the shared server, if one was started.
// It returns the exit code for os.Exit.
func Main(m *testing.M) int {
	shared.mu.Lock()
	shared.mainActive = true
	shared.mu.Unlock()
	code := m.Run()
	// Make a later Shared call (there should be none) fail instead of
	// starting a server nobody stops.
	shared.once.Do(func() { shared.err = fmt.Errorf("testenv.Main has already finished") })
	if shared.srv != nil {
		if err := shared.srv.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: stop shared mariadbd: %v\n", err)
		}
	}
	return code
}
