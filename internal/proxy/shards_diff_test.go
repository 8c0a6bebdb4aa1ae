package proxy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/testenv"
)

const diffDB = "shop"

// shardedDiff is a reference server and shardgate over two shards holding
// the differential generator's schema (difftest.SchemaYAML), its tables
// created by the generator's DDL: directly on the reference, through
// shardgate (which fans it out to the sub-tables) on the shards.
type shardedDiff struct {
	ref, got difftest.Target
	shards   []*testenv.Server
	proxy    *proxy.Proxy
}

func startShardedDiff(t *testing.T, gen *difftest.Generator) *shardedDiff {
	t.Helper()
	return startShardedDiffWith(t, gen, "")
}

// startShardedDiffWith is startShardedDiff with schemaKeys (YAML lines)
// added to the schema.
func startShardedDiffWith(t *testing.T, gen *difftest.Generator, schemaKeys string) *shardedDiff {
	t.Helper()
	srvs := testenv.StartN(t, 3, testenv.Options{})
	ref, shards := srvs[0], srvs[1:]
	for _, s := range srvs {
		s.Exec(t, "CREATE DATABASE "+diffDB)
	}
	p := startProxy(t, shardedDiffConfig(t, shards, schemaKeys))
	d := &shardedDiff{
		ref:    difftest.ServerTarget("reference", ref, diffDB),
		got:    difftest.Target{Name: "shardgate", Addr: p.Addrs()[0], User: appUser, Password: appPass, Database: diffDB},
		shards: shards,
		proxy:  p,
	}
	difftest.CreateSchema(t, d.ref, d.got, gen)
	return d
}

// shardedDiffConfig is shardgate over shards s0, s1 … with the generator's
// schemas: section, schemaKeys added to the schema.
func shardedDiffConfig(t *testing.T, shards []*testenv.Server, schemaKeys string) *config.Config {
	t.Helper()
	names := make([]string, len(shards))
	clusters := ""
	for i, s := range shards {
		names[i] = fmt.Sprintf("s%d", i)
		// Odd shards pipeline their reads (pool.pipeline_connections):
		// both ways of answering a shard's read are compared.
		clusters += fmt.Sprintf("  - {name: %s, user: %s, password: %s, pool: {max_open: 4, pipeline_connections: %d}, primary: {address: %q}}\n",
			names[i], testenv.User, testenv.Password, i%2*2, s.Addr)
	}
	schemas, err := difftest.SchemaYAML(diffDB, names)
	if err != nil {
		t.Fatal(err)
	}
	schemas = strings.Replace(schemas, "    tables:\n", schemaKeys+"    tables:\n", 1)
	yaml := fmt.Sprintf(`
listeners: [{address: "127.0.0.1:0"}]
admin: {http: "127.0.0.1:0"}
users:
  - {name: %s, password_hash: "%s", default_database: %s}
clusters:
%s%s`, appUser, hashOf(appPass), diffDB, clusters, schemas)
	cfg, err := config.Parse([]byte(yaml), "sharded-diff.yaml")
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	return cfg
}

// diffOptions compare as difftest does by default: joins across shards
// and UNIONs of tables sharded by different rules, which the proxy
// evaluates (issue 22), are compared like any statement.
func diffOptions() difftest.Options {
	return difftest.DefaultOptions()
}

// TestShardedDifferential writes the generator's random data through
// shardgate into two shards and directly into one reference server, then
// compares thousands of random statements answer by answer, among them
// issue 14's merges, whose per-construct counts (ran, refused, different)
// it logs. The schema is cross_shard_writes: atomic, and about half the
// writes are inside transactions that write on both shards (issue 21,
// Generator.Transactions), committed or rolled back, some to a
// savepoint: none may be refused, and the rows after every statement are
// those of the reference. Reproduce a difference with -difftest.seed=N
// (and -difftest.n=N); a long run is -difftest.n=100000.
func TestShardedDifferential(t *testing.T) {
	gen := difftest.NewGenerator(difftest.Seed())
	gen.Transactions()
	d := startShardedDiffWith(t, gen, "    cross_shard_writes: atomic\n")
	opts := diffOptions()
	difftest.LoadData(t, d.ref, d.got, gen, opts)
	xa0 := xaStatements(t, d.shards)
	n := difftest.Count(6000)
	rep := difftest.RunWith(t, d.ref, d.got, gen, n, opts)
	if rep.Statements == 0 {
		t.Fatal("no statement ran")
	}
	xa := xaStatements(t, d.shards)
	for k := range xa {
		xa[k] -= xa0[k]
	}
	t.Logf("the shards ran %v", xa)
	if n >= 6000 && (rep.Trx["COMMIT"] == 0 || rep.Trx["ROLLBACK"] == 0 || rep.Trx["ROLLBACK TO"] == 0 || xa["Com_xa_prepare"] == 0) {
		t.Fatalf("transactions %v, XA statements %v: want transactions committed in two phases, rolled back, rolled back to a savepoint", rep.Trx, xa)
	}
	// What the transactions committed is what other sessions read.
	if final, err := difftest.Check(d.ref, d.got, gen, 0, opts); err != nil || len(final.Differences) > 0 {
		t.Fatalf("tables read on new connections: %v, differences %v", err, final.Differences)
	}
	checkNoBranches(t, d.shards)
	if n >= 6000 && poolMetric(t, d.proxy, "shardgate_backend_pool_pipelined_total") == 0 {
		t.Fatal("no read was pipelined on the odd shards: the comparison did not reach that way of answering")
	}
}

// TestShardedDifferentialRefuse is TestShardedDifferential under the
// default cross_shard_writes: refuse: the same statements, where a write
// inside a transaction that already wrote on the other shard is refused
// (with the documented 1235) and not run on the reference either; the
// transaction goes on, and what it commits or rolls back on the shard it
// wrote is compared as usual. The merges and joins are refused as in the
// atomic run.
func TestShardedDifferentialRefuse(t *testing.T) {
	gen := difftest.NewGenerator(difftest.Seed())
	gen.Transactions()
	d := startShardedDiff(t, gen)
	opts := diffOptions()
	difftest.LoadData(t, d.ref, d.got, gen, opts)
	opts.TrxRefusals = difftest.CrossShardWriteRefusals
	n := difftest.Count(2000)
	rep := difftest.RunWith(t, d.ref, d.got, gen, n, opts)
	if n >= 2000 && (rep.Trx["refused on a second shard"] == 0 || rep.Trx["COMMIT"] == 0) {
		t.Fatalf("transactions %v: want writes on a second shard refused, and transactions committed", rep.Trx)
	}
}

// checkNoBranches checks that no XA branch is left prepared on shards.
func checkNoBranches(t *testing.T, shards []*testenv.Server) {
	t.Helper()
	for i, s := range shards {
		if p := xaPrepared(t, s.RootDB(t)); len(p) != 0 {
			t.Errorf("s%d: prepared XA branches left: %q", i, p)
		}
	}
}
