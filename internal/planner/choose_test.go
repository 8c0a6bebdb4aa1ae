package planner

import (
	"slices"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/router"
	"github.com/shardgate/shardgate/internal/sharding"
)

// TestChoose: the schema that plans a statement is the one it names, from
// a session on any database; tables of two schemas, or of a schema and a
// database living elsewhere, are refused naming both.
func TestChoose(t *testing.T) {
	s0, s1, elsewhere := testCluster(t, 1), testCluster(t, 1), testCluster(t, 1)
	clusters := map[string]*backend.Cluster{"s0": s0, "s1": s1}
	shop, err := NewKeyspace(fixture(t), clusters)
	if err != nil {
		t.Fatal(err)
	}
	crmSchema := sharding.NewSchema("crm", "s0", []string{"s0", "s1"})
	r, err := sharding.NewHash(4)
	if err != nil {
		t.Fatal(err)
	}
	l, err := sharding.NewLayout([]string{"s0", "s1"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	g, err := sharding.NewGroup(r, l)
	if err != nil {
		t.Fatal(err)
	}
	contact := &sharding.SchemaTable{Table: sharding.Table{Name: "contact", ShardKey: "id", Group: g}, Type: sharding.TableSharded}
	contact.SetKeyType(sharding.ColumnType{Class: sharding.ClassInt, Bits: 32})
	if err := crmSchema.Add(contact); err != nil {
		t.Fatal(err)
	}
	crm, err := NewKeyspace(crmSchema, clusters)
	if err != nil {
		t.Fatal(err)
	}
	ks := Keyspaces{"shop": shop, "crm": crm}
	filters := ks.Filters()
	for _, tc := range []struct {
		db, sql string
		home    *backend.Cluster
		want    *Keyspace
		outside bool
		connDB  string
		err     []string // the refusal names these
	}{
		// The session's own schema, or none.
		{db: "shop", sql: "SELECT * FROM sf_user WHERE id = 1", want: shop},
		{db: "shop", sql: "SELECT * FROM shop.sf_user u WHERE u.id = 1", want: shop},
		{db: "app", sql: "SELECT o.id FROM orders o WHERE o.id = 1", home: s0},
		{db: "app", sql: "SELECT * FROM app.t", home: s0},
		{db: "app", sql: "BEGIN", home: s0},
		{db: "app", sql: "SELECT shop.id FROM stores shop", home: s0}, // an alias, not the schema
		// Another schema, named.
		{db: "app", sql: "SELECT * FROM shop.sf_user WHERE id = 1", home: s0, want: shop, outside: true, connDB: "shop"},
		{db: "", sql: "SELECT * FROM `shop`.sf_user u JOIN shop.sf_order o ON o.user_id = u.id", home: elsewhere, want: shop, outside: true, connDB: "shop"},
		{db: "app", sql: "INSERT INTO shop.sf_user (id) VALUES (1)", home: s0, want: shop, outside: true, connDB: "shop"},
		{db: "app", sql: "UPDATE shop.sf_user SET x = 1 WHERE id = 2", home: s0, want: shop, outside: true, connDB: "shop"},
		{db: "app", sql: "DELETE FROM shop.sf_user WHERE id = 2", home: s0, want: shop, outside: true, connDB: "shop"},
		{db: "shop", sql: "SELECT * FROM crm.contact WHERE id = 2", want: crm, outside: true, connDB: "crm"},
		{db: "app", sql: "SHOW TABLES FROM shop", home: s0, want: shop, outside: true, connDB: "shop"},
		{db: "app", sql: "SHOW COLUMNS FROM sf_user FROM shop", home: s0, want: shop, outside: true, connDB: "shop"},
		{db: "app", sql: "SHOW COLUMNS FROM shop", home: s0}, // a table named shop of app
		{db: "app", sql: "DESCRIBE shop.sf_user", home: s0, want: shop, outside: true, connDB: "shop"},
		{db: "shop", sql: "SHOW TABLES FROM app", want: shop}, // its Metadata sends it where it goes
		{db: "app", sql: "SELECT * FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'shop'", home: s0, want: shop, outside: true, connDB: "shop"},
		{db: "information_schema", sql: "SELECT * FROM COLUMNS WHERE TABLE_SCHEMA = 'crm' AND TABLE_NAME = 'contact'", home: s0, want: crm, outside: true},
		{db: "shop", sql: "SELECT * FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'crm'", want: crm, outside: true, connDB: "crm"},
		{db: "app", sql: "SELECT * FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'app'", home: s0},
		{db: "app", sql: "SELECT * FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'shop'", home: s0},
		// The schema's unlisted tables with the session's: where both live.
		{db: "app", sql: "SELECT * FROM t JOIN shop.plain p ON p.id = t.id", home: s0, want: shop, outside: true},
		{db: "app", sql: "SELECT * FROM t JOIN shop.plain p ON p.id = t.id", home: elsewhere, err: []string{"shop", "app.t"}},
		// Tables of two schemas.
		{db: "app", sql: "SELECT * FROM shop.sf_user u JOIN crm.contact c ON c.id = u.id", home: s0, err: []string{"shop.sf_user", "crm.contact"}},
		{db: "shop", sql: "SELECT * FROM sf_user WHERE id IN (SELECT id FROM crm.contact)", err: []string{"sf_user", "crm.contact"}},
		{db: "shop", sql: "SELECT * FROM plain JOIN crm.notes", want: shop}, // both unlisted, on s0
		// What runs with the schema's database refuses DATABASE() and,
		// off the session's cluster, user variables.
		{db: "app", sql: "SELECT DATABASE(), x FROM shop.sf_user WHERE id = 1", home: s0, err: []string{"DATABASE()"}},
		{db: "app", sql: "SELECT * FROM shop.plain WHERE id = @x", home: elsewhere, err: []string{"user variables"}},
		// A statement the parser cannot read goes to the schema it names,
		// which asks a server about its syntax.
		{db: "app", sql: "SELECT * FROM shop.sf_user WHERE", home: s0, want: shop, outside: true, connDB: "shop"},
	} {
		st := router.Classify([]byte(tc.sql))
		if tc.want != nil && tc.db != "information_schema" && tc.want != ks.Lookup(tc.db) && !strings.Contains(tc.sql, "information_schema") {
			if b := filters[slices.IndexFunc(filters, func(f SchemaFilter) bool { return f.Name == tc.want.Schema.Name })].Bits; st.Schemas&b != b {
				t.Errorf("%s: the classifier's filter misses the schema", tc.sql)
			}
		}
		var sh router.Shape
		c := ks.Choose(tc.db, st, []byte(tc.sql), &sh, tc.home)
		if len(tc.err) > 0 {
			if c.Err == nil {
				t.Errorf("%q in %q: %+v, want a refusal naming %q", tc.sql, tc.db, c, tc.err)
				continue
			}
			for _, w := range tc.err {
				if !strings.Contains(c.Err.Error(), w) {
					t.Errorf("%q in %q: %v, want it to name %q", tc.sql, tc.db, c.Err, w)
				}
			}
			continue
		}
		if c.Err != nil || c.KS != tc.want || c.Outside != tc.outside || c.DB != tc.connDB {
			t.Errorf("%q in %q: KS %v outside %v db %q err %v; want %v %v %q", tc.sql, tc.db, name(c.KS), c.Outside, c.DB, c.Err, name(tc.want), tc.outside, tc.connDB)
		}
	}
}

func name(k *Keyspace) string {
	if k == nil {
		return "none"
	}
	return k.Schema.Name
}
