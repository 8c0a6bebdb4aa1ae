package frontend

import (
	"errors"
	"strconv"
	"strings"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/planner"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sharding"
)

// homeCluster is where a user's statements outside sharded schemas go:
// its cluster, or, for a user that has none and reaches its data through
// schemas, the default cluster of its default database's schema (else of
// the first schema by name).
func (s *Session) homeCluster(u *User) *backend.Cluster {
	if u.Cluster != nil {
		return u.Cluster
	}
	kss := s.srv.opt.Keyspaces
	if ks := kss.Lookup(u.DefaultDB); ks != nil {
		return ks.Default
	}
	first := ""
	for name := range kss {
		if first == "" || name < first {
			first = name
		}
	}
	if first == "" {
		return nil
	}
	return kss[first].Default
}

// planSharded plans a statement on a sharded schema. Statements about
// the session rather than tables (BEGIN, COMMIT, SET …) run where the
// session is; COMMIT and ROLLBACK of a transaction that touched several
// shards end it on each. A shard hint sends a statement to the named
// shard as written.
func (s *Session) planSharded(ks *planner.Keyspace, st router.Stmt, p []byte) engine.Primitive {
	s.settleDoomed()
	if e := s.xaRefusal(st); e != nil {
		s.refusal = engine.Refuse{Err: e}
		return &s.refusal
	}
	switch st.Kind {
	case router.KindXA:
		return s.refuse1235("This version of shardgate doesn't yet support '%s'", "XA statements on a sharded schema (shardgate runs XA itself: cross_shard_writes: atomic)")
	case router.KindCommit, router.KindRollback:
		if s.beginPending && s.heldPins()&pinTrx == 0 {
			return lazyEnd{}
		}
		if len(s.others) > 0 || s.xa.trx != nil {
			return engine.EndTransaction{}
		}
		return planner.PlanCluster(&s.planned, s.cl, s.user.Policy(), st, s)
	case router.KindSet:
		if st.Flags&router.FlagUserVar != 0 {
			// User variables live on the default cluster's connection,
			// where every statement that reads them runs (planStatement).
			return s.routeToShard(ks.Default, st)
		}
		return planner.PlanCluster(&s.planned, s.cl, s.user.Policy(), st, s)
	case router.KindSavepoint:
		return s.planSavepoint(st, p)
	case router.KindLock:
		return s.planLockTables(ks, p)
	case router.KindUnlock:
		return s.planUnlockTables(st, p)
	case router.KindBegin:
		if s.deferBegin(st, p) {
			return lazyBegin{}
		}
		s.beginPending = false // the relayed BEGIN opens it here
		return planner.PlanCluster(&s.planned, s.cl, s.user.Policy(), st, s)
	case router.KindUse:
		return planner.PlanCluster(&s.planned, s.cl, s.user.Policy(), st, s)
	case router.KindDo:
		// DO evaluates expressions for their effects (GET_LOCK, SLEEP):
		// where statements without tables run.
		return s.routeToShard(ks.Default, st)
	case router.KindShow:
		if st.Flags&router.FlagWarnings != 0 {
			// The previous statement's diagnostics are on the connection
			// that ran it, held for this statement (reclaimPrevious).
			return planner.PlanCluster(&s.planned, s.cl, s.user.Policy(), st, s)
		}
	}
	if ps := s.exec.ps; ps != nil {
		return s.planExecute(ks, ps, st, p)
	}
	if st.Flags&router.FlagHintShard != 0 {
		if name, ok := router.ShardHint(p[1:]); ok {
			cl := ks.Shard(name)
			if cl == nil {
				return s.refuse1235("shardgate: shard hint names %q, which is not a shard of schema %s", name, ks.Schema.Name)
			}
			return s.routeToShard(cl, st)
		}
	}
	switch st.Kind {
	case router.KindPrepare, router.KindExecute, router.KindDeallocate:
		// EXECUTE … USING @v would route by user variables the proxy
		// does not know.
		return s.refuse1235("This version of shardgate doesn't yet support '%s'", "PREPARE, EXECUTE and DEALLOCATE PREPARE statements on a sharded schema; use the binary protocol's prepared statements")
	}
	if s.stream != nil {
		return s.refuse1235("This version of shardgate doesn't yet support '%s'", "statements larger than the packet buffer on a sharded schema")
	}
	if st.Kind == router.KindShow || st.Kind == router.KindAnalyze && st.Flags&router.FlagAnalyzeExec == 0 {
		return s.planMetadata(ks, st, p[1:])
	}
	if ddlKind(st.Kind) {
		if prim := s.planDDL(st, p); prim != nil {
			return prim
		}
	}
	return s.planStatement(ks, st, p[1:])
}

