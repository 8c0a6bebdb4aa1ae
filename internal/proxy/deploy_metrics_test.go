package proxy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"

	"github.com/shardgate/shardgate/internal/fleet"
	"github.com/shardgate/shardgate/internal/testenv"
)

// The operator's files (deploy/) that query the proxy's metrics.
const (
	dashboardFile = "../../deploy/grafana/shardgate.json"
	rulesFile     = "../../deploy/prometheus/rules.yml"
	rulesTestFile = "../../deploy/prometheus/rules_test.yml"
)

// A deployQuery is one PromQL expression of the deploy files and where it
// is, for the failure messages.
type deployQuery struct {
	where string
	expr  string
	// labelValues: a Grafana variable's label_values(...) query, not PromQL.
	labelValues bool
}

// dashboardQueries returns the dashboard's panel expressions and its
// variables' queries.
func dashboardQueries(t *testing.T) []deployQuery {
	t.Helper()
	var dash grafanaDashboard
	readJSON(t, dashboardFile, &dash)
	var qs []deployQuery
	var walk func([]grafanaPanel)
	walk = func(panels []grafanaPanel) {
		for _, p := range panels {
			for _, tg := range p.Targets {
				qs = append(qs, deployQuery{where: fmt.Sprintf("%s panel %q", dashboardFile, p.Title), expr: tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		qs = append(qs, deployQuery{where: fmt.Sprintf("%s variable %q", dashboardFile, v.Name), expr: v.Definition, labelValues: true})
	}
	return qs
}

type grafanaDashboard struct {
	Inputs []struct {
		Name     string `json:"name"`
		PluginID string `json:"pluginId"`
	} `json:"__inputs"`
	SchemaVersion int            `json:"schemaVersion"`
	UID           string         `json:"uid"`
	Panels        []grafanaPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type grafanaPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ X, Y, W, H int } `json:"gridPos"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"`
}

type promRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Record string `yaml:"record"`
			Alert  string `yaml:"alert"`
			Expr   string `yaml:"expr"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// ruleQueries returns the rules' expressions and the names they record.
func ruleQueries(t *testing.T) ([]deployQuery, map[string]bool) {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rules promRules
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	var qs []deployQuery
	recorded := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			name := r.Alert
			if r.Record != "" {
				name = r.Record
				recorded[r.Record] = true
			}
			qs = append(qs, deployQuery{where: fmt.Sprintf("%s rule %q", rulesFile, name), expr: r.Expr})
		}
	}
	return qs, recorded
}

func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// scrapedSeries indexes a /metrics scrape by series name (a histogram's
// name_bucket, name_sum and name_count, as PromQL sees them): the label
// names each carries, and the le bounds of each _bucket series.
type scrapedSeries struct {
	labels map[string]map[string]bool
	bounds map[string]map[string]bool
}

func indexScrape(t *testing.T, text string) scrapedSeries {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	s := scrapedSeries{labels: map[string]map[string]bool{}, bounds: map[string]map[string]bool{}}
	add := func(name string, m *dto.Metric, extra ...string) {
		if s.labels[name] == nil {
			s.labels[name] = map[string]bool{}
		}
		for _, l := range m.Label {
			s.labels[name][l.GetName()] = true
		}
		for _, l := range extra {
			s.labels[name][l] = true
		}
	}
	for name, mf := range mfs {
		for _, m := range mf.Metric {
			switch mf.GetType() {
			case dto.MetricType_HISTOGRAM:
				add(name+"_bucket", m, "le")
				add(name+"_sum", m)
				add(name+"_count", m)
				if s.bounds[name+"_bucket"] == nil {
					s.bounds[name+"_bucket"] = map[string]bool{"+Inf": true}
				}
				for _, b := range m.Histogram.Bucket {
					s.bounds[name+"_bucket"][strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)] = true
				}
			case dto.MetricType_SUMMARY:
				add(name, m, "quantile")
				add(name+"_sum", m)
				add(name+"_count", m)
			default:
				add(name, m)
			}
		}
	}
	return s
}

var (
	promString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promIdent    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	promSelector = regexp.MustCompile(`(shardgate_[a-z0-9_]+)\s*\{([^}]*)\}`)
	promMatcher  = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"`)
	promBy       = regexp.MustCompile(`\bby\s*\(([^)]*)\)`)
)

