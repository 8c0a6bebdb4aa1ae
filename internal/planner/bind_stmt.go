package planner

import (
	"bytes"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
)

// Prepared statements on a sharded schema. PREPARE plans the statement
// once (the plan of its shape); each EXECUTE routes by the typed
// parameters it carries and runs, on every sub-table it picks, a
// server-side statement prepared from that sub-table's text (Part.Stmt,
// Route.Stmt), which takes the client's parameters (Params): parameters
// are never pasted into SQL.

// Prepared is what a statement prepared on a sharded schema keeps for
// its executions to be bound.
type Prepared struct {
	KS *Keyspace
	// Plan is the statement's plan; nil for a statement that runs as
	// written on Cluster (a shard hint, BEGIN, SET …). A plan without
	// an analysis (Plan.An nil) is evaluated.
	Plan    *Plan
	Cluster *backend.Cluster
	// Text and Shape are the client's statement, whose literals the
	// sub-tables' texts copy.
	Text  []byte
	Shape router.Shape
	// Order is Template.Params when it is not the identity: the client's
	// parameter each '?' of a sub-table's text stands for.
	Order []int
}

// PrepareAt says where a statement prepared on a sharded schema is
// prepared, for the client's answer: one of Err, Evaluate or Cluster.
type PrepareAt struct {
	// Err refuses the statement, as a server refuses one at PREPARE.
	Err *mysql.SQLError
	// Evaluate: the statement is prepared where its executions are
	// evaluated, around its temporary tables (engine.Evaluate.Prepare).
	Evaluate *engine.Evaluate
	// Cluster is where the statement is prepared, and Query the
	// COM_STMT_PREPARE sent there: nil, the client's; else one
	// sub-table's text.
	Cluster *backend.Cluster
	Query   []byte
}

// Prepare plans COM_STMT_PREPARE p (classified st) on sharded schema ks
// and fills prep for its executions. Statements about the session are
// prepared as written where the session is, hinted ones on their shard;
// others are planned: their shape's refusals are the PREPARE's error (as
// a server refuses a statement at PREPARE), a statement the plan refuses
// but that can be evaluated is prepared where it will be, one not split
// by shard key on the default cluster, and a sharded one as one
// sub-table's text on that sub-table's shard.
func (b *Binder) Prepare(ks *Keyspace, st router.Stmt, p []byte, s Session, prep *Prepared) PrepareAt {
	sql := p[1:]
	prep.KS = ks
	switch st.Kind {
	case router.KindCommit, router.KindRollback, router.KindBegin, router.KindSet, router.KindSavepoint:
		prep.Cluster = s.Cluster()
		return PrepareAt{Cluster: prep.Cluster}
	}
	if st.Flags&router.FlagHintShard != 0 {
		if name, ok := router.ShardHint(sql); ok {
			if prep.Cluster = ks.Shard(name); prep.Cluster == nil {
				return PrepareAt{Err: mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax,
					"shardgate: shard hint names %q, which is not a shard of schema %s", name, ks.Schema.Name)}
			}
			return PrepareAt{Cluster: prep.Cluster}
		}
	}
	if st.Kind == router.KindAnalyze {
		if _, ok := router.ReadExplain(sql); ok {
			return refuseExplainPrepared(ks)
		}
	}
	prep.Text = bytes.Clone(sql)
	router.ScanShape(prep.Text, &prep.Shape)
	plan := ks.Plan(prep.Text, &prep.Shape, s.DB())
	if plan.Err != nil {
		e, err := b.evaluation(ks, plan, st, prep.Text, &prep.Shape, nil, prep.Text, s)
		if err != nil {
			return PrepareAt{Err: ClientError(err)}
		}
		if e != nil {
			prep.Plan = plan
			return PrepareAt{Evaluate: e}
		}
		return PrepareAt{Err: b.planRefusal(ks, plan, prep.Text, s)}
	}
	prep.Plan = plan
	if plan.An.Placement == InfoSchema {
		return PrepareAt{Err: ClientError(notSupported("prepared statements on information_schema's table listings on a sharded schema (send the query as text)"))}
	}
	if plan.An.Placement != Sharded {
		return PrepareAt{Cluster: ks.Default}
	}
	order := plan.Tmpl.Params()
	if len(order) != len(prep.Shape.Params) {
		return PrepareAt{Err: ClientError(notSupported("a prepared statement whose parameters the SQL parser does not write back one for one, on sharded tables"))}
	}
	for k, i := range order {
		if k != i {
			prep.Order = order
			break
		}
	}
	i := plan.An.SampleSubTable()
	b.sub[0] = i
	q := plan.Tmpl.Append([]byte{mysql.ComStmtPrepare}, prep.Text, &prep.Shape, b.sub[:])
	return PrepareAt{Cluster: ks.Shard(plan.An.Group.Layout.Shard(i)), Query: q}
}

// errIncorrectArguments is the server's answer to an execution whose
// parameters do not decode.
func errIncorrectArguments() error {
	return mysql.NewError(mysql.ERWrongArguments, mysql.StateGeneral, "Incorrect arguments to mysqld_stmt_execute")
}

// Execute binds an execution of prep (COM_STMT_EXECUTE, classified st)
// as Statement binds a text statement, the key values coming from the
// parameters it binds (Session.ExecuteParams), once SessionStatement has
// not planned it.
func (b *Binder) Execute(prep *Prepared, st router.Stmt, s Session) engine.Primitive {
	if prep.Plan == nil {
		return b.routeTo(prep.Cluster, st, s)
	}
	if s.Streaming() {
		return b.refuse("statements larger than the packet buffer on a sharded schema (send long values with COM_STMT_SEND_LONG_DATA)")
	}
	ks, plan := prep.KS, prep.Plan
	if plan.An == nil { // evaluated (Prepare)
		if err := b.params(prep, s); err != nil {
			return b.refuseErr(errIncorrectArguments())
		}
		return b.evaluateOr(ks, plan, st, prep.Text, &prep.Shape, &b.xvals, prep.Text, plan.Err, s)
	}
	if plan.An.Placement != Sharded {
		return b.placeWhole(ks, plan.An, st, s)
	}
	if st.Flags&router.FlagUserVar != 0 {
		return b.refuseUserVars()
	}
	return b.executeSharded(prep, st, s)
}

// executeSharded binds an execution of a statement on sharded tables to
// the sub-tables its parameters pick.
func (b *Binder) executeSharded(prep *Prepared, st router.Stmt, s Session) engine.Primitive {
	if err := b.params(prep, s); err != nil {
		return b.refuseErr(errIncorrectArguments())
	}
	ks, plan, vals := prep.KS, prep.Plan, &b.xvals
	if plan.An.Insert != nil {
		return b.insert(ks, plan, st, prep.Text, &prep.Shape, vals, true, s)
	}
	target, err := plan.An.Route(vals)
	if err != nil {
		return b.evaluateOr(ks, plan, st, prep.Text, &prep.Shape, vals, prep.Text, err, s)
	}
	if target.Len() > 1 && merges(plan, s) {
		// Merged; a cursor's rows are held by the merge and served by
		// the proxy (a Scatter cannot hold them).
		return b.mergeOf(ks, plan, prep.Text, &prep.Shape, target, st, vals, true, s)
	}
	b.renderParts(ks, plan, prep.Text, &prep.Shape, target, true, prep.Order)
	return b.subTables(plan, st, s)
}

// params decodes the execution's parameters into b.xvals.
func (b *Binder) params(prep *Prepared, s Session) error {
	b.xvals.Reset(prep.Text, &prep.Shape)
	return s.ExecuteParams(&b.xvals)
}
