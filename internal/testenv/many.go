package testenv

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

// StartN starts n servers with the same options concurrently, so a test
// that needs several (shards and a reference) waits for one start-up
// instead of n, and registers their Stop with tb.Cleanup. It fails the test
// if any of them cannot be started, after stopping the others.
func StartN(tb testing.TB, n int, opts Options) []*Server {
	tb.Helper()
	srvs, err := StartNE(n, opts)
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	for _, s := range srvs {
		tb.Cleanup(func() {
			if err := s.Stop(); err != nil {
				tb.Errorf("testenv: stop mariadbd: %v", err)
			}
		})
	}
	return srvs
}

// StartNE is StartN returning the error; the caller must Stop every server.
// When one server fails to start, those that did are stopped.
func StartNE(n int, opts Options) ([]*Server, error) {
	srvs := make([]*Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range srvs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			srvs[i], errs[i] = StartE(opts)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("server %d of %d: %w", i+1, n, errs[i])
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, s := range srvs {
			if s != nil {
				_ = s.Stop()
			}
		}
		return nil, err
	}
	return srvs, nil
}
