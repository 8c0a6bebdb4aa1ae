package admin

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/frontend"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/telemetry"
)

// View is what an admin statement or /api endpoint answers: named
// columns and rows of typed values, rendered as a MySQL result set
// (sql.go) or as JSON objects (api.go). Values are string, bool, int,
// int64, uint64, Millis, Seconds, time.Time, []string or nil (unknown).
type View struct {
	Columns []Column
	Rows    [][]any
}

// Column is a view's column.
type Column struct {
	Name string
	Type frontend.LocalType
}

// Millis is a duration shown in milliseconds with three decimals.
type Millis time.Duration

// Seconds is a duration shown in seconds with three decimals.
type Seconds time.Duration

// cols makes a view's columns: text, but for those named in ints
// (integers) and decimals (Millis, Seconds, rates), blank-separated.
func cols(ints, decimals string, names ...string) []Column {
	out := make([]Column, len(names))
	for i, n := range names {
		out[i] = Column{Name: n}
		switch {
		case slices.Contains(strings.Fields(ints), n):
			out[i].Type = frontend.LocalInteger
		case slices.Contains(strings.Fields(decimals), n):
			out[i].Type = frontend.LocalDecimal
		}
	}
	return out
}

// BackendsView is SHOW BACKENDS: per cluster and server, its role, health,
// breaker, drain state, pool and load.
func BackendsView(src Source) *View {
	v := &View{Columns: cols("lag_seconds weight pool_open pool_idle pool_in_use pool_waiting running errors wait_timeouts", "",
		"cluster", "address", "role", "up", "read_only", "lag_seconds", "replicating", "breaker", "state", "weight",
		"pool_open", "pool_idle", "pool_in_use", "pool_waiting", "running", "errors", "wait_timeouts", "last_error")}
	for _, b := range src.Backends() {
		role, breaker, state := "replica", "closed", "online"
		if b.Writer {
			role = "writer"
		}
		if b.BreakerOpen {
			breaker = "open"
		}
		if b.Offline {
			state = "offline"
		}
		var up, lag any
		if b.Checked {
			up = b.Up
		}
		if b.Lag != nil {
			lag = int64(b.Lag.Seconds())
		}
		v.Rows = append(v.Rows, []any{b.Cluster, b.Address, role, up, optBool(b.ReadOnly), lag, optBool(b.Replicating),
			breaker, state, b.Weight, b.Open, b.Idle, b.InUse, b.Waiting, b.Running, b.Errors, b.WaitTimeouts, b.LastError})
	}
	return v
}

func optBool(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}

// SessionsView is SHOW SESSIONS: each client session, what it does and
// since when, by connection id.
func SessionsView(src Source, now time.Time) *View {
	v := &View{Columns: cols("id", "time_in_state", "id", "user", "client", "db", "state", "time_in_state",
		"statement", "digest", "backends")}
	acts := src.Sessions()
	slices.SortFunc(acts, func(a, b frontend.Activity) int { return cmp.Compare(a.ID, b.ID) })
	for _, a := range acts {
		var since, digest any
		if !a.Since.IsZero() {
			since = Seconds(now.Sub(a.Since))
		}
		if a.Digest != 0 {
			digest = telemetry.DigestHex(a.Digest)
		}
		v.Rows = append(v.Rows, []any{a.ID, a.User, a.Client, a.DB, a.State, since, a.Statement, digest, a.Backends})
	}
	return v
}

// TransactionsView is SHOW TRANSACTIONS: the open transactions with XA
// branches (kind open: participants, state, age) and the prepared
// branches recovery left unresolved (kind in_doubt: the shard holding the
// branch, the decision found, how long recovery has seen it, and why it
// is still there), oldest first.
func TransactionsView(src Source) *View {
	v := &View{Columns: cols("session", "age_seconds", "kind", "xid", "session", "coordinator", "participants", "state", "age_seconds", "note")}
	for _, t := range src.Transactions() {
		v.Rows = append(v.Rows, []any{"open", t.Gtrid, t.Session, t.Coordinator, strings.Join(t.Participants, ","), t.State, Seconds(t.Age), nil})
	}
	now := time.Now()
	for _, b := range src.InDoubt() {
		decision := b.Decision
		if decision == "" {
			decision = "none"
		}
		v.Rows = append(v.Rows, []any{"in_doubt", b.XID.String(), nil, b.XID.Coordinator, b.Shard, "prepared, decision: " + decision,
			Seconds(now.Sub(b.FirstSeen)), b.Note})
	}
	return v
}

