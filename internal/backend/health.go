package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
)

// HealthConfig times the health checks.
type HealthConfig struct {
	Interval time.Duration // between checks of one server
	Timeout  time.Duration // connect plus queries of one check
	// Reconnect is how often a server that is out and accepted no
	// connection at its last check is tried with a plain TCP connect (see
	// schedule).
	Reconnect time.Duration
}

func (c HealthConfig) withDefaults() HealthConfig {
	if c.Interval <= 0 {
		c.Interval = time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = time.Second
	}
	if c.Reconnect <= 0 {
		c.Reconnect = 250 * time.Millisecond
	}
	return c
}

// schedule decides when a server's checker acts, and how. A server in use
// gets a full check (log in, read its state) every interval; a server that
// is out (breaker open) gets one when the breaker's backoff period ends.
// The backoff grows with the outage, so while an out server accepts no
// connections, the checker also tries a plain TCP connect every reconnect
// period: the first that succeeds starts a full check on that connection at
// once, whatever the backoff, so that a server is back in use within about
// a reconnect period of accepting connections again, however long it was
// down. A server that accepts connections but fails its checks (starting,
// shutting down, refusing the login) is left to the backoff: it is not
// hammered with logins, nor with aborted connects, which count toward its
// max_connect_errors.
type schedule struct {
	interval, reconnect time.Duration
	nextCheck           time.Time // no full check before this (nor before the breaker allows)
	nextConnect         time.Time // no connect attempt before this
	// refused: the server accepted no connection at the last attempt, or
	// it is not known whether it does (the checker has just started, or the
	// last check failed on a connection opened earlier).
	refused bool
}

// step is what a checker does next.
type step int

const (
	stepWait    step = iota
	stepCheck        // a full check
	stepConnect      // a TCP connect; if it succeeds, a full check on it
)

func newSchedule(cfg HealthConfig) schedule {
	return schedule{interval: cfg.Interval, reconnect: cfg.Reconnect, refused: true}
}

// next says what is due at now for a server with breaker b; with
// stepWait, how long until something may be.
func (sc *schedule) next(now time.Time, b *breaker) (step, time.Duration) {
	if !now.Before(sc.nextCheck) && b.probeDue(now) {
		return stepCheck, 0
	}
	if !b.isOpen() {
		return stepWait, max(sc.nextCheck.Sub(now), time.Millisecond)
	}
	wait := max(sc.nextCheck.Sub(now), b.until().Sub(now))
	if sc.refused {
		if !now.Before(sc.nextConnect) {
			return stepConnect, 0
		}
		wait = min(wait, sc.nextConnect.Sub(now))
	}
	return stepWait, max(wait, time.Millisecond)
}

// checked records a full check that started at start and failed with err
// (nil: passed), on a connection opened by an earlier check if reused.
func (sc *schedule) checked(start time.Time, err error, reused bool) {
	sc.nextCheck = start.Add(sc.interval)
	sc.refused = err != nil && (reused || isConnectError(err))
}

// connectTried records a connect attempt that started at start.
func (sc *schedule) connectTried(start time.Time) {
	sc.nextConnect = start.Add(sc.reconnect)
}

// checker checks one server on a connection of its own, never taken from or
// queued behind the pool that serves statements.
type checker struct {
	s    *Server
	cfg  HealthConfig
	log  *slog.Logger
	conn *Conn
	// varsQuery reads read_only and the applied GTID position; chosen anew
	// on every connection, "" when read_only may not be read (see readVars).
	varsQuery string
	// checks counts the checks on conn, to renew it while a statement is
	// denied.
	checks int
	// denied holds the health statements the backend account was refused,
	// so that each is reported once, not at every check.
	denied [numProbes]bool
	// lastErr is the reason the previous check failed ("" if it passed).
	lastErr string
}

const (
	mariadbVarsQuery = "SELECT @@global.read_only, @@global.gtid_current_pos"
	plainVarsQuery   = "SELECT @@global.read_only, ''"
)

