package engine

import (
	"fmt"
	"strings"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
)

// An evaluated statement's temporary tables: created LIKE a sub-table of
// the evaluator, or from the definition a shard shows (TemporaryDDL),
// and dropped before the connection goes back.

// createEmpty creates t's temporary table, empty, on ev: like its model
// there, else from the definition its first fetch's shard shows.
func (e *Evaluate) createEmpty(c Cursor, ev *backend.Conn, t *EvalCopy) error {
	if t.Like != "" {
		return e.create(c, ev, t)
	}
	if len(t.Fetches) == 0 {
		return fmt.Errorf("no shard to read the definition of %s from", t.Describe)
	}
	rs, err := inspect(c, t.Fetches[0].Cluster, "SHOW CREATE TABLE "+t.Describe)
	if err != nil {
		return err
	}
	if len(rs.Rows) != 1 || len(rs.Rows[0]) < 2 {
		return fmt.Errorf("SHOW CREATE TABLE %s: no definition", t.Describe)
	}
	return e.createFromDDL(ev, t, string(rs.Rows[0][1]))
}

// create creates t's temporary table, empty, on ev: like its model
// there, else from the definition its first fetch's server shows.
func (e *Evaluate) create(c Cursor, ev *backend.Conn, t *EvalCopy) error {
	if t.Like != "" {
		if err := ev.Exec("CREATE TEMPORARY TABLE " + t.Temp + " LIKE " + t.Like); err != nil {
			return err
		}
		e.made = append(e.made, t.Temp)
		return nil
	}
	f := &t.Fetches[0]
	conn, ok := c.Acquire(f.Cluster, false)
	if conn == nil {
		return &answered{goOn: ok}
	}
	if err := e.createFrom(conn, ev, t); err != nil {
		return e.partFailed(c, conn, f.Cluster.Name, err, false)
	}
	c.Done(conn, &mysql.ResponseInfo{Status: c.Status()}) // (a statement of the proxy's: the transaction goes on)
	return nil
}

// createFrom creates t's temporary table on ev from the definition of
// its sub-table t.Describe, which conn's shard shows.
func (e *Evaluate) createFrom(conn, ev *backend.Conn, t *EvalCopy) error {
	rows, err := conn.QueryRows("SHOW CREATE TABLE " + t.Describe)
	if err != nil {
		return err
	}
	if len(rows) != 1 || len(rows[0]) < 2 {
		return fmt.Errorf("SHOW CREATE TABLE %s: no definition", t.Describe)
	}
	return e.createFromDDL(ev, t, rows[0][1])
}

// createFromDDL creates t's temporary table on ev from create, the
// definition SHOW CREATE TABLE shows of its sub-table.
func (e *Evaluate) createFromDDL(ev *backend.Conn, t *EvalCopy, create string) error {
	ddl, err := TemporaryDDL(create, t.Temp)
	if err != nil {
		return err
	}
	if err := ev.Exec(ddl); err != nil {
		return err
	}
	e.made = append(e.made, t.Temp)
	return nil
}

// TemporaryDDL turns a SHOW CREATE TABLE's statement into the creation
// of temporary table temp with the same columns and keys: foreign keys
// and partitioning, which a temporary table cannot have and a copy does
// not need, are left out.
func TemporaryDDL(create, temp string) (string, error) {
	head, body, ok := strings.Cut(create, " (\n")
	if !ok || !strings.HasPrefix(head, "CREATE TABLE ") {
		return "", fmt.Errorf("unexpected SHOW CREATE TABLE output %.40q", create)
	}
	lines := strings.Split(body, "\n")
	var keep []string
	tail := ""
	for _, l := range lines {
		if strings.HasPrefix(l, ")") {
			tail = l
			if j := strings.Index(tail, "PARTITION BY"); j >= 0 {
				tail = strings.TrimSuffix(strings.TrimSpace(tail[:j]), "/*!50100")
			}
			break
		}
		if strings.Contains(l, " FOREIGN KEY ") {
			continue
		}
		keep = append(keep, strings.TrimSuffix(l, ","))
	}
	if tail == "" {
		return "", fmt.Errorf("unexpected SHOW CREATE TABLE output %.40q", create)
	}
	return "CREATE TEMPORARY TABLE " + temp + " (\n" + strings.Join(keep, ",\n") + "\n" + tail, nil
}

// drop drops the temporary tables created on ev.
func (e *Evaluate) drop(ev *backend.Conn) error {
	if len(e.made) == 0 {
		return nil
	}
	return ev.Exec(dropSQL(e.made))
}

// dropSQL is the statement dropping temporary tables.
func dropSQL(tables []string) string {
	return "DROP TEMPORARY TABLE IF EXISTS " + strings.Join(tables, ",")
}
