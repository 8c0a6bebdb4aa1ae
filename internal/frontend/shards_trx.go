package frontend

import (
	"bytes"
	"slices"
	"strings"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sharding"
)

// joinTransaction prepares a statement on a shard the session's open
// transaction has not touched yet: the connection it gets opens the
// transaction first, as the client's BEGIN did (in the round trip that
// syncs its state), and stays pinned. It records the client's BEGIN, on a
// sharded schema, to repeat it so.
func (s *Session) joinTransaction(q []byte) {
	if len(s.srv.keyspaces()) == 0 {
		return
	}
	switch s.cmd.st.Kind {
	case router.KindBegin:
		// Not a BEGIN with more statements after it: those must run once.
		if len(q) > 0 && q[0] == mysql.ComQuery && s.stream == nil && s.cmd.st.Flags&router.FlagMultiStatement == 0 {
			s.beginSQL = append(s.beginSQL[:0], q[1:]...)
		}
		// SET TRANSACTION before it is this transaction's: each shard it
		// reaches gets it before its BEGIN.
		s.trxCharSQL = append(s.trxCharSQL[:0], s.nextTrxSQL...)
		s.nextTrxSQL = s.nextTrxSQL[:0]
		s.savepoints = s.savepoints[:0]
		s.trxWriter, s.trxWrote = nil, s.trxWrote[:0] // a new transaction has written nowhere
		return
	case router.KindSet:
		if s.cmd.st.Flags&router.FlagTrxIsolationSet != 0 && len(q) > 0 && q[0] == mysql.ComQuery &&
			s.stream == nil && s.cmd.st.Flags&router.FlagMultiStatement == 0 {
			s.nextTrxSQL = append(s.nextTrxSQL[:0], q[1:]...)
		}
	default:
		// Any other statement starts (and ends) a transaction of its own
		// or runs in the open one: SET TRANSACTION is spent.
		s.nextTrxSQL = s.nextTrxSQL[:0]
	case router.KindCommit, router.KindRollback:
		// The transaction ends: the next one has written nowhere. (One
		// over several shards ends in EndTransaction, which forgets them
		// too.)
		s.trxWriter, s.trxWrote = nil, s.trxWrote[:0]
		return
	}
	if s.beginPending && s.heldPins()&pinTrx == 0 {
		// The first statement of a transaction whose BEGIN was answered:
		// it opens here, as a local transaction (the coordinator of an
		// atomic one). beginPending stays until a connection holds it.
		s.pins |= pinTrx
		s.cmd.n |= needBegin
		return
	}
	if s.pins&pinTrx == 0 && len(s.others) > 0 && s.heldPins()&pinTrx != 0 {
		s.pins |= pinTrx
		s.cmd.n |= needBegin
		s.startBranch()
	}
}

// inTrx reports whether the session is in a transaction: one a backend
// connection holds, or one whose BEGIN was answered and whose first
// statement has not run yet.
func (s *Session) inTrx() bool { return s.beginPending || s.heldPins()&pinTrx != 0 }

// BEGIN on a sharded schema is answered at once and the transaction
// opens on the shard its first statement runs on, with that statement's
// round trip (as the BEGIN of a shard the transaction reaches later
// always did): a transaction that stays on one shard costs no round trip
// to another, and under cross_shard_writes: atomic, the shard it opened
// on is the one it writes on, which commits without XA. A BEGIN that the
// server must see at once is relayed instead: one that commits an open
// transaction or unlocks tables, one with a consistent snapshot (taken
// at BEGIN), one whose SET TRANSACTION is pending on a connection, one
// with more statements or comments.

// lazyBegin and lazyEnd are the primitives of a BEGIN answered at once,
// and of a COMMIT or ROLLBACK of a transaction whose first statement
// never came.
type (
	lazyBegin struct{}
	lazyEnd   struct{}
)

func (lazyBegin) Execute(c engine.Cursor, q []byte) bool { return c.(*Session).beginLater(q) }
func (lazyEnd) Execute(c engine.Cursor, _ []byte) bool   { return c.(*Session).endUnbegun() }

// deferBegin reports whether BEGIN p may be answered at once.
func (s *Session) deferBegin(st router.Stmt, p []byte) bool {
	return p[0] == mysql.ComQuery && s.stream == nil && st.Flags&router.FlagMultiStatement == 0 &&
		s.heldPins()&^pinSession == 0 && len(s.nextTrxSQL) == 0 && plainBegin(p[1:])
}

// plainBegin reports BEGIN [WORK] and START TRANSACTION [READ WRITE |
// READ ONLY], without comments. It allocates nothing: every BEGIN of a
// sharded schema goes through it.
func plainBegin(sql []byte) bool {
	if bytes.ContainsAny(sql, "#/-") {
		return false
	}
	var w [4][]byte
	n := 0
	for i := 0; i < len(sql); {
		for i < len(sql) && isBlankOrSemi(sql[i]) {
			i++
		}
		start := i
		for i < len(sql) && !isBlankOrSemi(sql[i]) {
			i++
		}
		if i == start {
			break
		}
		if n == len(w) {
			return false
		}
		w[n] = sql[start:i]
		n++
	}
	switch {
	case n == 1 || n == 2 && wordIs(w[1], "WORK"):
		return wordIs(w[0], "BEGIN")
	case n == 2 || n == 4 && wordIs(w[2], "READ") && (wordIs(w[3], "WRITE") || wordIs(w[3], "ONLY")):
		return wordIs(w[0], "START") && wordIs(w[1], "TRANSACTION")
	}
	return false
}

func isBlankOrSemi(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ';' }

