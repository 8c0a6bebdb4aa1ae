package xa

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
)

// Server errors recovery reacts to.
const (
	erDupEntry    uint16 = 1062
	erNoSuchTable uint16 = 1146
	erXANota      uint16 = 1397 // XAER_NOTA: no such branch (resolved, or still attached to its session)
)

// Shard is a cluster recovery scans: its name, a dialer of its writer of
// the moment, and the schemas (databases) whose decision tables it holds.
type Shard struct {
	Name    string
	Dial    func(ctx context.Context) (*backend.Conn, error)
	Schemas []string
}

// Config is what a Recoverer needs.
type Config struct {
	Registry *Registry // this process's open transactions
	Shards   []Shard
	// Interval between passes; AbandonAfter is how long a prepared branch
	// of another process without a decision must have been seen before
	// recovery decides it was abandoned and rolls it back.
	Interval, AbandonAfter time.Duration
	// AbortRetention is how long an 'abort' decision row is kept: a
	// coordinator whose commit would come later than that is refused by
	// nothing but its lost connection.
	AbortRetention time.Duration
	Timeout        time.Duration // bounds each round trip
	Log            *slog.Logger
	Metrics        *Metrics
}

// Branch is a prepared branch recovery has seen and not resolved.
type Branch struct {
	Shard     string
	XID       XID
	Decision  string // commit, abort, or "" when none is recorded yet
	FirstSeen time.Time
	Note      string // why it is still there
}

// Recoverer resolves the prepared branches shardgate processes left
// behind: at start, then every Interval.
type Recoverer struct {
	cfg   Config
	mu    sync.Mutex // one pass at a time; guards the fields below
	conns map[string]*backend.Conn
	seen  map[string]time.Time // first sight of a branch, by shard and xid
	left  []Branch             // what the last pass left prepared
}

// NewRecoverer returns a Recoverer; Run starts it.
func NewRecoverer(cfg Config) *Recoverer {
	if cfg.Interval <= 0 {
		cfg.Interval = 10 * time.Second
	}
	if cfg.AbandonAfter <= 0 {
		cfg.AbandonAfter = time.Minute
	}
	if cfg.AbortRetention <= 0 {
		cfg.AbortRetention = time.Hour
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Recoverer{cfg: cfg, conns: map[string]*backend.Conn{}, seen: map[string]time.Time{}}
}

// Run creates the decision tables, then makes a pass at once and every
// Interval until ctx ends.
func (r *Recoverer) Run(ctx context.Context) {
	r.CreateTables(ctx)
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		r.Pass(ctx)
		select {
		case <-ctx.Done():
			r.close()
			return
		case <-t.C:
		}
	}
}

// CreateTables creates each schema's decision table on each shard where
// it is missing. A shard that cannot be reached gets it on a later pass
// (the pass creates it on first use too).
func (r *Recoverer) CreateTables(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, sh := range r.cfg.Shards {
		for _, schema := range sh.Schemas {
			if _, err := r.query(ctx, sh, CreateTableSQL(schema)); err != nil {
				r.cfg.Log.Warn("could not create the XA decision table; two-phase commits coordinated by this shard fail until it exists",
					"shard", sh.Name, "table", schema+"."+DecisionTable, "err", err,
					"hint", "the backend account needs CREATE, SELECT, INSERT and DELETE on it: "+CreateTableSQL(schema))
			}
		}
	}
}

// CreateTable creates schema's decision table on the shard named
// cluster, on a connection of its own: a coordinator that found it
// missing at its decision (before recovery's first pass got there) has a
// transaction open, which DDL on its own connection would commit.
func (r *Recoverer) CreateTable(ctx context.Context, cluster, schema string) error {
	sh := r.shard(cluster)
	if sh == nil {
		return fmt.Errorf("shard %s is not a shard of an atomic schema", cluster)
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	c, err := r.dial(ctx, *sh)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Bounded(ctx, func() error { return c.Exec(CreateTableSQL(schema)) }); err != nil {
		return fmt.Errorf("create %s.%s on shard %s (the backend account needs CREATE there): %w", schema, DecisionTable, cluster, err)
	}
	return nil
}

// InDoubt is what the last pass left prepared.
func (r *Recoverer) InDoubt() []Branch {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.left)
}

