package planner

// This file plans DDL on sharded schemas: a statement on a logical table
// becomes the statement on each of its sub-tables (renamed by the
// statement's Template), on the shard holding it; on a reference table
// and on the schema's database, the statement as written on every shard.

import (
	"context"
	"fmt"
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sharding"
)

// erKeyColumnDoesNotExist is MySQL's ER_KEY_COLUMN_DOES_NOT_EXITS (42000):
// what a server answers for an index on a column the table lacks, and
// what a sharded table's CREATE answers when its columns lack the key.
const erKeyColumnDoesNotExist uint16 = 1072

// DDLPlan is the plan of a DDL statement about a sharded schema.
type DDLPlan struct {
	Keyspace *Keyspace
	// Run runs the statement in parts; nil when it names no listed table
	// of the schema: it runs as written on Keyspace.Default.
	Run *engine.DDL
	// Learn lists the sharded tables the statement creates or alters:
	// their shard-key types are to be learnt again once it succeeded
	// (Keyspace.LearnKeyType).
	Learn []*sharding.SchemaTable
	// Created: Learn's tables were created, so a key type known before is
	// void. Like: created by CREATE TABLE … LIKE, whose columns, the key's
	// among them, are known only once it ran.
	Created, Like bool
}

// PlanDDL plans a DDL statement of a session whose current database is
// db: CREATE, ALTER, DROP, TRUNCATE and RENAME of tables (CREATE and DROP
// INDEX, which the parser reads as ALTER TABLE), and CREATE, ALTER and
// DROP DATABASE. It returns nil, nil for a statement that is not about a
// sharded schema, that it does not plan (CREATE VIEW, CREATE USER …) or
// that does not parse: the caller plans it as it would any other. A
// statement that cannot be run as one server would run it is refused with
// a *mysql.SQLError.
func (ks Keyspaces) PlanDDL(sql []byte, db string) (*DDLPlan, error) {
	if len(ks) == 0 {
		return nil, nil
	}
	var any *Keyspace
	for _, k := range ks {
		any = k
		break
	}
	sh := new(router.Shape)
	router.ScanShape(sql, sh)
	parsed, err := any.parser.Parse(sql, sh)
	if err != nil {
		return nil, nil
	}
	switch s := parsed.Stmt.(type) {
	case *sqlparser.CreateDatabase:
		return ks.database(s.DBName, "CREATE DATABASE")
	case *sqlparser.AlterDatabase:
		return ks.database(s.DBName, "ALTER DATABASE")
	case *sqlparser.DropDatabase:
		return ks.database(s.DBName, "DROP DATABASE")
	}
	k := ks.ddlKeyspace(parsed.Stmt, db)
	if k == nil {
		return nil, nil
	}
	d := &ddlPlanner{k: k, db: db, sql: sql, sh: sh, parsed: parsed}
	switch s := parsed.Stmt.(type) {
	case *sqlparser.CreateTable:
		return d.createTable(s)
	case *sqlparser.AlterTable:
		return d.alterTable(s)
	case *sqlparser.DropTable:
		return d.dropTable(s)
	case *sqlparser.TruncateTable:
		return d.single(s.Table, "TRUNCATE TABLE")
	case *sqlparser.RenameTable:
		return d.renameTable(s)
	}
	return nil, nil
}

// ddlKeyspace is the keyspace a table DDL is about: the one its (first)
// table is qualified with, else the session's.
func (ks Keyspaces) ddlKeyspace(stmt sqlparser.Statement, db string) *Keyspace {
	var tn sqlparser.TableName
	switch s := stmt.(type) {
	case *sqlparser.CreateTable:
		tn = s.Table
	case *sqlparser.AlterTable:
		tn = s.Table
	case *sqlparser.TruncateTable:
		tn = s.Table
	case *sqlparser.DropTable:
		tn = s.FromTables[0]
	case *sqlparser.RenameTable:
		tn = s.TablePairs[0].FromTable
	default:
		return nil
	}
	if k := ks.Lookup(tn.Qualifier.String()); k != nil {
		return k
	}
	return ks.Lookup(db)
}