// wordIs compares w with the upper-case word upper, ASCII letters
// without regard to case.
func wordIs(w []byte, upper string) bool {
	if len(w) != len(upper) {
		return false
	}
	for i, c := range w {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != upper[i] {
			return false
		}
	}
	return true
}

// beginLater answers BEGIN q and keeps it for the shard the
// transaction's first statement runs on.
func (s *Session) beginLater(q []byte) bool {
	s.beginSQL = append(s.beginSQL[:0], q[1:]...)
	s.trxCharSQL = s.trxCharSQL[:0]
	s.savepoints = s.savepoints[:0]
	s.trxWriter, s.trxWrote = nil, s.trxWrote[:0]
	s.beginPending = true
	s.lastRowCount = 0
	return s.writeOK(&mysql.OKPacket{Status: s.status()})
}

// endUnbegun answers the COMMIT or ROLLBACK of a transaction that never
// reached a shard: nothing to end.
func (s *Session) endUnbegun() bool {
	s.beginPending = false
	s.lastRowCount = 0
	return s.writeOK(&mysql.OKPacket{Status: s.status()})
}

// beginTaken ends beginPending once a connection holds the transaction
// its BEGIN opened (after the statement that took it there).
func (s *Session) beginTaken() {
	if s.beginPending && s.heldPins()&pinTrx != 0 {
		s.beginPending = false
	}
}

// appendBegin appends the statement that opens the session's transaction
// on another shard to a state-sync batch.
func (s *Session) appendBegin(b []byte) []byte {
	if len(b) > 0 {
		b = append(b, ';')
	}
	if len(s.trxCharSQL) > 0 {
		b = append(b, s.trxCharSQL...)
		b = append(b, ';')
	}
	if xb, ok := s.appendXAStart(b); ok {
		b = xb
	} else if len(s.beginSQL) == 0 {
		b = append(b, "START TRANSACTION"...)
	} else {
		b = append(b, s.beginSQL...)
	}
	for _, name := range s.savepoints {
		b = append(b, ";SAVEPOINT `"...)
		b = append(b, strings.ReplaceAll(name, "`", "``")...)
		b = append(b, '`')
	}
	return b
}

// planSavepoint plans SAVEPOINT, ROLLBACK TO SAVEPOINT and RELEASE
// SAVEPOINT on a sharded schema. A transaction over several shards has
// each savepoint on every shard: the statement runs on each shard in the
// transaction (engine.Savepoint), and a shard the transaction reaches
// later gets the savepoints set before, right after its BEGIN. Nothing of
// the transaction had run there before them, so rolling back to one
// undoes all of that shard's part after it, as one server would.
// A prepared one in a transaction on one shard runs there as any
// statement about the session (nil: the planner's Binder plans it).
func (s *Session) planSavepoint(p []byte) engine.Primitive {
	if p[0] != mysql.ComQuery {
		if len(s.others) == 0 {
			return nil
		}
		return s.notSupported("a prepared savepoint statement in a transaction over several shards")
	}
	if _, _, ok := router.Savepoint(p[1:]); !ok {
		return s.notSupported("this form of savepoint statement on a sharded schema")
	}
	return engine.Savepoint{}
}

// noteSavepoint keeps the session's list of savepoints in step with the
// savepoint statement sql: SAVEPOINT x adds x (after dropping an older x,
// which it replaces), ROLLBACK TO x drops those set after x, RELEASE x
// drops x and those after it. Savepoint names are not case-sensitive.
func (s *Session) noteSavepoint(sql []byte) {
	verb, name, ok := router.Savepoint(sql)
	if !ok {
		return
	}
	i := slices.IndexFunc(s.savepoints, func(n string) bool { return strings.EqualFold(n, name) })
	switch verb {
	case router.SavepointSet:
		if i >= 0 {
			s.savepoints = slices.Delete(s.savepoints, i, i+1)
		}
		s.savepoints = append(s.savepoints, name)
	case router.SavepointRollback:
		if i >= 0 {
			s.savepoints = s.savepoints[:i+1]
		}
	case router.SavepointRelease:
		if i >= 0 {
			s.savepoints = s.savepoints[:i]
		}
	}
}

// crossShardWrite returns the refusal of a write on cl inside a
// transaction that already wrote on another shard (cross_shard_writes:
// refuse), or nil. The transaction stays open for the client to end. It
// records the shards the transaction writes (trxWriter, the last;
// trxWrote, all of them when the schema allows several).
func (s *Session) crossShardWrite(cl *backend.Cluster, st router.Stmt) *mysql.SQLError {
	if !s.inTrx() && s.autocommit() {
		s.trxWriter, s.trxWrote = nil, s.trxWrote[:0]
		return nil
	}
	if !router.IsWrite(st) {
		return nil
	}
	if s.trxWriter == nil || s.trxWriter == cl {
		s.trxWriter = cl
		return nil
	}
	ks := s.srv.keyspaces().Lookup(s.db)
	if ks != nil && ks.Schema.CrossShardWrites == sharding.CrossShardAtomic && s.srv.opt.XA != nil {
		if e := s.atomicWrite(cl); e != nil {
			return e
		}
	}
	if ks != nil && ks.Schema.CrossShardWrites != sharding.CrossShardRefuse {
		if !slices.Contains(s.trxWrote, s.trxWriter) {
			s.trxWrote = append(s.trxWrote, s.trxWriter)
		}
		s.trxWriter = cl
		return nil
	}
	return mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax,
		"shardgate: this transaction already wrote to shard %s; a write to shard %s in the same transaction is refused (cross_shard_writes: refuse). COMMIT or ROLLBACK first",
		s.trxWriter.Name, cl.Name)
}
