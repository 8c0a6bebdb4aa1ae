package frontend

import (
	"iter"
	"sync"
)

// sessionTable is a server's sessions by connection id: maps under a
// mutex, a few of them so that logins on many cores do not queue on one
// lock. Not a sync.Map: its entries cost about 110 bytes each, a plain
// map's about 25, for every idle client (issue 23).
type sessionTable struct {
	shards [sessionShards]sessionShard
}

const sessionShards = 16

type sessionShard struct {
	mu sync.Mutex
	m  map[uint32]*Session
}

func (t *sessionTable) shard(id uint32) *sessionShard { return &t.shards[id%sessionShards] }

func (t *sessionTable) store(s *Session) {
	sh := t.shard(s.id)
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = make(map[uint32]*Session)
	}
	sh.m[s.id] = s
	sh.mu.Unlock()
}

func (t *sessionTable) delete(id uint32) {
	sh := t.shard(id)
	sh.mu.Lock()
	delete(sh.m, id)
	sh.mu.Unlock()
}

// load returns the session with connection id id, or nil.
func (t *sessionTable) load(id uint32) *Session {
	sh := t.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.m[id]
}

// each calls fn for every session until fn returns false, a shard at a
// time: the shard's sessions are copied into *buf (kept by the caller for
// its next call) and fn runs without the shard's lock, so that it may
// end sessions or take their locks. A session that arrives or leaves
// meanwhile may be seen or not.
func (t *sessionTable) each(buf *[]*Session, fn func(*Session) bool) {
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		all := (*buf)[:0]
		for _, s := range sh.m {
			all = append(all, s)
		}
		sh.mu.Unlock()
		*buf = all
		for j, s := range all {
			all[j] = nil // the caller's buffer keeps no session alive
			if !fn(s) {
				return
			}
		}
	}
}

// Sessions yields the server's live sessions that have logged in, for
// the admin views (SHOW SESSIONS, KILL SESSION).
func (s *Server) Sessions() iter.Seq[*Session] {
	return func(yield func(*Session) bool) {
		var buf []*Session
		s.sessions.each(&buf, func(sess *Session) bool {
			if !sess.loggedIn() {
				return true
			}
			return yield(sess)
		})
	}
}

// loggedIn reports whether the session is past its login. The user is
// set once by the login, read here by another goroutine under the
// session's lock.
func (s *Session) loggedIn() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.user != nil
}

// ID is the session's connection id.
func (s *Session) ID() uint32 { return s.id }

// Kill ends the session as KILL CONNECTION does: its running statement is
// interrupted and its client connection closed.
func (s *Session) Kill() { s.killConnection() }
