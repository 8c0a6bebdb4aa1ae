package frontend

import (
	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
	"slices"
)

// joinTransaction prepares a statement on a shard the session's open
// transaction has not touched yet: the connection it gets opens the
// transaction first, as the client's BEGIN did (in the round trip that
// syncs its state), and stays pinned. It records the client's BEGIN, on a
// sharded schema, to repeat it so.
func (s *Session) joinTransaction(q []byte) {
	if len(s.srv.opt.Keyspaces) == 0 {
		return
	}
	switch s.cmd.st.Kind {
	case router.KindBegin:
		// Not a BEGIN with more statements after it: those must run once.
		if len(q) > 0 && q[0] == mysql.ComQuery && s.stream == nil && s.cmd.st.Flags&router.FlagMultiStatement == 0 {
			s.beginSQL = append(s.beginSQL[:0], q[1:]...)
		}
		return
	case router.KindCommit, router.KindRollback:
		return
	}
	if s.pins&pinTrx == 0 && len(s.others) > 0 && s.heldPins()&pinTrx != 0 {
		s.pins |= pinTrx
		s.cmd.n |= needBegin
	}
}

// appendBegin appends the statement that opens the session's transaction
// on another shard to a state-sync batch.
func (s *Session) appendBegin(b []byte) []byte {
	if len(b) > 0 {
		b = append(b, ';')
	}
	if len(s.beginSQL) == 0 {
		return append(b, "START TRANSACTION"...)
	}
	return append(b, s.beginSQL...)
}

// crossShardWrite returns the refusal of a write on cl inside a
// transaction that already wrote on another shard (cross_shard_writes:
// refuse), or nil. The transaction stays open for the client to end. It
// records the shards the transaction writes (trxWriter, the last;
// trxWrote, all of them when the schema allows several).
func (s *Session) crossShardWrite(cl *backend.Cluster, st router.Stmt) *mysql.SQLError {
	if s.heldPins()&pinTrx == 0 && s.autocommit() {
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
	if ks := s.srv.opt.Keyspaces.Lookup(s.db); ks != nil && ks.Schema.CrossShardWrites {
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
