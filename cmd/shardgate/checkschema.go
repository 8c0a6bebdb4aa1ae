package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/sharding"
)

// checkSchemaTimeout bounds each connect and the whole check.
const (
	checkSchemaConnect = 10 * time.Second
	checkSchemaTimeout = 5 * time.Minute
)

func checkSchema(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("check-schema", "FILE",
		"Connects to the primary of every shard of FILE's schemas and reports, for each listed table,\n"+
			"sub-tables whose definitions (SHOW CREATE TABLE, names and AUTO_INCREMENT counters aside)\n"+
			"differ from sub-table 0's, sub-tables missing from their shard or found on a shard that is not\n"+
			"theirs, and reference tables whose copies differ or are missing. Exit status 1 when any\n"+
			"differ or a shard cannot be read, 0 when all agree.")
	file, code, done := parseFileArgs(fs, args, stdout, stderr)
	if done {
		return code
	}
	cfg, err := config.Load(file)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	schemas, err := cfg.ShardingSchemas()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if len(schemas) == 0 {
		fmt.Fprintf(stdout, "%s: no schemas to check\n", fs.Arg(0))
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), checkSchemaTimeout)
	defer cancel()
	sc := &schemaChecker{ctx: ctx, cfg: cfg, conns: map[string]*backend.Conn{}, out: stdout}
	defer sc.close()
	for _, s := range schemas {
		if err := sc.schema(s); err != nil {
			fmt.Fprintln(stderr, "shardgate check-schema:", err)
			return 1
		}
	}
	if sc.drift {
		fmt.Fprintln(stdout, "definitions differ: repair the tables above on their shards (a /* shardgate:shard=NAME */ hint sends a statement to one shard)")
		return 1
	}
	return 0
}

// schemaChecker reads the definitions of a configuration's tables from
// the primaries of its shards.
type schemaChecker struct {
	ctx   context.Context
	cfg   *config.Config
	conns map[string]*backend.Conn // by cluster
	out   io.Writer
	drift bool
}

func (sc *schemaChecker) close() {
	for _, c := range sc.conns {
		c.Close()
	}
}

// conn returns a connection to the primary of cluster name.
func (sc *schemaChecker) conn(name string) (*backend.Conn, error) {
	if c := sc.conns[name]; c != nil {
		return c, nil
	}
	i := slices.IndexFunc(sc.cfg.Clusters, func(c config.Cluster) bool { return c.Name == name })
	if i < 0 {
		return nil, fmt.Errorf("cluster %s is not configured", name)
	}
	cc := &sc.cfg.Clusters[i]
	dc, err := proxy.DialConfig(cc, cc.Primary.Address)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	dc.ConnectTimeout = checkSchemaConnect
	c, err := backend.Dial(sc.ctx, dc, false)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	sc.conns[name] = c
	return c, nil
}

// shardTables are the names of the tables of one database on each shard.
type shardTables map[string]map[string]bool

func (sc *schemaChecker) tables(s *sharding.Schema) (shardTables, error) {
	st := shardTables{}
	for _, shard := range s.Shards {
		c, err := sc.conn(shard)
		if err != nil {
			return nil, err
		}
		rows, err := c.QueryRows("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = " + sqlString(s.Name))
		if err != nil {
			return nil, fmt.Errorf("listing the tables of %s on shard %s: %w", s.Name, shard, err)
		}
		st[shard] = map[string]bool{}
		for _, r := range rows {
			st[shard][r[0]] = true
		}
	}
	return st, nil
}

// copyOf is one sub-table or copy of a listed table: where it should be,
// and its definition once read ("" when missing).
type copyOf struct {
	name, shard, def string
}

func (sc *schemaChecker) schema(s *sharding.Schema) error {
	fmt.Fprintf(sc.out, "schema %s:\n", s.Name)
	st, err := sc.tables(s)
	if err != nil {
		return err
	}
	tables := s.Tables()
	slices.SortFunc(tables, func(a, b *sharding.SchemaTable) int { return strings.Compare(a.Name, b.Name) })
	for _, t := range tables {
		var copies []copyOf
		if t.Type == sharding.TableReference {
			for _, shard := range s.Shards {
				copies = append(copies, copyOf{name: t.Name, shard: shard})
			}
		} else {
			for i := 0; i < t.Group.Layout.SubTables(); i++ {
				name, shard := t.SubTable(i)
				copies = append(copies, copyOf{name: name, shard: shard})
			}
		}
		for i := range copies {
			c := &copies[i]
			if !st[c.shard][c.name] {
				continue
			}
			def, err := sc.definition(s, c.shard, c.name)
			if err != nil {
				return err
			}
			c.def = normalizeDefinition(def, s, t, i)
		}
		sc.report(s, t, copies)
	}
	sc.strays(s, st)
	return nil
}

