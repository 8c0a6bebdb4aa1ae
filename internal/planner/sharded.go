package planner

import (
	"errors"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sharding"
)

// Plan is the cached plan of a statement shape on a keyspace: what the
// statement touches (An), the text to send to one sub-table (Tmpl), or the
// refusal the shape alone decides (Err). Plans are immutable and shared by
// every session.
type Plan struct {
	An   *Analysis
	Tmpl *Template // the statement for a sub-table; nil when it runs as written
	Err  error     // *mysql.SQLError: the shape is refused
	// Unparsed: Err is the refusal of a statement the parser could not
	// read, a syntax error or syntax it does not know (the session asks
	// a server which, to answer a syntax error with the server's 1064).
	Unparsed bool
	// Merge answers the SELECT when it reads several sub-tables and
	// An.TopMerge is not empty; else MergeErr is the refusal.
	Merge    *MergePlan
	MergeErr error
	// Eval evaluates a read on sharded tables that Err, Route or
	// MergeErr refuses (nil: it cannot be evaluated either, and EvalErr,
	// when set, says why: the refusal the client gets).
	Eval    *EvalPlan
	EvalErr error

	// Refs are the tables the statement names, as written (TableRefs),
	// and ReadsDB whether it calls DATABASE() or SCHEMA(): what
	// Keyspaces.Choose reads to find the schema a statement is about.
	// Parsed is false when the statement did not parse.
	Refs    []TableRef
	ReadsDB bool
	Parsed  bool

	// textual marks an entry filed under a shape whose statements parse
	// only as written (Parsed.Exact): their plans are filed by text.
	textual bool
}

// maxPlans bounds each keyspace's plan cache.
const maxPlans = 4096

// Plan returns the plan of statement sql, of shape sh, run with db as the
// current database: from the cache, or parsed, analysed and cached. A
// cache hit parses nothing and allocates nothing.
func (k *Keyspace) Plan(sql []byte, sh *router.Shape, db string) *Plan {
	hash, key := ShapeKey(sh)
	p, ok := k.cache.Get(k.Schema.Name, db, hash, key)
	if ok && !p.textual {
		return p
	}
	if ok { // this shape parses only as written: look the text up
		th, tk := TextKey(sql)
		if p, ok := k.cache.Get(k.Schema.Name, db, th, tk); ok {
			return p
		}
	}
	p, exact := k.build(sql, sh, db)
	if exact {
		k.cache.Put(k.Schema.Name, db, hash, key, &Plan{textual: true})
		hash, key = TextKey(sql)
	}
	k.cache.Put(k.Schema.Name, db, hash, key, p)
	return p
}

// build parses and analyses a statement and compiles its template.
func (k *Keyspace) build(sql []byte, sh *router.Shape, db string) (p *Plan, exact bool) {
	parsed, err := k.parser.Parse(sql, sh)
	if err != nil {
		var se *mysql.SQLError
		return &Plan{Err: parseRefusal(err), Unparsed: !errors.As(err, &se)}, false
	}
	refs, readsDB := TableRefs(parsed.Stmt)
	defer func() { p.Refs, p.ReadsDB, p.Parsed = refs, readsDB, true }()
	p, exact = k.buildParsed(parsed, sql, sh, db)
	if errors.Is(p.MergeErr, errPositional) && !parsed.Exact {
		// The merge depends on a position's value: plan this text.
		if parsed, err = k.parser.ParseExact(sql, sh); err == nil {
			p, exact = k.buildParsed(parsed, sql, sh, db)
		}
	}
	if errors.Is(p.MergeErr, errPositional) {
		p.MergeErr = notSupported("ORDER BY or GROUP BY a position given as a parameter, across shards")
	}
	return p, exact
}