// database plans CREATE, ALTER or DROP DATABASE: of a sharded schema, on
// every shard of it; of another database, not at all (nil).
func (ks Keyspaces) database(name sqlparser.IdentifierCS, verb string) (*DDLPlan, error) {
	k := ks.Lookup(name.String())
	if k == nil {
		return nil, nil
	}
	step := engine.DDLStep{Logical: k.Schema.Name}
	for _, shard := range k.Schema.Shards {
		step.Parts = append(step.Parts, engine.DDLPart{Part: engine.Part{Cluster: k.Shard(shard)}, Name: k.Schema.Name})
	}
	return &DDLPlan{Keyspace: k, Run: &engine.DDL{What: verb + " " + k.Schema.Name, Steps: []engine.DDLStep{step}}}, nil
}

// ddlPlanner plans one table DDL statement on keyspace k.
type ddlPlanner struct {
	k      *Keyspace
	db     string
	sql    []byte
	sh     *router.Shape
	parsed Parsed
}

// listed returns the schema's listed table qualifier.name names, or nil
// (an unlisted table, or one of another database), resolving names as
// the Template's renamer does.
func (d *ddlPlanner) listed(tn sqlparser.TableName) *sharding.SchemaTable {
	return d.k.listedTable(tn, d.db)
}

func (d *ddlPlanner) createTable(s *sqlparser.CreateTable) (*DDLPlan, error) {
	t := d.listed(s.Table)
	if t != nil {
		switch {
		case s.Temp:
			return nil, notSupported("CREATE TEMPORARY TABLE named like the listed table " + t.Name)
		case s.Select != nil:
			return nil, notSupported("CREATE TABLE … SELECT of listed table " + t.Name + "; create the table, then copy its rows")
		case t.Type == sharding.TableSharded && s.TableSpec != nil && !hasColumn(s.TableSpec.Columns, t.ShardKey):
			return nil, mysql.NewError(erKeyColumnDoesNotExist, mysql.StateSyntax,
				"Key column '%s' doesn't exist in table (it is the shard key of sharded table %s)", t.ShardKey, t.Name)
		}
	}
	p, err := d.single(s.Table, "CREATE TABLE")
	if err != nil || t == nil || t.Type != sharding.TableSharded {
		return p, err
	}
	p.Learn, p.Created, p.Like = []*sharding.SchemaTable{t}, true, s.OptLike != nil
	return p, nil
}

func hasColumn(cols []*sqlparser.ColumnDefinition, name string) bool {
	for _, c := range cols {
		if strings.EqualFold(c.Name.String(), name) {
			return true
		}
	}
	return false
}

func (d *ddlPlanner) alterTable(s *sqlparser.AlterTable) (*DDLPlan, error) {
	t := d.listed(s.Table)
	if t != nil {
		for _, o := range s.AlterOptions {
			if _, ok := o.(*sqlparser.RenameTableName); ok {
				return nil, renameRefusal(t.Name)
			}
			if col := alteredColumn(o); t.Type == sharding.TableSharded && strings.EqualFold(col, t.ShardKey) {
				return nil, notSupported(fmt.Sprintf("ALTER TABLE that drops, renames or redefines shard key column %s.%s (rows are placed by its type and value: create a new table and copy the rows)", t.Name, t.ShardKey))
			}
		}
	} else if renamesTo(s, d) != nil {
		return nil, renameRefusal(renamesTo(s, d).Name)
	}
	p, err := d.single(s.Table, "ALTER TABLE")
	if err != nil || t == nil || t.Type != sharding.TableSharded {
		return p, err
	}
	p.Learn = []*sharding.SchemaTable{t}
	return p, nil
}

// renamesTo returns the listed table an ALTER TABLE … RENAME TO names.
func renamesTo(s *sqlparser.AlterTable, d *ddlPlanner) *sharding.SchemaTable {
	for _, o := range s.AlterOptions {
		if r, ok := o.(*sqlparser.RenameTableName); ok {
			return d.listed(r.Table)
		}
	}
	return nil
}

// alteredColumn is the existing column an ALTER TABLE option drops,
// renames or redefines, or "".
func alteredColumn(o sqlparser.AlterOption) string {
	switch o := o.(type) {
	case *sqlparser.DropColumn:
		return o.Name.Name.String()
	case *sqlparser.ModifyColumn:
		return o.NewColDefinition.Name.String()
	case *sqlparser.ChangeColumn:
		return o.OldColumn.Name.String()
	case *sqlparser.RenameColumn:
		return o.OldName.Name.String()
	}
	return ""
}