// planMetadata plans SHOW and DESCRIBE: rewritten to show the logical
// tables (planner.Keyspace.Metadata), else run as written: where the
// session is when not about tables (SHOW VARIABLES, SHOW WARNINGS), on
// the default cluster when about tables that are not sharded.
func (s *Session) planMetadata(ks *planner.Keyspace, st router.Stmt, sql []byte) engine.Primitive {
	prim, session, err := ks.Metadata(sql, s.db)
	switch {
	case err != nil:
		return s.refuseErr(err)
	case prim != nil:
		return prim
	case !session:
		return s.routeToShard(ks.Default, st)
	}
	return planner.PlanCluster(&s.planned, s.cl, s.user.Policy(), st, s)
}

// planStatement plans a text statement on a sharded schema by its cached
// plan: where its tables are, and for sharded ones, which sub-tables its
// key values pick.
func (s *Session) planStatement(ks *planner.Keyspace, st router.Stmt, sql []byte) engine.Primitive {
	if mode := s.parserMode(); mode != "" {
		return s.refuse1235("This version of shardgate doesn't yet support '%s'", "sql_mode "+mode+" on a sharded schema")
	}
	router.ScanShape(sql, &s.shape)
	plan := ks.Plan(sql, &s.shape, s.db)
	if plan.Err != nil {
		s.vals.Reset(sql, &s.shape)
		if prim := s.evaluate(ks, plan, st, sql, &s.shape, &s.vals, nil); prim != nil {
			return prim
		}
		return s.refuseErr(s.planRefusal(ks, plan, sql))
	}
	if plan.An.Placement == planner.InfoSchema {
		return s.planInfoSchema(ks, st, sql)
	}
	if plan.An.Placement == planner.Sharded && st.Flags&router.FlagUserVar != 0 {
		return s.refuseUserVars()
	}
	if plan.An.Placement != planner.Sharded {
		return s.placeWhole(ks, plan.An, st)
	}
	s.vals.Reset(sql, &s.shape)
	if plan.An.Insert != nil {
		return s.planInsert(ks, plan, st, sql)
	}
	target, err := plan.An.Route(&s.vals)
	if err != nil {
		return s.evaluateOr(ks, plan, st, sql, &s.shape, &s.vals, nil, err)
	}
	if !s.selectItems(plan, sql, &s.shape) {
		return s.evaluateOr(ks, plan, st, sql, &s.shape, &s.vals, nil, notSupported("this select list on a sharded table"))
	}
	if target.Len() > 1 && s.merges(plan) {
		return s.planMerge(ks, plan, sql, &s.shape, target, st, &s.vals, false)
	}
	s.renderParts(ks, plan, sql, &s.shape, target, false, nil)
	return s.subTables(ks, plan, st)
}

// evaluate plans the evaluation of a read that no route or merge
// answers (planner.EvalPlan), or returns nil when it cannot be
// evaluated: sql, sh and vals are the statement's text, shape and values
// (nil at a prepare), stmt the client's text of a prepared statement,
// nil for a text statement. Not while tables are locked (the
// evaluator's connection holds none of them), nor for a cursor, nor with
// user variables (the shards would read them as NULL).
func (s *Session) evaluate(ks *planner.Keyspace, plan *planner.Plan, st router.Stmt, sql []byte, sh *router.Shape, vals planner.Values, stmt []byte) engine.Primitive {
	if plan.Eval == nil || st.Flags&router.FlagUserVar != 0 || s.heldPins()&pinLock != 0 || s.exec.cursor {
		return nil
	}
	// (The evaluator takes the client's parameters as they come: its
	// statement is a Part without Params.)
	ks.Evaluate(&s.evaluation, plan.Eval, sql, sh, vals, stmt, planner.ReplicaOK(ks.Default, s.user.Policy(), st, s))
	return &s.evaluation
}

// evaluateOr is evaluate, or the refusal err when the statement cannot
// be evaluated.
func (s *Session) evaluateOr(ks *planner.Keyspace, plan *planner.Plan, st router.Stmt, sql []byte, sh *router.Shape, vals planner.Values, stmt []byte, err error) engine.Primitive {
	if prim := s.evaluate(ks, plan, st, sql, sh, vals, stmt); prim != nil {
		return prim
	}
	return s.refuseErr(err)
}

