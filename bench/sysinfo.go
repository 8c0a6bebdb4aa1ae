package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// SystemInfo describes the machine and the software versions of a run.
type SystemInfo struct {
	CPUModel string
	CPUs     int // logical CPUs online
	Memory   string
	Kernel   string
	OS       string
	// Versions are "name: version" lines in report order.
	Versions []string
}

// CollectSystemInfo gathers the machine description and the versions of
// mariadbd, haproxy, sysbench, go and shardgate. Failures become "unknown"
// entries: they must not stop a benchmark.
func CollectSystemInfo(ctx context.Context, env *Env) SystemInfo {
	info := SystemInfo{
		CPUModel: cpuModel(),
		CPUs:     runtime.NumCPU(),
		Memory:   memTotal(),
		Kernel:   readTrimmed("/proc/sys/kernel/osrelease"),
		OS:       osName(),
	}
	mariadbd := "mariadbd"
	if env.Server != nil {
		if exe, err := os.Readlink("/proc/" + strconv.Itoa(env.Server.Pid()) + "/exe"); err == nil {
			mariadbd = exe
		}
	}
	info.Versions = []string{
		"mariadbd: " + toolVersion(ctx, mariadbd, "--version"),
		"haproxy: " + toolVersion(ctx, env.Tools.HAProxy, "-v"),
		"sysbench: " + toolVersion(ctx, env.Tools.Sysbench, "--version"),
		"go: " + toolVersion(ctx, env.Tools.Go, "version"),
		"shardgate: " + env.ShardgateRev,
	}
	if env.BaseRev != "" {
		info.Versions = append(info.Versions, "shardgate (base targets): "+env.BaseRev)
	}
	return info
}

// toolVersion runs bin args and returns the first line of its output.
func toolVersion(ctx context.Context, bin string, args ...string) string {
	if bin == "" {
		return "(not used)"
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("unknown (%s %s: %v)", bin, strings.Join(args, " "), err)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(line)
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) != 2 {
				return "unknown"
			}
			if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				return fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
			}
		}
	}
	return "unknown"
}

func osName() string {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return "unknown"
}

func readTrimmed(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}
