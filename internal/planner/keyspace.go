package planner

import (
	"fmt"
	"sync/atomic"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/sequence"
	"github.com/shardgate/shardgate/internal/sharding"
)

// Keyspace is a sharded schema as the proxy runs it: the placement model
// and the clusters its shards name.
type Keyspace struct {
	Schema  *sharding.Schema
	Default *backend.Cluster // where unlisted tables live
	shards  map[string]*backend.Cluster
	parser  *Parser
	cache   *Cache[*Plan]
	// seqs are the sharded tables' sequences (SetSequences); nil: none.
	seqs map[*sharding.SchemaTable]*sequence.Sequence
	// learnAt is when LearnNow last tried (Unix nanoseconds).
	learnAt atomic.Int64
}

// NewKeyspace binds a schema to the clusters its shards name.
func NewKeyspace(s *sharding.Schema, clusters map[string]*backend.Cluster) (*Keyspace, error) {
	k := &Keyspace{Schema: s, shards: make(map[string]*backend.Cluster, len(s.Shards)),
		parser: NewParser(), cache: NewCache[*Plan](maxPlans)}
	for _, name := range s.Shards {
		cl := clusters[name]
		if cl == nil {
			return nil, fmt.Errorf("schema %s: shard %q is not a configured cluster", s.Name, name)
		}
		k.shards[name] = cl
	}
	k.Default = clusters[s.DefaultCluster]
	if k.Default == nil {
		return nil, fmt.Errorf("schema %s: default cluster %q is not a configured cluster", s.Name, s.DefaultCluster)
	}
	return k, nil
}

// Shard returns the cluster of the shard named name, or nil.
func (k *Keyspace) Shard(name string) *backend.Cluster { return k.shards[name] }

// Keyspaces are the sharded schemas by the database name clients use.
// Database names compare as MariaDB compares them on Linux by default
// (lower_case_table_names = 0): exactly.
type Keyspaces map[string]*Keyspace

// Lookup returns the keyspace of database db, or nil when db is not a
// sharded schema.
func (ks Keyspaces) Lookup(db string) *Keyspace {
	if len(ks) == 0 {
		return nil
	}
	return ks[db]
}

// Home is where the statements of a user without a cluster of its own
// go when they are outside sharded schemas: the default cluster of its
// default database's schema db, else of the first schema by name; nil
// without schemas.
func (ks Keyspaces) Home(db string) *backend.Cluster {
	if k := ks.Lookup(db); k != nil {
		return k.Default
	}
	first := ""
	for name := range ks {
		if first == "" || name < first {
			first = name
		}
	}
	if first == "" {
		return nil
	}
	return ks[first].Default
}

// ForgetPlans drops the keyspace's cached plans, after DDL changed what
// they were made from (a table's columns).
func (k *Keyspace) ForgetPlans() { k.cache.Clear() }
