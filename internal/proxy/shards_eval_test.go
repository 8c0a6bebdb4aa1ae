package proxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/proxy"
)

// evalStatements are reads no route or merge answers, which the proxy
// evaluates (issue 22): joins off the shard key, of tables sharded
// differently, with an unsharded table; derived tables and CTEs whose
// inner query needs every shard's rows (ORDER BY, LIMIT, GROUP BY inside);
// subqueries of every kind, correlated or not, NOT IN with NULLs;
// ROLLUP, window functions, COUNT(DISTINCT a, b); a UNION of a sharded
// and a reference table; a query whose answer is an error. Each is
// compared with one server's answer, text and prepared, rows, column
// definitions, warnings. (Fold: a _ci group key or UNION's value, whose
// spelling one server takes from any of its rows.)
var evalStatements = []difftest.Statement{
	{SQL: "SELECT u.id, o.order_no FROM sf_user u JOIN sf_order o ON o.order_no = u.city_id ORDER BY u.id, o.order_no, o.user_id"},
	{SQL: "SELECT u.id, t.name, t.uses FROM sf_user u LEFT JOIN sf_tag t ON t.uses = u.city_id WHERE u.id < 60"},
	{SQL: "SELECT t.name, u.id FROM sf_user u RIGHT JOIN sf_tag t ON t.uses = u.id"},
	{SQL: "SELECT e.id, l.seq, l.msg FROM sf_event e JOIN sf_log l ON l.seq = e.id WHERE e.amount > ?", Args: []any{"12.5"}},
	{SQL: "SELECT n.id, n.body, u.name FROM sf_note n LEFT JOIN sf_user u ON u.id = n.id"},
	{SQL: "SELECT c.country, COUNT(*), SUM(o.amount) FROM sf_order o JOIN sf_user u ON u.id = o.user_id JOIN sf_city c ON c.id = u.city_id GROUP BY c.country WITH ROLLUP", Fold: []int{0}},
	{SQL: "SELECT t.status, t.n FROM (SELECT status, COUNT(*) n FROM sf_order GROUP BY status) t WHERE t.n > ? ORDER BY t.n DESC, t.status", Args: []any{1}, Fold: []int{0}},
	{SQL: "SELECT * FROM (SELECT id, name FROM sf_user ORDER BY id DESC LIMIT 5) t ORDER BY t.id"},
	{SQL: "WITH big AS (SELECT user_id, SUM(amount) s FROM sf_order GROUP BY user_id) SELECT u.name, big.s FROM big JOIN sf_user u ON u.id = big.user_id WHERE big.s > 100 ORDER BY big.s DESC, u.id LIMIT 10"},
	{SQL: "SELECT u.id, (SELECT COUNT(*) FROM sf_order o WHERE o.user_id = u.id) AS n FROM sf_user u ORDER BY n DESC, u.id LIMIT 20"},
	{SQL: "SELECT id FROM sf_user WHERE city_id IN (SELECT user_id FROM sf_order WHERE amount > ?)", Args: []any{"100.5"}},
	{SQL: "SELECT id, city_id FROM sf_user WHERE city_id NOT IN (SELECT city_id FROM sf_user WHERE id < 20)"},
	{SQL: "SELECT id FROM sf_user WHERE city_id NOT IN (SELECT user_id FROM sf_order)"},
	{SQL: "SELECT u.id FROM sf_user u WHERE NOT EXISTS (SELECT 1 FROM sf_order o WHERE o.order_no = u.id)"},
	{SQL: "SELECT id, balance FROM sf_user WHERE balance > ALL (SELECT amount FROM sf_order WHERE order_no < 3)"},
	{SQL: "SELECT id FROM sf_user WHERE score < ANY (SELECT amount FROM sf_event)"},
	{SQL: "SELECT id, name, ROW_NUMBER() OVER (PARTITION BY city_id ORDER BY id) rn, SUM(balance) OVER (ORDER BY id) running FROM sf_user ORDER BY id"},
	{SQL: "SELECT COUNT(DISTINCT city_id, born), COUNT(DISTINCT name) FROM sf_user"},
	{SQL: "SELECT name FROM sf_user WHERE id < 30 UNION SELECT name FROM sf_city ORDER BY 1", Fold: []int{0}},
	{SQL: "SELECT mb.name, mb.nick, m2.code FROM sf_member mb JOIN sf_member m2 ON m2.id = mb.id AND m2.name <> mb.name ORDER BY mb.id, mb.name, m2.name"},
	{SQL: "SELECT id, (SELECT order_no FROM sf_order WHERE user_id > 0) FROM sf_user"},
	{SQL: "SELECT u.id FROM no_such_table t JOIN sf_user u ON u.id = t.id"},
	// Rows of a reference table, or of none, with a sharded table in a
	// subquery or on the NULL side of an outer join: each sub-table gave
	// every row again (wrong answers the ORM tests found).
	{SQL: "SELECT id FROM sf_city WHERE id IN (SELECT city_id FROM sf_user WHERE balance > ?)", Args: []any{0}},
	{SQL: "SELECT id FROM sf_city WHERE id NOT IN (SELECT city_id FROM sf_user WHERE city_id IS NOT NULL)"},
	{SQL: "SELECT c.id FROM sf_city c WHERE EXISTS (SELECT 1 FROM sf_user u WHERE u.city_id = c.id AND u.id > 50)"},
	{SQL: "SELECT c.id FROM sf_city c WHERE c.id > ALL (SELECT city_id FROM sf_user WHERE id < 5)"},
	{SQL: "SELECT COUNT(*) FROM sf_city c LEFT JOIN sf_user u ON u.city_id = c.id"},
	{SQL: "SELECT c.id, u.id FROM sf_city c LEFT JOIN sf_user u ON u.city_id = c.id AND u.id < 10 WHERE u.id IS NULL"},
	{SQL: "SELECT u.id, c.name FROM sf_user u RIGHT JOIN sf_city c ON c.id = u.city_id"},
	{SQL: "SELECT EXISTS (SELECT * FROM sf_user WHERE email IS NULL), 1 IN (SELECT id FROM sf_user)"},
	{SQL: "SELECT 1 FROM DUAL WHERE EXISTS (SELECT 1 FROM sf_user)"},
	{SQL: "SELECT t.id FROM (SELECT id FROM sf_user WHERE id < 30) t ORDER BY t.id"},
	// Semi-joins: the table joined on its shard key read by the other
	// side's values (NULLs, duplicates, none at all).
	{SQL: "SELECT u.id, o.order_no, o.amount FROM sf_user u JOIN sf_order o ON o.user_id = u.city_id WHERE u.name LIKE ?", Args: []any{"a%"}},
	{SQL: "SELECT u.id, o.order_no FROM sf_user u LEFT JOIN sf_order o ON o.user_id = u.city_id WHERE u.id < 40"},
	{SQL: "SELECT c.name, u.name FROM sf_city c JOIN sf_user u ON u.id = c.id"},
	{SQL: "SELECT u.id, o.order_no FROM sf_user u JOIN sf_order o ON o.user_id = u.city_id WHERE u.name = 'nobody at all'"},
	{SQL: "SELECT l.seq, e.kind FROM sf_log l JOIN sf_event e ON e.id = l.level WHERE l.msg <> 'x'"},
	// Co-located work, run on the sub-tables as written (not evaluated):
	// correlated subqueries on the key with aggregates, ORDER BY and
	// LIMIT inside; derived tables grouped by the key, read alone,
	// grouped again, or joined on the key they show.
	{SQL: "SELECT u.id FROM sf_user u WHERE u.balance > (SELECT AVG(o.amount) FROM sf_order o WHERE o.user_id = u.id)"},
	{SQL: "SELECT u.id, (SELECT o.order_no FROM sf_order o WHERE o.user_id = u.id ORDER BY o.amount DESC, o.order_no LIMIT 1) FROM sf_user u ORDER BY u.id"},
	{SQL: "SELECT t.user_id, t.n, t.s FROM (SELECT user_id, COUNT(*) n, SUM(amount) s FROM sf_order GROUP BY user_id HAVING COUNT(*) > 1) t WHERE t.s > ? ORDER BY t.s DESC, t.user_id LIMIT 7", Args: []any{10}},
	{SQL: "SELECT t.n, COUNT(*) FROM (SELECT user_id, COUNT(*) n FROM sf_order GROUP BY user_id) t GROUP BY t.n ORDER BY t.n"},
	{SQL: "SELECT u.name, t.s FROM sf_user u JOIN (SELECT user_id AS k, SUM(amount) s FROM sf_order GROUP BY user_id) t ON t.k = u.id ORDER BY u.id"},
	// IN subqueries read as semi-joins (NULLs among the values, none).
	{SQL: "SELECT id, name FROM sf_user WHERE id IN (SELECT o.order_no FROM sf_order o WHERE o.amount > ?)", Args: []any{"50.5"}},
	{SQL: "SELECT id FROM sf_event WHERE id IN (SELECT u.city_id FROM sf_user u)"},
	{SQL: "SELECT id FROM sf_event WHERE id IN (SELECT u.city_id FROM sf_user u WHERE u.name = 'nobody at all')"},
}

