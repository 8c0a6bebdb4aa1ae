package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/shardgate/shardgate/internal/sharding"
	"github.com/shardgate/shardgate/internal/testenv"
)

// The Sharded target: shardgate with each sysbench table sbtestN
// hash-sharded on id over ShardedShards shards of ShardedSubTables
// sub-tables each (sbtestN_0000 … sbtestN_0007). Every shard is the
// benchmark's one mariadbd, so the server does the same work as for the
// unsharded targets and the comparison with Shardgate measures the
// proxy's cost of sharding: the shape scan, the plan-cache look-up, the
// key's placement and the rename, and for reads across shards the merge.
const (
	ShardedShards    = 4
	ShardedSubTables = 2 // per shard
)

// The streaming benchmark's table on the Sharded target: StreamTable,
// sharded (mod on id) into StreamSubTables sub-tables over the shards (one each),
// which a scatter read streams (issue 13: 1 GB from 4 sub-tables).
const (
	StreamTable     = "sgstream"
	StreamSubTables = 4 // in all
)

// StartSharded copies the prepared sysbench tables (sbtest1 … sbtestN)
// into their sub-tables, each row where the hash rule places its id, and
// starts shardgate over them. The sub-tables exist before shardgate
// starts, so it knows the key's type and routes by key at once. With
// tables 0 it copies nothing: the streaming benchmark needs only
// StreamTable, which its configuration always declares.
func (e *Env) StartSharded(ctx context.Context, tables int) error {
	if e.shardgateBin == "" && e.baseBin == "" {
		return fmt.Errorf("target %s: no shardgate binary (StartEnv was not asked for it)", Sharded)
	}
	if e.sharded != nil || e.shardedBase != nil {
		return fmt.Errorf("target %s is already running", Sharded)
	}
	if err := e.shardTables(tables); err != nil {
		return err
	}
	targets := e.shardedTargets
	if len(targets) == 0 {
		targets = []Target{Sharded}
	}
	for _, t := range targets {
		if err := e.startShardedProxy(ctx, t, tables); err != nil {
			return err
		}
	}
	return nil
}

// startShardedProxy starts the proxy of sharded target t (Sharded, or
// ShardedBase with the base build) over the sharded tables.
func (e *Env) startShardedProxy(ctx context.Context, t Target, tables int) error {
	bin, name, label := e.shardgateBin, "sharded", "shardgate (sharded)"
	if t == ShardedBase {
		bin, name, label = e.baseBin, "sharded-base", "shardgate-base (sharded)"
	}
	if bin == "" {
		return fmt.Errorf("target %s: no shardgate binary (StartEnv was not asked for it)", t)
	}
	return retryPort(func(addr string) error {
		cfg := filepath.Join(e.dir, name+".yaml")
		if err := os.WriteFile(cfg, []byte(shardedConfig(addr, e.Server.Addr, tables)), 0o600); err != nil {
			return fmt.Errorf("write the sharded configuration: %w", err)
		}
		argv := []string{bin, "serve", "--config", cfg}
		e.logf("starting %s (%d shards x %d sub-tables) on %s", label, ShardedShards, ShardedSubTables, addr)
		c, err := e.startServing(ctx, "shardgate-"+name, argv, addr, "")
		if err != nil {
			return err
		}
		if t == ShardedBase {
			e.shardedBase = c
		} else {
			e.sharded = c
		}
		e.addrs[t] = addr
		e.Commands = append(e.Commands, label+": "+strings.Join(argv, " "))
		return nil
	})
}

// shardedConfig is the sharded target's configuration: ShardedShards
// clusters on the same server, the sysbench user, every sysbench table
// sharded, the streaming benchmark's table and the merge benchmarks'
// tables (ScatterTable, MemoryTable).
func shardedConfig(listen, server string, tables int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "listeners: [{address: %q}]\nlog: {level: warn}\n", listen)
	fmt.Fprintf(&b, "users:\n  - {name: %s, password: %q, default_database: %s}\n", testenv.User, testenv.Password, Database)
	b.WriteString("clusters:\n")
	shards := make([]string, ShardedShards)
	for i := range shards {
		shards[i] = fmt.Sprintf("s%d", i)
		fmt.Fprintf(&b, "  - {name: %s, user: %s, password: %q, primary: {address: %q}}\n", shards[i], testenv.User, testenv.Password, server)
	}
	fmt.Fprintf(&b, "schemas:\n  - name: %s\n    default_cluster: s0\n    tables:\n", Database)
	for n := 1; n <= tables; n++ {
		fmt.Fprintf(&b, "      - {name: sbtest%d, shard_key: id, rule: hash, shards: [%s], sub_tables: %d}\n",
			n, strings.Join(shards, ", "), ShardedSubTables)
	}
	fmt.Fprintf(&b, "      - {name: %s, shard_key: id, rule: mod, shards: [%s], sub_tables: %d}\n",
		StreamTable, strings.Join(shards, ", "), StreamSubTables/ShardedShards)
	fmt.Fprintf(&b, "      - {name: %s, shard_key: id, rule: mod, shards: [%s], sub_tables: %d}\n",
		ScatterTable, strings.Join(shards, ", "), ShardedSubTables)
	fmt.Fprintf(&b, "      - {name: %s, shard_key: id, rule: mod, shards: [%s], sub_tables: 1}\n",
		MemoryTable, strings.Join(shards, ", "))
	fmt.Fprintf(&b, "      - {name: %s, shard_key: id, rule: mod, shards: [%s], sub_tables: 1}\n",
		ScatterDim, strings.Join(shards, ", "))
	return b.String()
}

