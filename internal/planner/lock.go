package planner

import (
	"fmt"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/sharding"
)

// LockTables plans LOCK TABLES in a session on schema k (database db):
// one LOCK TABLES per cluster holding some of what it names, each naming
// what of the listed tables is there (a sharded table's sub-tables on
// their shards, with its alias and lock type; a reference table's copy on
// every shard), the other tables on the default cluster. The parts are in
// the order of the schema's shards, the default cluster's last unless it
// is a shard.
func (k *Keyspace) LockTables(sql []byte, db string) ([]engine.Part, error) {
	stmt, err := k.parser.p.ParseStrictDDL(string(sql))
	if err != nil {
		return nil, parseRefusal(err)
	}
	lock, ok := stmt.(*sqlparser.LockTables)
	if !ok {
		return nil, notSupported(fmt.Sprintf("%s statements on sharded schema %s", kindOf(stmt), k.Schema.Name))
	}
	per := map[*backend.Cluster]*sqlparser.LockTables{}
	add := func(cl *backend.Cluster, item *sqlparser.TableAndLockType) {
		if per[cl] == nil {
			per[cl] = &sqlparser.LockTables{}
		}
		per[cl].Tables = append(per[cl].Tables, item)
	}
	for _, item := range lock.Tables {
		at, ok := item.Table.(*sqlparser.AliasedTableExpr)
		tn, isName := at.Expr.(sqlparser.TableName)
		if !ok || !isName {
			return nil, notSupported("LOCK TABLES of " + sqlparser.String(item.Table))
		}
		t := k.listedTable(tn, db)
		switch {
		case t == nil:
			add(k.Default, item)
		case t.Type == sharding.TableReference:
			for _, shard := range k.Schema.Shards {
				add(k.Shard(shard), item)
			}
		case !at.As.IsEmpty() && sharesShard(t.Group.Layout):
			// The statements would name each sub-table of a shard by the
			// alias, which locks one table.
			return nil, notSupported(fmt.Sprintf("LOCK TABLES … AS %s of sharded table %s, whose sub-tables share a shard (an alias locks one table; lock the table without one)", at.As.String(), t.Name))
		default:
			for i := 0; i < t.Group.Layout.SubTables(); i++ {
				name, shard := t.SubTable(i)
				sub := sqlparser.TableName{Name: sqlparser.NewIdentifierCS(name), Qualifier: tn.Qualifier}
				add(k.Shard(shard), &sqlparser.TableAndLockType{
					Table: &sqlparser.AliasedTableExpr{Expr: sub, As: at.As}, Lock: item.Lock})
			}
		}
	}
	var parts []engine.Part
	order := append([]*backend.Cluster{}, k.shardClusters()...)
	order = append(order, k.Default)
	for _, cl := range order {
		if l := per[cl]; l != nil {
			parts = append(parts, engine.Part{Cluster: cl, Query: comQuery(sqlparser.String(l))})
			delete(per, cl)
		}
	}
	return parts, nil
}

// resolvesIn reports whether a table name qualified by qualifier (""
// for none), read with db as the current database, names a table of
// schema: the session's database when unqualified, its qualifier else,
// compared as the server compares database names on Linux.
func resolvesIn(schema *sharding.Schema, qualifier, db string) bool {
	if qualifier == "" {
		return db == schema.Name
	}
	return qualifier == schema.Name
}

// listedTable is the listed table qualifier.name tn names in a session on
// database db, or nil (an unlisted table, or one of another database).
func (k *Keyspace) listedTable(tn sqlparser.TableName, db string) *sharding.SchemaTable {
	if !resolvesIn(k.Schema, tn.Qualifier.String(), db) {
		return nil
	}
	return k.Schema.Table(tn.Name.String())
}

// shardClusters are the clusters of the schema's shards, in its order.
func (k *Keyspace) shardClusters() []*backend.Cluster {
	cls := make([]*backend.Cluster, 0, len(k.Schema.Shards))
	for _, shard := range k.Schema.Shards {
		cls = append(cls, k.Shard(shard))
	}
	return cls
}
