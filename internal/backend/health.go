package backend

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
)

// HealthConfig times the health checks.
type HealthConfig struct {
	Interval time.Duration // between checks of one server
	Timeout  time.Duration // connect plus queries of one check
}

func (c HealthConfig) withDefaults() HealthConfig {
	if c.Interval <= 0 {
		c.Interval = time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = time.Second
	}
	return c
}

// checker checks one server on a connection of its own, never taken from or
// queued behind the pool that serves statements.
type checker struct {
	s    *Server
	cfg  HealthConfig
	conn *Conn
	// gtidQuery is what reads the applied GTID position; MySQL has no
	// gtid_current_pos, so it falls back once to an empty one.
	gtidQuery string
}

const (
	mariadbHealthQuery = "SELECT @@global.read_only, @@global.gtid_current_pos"
	plainHealthQuery   = "SELECT @@global.read_only, ''"
)

// run checks the server every interval until stop is closed, calling
// changed after every check.
func (k *checker) run(stop <-chan struct{}, changed func(*Server, *Health)) {
	t := time.NewTicker(k.cfg.Interval)
	defer t.Stop()
	defer k.close()
	for {
		if h, ok := k.check(time.Now()); ok {
			changed(k.s, h)
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// check runs one check unless an open breaker's period has not passed yet
// (ok false: nothing was checked). A failed check closes the connection.
func (k *checker) check(now time.Time) (h *Health, ok bool) {
	if !k.s.breaker.probeDue(now) {
		return nil, false
	}
	h, err := k.probe()
	if err != nil {
		k.close()
		prev := k.s.health.Load()
		h = &Health{Checked: true, Lag: -1, ReadOnly: prev.ReadOnly, GTIDPos: prev.GTIDPos, Err: err}
	}
	h.At = time.Now()
	k.s.health.Store(h)
	k.s.breaker.probed(h.At, err == nil)
	return h, true
}

// probe connects if needed and asks the server for its state.
func (k *checker) probe() (*Health, error) {
	if k.conn == nil {
		ctx, cancel := context.WithTimeout(context.Background(), k.cfg.Timeout)
		c, err := Dial(ctx, k.s.Pool.dial, false)
		cancel()
		if err != nil {
			return nil, err
		}
		k.conn = c
	}
	nc := k.conn.NetConn()
	_ = nc.SetDeadline(time.Now().Add(k.cfg.Timeout))
	defer nc.SetDeadline(time.Time{})
	if k.gtidQuery == "" {
		k.gtidQuery = mariadbHealthQuery
	}
	rows, err := k.conn.QueryRows(k.gtidQuery)
	var se *mysql.SQLError
	if errors.As(err, &se) && se.Code == 1193 && k.gtidQuery == mariadbHealthQuery { // unknown system variable
		k.gtidQuery = plainHealthQuery
		rows, err = k.conn.QueryRows(k.gtidQuery)
	}
	if err != nil {
		return nil, fmt.Errorf("read_only: %w", err)
	}
	if len(rows) != 1 || len(rows[0]) != 2 {
		return nil, fmt.Errorf("read_only: unexpected result %v", rows)
	}
	h := &Health{Checked: true, Up: true, ReadOnly: rows[0][0] == "1", GTIDPos: rows[0][1], Lag: -1}
	cols, rows, err := k.conn.QueryColumns("SHOW SLAVE STATUS")
	if err != nil {
		return nil, fmt.Errorf("replication status: %w", err)
	}
	if len(rows) > 0 {
		applyReplicaStatus(h, cols, rows[0])
	}
	return h, nil
}

// applyReplicaStatus reads SHOW SLAVE STATUS (or SHOW REPLICA STATUS)
// columns into h.
func applyReplicaStatus(h *Health, cols, row []string) {
	get := func(names ...string) (string, bool) {
		for i, c := range cols {
			for _, n := range names {
				if strings.EqualFold(c, n) && i < len(row) {
					return row[i], true
				}
			}
		}
		return "", false
	}
	h.Replica = true
	io, _ := get("Slave_IO_Running", "Replica_IO_Running")
	sqlT, _ := get("Slave_SQL_Running", "Replica_SQL_Running")
	h.Replicating = strings.EqualFold(io, "Yes") && strings.EqualFold(sqlT, "Yes")
	if v, ok := get("Seconds_Behind_Master", "Seconds_Behind_Source"); ok && v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			h.Lag = time.Duration(n) * time.Second
		}
	}
}

func (k *checker) close() {
	if k.conn != nil {
		_ = k.conn.Close()
		k.conn = nil
	}
}