// startShardedStream readies the Sharded target for cfg's streamed
// result: it (re)creates StreamTable's sub-tables for cfg's rows and
// starts the target unless the matrix already did.
func (e *Env) startShardedStream(ctx context.Context, cfg StreamConfig) error {
	if err := e.Server.ExecE(streamViews(cfg)...); err != nil {
		return fmt.Errorf("sharded target: the streaming table: %w", err)
	}
	if e.sharded != nil || e.shardedBase != nil {
		return nil
	}
	return e.StartSharded(ctx, 0)
}

// streamViews are the statements that make StreamTable's sub-tables views
// over the SEQUENCE engine: together the rows of cfg.Query(), each id
// (0 … rows-1) on the sub-table the mod rule places it, and the server does
// per row what it does for the unsharded targets. No disk, no load time.
func streamViews(cfg StreamConfig) []string {
	stmts := make([]string, StreamSubTables)
	for i := range stmts {
		stmts[i] = fmt.Sprintf("CREATE OR REPLACE VIEW %s.%s AS SELECT seq AS id, REPEAT('x', %d) AS v FROM %s.seq_%d_to_%d_step_%d",
			Database, sharding.SubTableName(StreamTable, i), cfg.RowBytes, Database, i, cfg.Rows()-1, StreamSubTables)
	}
	return stmts
}

// shardTables creates sbtestN_0000 … like sbtestN and fills each with the
// rows the hash rule places there, through a table of (id, sub-table)
// computed here with the proxy's own rule.
func (e *Env) shardTables(tables int) error {
	if tables == 0 {
		return nil
	}
	subs := ShardedShards * ShardedSubTables
	rule, err := sharding.NewHash(subs)
	if err != nil {
		return err
	}
	maxID, err := e.Server.ScalarE("SELECT COALESCE(MAX(id), 0) FROM " + Database + ".sbtest1")
	if err != nil {
		return fmt.Errorf("sharded target: %w", err)
	}
	var n int64
	if _, err := fmt.Sscan(maxID, &n); err != nil {
		return fmt.Errorf("sharded target: MAX(id) of sbtest1 is %q: %w", maxID, err)
	}
	e.logf("sharding %d table(s) into %d sub-tables each", tables, subs)
	place := Database + ".sg_placement"
	if err := e.Server.ExecE("DROP TABLE IF EXISTS "+place, "CREATE TABLE "+place+" (id INT PRIMARY KEY, sub INT NOT NULL, KEY (sub))"); err != nil {
		return fmt.Errorf("sharded target: %w", err)
	}
	const batch = 5000
	for lo := int64(1); lo <= n; lo += batch {
		var b strings.Builder
		b.WriteString("INSERT INTO " + place + " VALUES ")
		for id := lo; id < lo+batch && id <= n; id++ {
			i, err := rule.Index(sharding.IntValue(id))
			if err != nil {
				return fmt.Errorf("sharded target: place id %d: %w", id, err)
			}
			if id > lo {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "(%d,%d)", id, i)
		}
		if err := e.Server.ExecE(b.String()); err != nil {
			return fmt.Errorf("sharded target: %w", err)
		}
	}
	for t := 1; t <= tables; t++ {
		src := fmt.Sprintf("%s.sbtest%d", Database, t)
		for i := range subs {
			sub := Database + "." + sharding.SubTableName(fmt.Sprintf("sbtest%d", t), i)
			if err := e.Server.ExecE("DROP TABLE IF EXISTS "+sub, "CREATE TABLE "+sub+" LIKE "+src,
				fmt.Sprintf("INSERT INTO %s SELECT s.* FROM %s s JOIN %s p ON p.id = s.id WHERE p.sub = %d", sub, src, place, i)); err != nil {
				return fmt.Errorf("sharded target: %w", err)
			}
		}
	}
	return e.Server.ExecE("DROP TABLE " + place)
}
