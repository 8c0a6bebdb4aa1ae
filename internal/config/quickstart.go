package config

import (
	"fmt"
	"strings"
)

// QuickStart builds the configuration for `shardgate serve --listen ...
// --backend ...` without a file: one listener at listen (DefaultListenAddress
// when ""), one cluster "default" whose primary and account come from
// backend ("USER:PASSWORD@HOST:PORT[/DB]"), and one proxy user with the same
// name and plaintext password whose default database is DB. adminHTTP may
// be "" (admin endpoint off). Problems are reported as a *ValidationError
// whose keys are the flag names (--listen, --backend, --admin-http).
func QuickStart(listen, backend, adminHTTP string) (*Config, error) {
	if listen == "" {
		listen = DefaultListenAddress
	}
	cfg := defaultConfig()
	cfg.Listeners[0].Address = listen
	cfg.Admin.HTTP = adminHTTP

	b, problems := parseBackendFlag(backend)

	var cluster Cluster
	cluster.setDefaults()
	cluster.Name = "default"
	cluster.User = b.user
	cluster.Password = b.password
	cluster.Primary.Address = b.address
	cfg.Clusters = []Cluster{cluster}
	cfg.Users = []User{{Name: b.user, Password: b.password, Cluster: "default", DefaultDatabase: b.database}}

	// Mark as present the keys a file would have set, so that validation
	// treats them as given (notably the possibly empty password).
	lines := map[string]int{}
	for _, k := range []string{
		"listeners[0].address", "admin.http",
		"clusters[0].name", "clusters[0].user", "clusters[0].password", "clusters[0].primary.address",
		"users[0].name", "users[0].password", "users[0].cluster",
	} {
		lines[k] = 0
	}
	// When --backend could not be split at all, the derived values are
	// meaningless; the one problem already reported says what is wrong.
	bad := map[string]bool{}
	if b.unusable {
		bad["clusters[0]"], bad["users[0]"] = true, true
	}
	if b.noUser {
		bad["clusters[0].user"], bad["users[0].name"] = true, true
	}
	if b.noAddress {
		bad["clusters[0].primary.address"] = true
	}

	v := newValidator("", "", lines, bad)
	v.config(cfg)
	problems = append(problems, v.problems...)
	if len(problems) > 0 {
		return nil, &ValidationError{Problems: flagProblems(problems)}
	}
	cfg.warnings = flagProblems(v.warnings)
	return cfg, nil
}

type backendFlag struct {
	user, password, address, database string
	unusable                          bool // no '@': nothing could be extracted
	noUser                            bool // already reported; skip "must not be empty"
	noAddress                         bool // likewise
}

const backendForm = "USER:PASSWORD@HOST:PORT[/DB]"

// parseBackendFlag splits USER:PASSWORD@HOST:PORT[/DB]. The password may
// contain ':' and '@', so the account ends at the last '@' and the user at
// the first ':'. The address itself is checked by the validator.
func parseBackendFlag(s string) (backendFlag, []Problem) {
	var b backendFlag
	var problems []Problem
	bad := func(reason string) {
		problems = append(problems, Problem{Key: "--backend", Reason: reason})
	}
	if s == "" {
		b.unusable = true
		bad("required; want " + backendForm)
		return b, problems
	}
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		b.unusable = true
		// The value is not echoed: it may well contain the password.
		bad("missing '@'; want " + backendForm)
		return b, problems
	}
	account, target := s[:at], s[at+1:]

	user, password, ok := strings.Cut(account, ":")
	if !ok {
		bad("missing ':PASSWORD' after the user; want " + backendForm + " (USER:@HOST:PORT for an empty password)")
	}
	if user == "" {
		b.noUser = true
		bad("missing user; want " + backendForm)
	}
	b.user, b.password = user, password

	address, db, _ := strings.Cut(target, "/")
	if address == "" {
		b.noAddress = true
		bad("missing HOST:PORT after '@'; want " + backendForm)
	}
	if strings.Contains(db, "/") {
		bad(fmt.Sprintf("database name %q must not contain '/'", db))
	}
	b.address, b.database = address, db
	return b, problems
}

// flagProblems renames configuration key paths to the flag they came from.
func flagProblems(ps []Problem) []Problem {
	out := make([]Problem, 0, len(ps))
	seen := map[Problem]bool{}
	for _, p := range ps {
		p.Key = flagFor(p.Key)
		if !seen[p] { // user and cluster account can fail the same way
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

func flagFor(key string) string {
	for prefix, flag := range map[string]string{
		"listeners[0]": "--listen",
		"admin":        "--admin-http",
		"clusters[0]":  "--backend",
		"users[0]":     "--backend",
	} {
		if key == prefix || strings.HasPrefix(key, prefix+".") || strings.HasPrefix(key, prefix+" ") {
			return flag
		}
	}
	return key
}