// notSupported is the refusal 1235 naming what.
func notSupported(what string) error {
	return mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax, "This version of shardgate doesn't yet support '%s'", what)
}

// placeWhole plans a statement that is not split by shard key, text or
// prepared: on reference tables, a write on every shard and a read on
// one; on unsharded tables, on the default cluster.
func (s *Session) placeWhole(ks *planner.Keyspace, an *planner.Analysis, st router.Stmt) engine.Primitive {
	if an.Placement == planner.Reference && st.Flags&router.FlagUserVar != 0 {
		return s.refuseUserVars()
	}
	if an.Placement == planner.Reference && an.Write {
		return s.everyShard(ks, st)
	}
	return s.routeToShard(ks.Default, st)
}

// refuseUserVars refuses a statement on sharded or reference tables that
// uses a user variable: it lives on one connection, and the other shards
// would read it as NULL.
func (s *Session) refuseUserVars() engine.Primitive {
	return s.refuse1235("This version of shardgate doesn't yet support '%s'", "user variables in a statement on sharded or reference tables")
}

// selectItems reads the spans of the select list's items into sh when
// the plan names result columns by their text (the client's spelling, see
// planner.Template.SelectItems), and reports whether it found them all.
func (s *Session) selectItems(plan *planner.Plan, sql []byte, sh *router.Shape) bool {
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
func (s *Session) merges(plan *planner.Plan) bool {
	switch {
	case plan.An.TopMerge != 0:
		return true
	case plan.An.Write || plan.Merge == nil:
		return false
	case s.exec.cursor:
		return true
	}
	// (Without a column probe, a statement with effects, the client
	// would get the definitions of a shard's UNION ALL.)
	return plan.Merge.Probe != nil && s.heldPins()&pinLock == 0
}

// subTables plans a sharded statement on the sub-tables renderParts
// rendered: one Route, or a Scatter (reads) or Fanout (writes) over
// several.
func (s *Session) subTables(ks *planner.Keyspace, plan *planner.Plan, st router.Stmt) engine.Primitive {
	if len(s.parts) == 1 {
		prim := s.routeToShard(s.parts[0].Cluster, st)
		if prim == engine.Primitive(&s.planned) {
			s.planned.Query, s.planned.Stmt, s.planned.Params = s.parts[0].Query, s.parts[0].Stmt, s.parts[0].Params
		}
		return prim
	}
	if plan.An.Write {
		for _, p := range s.parts {
			if e := s.crossShardWrite(p.Cluster, st); e != nil {
				return s.refuseErr(e)
			}
		}
		return s.useFanout(s.parts, false, false)
	}
	s.scatter.Parts = s.parts
	s.scatter.ReplicaOK = planner.ReplicaOK(s.parts[0].Cluster, s.user.Policy(), st, s)
	return &s.scatter
}

// renderParts renders the statement sql, of shape sh, for each
// sub-table of target into s.parts, in one buffer: COM_QUERY packets, or,
// for an execution of a prepared statement (prepared), the texts of the
// sub-tables' server-side statements (Part.Stmt), which take the client's
// parameters in the order order (Part.Params).
func (s *Session) renderParts(ks *planner.Keyspace, plan *planner.Plan, sql []byte, sh *router.Shape, target planner.Target, prepared bool, order []int) {
	b := s.partSQL[:0]
	s.partEnds = s.partEnds[:0]
	s.parts = s.parts[:0]
	for i := target.Next(0); i >= 0; i = target.Next(i + 1) {
		if !prepared {
			b = append(b, mysql.ComQuery)
		}
		s.sub[0] = i
		b = plan.Tmpl.Append(b, sql, sh, s.sub[:])
		s.partEnds = append(s.partEnds, len(b))
		s.parts = append(s.parts, engine.Part{Cluster: ks.Shard(plan.An.Group.Layout.Shard(i))})
	}
	s.partSQL = b
	start := 0
	for j, end := range s.partEnds {
		if prepared {
			s.parts[j].Stmt, s.parts[j].Params = b[start:end:end], order
		} else {
			s.parts[j].Query = b[start:end:end]
		}
		start = end
	}
}

// everyShard plans a write to a reference table: the statement as written
// on every shard of the schema, answered with one server's OK.
func (s *Session) everyShard(ks *planner.Keyspace, st router.Stmt) engine.Primitive {
	s.parts = s.parts[:0]
	for _, name := range ks.Schema.Shards {
		cl := ks.Shard(name)
		if e := s.crossShardWrite(cl, st); e != nil {
			return s.refuseErr(e)
		}
		s.parts = append(s.parts, engine.Part{Cluster: cl})
	}
	return s.useFanout(s.parts, true, false)
}

// useFanout plans the session's Fanout over parts: one server's answer
// (oneServer) or the parts' merged, a LOCK TABLES (locks) or not.
func (s *Session) useFanout(parts []engine.Part, oneServer, locks bool) engine.Primitive {
	s.fanout.Parts, s.fanout.OneServer, s.fanout.Locks = parts, oneServer, locks
	return &s.fanout
}

// refuseErr plans the answer err: a refusal or an error the server would
// give, as a *mysql.SQLError.
func (s *Session) refuseErr(err error) engine.Primitive {
	s.refusal = engine.Refuse{Err: asSQLError(err)}
	return &s.refusal
}

// asSQLError is err as the client's error: the *mysql.SQLError it is or
// wraps, else a 1235 that says what it is.
func asSQLError(err error) *mysql.SQLError {
	var se *mysql.SQLError
	if !errors.As(err, &se) {
		se = mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax, "shardgate: %v", err)
	}
	return se
}

