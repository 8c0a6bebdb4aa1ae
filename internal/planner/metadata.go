package planner

import (
	"fmt"
	"github.com/shardgate/shardgate/internal/sequence"
	"github.com/shardgate/shardgate/internal/xa"
	"strings"
	"unicode/utf8"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/sharding"
)

// Metadata plans a statement about the schema's tables (SHOW [FULL]
// TABLES, SHOW TABLE STATUS, SHOW CREATE TABLE, SHOW [FULL] COLUMNS, SHOW
// INDEX, DESCRIBE/EXPLAIN tbl) run with db as the current database, so
// that it answers as one server holding the logical tables: see
// engine.Metadata. It returns no primitive for a statement that needs no
// rewriting, to run as written: on the default cluster when it is about
// another database or an unsharded or reference table, where the session
// is (session) when it is not about tables (SHOW VARIABLES, SHOW
// WARNINGS). SHOW statements that would list sub-tables and are not
// rewritten are refused.
func (k *Keyspace) Metadata(sql []byte, db string) (prim engine.Primitive, session bool, err error) {
	stmt, err := k.parser.p.ParseStrictDDL(string(sql))
	if err != nil {
		return nil, false, parseRefusal(err)
	}
	switch s := stmt.(type) {
	case *sqlparser.ExplainTab:
		prim, err = k.describe(s, db)
		return prim, false, err
	case *sqlparser.ExplainStmt:
		// (ReadExplain did not read it: EXPLAIN takes a SELECT, WITH,
		// INSERT, REPLACE, UPDATE or DELETE, see bind_explain.go.)
		return nil, false, notSupported(fmt.Sprintf("EXPLAIN of this statement on sharded schema %s", k.Schema.Name))
	case *sqlparser.Show:
		switch in := s.Internal.(type) {
		case *sqlparser.ShowBasic:
			switch in.Command {
			case sqlparser.Table, sqlparser.TableStatus, sqlparser.Column, sqlparser.Index, sqlparser.OpenTable, sqlparser.Trigger:
				prim, err = k.showBasic(in, db)
				return prim, false, err
			}
		case *sqlparser.ShowCreate:
			if in.Command == sqlparser.CreateTbl {
				prim, err = k.showCreate(in, db)
			}
			return prim, false, err
		}
	}
	return nil, true, nil
}

func (k *Keyspace) showBasic(s *sqlparser.ShowBasic, db string) (engine.Primitive, error) {
	switch s.Command {
	case sqlparser.Table, sqlparser.TableStatus:
		return k.tableList(s, db)
	case sqlparser.Column, sqlparser.Index:
		t, where := k.shardedTable(s.Tbl, s.DbName.String(), db)
		if t == nil {
			return nil, nil
		}
		show := "SHOW INDEX FROM "
		if s.Command == sqlparser.Column {
			show = "SHOW COLUMNS FROM "
			if s.Full {
				show = "SHOW FULL COLUMNS FROM "
			}
		}
		sub := sharding.SubTableName(t.Name, 0)
		q := show + quoteIdent(where) + "." + quoteIdent(sub) + showFilter(s.Filter)
		return k.onSubTableZero(t, q, engine.SubTableAnswer(t.Name, sub)), nil
	case sqlparser.OpenTable, sqlparser.Trigger:
		if k.inSchema(s.DbName.String(), db) {
			return nil, notSupported(fmt.Sprintf("SHOW %s on sharded schema %s", strings.ToUpper(strings.TrimSpace(s.Command.ToString())), k.Schema.Name))
		}
	}
	return nil, nil
}

func (k *Keyspace) describe(s *sqlparser.ExplainTab, db string) (engine.Primitive, error) {
	t, where := k.shardedTable(s.Table, "", db)
	if t == nil {
		return nil, nil
	}
	sub := sharding.SubTableName(t.Name, 0)
	q := "DESCRIBE " + quoteIdent(where) + "." + quoteIdent(sub)
	switch {
	case strings.HasPrefix(s.Wild, "'"): // a pattern, as Vitess encodes it
		q += " " + s.Wild
	case s.Wild != "": // a column name
		q += " " + quoteIdent(s.Wild)
	}
	return k.onSubTableZero(t, q, engine.SubTableAnswer(t.Name, sub)), nil
}