// buildParsed analyses a parsed statement and compiles its templates.
func (k *Keyspace) buildParsed(parsed Parsed, sql []byte, sh *router.Shape, db string) (p *Plan, exact bool) {
	var err error
	k.fillColumnList(parsed.Stmt, db)
	eval, evalErr := k.evalPlan(parsed, sh, db)
	an, err := Analyze(parsed.Stmt, k.Schema, db)
	if err != nil {
		return &Plan{Err: err, Eval: eval, EvalErr: evalErr}, parsed.Exact
	}
	p = &Plan{An: an, Eval: eval, EvalErr: evalErr}
	if an.Placement == Sharded {
		if an.Insert != nil {
			p.Tmpl, err = NewInsertTemplate(parsed, sh, k.renamer(db), an.Insert.Table.ShardKey)
		} else {
			p.Tmpl, err = NewTemplate(parsed, sh, k.renamer(db))
		}
		if err != nil {
			return &Plan{Err: err, Eval: eval, EvalErr: evalErr}, parsed.Exact
		}
		switch {
		case an.Insert == nil && an.TopMerge != 0:
			p.Merge, p.MergeErr = newMergePlan(parsed, an, sh, k.renamer(db), k, k.Schema.MergeMemory)
		case !an.Write && an.Insert == nil:
			// A read without a merge construct runs as a merge that
			// passes rows; the client's statement on one sub-table gives
			// its column definitions, unless running it once more would
			// do something (SLEEP, NEXTVAL…: then it streams as a
			// Scatter, sub-table by sub-table, and a cursor over it is
			// a merge typed as its parts are).
			p.Merge = &MergePlan{Tmpl: p.Tmpl, Spec: &engine.MergeSpec{Budget: k.Schema.MergeMemory}}
			if !hasEffects(parsed.Stmt) {
				p.Merge.Probe = p.Tmpl
			}
		}
	}
	return p, parsed.Exact
}

// columnCollation says whether a column of a sharded table of the schema
// holds character strings, under which collation ("": not known), and
// whether that is known.
func (k *Keyspace) columnCollation(table, column string) (coll string, collated, known bool) {
	t := k.Schema.Table(table)
	if t == nil {
		return "", false, false
	}
	return t.Collation(column)
}

// tableColumns returns the columns learnt for a sharded table of the
// schema, in order.
func (k *Keyspace) tableColumns(name string) ([]string, bool) {
	t := k.Schema.Table(name)
	if t == nil {
		return nil, false
	}
	return t.Columns()
}

// renamer renames every sharded table of the schema (named with the
// schema's name or unqualified in it) to the one sub-table a part runs
// on: slot 0, since the tables of one statement share their sub-table
// number (a like-group, or each on the same single sub-table).
func (k *Keyspace) renamer(db string) Rename {
	return func(qualifier, name string) int {
		if !resolvesIn(k.Schema, qualifier, db) {
			return -1
		}
		t := k.Schema.Table(name)
		if t == nil || t.Type != sharding.TableSharded {
			return -1
		}
		return 0
	}
}

// parseRefusal is the client's error for a statement the parser cannot
// read: its own error when it has one (a server would refuse the text
// too), else 1235 naming the parser, since the server might take it.
func parseRefusal(err error) error {
	var se *mysql.SQLError
	if errors.As(err, &se) {
		return se
	}
	return mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax,
		"This version of shardgate doesn't yet support '%s' on a sharded schema (%v)", "this statement", err)
}

// fillColumnList gives an INSERT or REPLACE into a sharded table without
// a column list the table's columns, learnt from the shards, so that its
// rows can be split by key (and a generated key put in its place): the
// statement means the same with the list written out.
func (k *Keyspace) fillColumnList(stmt sqlparser.Statement, db string) {
	ins, ok := stmt.(*sqlparser.Insert)
	if !ok || len(ins.Columns) > 0 {
		return
	}
	tn, err := ins.Table.TableName()
	if err != nil {
		return
	}
	if !resolvesIn(k.Schema, tn.Qualifier.String(), db) {
		return
	}
	t := k.Schema.Table(tn.Name.String())
	if t == nil || t.Type != sharding.TableSharded {
		return
	}
	cols, ok := t.Columns()
	if !ok {
		return
	}
	for _, c := range cols {
		ins.Columns = append(ins.Columns, sqlparser.NewIdentifierCI(c))
	}
}
