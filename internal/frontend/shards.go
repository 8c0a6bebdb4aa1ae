package frontend

import (
	"github.com/shardgate/shardgate/internal/backend"
)

// heldConn is a connection the session holds on a cluster other than the
// one its current statement runs on, with the reasons it is held. A
// session of a sharded schema holds one per shard its transaction (or
// other pinned state) touched; an unsharded session only while a
// statement on a sharded schema it names runs (shards_outside.go).
type heldConn struct {
	cl   *backend.Cluster
	conn *backend.Conn
	pins pinReason
}

// enter makes cl the cluster the session's statement runs on (s.cl): the
// connection held on the previous cluster, if any, is set aside with its
// pin reasons, and the one held on cl, if any, becomes s.pinned again.
// Everything that works on s.pinned and s.pins (routing, pinning, release,
// failure handling) thus sees the connection of the statement's cluster.
func (s *Session) enter(cl *backend.Cluster) {
	if cl == s.cl {
		return
	}
	// A connection set aside ends its use without release: its
	// LAST_INSERT_ID() is read now, if it keeps the session's.
	s.resolveLastID()
	if c := s.pinned; c != nil && c == s.warns.held {
		// The statement, reading no table, leaves the diagnostics c
		// holds in place, and runs elsewhere: they become the session's.
		s.saveDiagnostics(c)
		if s.pins &^= pinHeld; s.pins == 0 {
			s.release(c)
		}
	}
	if s.pinned != nil {
		s.others = append(s.others, heldConn{cl: s.cl, conn: s.pinned, pins: s.pins})
	}
	s.pinned, s.pins = nil, 0
	s.cl = cl
	s.repinCurrent()
}

// repinCurrent makes the connection held on the current cluster, if it
// is among the others, s.pinned: on entering a cluster, and when ending
// its transaction put it there (endHeld keeps a connection that other
// state still pins).
func (s *Session) repinCurrent() {
	for i, h := range s.others {
		if h.cl == s.cl {
			s.pinned, s.pins = h.conn, h.pins
			s.others = append(s.others[:i], s.others[i+1:]...)
			return
		}
	}
}

// heldPins is the union of the pin reasons of every connection the
// session holds, the current cluster's included.
func (s *Session) heldPins() pinReason {
	p := s.pins
	for _, h := range s.others {
		p |= h.pins
	}
	return p
}

// releaseOthers lets go of the connections held on other clusters, as
// close does with the current one.
func (s *Session) releaseOthers() {
	for _, h := range s.others {
		if h.pins&^pinHeld == 0 && !h.conn.Dirty {
			h.conn.Pool().Release(h.conn)
		} else {
			s.releaseDirty(h.conn)
		}
	}
	s.others = s.others[:0]
}