func (sc *schemaChecker) definition(s *sharding.Schema, shard, table string) (string, error) {
	c, err := sc.conn(shard)
	if err != nil {
		return "", err
	}
	rows, err := c.QueryRows("SHOW CREATE TABLE " + sqlName(s.Name) + "." + sqlName(table))
	if err != nil || len(rows) != 1 || len(rows[0]) < 2 {
		return "", fmt.Errorf("SHOW CREATE TABLE %s.%s on shard %s: %v", s.Name, table, shard, err)
	}
	return rows[0][1], nil
}

// report prints one table's line, and a line per copy that is missing or
// differs from the first one present.
func (sc *schemaChecker) report(s *sharding.Schema, t *sharding.SchemaTable, copies []copyOf) {
	ref := slices.IndexFunc(copies, func(c copyOf) bool { return c.def != "" })
	what := fmt.Sprintf("%d sub-tables", len(copies))
	if t.Type == sharding.TableReference {
		what = "reference, on " + strings.Join(s.Shards, ", ")
	}
	if ref < 0 {
		fmt.Fprintf(sc.out, "  %s.%s (%s): not created on any shard\n", s.Name, t.Name, what)
		return
	}
	var problems []string
	for _, c := range copies {
		switch {
		case c.def == "":
			problems = append(problems, fmt.Sprintf("    %s on shard %s: missing", c.name, c.shard))
		case c.def != copies[ref].def:
			problems = append(problems, fmt.Sprintf("    %s on shard %s differs from %s on shard %s: %s",
				c.name, c.shard, copies[ref].name, copies[ref].shard, firstDifference(copies[ref].def, c.def)))
		}
	}
	if len(problems) == 0 {
		fmt.Fprintf(sc.out, "  %s.%s (%s): OK, alike\n", s.Name, t.Name, what)
		return
	}
	sc.drift = true
	fmt.Fprintf(sc.out, "  %s.%s (%s): DIFFERENT\n", s.Name, t.Name, what)
	for _, p := range problems {
		fmt.Fprintln(sc.out, p)
	}
}

// strays reports tables named as sub-tables of a sharded table that are
// on a shard where the layout does not put them.
func (sc *schemaChecker) strays(s *sharding.Schema, st shardTables) {
	for _, shard := range s.Shards {
		names := make([]string, 0, len(st[shard]))
		for n := range st[shard] {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			logical, ok := sharding.LogicalName([]byte(n))
			if !ok {
				continue
			}
			t := s.Table(string(logical))
			if t == nil || t.Type != sharding.TableSharded || t.Name != string(logical) {
				continue
			}
			i, err := strconv.Atoi(n[len(logical)+1:])
			if err != nil || sharding.SubTableName(t.Name, i) != n {
				continue
			}
			if i >= t.Group.Layout.SubTables() {
				sc.drift = true
				fmt.Fprintf(sc.out, "  %s.%s on shard %s: table %s has only %d sub-tables\n", s.Name, n, shard, t.Name, t.Group.Layout.SubTables())
			} else if home := t.Group.Layout.Shard(i); home != shard {
				sc.drift = true
				fmt.Fprintf(sc.out, "  %s.%s on shard %s: belongs on shard %s\n", s.Name, n, shard, home)
			}
		}
	}
}

var autoIncrement = regexp.MustCompile(` AUTO_INCREMENT=\d+`)

// normalizeDefinition makes the definition of copy i of t comparable
// with the others: the AUTO_INCREMENT counter left out, and sub-table i's
// names of every sharded table (t's own, those its foreign keys
// reference, constraint names derived from them) put back to the logical
// names.
func normalizeDefinition(def string, s *sharding.Schema, t *sharding.SchemaTable, i int) string {
	def = autoIncrement.ReplaceAllString(def, "")
	if t.Type != sharding.TableSharded {
		return def
	}
	for _, o := range s.Tables() {
		if o.Type != sharding.TableSharded || i >= o.Group.Layout.SubTables() {
			continue
		}
		sub := sharding.SubTableName(o.Name, i)
		def = strings.ReplaceAll(def, "`"+sub+"`", "`"+o.Name+"`")
		def = strings.ReplaceAll(def, "`"+sub+"_", "`"+o.Name+"_")
	}
	return def
}

// firstDifference quotes the first line where two definitions differ.
func firstDifference(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = strings.TrimSpace(al[i])
		}
		if i < len(bl) {
			y = strings.TrimSpace(bl[i])
		}
		if x != y {
			return fmt.Sprintf("line %d: %q, not %q", i+1, y, x)
		}
	}
	return "(equal lines)"
}

func sqlString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
}

func sqlName(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }
