package frontend

import (
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/planner"
)

// What a session needs only while it serves commands is not part of the
// Session: it is taken when first needed and given back when the session
// parks, so that an idle client costs the proxy as little as possible.
// 10,000 idle clients of go-sql-driver cost 8.6 KB each (issue 23), 6.1
// KB of it the Session, 3.8 KB of that the sharding planner's Binder
// that an idle session, or any session on an unsharded schema, never
// uses. A busy session keeps what it took from one command to the next,
// so the statement path allocates nothing.

// shardWork is what a statement on a sharded schema is bound with: the
// planner's binder and, for a prepared statement's execution, the
// packet's parameter parts and each value's span in them
// (ExecuteParams), for writeReordered. None of it is kept from one
// command to the next: plans and parts are filled per statement, and
// prepared statements and cursors keep theirs in the session's pstmt.
type shardWork struct {
	planner.Binder
	xparams mysql.ExecuteParams
	spans   [][2]int
}

// shardWork returns the session's shardWork, taking one from the
// server's pool on the first statement on a sharded schema since the
// session logged in or last parked.
func (s *Session) shardWork() *shardWork {
	if s.work == nil {
		s.work = s.srv.shardWork.Get().(*shardWork)
		s.noteCharset()
	}
	return s.work
}

// binder returns the session's planner.Binder (shardWork).
func (s *Session) binder() *planner.Binder {
	b := &s.shardWork().Binder
	b.Keyspaces = s.srv.keyspaces() // a reload may have added schemas
	return b
}

// newShardWork makes a shardWork for the server's pool. Its binder is
// bound to the server's keyspaces, which do not change while it runs.
func (s *Server) newShardWork() any {
	return &shardWork{Binder: planner.Binder{Keyspaces: s.keyspaces()}}
}

// shed gives back, before the session parks or ends, what it holds only
// to serve commands: the running statement's long text (activity.go), its
// statement recording state (telemetry.go) and its shardWork, which the
// next command may take from the pool, used by another session meanwhile.
func (s *Session) shed() {
	s.dropLong()
	s.tele.shed()
	if s.work != nil {
		s.srv.shardWork.Put(s.work)
		s.work = nil
	}
}