// Error codes a server answers health statements with.
const (
	erDBAccessDenied        = 1044 // ER_DBACCESS_DENIED_ERROR
	erTableAccessDenied     = 1142 // ER_TABLEACCESS_DENIED_ERROR
	erColumnAccessDenied    = 1143 // ER_COLUMNACCESS_DENIED_ERROR
	erUnknownSystemVariable = 1193 // ER_UNKNOWN_SYSTEM_VARIABLE (MySQL: gtid_current_pos)
	erSpecificAccessDenied  = 1227 // ER_SPECIFIC_ACCESS_DENIED_ERROR: "you need (at least one of) the ... privilege(s)"
)

// probeItem is a part of the health check the backend account may be
// denied.
type probeItem int

const (
	probeGTID        probeItem = iota // @@global.gtid_current_pos
	probeReadOnly                     // @@global.read_only
	probeReplication                  // SHOW SLAVE STATUS
	numProbes
)

// renewDeniedEvery is how many checks a connection serves while a health
// statement is denied: a GRANT of a global privilege reaches only new
// connections, so the checker reconnects now and then to notice one.
const renewDeniedEvery = 60

// run checks the server as its schedule says until stop is closed, calling
// changed after every check.
func (k *checker) run(stop <-chan struct{}, changed func(*Server, *Health)) {
	sc := newSchedule(k.cfg)
	timer := time.NewTimer(0)
	defer timer.Stop()
	defer k.close()
	for {
		select {
		case <-stop:
			return
		case <-timer.C:
		}
		timer.Reset(k.step(&sc, changed))
	}
}

// step does what sc says is due now and returns how long to wait for the
// next step.
func (k *checker) step(sc *schedule, changed func(*Server, *Health)) time.Duration {
	now := time.Now()
	var nc net.Conn
	switch what, wait := sc.next(now, &k.s.breaker); what {
	case stepWait:
		return wait
	case stepConnect:
		sc.connectTried(now)
		var err error
		if nc, err = k.connect(); err != nil {
			return 0 // still refused: the schedule says when to retry
		}
	}
	reused := k.conn != nil && nc == nil
	h, err := k.check(nc)
	sc.checked(now, err, reused)
	changed(k.s, h)
	return 0
}

// connect tries a plain TCP connection to the server: cheap for both sides,
// no login.
func (k *checker) connect() (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), k.cfg.Timeout)
	defer cancel()
	return connectTCP(ctx, k.s.Pool.dial)
}

// check runs one full check, logging in on nc when step's connect attempt
// opened it. A failed check closes the connection; a passing one of a
// server that was out puts it back in use and warms up its pool at once.
func (k *checker) check(nc net.Conn) (*Health, error) {
	h, err := k.probe(nc)
	if err != nil {
		k.close()
		prev := k.s.health.Load()
		h = &Health{Checked: true, Lag: -1, ReadOnly: prev.ReadOnly, ReadOnlyUnknown: prev.ReadOnlyUnknown,
			GTIDPos: prev.GTIDPos, Err: err}
	}
	h.At = time.Now()
	k.s.health.Store(h)
	if k.s.breaker.probed(h.At, err == nil) {
		k.s.Pool.serverBack()
	}
	k.logResult(err)
	return h, err
}

// logResult logs every failed check: at WARN when its reason is new, at
// DEBUG when it repeats the previous one, and a passing check after
// failures at INFO.
func (k *checker) logResult(err error) {
	if err == nil {
		if k.lastErr != "" {
			k.log.Info("backend health check passes again")
			k.lastErr = ""
		}
		return
	}
	reason := reasonKey(err)
	attrs := []any{"err", err, "breaker_open", k.s.BreakerOpen()}
	if reason == k.lastErr {
		k.log.Debug("backend health check failed again", attrs...)
		return
	}
	k.lastErr = reason
	k.log.Warn("backend health check failed", attrs...)
}

