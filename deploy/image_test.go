package deploy_test

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The repository root is the image's build context.
const repoRoot = ".."

// testVersion is the VERSION build argument the suite builds with: the
// binary must report it.
const testVersion = "v9.9.9-imagetest"

// caBundle is the one file the final stage takes from the golang image
// rather than from the build's steps: Debian's CA bundle, where Go's
// crypto/x509 looks on Linux.
const caBundle = "/etc/ssl/certs/ca-certificates.crt"

// builtImage is the image the Dockerfile makes, as the suite made it: its
// files (final path -> the file on this machine; "" for caBundle, which
// the golang image has) and the binary its ENTRYPOINT runs.
type builtImage struct {
	df      *dockerfile
	final   *stage
	builder *stage
	files   map[string]string
	binary  string
}

var image struct {
	once sync.Once
	dir  string // removed by TestMain
	img  *builtImage
	err  error
}

// theImage builds the image once per test process by running the build
// stage's steps (see buildImage).
func theImage(t *testing.T) *builtImage {
	t.Helper()
	image.once.Do(func() {
		image.dir, image.err = os.MkdirTemp("", "shardgate-image-")
		if image.err == nil {
			image.img, image.err = buildImage(repoRoot, image.dir, map[string]string{"VERSION": testVersion})
		}
	})
	if image.err != nil {
		t.Fatalf("building the image with the Dockerfile's steps: %v", image.err)
	}
	return image.img
}

// buildImage runs the Dockerfile's build stage as a script, as its RUN
// lines would run in the golang image: in a copy of the context (less
// what .dockerignore leaves out) under dir, standing for the stage's
// filesystem, with the stage's ARGs and ENVs in the environment. The
// final stage's COPY --from lines then say which of its files make the
// image.
func buildImage(ctxDir, dir string, buildArgs map[string]string) (*builtImage, error) {
	df, err := parseDockerfile(filepath.Join(ctxDir, "Dockerfile"))
	if err != nil {
		return nil, err
	}
	ignore, err := readDockerignore(filepath.Join(ctxDir, ".dockerignore"))
	if err != nil {
		return nil, err
	}
	img := &builtImage{df: df, final: df.stages[len(df.stages)-1], files: map[string]string{}}
	for _, in := range img.final.all("COPY") {
		from := in.flags["from"]
		if from == "" {
			return nil, fmt.Errorf("%v: the final stage copies from the context; it takes only what the build stage made", in)
		}
		st := df.stageNamed(from)
		switch {
		case st == nil || st == img.final:
			return nil, fmt.Errorf("%v: no build stage %q", in, from)
		case img.builder != nil && img.builder != st:
			return nil, fmt.Errorf("%v: a second build stage; the suite runs one", in)
		}
		img.builder = st
	}
	if img.builder == nil {
		return nil, errors.New("the final stage copies nothing from a build stage")
	}
	root := filepath.Join(dir, "stage")
	if err := runStage(df, img.builder, ctxDir, ignore, root, buildArgs); err != nil {
		return nil, err
	}
	for _, in := range img.final.all("COPY") {
		if err := img.collect(in, root); err != nil {
			return nil, err
		}
	}
	entry, ok := img.final.last("ENTRYPOINT")
	if !ok || len(entry.json) == 0 {
		return nil, errors.New("the final stage has no exec-form ENTRYPOINT")
	}
	img.binary = img.files[entry.json[0]]
	if img.binary == "" {
		return nil, fmt.Errorf("%v: %s is not a file the build made", entry, entry.json[0])
	}
	return img, nil
}