// digestColumns are SHOW QUERY DIGESTS's columns, in order.
var digestColumns = cols("count rows_sent rows_affected errors shards_touched", "total_ms mean_ms p50_ms p99_ms max_ms",
	"digest", "user", "db", "text", "count", "total_ms", "mean_ms", "p50_ms", "p99_ms", "max_ms",
	"rows_sent", "rows_affected", "errors", "shards_touched", "first_seen", "last_seen")

// DigestOrderError is an ORDER BY column SHOW QUERY DIGESTS does not have.
type DigestOrderError struct{ Column string }

func (e *DigestOrderError) Error() string {
	names := make([]string, len(digestColumns))
	for i, c := range digestColumns {
		names[i] = c.Name
	}
	return fmt.Sprintf("Unknown column '%s' in 'order clause' (SHOW QUERY DIGESTS has: %s)", e.Column, strings.Join(names, ", "))
}

// DigestsView is SHOW QUERY DIGESTS: per statement shape, user and
// database, counts and latencies; ordered by order (default: total_ms
// descending) and cut to limit rows (-1: all).
func DigestsView(src Source, order string, desc bool, limit int) (*View, error) {
	col := slices.IndexFunc(digestColumns, func(c Column) bool { return c.Name == order })
	if order == "" {
		col, desc = slices.IndexFunc(digestColumns, func(c Column) bool { return c.Name == "total_ms" }), true
	}
	if col < 0 {
		return nil, &DigestOrderError{Column: order}
	}
	v := &View{Columns: digestColumns}
	for _, d := range src.Digests() {
		v.Rows = append(v.Rows, []any{telemetry.DigestHex(d.Digest), d.User, d.DB, d.Text, d.Count, Millis(d.Total),
			Millis(d.Mean), Millis(d.P50), Millis(d.P99), Millis(d.Max), d.RowsSent, d.RowsAffected, d.Errors,
			d.ShardsTouched, d.FirstSeen, d.LastSeen})
	}
	slices.SortStableFunc(v.Rows, func(a, b []any) int {
		c := compareValues(a[col], b[col])
		if desc {
			return -c
		}
		return c
	})
	if limit >= 0 && limit < len(v.Rows) {
		v.Rows = v.Rows[:limit]
	}
	return v, nil
}

// compareValues orders two values of one column.
func compareValues(a, b any) int {
	switch x := a.(type) {
	case string:
		return strings.Compare(x, b.(string))
	case uint64:
		return cmp.Compare(x, b.(uint64))
	case Millis:
		return cmp.Compare(x, b.(Millis))
	case time.Time:
		return x.Compare(b.(time.Time))
	}
	return 0
}

// ShardingView is SHOW SHARDING: per schema and table, its rule, shard
// key, and each sub-table with the cluster that holds it.
func ShardingView(src Source) *View {
	v := &View{Columns: cols("", "", "schema", "table", "type", "rule", "shard_key", "sub_table", "cluster")}
	for _, s := range src.Sharding() {
		v.Rows = append(v.Rows, []any{s.Schema, s.Table, s.Type, s.Rule, s.ShardKey, s.SubTable, s.Cluster})
	}
	return v
}

// ConfigView is SHOW CONFIG: the running configuration, key by key,
// secrets masked.
func ConfigView(src Source) *View {
	v := &View{Columns: cols("", "", "key", "value")}
	for _, s := range src.Config() {
		v.Rows = append(v.Rows, []any{s.Key, s.Value})
	}
	return v
}

// VersionView is SHOW VERSION: shardgate's build, the version clients are
// greeted with, and each backend server's @@version.
func VersionView(ctx context.Context, src Source) *View {
	vs := src.Versions(ctx)
	v := &View{Columns: cols("", "", "component", "address", "version")}
	v.Rows = append(v.Rows, []any{"shardgate", "", vs.Shardgate}, []any{"advertised", "", vs.Advertised})
	for _, s := range vs.Servers {
		version := s.Version
		if s.Err != nil {
			version = "unknown: " + s.Err.Error()
		}
		v.Rows = append(v.Rows, []any{"cluster " + s.Cluster, s.Address, version})
	}
	return v
}

