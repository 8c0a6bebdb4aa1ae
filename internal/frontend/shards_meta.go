package frontend

import (
	"bytes"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sharding"
)

// comFieldList runs COM_FIELD_LIST (table NUL wildcard). On a sharded
// schema, a sharded table's fields are those of its sub-table 0, on that
// sub-table's shard, and the relay gives their definitions the logical
// table's name; other tables are on the default cluster.
func (s *Session) comFieldList(p []byte) bool {
	ks := s.srv.opt.Keyspaces.Lookup(s.db)
	if ks == nil {
		return s.forward(p, needDB, relayFieldList)
	}
	cl := ks.Default
	if end := bytes.IndexByte(p[1:], 0); end >= 0 {
		if t := ks.Schema.TableBytes(p[1 : 1+end]); t != nil && t.Type == sharding.TableSharded {
			sub := sharding.SubTableName(t.Name, 0)
			q := append([]byte{mysql.ComFieldList}, sub...)
			p = append(q, p[1+end:]...)
			cl = ks.Shard(t.Group.Layout.Shard(0))
		}
	}
	s.enter(cl)
	if e := s.routeQuery(false); e != nil {
		return s.writeErr(e)
	}
	return s.execute(p, needDB, relayFieldList, router.Stmt{})
}
