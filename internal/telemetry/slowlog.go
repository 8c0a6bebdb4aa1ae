package telemetry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shardgate/shardgate/internal/router"
)

// SlowRecord is one line of the slow query log (JSON).
type SlowRecord struct {
	Time         time.Time `json:"time"` // when the statement started
	Digest       string    `json:"digest"`
	Text         string    `json:"text"`                // the statement, or its digest text (telemetry.slow_log.mask_literals)
	Truncated    bool      `json:"truncated,omitempty"` // Text is cut to MaxSlowLogText
	User         string    `json:"user"`
	DB           string    `json:"db"`
	Kind         string    `json:"kind"`
	Cluster      string    `json:"cluster,omitempty"` // * for several shards
	Shards       int       `json:"shards,omitempty"`
	Backend      string    `json:"backend,omitempty"` // the address of the server that ran it (the last one, for several)
	DurationSec  float64   `json:"duration"`          // seconds
	RowsSent     uint64    `json:"rows_sent"`
	RowsAffected uint64    `json:"rows_affected"`
	ErrorCode    uint16    `json:"error_code,omitempty"`
	Error        string    `json:"error,omitempty"`
}

// DigestHex formats a digest as the admin views and the slow log show it.
func DigestHex(d uint64) string { return fmt.Sprintf("%016x", d) }

// MaxSlowLogText bounds a slow log record's statement text, so that the
// records queued for the writer stay small whatever the statements.
const MaxSlowLogText = 64 << 10

// slowLog writes records from a buffered channel in a goroutine of its
// own: a statement never waits for the file. Records that cannot be
// written, because the writer fell behind or the file refused them (a
// full disk), are dropped and counted; writing resumes with the next
// records once the file takes them again.
type slowLog struct {
	mu     sync.RWMutex // write (read-locked) against close
	closed bool
	err    error // close's
	ch     chan SlowRecord
	done   chan error
	// wantReopen asks the writer to reopen the file before its next
	// record if the path no longer names it; wake gets it to look even
	// when no record comes.
	wantReopen atomic.Bool
	wake       chan struct{}
	path       string
	dropped    prometheus.Counter
	log        *slog.Logger

	// The writer goroutine's own.
	f   *os.File
	out io.Writer // f, but for tests
}

const slowLogQueue = 4096

func openSlowLog(path string, dropped prometheus.Counter, log *slog.Logger) (*slowLog, error) {
	f, err := openSlowLogFile(path)
	if err != nil {
		return nil, err
	}
	sl := newSlowLog(path, f, f, dropped, log)
	go sl.run()
	return sl, nil
}

func newSlowLog(path string, f *os.File, out io.Writer, dropped prometheus.Counter, log *slog.Logger) *slowLog {
	return &slowLog{ch: make(chan SlowRecord, slowLogQueue), done: make(chan error, 1), wake: make(chan struct{}, 1),
		path: path, f: f, out: out, dropped: dropped, log: log}
}

func openSlowLogFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("telemetry: slow log: %w", err)
	}
	return f, nil
}

// write queues st's record; it copies what it keeps (the statement's
// buffers are reused once Record returns).
func (sl *slowLog) write(st *Statement, mask bool) {
	rec := SlowRecord{
		Time: st.Start, Digest: DigestHex(st.Digest), User: st.User, DB: st.DB, Kind: KindLabel(st.Kind),
		Cluster: st.ClusterName, Shards: st.Shards, Backend: st.Backend, DurationSec: st.Duration.Seconds(),
		RowsSent: st.RowsSent, RowsAffected: st.Affected, ErrorCode: st.ErrCode, Error: st.ErrMsg,
	}
	rec.Text, rec.Truncated = slowText(st, mask)
	sl.mu.RLock()
	defer sl.mu.RUnlock()
	if sl.closed {
		return
	}
	select {
	case sl.ch <- rec:
	default:
		sl.dropped.Inc()
	}
}

// slowText is the text of st's record, masked or not, cut to
// MaxSlowLogText.
func slowText(st *Statement, mask bool) (string, bool) {
	switch {
	case st.Digest == 0 && st.SQL == nil:
		return NoStatementText, false
	case mask:
		return cutText(router.DigestText(st.SQL), MaxSlowLogText)
	case len(st.SQL) > MaxSlowLogText:
		return cutText(string(st.SQL[:MaxSlowLogText+1]), MaxSlowLogText)
	}
	return string(st.SQL), false
}