// reasonKey is what makes two failed checks fail for the same reason: the
// error's text without the local port of a network error, which differs
// on every connection.
func reasonKey(err error) string {
	msg := err.Error()
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		msg = strings.Replace(msg, oe.Error(), oe.Op+" "+oe.Err.Error(), 1)
	}
	return msg
}

// probe connects if needed (logging in on nc if not nil) and asks the
// server for its state.
func (k *checker) probe(nc net.Conn) (*Health, error) {
	if k.conn != nil && (nc != nil || k.deniedAny() && k.checks >= renewDeniedEvery) {
		k.close()
	}
	if k.conn == nil {
		ctx, cancel := context.WithTimeout(context.Background(), k.cfg.Timeout)
		var c *Conn
		var err error
		if nc != nil {
			c, err = login(ctx, nc, k.s.Pool.dial, false)
		} else {
			c, err = Dial(ctx, k.s.Pool.dial, false)
		}
		cancel()
		if err != nil {
			return nil, err
		}
		k.conn, k.varsQuery, k.checks = c, mariadbVarsQuery, 0
	}
	k.checks++
	conn := k.conn.NetConn()
	_ = conn.SetDeadline(time.Now().Add(k.cfg.Timeout))
	defer conn.SetDeadline(time.Time{})
	h := &Health{Checked: true, Up: true, Lag: -1}
	if err := k.readVars(h); err != nil {
		return nil, err
	}
	if err := k.readReplication(h); err != nil {
		return nil, err
	}
	return h, nil
}

// readVars reads read_only and the applied GTID position into h. It falls
// back, for the connection's lifetime, to reading less: MySQL has no
// gtid_current_pos (its position stays empty), and an account refused a
// variable leaves it unknown rather than failing the check.
func (k *checker) readVars(h *Health) error {
	for k.varsQuery != "" {
		rows, err := k.conn.QueryRows(k.varsQuery)
		if err == nil {
			if len(rows) != 1 || len(rows[0]) != 2 {
				return fmt.Errorf("read_only: unexpected result %v", rows)
			}
			h.ReadOnly, h.GTIDPos = rows[0][0] == "1", rows[0][1]
			if k.varsQuery == mariadbVarsQuery {
				k.allowed(probeGTID)
			}
			k.allowed(probeReadOnly)
			return nil
		}
		var se *mysql.SQLError
		switch {
		case k.varsQuery == mariadbVarsQuery && errors.As(err, &se) && se.Code == erUnknownSystemVariable:
			k.varsQuery = plainVarsQuery
		case k.varsQuery == mariadbVarsQuery && isAccessDenied(err):
			k.varsQuery = plainVarsQuery
			k.deny(probeGTID, err)
		case isAccessDenied(err):
			k.varsQuery = ""
			k.deny(probeReadOnly, err)
		default:
			return fmt.Errorf("read_only: %w", err)
		}
	}
	h.ReadOnlyUnknown = true
	return nil
}

