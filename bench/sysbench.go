package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
)

// SupportedTests are the sysbench tests that share oltp_common's tables, so
// that one `prepare` serves all of them.
var SupportedTests = []string{
	"oltp_point_select", "oltp_read_only", "oltp_read_write", "oltp_write_only",
	"oltp_update_index", "oltp_update_non_index", "oltp_delete", "oltp_insert",
	"select_random_points", "select_random_ranges",
}

// PSModes are sysbench's --db-ps-mode values: disable sends text queries
// (COM_QUERY), auto uses server-side prepared statements (COM_STMT_EXECUTE).
var PSModes = []string{"disable", "auto"}

// testArgs are extra sysbench options per test. oltp_read_only runs without
// BEGIN/COMMIT; the write tests may hit InnoDB deadlocks (1213) at high
// concurrency, which sysbench then counts as ignored errors and retries.
func testArgs(test string) []string {
	switch test {
	case "oltp_read_only":
		return []string{"--skip_trx=on"}
	case "oltp_read_write", "oltp_write_only":
		return []string{"--mysql-ignore-errors=1213"}
	}
	return nil
}

// sysbenchRun describes one sysbench invocation.
type sysbenchRun struct {
	bin       string
	test      string
	addr      string // host:port
	tables    int
	tableSize int
	threads   int
	seconds   int
	psMode    string
}

// args returns the sysbench command line (without the program) for command
// ("prepare" or "run").
func (r sysbenchRun) args(command string) ([]string, error) {
	host, port, err := net.SplitHostPort(r.addr)
	if err != nil {
		return nil, fmt.Errorf("sysbench target address %q: %w", r.addr, err)
	}
	a := []string{r.test,
		"--db-driver=mysql",
		"--mysql-host=" + host, "--mysql-port=" + port,
		"--mysql-user=" + testenv.User, "--mysql-password=" + testenv.Password,
		"--mysql-db=" + Database, "--mysql-ssl=off",
		"--tables=" + strconv.Itoa(r.tables), "--table-size=" + strconv.Itoa(r.tableSize),
	}
	if command == "run" {
		a = append(a,
			"--threads="+strconv.Itoa(r.threads),
			"--time="+strconv.Itoa(r.seconds),
			"--report-interval=0",
			"--histogram=on",
			"--percentile=99",
			"--db-ps-mode="+r.psMode,
		)
		a = append(a, testArgs(r.test)...)
	}
	return append(a, command), nil
}

// commandLine renders the invocation for the report.
func (r sysbenchRun) commandLine(command string) string {
	a, err := r.args(command)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return "sysbench " + strings.Join(a, " ")
}

// exec runs sysbench and returns its standard output. A run is given its
// duration plus a generous margin for connecting and tearing down.
func (r sysbenchRun) exec(ctx context.Context, command string) (string, error) {
	args, err := r.args(command)
	if err != nil {
		return "", err
	}
	timeout := time.Duration(r.seconds)*time.Second + 30*time.Second
	if command == "prepare" {
		timeout = 30 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return stdout.String(), fmt.Errorf("%s: timed out after %v", r.commandLine(command), timeout)
	}
	if err != nil {
		return stdout.String(), fmt.Errorf("%s: %w\n--- stdout (tail) ---\n%s\n--- stderr (tail) ---\n%s",
			r.commandLine(command), err, tailLines(stdout.Bytes(), 15), tailLines(stderr.Bytes(), 15))
	}
	if strings.Contains(stdout.String()+stderr.String(), "FATAL") {
		return stdout.String(), fmt.Errorf("%s reported a fatal error:\n%s", r.commandLine(command), tailLines(stderr.Bytes(), 15))
	}
	return stdout.String(), nil
}

// sysbenchStats is what one `sysbench ... run` reported.
type sysbenchStats struct {
	Queries      int64
	QPS          float64
	Transactions int64
	Ignored      int64 // ignored errors (1213 deadlocks where allowed)
	Reconnects   int64
	// P50, P95, P99 are per-event latencies computed from the histogram.
	P50, P95, P99 time.Duration
	// ReportedP99 is sysbench's own "99th percentile" line (0.01 ms
	// resolution), kept to cross-check the histogram.
	ReportedP99 time.Duration
}

