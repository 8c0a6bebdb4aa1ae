package planner

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/shardgate/shardgate/internal/sequence"
	"github.com/shardgate/shardgate/internal/sharding"
)

// SetSequences binds the keyspace to the store its sharded tables'
// sequences live in: each sharded table gets its sequence now, so that an
// INSERT finds it without a lock. Call it before the keyspace serves.
func (k *Keyspace) SetSequences(st *sequence.Store) {
	k.seqs = make(map[*sharding.SchemaTable]*sequence.Sequence)
	for _, t := range k.Schema.Tables() {
		if t.Type != sharding.TableSharded {
			continue
		}
		k.seqs[t] = st.Sequence(k.Schema.Name, t.Name, func(ctx context.Context) (uint64, error) {
			return k.maxKey(ctx, t)
		})
	}
}

// Sequence returns the sequence of sharded table t, nil when the keyspace
// has no sequence store.
func (k *Keyspace) Sequence(t *sharding.SchemaTable) *sequence.Sequence { return k.seqs[t] }

// maxKey reads the largest key of t over all its sub-tables (0 when they
// hold none above 0): where a new sequence starts.
func (k *Keyspace) maxKey(ctx context.Context, t *sharding.SchemaTable) (uint64, error) {
	var m uint64
	for i := 0; i < t.Group.Layout.SubTables(); i++ {
		sub, shard := t.SubTable(i)
		v, err := k.maxOf(ctx, shard, sub, t.ShardKey)
		if err != nil {
			return 0, err
		}
		m = max(m, v)
	}
	return m, nil
}

func (k *Keyspace) maxOf(ctx context.Context, shard, sub, col string) (uint64, error) {
	w := k.Shard(shard).Writer()
	if w == nil {
		return 0, fmt.Errorf("shard %s has no writable server to read MAX(%s) of %s from", shard, col, sub)
	}
	c, err := w.Pool.Acquire(ctx, false)
	if err != nil {
		return 0, fmt.Errorf("reading MAX(%s) of %s on shard %s: %w", col, sub, shard, err)
	}
	rows, err := c.QueryRows("SELECT COALESCE(MAX(" + quoteIdent(col) + "), 0) FROM " + quoteIdent(k.Schema.Name) + "." + quoteIdent(sub))
	if err != nil {
		c.Pool().Discard(c, false)
		return 0, fmt.Errorf("reading MAX(%s) of %s on shard %s: %w", col, sub, shard, err)
	}
	c.Pool().Release(c)
	if len(rows) != 1 || len(rows[0]) != 1 || strings.HasPrefix(rows[0][0], "-") {
		return 0, nil
	}
	return strconv.ParseUint(rows[0][0], 10, 64)
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }
