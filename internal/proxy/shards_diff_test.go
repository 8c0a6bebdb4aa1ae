package proxy_test

import (
	"fmt"
	"regexp"
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
	srvs := testenv.StartN(t, 3, testenv.Options{})
	ref, shards := srvs[0], srvs[1:]
	for _, s := range srvs {
		s.Exec(t, "CREATE DATABASE "+diffDB)
	}
	p := startProxy(t, shardedDiffConfig(t, shards))
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
// schemas: section.
func shardedDiffConfig(t *testing.T, shards []*testenv.Server) *config.Config {
	t.Helper()
	names := make([]string, len(shards))
	clusters := ""
	for i, s := range shards {
		names[i] = fmt.Sprintf("s%d", i)
		clusters += fmt.Sprintf("  - {name: %s, user: %s, password: %s, pool: {max_open: 4}, primary: {address: %q}}\n",
			names[i], testenv.User, testenv.Password, s.Addr)
	}
	schemas, err := difftest.SchemaYAML(diffDB, names)
	if err != nil {
		t.Fatal(err)
	}
	yaml := fmt.Sprintf(`
listeners: [{address: "127.0.0.1:0"}]
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

// diffOptions compare as difftest does by default, and require the joins
// across shards (Statement.MustRefuse) to be refused. A UNION of tables
// sharded by different rules is refused as if it were a join of them
// (the planner's classes, issue 14): pending, counted and listed.
func diffOptions() difftest.Options {
	o := difftest.DefaultOptions()
	o.EnforceRefusals = true
	o.Pending = []*regexp.Regexp{
		regexp.MustCompile(`^This version of shardgate doesn't yet support 'a join of \w+ and \w+, sharded by different rules`),
	}
	return o
}

// TestShardedDifferential writes the generator's random data through
// shardgate into two shards and directly into one reference server, then
// compares thousands of random statements answer by answer, among them
// issue 14's merges, whose per-construct counts (ran, refused, different)
// it logs. Reproduce a difference with -difftest.seed=N (and
// -difftest.n=N); a long run is -difftest.n=100000.
func TestShardedDifferential(t *testing.T) {
	gen := difftest.NewGenerator(difftest.Seed())
	d := startShardedDiff(t, gen)
	opts := diffOptions()
	difftest.LoadData(t, d.ref, d.got, gen, opts)
	rep := difftest.RunWith(t, d.ref, d.got, gen, difftest.Count(6000), opts)
	if rep.Statements == 0 {
		t.Fatal("no statement ran")
	}
}