// renameSubTable gives a column definition naming a sub-table of a sharded
// schema its logical table's name, as one server holding every row would:
// GUI grids build their UPDATEs from it.
func (s *Session) renameSubTable(schema, orgTable []byte) ([]byte, bool) {
	if len(schema) == 0 {
		// A derived table's column: MariaDB names the base table it
		// comes from, in no schema (the statement's database's).
		schema = []byte(s.db)
	}
	ks := s.srv.opt.Keyspaces[string(schema)]
	if ks == nil {
		return nil, false
	}
	name, ok := sharding.LogicalName(orgTable)
	if !ok {
		return nil, false
	}
	t := ks.Schema.TableBytes(name)
	if t == nil || t.Type != sharding.TableSharded {
		return nil, false
	}
	return name, true
}

// routeToShard plans a statement that runs on shard cl, unless it is a
// write a transaction may not make there.
func (s *Session) routeToShard(cl *backend.Cluster, st router.Stmt) engine.Primitive {
	if e := s.crossShardWrite(cl, st); e != nil {
		s.refusal = engine.Refuse{Err: e}
		return &s.refusal
	}
	return planner.PlanCluster(&s.planned, cl, s.user.Policy(), st, s)
}

// refuse1235 plans the answer ER_NOT_SUPPORTED_YET with a message naming
// what is not supported.
func (s *Session) refuse1235(format string, args ...any) engine.Primitive {
	s.refusal = engine.Refuse{Err: mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax, format, args...)}
	return &s.refusal
}

// parserModes are the sql_mode flags that change how a statement parses.
// The planner's parser (Vitess) knows none of them: with ANSI_QUOTES it
// would read "id" as a string, with PIPES_AS_CONCAT || as OR; a sharded
// statement must never be routed by a misreading.
var parserModes = []string{"ANSI_QUOTES", "PIPES_AS_CONCAT", "NO_BACKSLASH_ESCAPES", "HIGH_NOT_PRECEDENCE"}

// parserMode returns the first parser-changing flag of the session's
// sql_mode, as the client set it, or "". (The server's global default is
// not read: a server started with such a mode is documented as
// unsupported for sharded schemas.)
func (s *Session) parserMode() string {
	m, ok := s.vars.Get("sql_mode")
	if !ok {
		return ""
	}
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

// explain answers a statement hinted /* shardgate:explain */ on a sharded
// schema with its plan, one row per statement it would send, instead of
// running it. Planning it changes nothing of the session's.
func (s *Session) explain(st router.Stmt, p []byte) bool {
	w := s.trxWriter
	steps := engine.Explain(s.plan(st, p), p)
	s.trxWriter = w
	s.partDB, s.outsideFrom = "", nil // nothing ran on another schema
	text := func(name string, length uint32) mysql.Column {
		return mysql.Column{Name: name, Type: mysql.TypeVarString, Charset: uint16(mysql.CollationUTF8MB4GeneralCI), Length: length, Flags: mysql.FlagNotNull}
	}
	cols := []mysql.Column{text("step", 84), text("primitive", 256), text("shard", 256), text("query", 1<<20)}
	rows := make([][]string, len(steps))
	for i, st := range steps {
		rows[i] = []string{strconv.Itoa(i + 1), st.Primitive, st.Shard, st.Query}
	}
	if err := s.client.WriteTextResult(cols, rows, s.caps, s.status()); err != nil {
		return false
	}
	return s.client.Flush() == nil
}
