package frontend

import "iter"

// Sessions yields the server's live sessions that have logged in, for
// the admin views (SHOW SESSIONS, KILL SESSION).
func (s *Server) Sessions() iter.Seq[*Session] {
	return func(yield func(*Session) bool) {
		s.sessions.Range(func(_, v any) bool {
			sess := v.(*Session)
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
