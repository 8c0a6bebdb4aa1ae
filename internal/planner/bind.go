package planner

import (
	"errors"
	"strings"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sharding"
)

// Binding: a statement on a sharded schema has a plan of its shape
// (Keyspace.Plan: cached, immutable, shared by every session); binding
// gives that plan one execution's values and the session's state and
// yields the primitives that run it, with the statement rendered for
// each sub-table it picks. The session's state comes through Session;
// nothing here touches a connection.
//
// One concern per file: bind.go (the statements' dispatch, routes,
// sub-tables read or written one by one), bind_merge.go (a SELECT merged
// across shards), bind_insert.go (an INSERT split by rows), bind_eval.go
// (a read evaluated on one server), bind_stmt.go (prepared statements),
// bind_lock.go (LOCK and UNLOCK TABLES), bind_ddl.go (DDL), bind_meta.go
// (SHOW, DESCRIBE, information_schema, COM_FIELD_LIST).

// Binder binds one session's statements on sharded schemas. It owns the
// buffers their parts are rendered into and the primitives it returns, so
// that binding allocates nothing once they have grown: a session keeps
// one, and the primitive a bind returns is valid until its next bind. Its
// zero value is ready once Keyspaces is set. Not safe for concurrent use.
type Binder struct {
	// Keyspaces are the sharded schemas the proxy serves: a DDL statement
	// may be about any of them.
	Keyspaces Keyspaces

	// A statement's shape and values, and the sub-table number a template
	// renders (sub).
	shape router.Shape
	vals  TextValues
	xvals ExecValues
	sub   [1]int
	// The parts a statement runs in, rendered into one buffer.
	parts    []engine.Part
	partSQL  []byte
	partEnds []int
	// The primitives, filled in place.
	route   engine.Route
	refusal engine.Refuse
	scatter engine.Scatter
	fanout  engine.Fanout
	// A merge's parts, one per shard (bind_merge.go).
	merge       engine.Merge
	mergeBy     []mergeShard
	mergeParams []int
	// A read evaluated on the default cluster, and a merge's fallback to
	// it (bind_eval.go).
	eval     engine.Evaluate
	fallback evalFallback
	// An INSERT … SELECT into a sharded table (eval_insert.go), and the
	// shape of the INSERT … VALUES of its rows.
	insel      engine.InsertSelect
	inselShape router.Shape
	bulkInsert bool       // the INSERT bound is an INSERT … SELECT's rows
	ins        insertRows // an INSERT's rows and keys (bind_insert.go)
	// explaining: the statement being bound is an EXPLAIN's, which does
	// not run: no column probe goes ahead of a merge's first part
	// (bind_explain.go).
	explaining bool
}

// SetCharset gives the values of the session's statements the character
// set their string literals and string parameters are in
// (sharding.SessionCharset): at login, and whenever it changes.
func (b *Binder) SetCharset(cs sharding.Charset) {
	b.vals.Charset, b.xvals.Charset = cs, cs
}

// Choose is Keyspaces.Choose, scanning the statement's shape into the
// binder's buffer.
func (b *Binder) Choose(db string, st router.Stmt, sql []byte, home *backend.Cluster) Choice {
	return b.Keyspaces.Choose(db, st, sql, &b.shape, home)
}

// SessionStatement plans, in sharded schema ks, statement p (classified
// st) when it is about the session rather than tables: where the session
// is (Session.Cluster) for BEGIN, COMMIT, ROLLBACK, a savepoint statement,
// USE, SET and SHOW WARNINGS (whose diagnostics are on the connection the
// previous statement ran on); on the default cluster for SET of user
// variables (every statement that reads them runs there) and DO (it
// evaluates expressions for their effects: GET_LOCK, SLEEP); LOCK and
// UNLOCK TABLES on the shards (bind_lock.go). XA statements are refused.
// It returns nil for any other statement. The transactions over several
// shards (COMMIT of one, a deferred BEGIN, savepoints on every shard)
// are the session's to run; it asks this only for the rest.
func (b *Binder) SessionStatement(ks *Keyspace, st router.Stmt, p []byte, s Session) engine.Primitive {
	switch st.Kind {
	case router.KindXA:
		return b.refuse("XA statements on a sharded schema (shardgate runs XA itself: cross_shard_writes: atomic)")
	case router.KindCommit, router.KindRollback, router.KindBegin, router.KindSavepoint, router.KindUse:
		return b.here(st, s)
	case router.KindSet:
		if st.Flags&router.FlagUserVar != 0 {
			return b.routeTo(ks.Default, st, s)
		}
		return b.here(st, s)
	case router.KindLock:
		return b.lockTables(ks, p, s)
	case router.KindUnlock:
		return b.unlockTables(st, p, s)
	case router.KindDo:
		return b.routeTo(ks.Default, st, s)
	case router.KindShow:
		if st.Flags&router.FlagWarnings != 0 {
			return b.here(st, s)
		}
	}
	return nil
}

