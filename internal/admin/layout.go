package admin

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// The status page's compact views: the fleet with its agreement on the
// configuration, and the sharding layout one line per table.

// fleetSection is the fleet's instances and whether they agree on the
// configuration: the revision and checksum most of them run (ties: the
// newest revision), and how many run another.
type fleetSection struct {
	Proxies  []fleetRow
	Revision int64
	Checksum string
	Differ   int
}

// fleetRow is an instance and whether it runs the fleet's configuration.
type fleetRow struct {
	Proxy
	Agrees  bool
	Started string
}

// Alone reports that this instance is not part of a fleet.
func (f fleetSection) Alone() bool { return len(f.Proxies) == 0 }

// ShortChecksum is the checksum's first 12 characters, enough to tell
// revisions apart at a glance; the page shows the whole one on hover.
func (r fleetRow) ShortChecksum() string {
	if len(r.ConfigChecksum) > 12 {
		return r.ConfigChecksum[:12] + "…"
	}
	return r.ConfigChecksum
}

func fleetOf(proxies []Proxy) fleetSection {
	var f fleetSection
	if len(proxies) == 0 {
		return f
	}
	type config struct {
		rev int64
		sum string
	}
	counts := map[config]int{}
	for _, p := range proxies {
		counts[config{p.ConfigRevision, p.ConfigChecksum}]++
	}
	var best config
	bestN := 0
	for c, n := range counts {
		if n > bestN || n == bestN && (c.rev > best.rev || c.rev == best.rev && c.sum > best.sum) {
			best, bestN = c, n
		}
	}
	f.Revision, f.Checksum = best.rev, best.sum
	for _, p := range proxies {
		agrees := p.ConfigRevision == best.rev && p.ConfigChecksum == best.sum
		if !agrees {
			f.Differ++
		}
		started := ""
		if c := cell(p.Started); c != nil {
			started = *c
		}
		f.Proxies = append(f.Proxies, fleetRow{Proxy: p, Agrees: agrees, Started: started})
	}
	slices.SortStableFunc(f.Proxies, func(a, b fleetRow) int { return cmp.Compare(a.Addr, b.Addr) })
	return f
}

// shardGroup is one table of a sharded schema: its rule, key, and how
// many of its sub-tables (or copies) each cluster holds; the page lists
// the sub-tables themselves only when asked (a <details>).
type shardGroup struct {
	Schema, Table    string
	Type, Rule, Key  string
	SubTables        []SubTable
	Clusters         []clusterCount
	Unlisted, IsCopy bool
}

type clusterCount struct {
	Cluster string
	N       int
}

// DetailsKey names the group's <details> across refreshes, so that the
// page keeps open what the operator opened.
func (g shardGroup) DetailsKey() string { return "sharding:" + g.Schema + "." + g.Table }

// Placement says in a few words where the table lives: "s0 ×4 · s1 ×4".
func (g shardGroup) Placement() string {
	parts := make([]string, len(g.Clusters))
	for i, c := range g.Clusters {
		if g.Unlisted || g.IsCopy {
			parts[i] = c.Cluster
		} else {
			parts[i] = fmt.Sprintf("%s ×%d", c.Cluster, c.N)
		}
	}
	return strings.Join(parts, " · ")
}

// shardGroups folds SHOW SHARDING's rows, one per sub-table, into one
// group per table, in the view's order.
func shardGroups(rows []SubTable) []shardGroup {
	var out []shardGroup
	for _, st := range rows {
		n := len(out)
		if n == 0 || out[n-1].Schema != st.Schema || out[n-1].Table != st.Table {
			out = append(out, shardGroup{Schema: st.Schema, Table: st.Table, Type: st.Type, Rule: st.Rule, Key: st.ShardKey,
				Unlisted: st.Type == "unlisted", IsCopy: st.Type == "reference"})
			n++
		}
		g := &out[n-1]
		g.SubTables = append(g.SubTables, st)
		if i := slices.IndexFunc(g.Clusters, func(c clusterCount) bool { return c.Cluster == st.Cluster }); i >= 0 {
			g.Clusters[i].N++
		} else {
			g.Clusters = append(g.Clusters, clusterCount{Cluster: st.Cluster, N: 1})
		}
	}
	return out
}
