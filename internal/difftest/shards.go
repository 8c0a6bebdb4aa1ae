package difftest

import (
	"fmt"
	"strings"

	"github.com/shardgate/shardgate/internal/sharding"
)

// ShardDDL spreads the generator's schema statements (Generator.Schema)
// over the shards of schema as shardgate's DDL fan-out would: a sharded
// table's statement once per sub-table, on the shard holding it, with the
// sub-table's name; a reference table's on every shard; any other table's
// on the default cluster. It returns the statements per cluster, in order.
// Tests use it to create the sub-tables directly on the shards, before the
// proxy starts (so it learns the key types at once).
func ShardDDL(schema *sharding.Schema, stmts []Statement) (map[string][]string, error) {
	out := map[string][]string{}
	for _, st := range stmts {
		prefix, name, ok := ddlTable(st.SQL)
		if !ok {
			return nil, fmt.Errorf("shard DDL: %.40q names no table this helper knows how to rename", st.SQL)
		}
		rest := st.SQL[len(prefix)+len(name):]
		t := schema.Table(name)
		switch {
		case t == nil:
			out[schema.DefaultCluster] = append(out[schema.DefaultCluster], st.SQL)
		case t.Type == sharding.TableReference:
			for _, s := range schema.Shards {
				out[s] = append(out[s], st.SQL)
			}
		default:
			for i := range t.Group.Layout.SubTables() {
				sub, shard := t.SubTable(i)
				out[shard] = append(out[shard], prefix+sub+rest)
			}
		}
	}
	return out, nil
}

// ddlTable splits the schema statements Generator.Schema writes into the
// text before the table's name and the name.
func ddlTable(sql string) (prefix, name string, ok bool) {
	for _, p := range []string{"DROP TABLE IF EXISTS ", "CREATE TABLE "} {
		if rest, found := strings.CutPrefix(sql, p); found {
			end := strings.IndexAny(rest, " (")
			if end < 0 {
				end = len(rest)
			}
			return p, rest[:end], end > 0
		}
	}
	return "", "", false
}