// runStage runs st's instructions with the container's paths under root.
func runStage(df *dockerfile, st *stage, ctxDir string, ignore dockerignore, root string, buildArgs map[string]string) error {
	env := stageEnv()
	vars := map[string]string{}
	expand := func(s string) string {
		return os.Expand(s, func(k string) string { return vars[k] })
	}
	workdir := "/"
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	for _, in := range st.instr {
		switch in.cmd {
		case "WORKDIR":
			workdir = resolve(workdir, expand(in.args))
			if err := os.MkdirAll(filepath.Join(root, workdir), 0o755); err != nil {
				return err
			}
		case "ARG":
			name, def, hasDef := strings.Cut(in.args, "=")
			v, given := buildArgs[name]
			switch {
			case given:
			case hasDef:
				v = def
			default:
				v = df.globalArgs[name]
			}
			vars[name] = v
		case "ENV":
			for _, kv := range strings.Fields(in.args) {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					return fmt.Errorf("%v: write ENV KEY=VALUE", in)
				}
				vars[k] = expand(strings.Trim(v, `"`))
			}
		case "COPY":
			if len(in.flags) > 0 {
				return fmt.Errorf("%v: flags in the build stage's COPY are not run by the suite", in)
			}
			srcs, dest, err := copySources(in)
			if err != nil {
				return err
			}
			if err := copyContext(ctxDir, ignore, srcs, filepath.Join(root, resolve(workdir, expand(dest))), strings.HasSuffix(dest, "/")); err != nil {
				return fmt.Errorf("%v: %w", in, err)
			}
		case "RUN":
			if len(in.flags) > 0 {
				return fmt.Errorf("%v: RUN flags are not run by the suite", in)
			}
			cmd := exec.Command("sh", "-c", in.args)
			if in.json != nil {
				cmd = exec.Command(in.json[0], in.json[1:]...)
			}
			cmd.Dir = filepath.Join(root, workdir)
			cmd.Env = slices.Clone(env)
			for _, k := range slices.Sorted(maps.Keys(vars)) {
				cmd.Env = append(cmd.Env, k+"="+vars[k])
			}
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("%v: %w\n%s", in, err, out)
			}
		case "LABEL", "EXPOSE":
		default:
			return fmt.Errorf("%v: not run by the suite in a build stage", in)
		}
	}
	return nil
}

// stageEnv is this process's environment less what the golang image
// does not set and that would change the build: a CGO_ENABLED=0 here
// would hide a Dockerfile that forgets it.
func stageEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "CGO_ENABLED", "GOFLAGS", "GOOS", "GOARCH", "GOEXPERIMENT", "CC", "CGO_LDFLAGS":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// copyContext copies the context's srcs (globs) to dest as COPY does: a
// directory's contents, not the directory; files into dest when it ends
// in / or there are several.
func copyContext(ctxDir string, ignore dockerignore, srcs []string, dest string, destIsDir bool) error {
	var matches []string
	for _, s := range srcs {
		m, err := filepath.Glob(filepath.Join(ctxDir, filepath.FromSlash(s)))
		if err != nil {
			return err
		}
		if len(m) == 0 {
			return fmt.Errorf("%s: no such file in the context", s)
		}
		matches = append(matches, m...)
	}
	destIsDir = destIsDir || len(matches) > 1
	for _, m := range matches {
		fi, err := os.Stat(m)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(ctxDir, m)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if ignore.excludes(rel) {
			return fmt.Errorf("%s is left out by .dockerignore", rel)
		}
		switch {
		case fi.IsDir():
			err = copyTree(m, dest, func(r string) bool { return ignore.excludes(path.Join(rel, r)) })
		case destIsDir:
			err = copyFile(m, filepath.Join(dest, filepath.Base(m)), fi.Mode())
		default:
			err = copyFile(m, dest, fi.Mode())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// copyTree copies the regular files and directories below src into dest,
// leaving out those skip names (slash-separated, relative to src).
func copyTree(src, dest string, skip func(rel string) bool) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if rel != "." && skip(filepath.ToSlash(rel)) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		target := filepath.Join(dest, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case fi.Mode().IsRegular():
			return copyFile(p, target, fi.Mode())
		}
		return nil // the context's symbolic links: none that the build needs
	})
}