// reopen asks the writer to reopen the file (a reload).
func (sl *slowLog) reopen() {
	sl.wantReopen.Store(true)
	select {
	case sl.wake <- struct{}{}:
	default:
	}
}

// slowBatch is the records the writer encoded and not yet written.
type slowBatch struct {
	buf  bytes.Buffer
	ends []int // where each record ends in buf
}

// slowBatchMax is how much the writer encodes before it writes.
const slowBatchMax = 64 << 10

// run writes records as JSON lines, writing whenever the queue is empty
// or a batch is full.
func (sl *slowLog) run() {
	var b slowBatch
	enc := json.NewEncoder(&b.buf)
	lost := 0 // records lost since the last write that succeeded; >0: failing
	flush := func() {
		if b.buf.Len() == 0 {
			return // a write of nothing proves nothing about the file
		}
		n, err := sl.out.Write(b.buf.Bytes())
		lost = sl.wrote(&b, n, err, lost)
		b.buf.Reset()
		b.ends = b.ends[:0]
	}
	for {
		var rec SlowRecord
		var ok bool
		select {
		case rec, ok = <-sl.ch:
		case <-sl.wake:
			if sl.wantReopen.Load() {
				flush()
				sl.reopenFile()
			}
			continue
		}
		if !ok {
			break
		}
		if sl.wantReopen.Load() {
			flush()
			sl.reopenFile()
		}
		if err := enc.Encode(&rec); err != nil {
			sl.log.Warn("slow log record not written", "err", err) // a value JSON cannot hold: a bug
			sl.dropped.Inc()
			continue
		}
		b.ends = append(b.ends, b.buf.Len())
		if len(sl.ch) == 0 || b.buf.Len() >= slowBatchMax {
			flush()
		}
	}
	flush()
	var failed error
	if lost > 0 {
		failed = fmt.Errorf("%d records lost to write errors", lost)
	}
	if err := sl.f.Close(); err != nil && failed == nil {
		failed = err
	}
	sl.done <- failed
}

// wrote accounts for a batch's write, of which n bytes went out: the
// records not written whole are dropped. lost counts them over a burst of
// failures, which is logged once at its start and once at its end.
func (sl *slowLog) wrote(b *slowBatch, n int, err error, lost int) int {
	if err == nil {
		if lost > 0 {
			sl.log.Info("slow log writes again", "file", sl.path, "lost_records", lost)
		}
		return 0
	}
	failed := 0
	for _, end := range b.ends {
		if end > n {
			failed++
		}
	}
	sl.dropped.Add(float64(failed))
	if lost == 0 {
		sl.log.Error("slow log write failed: records are dropped (counted in shardgate_slow_log_dropped_total) until writes succeed again; free space on its disk or fix the file",
			"file", sl.path, "err", err)
	}
	return lost + failed
}

// reopenFile opens the slow log's path again if it no longer names the
// open file (renamed away by logrotate, or removed), and writes there
// from now on. When it cannot, the old file stays.
func (sl *slowLog) reopenFile() {
	sl.wantReopen.Store(false)
	if sl.out != io.Writer(sl.f) {
		return // a test's writer
	}
	if fi, err := os.Stat(sl.path); err == nil {
		if cur, err := sl.f.Stat(); err == nil && os.SameFile(fi, cur) {
			return
		}
	}
	f, err := openSlowLogFile(sl.path)
	if err != nil {
		sl.log.Error("slow log not reopened: writing on to the file it was", "err", err)
		return
	}
	if err := sl.f.Close(); err != nil {
		sl.log.Warn("slow log: closing the file rotated away", "file", sl.path, "err", err)
	}
	sl.f, sl.out = f, f
	sl.log.Info("slow log reopened", "file", sl.path)
}

// close ends the writer once the queue is written; later records are
// dropped. Closing again returns the first close's result.
func (sl *slowLog) close() error {
	sl.mu.Lock()
	if !sl.closed {
		sl.closed = true
		close(sl.ch)
		if err := <-sl.done; err != nil {
			sl.err = fmt.Errorf("telemetry: slow log %s: %w", sl.path, err)
		}
	}
	sl.mu.Unlock()
	return sl.err
}
