package frontend

import (
	"context"
	"log/slog"
	"strconv"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/planner"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sequence"
)

// The session as the planner's Binder sees it (planner.Session): the
// state binding a statement on a sharded schema decides by, and what only
// the session can do for it. DB, Pinned, ReplicaReadsAllowed and
// ReadsOwnWritesOnPrimary are in route.go.

var _ planner.Session = (*Session)(nil)

// Policy implements planner.Session.
func (s *Session) Policy() *router.Policy { return s.user.Policy() }

// Cluster implements planner.Session.
func (s *Session) Cluster() *backend.Cluster { return s.cl }

// InTransaction implements planner.Session.
func (s *Session) InTransaction() bool { return s.inTrx() }

// Autocommit implements planner.Session.
func (s *Session) Autocommit() bool { return s.autocommit() }

// LocksTables implements planner.Session.
func (s *Session) LocksTables() bool { return s.heldPins()&pinLock != 0 }

// LockedClusters implements planner.Session.
func (s *Session) LockedClusters() []*backend.Cluster { return s.lockedClusters() }

// CursorRequested implements planner.Session.
func (s *Session) CursorRequested() bool { return s.exec.cursor }

// Streaming implements planner.Session.
func (s *Session) Streaming() bool { return s.stream != nil }

// SQLMode implements planner.Session.
func (s *Session) SQLMode() string {
	m, _ := s.vars.Get("sql_mode")
	return m
}

// CrossShardWrite implements planner.Session (shards_trx.go).
func (s *Session) CrossShardWrite(cl *backend.Cluster, st router.Stmt) *mysql.SQLError {
	return s.crossShardWrite(cl, st)
}

// Logger implements planner.Session.
func (s *Session) Logger() *slog.Logger { return s.logger() }

// SyntaxError implements planner.Session (syntax.go).
func (s *Session) SyntaxError(cl *backend.Cluster, sql []byte) *mysql.SQLError {
	return s.serverSyntaxError(cl, sql)
}

// DrawKeys implements planner.Session: the round trips to the sequence's
// store, with the session's auto_increment_increment. A statement shown
// rather than run (planDry) reserves nothing: its rows get the ids the
// sequence would hand out next (Sequence.Peek).
func (s *Session) DrawKeys(seq *sequence.Sequence, maxExplicit uint64, rows int) (uint64, error) {
	if s.dryRun {
		if rows == 0 {
			return 0, nil
		}
		return seq.Peek(), nil
	}
	ctx := context.Background() // each round trip is bounded by the store's timeout
	if maxExplicit > 0 {
		if err := seq.Observe(ctx, maxExplicit); err != nil {
			return 0, mysql.NewError(mysql.ERUnknownError, mysql.StateGeneral, "shardgate: %v", err)
		}
	}
	if rows == 0 {
		return 0, nil
	}
	if err := sequence.CheckIncrement(s.autoIncrementIncrement()); err != nil {
		return 0, err
	}
	// As InnoDB's "consecutive" mode does for an INSERT of known rows, a
	// statement reserves an id for each of its rows, the rows that give
	// their own key included: those ids are skipped, as on one server.
	first, err := seq.Next(ctx, rows)
	if err != nil {
		return 0, mysql.NewError(mysql.ERUnknownError, mysql.StateGeneral, "shardgate: %v", err)
	}
	return first, nil
}

// autoIncrementIncrement is the session's auto_increment_increment, 1
// unless the session set it.
func (s *Session) autoIncrementIncrement() uint64 {
	v, ok := s.vars.Get("auto_increment_increment")
	if !ok {
		return 1
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0 // not a number the proxy understands: refused
	}
	return n
}