func copyFile(src, dest string, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode.Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// collect records the files a final-stage COPY --from puts in the image.
func (img *builtImage) collect(in instruction, root string) error {
	srcs, dest, err := copySources(in)
	if err != nil {
		return err
	}
	for _, src := range srcs {
		src = path.Clean(src)
		host := filepath.Join(root, filepath.FromSlash(src))
		fi, err := os.Stat(host)
		switch {
		case err != nil && src == caBundle:
			img.files[fileDest(src, dest, len(srcs) > 1)] = ""
			continue
		case err != nil:
			return fmt.Errorf("%v: %s was not made by the build stage's steps, which the suite runs below its WORKDIR", in, src)
		case !fi.IsDir():
			img.files[fileDest(src, dest, len(srcs) > 1)] = host
			continue
		}
		err = filepath.WalkDir(host, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == host {
				return err
			}
			rel, err := filepath.Rel(host, p)
			if err != nil {
				return err
			}
			img.files[path.Join(dest, filepath.ToSlash(rel))] = p
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func fileDest(src, dest string, several bool) string {
	if strings.HasSuffix(dest, "/") || several {
		return path.Join(dest, path.Base(src))
	}
	return path.Clean(dest)
}

// TestDockerfileFinalStage: the image runs as a numeric non-root user,
// with no shell (no RUN, exec-form ENTRYPOINT and CMD), from an empty or
// distroless base, and its Go is the one go.mod asks for.
func TestDockerfileFinalStage(t *testing.T) {
	df, err := parseDockerfile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	final := df.stages[len(df.stages)-1]
	if final.base != "scratch" && !strings.HasPrefix(final.base, "gcr.io/distroless/static") {
		t.Errorf("Dockerfile:%d: the final stage is FROM %s; want scratch or distroless static (no shell, no libc)", final.line, final.base)
	}
	for _, cmd := range []string{"RUN", "SHELL", "ADD"} {
		for _, in := range final.all(cmd) {
			t.Errorf("%v: the final stage has no shell to run anything and takes only the build stage's files", in)
		}
	}
	user, ok := final.last("USER")
	if m := regexp.MustCompile(`^(\d+)(?::(\d+))?$`).FindStringSubmatch(user.args); !ok || m == nil {
		t.Errorf("final stage USER %q: want a numeric UID[:GID], which runAsNonRoot can check without /etc/passwd", user.args)
	} else if m[1] == "0" || m[2] == "0" {
		t.Errorf("%v: runs as root", user)
	}
	entry, ok := final.last("ENTRYPOINT")
	if !ok || len(entry.json) != 1 || !path.IsAbs(entry.json[0]) {
		t.Errorf("final stage ENTRYPOINT %q: want the exec form [\"/BINARY\"] (the shell form needs /bin/sh)", entry.args)
	}
	cmd, ok := final.last("CMD")
	if !ok || len(cmd.json) == 0 || cmd.json[0] != "serve" {
		t.Errorf("final stage CMD %q: want the exec form [\"serve\", ...]", cmd.args)
	}
	if i := slices.Index(cmd.json, "--config"); i < 0 || i+1 >= len(cmd.json) || !path.IsAbs(cmd.json[i+1]) {
		t.Errorf("final stage CMD %q: want --config /PATH, a file of a mounted volume", cmd.args)
	}

	// The build stage's golang image must have the Go go.mod asks for:
	// the image's go refuses a newer go line (GOTOOLCHAIN=local).
	gomod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go (\d+)\.(\d+)`).FindSubmatch(gomod)
	builder := df.stages[0]
	imageGo := regexp.MustCompile(`^golang:(\d+)\.(\d+)`).FindStringSubmatch(builder.base)
	switch {
	case goLine == nil:
		t.Fatal("go.mod has no go line")
	case imageGo == nil:
		t.Errorf("Dockerfile:%d: the build stage is FROM %s; want golang:MAJOR.MINOR", builder.line, builder.base)
	case versionLess(imageGo[1], imageGo[2], string(goLine[1]), string(goLine[2])):
		t.Errorf("Dockerfile:%d: FROM %s is older than go.mod's go %s.%s", builder.line, builder.base, goLine[1], goLine[2])
	}
}

func versionLess(major, minor, wantMajor, wantMinor string) bool {
	a, _ := strconv.Atoi(major)
	b, _ := strconv.Atoi(minor)
	c, _ := strconv.Atoi(wantMajor)
	d, _ := strconv.Atoi(wantMinor)
	return a < c || a == c && b < d
}

// TestDockerfileBuild builds the image with the Dockerfile's own steps and
// checks what it holds: a static binary that runs and reports the version
// it was built with, the CA bundle and an empty /tmp anyone may write in,
// nothing else. Where a container engine runs, it builds the image itself
// too.
func TestDockerfileBuild(t *testing.T) {
	img := theImage(t)
	want := []string{caBundle, "/shardgate", "/tmp"}
	if got := slices.Sorted(maps.Keys(img.files)); !slices.Equal(got, want) {
		t.Errorf("the final image holds %q; want only %q: the binary, the CA bundle and /tmp", got, want)
	}
	if tmp := img.files["/tmp"]; tmp != "" {
		fi, err := os.Stat(tmp)
		switch {
		case err != nil:
			t.Error(err)
		case !fi.IsDir() || fi.Mode().Perm() != 0o777 || fi.Mode()&fs.ModeSticky == 0:
			t.Errorf("/tmp is %v; want a directory with mode 1777 (the nonroot user spills merges there)", fi.Mode())
		}
	}
	checkStaticBinary(t, img.binary)
	checkBuildSettings(t, img.binary)
	checkRuns(t, img.binary)

	if engine := containerEngine(t); engine != "" {
		buildWithEngine(t, engine, img)
	} else {
		t.Log("no docker or podman with a running daemon: the image was built with the Dockerfile's steps as a script")
	}
}

// checkStaticBinary: no interpreter (the dynamic loader) and no dynamic
// section, so the binary runs on an image with no libc.
func checkStaticBinary(t *testing.T, bin string) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatalf("the image's binary: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s has a %v program header: dynamically linked, it will not start FROM scratch (CGO_ENABLED=0?)", bin, p.Type)
		}
	}
	if f.Section(".dynamic") != nil || f.Section(".interp") != nil {
		t.Errorf("%s has a .dynamic or .interp section: dynamically linked", bin)
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s needs shared libraries %q", bin, libs)
	}
}

// checkBuildSettings reads what the Go toolchain recorded in the binary.
func checkBuildSettings(t *testing.T, bin string) {
	t.Helper()
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatalf("build info of the image's binary: %v", err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" {
		t.Errorf("built with CGO_ENABLED=%q; want 0", settings["CGO_ENABLED"])
	}
	if settings["-trimpath"] != "true" {
		t.Errorf("built without -trimpath: the build machine's paths are in the binary")
	}
	// -ldflags is not recorded with -trimpath (it may hold paths); the
	// version the binary reports shows it (checkRuns).
}

// checkRuns runs the binary as the image's ENTRYPOINT would.
func checkRuns(t *testing.T, bin string) {
	t.Helper()
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "shardgate "+testVersion+" ") && strings.TrimSpace(string(out)) != "shardgate "+testVersion {
		t.Errorf("shardgate version: %v: %q; want the VERSION build argument %s", err, out, testVersion)
	}
	out, err = exec.Command(bin, "help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "shardgate serve") {
		t.Errorf("shardgate help: %v: %q", err, out)
	}
}

// containerEngine is docker or podman when one answers `info` (its daemon
// or service runs), else "".
func containerEngine(t *testing.T) string {
	for _, engine := range []string{"docker", "podman"} {
		if _, err := exec.LookPath(engine); err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := exec.CommandContext(ctx, engine, "info").Run()
		cancel()
		if err == nil {
			return engine
		}
		t.Logf("%s is installed but `%s info` fails (%v): no daemon to build with", engine, engine, err)
	}
	return ""
}

// buildWithEngine builds the image with a container engine, runs it and
// checks the binary it holds as the script's.
func buildWithEngine(t *testing.T, engine string, img *builtImage) {
	tag := fmt.Sprintf("shardgate-imagetest:%d", os.Getpid())
	run := func(args ...string) string {
		t.Helper()
		var stderr bytes.Buffer
		cmd := exec.Command(engine, args...)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s%s", engine, strings.Join(args, " "), err, out, stderr.Bytes())
		}
		return strings.TrimSpace(string(out))
	}
	run("build", "--build-arg", "VERSION="+testVersion, "--tag", tag, repoRoot)
	t.Cleanup(func() { _ = exec.Command(engine, "rmi", "--force", tag).Run() })
	if out := run("run", "--rm", "--read-only", tag, "version"); !strings.HasPrefix(out, "shardgate "+testVersion) {
		t.Errorf("%s run %s version: %q; want %s", engine, tag, out, testVersion)
	}
	want, _ := img.final.last("USER")
	if user := run("image", "inspect", "--format", "{{.Config.User}}", tag); user != want.args {
		t.Errorf("the image's user is %q; the Dockerfile says %q", user, want.args)
	}
	id := run("create", tag)
	defer func() { _ = exec.Command(engine, "rm", id).Run() }()
	bin := filepath.Join(t.TempDir(), "shardgate")
	run("cp", id+":/shardgate", bin)
	checkStaticBinary(t, bin)
	checkBuildSettings(t, bin)
}
