package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"time"

	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/fleet"
)

// etcdEnv is the default of --etcd for the config commands.
const etcdEnv = "SHARDGATE_ETCD"

// configCommand is `shardgate config push|get|history|rollback|diff`: the
// fleet's configuration in etcd.
func configCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		configUsage(stderr)
		return 2
	}
	cmds := map[string]func(*configCmd) int{
		"push": (*configCmd).push, "get": (*configCmd).get, "history": (*configCmd).history,
		"rollback": (*configCmd).rollback, "diff": (*configCmd).diff,
	}
	run := cmds[args[0]]
	if run == nil {
		if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
			configUsage(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "shardgate config: unknown command %q\n", args[0])
		configUsage(stderr)
		return 2
	}
	c := &configCmd{name: args[0], args: args[1:], stdout: stdout, stderr: stderr}
	return run(c)
}

func configUsage(w io.Writer) {
	fmt.Fprint(w, `usage: shardgate config COMMAND --etcd etcd://HOST:PORT/PREFIX [flags]

  push FILE           validate FILE and write it as the new revision, only if the stored one
                      is still the one read (or --expect-revision N)
  get                 print the configuration in force (--revision N: an older one)
  history             list the revisions etcd still holds, newest first
  rollback REV        write revision REV again as the new revision
  diff [FILE|REV [REV2]]  the keys that differ: FILE or REV against the stored one, or REV against REV2

--etcd defaults to $`+etcdEnv+`; etcd's password is read from $`+etcdPasswordEnv+`.
`)
}

// configCmd is one config command's flags and connection.
type configCmd struct {
	name           string
	args           []string
	stdout, stderr io.Writer
	store          *fleet.Store
}

// open parses the command's flags (extra adds its own) and connects to
// etcd; done reports the exit code when the command must stop.
func (c *configCmd) open(synopsis string, nargs [2]int, extra func(*flag.FlagSet)) (code int, done bool) {
	fs := newFlagSet("config "+c.name, synopsis+" --etcd etcd://HOST:PORT/PREFIX", "See `shardgate config help`.")
	url := fs.String("etcd", os.Getenv(etcdEnv), "etcd://HOST:PORT[,HOST:PORT...]/PREFIX (default $"+etcdEnv+")")
	ef := addEtcdFlags(fs, false)
	if extra != nil {
		extra(fs)
	}
	// Flags may follow the arguments (push FILE --etcd URL): parse
	// again after each argument.
	var positional []string
	for rest := c.args; ; {
		if code, done := parseFlags(fs, rest, c.stdout, c.stderr); done {
			return code, true
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(positional) < nargs[0] || len(positional) > nargs[1] {
		fs.SetOutput(c.stderr)
		fs.Usage()
		return 2, true
	}
	c.args = positional
	if *url == "" {
		fmt.Fprintf(c.stderr, "shardgate config %s: --etcd is needed (or $%s)\n", c.name, etcdEnv)
		return 2, true
	}
	o, err := ef.options(*url)
	if err == nil {
		c.store, err = fleet.Open(o)
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "shardgate config %s: %v\n", c.name, err)
		return 1, true
	}
	return 0, false
}

func (c *configCmd) fail(err error) int {
	fmt.Fprintf(c.stderr, "shardgate config %s: %v\n", c.name, err)
	return 1
}

func ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 15*time.Second)
}

func (c *configCmd) push() int {
	var expect *int64
	code, done := c.open("FILE [--expect-revision N]", [2]int{1, 1}, func(fs *flag.FlagSet) {
		expect = fs.Int64("expect-revision", -1, "write only if the stored revision is N (0: none stored); default: the revision read now")
	})
	if done {
		return code
	}
	defer c.store.Close()
	file := c.args[0]
	data, err := os.ReadFile(file)
	if err != nil {
		return c.fail(err)
	}
	cfg, err := config.Parse(data, file)
	if err != nil {
		fmt.Fprintln(c.stderr, err)
		fmt.Fprintf(c.stderr, "shardgate config push: %s not pushed\n", file)
		return 1
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintln(c.stderr, "warning:", w)
	}
	ctx, cancel := ctx()
	defer cancel()
	cur, err := c.store.Get(ctx)
	if err != nil && !errors.Is(err, fleet.ErrNoConfig) {
		return c.fail(err)
	}
	base := cur.Revision
	if *expect >= 0 {
		base = *expect
	}
	if base == cur.Revision && cur.Revision != 0 && bytes.Equal(cur.Data, data) {
		fmt.Fprintf(c.stdout, "unchanged: revision %d is %s already\n", cur.Revision, file)
		return 0
	}
	rev, err := c.store.Put(ctx, data, base, pushMeta(file, 0))
	if err != nil {
		return c.fail(err)
	}
	fmt.Fprintf(c.stdout, "pushed %s as revision %d (checksum %s)\n", file, rev, fleet.Checksum(data))
	if cur.Revision != 0 {
		c.printChanges(cur, fleet.Document{Revision: rev, Data: data})
	}
	return 0
}

func pushMeta(file string, rollbackOf int64) fleet.PushMeta {
	m := fleet.PushMeta{Time: time.Now().UTC(), Source: file, RollbackOf: rollbackOf, Version: buildVersion()}
	if u, err := user.Current(); err == nil {
		m.User = u.Username
	}
	m.Host, _ = os.Hostname()
	return m
}

func (c *configCmd) get() int {
	var rev *int64
	code, done := c.open("[--revision N]", [2]int{0, 0}, func(fs *flag.FlagSet) {
		rev = fs.Int64("revision", 0, "print revision N instead of the newest")
	})
	if done {
		return code
	}
	defer c.store.Close()
	ctx, cancel := ctx()
	defer cancel()
	doc, err := c.document(ctx, *rev)
	if err != nil {
		return c.fail(err)
	}
	fmt.Fprintf(c.stderr, "# revision %d, checksum %s\n", doc.Revision, doc.Checksum())
	_, _ = c.stdout.Write(doc.Data)
	return 0
}