// Statement plans text statement p (COM_QUERY, classified st) on sharded
// schema ks, once SessionStatement has not: a shard hint sends it to the
// named shard as written; EXPLAIN of a statement answers with its plan
// (bind_explain.go); SHOW and DESCRIBE are rewritten to show the logical
// tables; DDL runs on every sub-table; any other statement is planned by
// its cached plan and bound to its literals.
func (b *Binder) Statement(ks *Keyspace, st router.Stmt, p []byte, s Session) engine.Primitive {
	if st.Flags&router.FlagHintShard != 0 {
		if name, ok := router.ShardHint(p[1:]); ok {
			cl := ks.Shard(name)
			if cl == nil {
				return b.refuseErr(mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax, "shardgate: shard hint names %q, which is not a shard of schema %s", name, ks.Schema.Name))
			}
			return b.routeTo(cl, st, s)
		}
	}
	switch st.Kind {
	case router.KindPrepare, router.KindExecute, router.KindDeallocate:
		// EXECUTE … USING @v would route by user variables the proxy
		// does not know.
		return b.refuse("PREPARE, EXECUTE and DEALLOCATE PREPARE statements on a sharded schema; use the binary protocol's prepared statements")
	}
	if s.Streaming() {
		return b.refuse("statements larger than the packet buffer on a sharded schema")
	}
	if st.Kind == router.KindAnalyze {
		if head, ok := router.ReadExplain(p[1:]); ok {
			return b.explain(ks, head, st, p, s)
		}
	}
	if st.Kind == router.KindShow || st.Kind == router.KindAnalyze && st.Flags&router.FlagAnalyzeExec == 0 {
		return b.metadata(ks, st, p[1:], s)
	}
	if ddlKind(st.Kind) {
		if prim := b.ddl(st, p, s); prim != nil {
			return prim
		}
	}
	return b.statement(ks, st, p[1:], s)
}

// statement plans a text statement on a sharded schema by its cached
// plan: where its tables are, and for sharded ones, which sub-tables its
// key values pick.
func (b *Binder) statement(ks *Keyspace, st router.Stmt, sql []byte, s Session) engine.Primitive {
	if mode := parserMode(s.SQLMode()); mode != "" {
		return b.refuse("sql_mode " + mode + " on a sharded schema")
	}
	sh := &b.shape
	router.ScanShape(sql, sh)
	plan := ks.Plan(sql, sh, s.DB())
	if plan.Err != nil {
		b.vals.Reset(sql, sh)
		if prim := b.evaluate(ks, plan, st, sql, sh, &b.vals, nil, s); prim != nil {
			return prim
		}
		if plan.EvalErr != nil {
			return b.refuseErr(plan.EvalErr)
		}
		return b.refuseErr(b.planRefusal(ks, plan, sql, s))
	}
	if plan.An.Placement == InfoSchema {
		return b.infoSchema(ks, st, sql, s)
	}
	if plan.An.Placement == Sharded && st.Flags&router.FlagUserVar != 0 {
		return b.refuseUserVars()
	}
	if plan.An.Placement != Sharded {
		return b.placeWhole(ks, plan.An, st, s)
	}
	b.vals.Reset(sql, sh)
	if plan.An.Insert != nil {
		return b.insert(ks, plan, st, sql, sh, &b.vals, false, s)
	}
	target, err := plan.An.Route(&b.vals)
	if err != nil {
		return b.evaluateOr(ks, plan, st, sql, sh, &b.vals, nil, err, s)
	}
	if !selectItems(plan, sql, sh) {
		return b.evaluateOr(ks, plan, st, sql, sh, &b.vals, nil, notSupported("this select list on a sharded table"), s)
	}
	if target.Len() > 1 && merges(plan, s) {
		return b.mergeOf(ks, plan, sql, sh, target, st, &b.vals, false, s)
	}
	b.renderParts(ks, plan, sql, sh, target, false, nil)
	return b.subTables(plan, st, s)
}