// Pass scans every shard once and resolves what it can. It returns the
// branches it left prepared.
func (r *Recoverer) Pass(ctx context.Context) []Branch {
	r.mu.Lock()
	defer r.mu.Unlock()
	// The decision rows are read before the branches: a row is removed
	// only when none of its branches was prepared after it was read.
	rows, rowsOK := r.readDecisions(ctx)
	prepared, scanOK := r.scan(ctx)
	var known map[string]string // when every table was read: gtrid -> decision
	if rowsOK {
		known = decisionsByGtrid(rows)
	}
	now := time.Now()
	seen := make(map[string]time.Time, len(prepared))
	r.left = r.left[:0]
	for _, b := range prepared {
		if !r.ours(b.XID) {
			continue
		}
		key := b.Shard + "/" + b.XID.String()
		first, ok := r.seen[key]
		if !ok {
			first = now
		}
		b.FirstSeen = first
		if r.resolve(ctx, &b, now, known) {
			continue
		}
		seen[key] = first
		r.left = append(r.left, b)
	}
	r.seen = seen
	if rowsOK && scanOK {
		r.removeDecisions(ctx, rows, prepared)
	}
	r.publish(now)
	return slices.Clone(r.left)
}

func (r *Recoverer) publish(now time.Time) {
	if r.cfg.Metrics == nil {
		return
	}
	r.cfg.Metrics.InDoubt.Set(float64(len(r.left)))
	oldest := 0.0
	for _, b := range r.left {
		oldest = max(oldest, now.Sub(b.FirstSeen).Seconds())
	}
	r.cfg.Metrics.InDoubtOldest.Set(oldest)
}

// scan lists the prepared shardgate branches of every shard. ok is false
// when a shard could not be scanned.
func (r *Recoverer) scan(ctx context.Context) (out []Branch, ok bool) {
	ok = true
	for _, sh := range r.cfg.Shards {
		rows, err := r.query(ctx, sh, "XA RECOVER")
		if err != nil {
			r.cfg.Log.Warn("XA recovery could not list the prepared branches of a shard; it tries again next pass",
				"shard", sh.Name, "err", err, "hint", "the backend account needs the privilege to run XA RECOVER (XA_RECOVER_ADMIN on MySQL 8)")
			ok = false
			continue
		}
		for _, row := range rows {
			b, isOurs := parseRecoverRow(row)
			if !isOurs {
				continue
			}
			b.Shard = sh.Name
			out = append(out, b)
		}
	}
	return out, ok
}

// parseRecoverRow reads a row of XA RECOVER: formatID, gtrid_length,
// bqual_length, data.
func parseRecoverRow(row []string) (Branch, bool) {
	if len(row) < 4 || row[0] != strconv.Itoa(FormatID) {
		return Branch{}, false
	}
	gl, err1 := strconv.Atoi(row[1])
	bl, err2 := strconv.Atoi(row[2])
	data := row[3]
	if err1 != nil || err2 != nil || gl < 0 || bl < 0 || gl+bl > len(data) {
		return Branch{}, false
	}
	x, err := ParseXID(data[:gl], data[gl:gl+bl])
	if err != nil {
		return Branch{}, false
	}
	return Branch{XID: x}, true
}

// resolve commits or rolls back b if its decision is known or may now be
// taken; it reports whether b is resolved. known, when not nil, is every
// decision row as the pass read them before the scan: a branch without
// one there is read no further (a decision committed since is found by
// the abort fence's duplicate key).
func (r *Recoverer) resolve(ctx context.Context, b *Branch, now time.Time, known map[string]string) bool {
	gtrid := b.XID.Gtrid()
	if b.XID.Boot == r.cfg.Registry.Boot && r.cfg.Registry.Open(gtrid) {
		b.Note = "its transaction is running in this process"
		return false
	}
	coord := r.shard(b.XID.Coordinator)
	var err error
	decision, ok := known[decisionKey(b.XID.Coordinator, b.XID.Schema, gtrid)]
	if !ok && known == nil {
		if decision, err = r.decision(ctx, *coord, b.XID); err != nil {
			b.Note = "reading the decision: " + err.Error()
			return false
		}
	}
	decidedBy := "decision row"
	if decision == "" {
		if reason := r.abandoned(b, now); reason == "" {
			b.Note = "no decision yet; its transaction may still commit"
			return false
		} else {
			decidedBy = reason
		}
		decision, err = r.fence(ctx, *coord, b.XID)
		if err != nil {
			b.Note = "recording the abort decision: " + err.Error()
			return false
		}
	}
	b.Decision = decision
	verb := "XA COMMIT "
	if decision == Abort {
		verb = "XA ROLLBACK "
	}
	sh := r.shard(b.Shard)
	_, err = r.query(ctx, *sh, verb+b.XID.SQL())
	if mysql.HasErrorCode(err, erXANota) {
		// Resolved meanwhile, or still attached to the connection of a
		// session that is alive: the next pass sees which.
		b.Note = "not resolvable now (resolved meanwhile, or its session still holds it)"
		return false
	}
	outcome := "commit"
	if decision == Abort {
		outcome = "rollback"
	}
	if err != nil {
		r.count("failed")
		b.Note = verb + "failed: " + err.Error()
		r.cfg.Log.Warn("XA recovery failed to resolve a prepared branch; it tries again next pass",
			"shard", b.Shard, "xid", b.XID.String(), "decision", decision, "err", err)
		return false
	}
	r.count(outcome)
	r.cfg.Log.Info("XA recovery resolved a prepared branch",
		"shard", b.Shard, "xid", b.XID.String(), "outcome", outcome, "decided_by", decidedBy,
		"coordinator", b.XID.Coordinator, "instance", b.XID.Instance, "in_doubt_for", now.Sub(b.FirstSeen).Round(time.Millisecond).String())
	return true
}

