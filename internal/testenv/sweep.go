package testenv

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	instancePrefix = "i-"
	ownerFile      = "owner"
	// staleAge is how old an instance directory without an owner file, or a
	// template build directory, must be before it is considered abandoned.
	staleAge = 30 * time.Minute
)

var sweepOnce sync.Once

// sweepStale removes what earlier test processes left behind when they were
// killed before they could clean up: instance directories whose owning
// process is gone (and the mariadbd still running in one, should Pdeathsig
// not have fired) and abandoned template build directories.
func sweepStale(base string) {
	sweepOnce.Do(func() { doSweep(base) })
}

func doSweep(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	now := time.Now()
	for _, e := range entries {
		name := e.Name()
		p := filepath.Join(base, name)
		switch {
		case strings.HasPrefix(name, instancePrefix) && e.IsDir():
			owner, err := os.ReadFile(filepath.Join(p, ownerFile))
			if err != nil {
				// Possibly being created right now by another process.
				if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > staleAge {
					killOrphan(p)
					_ = os.RemoveAll(p)
				}
				continue
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(owner)))
			if err != nil || pid <= 0 || !processAlive(pid) {
				killOrphan(p)
				_ = os.RemoveAll(p)
			}
		case strings.HasPrefix(name, "template-") && strings.HasSuffix(name, ".lock"):
			key := strings.TrimSuffix(strings.TrimPrefix(name, "template-"), ".lock")
			// Nobody is building this template if we can take its lock, so
			// any build directory of it is left over from a crash.
			unlock, err := lockFile(p, false)
			if err != nil {
				continue
			}
			removeGlob(filepath.Join(base, "template-"+key+".tmp-*"))
			unlock()
		}
	}
}

// killOrphan SIGKILLs a mariadbd still running on the data directory of the
// abandoned instance directory dir. It only signals a process whose command
// line names that data directory.
func killOrphan(dir string) {
	datadir := filepath.Join(dir, "data")
	b, err := os.ReadFile(filepath.Join(datadir, "mysqld.pid"))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return
	}
	if !bytes.Contains(cmdline, []byte("--datadir="+datadir+"\x00")) {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 100 && processAlive(pid); i++ {
		time.Sleep(20 * time.Millisecond)
	}
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