var (
	sbQueriesRe    = regexp.MustCompile(`(?m)^\s*queries:\s+(\d+)\s+\(([\d.]+) per sec\.\)`)
	sbTxRe         = regexp.MustCompile(`(?m)^\s*transactions:\s+(\d+)\s+\(`)
	sbIgnoredRe    = regexp.MustCompile(`(?m)^\s*ignored errors:\s+(\d+)\s+\(`)
	sbReconnectRe  = regexp.MustCompile(`(?m)^\s*reconnects:\s+(\d+)\s+\(`)
	sbPercentileRe = regexp.MustCompile(`(?m)^\s*99th percentile:\s+([\d.]+)\s*$`)
	sbHistLineRe   = regexp.MustCompile(`^\s*([\d.]+)\s+\|[* ]*\s(\d+)\s*$`)
)

// parseSysbench extracts the statistics from the output of a run made with
// --histogram=on --percentile=99.
func parseSysbench(out string) (sysbenchStats, error) {
	var s sysbenchStats
	m := sbQueriesRe.FindStringSubmatch(out)
	if m == nil {
		return s, errors.New(`sysbench output has no "queries: N (X per sec.)" line`)
	}
	s.Queries, _ = strconv.ParseInt(m[1], 10, 64)
	s.QPS, _ = strconv.ParseFloat(m[2], 64)
	var err error
	if s.Transactions, err = findInt(out, sbTxRe, "transactions"); err != nil {
		return s, err
	}
	if s.Ignored, err = findInt(out, sbIgnoredRe, "ignored errors"); err != nil {
		return s, err
	}
	if s.Reconnects, err = findInt(out, sbReconnectRe, "reconnects"); err != nil {
		return s, err
	}
	if m := sbPercentileRe.FindStringSubmatch(out); m != nil {
		s.ReportedP99 = msToDuration(m[1])
	}
	h, err := parseHistogram(out)
	if err != nil {
		return s, err
	}
	s.P50, s.P95, s.P99 = h.percentile(50), h.percentile(95), h.percentile(99)
	return s, nil
}

func findInt(out string, re *regexp.Regexp, what string) (int64, error) {
	m := re.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("sysbench output has no %q line", what)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("sysbench %s %q: %w", what, m[1], err)
	}
	return n, nil
}

func msToDuration(s string) time.Duration {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return time.Duration(math.Round(f * float64(time.Millisecond)))
}

// histogram is sysbench's latency histogram: buckets in increasing order of
// latency with their event counts.
type histogram struct {
	values []time.Duration
	counts []int64
	total  int64
}

// parseHistogram reads the block after "Latency histogram (values are in
// milliseconds)" up to the first line that is not a bucket.
func parseHistogram(out string) (histogram, error) {
	var h histogram
	_, rest, ok := strings.Cut(out, "Latency histogram (values are in milliseconds)")
	if !ok {
		return h, errors.New("sysbench output has no latency histogram (was --histogram=on passed?)")
	}
	lines := strings.Split(rest, "\n")
	started := false
	for _, line := range lines[1:] {
		if strings.Contains(line, "distribution") {
			started = true
			continue
		}
		m := sbHistLineRe.FindStringSubmatch(line)
		if m == nil {
			if started {
				break
			}
			continue
		}
		started = true
		n, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil {
			return h, fmt.Errorf("histogram line %q: %w", line, err)
		}
		h.values = append(h.values, msToDuration(m[1]))
		h.counts = append(h.counts, n)
		h.total += n
	}
	if h.total == 0 {
		return h, errors.New("sysbench latency histogram is empty")
	}
	if !sort.SliceIsSorted(h.values, func(i, j int) bool { return h.values[i] < h.values[j] }) {
		return h, errors.New("sysbench latency histogram is not in increasing order")
	}
	return h, nil
}

// percentile returns the value of the first bucket at which the cumulative
// count reaches p percent of all events, rounded like sysbench does for its
// own percentile line.
func (h histogram) percentile(p float64) time.Duration {
	want := int64(math.Floor(float64(h.total)*p/100 + 0.5))
	if want < 1 {
		want = 1
	}
	var cum int64
	for i, n := range h.counts {
		cum += n
		if cum >= want {
			return h.values[i]
		}
	}
	return h.values[len(h.values)-1]
}
