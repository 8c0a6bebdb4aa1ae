package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/shardgate/shardgate/internal/config"
)

// importKingshard prints a shardgate configuration made from a kingshard
// one. Rows stay where kingshard put them: hash and range rules become
// kingshard_hash and kingshard_range over the same sub-tables and nodes.
// What has no equivalent is reported on stderr: settings of the proxy
// itself as notes, anything that decides where rows live as errors (exit
// status 1, nothing printed), since a configuration that silently routed
// a table differently would lose its rows.
func importKingshard(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("import-kingshard", "FILE",
		"Converts the kingshard configuration FILE (ks.yaml) into a shardgate configuration on stdout.\n"+
			"Hash and range rules keep kingshard's placement (rules kingshard_hash, kingshard_range);\n"+
			"what cannot be converted is reported on stderr with exit status 1, and nothing is printed.")
	file, code, done := parseFileArgs(fs, args, stdout, stderr)
	if done {
		return code
	}
	data, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(stderr, "import-kingshard:", err)
		return 1
	}
	out, notes, err := convertKingshard(data, file)
	for _, n := range notes {
		fmt.Fprintf(stderr, "%s: note: %s\n", file, n)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	stdout.Write(out)
	return 0
}

// ksConfig is kingshard's configuration file (kingshard's config.Config),
// in both forms: schema_list with user_list, and the older single schema
// with one user and password.
type ksConfig struct {
	Addr           string      `yaml:"addr"`
	PrometheusAddr string      `yaml:"prometheus_addr"`
	User           string      `yaml:"user"`
	Password       string      `yaml:"password"`
	UserList       []*ksUser   `yaml:"user_list"`
	WebAddr        string      `yaml:"web_addr"`
	WebUser        string      `yaml:"web_user"`
	WebPassword    string      `yaml:"web_password"`
	LogPath        string      `yaml:"log_path"`
	LogLevel       string      `yaml:"log_level"`
	LogSQL         string      `yaml:"log_sql"`
	SlowLogTime    int         `yaml:"slow_log_time"`
	AllowIPs       string      `yaml:"allow_ips"`
	BlacklistFile  string      `yaml:"blacklist_sql_file"`
	Charset        string      `yaml:"proxy_charset"`
	Nodes          []*ksNode   `yaml:"nodes"`
	SchemaList     []*ksSchema `yaml:"schema_list"`
	Schema         *ksSchema   `yaml:"schema"`
}

type ksUser struct {
	User     string `yaml:"user"`
	Password string `yaml:"password"`
}

type ksNode struct {
	Name             string `yaml:"name"`
	DownAfterNoAlive int    `yaml:"down_after_noalive"`
	MaxConnNum       int    `yaml:"max_conns_limit"`
	User             string `yaml:"user"`
	Password         string `yaml:"password"`
	Master           string `yaml:"master"`
	Slave            string `yaml:"slave"`
}

type ksSchema struct {
	User    string     `yaml:"user"`
	Nodes   []string   `yaml:"nodes"`
	Default string     `yaml:"default"`
	Shard   []*ksShard `yaml:"shard"`
}

type ksShard struct {
	DB            string   `yaml:"db"`
	Table         string   `yaml:"table"`
	Key           string   `yaml:"key"`
	Nodes         []string `yaml:"nodes"`
	Locations     []int    `yaml:"locations"`
	Type          string   `yaml:"type"`
	TableRowLimit int      `yaml:"table_row_limit"`
	DateRange     []string `yaml:"date_range"`
}

// The shardgate configuration written: only the keys a conversion sets,
// in the order of config.Config.
type sgConfig struct {
	Listeners []sgListener `yaml:"listeners,omitempty"`
	Admin     *sgAdmin     `yaml:"admin,omitempty"`
	Log       *sgLog       `yaml:"log,omitempty"`
	Users     []sgUser     `yaml:"users"`
	Clusters  []sgCluster  `yaml:"clusters"`
	Schemas   []*sgSchema  `yaml:"schemas,omitempty"`
}

type sgListener struct {
	Address string `yaml:"address"`
}

type sgAdmin struct {
	HTTP string `yaml:"http"`
}

type sgLog struct {
	Level string `yaml:"level"`
}

