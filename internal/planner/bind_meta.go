package planner

import (
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/router"
)

// Statements about the schema rather than rows: SHOW and DESCRIBE
// (Keyspace.Metadata) and queries on information_schema's table listings
// (Keyspace.InfoSchema), answered with the logical tables.

// metadata binds SHOW and DESCRIBE: rewritten to show the logical tables
// (Keyspace.Metadata), else run as written: where the session is when
// not about tables (SHOW VARIABLES, SHOW WARNINGS), on the default
// cluster when about tables that are not sharded.
func (b *Binder) metadata(ks *Keyspace, st router.Stmt, sql []byte, s Session) engine.Primitive {
	prim, session, err := ks.Metadata(sql, s.DB())
	switch {
	case err != nil:
		return b.refuseErr(err)
	case prim != nil:
		return prim
	case !session:
		return b.routeTo(ks.Default, st, s)
	}
	return b.here(st, s)
}

// infoSchema binds a query on information_schema's table listings
// (Keyspace.InfoSchema). User variables are refused: the query runs on
// several shards' connections, where they are not all set.
func (b *Binder) infoSchema(ks *Keyspace, st router.Stmt, sql []byte, s Session) engine.Primitive {
	if st.Flags&router.FlagUserVar != 0 {
		return b.refuseUserVars()
	}
	prim, err := ks.InfoSchema(sql, s.DB())
	if err != nil {
		return b.refuseErr(err)
	}
	return prim
}
