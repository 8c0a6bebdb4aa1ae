package admin

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// historyMinSpan is the shortest time the charts' x axis spans: a proxy
// started a few seconds ago shows its first samples at the right end of
// a minute rather than stretched over the whole chart.
const historyMinSpan = time.Minute

// statusCharts are the status page's charts of the history: per cluster
// the statements per second, latency p50 and p99 and errors per second;
// per backend server its pool; per replica its lag.
func statusCharts(samples []Sample, now time.Time) []Chart {
	to := now
	if n := len(samples); n > 0 {
		to = samples[n-1].At
	}
	from := to.Add(-historyMinSpan)
	if len(samples) > 0 && samples[0].At.Before(from) {
		from = samples[0].At
	}
	frame := func(id, title, unit, empty string) Chart {
		return Chart{ID: id, Title: title, Unit: unit, From: from, To: to, Empty: empty}
	}
	clusters := clusterNames(samples)
	qps := frame("chart-qps", "Statements per second", "per cluster", "no statements yet")
	lat := frame("chart-latency", "Latency p50 (solid) and p99 (dashed)", "ms", "no statements yet")
	errs := frame("chart-errors", "Errors per second", "statements answered with an error", "no statements yet")
	for i, name := range clusters {
		label := clusterLabel(name)
		qps.Series = append(qps.Series, Series{Name: label, Color: i, Points: clusterPoints(samples, name, func(c ClusterSample) float64 { return c.QPS })})
		lat.Series = append(lat.Series,
			Series{Name: label + " p50", Color: i, Points: clusterPoints(samples, name, func(c ClusterSample) float64 { return c.P50 * 1000 })},
			Series{Name: label + " p99", Color: i, Dashed: true, Points: clusterPoints(samples, name, func(c ClusterSample) float64 { return c.P99 * 1000 })})
		errs.Series = append(errs.Series, Series{Name: label, Color: i, Points: clusterPoints(samples, name, func(c ClusterSample) float64 { return c.ErrorsPS })})
	}
	charts := []Chart{qps, lat, errs}

	lag := frame("chart-lag", "Replica lag", "seconds behind the primary", "lag unknown")
	for i, srv := range serverKeys(samples) {
		points := serverPoints(samples, srv)
		pool := frame(elementID("chart-pool", srv.Cluster, srv.Address), "Pool "+srv.Cluster+" "+srv.Address, "connections", "no samples yet")
		pool.Series = []Series{
			{Name: "in use", Color: 0, Points: points(func(s ServerSample) float64 { return float64(s.InUse) })},
			{Name: "idle", Color: 4, Points: points(func(s ServerSample) float64 { return float64(s.Idle) })},
			{Name: "max_open", Color: 9, Dashed: true, Points: points(func(s ServerSample) float64 { return float64(s.Max) })},
		}
		charts = append(charts, pool)
		if srv.replica {
			lag.Series = append(lag.Series, Series{Name: srv.Cluster + " " + srv.Address, Color: i,
				Points: points(func(s ServerSample) float64 {
					if !s.LagKnown {
						return math.NaN()
					}
					return s.Lag.Seconds()
				})})
		}
	}
	if len(lag.Series) > 0 {
		charts = append(charts, lag)
	}
	return charts
}

// clusterNames are the clusters of the samples, by name, the
// pseudo-clusters (several, none) last.
func clusterNames(samples []Sample) []string {
	var names []string
	for _, s := range samples {
		for _, c := range s.Clusters {
			if !slices.Contains(names, c.Cluster) {
				names = append(names, c.Cluster)
			}
		}
	}
	pseudo := func(n string) int {
		if n == "*" || n == "-" {
			return 1
		}
		return 0
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(pseudo(a), pseudo(b)), cmp.Compare(a, b))
	})
	return names
}

// clusterLabel names a cluster in a legend, the statements that ran on
// several clusters and those the proxy answered itself in words.
func clusterLabel(name string) string {
	switch name {
	case "*":
		return "several shards"
	case "-":
		return "answered by the proxy"
	}
	return name
}

// clusterPoints are a cluster's values over the samples; a sample without
// the cluster is a gap.
func clusterPoints(samples []Sample, name string, value func(ClusterSample) float64) []Point {
	out := make([]Point, 0, len(samples))
	for _, s := range samples {
		v := math.NaN()
		if i := slices.IndexFunc(s.Clusters, func(c ClusterSample) bool { return c.Cluster == name }); i >= 0 {
			v = value(s.Clusters[i])
		}
		out = append(out, Point{At: s.At, V: v})
	}
	return out
}

// serverKey names a server across samples.
type serverKey struct {
	Cluster, Address string
	replica          bool // in any sample
}

func serverKeys(samples []Sample) []serverKey {
	var keys []serverKey
	for _, s := range samples {
		for _, srv := range s.Servers {
			i := slices.IndexFunc(keys, func(k serverKey) bool { return k.Cluster == srv.Cluster && k.Address == srv.Address })
			if i < 0 {
				keys = append(keys, serverKey{Cluster: srv.Cluster, Address: srv.Address})
				i = len(keys) - 1
			}
			keys[i].replica = keys[i].replica || srv.Replica
		}
	}
	return keys
}

// serverPoints returns a function giving a server's values over the
// samples; a sample without the server is a gap.
func serverPoints(samples []Sample, k serverKey) func(func(ServerSample) float64) []Point {
	return func(value func(ServerSample) float64) []Point {
		out := make([]Point, 0, len(samples))
		for _, s := range samples {
			v := math.NaN()
			if i := slices.IndexFunc(s.Servers, func(x ServerSample) bool { return x.Cluster == k.Cluster && x.Address == k.Address }); i >= 0 {
				v = value(s.Servers[i])
			}
			out = append(out, Point{At: s.At, V: v})
		}
		return out
	}
}

// elementID makes an HTML id of parts that may hold any character (host
// names, addresses): letters and digits kept, anything else a '-'.
func elementID(parts ...string) string {
	var b []byte
	for i, p := range parts {
		if i > 0 {
			b = append(b, '-')
		}
		for _, c := range []byte(p) {
			switch {
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
				b = append(b, c)
			default:
				b = append(b, '-')
			}
		}
	}
	return string(b)
}