// targetLabels are added by Prometheus when it scrapes, not exported.
var targetLabels = map[string]bool{"job": true, "instance": true}

// checkQuery returns what q references that the scrape and the recording
// rules do not have: metric names, label names, histogram bounds.
func checkQuery(q deployQuery, s scrapedSeries, recorded map[string]bool) []string {
	var problems []string
	bare := promString.ReplaceAllString(q.expr, `""`)
	seen := map[string]bool{}
	for _, id := range promIdent.FindAllString(bare, -1) {
		if seen[id] {
			continue
		}
		seen[id] = true
		switch {
		case strings.Contains(id, ":"):
			if !recorded[id] {
				problems = append(problems, fmt.Sprintf("recording rule %s is not defined in %s", id, rulesFile))
			}
		case strings.HasPrefix(id, "shardgate_") && s.labels[id] == nil:
			problems = append(problems, fmt.Sprintf("metric %s is not in /metrics", id))
		}
	}
	for _, m := range promSelector.FindAllStringSubmatch(q.expr, -1) {
		name, labels := m[1], s.labels[m[1]]
		if labels == nil {
			continue // reported above
		}
		for _, lm := range promMatcher.FindAllStringSubmatch(m[2], -1) {
			label, value := lm[1], lm[2]
			switch {
			case targetLabels[label]:
			case !labels[label]:
				problems = append(problems, fmt.Sprintf("metric %s has no label %s", name, label))
			case label == "le" && !s.bounds[name][value]:
				problems = append(problems, fmt.Sprintf("histogram %s has no bucket le=%q (has %v)", name, value, sortedKeys(s.bounds[name])))
			}
		}
	}
	// by (...) groups the metric it is written before.
	for _, loc := range promBy.FindAllStringSubmatchIndex(bare, -1) {
		next := promIdent.FindAllString(bare[loc[1]:], -1)
		i := slices.IndexFunc(next, func(id string) bool { return strings.HasPrefix(id, "shardgate_") || strings.Contains(id, ":") })
		if i < 0 || strings.Contains(next[i], ":") || s.labels[next[i]] == nil {
			continue
		}
		for _, label := range strings.Split(bare[loc[2]:loc[3]], ",") {
			label = strings.TrimSpace(label)
			if label != "" && !targetLabels[label] && !s.labels[next[i]][label] {
				problems = append(problems, fmt.Sprintf("metric %s has no label %s (by %s)", next[i], label, label))
			}
		}
	}
	return problems
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Every metric, label and histogram bound that the Grafana dashboard and
// the Prometheus rules query exists in a real proxy's /metrics after a few
// statements (so that labelled metrics have children), and every recording
// rule they use is defined.
func TestDeployMetricsExist(t *testing.T) {
	srv := testenv.Shared(t)
	p := startProxy(t, proxyConfig(t, srv, ""))
	// The configuration's metrics exist in a fleet (etcd); TestFleetFollowsEtcd
	// reads them from real instances.
	p.SetFleet(standInFleet{})
	db := openDB(t, proxyDSN(p, appUser, appPass, "", ""))
	queryString(t, db, "SELECT 1")
	queryString(t, db, "SELECT @@version")
	if _, err := db.Exec("SELEC 1"); mysqlErrCode(err) != 1064 {
		t.Fatalf("a syntax error answered %v, want error 1064", err)
	}
	s := indexScrape(t, scrapeMetrics(t, p))

	rules, recorded := ruleQueries(t)
	queries := append(dashboardQueries(t), rules...)
	if len(rules) == 0 || len(queries) == len(rules) {
		t.Fatalf("found %d rule and %d dashboard queries; the deploy files were not read", len(rules), len(queries)-len(rules))
	}
	missing := map[string][]string{} // problem -> where
	for _, q := range queries {
		for _, pr := range checkQuery(q, s, recorded) {
			if !slices.Contains(missing[pr], q.where) {
				missing[pr] = append(missing[pr], q.where)
			}
		}
	}
	for _, pr := range sortedKeys(toSet(missing)) {
		t.Errorf("%s; used by:\n\t%s", pr, strings.Join(missing[pr], "\n\t"))
	}
}

// standInFleet is a fleet of one, for the metrics SetFleet exports.
type standInFleet struct{}

func (standInFleet) Instances() []fleet.Instance { return []fleet.Instance{{ID: "self"}} }
func (standInFleet) Self() fleet.Instance        { return fleet.Instance{ID: "self"} }
func (standInFleet) ConfigState() fleet.State    { return fleet.State{Applied: 1, Reachable: true} }

func toSet[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// The rules file is valid for Prometheus, and its unit tests (alerts
// firing, or not, on synthetic series) pass; every dashboard expression
// parses as PromQL once Grafana's variables are substituted.
func TestDeployRulesPromtool(t *testing.T) {
	promtool := clientsBinary(t, "promtool")
	run := func(args ...string) {
		t.Helper()
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("check", "rules", rulesFile)
	run("test", "rules", rulesTestFile)

	vars := strings.NewReplacer("$__rate_interval", "5m", "$job", ".*", "$instance", ".*", "$cluster", ".*")
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	n := 0
	for _, q := range dashboardQueries(t) {
		if q.labelValues {
			continue
		}
		n++
		expr, _ := json.Marshal(vars.Replace(q.expr)) // a JSON string is a YAML string
		fmt.Fprintf(&b, "      - record: dashboard:expr%d\n        expr: %s\n", n, expr)
	}
	file := filepath.Join(t.TempDir(), "dashboard-exprs.yml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Errorf("only %d dashboard expressions", n)
	}
	run("check", "rules", file)
}

// The dashboard imports into Grafana as the docs say: a ${DS_PROMETHEUS}
// input every panel and variable uses, the instance variable, unique
// panel ids and a layout within the 24-column grid.
func TestGrafanaDashboardShape(t *testing.T) {
	var dash grafanaDashboard
	readJSON(t, dashboardFile, &dash)
	if len(dash.Inputs) != 1 || dash.Inputs[0].Name != "DS_PROMETHEUS" || dash.Inputs[0].PluginID != "prometheus" {
		t.Errorf("__inputs = %+v, want one prometheus datasource DS_PROMETHEUS", dash.Inputs)
	}
	if dash.SchemaVersion < 36 || dash.UID == "" {
		t.Errorf("schemaVersion %d, uid %q", dash.SchemaVersion, dash.UID)
	}
	var vars []string
	for _, v := range dash.Templating.List {
		vars = append(vars, v.Name)
		if v.Datasource.UID != "${DS_PROMETHEUS}" {
			t.Errorf("variable %s: datasource %q", v.Name, v.Datasource.UID)
		}
	}
	if !slices.Contains(vars, "instance") {
		t.Errorf("variables %v: no instance", vars)
	}
	ids := map[int]string{}
	var walk func([]grafanaPanel)
	walk = func(panels []grafanaPanel) {
		for _, p := range panels {
			if prev, dup := ids[p.ID]; dup {
				t.Errorf("panels %q and %q share id %d", prev, p.Title, p.ID)
			}
			ids[p.ID] = p.Title
			if g := p.GridPos; g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
				t.Errorf("panel %q: gridPos %+v outside the grid", p.Title, g)
			}
			if p.Type != "row" {
				if p.Datasource == nil || p.Datasource.UID != "${DS_PROMETHEUS}" {
					t.Errorf("panel %q: datasource %+v, want ${DS_PROMETHEUS}", p.Title, p.Datasource)
				}
				if len(p.Targets) == 0 {
					t.Errorf("panel %q has no query", p.Title)
				}
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
}