func (k *Keyspace) showCreate(s *sqlparser.ShowCreate, db string) (engine.Primitive, error) {
	t, where := k.shardedTable(s.Op, "", db)
	if t == nil {
		return nil, nil
	}
	sub := sharding.SubTableName(t.Name, 0)
	m := k.onSubTableZero(t, "SHOW CREATE TABLE "+quoteIdent(where)+"."+quoteIdent(sub), engine.CreateTable(t.Name, sub))
	for _, shard := range subTableShards(t) {
		var names []string
		for i := 0; i < t.Group.Layout.SubTables(); i++ {
			if t.Group.Layout.Shard(i) == shard {
				names = append(names, quoteString(sharding.SubTableName(t.Name, i)))
			}
		}
		q := "SELECT MAX(AUTO_INCREMENT) FROM information_schema.TABLES WHERE TABLE_SCHEMA = " + quoteString(where) +
			" AND TABLE_NAME IN (" + strings.Join(names, ", ") + ")"
		m.Parts = append(m.Parts, engine.Part{Cluster: k.Shard(shard), Query: comQuery(q)})
	}
	return m, nil
}

// tableList plans SHOW [FULL] TABLES and SHOW TABLE STATUS (see
// engine.TableList). A WHERE filter is refused: it would have to be
// evaluated on the logical tables' rows.
func (k *Keyspace) tableList(s *sqlparser.ShowBasic, db string) (engine.Primitive, error) {
	if !k.inSchema(s.DbName.String(), db) {
		return nil, nil
	}
	match := func([]byte) bool { return true }
	if f := s.Filter; f != nil {
		if f.Filter != nil {
			return nil, notSupported(fmt.Sprintf("SHOW TABLES or SHOW TABLE STATUS with WHERE on sharded schema %s (LIKE is supported)", k.Schema.Name))
		}
		pattern := []byte(f.Like)
		match = func(name []byte) bool { return likeMatch(name, pattern) }
	}
	show := "SHOW TABLES FROM "
	switch {
	case s.Command == sqlparser.TableStatus:
		show = "SHOW TABLE STATUS FROM "
	case s.Full:
		show = "SHOW FULL TABLES FROM "
	}
	q := comQuery(show + quoteIdent(k.Schema.Name))
	m := &engine.Metadata{Parts: []engine.Part{{Cluster: k.Default}},
		Build: engine.TableList(k.Schema, s.Command == sqlparser.TableStatus, match, sequence.DefaultTable, xa.DecisionTable)}
	for _, shard := range k.shardsWithSubTables() {
		m.Parts = append(m.Parts, engine.Part{Cluster: k.Shard(shard), Query: q})
	}
	return m, nil
}

// shardedTable resolves the table a SHOW or DESCRIBE names (in database
// from when given, else its qualifier, else db): the sharded table of
// the schema and the database's name as the client wrote it, or nil.
func (k *Keyspace) shardedTable(tn sqlparser.TableName, from, db string) (*sharding.SchemaTable, string) {
	where := db
	if !tn.Qualifier.IsEmpty() {
		where = tn.Qualifier.String()
	}
	if from != "" {
		where = from
	}
	if !inSchema(k.Schema, where) {
		return nil, ""
	}
	t := k.Schema.Table(tn.Name.String())
	if t == nil || t.Type != sharding.TableSharded {
		return nil, ""
	}
	return t, where
}

func (k *Keyspace) inSchema(from, db string) bool {
	if from == "" {
		from = db
	}
	return inSchema(k.Schema, from)
}