// ours reports whether x belongs to a transaction this configuration can
// judge: its schema is an atomic schema whose shards include its
// coordinator. A branch of another layout on the same server (another
// fleet, or another schema) is left alone: its coordinator's name may
// name another server here, where reading "no decision" would be wrong.
func (r *Recoverer) ours(x XID) bool {
	sh := r.shard(x.Coordinator)
	return sh != nil && slices.Contains(sh.Schemas, x.Schema)
}

// abandoned says why b's transaction, which has no decision, can be
// decided now, or "" when it may still be committing: a branch of this
// instance's earlier process (an instance name belongs to one process at
// a time) or of this process's transactions no longer open is over; one
// of another instance is over once seen for AbandonAfter.
func (r *Recoverer) abandoned(b *Branch, now time.Time) string {
	reg := r.cfg.Registry
	switch {
	case b.XID.Instance == reg.Instance && b.XID.Boot != reg.Boot:
		return "left by an earlier process of this instance"
	case b.XID.Boot == reg.Boot:
		return "its transaction in this process has ended"
	case now.Sub(b.FirstSeen) >= r.cfg.AbandonAfter:
		return "abandoned: no decision after " + r.cfg.AbandonAfter.String()
	}
	return ""
}

func (r *Recoverer) count(outcome string) {
	if r.cfg.Metrics != nil {
		r.cfg.Metrics.Recoveries.WithLabelValues(outcome).Inc()
	}
}

func (r *Recoverer) shard(name string) *Shard {
	for i := range r.cfg.Shards {
		if r.cfg.Shards[i].Name == name {
			return &r.cfg.Shards[i]
		}
	}
	return nil
}

// decision reads x's decision on its coordinator: commit, abort or "".
func (r *Recoverer) decision(ctx context.Context, coord Shard, x XID) (string, error) {
	rows, err := r.query(ctx, coord, decisionQuery(x.Schema, x.Gtrid()))
	if mysql.HasErrorCode(err, erNoSuchTable) {
		return "", nil // no decision was ever recorded there
	}
	if err != nil || len(rows) == 0 {
		return "", err
	}
	return rows[0][0], nil
}

// fence records the abort decision of x unless a commit decision is
// there first, and returns the decision that holds. A coordinator whose
// transaction holds an uncommitted commit row makes the insert wait for
// it (up to the connection's lock wait timeout).
func (r *Recoverer) fence(ctx context.Context, coord Shard, x XID) (string, error) {
	_, err := r.query(ctx, coord, string(appendDecision(nil, x.Schema, x.Gtrid(), Abort)))
	if mysql.HasErrorCode(err, erNoSuchTable) {
		if _, err := r.query(ctx, coord, CreateTableSQL(x.Schema)); err != nil {
			return "", err
		}
		_, err = r.query(ctx, coord, string(appendDecision(nil, x.Schema, x.Gtrid(), Abort)))
	}
	if mysql.HasErrorCode(err, erDupEntry) {
		d, err := r.decision(ctx, coord, x)
		if err == nil && d == "" {
			err = errors.New("the decision row vanished")
		}
		return d, err
	}
	if err != nil {
		return "", err
	}
	return Abort, nil
}

