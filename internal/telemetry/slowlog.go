package telemetry

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shardgate/shardgate/internal/router"
)

// SlowRecord is one line of the slow query log (JSON).
type SlowRecord struct {
	Time         time.Time `json:"time"` // when the statement started
	Digest       string    `json:"digest"`
	Text         string    `json:"text"` // the statement, or its digest text (telemetry.slow_log.mask_literals)
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

// slowLog writes records from a buffered channel in a goroutine of its
// own: a statement never waits for the file. When the writer falls
// behind, records are dropped and counted.
type slowLog struct {
	mu      sync.RWMutex // write (read-locked) against close
	closed  bool
	err     error // close's
	ch      chan SlowRecord
	done    chan error
	f       *os.File
	dropped prometheus.Counter
}

const slowLogQueue = 4096

func openSlowLog(path string, dropped prometheus.Counter, log *slog.Logger) (*slowLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("telemetry: slow log: %w", err)
	}
	sl := &slowLog{ch: make(chan SlowRecord, slowLogQueue), done: make(chan error, 1), f: f, dropped: dropped}
	go sl.run(log)
	return sl, nil
}

// write queues st's record; it copies what it keeps (the statement's
// buffers are reused once Record returns).
func (sl *slowLog) write(st *Statement, mask bool) {
	rec := SlowRecord{
		Time: st.Start, Digest: DigestHex(st.Digest), User: st.User, DB: st.DB, Kind: kindLabels[min(int(st.Kind), len(kindLabels)-1)],
		Cluster: st.ClusterName, Shards: st.Shards, Backend: st.Backend, DurationSec: st.Duration.Seconds(),
		RowsSent: st.RowsSent, RowsAffected: st.Affected, ErrorCode: st.ErrCode, Error: st.ErrMsg,
	}
	if mask {
		rec.Text = router.DigestText(st.SQL)
	} else {
		rec.Text = string(st.SQL)
	}
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

// run writes records as JSON lines, flushing whenever the queue is empty.
func (sl *slowLog) run(log *slog.Logger) {
	w := bufio.NewWriter(sl.f)
	enc := json.NewEncoder(w)
	var failed error
	for rec := range sl.ch {
		if err := enc.Encode(&rec); err != nil && failed == nil {
			failed = err
		}
		if len(sl.ch) == 0 {
			if err := w.Flush(); err != nil && failed == nil {
				failed = err
				log.Warn("slow log write failed", "file", sl.f.Name(), "err", err)
			}
		}
	}
	if err := w.Flush(); err != nil && failed == nil {
		failed = err
	}
	if err := sl.f.Close(); err != nil && failed == nil {
		failed = err
	}
	sl.done <- failed
}

// close ends the writer once the queue is written; later records are
// dropped. Closing again returns the first close's result.
func (sl *slowLog) close() error {
	sl.mu.Lock()
	if !sl.closed {
		sl.closed = true
		close(sl.ch)
		if err := <-sl.done; err != nil {
			sl.err = fmt.Errorf("telemetry: slow log %s: %w", sl.f.Name(), err)
		}
	}
	sl.mu.Unlock()
	return sl.err
}
