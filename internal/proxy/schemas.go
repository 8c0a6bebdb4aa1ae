package proxy

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/planner"
	"github.com/shardgate/shardgate/internal/sharding"
)

// schemaPlan is what a reload does to the sharded schemas: the schemas it
// leaves running (old ones with the tables added to them, then the new
// ones), and the additions it leaves for a restart.
type schemaPlan struct {
	configs []config.Schema    // the running configuration's schemas
	built   []*sharding.Schema // configs built
	refused map[string]bool    // the change keys left for a restart
}

// prepareSchemas works out the schemas a reload over old runs. A reload
// adds schemas and adds tables to schemas; what it would change or remove
// of a running schema needs a restart (config's reload tags), and so does
// an addition to atomic transactions' ground: a new schema with
// cross_shard_writes: atomic, or a table that brings an atomic schema a
// cluster its recovery does not cover (both are set up at start).
func (p *Proxy) prepareSchemas(old, cfg *config.Config) (*schemaPlan, error) {
	sp := &schemaPlan{refused: map[string]bool{}}
	for _, o := range old.Schemas {
		s := o
		s.Tables = slices.Clone(o.Tables)
		if ns := schemaNamed(cfg.Schemas, o.Name); ns != nil {
			for _, t := range ns.Tables {
				if !slices.ContainsFunc(o.Tables, func(ot config.Table) bool { return ot.Name == t.Name }) {
					s.Tables = append(s.Tables, t)
				}
			}
		}
		sp.configs = append(sp.configs, s)
	}
	for _, ns := range cfg.Schemas {
		if schemaNamed(old.Schemas, ns.Name) != nil {
			continue
		}
		if ns.CrossShardWrites == config.CrossShardAtomic {
			sp.refused[fmt.Sprintf("schemas[%s]", ns.Name)] = true
			continue
		}
		sp.configs = append(sp.configs, ns)
	}
	if err := sp.build(cfg); err != nil {
		return nil, err
	}
	// An atomic schema keeps its shards: its tables that would add one wait.
	running := p.keyspaceMap()
	for i, s := range sp.built {
		ks := running[s.Name]
		if ks == nil || ks.Schema.CrossShardWrites != sharding.CrossShardAtomic || slices.Equal(ks.Schema.Shards, s.Shards) {
			continue
		}
		for _, t := range sp.configs[i].Tables {
			if ks.Schema.Table(t.Name) == nil {
				sp.refused[fmt.Sprintf("schemas[%s].tables[%s]", s.Name, t.Name)] = true
			}
		}
		sp.configs[i] = *schemaNamed(old.Schemas, s.Name)
	}
	if len(sp.refused) > 0 {
		return sp, sp.build(cfg)
	}
	return sp, nil
}

// build builds the running schemas, validated against cfg's clusters.
func (sp *schemaPlan) build(cfg *config.Config) error {
	c := *cfg
	c.Schemas = sp.configs
	built, err := c.ShardingSchemas()
	if err != nil {
		return fmt.Errorf("schemas: %w", err)
	}
	sp.built = built
	return nil
}

func schemaNamed(ss []config.Schema, name string) *config.Schema {
	for i := range ss {
		if ss[i].Name == name {
			return &ss[i]
		}
	}
	return nil
}

// applySchemas makes the running keyspaces those of sp: a schema whose
// tables did not change keeps its keyspace (its plans, its learnt key
// types); a new one, or one with tables added, gets a keyspace of its own,
// with what was learnt of its old tables. Sessions plan with them from
// their next statement. The added tables' key types are learnt in the
// background; until then statements on them go to all of their
// sub-tables.
func (p *Proxy) applySchemas(sp *schemaPlan, old *config.Config) {
	running := p.keyspaceMap()
	next := maps.Clone(running)
	if next == nil {
		next = planner.Keyspaces{}
	}
	added := 0
	for _, s := range sp.built {
		ks := running[s.Name]
		if ks != nil && sameTables(ks.Schema, s) {
			continue
		}
		nks, err := planner.NewKeyspace(s, p.clusterMap())
		if err != nil {
			p.log.Error("schema not applied: its clusters are not running; restart to apply it", "schema", s.Name, "err", err)
			sp.notApplied(s.Name, old)
			continue
		}
		if ks != nil {
			for _, t := range s.Tables() {
				if ot := ks.Schema.Table(t.Name); ot != nil {
					t.LearntFrom(ot)
				}
			}
		}
		if err := p.setSequences(nks); err != nil {
			p.log.Error("schema not applied: its sequences cannot be set up; restart to apply it", "schema", s.Name, "err", err)
			sp.notApplied(s.Name, old)
			continue
		}
		next[s.Name] = nks
		added++
	}
	if added == 0 {
		return
	}
	p.keyspaces.Store(&next)
	for _, srv := range p.servers {
		srv.SetKeyspaces(next)
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		if pending := p.learnKeyTypesOnce(nil); pending != nil {
			p.retryKeyTypes(pending)
		}
	}()
}

// notApplied takes a schema the proxy could not apply back out of the
// running configuration (its old definition, or none), so that a later
// reload tries it again, and reports it as needing a restart.
func (sp *schemaPlan) notApplied(name string, old *config.Config) {
	sp.refused[fmt.Sprintf("schemas[%s]", name)] = true
	for i := range sp.configs {
		if sp.configs[i].Name != name {
			continue
		}
		if o := schemaNamed(old.Schemas, name); o != nil {
			sp.configs[i] = *o
		} else {
			sp.configs = slices.Delete(sp.configs, i, i+1)
		}
		return
	}
}

// sameTables says whether two builds of a schema list the same tables.
func sameTables(a, b *sharding.Schema) bool {
	names := func(s *sharding.Schema) []string {
		var out []string
		for _, t := range s.Tables() {
			out = append(out, strings.ToLower(t.Name))
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(names(a), names(b))
}

// refuseChanges marks the changes a reload left for a restart as such.
func (sp *schemaPlan) refuseChanges(changes []config.Change) {
	for i := range changes {
		for key := range sp.refused {
			if changes[i].Key == key || strings.HasPrefix(changes[i].Key, key+".") {
				changes[i].Restart = true
			}
		}
	}
}

// clusterMap is a copy of the running clusters by name.
func (p *Proxy) clusterMap() map[string]*backend.Cluster {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.clusters)
}
