package frontend

import (
	"errors"

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
	switch st.Kind {
	case router.KindCommit, router.KindRollback:
		if len(s.others) > 0 {
			return engine.EndTransaction{}
		}
		return planner.PlanCluster(&s.planned, s.cl, s.user.Policy(), st, s)
	case router.KindBegin, router.KindSet, router.KindSavepoint:
		return planner.PlanCluster(&s.planned, s.cl, s.user.Policy(), st, s)
	case router.KindShow:
		if st.Flags&router.FlagWarnings != 0 {
			// The previous statement's diagnostics are on the connection
			// that ran it, held for this statement (reclaimPrevious).
			return planner.PlanCluster(&s.planned, s.cl, s.user.Policy(), st, s)
		}
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
	if s.exec.ps != nil {
		return s.refuse1235("This version of shardgate doesn't yet support '%s'", "prepared statements on a sharded schema")
	}
	if s.stream != nil {
		return s.refuse1235("This version of shardgate doesn't yet support '%s'", "statements larger than the packet buffer on a sharded schema")
	}
	if ddlKind(st.Kind) {
		if prim := s.planDDL(st, p); prim != nil {
			return prim
		}
	}
	return s.planStatement(ks, st, p[1:])
}

// planStatement plans a text statement on a sharded schema by its cached
// plan: where its tables are, and for sharded ones, which sub-tables its
// key values pick.
func (s *Session) planStatement(ks *planner.Keyspace, st router.Stmt, sql []byte) engine.Primitive {
	router.ScanShape(sql, &s.shape)
	plan := ks.Plan(sql, &s.shape, s.db)
	if plan.Err != nil {
		return s.refuseErr(plan.Err)
	}
	an := plan.An
	switch an.Placement {
	case planner.Reference:
		if an.Write {
			return s.everyShard(ks, st)
		}
		return s.routeToShard(ks.Default, st)
	case planner.Sharded:
		s.vals.Reset(sql, &s.shape)
		target, err := an.Route(&s.vals)
		if err != nil {
			return s.refuseErr(err)
		}
		if an.Insert != nil && target.Len() > 1 {
			return s.refuse1235("This version of shardgate doesn't yet support '%s'", "a multi-row INSERT whose rows go to several sub-tables")
		}
		return s.subTables(ks, plan, st, sql, target)
	}
	return s.routeToShard(ks.Default, st)
}

// subTables plans a sharded statement on the sub-tables of target: one
// Route, or a Scatter (reads) or Fanout (writes) over several.
func (s *Session) subTables(ks *planner.Keyspace, plan *planner.Plan, st router.Stmt, sql []byte, target planner.Target) engine.Primitive {
	s.renderParts(ks, plan, sql, target)
	if len(s.parts) == 1 {
		prim := s.routeToShard(s.parts[0].Cluster, st)
		if prim == engine.Primitive(&s.planned) {
			s.planned.Query = s.parts[0].Query
		}
		return prim
	}
	if plan.An.Write {
		for _, p := range s.parts {
			if e := s.crossShardWrite(p.Cluster, st); e != nil {
				return s.refuseErr(e)
			}
		}
		s.fanout.Parts, s.fanout.OneServer = s.parts, false
		return &s.fanout
	}
	s.scatter.Parts = s.parts
	s.scatter.ReplicaOK = planner.ReplicaOK(s.parts[0].Cluster, s.user.Policy(), st, s)
	return &s.scatter
}

// renderParts renders the statement for each sub-table of target into
// s.parts, as COM_QUERY packets in one buffer.
func (s *Session) renderParts(ks *planner.Keyspace, plan *planner.Plan, sql []byte, target planner.Target) {
	b := s.partSQL[:0]
	s.partEnds = s.partEnds[:0]
	s.parts = s.parts[:0]
	for i := target.Next(0); i >= 0; i = target.Next(i + 1) {
		b = append(b, mysql.ComQuery)
		s.sub[0] = i
		b = plan.Tmpl.Append(b, sql, &s.shape, s.sub[:])
		s.partEnds = append(s.partEnds, len(b))
		s.parts = append(s.parts, engine.Part{Cluster: ks.Shard(plan.An.Group.Layout.Shard(i))})
	}
	s.partSQL = b
	start := 0
	for j, end := range s.partEnds {
		s.parts[j].Query = b[start:end:end]
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
	s.fanout.Parts, s.fanout.OneServer = s.parts, true
	return &s.fanout
}

// refuseErr plans the answer err: a refusal or an error the server would
// give, as a *mysql.SQLError.
func (s *Session) refuseErr(err error) engine.Primitive {
	var se *mysql.SQLError
	if !errors.As(err, &se) {
		se = mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax, "shardgate: %v", err)
	}
	s.refusal = engine.Refuse{Err: se}
	return &s.refusal
}

// renameSubTable gives a column definition naming a sub-table of a sharded
// schema its logical table's name, as one server holding every row would:
// GUI grids build their UPDATEs from it.
func (s *Session) renameSubTable(schema, orgTable []byte) ([]byte, bool) {
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