// planRefusal is the client's error for a plan that refuses sql: the
// server's syntax error when the parser could not read it and the server
// cannot either (Session.SyntaxError), else the plan's refusal.
func (b *Binder) planRefusal(ks *Keyspace, plan *Plan, sql []byte, s Session) *mysql.SQLError {
	if plan.Unparsed {
		if e := s.SyntaxError(ks.Default, sql); e != nil {
			return e
		}
	}
	return ClientError(plan.Err)
}

// placeWhole plans a statement that is not split by shard key, text or
// prepared: on reference tables, a write on every shard and a read on
// one; on unsharded tables, on the default cluster.
func (b *Binder) placeWhole(ks *Keyspace, an *Analysis, st router.Stmt, s Session) engine.Primitive {
	if an.Placement == Reference && st.Flags&router.FlagUserVar != 0 {
		return b.refuseUserVars()
	}
	if an.Placement == Reference && an.Write {
		return b.everyShard(ks, st, s)
	}
	return b.routeTo(ks.Default, st, s)
}

// refuseUserVars refuses a statement on sharded or reference tables that
// uses a user variable: it lives on one connection, and the other shards
// would read it as NULL.
func (b *Binder) refuseUserVars() engine.Primitive {
	return b.refuse("user variables in a statement on sharded or reference tables")
}

// selectItems reads the spans of the select list's items into sh when
// the plan names result columns by their text (the client's spelling, see
// Template.SelectItems), and reports whether it found them all.
func selectItems(plan *Plan, sql []byte, sh *router.Shape) bool {
	n := plan.Tmpl.SelectItems()
	if n == 0 {
		return true
	}
	sh.Items = router.SelectItems(sql, sh.Items[:0])
	return len(sh.Items) == n
}

// merges reports whether a statement over several sub-tables runs as a
// Merge: one that needs one (ORDER BY, GROUP BY…), and a read that needs
// none, whose shards then run at once, each shard's sub-tables read by one
// UNION ALL. A read while the session holds table locks goes sub-table
// by sub-table (a Scatter), since a shard's UNION ALL would read a
// reference table it joins once per sub-table, and LOCK TABLES locked it
// once.
func merges(plan *Plan, s Session) bool {
	switch {
	case plan.An.TopMerge != 0:
		return true
	case plan.An.Write || plan.Merge == nil:
		return false
	case s.CursorRequested():
		return true
	}
	// (Without a column probe, a statement with effects, the client
	// would get the definitions of a shard's UNION ALL.)
	return plan.Merge.Probe != nil && !s.LocksTables()
}

// subTables plans a sharded statement on the sub-tables renderParts
// rendered: one Route, or a Scatter (reads) or Fanout (writes) over
// several.
func (b *Binder) subTables(plan *Plan, st router.Stmt, s Session) engine.Primitive {
	if len(b.parts) == 1 {
		prim := b.routeTo(b.parts[0].Cluster, st, s)
		if prim == engine.Primitive(&b.route) {
			b.route.Query, b.route.Stmt, b.route.Params = b.parts[0].Query, b.parts[0].Stmt, b.parts[0].Params
		}
		return prim
	}
	if plan.An.Write {
		for _, p := range b.parts {
			if e := s.CrossShardWrite(p.Cluster, st); e != nil {
				return b.refuseErr(e)
			}
		}
		return b.useFanout(b.parts, false, false)
	}
	b.scatter.Parts = b.parts
	b.scatter.ReplicaOK = ReplicaOK(b.parts[0].Cluster, s.Policy(), st, s)
	return &b.scatter
}

