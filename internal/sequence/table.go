package sequence

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
)

// Server errors the table reacts to.
const (
	erNoSuchTable        uint16 = 1146
	erDBAccessDenied     uint16 = 1044
	erTableAccessDenied  uint16 = 1142
	erColumnAccessDenied uint16 = 1143
)

// idleConns is how many connections a Store keeps open between round
// trips: enough for a few sequences refilling at once.
const idleConns = 4

// connSetup is run once on each connection the Store opens: a reservation
// must commit by itself, and an out-of-range counter must fail rather than
// be clamped (a clamped column would hold less than LAST_INSERT_ID reports,
// and the ids between would be handed out again).
const connSetup = "SET SESSION autocommit = 1, SESSION sql_mode = 'STRICT_ALL_TABLES'"

// sqlTable keeps counters in a backend table:
//
//	schema_name, table_name -> next_id
//
// A reservation is one autocommitted statement,
//
//	UPDATE t SET next_id = LAST_INSERT_ID(GREATEST(next_id, floor) + n) WHERE ...
//
// whose OK packet reports the new counter (LAST_INSERT_ID(expr) sets the
// packet's insert id), so it costs one round trip and holds the row lock
// only while it runs. A transaction with SELECT ... FOR UPDATE would take
// four round trips with the lock held across them. The row lock serialises
// proxies; the statement either commits whole or not at all, so a
// reservation the proxy never heard back from is a gap, not a duplicate.
type sqlTable struct {
	dial    Dialer
	timeout time.Duration
	name    string // `db`.`table`
	idle    chan *backend.Conn
}

func newSQLTable(cfg Config) *sqlTable {
	return &sqlTable{
		dial:    cfg.Dial,
		timeout: cfg.Timeout,
		name:    quoteIdent(cfg.Database) + "." + quoteIdent(cfg.Table),
		idle:    make(chan *backend.Conn, idleConns),
	}
}

func (t *sqlTable) createSQL() string {
	return "CREATE TABLE IF NOT EXISTS " + t.name + " (" +
		"schema_name VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, " +
		"table_name VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, " +
		"next_id BIGINT UNSIGNED NOT NULL, " +
		"PRIMARY KEY (schema_name, table_name)) ENGINE=InnoDB"
}

func (t *sqlTable) advance(ctx context.Context, key Key, floor, n uint64) (uint64, bool, error) {
	sql := "UPDATE " + t.name + " SET next_id = LAST_INSERT_ID(GREATEST(next_id, " +
		strconv.FormatUint(floor, 10) + ") + " + strconv.FormatUint(n, 10) + ") WHERE " + where(key)
	next, err := t.exec(ctx, sql)
	if mysql.HasErrorCode(err, erNoSuchTable) {
		if err := t.createTable(ctx); err != nil {
			return 0, false, err
		}
		// A table just created holds no counter.
		return 0, false, nil
	}
	if err != nil {
		return 0, false, t.explain(err)
	}
	// No row matched: LAST_INSERT_ID was not evaluated and the packet says
	// 0. A counter is never 0 after the update (n or floor is at least 1).
	return next, next != 0, nil
}

func (t *sqlTable) create(ctx context.Context, key Key, next uint64) error {
	v := strconv.FormatUint(next, 10)
	sql := "INSERT INTO " + t.name + " (schema_name, table_name, next_id) VALUES (" +
		quoteString(key.Schema) + ", " + quoteString(key.Table) + ", " + v +
		") ON DUPLICATE KEY UPDATE next_id = GREATEST(next_id, " + v + ")"
	_, err := t.exec(ctx, sql)
	return t.explain(err)
}

func (t *sqlTable) createTable(ctx context.Context) error {
	_, err := t.exec(ctx, t.createSQL())
	if mysql.HasErrorCode(err, erDBAccessDenied, erTableAccessDenied) {
		return fmt.Errorf("sequences table %s does not exist and the backend account may not create it "+
			"(it needs the CREATE privilege there); create it with: %s: %w", t.name, t.createSQL(), err)
	}
	if err != nil {
		return fmt.Errorf("create sequences table %s: %w", t.name, err)
	}
	return nil
}

// explain adds what the backend account needs to a privilege error.
func (t *sqlTable) explain(err error) error {
	if mysql.HasErrorCode(err, erDBAccessDenied, erTableAccessDenied, erColumnAccessDenied) {
		return fmt.Errorf("the backend account needs SELECT, INSERT and UPDATE on %s: %w", t.name, err)
	}
	if err != nil {
		return fmt.Errorf("sequences table %s: %w", t.name, err)
	}
	return nil
}

// exec runs one statement on a connection of the Store's and returns the
// insert id its OK packet reports. The round trip ends when ctx does or
// after the timeout, by closing the connection. An idle connection that
// fails (its server restarted since) is replaced once: every statement of
// the table may run twice, at worst leaving a gap.
func (t *sqlTable) exec(ctx context.Context, sql string) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	select {
	case c := <-t.idle:
		id, err := t.run(ctx, c, sql)
		if err == nil || mysql.IsSQLError(err) || ctx.Err() != nil {
			return id, err
		}
	default:
	}
	c, err := t.dialConn(ctx)
	if err != nil {
		return 0, err
	}
	return t.run(ctx, c, sql)
}

// run runs sql on c, then keeps c for later unless it failed.
func (t *sqlTable) run(ctx context.Context, c *backend.Conn, sql string) (uint64, error) {
	c.LastInsertID = 0
	err := c.Bounded(ctx, func() error { return c.Exec(sql) })
	if err != nil && !mysql.IsSQLError(err) {
		_ = c.Close()
		return 0, err
	}
	id := c.LastInsertID
	t.put(c)
	return id, err
}

func (t *sqlTable) dialConn(ctx context.Context) (*backend.Conn, error) {
	c, err := t.dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	err = c.Bounded(ctx, func() error { return c.Exec(connSetup) })
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("set up connection: %w", err)
	}
	return c, nil
}

func (t *sqlTable) put(c *backend.Conn) {
	select {
	case t.idle <- c:
	default:
		_ = c.Close()
	}
}

func (t *sqlTable) close() {
	for {
		select {
		case c := <-t.idle:
			_ = c.Close()
		default:
			return
		}
	}
}

func where(key Key) string {
	return "schema_name = " + quoteString(key.Schema) + " AND table_name = " + quoteString(key.Table)
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// quoteString writes s as a hex literal with a charset introducer, which
// means the same whatever the connection's sql_mode (NO_BACKSLASH_ESCAPES)
// and character set.
func quoteString(s string) string {
	if s == "" {
		return "''"
	}
	return fmt.Sprintf("_utf8mb4 X'%x'", s)
}
