package frontend

import "time"

// Activity is what a session is doing now, for SHOW SESSIONS: read by
// another goroutine, so every field is a copy.
type Activity struct {
	ID     uint32
	User   string
	Client string // the client's address
	DB     string
	State  string // idle | running | in transaction | pinned (reason)
	Since  time.Time
	// Statement is the current (or, when idle, the last) statement, cut
	// to a few hundred bytes; Digest its router.Stmt.Digest.
	Statement string
	Digest    uint64
	Backends  []string // addresses of the backend connections it holds or runs on
}

// Activity returns a snapshot of the session. STUB: the telemetry and
// admin helpers fill it in; the field names are the contract.
func (s *Session) Activity() Activity {
	return Activity{ID: s.id, Client: s.remote}
}