// onSubTableZero is a Metadata whose first part runs q on the shard of
// t's sub-table 0.
func (k *Keyspace) onSubTableZero(t *sharding.SchemaTable, q string, build func([]*mysql.ResultSet) (*mysql.ResultSet, error)) *engine.Metadata {
	cl := k.Shard(t.Group.Layout.Shard(0))
	return &engine.Metadata{Parts: []engine.Part{{Cluster: cl, Query: comQuery(q)}}, Build: build}
}

// shardsWithSubTables lists the shards that hold sub-tables of some
// sharded table, in the schema's order.
func (k *Keyspace) shardsWithSubTables() []string {
	holds := map[string]bool{}
	for _, t := range k.Schema.Tables() {
		if t.Type == sharding.TableSharded {
			for _, s := range subTableShards(t) {
				holds[s] = true
			}
		}
	}
	var out []string
	for _, s := range k.Schema.Shards {
		if holds[s] {
			out = append(out, s)
		}
	}
	return out
}

// subTableShards lists the shards holding t's sub-tables, in layout order.
func subTableShards(t *sharding.SchemaTable) []string {
	var out []string
	for i := 0; i < t.Group.Layout.SubTables(); i++ {
		if s := t.Group.Layout.Shard(i); len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	return out
}

// showFilter writes a SHOW statement's LIKE or WHERE back.
func showFilter(f *sqlparser.ShowFilter) string {
	switch {
	case f == nil:
		return ""
	case f.Filter != nil:
		return " WHERE " + sqlparser.String(f.Filter)
	}
	return " LIKE " + quoteString(f.Like)
}

func quoteString(s string) string { return sqlparser.String(sqlparser.NewStrLiteral(s)) }

func comQuery(q string) []byte { return append([]byte{mysql.ComQuery}, q...) }

// likeMatch reports whether name matches a SHOW … LIKE pattern as the
// server matches table names on a case-sensitive file system
// (lower_case_table_names = 0): '%' any characters, '_' one character,
// '\' escapes the next, everything else exactly.
func likeMatch(name, pattern []byte) bool {
	for len(pattern) > 0 {
		switch c := pattern[0]; {
		case c == '%':
			for len(pattern) > 0 && pattern[0] == '%' {
				pattern = pattern[1:]
			}
			if len(pattern) == 0 {
				return true
			}
			for i := 0; i <= len(name); {
				if likeMatch(name[i:], pattern) {
					return true
				}
				if i == len(name) {
					break
				}
				_, n := utf8.DecodeRune(name[i:])
				i += n
			}
			return false
		case c == '_':
			if len(name) == 0 {
				return false
			}
			_, n := utf8.DecodeRune(name)
			name, pattern = name[n:], pattern[1:]
		default:
			if c == '\\' && len(pattern) > 1 {
				pattern = pattern[1:]
			}
			if len(name) == 0 || name[0] != pattern[0] {
				return false
			}
			name, pattern = name[1:], pattern[1:]
		}
	}
	return len(name) == 0
}

// tableListing are the information_schema tables with a row per table
// (or per column, index, constraint… of one): on a sharded schema the
// server would list sub-tables in them.
var tableListing = map[string]bool{
	"TABLES": true, "COLUMNS": true, "STATISTICS": true, "KEY_COLUMN_USAGE": true, "PARTITIONS": true,
	"TABLE_CONSTRAINTS": true, "REFERENTIAL_CONSTRAINTS": true, "CHECK_CONSTRAINTS": true, "TRIGGERS": true,
	"VIEWS": true, "COLUMN_PRIVILEGES": true, "TABLE_PRIVILEGES": true, "TABLE_STATISTICS": true,
	"INDEX_STATISTICS": true,
}

// tableListing returns the first reference to an information_schema
// table listing tables, or nil.
func (a *analyzer) tableListing(other []*tableRef) *tableRef {
	for _, r := range other {
		if strings.EqualFold(r.db, "information_schema") && tableListing[strings.ToUpper(r.name)] {
			return r
		}
	}
	return nil
}