// document is revision rev, or the newest for 0.
func (c *configCmd) document(ctx context.Context, rev int64) (fleet.Document, error) {
	if rev == 0 {
		return c.store.Get(ctx)
	}
	return c.store.At(ctx, rev)
}

func (c *configCmd) history() int {
	var limit *int
	code, done := c.open("[--limit N]", [2]int{0, 0}, func(fs *flag.FlagSet) {
		limit = fs.Int("limit", 20, "list at most N revisions")
	})
	if done {
		return code
	}
	defer c.store.Close()
	ctx, cancel := ctx()
	defer cancel()
	entries, truncated, err := c.store.History(ctx, *limit)
	if err != nil {
		return c.fail(err)
	}
	fmt.Fprintf(c.stdout, "%-10s %-12s %-20s %-24s %s\n", "REVISION", "CHECKSUM", "PUSHED", "BY", "FROM")
	for _, e := range entries {
		when, by, from := "-", "-", "(written outside shardgate config)"
		if m := e.Meta; m != nil {
			when = m.Time.Format(time.DateTime)
			by = m.User + "@" + m.Host
			from = m.Source
			if m.RollbackOf != 0 {
				from = "rollback to " + strconv.FormatInt(m.RollbackOf, 10)
			}
		}
		fmt.Fprintf(c.stdout, "%-10d %-12s %-20s %-24s %s\n", e.Revision, e.Checksum, when, by, from)
	}
	if truncated {
		fmt.Fprintln(c.stdout, "(older revisions were compacted away by etcd)")
	}
	return 0
}

func (c *configCmd) rollback() int {
	code, done := c.open("REV", [2]int{1, 1}, nil)
	if done {
		return code
	}
	defer c.store.Close()
	rev, err := strconv.ParseInt(c.args[0], 10, 64)
	if err != nil || rev <= 0 {
		return c.fail(fmt.Errorf("REV must be a revision number (config history lists them), got %q", c.args[0]))
	}
	ctx, cancel := ctx()
	defer cancel()
	old, err := c.store.At(ctx, rev)
	if err != nil {
		return c.fail(err)
	}
	if _, err := config.Parse(old.Data, c.docName(old)); err != nil {
		fmt.Fprintln(c.stderr, err)
		return c.fail(fmt.Errorf("revision %d does not validate with this shardgate; not rolled back", rev))
	}
	cur, err := c.store.Get(ctx)
	if err != nil {
		return c.fail(err)
	}
	if bytes.Equal(cur.Data, old.Data) {
		fmt.Fprintf(c.stdout, "unchanged: revision %d holds revision %d's configuration already\n", cur.Revision, rev)
		return 0
	}
	newRev, err := c.store.Put(ctx, old.Data, cur.Revision, pushMeta("", rev))
	if err != nil {
		return c.fail(err)
	}
	fmt.Fprintf(c.stdout, "rolled back to revision %d's configuration as revision %d (checksum %s)\n", rev, newRev, old.Checksum())
	c.printChanges(cur, fleet.Document{Revision: newRev, Data: old.Data})
	return 0
}

func (c *configCmd) diff() int {
	code, done := c.open("[FILE | REV [REV2]]", [2]int{0, 2}, nil)
	if done {
		return code
	}
	defer c.store.Close()
	ctx, cancel := ctx()
	defer cancel()
	cur, err := c.store.Get(ctx)
	if err != nil {
		return c.fail(err)
	}
	from, to := cur, cur
	switch len(c.args) {
	case 0:
		return c.fail(errors.New("name a FILE or a REV to compare with the stored configuration"))
	case 1:
		if rev, perr := strconv.ParseInt(c.args[0], 10, 64); perr == nil {
			from, err = c.store.At(ctx, rev)
		} else {
			// A file is what would be pushed: the stored one is "from".
			var data []byte
			data, err = os.ReadFile(c.args[0])
			to = fleet.Document{Data: data}
		}
	case 2:
		var r1, r2 int64
		r1, err = strconv.ParseInt(c.args[0], 10, 64)
		if err == nil {
			r2, err = strconv.ParseInt(c.args[1], 10, 64)
		}
		if err == nil {
			if from, err = c.store.At(ctx, r1); err == nil {
				to, err = c.store.At(ctx, r2)
			}
		}
	}
	if err != nil {
		return c.fail(err)
	}
	if n := c.printChanges(from, to); n < 0 {
		return 1
	}
	return 0
}

func (c *configCmd) docName(doc fleet.Document) string {
	if doc.Revision == 0 {
		return c.args[0]
	}
	return c.store.URL() + "@" + strconv.FormatInt(doc.Revision, 10)
}

// printChanges prints the keys that differ from one document to the
// other, as a reload would apply them; -1 when one does not parse.
func (c *configCmd) printChanges(from, to fleet.Document) int {
	a, err := config.Parse(from.Data, c.docName(from))
	if err == nil {
		var b *config.Config
		if b, err = config.Parse(to.Data, c.docName(to)); err == nil {
			changes := config.Diff(a, b)
			if len(changes) == 0 {
				fmt.Fprintln(c.stdout, "no key differs")
			}
			for _, ch := range changes {
				note := ""
				if ch.Restart {
					note = "   (needs a restart)"
				}
				fmt.Fprintf(c.stdout, "  %s: %s -> %s%s\n", ch.Key, ch.Old, ch.New, note)
			}
			return len(changes)
		}
	}
	fmt.Fprintln(c.stderr, err)
	return -1
}