// renameRefusal refuses renaming a listed table: the configuration names
// the table, so its sub-tables would be orphaned under the new name.
func renameRefusal(table string) error {
	return notSupported(fmt.Sprintf("renaming listed table %s: the configuration (schemas: tables:) names it, so a rename would leave the proxy looking for the old name; rename the sub-tables on their shards and the table in the configuration together", table))
}

func (d *ddlPlanner) renameTable(s *sqlparser.RenameTable) (*DDLPlan, error) {
	for _, pair := range s.TablePairs {
		for _, tn := range []sqlparser.TableName{pair.FromTable, pair.ToTable} {
			if t := d.listed(tn); t != nil {
				return nil, renameRefusal(t.Name)
			}
		}
	}
	return &DDLPlan{Keyspace: d.k}, nil
}

// dropTable plans DROP TABLE: one step per table, in the order named, so
// that each table's IF EXISTS note is counted once.
func (d *ddlPlanner) dropTable(s *sqlparser.DropTable) (*DDLPlan, error) {
	listed := false
	for _, tn := range s.FromTables {
		if t := d.listed(tn); t != nil {
			listed = true
			if s.Temp {
				return nil, notSupported("DROP TEMPORARY TABLE named like the listed table " + t.Name)
			}
		}
	}
	if !listed {
		return &DDLPlan{Keyspace: d.k}, nil
	}
	run := &engine.DDL{What: "DROP TABLE"}
	for _, tn := range s.FromTables {
		one := &sqlparser.DropTable{FromTables: sqlparser.TableNames{tn}, IfExists: s.IfExists, Comments: s.Comments}
		step, err := d.step(one, tn, Parsed{Stmt: one})
		if err != nil {
			return nil, err
		}
		run.Steps = append(run.Steps, step)
	}
	if len(s.FromTables) == 1 {
		run.What += " " + s.FromTables[0].Name.String()
	}
	return &DDLPlan{Keyspace: d.k, Run: run}, nil
}

// single plans a statement about one table, target: what it is named in
// errors with verb.
func (d *ddlPlanner) single(target sqlparser.TableName, verb string) (*DDLPlan, error) {
	if d.listed(target) == nil {
		if t := d.otherSharded(d.parsed.Stmt); t != nil {
			return nil, notSupported(fmt.Sprintf("%s of unlisted table %s naming sharded table %s", verb, target.Name.String(), t.Name))
		}
		return &DDLPlan{Keyspace: d.k}, nil
	}
	step, err := d.step(d.parsed.Stmt, target, d.parsed)
	if err != nil {
		return nil, err
	}
	return &DDLPlan{Keyspace: d.k, Run: &engine.DDL{What: verb + " " + target.Name.String(), Steps: []engine.DDLStep{step}}}, nil
}

// step plans stmt, the statement of one table target: on each sub-table
// of a sharded table, on every shard for a reference table, as written on
// the default cluster for an unlisted one. Other tables it names (LIKE,
// REFERENCES) must be where each part runs: sharded tables laid out as
// target (renamed alike), or reference tables.
func (d *ddlPlanner) step(stmt sqlparser.Statement, target sqlparser.TableName, parsed Parsed) (engine.DDLStep, error) {
	t := d.listed(target)
	step := engine.DDLStep{Logical: target.Name.String()}
	if t == nil {
		if o := d.otherSharded(stmt); o != nil {
			return step, notSupported(fmt.Sprintf("a statement on unlisted table %s naming sharded table %s", target.Name.String(), o.Name))
		}
		step.Parts = []engine.DDLPart{{Part: engine.Part{Cluster: d.k.Default, Query: queryPacket(sqlparser.String(stmt))}, Name: target.Name.String()}}
		return step, nil
	}
	if err := d.checkOthers(stmt, t); err != nil {
		return step, err
	}
	if t.Type == sharding.TableReference {
		var text []byte // the client's own statement, unless made up (DROP of several)
		if stmt != d.parsed.Stmt {
			text = queryPacket(sqlparser.String(stmt))
		}
		for _, shard := range d.k.Schema.Shards {
			step.Parts = append(step.Parts, engine.DDLPart{Part: engine.Part{Cluster: d.k.Shard(shard), Query: text}, Name: t.Name})
		}
		return step, nil
	}
	if name := namedForeignKey(stmt); name != "" && sharesShard(t.Group.Layout) {
		// InnoDB's constraint names are unique per database: the second
		// sub-table on a shard would fail (error 121) after the first.
		return step, notSupported(fmt.Sprintf("a named foreign key (CONSTRAINT %s) on sharded table %s, whose sub-tables share a database on a shard; leave the name out, and the server names it after each sub-table", name, t.Name))
	}
	tmpl, err := NewTemplate(parsed, d.sh, d.k.renamer(d.db))
	if err != nil {
		return step, err
	}
	step.Sum = true
	n := t.Group.Layout.SubTables()
	for i := 0; i < n; i++ {
		q := tmpl.Append([]byte{mysql.ComQuery}, d.sql, d.sh, []int{i})
		name, shard := t.SubTable(i)
		step.Parts = append(step.Parts, engine.DDLPart{Part: engine.Part{Cluster: d.k.Shard(shard), Query: q}, Name: name})
	}
	return step, nil
}