type sgUser struct {
	Name     string `yaml:"name"`
	Password string `yaml:"password"`
	Cluster  string `yaml:"cluster,omitempty"`
}

type sgCluster struct {
	Name     string      `yaml:"name"`
	User     string      `yaml:"user"`
	Password string      `yaml:"password"`
	Pool     *sgPool     `yaml:"pool,omitempty"`
	Primary  sgBackend   `yaml:"primary"`
	Replicas []sgBackend `yaml:"replicas,omitempty"`
}

type sgPool struct {
	MaxOpen int `yaml:"max_open"`
}

type sgBackend struct {
	Address string `yaml:"address"`
	Weight  int    `yaml:"weight,omitempty"`
}

type sgSchema struct {
	Name           string     `yaml:"name"`
	DefaultCluster string     `yaml:"default_cluster"`
	Tables         []*sgTable `yaml:"tables"`
}

type sgTable struct {
	Name          string   `yaml:"name"`
	ShardKey      string   `yaml:"shard_key"`
	Rule          string   `yaml:"rule"`
	Shards        []string `yaml:"shards,flow"`
	SubTables     []int    `yaml:"sub_tables,flow"`
	TableRowLimit int      `yaml:"table_row_limit,omitempty"`
}

// ksConverter accumulates the shardgate configuration, the notes and the
// problems of one conversion.
type ksConverter struct {
	file     string
	ks       *ksConfig
	out      sgConfig
	schemas  map[string]*sgSchema // by kingshard db
	notes    []string
	problems []string
}

// convertKingshard converts a kingshard configuration. notes are settings
// with no equivalent that do not affect where rows live; a non-nil error
// lists everything that could not be converted.
func convertKingshard(data []byte, file string) (out []byte, notes []string, err error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true) // a key this converter does not know could be a rule it would drop
	var ks ksConfig
	if err := dec.Decode(&ks); err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("%s: not a kingshard configuration: %w", file, err)
	}
	c := &ksConverter{file: file, ks: &ks, schemas: map[string]*sgSchema{}}
	c.settings()
	c.nodes()
	c.usersAndSchemas()
	if len(c.problems) > 0 {
		return nil, c.notes, fmt.Errorf("%s: cannot convert:\n  %s", file, strings.Join(c.problems, "\n  "))
	}
	var buf bytes.Buffer
	buf.WriteString("# shardgate configuration converted from the kingshard configuration " + file + "\n" +
		"# by shardgate import-kingshard. Sub-tables keep kingshard's names and places.\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&c.out); err != nil {
		return nil, c.notes, fmt.Errorf("%s: %w", file, err)
	}
	out = buf.Bytes()
	// The output must be a valid configuration; a failure here is a bug
	// of the converter, reported rather than printed.
	if _, err := config.Parse(out, "converted "+file); err != nil {
		return nil, c.notes, fmt.Errorf("%s: the converted configuration is invalid (a bug in import-kingshard):\n%w", file, err)
	}
	return out, c.notes, nil
}

