package planner

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/shardgate/shardgate/internal/sharding"
)

// LearnKeyTypes learns the shard-key column type of every sharded table
// whose type is not known yet, from the information_schema of the shard
// holding its sub-table 0 (all sub-tables are created alike). Until a
// table's type is known its statements go to every sub-table that could
// hold their rows: slower, never wrong. It returns the tables it could not
// learn, each with the reason.
func (k *Keyspace) LearnKeyTypes(ctx context.Context) []error {
	var errs []error
	for _, t := range k.Schema.Tables() {
		if t.Type != sharding.TableSharded {
			continue
		}
		if _, ok := t.KeyType(); ok {
			continue
		}
		if err := k.learnKeyType(ctx, t); err != nil {
			errs = append(errs, fmt.Errorf("%s.%s: %w", k.Schema.Name, t.Name, err))
		}
	}
	return errs
}

// LearnNow learns the key types not known yet, for a statement refused
// for want of one (a table another instance created, or a reload added),
// at most once per every: true when it tried, and the plans made without
// them are forgotten.
func (k *Keyspace) LearnNow(ctx context.Context, every time.Duration) bool {
	if !k.Unlearnt() {
		return false
	}
	now, last := time.Now().UnixNano(), k.learnAt.Load()
	if now-last < int64(every) || !k.learnAt.CompareAndSwap(last, now) {
		return false
	}
	k.LearnKeyTypes(ctx)
	k.ForgetPlans()
	return true
}

// Unlearnt says whether a sharded table's key type is not known yet.
func (k *Keyspace) Unlearnt() bool {
	for _, t := range k.Schema.Tables() {
		if _, ok := t.KeyType(); !ok && t.Type == sharding.TableSharded {
			return true
		}
	}
	return false
}

func (k *Keyspace) learnKeyType(ctx context.Context, t *sharding.SchemaTable) error {
	sub, shard := t.SubTable(0)
	cl := k.Shard(shard)
	w := cl.Writer()
	if w == nil {
		return fmt.Errorf("shard %s has no writable server to read %s's definition from", shard, sub)
	}
	c, err := w.Pool.Acquire(ctx, false)
	if err != nil {
		return fmt.Errorf("reading %s's definition on shard %s: %w", sub, shard, err)
	}
	rows, err := c.QueryRows("SELECT DATA_TYPE, COLUMN_TYPE, COALESCE(NUMERIC_PRECISION, 0), " +
		"COALESCE(NUMERIC_SCALE, DATETIME_PRECISION, 0), COALESCE(COLLATION_NAME, ''), COLUMN_NAME, EXTRA " +
		"FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = " + quote(k.Schema.Name) +
		" AND TABLE_NAME = " + quote(sub) + " ORDER BY ORDINAL_POSITION")
	if err != nil {
		c.Pool().Discard(c, false)
		return fmt.Errorf("reading %s's definition on shard %s: %w", sub, shard, err)
	}
	c.Pool().Release(c)
	if len(rows) == 0 {
		return fmt.Errorf("sub-table %s.%s does not exist on shard %s yet: create the table through shardgate, or each sub-table on its shard", k.Schema.Name, sub, shard)
	}
	var r []string
	columns := make([]string, len(rows))
	collations, numeric := map[string]string{}, map[string]bool{}
	invisible := false
	for i, row := range rows {
		columns[i] = row[5]
		invisible = invisible || strings.Contains(strings.ToUpper(row[6]), "INVISIBLE")
		if row[4] != "" || strings.EqualFold(row[0], "enum") || strings.EqualFold(row[0], "set") {
			collations[strings.ToLower(row[5])] = row[4]
		}
		if numericTypes[strings.ToLower(row[0])] {
			numeric[strings.ToLower(row[5])] = true
		}
		if strings.EqualFold(row[5], t.ShardKey) {
			r = row
		}
	}
	if r == nil {
		return fmt.Errorf("shard key %s is not a column of %s.%s on shard %s", t.ShardKey, k.Schema.Name, sub, shard)
	}
	info := sharding.ColumnInfo{DataType: r[0], ColumnType: r[1], Collation: r[4], Extra: r[6]}
	fmt.Sscan(r[2], &info.Precision)
	fmt.Sscan(r[3], &info.Scale)
	ct, err := sharding.KeyColumnType(info)
	if err != nil {
		return fmt.Errorf("shard key %s: %w", t.ShardKey, err)
	}
	t.SetKeyType(ct)
	t.SetColumns(columns)
	t.SetCollations(collations)
	t.SetNumeric(numeric)
	t.SetInvisible(invisible)
	return nil
}

// numericTypes are the DATA_TYPEs of columns that hold numbers, which a
// number compares with as a number, without a warning (not BIT or YEAR).
var numericTypes = map[string]bool{"tinyint": true, "smallint": true, "mediumint": true, "int": true, "bigint": true,
	"decimal": true, "float": true, "double": true}

// quote writes s as a SQL string literal.
func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
}
