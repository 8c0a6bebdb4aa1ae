package frontend

import (
	"strconv"
	"strings"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/planner"
	"github.com/shardgate/shardgate/internal/router"
)

// A statement that names a sharded schema other than the session's
// database (SELECT … FROM oq.orders in a session on another database, or
// on none; SHOW TABLES FROM oq; an information_schema query about oq) is
// planned by that schema (planner.Keyspaces.Choose decides which) and runs
// on its clusters, with the schema's name as their connections' database
// when the statement names only its tables: those clusters need not hold
// the session's database. Afterwards the session is back where it was,
// its diagnostics collected as a statement in parts' are, so that its
// other commands (COM_FIELD_LIST, COM_INIT_DB, SHOW WARNINGS) go where
// they did.

// chooseKeyspace returns the schema that plans statement p of the session,
// whose database's schema is own (nil: the database is not sharded), or
// the refusal of the statement.
func (s *Session) chooseKeyspace(own *planner.Keyspace, st router.Stmt, p []byte) (*planner.Keyspace, *mysql.SQLError) {
	if s.stream != nil {
		return own, nil
	}
	c := s.binder().Choose(s.db, st, p[1:], s.home)
	if c.Err != nil {
		return nil, asSQLError(c.Err)
	}
	if c.Outside {
		if e := s.goOutside(c.KS, c.DB); e != nil {
			return nil, e
		}
	}
	return c.KS, nil
}

// outsidePrepared readies the execution of ps when it was prepared on a
// schema the session's database was not, or is no longer (USE since):
// its parts run with the database it was prepared in.
func (s *Session) outsidePrepared(ps *pstmt) *mysql.SQLError {
	switch {
	case ps.sh == nil:
		return nil
	case ps.sh.outside:
		return s.goOutside(ps.sh.prep.KS, ps.sh.db)
	case ps.db != s.db:
		return s.goOutside(ps.sh.prep.KS, ps.db)
	}
	return nil
}

// goOutside readies a statement on schema ks, not the session's, whose
// connections use database db ("": the session's). A transaction (or
// table locks) of the session cannot take it in unless ks lives on the
// session's own schema's clusters: a session on an unsharded database
// has them on its own cluster, where its COMMIT goes, and another
// schema's shards are none of its schema's, whose cross-shard rules and
// XA recovery cover its own shards only. Such a statement is refused.
func (s *Session) goOutside(ks *planner.Keyspace, db string) *mysql.SQLError {
	own := s.srv.keyspaces().Lookup(s.db)
	held := s.inTrx() || !s.autocommit()
	if s.heldPins()&pinLock != 0 || held && (own == nil || !within(ks, own)) {
		return mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax, "This version of shardgate doesn't yet support '%s'",
			"a statement on sharded schema "+ks.Schema.Name+" inside a transaction, with autocommit off or with tables locked, in a session whose database is "+
				quoteDB(s.db)+" (USE "+ks.Schema.Name+", or run it outside the transaction)")
	}
	s.partDB, s.outsideFrom = db, s.cl
	return nil
}

// within reports whether every cluster of schema ks is a shard of own.
func within(ks, own *planner.Keyspace) bool {
	if own.Shard(ks.Schema.DefaultCluster) == nil {
		return false
	}
	for _, name := range ks.Schema.Shards {
		if own.Shard(name) == nil {
			return false
		}
	}
	return true
}

// quoteDB names database db in a message.
func quoteDB(db string) string {
	if db == "" {
		return "none"
	}
	return "'" + db + "'"
}

// leaveOutside ends a statement planned on another schema and returns
// the session to the cluster it was on. The diagnostics the next
// statement may read become the session's, as those of a statement in
// parts are: the warnings (SHOW WARNINGS, @@warning_count) and
// FOUND_ROWS() after SQL_CALC_FOUND_ROWS are read from the connection
// that ran it, which is let go unless other state pins it, and ROW_COUNT()
// and FOUND_ROWS() are answered from what the session learnt. Its
// database is not the session's, and the session's next statement there
// (or on a connection pinned on its own cluster) would not see them.
func (s *Session) leaveOutside() {
	from, db := s.outsideFrom, s.partDB
	s.partDB, s.outsideFrom = "", nil
	if s.cl == from && db == "" {
		return
	}
	if c := s.pinned; c != nil && s.pins&pinHeld != 0 {
		if s.cmd.st.Flags&router.FlagCalcFoundRows != 0 {
			if rows, err := c.QueryRows("SELECT FOUND_ROWS()"); err == nil && len(rows) == 1 {
				if n, err := strconv.ParseUint(rows[0][0], 10, 64); err == nil {
					s.lastFoundRows = n
				}
			}
		}
		if !s.warns.valid {
			s.collectWarnings(c, 0, nil)
		}
		if s.pins &^= pinHeld; s.pins == 0 {
			s.pinned = nil
			s.release(c)
		}
	}
	if !s.warns.valid {
		s.warns.rows, s.warns.count, s.warns.valid = s.warns.rows[:0], 0, true
	}
	s.last, s.rowsProbed = nil, true
	s.enter(from)
}

// connDB is the database the current statement's connections use.
func (s *Session) connDB() string {
	if s.partDB != "" {
		return s.partDB
	}
	return s.db
}

// namesSchema reports whether st may name a sharded schema other than
// the session's database, or information_schema: its filter of
// qualifying names (router.Stmt.Schemas) holds one of theirs. A point
// select on a sharded table qualifies no name, and pays one test.
func (s *Session) namesSchema(st router.Stmt) bool {
	if st.Schemas == 0 {
		return false
	}
	for _, f := range s.srv.schemaFilters() {
		if st.Schemas&f.Bits == f.Bits && f.Name != s.db {
			return true
		}
	}
	return false
}

// explainsOutside reports whether a statement hinted /* shardgate:explain
// */ in a session whose database is not sharded names a sharded schema,
// whose plan it then answers with, as in a session on the schema.
func (s *Session) explainsOutside(st router.Stmt, p []byte) bool {
	return s.namesSchema(st) && s.binder().Choose(s.db, st, p[1:], s.home).KS != nil
}

// onInformationSchema reports whether the session's database is
// information_schema, whose tables a query names unqualified, when
// sharded schemas are served.
func (s *Session) onInformationSchema() bool {
	return len(s.srv.schemaFilters()) > 0 && len(s.db) == len("information_schema") && strings.EqualFold(s.db, "information_schema")
}
