package deploy_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"regexp"
	"strings"
)

// dockerfile is a parsed Dockerfile: the ARGs before the first FROM and
// the stages.
type dockerfile struct {
	globalArgs map[string]string
	stages     []*stage
}

// stage is one FROM and the instructions after it.
type stage struct {
	name  string // AS name, "" when unnamed
	base  string // the FROM image, global ARGs expanded
	line  int
	instr []instruction
}

// instruction is one Dockerfile instruction: its keyword (upper case),
// its --flags and its arguments, either the exec form's JSON array
// (json non-nil) or the text after the flags.
type instruction struct {
	cmd   string
	flags map[string]string
	args  string
	json  []string
	line  int
}

func (in instruction) String() string {
	return fmt.Sprintf("Dockerfile:%d: %s %s", in.line, in.cmd, in.args)
}

// directive is a parser directive line: "# syntax=...", "# escape=...".
var directive = regexp.MustCompile(`^#\s*(\w+)\s*=`)

// parseDockerfile reads the subset of the Dockerfile syntax a plain
// Dockerfile uses: comments, continuation lines ending in \, --flags,
// exec-form JSON arrays. A parser directive other than syntax, or an
// escape character other than \, is an error rather than a misreading.
func parseDockerfile(file string) (*dockerfile, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	df := &dockerfile{globalArgs: map[string]string{}}
	var cur *stage
	var text strings.Builder
	start := 0
	directives := true // parser directives come first, before any other line
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for n := 1; sc.Scan(); n++ {
		trimmed := strings.TrimSpace(sc.Text())
		if m := directive.FindStringSubmatch(trimmed); directives && m != nil {
			if !strings.EqualFold(m[1], "syntax") {
				return nil, fmt.Errorf("%s:%d: parser directive %q not supported by this test's parser", file, n, m[1])
			}
			continue
		}
		directives = false
		if strings.HasPrefix(trimmed, "#") {
			continue
		}
		if trimmed == "" && text.Len() == 0 {
			continue
		}
		if text.Len() == 0 {
			start = n
		}
		if cont, ok := strings.CutSuffix(trimmed, `\`); ok {
			text.WriteString(cont + " ")
			continue
		}
		text.WriteString(trimmed)
		in, err := parseInstruction(text.String(), start)
		text.Reset()
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, start, err)
		}
		switch {
		case in.cmd == "FROM":
			st, err := parseFrom(in, df.globalArgs)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", file, start, err)
			}
			cur = st
			df.stages = append(df.stages, cur)
		case cur == nil && in.cmd == "ARG":
			name, value, _ := strings.Cut(in.args, "=")
			df.globalArgs[name] = value
		case cur == nil:
			return nil, fmt.Errorf("%s:%d: %s before the first FROM", file, start, in.cmd)
		default:
			cur.instr = append(cur.instr, in)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if text.Len() > 0 {
		return nil, fmt.Errorf("%s: ends in a continuation line", file)
	}
	if len(df.stages) == 0 {
		return nil, fmt.Errorf("%s: no FROM", file)
	}
	return df, nil
}

func parseInstruction(text string, line int) (instruction, error) {
	cmd, rest, _ := strings.Cut(text, " ")
	in := instruction{cmd: strings.ToUpper(cmd), flags: map[string]string{}, line: line}
	rest = strings.TrimSpace(rest)
	for strings.HasPrefix(rest, "--") {
		var flag string
		flag, rest, _ = strings.Cut(rest, " ")
		name, value, _ := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
		in.flags[name] = value
		rest = strings.TrimSpace(rest)
	}
	in.args = rest
	if strings.HasPrefix(rest, "[") {
		if err := json.Unmarshal([]byte(rest), &in.json); err != nil {
			return in, fmt.Errorf("%s: exec form is not a JSON array of strings: %v", in.cmd, err)
		}
	}
	return in, nil
}

func parseFrom(in instruction, globalArgs map[string]string) (*stage, error) {
	f := strings.Fields(in.args)
	st := &stage{line: in.line}
	switch {
	case len(f) == 1:
	case len(f) == 3 && strings.EqualFold(f[1], "AS"):
		st.name = f[2]
	default:
		return nil, fmt.Errorf("FROM %s: want FROM IMAGE [AS NAME]", in.args)
	}
	st.base = os.Expand(f[0], func(k string) string { return globalArgs[k] })
	return st, nil
}

// stageNamed returns the stage a COPY --from names (a name or an index).
func (df *dockerfile) stageNamed(name string) *stage {
	for i, st := range df.stages {
		if st.name == name || fmt.Sprint(i) == name {
			return st
		}
	}
	return nil
}

// all returns the stage's instructions with keyword cmd.
func (st *stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range st.instr {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// last returns the stage's last instruction with keyword cmd, the one
// in effect.
func (st *stage) last(cmd string) (instruction, bool) {
	all := st.all(cmd)
	if len(all) == 0 {
		return instruction{}, false
	}
	return all[len(all)-1], true
}

// copySources splits a shell-form COPY into its sources and destination.
func copySources(in instruction) (srcs []string, dest string, err error) {
	args := in.json
	if args == nil {
		args = strings.Fields(in.args)
	}
	if len(args) < 2 {
		return nil, "", fmt.Errorf("%v: want COPY SRC... DEST", in)
	}
	return args[:len(args)-1], args[len(args)-1], nil
}

// resolve is a container path made absolute against workdir.
func resolve(workdir, p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(workdir, p)
}

// dockerignore is the build context's .dockerignore: patterns matched
// against slash-separated paths relative to the context, a pattern that
// matches a directory leaving out everything below it.
type dockerignore []string

func readDockerignore(file string) (dockerignore, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var pats dockerignore
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		// Exceptions and ** change what the matcher must do; refuse them
		// rather than copy a context Docker would not.
		if strings.HasPrefix(line, "!") || strings.Contains(line, "**") {
			return nil, fmt.Errorf("%s:%d: %q: ! and ** are not supported by this test's matcher", file, n+1, line)
		}
		p := path.Clean(strings.TrimPrefix(line, "/"))
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("%s:%d: %q: %v", file, n+1, line, err)
		}
		pats = append(pats, p)
	}
	return pats, nil
}

// excludes reports whether rel (slash-separated, relative to the context)
// or a directory above it matches a pattern.
func (d dockerignore) excludes(rel string) bool {
	for p := rel; p != "." && p != "/" && p != ""; p = path.Dir(p) {
		for _, pat := range d {
			if ok, _ := path.Match(pat, p); ok {
				return true
			}
		}
	}
	return false
}