// renderParts renders the statement sql, of shape sh, for each
// sub-table of target into b.parts, in one buffer: COM_QUERY packets, or,
// for an execution of a prepared statement (prepared), the texts of the
// sub-tables' server-side statements (Part.Stmt), which take the client's
// parameters in the order order (Part.Params).
func (b *Binder) renderParts(ks *Keyspace, plan *Plan, sql []byte, sh *router.Shape, target Target, prepared bool, order []int) {
	buf := b.partSQL[:0]
	b.partEnds = b.partEnds[:0]
	b.parts = b.parts[:0]
	for i := target.Next(0); i >= 0; i = target.Next(i + 1) {
		if !prepared {
			buf = append(buf, mysql.ComQuery)
		}
		b.sub[0] = i
		buf = plan.Tmpl.Append(buf, sql, sh, b.sub[:])
		b.partEnds = append(b.partEnds, len(buf))
		b.parts = append(b.parts, engine.Part{Cluster: ks.Shard(plan.An.Group.Layout.Shard(i))})
	}
	b.partSQL = buf
	start := 0
	for j, end := range b.partEnds {
		if prepared {
			b.parts[j].Stmt, b.parts[j].Params = buf[start:end:end], order
		} else {
			b.parts[j].Query = buf[start:end:end]
		}
		start = end
	}
}

// everyShard plans a write to a reference table: the statement as written
// on every shard of the schema, answered with one server's OK.
func (b *Binder) everyShard(ks *Keyspace, st router.Stmt, s Session) engine.Primitive {
	b.parts = b.parts[:0]
	for _, name := range ks.Schema.Shards {
		cl := ks.Shard(name)
		if e := s.CrossShardWrite(cl, st); e != nil {
			return b.refuseErr(e)
		}
		b.parts = append(b.parts, engine.Part{Cluster: cl})
	}
	return b.useFanout(b.parts, true, false)
}

// useFanout plans the binder's Fanout over parts: one server's answer
// (oneServer) or the parts' merged, a LOCK TABLES (locks) or not.
func (b *Binder) useFanout(parts []engine.Part, oneServer, locks bool) engine.Primitive {
	b.fanout.Parts, b.fanout.OneServer, b.fanout.Locks = parts, oneServer, locks
	return &b.fanout
}

// routeTo plans a statement that runs whole on cl, unless it is a write
// the session's transaction may not make there (Session.CrossShardWrite).
func (b *Binder) routeTo(cl *backend.Cluster, st router.Stmt, s Session) engine.Primitive {
	if e := s.CrossShardWrite(cl, st); e != nil {
		return b.refuseErr(e)
	}
	return b.routeOn(cl, st, s)
}

// here plans a statement that runs where the session is.
func (b *Binder) here(st router.Stmt, s Session) engine.Primitive {
	return b.routeOn(s.Cluster(), st, s)
}

// routeOn plans the binder's Route to cl. A cursor pins its connection, so
// it is only ever opened on the writer.
func (b *Binder) routeOn(cl *backend.Cluster, st router.Stmt, s Session) engine.Primitive {
	prim := PlanCluster(&b.route, cl, s.Policy(), st, s)
	if s.CursorRequested() {
		b.route.ReplicaOK = false
	}
	return prim
}

// Refuse plans the answer err: a refusal or an error the server would
// give, as a *mysql.SQLError (ClientError).
func (b *Binder) Refuse(err error) engine.Primitive { return b.refuseErr(err) }

func (b *Binder) refuseErr(err error) engine.Primitive {
	b.refusal = engine.Refuse{Err: ClientError(err)}
	return &b.refusal
}

// refuse plans the refusal 1235 naming what is not supported.
func (b *Binder) refuse(what string) engine.Primitive { return b.refuseErr(notSupported(what)) }

// ClientError is err as the client's error: the *mysql.SQLError it is or
// wraps, else a 1235 that says what it is.
func ClientError(err error) *mysql.SQLError {
	var se *mysql.SQLError
	if !errors.As(err, &se) {
		se = mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax, "shardgate: %v", err)
	}
	return se
}

// parserModes are the sql_mode flags that change how a statement parses.
// The planner's parser (Vitess) knows none of them: with ANSI_QUOTES it
// would read "id" as a string, with PIPES_AS_CONCAT || as OR; a sharded
// statement must never be routed by a misreading.
var parserModes = []string{"ANSI_QUOTES", "PIPES_AS_CONCAT", "NO_BACKSLASH_ESCAPES", "HIGH_NOT_PRECEDENCE"}

// parserMode returns the first parser-changing flag of sql_mode m, the
// session's as the client set it, or "". (The server's global default is
// not read: a server started with such a mode is documented as
// unsupported for sharded schemas.)
func parserMode(m string) string {
	for m != "" {
		f, rest, _ := strings.Cut(m, ",")
		for _, mode := range parserModes {
			if strings.EqualFold(strings.TrimSpace(f), mode) {
				return mode
			}
		}
		m = rest
	}
	return ""
}