// TestShardedEvaluate compares the answers of evalStatements, outside a
// transaction, with a reference server's.
func TestShardedEvaluate(t *testing.T) {
	gen := difftest.NewGenerator(20261128)
	d := startShardedDiff(t, gen)
	opts := diffOptions()
	difftest.LoadData(t, d.ref, d.got, gen, opts)
	rep, err := difftest.Apply(d.ref, d.got, 1, evalList(), opts)
	if err != nil {
		t.Fatal(err)
	}
	checkEvaluated(t, rep)
}

// TestShardedEvaluateInTransaction: inside a transaction that wrote on
// both shards and on the unsharded table, an evaluated statement sees
// those uncommitted rows, as the transaction's own statements do, and
// the transaction goes on (its later statements, ROLLBACK TO SAVEPOINT,
// COMMIT) as if the evaluation had not happened: it writes nothing
// inside the transaction.
func TestShardedEvaluateInTransaction(t *testing.T) {
	gen := difftest.NewGenerator(20261129)
	d := startShardedDiffWith(t, gen, "    cross_shard_writes: atomic\n")
	opts := diffOptions()
	difftest.LoadData(t, d.ref, d.got, gen, opts)
	var stmts []difftest.Statement
	add := func(sql string, writes ...string) {
		stmts = append(stmts, difftest.Statement{Kind: "trx", SQL: sql, Writes: writes, Constructs: []string{"evaluated"}})
	}
	add("BEGIN")
	add("INSERT INTO sf_user (id, name, city_id, balance) VALUES (9001, 'Zoë', 7, 12.50), (9002, 'zoe', 8, 1.00)", "sf_user")
	add("INSERT INTO sf_note (id, body) VALUES (9001, 'in the transaction')", "sf_note")
	add("SAVEPOINT a")
	add("INSERT INTO sf_order (user_id, order_no, amount, status) VALUES (9001, 1, 5.00, 'new'), (9002, 9001, 7.00, 'new')", "sf_order")
	stmts = append(stmts, evalList()...)
	add("SELECT n.id, n.body, u.name FROM sf_note n JOIN sf_user u ON u.id = n.id ORDER BY n.id")
	add("ROLLBACK TO SAVEPOINT a", "sf_order")
	add("SELECT u.id, o.order_no FROM sf_user u JOIN sf_order o ON o.order_no = u.id ORDER BY u.id, o.order_no")
	add("COMMIT", "sf_user", "sf_order", "sf_note")
	rep, err := difftest.Apply(d.ref, d.got, 1, stmts, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkEvaluated(t, rep)
	checkNoBranches(t, d.shards)
}

// evalList is evalStatements, each twice: prepared, then as text (the
// runner prepares the statements at even positions).
func evalList() []difftest.Statement {
	stmts := slices.Clone(evalStatements)
	for i := range stmts {
		stmts[i].Ordered = strings.Contains(stmts[i].SQL, "ORDER BY") && !strings.Contains(stmts[i].SQL, "OVER (")
	}
	return preparedAndText("evaluated", stmts)
}

// preparedAndText is stmts, each twice, of kind and construct kind:
// prepared (its SQL, with ?s for its Args), then as text (the Args
// inlined); the runner prepares the statements at even positions. A
// Superset runs prepared too, so that its rows are in the protocol of
// the statement's.
func preparedAndText(kind string, stmts []difftest.Statement) []difftest.Statement {
	var out []difftest.Statement
	for _, st := range stmts {
		st.Kind = kind
		st.Constructs = []string{kind} // (the column flags a plan sets are the evaluator's or a part's plan's)
		st.Prepared = st.SQL
		st.SQL = inline(st.SQL, st.Args)
		if st.Superset != nil {
			sup := *st.Superset
			sup.Prepared = sup.SQL
			st.Superset = &sup
		}
		out = append(out, st, st)
	}
	return out
}

// inline puts args in place of the ?s of sql, as literals (strings
// quoted).
func inline(sql string, args []any) string {
	for _, a := range args {
		lit := fmt.Sprint(a)
		if _, ok := a.(string); ok {
			lit = "'" + lit + "'"
		}
		sql = strings.Replace(sql, "?", lit, 1)
	}
	return sql
}

// checkEvaluated fails on any difference (a refusal is one: the
// statements are not Refusable).
func checkEvaluated(t *testing.T, rep *difftest.Report) {
	t.Helper()
	for _, d := range rep.Differences {
		t.Error(d)
	}
	if rep.Statements == 0 {
		t.Fatal("no statement ran")
	}
}

// An evaluated statement stopped midway, by KILL QUERY from another
// session or by its client going away, while the shards' rows are copied
// or while the evaluator's answer streams to a client that stopped
// reading: every shard's fetch and the evaluator's statements stop; the
// killed client gets 1317 and its session goes on; nothing else notices
// (issue 22), and every connection comes back to its pool.
func TestEvaluateKillQuery(t *testing.T) {
	p, s0, s1, proxyDB := mergeStopPair(t, "evkill", 200000)
	roots := []*sql.DB{s0.RootDB(t), s1.RootDB(t)}
	db := proxyDB("")
	by := startBystander(t, db, 800000)
	// A derived table whose LIMIT needs every shard's rows: evaluated,
	// each shard's 400,000 rows copied.
	const copying = "SELECT COUNT(*), SUM(d.v) FROM (SELECT v FROM t ORDER BY v, id LIMIT 700000) d"
	// The same, whose answer is 700,000 rows of 200 bytes: more than the
	// sockets hold, so the evaluator's statement (its text has
	// evfinal, the fetches' do not) still runs while the client does not
	// read.
	const streaming = "SELECT d.id, REPEAT('x', 200) AS evfinal FROM (SELECT id, v FROM t ORDER BY v, id LIMIT 700000) d"
	const fetch, final = "character_set_results=binary", "evfinal"

	t.Run("KILL QUERY while the rows are copied", func(t *testing.T) {
		a, b := oneConn(t, db), oneConn(t, db)
		aID := queryString(t, a, "SELECT CONNECTION_ID()")
		done := runAsync(a, copying)
		waitShards(t, true, fetch, roots...)
		mustExec(t, b, "KILL QUERY "+aID)
		if err := waitErr(t, done, "KILL QUERY"); mysqlErrCode(err) != 1317 {
			t.Fatalf("the killed evaluation ended with %v, want error 1317", err)
		}
		waitShards(t, false, fetch, roots...)
		waitShards(t, false, "INSERT INTO", roots[0])
		checkNextEvaluation(t, a)
	})
	t.Run("client gone while the rows are copied", func(t *testing.T) {
		// s1's fetch waits for t_0002, locked: the evaluation waits for
		// its rows, and would wait as long as the lock lasts, with
		// nothing to write to the client, were the client's close not
		// watched.
		lock := oneConn(t, roots[1])
		mustExec(t, lock, "LOCK TABLES evkill.t_0002 WRITE")
		defer mustExec(t, lock, "UNLOCK TABLES")
		a, raw := rawConn(t, p, "evkill")
		done := runAsync(a, copying)
		waitShards(t, true, fetch, roots[1])
		raw.Close()
		waitShards(t, false, fetch, roots...)
		waitShards(t, false, "INSERT INTO", roots[0])
		<-done
	})
	t.Run("KILL QUERY while the answer streams", func(t *testing.T) {
		a, b := oneConn(t, db), oneConn(t, db)
		aID := queryString(t, a, "SELECT CONNECTION_ID()")
		rows := startReading(t, a, streaming, 5)
		waitShards(t, true, final, roots[0])
		mustExec(t, b, "KILL QUERY "+aID)
		waitShards(t, false, final, roots[0])
		if err := readRest(rows); mysqlErrCode(err) != 1317 {
			t.Fatalf("the killed evaluation's rows ended with %v, want error 1317", err)
		}
		checkNextEvaluation(t, a)
	})
	t.Run("client gone while the answer streams", func(t *testing.T) {
		a, raw := rawConn(t, p, "evkill")
		rows := startReading(t, a, streaming, 5)
		waitShards(t, true, final, roots[0])
		raw.Close()
		waitShards(t, false, final, roots[0])
		_ = readRest(rows)
	})
	by.check(t)
	waitPoolsIdle(t, p, 4)
	waitEvaluatorsIdle(t, p)
}

// startReading runs query on c and reads its first n rows, leaving the
// rest unread.
func startReading(t *testing.T, c *sql.Conn, query string, n int) *sql.Rows {
	t.Helper()
	rows, err := c.QueryContext(context.Background(), query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	for i := range n {
		if !rows.Next() {
			t.Fatalf("%s: row %d: none (%v)", query, i, rows.Err())
		}
	}
	return rows
}

// readRest reads rows to their end and returns how they ended.
func readRest(rows *sql.Rows) error {
	for rows.Next() {
	}
	err := rows.Err()
	rows.Close()
	return err
}

// checkNextEvaluation: the session whose evaluation was killed evaluates
// its next statement.
func checkNextEvaluation(t *testing.T, c *sql.Conn) {
	t.Helper()
	if got := queryString(t, c, "SELECT COUNT(*) FROM (SELECT v FROM t ORDER BY v, id LIMIT 10) d"); got != "10" {
		t.Fatalf("the killed session's next evaluated statement: %q, want 10", got)
	}
}

// An evaluated prepared statement reading LAST_INSERT_ID() reads the
// session's (the evaluator's connection is set to it), and a table with
// an INVISIBLE column, which the copy would leave out, is refused.
func TestEvaluateSessionValues(t *testing.T) {
	gen := difftest.NewGenerator(20261130)
	d := startShardedDiff(t, gen)
	difftest.LoadData(t, d.ref, d.got, gen, diffOptions())
	db := openDB(t, proxyDSN(d.proxy, appUser, appPass, diffDB, "interpolateParams=false"))
	conn := oneConn(t, db)
	ctx := context.Background()
	res, err := conn.ExecContext(ctx, "INSERT INTO sf_note (body) VALUES ('for LAST_INSERT_ID')")
	if err != nil {
		t.Fatal(err)
	}
	id, _ := res.LastInsertId()
	var got, n int64
	if err := conn.QueryRowContext(ctx, "SELECT LAST_INSERT_ID(), COUNT(*) FROM sf_user u JOIN sf_order o ON o.order_no = u.city_id WHERE u.id > ?", 0).Scan(&got, &n); err != nil {
		t.Fatal(err)
	}
	if got != id || id == 0 {
		t.Errorf("LAST_INSERT_ID() in an evaluated prepared statement: %d, want the session's %d", got, id)
	}
	mustExec(t, conn, "ALTER TABLE sf_tag ADD COLUMN secret INT INVISIBLE")
	_, err = conn.QueryContext(ctx, "SELECT t.name, u.id FROM sf_tag t JOIN sf_user u ON u.id = t.uses")
	if mysqlErrCode(err) != 1235 || !contains(err.Error(), "INVISIBLE") {
		t.Errorf("an evaluated statement on a table with an INVISIBLE column: %v, want 1235 naming it", err)
	}
}

// evalSmall is an evaluated statement over mergeStopPair's t: a derived
// table whose LIMIT needs every shard's rows. Its evaluation takes a
// connection to the evaluator (s0, the default cluster, where t_0000
// lives: its copy is created LIKE t_0000) and a fetch connection to each
// shard, s0's included.
const evalSmall = "SELECT COUNT(*), SUM(d.v) FROM (SELECT v FROM t ORDER BY v, id LIMIT 50) d"

// TestEvaluatePoolsHoldAndWait: sessions evaluating at once over pools
// of 2 never wait for each other's connections. Each evaluation needs
// the evaluator's connection and then a fetch connection of the same
// cluster; were both from one pool, two sessions each holding the
// evaluator's connection would take the whole pool and wait for a
// fetch connection until the pool's wait_timeout (error 9001). The
// test makes that state certain rather than likely: t_0000 is locked on
// s0 (LOCK TABLES … WRITE), so every evaluation stops in its CREATE
// TEMPORARY TABLE … LIKE t_0000, holding the evaluator's connection,
// until at least two do; then the lock goes.
func TestEvaluatePoolsHoldAndWait(t *testing.T) {
	const maxOpen, sessions = 2, 4
	p, d0, d1, s0, _, proxyDB := shardedPairPools(t, "evpool", maxOpen)
	for i, d := range []*sql.DB{d0, d0, d1, d1} {
		mustExec(t, d, fmt.Sprintf("INSERT INTO t_%04d (id, v) SELECT seq*4+%d, seq FROM seq_0_to_99", i, i))
	}
	db := proxyDB("")
	var conns []*sql.Conn
	for range sessions {
		c := oneConn(t, db)
		// Each session's first evaluation, alone: the plan and the key
		// types are learnt before the lock.
		if err := evalSmallOK(c); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	root := s0.RootDB(t)
	lock := oneConn(t, root)
	mustExec(t, lock, "LOCK TABLES evpool.t_0000 WRITE")
	var done []<-chan error
	for _, c := range conns {
		done = append(done, runAsync(c, evalSmall))
	}
	waitRunning(t, root, "CREATE TEMPORARY TABLE", maxOpen)
	mustExec(t, lock, "UNLOCK TABLES")
	for i, d := range done {
		if err := waitLong(t, d, "an evaluation after the lock"); err != nil {
			t.Errorf("session %d: %v", i, err)
		}
	}
	// And many sessions at once, many times, without a lock.
	evaluateConcurrently(t, db, 3*sessions, 5)
	waitPoolsIdle(t, p, maxOpen)
	waitEvaluatorsIdle(t, p)
}

// waitRunning polls root's server until at least n statements whose text
// contains marker run there, for 10 seconds.
func waitRunning(t *testing.T, root *sql.DB, marker string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for shardRuns(t, root, marker) < n {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d statements %q run 10s later", n, marker)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitLong waits up to a minute for the end of a statement: long enough
// for a busy machine, and past the pools' wait_timeout (5s), so that a
// statement that waited that long ends with its error (9001) first.
func waitLong(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s: the statement still runs a minute later", what)
		return nil
	}
}

// evaluateConcurrently runs evalSmall rounds times on each of n sessions
// of db at once, failing on any error or wrong answer.
func evaluateConcurrently(t *testing.T, db *sql.DB, n, rounds int) {
	t.Helper()
	errs := make(chan error, n)
	for range n {
		c := oneConn(t, db)
		go func() {
			for range rounds {
				if err := evalSmallOK(c); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range n {
		if err := waitLong(t, errs, "concurrent evaluations"); err != nil {
			t.Error(err)
		}
	}
}

// evalSmallOK runs evalSmall on c and checks its count.
func evalSmallOK(c *sql.Conn) error {
	var count int
	var sum sql.NullInt64
	if err := c.QueryRowContext(context.Background(), evalSmall).Scan(&count, &sum); err != nil {
		return fmt.Errorf("%s: %w", evalSmall, err)
	}
	if count != 50 {
		return fmt.Errorf("%s: COUNT(*) %d, want 50", evalSmall, count)
	}
	return nil
}

// waitEvaluatorsIdle polls the evaluator pool of s0 (the default
// cluster) until every open connection is idle again, for 5 seconds, and
// checks that its connections were reused: never more open than its
// limit, never more dialed (none failed).
func waitEvaluatorsIdle(t *testing.T, p *proxy.Proxy) {
	t.Helper()
	pool := p.Cluster("s0").Primary.Evaluator()
	const limit = backend.DefaultEvaluatorMaxOpen
	deadline := time.Now().Add(5 * time.Second)
	for {
		open, idle, waiting := pool.Open()
		if open > limit {
			t.Fatalf("evaluator pool of s0: %d connections open, its limit is %d", open, limit)
		}
		if open == idle && waiting == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("evaluator pool of s0: %d open, %d idle, %d waiting 5s after the sessions were done: connections leaked", open, idle, waiting)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if dials := pool.Stats.Dials.Load(); dials > limit {
		t.Errorf("evaluator pool of s0: %d connections dialed, more than its limit %d: connections not reused", dials, limit)
	}
}

// TestShardedMergeFallbackInTransaction: a merge that falls back to
// evaluation stops its parts (KILL QUERY), inside a transaction whose
// first statement it is (an XA branch opened on one shard): each time,
// the transaction's parts stay open on their shards and the
// transaction goes on as on one server. A part the kill ended with an
// ERR was done as if its transaction had ended: the shard's XA branch
// went back to the pool ACTIVE, and a later statement there answered
// 1399 XAER_RMFAIL or 1400 XAER_OUTSIDE (differential test, seed
// 987654321, statement #502). The kill lands before or after a part's
// first row depending on timing, hence the repetitions.
func TestShardedMergeFallbackInTransaction(t *testing.T) {
	gen := difftest.NewGenerator(987654321)
	d := startShardedDiffWith(t, gen, "    cross_shard_writes: atomic\n")
	difftest.LoadData(t, d.ref, d.got, gen, diffOptions())
	// GROUP_CONCAT(… ORDER BY …) of the merged groups: the merge refuses
	// it once it has seen the parts' rows, and evaluates it instead.
	const q = "SELECT sf_order.note, SUM(DISTINCT sf_order.amount) AS a1, GROUP_CONCAT(sf_order.status ORDER BY sf_order.status DESC, sf_order.user_id, sf_order.order_no SEPARATOR ', ') AS a2, COUNT(*) FROM sf_order GROUP BY 1 HAVING a2 IS NOT NULL AND COUNT(*) > ?"
	trx := func(sql string) difftest.Statement { return difftest.Statement{Kind: "transaction", SQL: sql} }
	var stmts []difftest.Statement
	for range 20 {
		stmts = append(stmts, trx("START TRANSACTION"), trx("SAVEPOINT sp1"),
			difftest.Statement{Kind: "merge_fallback", SQL: inline(q, []any{0}), Prepared: q, Args: []any{0}, Fold: []int{0}},
			trx("ROLLBACK TO SAVEPOINT sp1"), trx("ROLLBACK"))
	}
	rep, err := difftest.Apply(d.ref, d.got, 1, stmts, diffOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, diff := range rep.Differences {
		t.Error(diff)
	}
	checkNoBranches(t, d.shards)
}