// checkOthers refuses a statement on listed table t that names tables
// its parts cannot see: on a sharded table's sub-table i, the others must
// be reference tables or sharded tables whose sub-table i is on the same
// shard; on a reference table's copies, reference tables.
func (d *ddlPlanner) checkOthers(stmt sqlparser.Statement, t *sharding.SchemaTable) error {
	var err error
	d.tables(stmt, func(tn sqlparser.TableName) {
		o := d.listed(tn)
		switch {
		case err != nil || o == t || o != nil && o.Type == sharding.TableReference:
		case o == nil:
			err = notSupported(fmt.Sprintf("a statement on listed table %s naming table %s, which is not on every shard of %s", t.Name, tn.Name.String(), d.k.Schema.Name))
		case t.Type == sharding.TableReference:
			err = notSupported(fmt.Sprintf("a statement on reference table %s naming sharded table %s", t.Name, o.Name))
		case !sameLayout(t.Group.Layout, o.Group.Layout):
			err = notSupported(fmt.Sprintf("a statement on sharded table %s naming sharded table %s, whose sub-tables are laid out differently", t.Name, o.Name))
		}
	})
	return err
}

// otherSharded returns a sharded table stmt names, or nil.
func (d *ddlPlanner) otherSharded(stmt sqlparser.Statement) *sharding.SchemaTable {
	var found *sharding.SchemaTable
	d.tables(stmt, func(tn sqlparser.TableName) {
		if o := d.listed(tn); found == nil && o != nil && o.Type == sharding.TableSharded {
			found = o
		}
	})
	return found
}

// tables calls f with every table stmt names (not column qualifiers).
func (d *ddlPlanner) tables(stmt sqlparser.Statement, f func(sqlparser.TableName)) {
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		switch n := n.(type) {
		case *sqlparser.ColName, *sqlparser.StarExpr:
			return false, nil
		case sqlparser.TableName:
			if !n.Name.IsEmpty() {
				f(n)
			}
		}
		return true, nil
	}, stmt)
}

// sameLayout reports whether a and b place every sub-table number on the
// same shard.
func sameLayout(a, b sharding.Layout) bool {
	if a.SubTables() != b.SubTables() {
		return false
	}
	for i := 0; i < a.SubTables(); i++ {
		if a.Shard(i) != b.Shard(i) {
			return false
		}
	}
	return true
}

// queryPacket is sql as a COM_QUERY packet.
func queryPacket(sql string) []byte {
	return append([]byte{mysql.ComQuery}, sql...)
}

// LearnKeyType learns sharded table t's shard-key type from its sub-table
// 0 again, whether known or not: after DDL through the proxy created or
// altered it.
func (k *Keyspace) LearnKeyType(ctx context.Context, t *sharding.SchemaTable) error {
	if err := k.learnKeyType(ctx, t); err != nil {
		return fmt.Errorf("%s.%s: %w", k.Schema.Name, t.Name, err)
	}
	return nil
}

// namedForeignKey returns the name of a foreign key that stmt defines
// with CONSTRAINT name, or "".
func namedForeignKey(stmt sqlparser.Statement) string {
	name := ""
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		if c, ok := n.(*sqlparser.ConstraintDefinition); ok && !c.Name.IsEmpty() {
			if _, fk := c.Details.(*sqlparser.ForeignKeyDefinition); fk {
				name = c.Name.String()
				return false, nil
			}
		}
		return true, nil
	}, stmt)
	return name
}

// sharesShard reports whether some shard holds several of the layout's
// sub-tables.
func sharesShard(l sharding.Layout) bool {
	for i := 1; i < l.SubTables(); i++ {
		if l.Shard(i) == l.Shard(i-1) {
			return true
		}
	}
	return false
}
