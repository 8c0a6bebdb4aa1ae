package frontend

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/planner"
	"github.com/shardgate/shardgate/internal/router"
)

// homeCluster is where a user's statements outside sharded schemas go:
// its cluster, or, for a user that has none and reaches its data through
// schemas, the default cluster of its default database's schema (else of
// the first schema by name).
func (s *Session) homeCluster(u *User) *backend.Cluster {
	if u.Cluster != nil {
		return u.Cluster
	}
	return s.srv.keyspaces().Home(u.DefaultDB)
}

// planSharded plans a statement on a sharded schema. What the session's
// transaction over shards decides is the session's: an XA refusal, the
// COMMIT or ROLLBACK of a transaction on several shards (each shard's
// part ended: engine.EndTransaction) or of one whose BEGIN never reached
// a shard, a BEGIN answered at once (deferred to the shard its first
// statement runs on), a savepoint statement on every shard of the
// transaction. The planner's Binder plans the rest: statements about the
// session, a text statement, an execution of a prepared one (whose long
// data the session refuses first).
func (s *Session) planSharded(ks *planner.Keyspace, st router.Stmt, p []byte) engine.Primitive {
	s.settleDoomed()
	if e := s.xaRefusal(st); e != nil {
		return s.binder().Refuse(e)
	}
	switch st.Kind {
	case router.KindCommit, router.KindRollback:
		if s.beginPending && s.heldPins()&pinTrx == 0 {
			return lazyEnd{}
		}
		if len(s.others) > 0 || s.xa.trx != nil {
			return engine.EndTransaction{}
		}
	case router.KindSavepoint:
		if prim := s.planSavepoint(p); prim != nil {
			return prim
		}
	case router.KindBegin:
		if s.deferBegin(st, p) {
			return lazyBegin{}
		}
		s.beginPending = false // the relayed BEGIN opens it here
	}
	if prim := s.binder().SessionStatement(ks, st, p, s); prim != nil {
		return prim
	}
	if ps := s.exec.ps; ps != nil {
		if e := ps.sh.longErr; e != nil {
			return s.binder().Refuse(e)
		}
		return s.binder().Execute(&ps.sh.prep, st, s)
	}
	prim := s.binder().Statement(ks, st, p, s)
	if r, ok := prim.(*engine.Refuse); ok && r.Err.Code == mysql.ERNotSupportedYet && s.learnNow(ks) {
		prim = s.binder().Statement(ks, st, p, s)
	}
	return prim
}

// learnWait bounds learnNow's look-up; learnEvery spaces them out.
const (
	learnWait  = 2 * time.Second
	learnEvery = time.Second
)

// learnNow reads the definitions of ks's tables whose shard-key type the
// proxy does not know (a table another instance of the fleet created, or
// one a reload added) for a statement refused: true when it tried, so that
// the statement is planned again. A keyspace whose tables are all known
// costs nothing here, and one whose table cannot be learnt is asked at
// most once a second.
func (s *Session) learnNow(ks *planner.Keyspace) bool {
	ctx, cancel := context.WithTimeout(context.Background(), learnWait)
	defer cancel()
	return ks.LearnNow(ctx, learnEvery)
}

// notSupported is the refusal 1235 naming what.
func (s *Session) notSupported(what string) engine.Primitive {
	return s.binder().Refuse(mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax, "This version of shardgate doesn't yet support '%s'", what))
}

// asSQLError is err as the client's error: the *mysql.SQLError it is or
// wraps, else a 1235 that says what it is.
func asSQLError(err error) *mysql.SQLError { return planner.ClientError(err) }

// planFor plans statement p: an EXPLAIN (of a table, or of a statement,
// which does not run) without effects (planDry), the diagnostics of its
// plan's answer being the notes of the servers' EXPLAINs (ownWarnings);
// any other statement as it runs (plan).
func (s *Session) planFor(st router.Stmt, p []byte) engine.Primitive {
	if st.Kind != router.KindAnalyze || st.Flags&router.FlagAnalyzeExec != 0 {
		return s.plan(st, p)
	}
	prim := s.planDry(st, p)
	if _, ok := prim.(*engine.ExplainPlan); ok {
		s.ownWarnings()
	}
	return prim
}

// planDry plans statement p as plan does, for a statement that is shown
// rather than run (EXPLAIN, the explain hint): binding it draws no key
// from a sequence (DrawKeys) and leaves the transaction's record of the
// shards it wrote as it was (a write's CrossShardWrite is checked, its
// refusal the answer, but not recorded).
func (s *Session) planDry(st router.Stmt, p []byte) engine.Primitive {
	w, wrote := s.trxWriter, slices.Clone(s.trxWrote)
	s.dryRun = true
	prim := s.plan(st, p)
	s.dryRun = false
	s.trxWriter, s.trxWrote = w, wrote
	return prim
}

// explain answers a statement hinted /* shardgate:explain */ on a sharded
// schema with its plan, one row per statement it would send, instead of
// running it. Planning it changes nothing of the session's.
func (s *Session) explain(st router.Stmt, p []byte) bool {
	steps := engine.Explain(s.planDry(st, p), p)
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
