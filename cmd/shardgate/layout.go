package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/sharding"
)

// printLayout prints where the rows of each schema live, as check-config
// shows it: a line per listed table with its rule and the sub-tables of
// each shard, then the key ranges, values or periods of each sub-table for
// the rules that have them.
func printLayout(w io.Writer, cfg *config.Config) error {
	schemas, err := cfg.ShardingSchemas()
	if err != nil {
		return err
	}
	for i, s := range schemas {
		cs := &cfg.Schemas[i]
		fmt.Fprintf(w, "schema %s: unlisted tables unsharded on %s; shards %s\n", s.Name, s.DefaultCluster, strings.Join(s.Shards, ", "))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		var details []string
		for j := range cs.Tables {
			t := &cs.Tables[j]
			st := s.Table(t.Name)
			if st.Type == sharding.TableReference {
				fmt.Fprintf(tw, "  %s.%s\treference\t%s\n", s.Name, t.Name, strings.Join(s.Shards, ", "))
				continue
			}
			rt := cs.RuleTable(t)
			rule := fmt.Sprintf("%s(%s)", rt.Rule, t.ShardKey)
			if rt != t {
				rule += " like " + t.Like
			}
			fmt.Fprintf(tw, "  %s.%s\t%s\t%s\n", s.Name, t.Name, rule, shardRuns(st))
			details = append(details, subTableParams(st, rt)...)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, d := range details {
			fmt.Fprintln(w, d)
		}
	}
	return nil
}

// shardRuns lists each shard's sub-tables: "s0: t_0000..t_0003  s1: t_0004".
func shardRuns(t *sharding.SchemaTable) string {
	var runs []string
	n := t.Group.Layout.SubTables()
	for first := 0; first < n; {
		_, shard := t.SubTable(first)
		last := first
		for last+1 < n && t.Group.Layout.Shard(last+1) == shard {
			last++
		}
		run := shard + ": " + sharding.SubTableName(t.Name, first)
		if last > first {
			run += ".." + sharding.SubTableName(t.Name, last)
		}
		runs = append(runs, run)
		first = last + 1
	}
	return strings.Join(runs, "  ")
}

// subTableParams describes the keys of each sub-table for the rules that
// give them per sub-table; hash-like rules spread keys and have none.
func subTableParams(t *sharding.SchemaTable, rt *config.Table) []string {
	n := t.Group.Layout.SubTables()
	var out []string
	for i := 0; i < n; i++ {
		var keys string
		switch rt.Rule {
		case "range":
			keys = fmt.Sprintf("%s in [%s, %s)", t.ShardKey, bound(rt.Ranges[i][0], "-inf"), bound(rt.Ranges[i][1], "+inf"))
		case "list":
			vals := make([]string, len(rt.Values[i]))
			for k, v := range rt.Values[i] {
				vals[k] = bound(v, "NULL")
			}
			keys = fmt.Sprintf("%s in (%s)", t.ShardKey, strings.Join(vals, ", "))
		case "date_year", "date_month", "date_day":
			keys = fmt.Sprintf("%s in %s", t.ShardKey, rt.Periods[i])
		case "kingshard_range":
			l := int64(rt.TableRowLimit)
			keys = fmt.Sprintf("%s in [%d, %d)", t.ShardKey, int64(i)*l, int64(i+1)*l)
		default:
			return nil
		}
		name, shard := t.SubTable(i)
		out = append(out, fmt.Sprintf("    %s on %s: %s", name, shard, keys))
	}
	return out
}

func bound(v config.KeyValue, null string) string {
	if v.Null {
		return null
	}
	return v.Text
}