// readDecisions reads every decision row: by shard, the rows with the
// decision and whether the row is older than the abort retention.
func (r *Recoverer) readDecisions(ctx context.Context) (map[string][]decisionRow, bool) {
	out := map[string][]decisionRow{}
	ok := true
	ret := strconv.FormatInt(r.cfg.AbortRetention.Microseconds(), 10)
	for _, sh := range r.cfg.Shards {
		for _, schema := range sh.Schemas {
			rows, err := r.query(ctx, sh, "SELECT gtrid, decision, created < NOW(6) - INTERVAL "+ret+" MICROSECOND FROM "+tableName(schema))
			if mysql.HasErrorCode(err, erNoSuchTable) {
				continue
			}
			if err != nil {
				ok = false
				continue
			}
			for _, row := range rows {
				out[sh.Name] = append(out[sh.Name], decisionRow{schema: schema, gtrid: row[0], decision: row[1], expired: row[2] == "1"})
			}
		}
	}
	return out, ok
}

type decisionRow struct {
	schema, gtrid, decision string
	expired                 bool
}

// decisionsByGtrid indexes the rows readDecisions read by decisionKey.
func decisionsByGtrid(rows map[string][]decisionRow) map[string]string {
	out := map[string]string{}
	for shard, rs := range rows {
		for _, d := range rs {
			out[decisionKey(shard, d.schema, d.gtrid)] = d.decision
		}
	}
	return out
}

// decisionKey names a decision row: its shard, schema and gtrid.
func decisionKey(shard, schema, gtrid string) string { return shard + "\x00" + schema + "\x00" + gtrid }

// removeDecisions deletes the decision rows no prepared branch needs: a
// commit row whose transaction has no branch left prepared, an abort row
// past its retention. One DELETE per table and removeBatch rows.
func (r *Recoverer) removeDecisions(ctx context.Context, rows map[string][]decisionRow, prepared []Branch) {
	live := map[string]bool{}
	for _, b := range prepared {
		live[b.XID.Gtrid()] = true
	}
	for _, sh := range r.cfg.Shards {
		bySchema := map[string][]string{}
		for _, d := range rows[sh.Name] {
			if live[d.gtrid] || d.decision == Abort && !d.expired {
				continue
			}
			bySchema[d.schema] = append(bySchema[d.schema], "X'"+hexOf(d.gtrid)+"'")
		}
		for schema, keys := range bySchema {
			for len(keys) > 0 {
				n := min(len(keys), removeBatch)
				sql := "DELETE FROM " + tableName(schema) + " WHERE gtrid IN (" + strings.Join(keys[:n], ",") + ")"
				if _, err := r.query(ctx, sh, sql); err != nil {
					r.cfg.Log.Warn("XA recovery could not remove decision rows; it tries again next pass", "shard", sh.Name, "err", err)
					break
				}
				keys = keys[n:]
			}
		}
	}
}

// removeBatch bounds the rows one DELETE of decision rows names.
const removeBatch = 500

// query runs sql on the shard's recovery connection, dialling one when
// needed; a connection that fails is closed and the next call dials.
func (r *Recoverer) query(ctx context.Context, sh Shard, sql string) ([][]string, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	c := r.conns[sh.Name]
	if c == nil {
		var err error
		if c, err = r.dial(ctx, sh); err != nil {
			return nil, err
		}
		r.conns[sh.Name] = c
	}
	var rows [][]string
	err := c.Bounded(ctx, func() (err error) {
		rows, err = c.QueryRows(sql)
		return err
	})
	if err != nil && !mysql.IsSQLError(err) {
		_ = c.Close()
		delete(r.conns, sh.Name)
	}
	return rows, err
}

// recoverySetup: each statement commits alone, and a recovery insert
// waits a short while for a coordinator's uncommitted decision.
const recoverySetup = "SET SESSION autocommit = 1, SESSION innodb_lock_wait_timeout = 5, SESSION sql_mode = 'STRICT_ALL_TABLES'"

func (r *Recoverer) dial(ctx context.Context, sh Shard) (*backend.Conn, error) {
	c, err := sh.Dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to shard %s: %w", sh.Name, err)
	}
	if err := c.Bounded(ctx, func() error { return c.Exec(recoverySetup) }); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("set up recovery connection to shard %s: %w", sh.Name, err)
	}
	return c, nil
}

func (r *Recoverer) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, c := range r.conns {
		_ = c.Close()
		delete(r.conns, name)
	}
}