func (c *ksConverter) problem(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

func (c *ksConverter) note(format string, args ...any) {
	c.notes = append(c.notes, fmt.Sprintf(format, args...))
}

// settings carries over the proxy's own settings that shardgate has, and
// notes the others.
func (c *ksConverter) settings() {
	ks := c.ks
	if ks.Addr != "" {
		c.out.Listeners = []sgListener{{Address: ks.Addr}}
	}
	if ks.PrometheusAddr != "" {
		c.out.Admin = &sgAdmin{HTTP: ks.PrometheusAddr}
		c.note("prometheus_addr %s became admin.http, which serves /metrics (and /healthz, /readyz, /debug/pprof)", ks.PrometheusAddr)
	}
	switch ks.LogLevel {
	case "":
	case "debug", "info", "warn", "error":
		c.out.Log = &sgLog{Level: ks.LogLevel}
	default:
		c.note("log_level %q is not one of debug, info, warn, error; left at shardgate's default", ks.LogLevel)
	}
	dropped := []struct {
		key, value, why string
	}{
		{"web_addr", ks.WebAddr, "shardgate has no web API (admin.http serves metrics and health)"},
		{"web_user", ks.WebUser, "shardgate has no web API"},
		{"web_password", ks.WebPassword, "shardgate has no web API"},
		{"log_path", ks.LogPath, "shardgate logs to stderr"},
		{"log_sql", ks.LogSQL, "shardgate does not log statements"},
		{"slow_log_time", strconv.Itoa(ks.SlowLogTime), "shardgate has no slow log"},
		{"allow_ips", ks.AllowIPs, "shardgate has no client address list; use a firewall"},
		{"blacklist_sql_file", ks.BlacklistFile, "shardgate has no statement blacklist"},
		{"proxy_charset", ks.Charset, "clients choose their character set and shardgate keeps it on the backends"},
	}
	for _, d := range dropped {
		if d.value != "" && d.value != "0" {
			c.note("%s is not carried over: %s", d.key, d.why)
		}
	}
}

// nodes become clusters: master the primary, slaves the replicas.
func (c *ksConverter) nodes() {
	for i, n := range c.ks.Nodes {
		if n == nil || n.Name == "" {
			c.problem("nodes[%d]: a node needs a name", i)
			continue
		}
		cl := sgCluster{Name: n.Name, User: n.User, Password: n.Password, Primary: sgBackend{Address: n.Master}}
		if n.Master == "" {
			c.problem("node %s: no master", n.Name)
		}
		if n.MaxConnNum > 0 {
			cl.Pool = &sgPool{MaxOpen: n.MaxConnNum}
		}
		for _, s := range strings.Split(strings.Trim(n.Slave, ","), ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			addr, w, hasWeight := strings.Cut(s, "@")
			r := sgBackend{Address: addr}
			if hasWeight {
				weight, err := strconv.Atoi(w)
				if err != nil || weight < 1 {
					c.problem("node %s: slave %q: weight %q is not a positive integer", n.Name, s, w)
					continue
				}
				r.Weight = weight
			}
			cl.Replicas = append(cl.Replicas, r)
		}
		if n.DownAfterNoAlive != 0 {
			c.note("node %s: down_after_noalive is not carried over: clusters[].health decides when a server is taken out", n.Name)
		}
		c.out.Clusters = append(c.out.Clusters, cl)
	}
	if len(c.out.Clusters) == 0 {
		c.problem("no nodes")
	}
}

func (c *ksConverter) hasNode(name string) bool {
	return slices.ContainsFunc(c.out.Clusters, func(cl sgCluster) bool { return cl.Name == name })
}

// usersAndSchemas converts the users and each user's schema. shardgate's
// schemas hold for every user, so kingshard users must agree on the rules
// of a database they both shard.
func (c *ksConverter) usersAndSchemas() {
	ks := c.ks
	if ks.Schema != nil || ks.User != "" {
		// The older form: one user, one schema.
		if len(ks.UserList) > 0 || len(ks.SchemaList) > 0 {
			c.problem("both the older user/password/schema keys and user_list/schema_list are set; kingshard reads one form")
			return
		}
		if ks.Schema == nil {
			c.problem("user %s has no schema", ks.User)
			return
		}
		c.user(ks.User, ks.Password, ks.Schema, "schema")
		return
	}
	schemaOf := map[string]int{}
	for i, s := range ks.SchemaList {
		if s == nil {
			continue
		}
		if j, dup := schemaOf[s.User]; dup {
			c.problem("schema_list[%d]: user %s already has schema_list[%d]", i, s.User, j)
			continue
		}
		schemaOf[s.User] = i
	}
	for _, u := range ks.UserList {
		if u == nil {
			continue
		}
		i, ok := schemaOf[u.User]
		if !ok {
			c.problem("user %s has no entry in schema_list", u.User)
			continue
		}
		c.user(u.User, u.Password, ks.SchemaList[i], fmt.Sprintf("schema_list[%d]", i))
		delete(schemaOf, u.User)
	}
	for user, i := range schemaOf {
		c.problem("schema_list[%d]: user %s is not in user_list", i, user)
	}
	if len(c.out.Users) == 0 && len(c.problems) == 0 {
		c.problem("no users")
	}
}

// user adds a user whose unsharded databases live on its schema's default
// node, and the schema's shard rules.
func (c *ksConverter) user(name, password string, s *ksSchema, path string) {
	if !c.hasNode(s.Default) {
		c.problem("%s: default node %q is not a node", path, s.Default)
		return
	}
	c.out.Users = append(c.out.Users, sgUser{Name: name, Password: password, Cluster: s.Default})
	for i, sh := range s.Shard {
		if sh == nil {
			continue // "shard: [ - ]": kingshard's way of writing no rules
		}
		c.table(fmt.Sprintf("%s.shard[%d] (%s.%s)", path, i, sh.DB, sh.Table), s, sh)
	}
}

// table converts one shard rule into a table of the schema named by its db.
func (c *ksConverter) table(path string, s *ksSchema, sh *ksShard) {
	if sh.DB == "" || sh.Table == "" || sh.Key == "" {
		c.problem("%s: db, table and key are required", path)
		return
	}
	for _, n := range sh.Nodes {
		if !slices.Contains(s.Nodes, n) || !c.hasNode(n) {
			c.problem("%s: node %q is not in the schema's nodes %v", path, n, s.Nodes)
			return
		}
	}
	t := &sgTable{Name: sh.Table, ShardKey: strings.ToLower(sh.Key)} // kingshard lower-cases the key
	switch sh.Type {
	case "hash":
		t.Rule = "kingshard_hash"
	case "range":
		t.Rule = "kingshard_range"
		if sh.TableRowLimit < 1 {
			c.problem("%s: a range rule needs table_row_limit > 0", path)
			return
		}
		t.TableRowLimit = sh.TableRowLimit
	case "date_year", "date_month", "date_day":
		c.problem("%s: rule %s cannot be converted: kingshard names its sub-tables by date (%s_%s), shardgate numbers them (%s_0000, %s_0001, ...); "+
			"rename the sub-tables and configure rule %s with periods, or keep this table on kingshard",
			path, sh.Type, sh.Table, dateSuffix(sh.Type), sh.Table, sh.Table, sh.Type)
		return
	default:
		c.problem("%s: unknown rule type %q (kingshard has hash, range, date_year, date_month, date_day)", path, sh.Type)
		return
	}
	if len(sh.Locations) != len(sh.Nodes) || len(sh.Nodes) == 0 {
		c.problem("%s: locations %v needs one count per node of %v", path, sh.Locations, sh.Nodes)
		return
	}
	// A node with no sub-table holds none of the numbers: leaving it out
	// keeps every sub-table on its node.
	for i, n := range sh.Locations {
		if n < 0 {
			c.problem("%s: locations %v: negative count", path, sh.Locations)
			return
		}
		if n > 0 {
			t.Shards = append(t.Shards, sh.Nodes[i])
			t.SubTables = append(t.SubTables, n)
		}
	}
	if len(t.Shards) == 0 {
		c.problem("%s: locations %v place no sub-table", path, sh.Locations)
		return
	}
	c.addTable(path, s.Default, sh.DB, t)
}

func dateSuffix(rule string) string {
	return map[string]string{"date_year": "2016", "date_month": "201603", "date_day": "20160306"}[rule]
}

// addTable adds t to the schema of db, which two kingshard users may both
// configure: they must then agree.
func (c *ksConverter) addTable(path, defaultNode, db string, t *sgTable) {
	sc := c.schemas[db]
	if sc == nil {
		sc = &sgSchema{Name: db, DefaultCluster: defaultNode}
		c.schemas[db] = sc
		c.out.Schemas = append(c.out.Schemas, sc)
	}
	if sc.DefaultCluster != defaultNode {
		c.problem("%s: database %s has default node %s for one user and %s for another; shardgate has one per schema, for every user",
			path, db, sc.DefaultCluster, defaultNode)
		return
	}
	for _, old := range sc.Tables {
		if old.Name != t.Name {
			continue
		}
		if !equalTables(old, t) {
			c.problem("%s: another user shards %s.%s differently; shardgate's schemas hold for every user", path, db, t.Name)
		}
		return
	}
	sc.Tables = append(sc.Tables, t)
}

func equalTables(a, b *sgTable) bool {
	return a.ShardKey == b.ShardKey && a.Rule == b.Rule && slices.Equal(a.Shards, b.Shards) &&
		slices.Equal(a.SubTables, b.SubTables) && a.TableRowLimit == b.TableRowLimit
}
