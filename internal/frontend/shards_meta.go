package frontend

import (
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sharding"
)

// comFieldList runs COM_FIELD_LIST (table NUL wildcard): on a sharded
// schema where the planner says (planner.Keyspace.FieldList).
func (s *Session) comFieldList(p []byte) bool {
	ks := s.srv.keyspaces().Lookup(s.db)
	if ks == nil {
		return s.forward(p, needDB, relayFieldList)
	}
	cl, p := ks.FieldList(p)
	s.enter(cl)
	if e := s.routeQuery(false); e != nil {
		return s.writeErr(e)
	}
	return s.execute(p, needDB, relayFieldList, router.Stmt{})
}

// tableRenamer is the session's renamer of sub-tables in column
// definitions, made once the proxy has a sharded schema: a reload may add
// the first after the session logged in.
func (s *Session) tableRenamer() mysql.TableRenamer {
	if s.renamer == nil && len(s.srv.keyspaces()) > 0 {
		s.renamer = s.renameSubTable
	}
	return s.renamer
}

// renameSubTable gives a column definition naming a sub-table of a sharded
// schema its logical table's name, as one server holding every row would:
// GUI grids build their UPDATEs from it.
func (s *Session) renameSubTable(schema, orgTable []byte) ([]byte, bool) {
	if len(schema) == 0 {
		// A derived table's column: MariaDB names the base table it
		// comes from, in no schema (the statement's database's).
		schema = []byte(s.db)
	}
	ks := s.srv.keyspaces()[string(schema)]
	if ks == nil {
		return nil, false
	}
	name, ok := sharding.LogicalName(orgTable)
	if !ok {
		return nil, false
	}
	t := ks.Schema.TableBytes(name)
	if t == nil || t.Type != sharding.TableSharded {
		return nil, false
	}
	return name, true
}