// readReplication reads SHOW SLAVE STATUS into h. An account refused it
// leaves the replication state unknown: the server may still take writes,
// but gets no reads as a replica, since its lag is unknown.
func (k *checker) readReplication(h *Health) error {
	cols, rows, err := k.conn.QueryColumns("SHOW SLAVE STATUS")
	if isAccessDenied(err) {
		h.ReplicationUnknown = true
		k.deny(probeReplication, err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("replication status: %w", err)
	}
	k.allowed(probeReplication)
	if len(rows) > 0 {
		applyReplicaStatus(h, cols, rows[0])
	}
	return nil
}

// isAccessDenied reports a statement refused for lack of a privilege.
func isAccessDenied(err error) bool {
	var se *mysql.SQLError
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code {
	case erSpecificAccessDenied, erDBAccessDenied, erTableAccessDenied, erColumnAccessDenied:
		return true
	}
	return false
}

func (k *checker) deniedAny() bool {
	for _, d := range k.denied {
		if d {
			return true
		}
	}
	return false
}

// deny records that the account was refused item; the first time, it tells
// the operator what that costs and which GRANT fixes it.
func (k *checker) deny(item probeItem, err error) {
	if k.denied[item] {
		return
	}
	k.denied[item] = true
	account := k.account()
	switch item {
	case probeReplication:
		priv := replicationPrivilege(k.conn.ServerVersion)
		k.log.Warn("backend account may not run SHOW SLAVE STATUS: replication state unknown, so the server gets no reads as a replica (it still takes writes when not read-only)",
			"missing_privilege", priv, "fix", "GRANT "+priv+" ON *.* TO "+account, "err", err)
	case probeGTID:
		k.log.Warn("backend account may not read @@global.gtid_current_pos: every causal read waits on its replica (MASTER_GTID_WAIT)",
			"missing_privilege", "read access to @@global.gtid_current_pos", "account", account, "err", err)
	case probeReadOnly:
		k.log.Warn("backend account may not read @@global.read_only: only the configured primary takes writes, and a failover is not followed",
			"missing_privilege", "read access to @@global.read_only", "account", account, "err", err)
	}
}

// allowed records that item ran, telling the operator when it had been
// refused before.
func (k *checker) allowed(item probeItem) {
	if !k.denied[item] {
		return
	}
	k.denied[item] = false
	k.log.Info("backend account may now run the health check it was refused", "statement", probeStatements[item])
}

var probeStatements = [numProbes]string{
	probeGTID:        "SELECT @@global.gtid_current_pos",
	probeReadOnly:    "SELECT @@global.read_only",
	probeReplication: "SHOW SLAVE STATUS",
}

// account names the backend account as a GRANT wants it, 'user'@'host', as
// the server authenticated it.
func (k *checker) account() string {
	user, host := k.s.Pool.dial.User, "%"
	if rows, err := k.conn.QueryRows("SELECT CURRENT_USER()"); err == nil && len(rows) == 1 && len(rows[0]) == 1 {
		if i := strings.LastIndexByte(rows[0][0], '@'); i >= 0 {
			user, host = rows[0][0][:i], rows[0][0][i+1:]
		}
	}
	return quoteAccountPart(user) + "@" + quoteAccountPart(host)
}

func quoteAccountPart(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// replicationPrivilege is the privilege SHOW SLAVE STATUS needs on a server
// of this version: MariaDB moved it out of REPLICATION CLIENT into
// REPLICATION SLAVE ADMIN in 10.5.2, then into SLAVE MONITOR in 10.5.9;
// MySQL and older MariaDB want REPLICATION CLIENT.
func replicationPrivilege(version string) string {
	// MariaDB before 11 announces itself as "5.5.5-10.x.y-MariaDB".
	version = strings.TrimPrefix(version, "5.5.5-")
	if !strings.Contains(version, "MariaDB") {
		return "REPLICATION CLIENT"
	}
	v := versionNumbers(version)
	switch {
	case compareVersion(v, [3]int{10, 5, 9}) >= 0:
		return "SLAVE MONITOR"
	case compareVersion(v, [3]int{10, 5, 2}) >= 0:
		return "REPLICATION SLAVE ADMIN"
	}
	return "REPLICATION CLIENT"
}

// versionNumbers parses the leading major.minor.patch of a version string.
func versionNumbers(s string) [3]int {
	var v [3]int
	for i, part := range strings.SplitN(s, ".", 3) {
		end := 0
		for end < len(part) && part[end] >= '0' && part[end] <= '9' {
			end++
		}
		v[i], _ = strconv.Atoi(part[:end])
	}
	return v
}

func compareVersion(a, b [3]int) int {
	for i := range a {
		if a[i] != b[i] {
			return a[i] - b[i]
		}
	}
	return 0
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
