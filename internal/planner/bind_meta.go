package planner

import (
	"bytes"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sharding"
)

// Statements about the schema rather than rows: SHOW and DESCRIBE
// (Keyspace.Metadata), queries on information_schema's table listings
// (Keyspace.InfoSchema) and COM_FIELD_LIST, answered with the logical
// tables.

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

// FieldList plans COM_FIELD_LIST p (table NUL wildcard) on the schema: a
// sharded table's fields are those of its sub-table 0, on that
// sub-table's shard, the command rewritten to name it (the relay gives
// their definitions the logical table's name); other tables are on the
// default cluster, and the command goes as sent.
func (k *Keyspace) FieldList(p []byte) (cl *backend.Cluster, q []byte) {
	cl, q = k.Default, p
	if end := bytes.IndexByte(p[1:], 0); end >= 0 {
		if t := k.Schema.TableBytes(p[1 : 1+end]); t != nil && t.Type == sharding.TableSharded {
			q = append([]byte{mysql.ComFieldList}, sharding.SubTableName(t.Name, 0)...)
			q = append(q, p[1+end:]...)
			cl = k.Shard(t.Group.Layout.Shard(0))
		}
	}
	return cl, q
}