// StatusView is SHOW STATUS: uptime, connections, queries, QPS, errors.
func StatusView(src Source, now time.Time) *View {
	st := src.Status()
	up := now.Sub(st.Started)
	qps := 0.0
	if up > 0 {
		qps = float64(st.Queries) / up.Seconds()
	}
	v := &View{Columns: cols("", "", "name", "value")}
	add := func(name string, value any) { v.Rows = append(v.Rows, []any{name, value}) }
	add("started", st.Started)
	add("uptime_seconds", Seconds(up))
	add("client_connections", st.Clients)
	add("client_connections_total", st.ClientsTotal)
	add("queries", st.Queries)
	add("qps", round3(qps))
	add("qps_last_10s", round3(st.RecentQPS))
	add("errors", st.Errors)
	add("proxy_errors", st.ProxyErrors)
	add("backend_failures", st.BackendFailures)
	add("auth_failures", st.AuthFailures)
	if c := st.Config; c != nil {
		add("config_source", c.URL)
		add("config_revision", c.Revision)
		add("config_checksum", c.Checksum)
		add("config_from_cache", c.FromCache)
		add("config_rejected_revision", c.Rejected)
		add("config_rejected_error", c.RejectedError)
		add("config_source_reachable", c.Reachable)
		add("config_source_last_error", c.LastError)
	}
	return v
}

// ProxiesView is SHOW PROXIES: the fleet's instances, as registered in
// etcd, and whether each runs the configuration revision this one does.
func ProxiesView(src Source) *View {
	v := &View{Columns: cols("config_revision", "", "id", "address", "admin", "version", "started",
		"config_revision", "config_checksum", "self", "same_config")}
	list := src.Fleet()
	var mine Proxy
	for _, p := range list {
		if p.Self {
			mine = p
		}
	}
	for _, p := range list {
		same := p.ConfigRevision == mine.ConfigRevision && p.ConfigChecksum == mine.ConfigChecksum
		v.Rows = append(v.Rows, []any{p.ID, p.Addr, p.Admin, p.Version, p.Started, p.ConfigRevision, p.ConfigChecksum, p.Self, same})
	}
	return v
}

func round3(f float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', 3, 64), 64)
	return v
}

// ChangesView is RELOAD CONFIG's answer: each key that differs, its old
// and new value (secrets masked) and whether it was applied.
func ChangesView(changes []config.Change) *View {
	v := &View{Columns: cols("", "", "key", "old", "new", "result")}
	for _, c := range changes {
		result := "applied"
		if c.Restart {
			result = "needs restart"
		}
		v.Rows = append(v.Rows, []any{c.Key, c.Old, c.New, result})
	}
	return v
}

// warningsView is SHOW WARNINGS on the admin port: none, with the
// server's columns.
func warningsView() *View {
	return &View{Columns: cols("Code", "", "Level", "Code", "Message")}
}

// cell renders a value as a result set's cell: booleans as yes and no,
// durations with three decimals, times in UTC to the millisecond, unknown
// as NULL.
func cell(v any) *string {
	if v == nil {
		return nil
	}
	if t, ok := v.(time.Time); ok && t.IsZero() {
		return nil
	}
	s := text(v)
	return &s
}

// text renders a known value as text.
func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case Millis:
		return strconv.FormatFloat(float64(x)/float64(time.Millisecond), 'f', 3, 64)
	case Seconds:
		return strconv.FormatFloat(time.Duration(x).Seconds(), 'f', 3, 64)
	case time.Time:
		return x.UTC().Format("2006-01-02 15:04:05.000")
	case []string:
		return strings.Join(x, ", ")
	case float64:
		return strconv.FormatFloat(x, 'f', 3, 64)
	}
	return fmt.Sprint(v)
}

// errorOf is the MySQL error a view's failure is answered with.
func errorOf(err error) *mysql.SQLError {
	if oe, ok := err.(*DigestOrderError); ok {
		return mysql.NewError(errBadField, stateBadField, "%s", oe.Error())
	}
	return mysql.NewError(mysql.ERUnknownError, mysql.StateGeneral, "%s", err.Error())
}

// ER_BAD_FIELD_ERROR, for an unknown ORDER BY column.
const (
	errBadField   uint16 = 1054
	stateBadField        = "42S22"
)
