package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// parseYAML returns the root node of the single document in data, or nil
// for an empty document. Syntax errors come back as a Problem carrying the
// line yaml.v3 reports.
func parseYAML(data []byte, filename string) (*yaml.Node, *Problem) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntaxProblem(filename, err)
	}
	// A second document would be silently ignored by a plain decode; an
	// operator who wrote one almost certainly expected it to take effect.
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, &Problem{File: filename, Line: extra.Line,
			Reason: "multiple YAML documents; put the whole configuration in one document"}
	case !errors.Is(err, io.EOF):
		return nil, syntaxProblem(filename, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxProblem turns a yaml.v3 error ("yaml: line 3: ...") into a Problem.
func syntaxProblem(filename string, err error) *Problem {
	msg := err.Error()
	p := &Problem{File: filename}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		p.Line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	p.Reason = "YAML syntax error: " + msg
	return p
}

// decoder walks a yaml.Node tree against the Go struct schema. It exists
// instead of yaml.Node.Decode with KnownFields so that every unknown key and
// type mismatch is reported (not just the first) with its line and dotted
// key path, and so that the line of every key is remembered for validation.
type decoder struct {
	file     string
	lines    map[string]int  // dotted key path → line of the key or list item
	bad      map[string]bool // paths whose value could not be decoded
	problems []Problem
}

func newDecoder(file string) *decoder {
	return &decoder{file: file, lines: map[string]int{}, bad: map[string]bool{}}
}

func (d *decoder) add(line int, path, format string, args ...any) {
	d.problems = append(d.problems, Problem{File: d.file, Line: line, Key: path, Reason: fmt.Sprintf(format, args...)})
}

// typeError records a value of the wrong type; validation then stays quiet
// about that path, since its value is only the default.
func (d *decoder) typeError(n *yaml.Node, path, want string) {
	d.bad[path] = true
	d.add(n.Line, path, "expected %s, got %s", want, describe(n))
}

var durationType = reflect.TypeOf(time.Duration(0))

// nodeValue is a configuration value whose YAML shape the generic decoder
// cannot express (an integer or a list; a scalar whose null matters): it
// decodes its node itself, null included, and says what it wanted when
// the node does not fit.
type nodeValue interface {
	decodeNode(n *yaml.Node) (want string, ok bool)
}

// value decodes n into v, which already holds the default.
func (d *decoder) value(n *yaml.Node, path string, v reflect.Value) {
	n = resolveAlias(n)
	if nv, ok := v.Addr().Interface().(nodeValue); ok {
		if want, ok := nv.decodeNode(n); !ok {
			d.typeError(n, path, want)
		}
		return
	}
	if isNull(n) {
		return // "key:" with no value keeps the default
	}
	switch {
	case v.Type() == durationType:
		d.duration(n, path, v)
	case v.Kind() == reflect.String:
		d.str(n, path, v)
	case v.Kind() == reflect.Int:
		d.integer(n, path, v)
	case v.Kind() == reflect.Bool:
		d.boolean(n, path, v)
	case v.Kind() == reflect.Float64:
		d.float(n, path, v)
	case v.Kind() == reflect.Slice:
		d.sequence(n, path, v)
	case v.Kind() == reflect.Struct:
		d.mapping(n, path, v)
	default:
		// Only reachable if a field of an unsupported type is added to the
		// schema; reported rather than panicking.
		d.add(n.Line, path, "internal error: unsupported field type %s", v.Type())
	}
}

func (d *decoder) str(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind != yaml.ScalarNode {
		d.typeError(n, path, "a string")
		return
	}
	// Any scalar is accepted as its literal text, so that a password such as
	// 12345 or a version such as 8.0 need no quotes.
	v.SetString(n.Value)
}

func (d *decoder) float(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!float" && n.ShortTag() != "!!int") {
		d.typeError(n, path, "a number")
		return
	}
	var f float64
	if err := n.Decode(&f); err != nil {
		d.typeError(n, path, "a number")
		return
	}
	v.SetFloat(f)
}

func (d *decoder) integer(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		d.typeError(n, path, "an integer")
		return
	}
	var i int64
	if err := n.Decode(&i); err != nil || v.OverflowInt(i) {
		d.bad[path] = true
		d.add(n.Line, path, "integer %s is out of range", n.Value)
		return
	}
	v.SetInt(i)
}

func (d *decoder) boolean(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		d.typeError(n, path, "true or false")
		return
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		d.typeError(n, path, "true or false")
		return
	}
	v.SetBool(b)
}

func (d *decoder) duration(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind != yaml.ScalarNode {
		d.typeError(n, path, `a duration such as "5s"`)
		return
	}
	dur, err := time.ParseDuration(n.Value)
	if err != nil {
		d.bad[path] = true
		d.add(n.Line, path, `invalid duration %q: use a Go duration such as "5s", "250ms" or "1h"`, n.Value)
		return
	}
	v.SetInt(int64(dur))
}

// sequence replaces the default slice with the decoded items. Each item
// starts from its type's defaults.
func (d *decoder) sequence(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind != yaml.SequenceNode {
		d.typeError(n, path, "a list")
		return
	}
	elemType := v.Type().Elem()
	out := reflect.MakeSlice(v.Type(), 0, len(n.Content))
	for i, item := range n.Content {
		itemPath := fmt.Sprintf("%s[%d]", path, i)
		d.lines[itemPath] = item.Line
		elem := reflect.New(elemType)
		if def, ok := elem.Interface().(defaulter); ok {
			def.setDefaults()
		}
		d.value(item, itemPath, elem.Elem())
		out = reflect.Append(out, elem.Elem())
	}
	v.Set(out)
}

// mapping decodes the keys of n into the fields of struct v.
func (d *decoder) mapping(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.typeError(n, path, "a mapping")
		return
	}
	fields := fieldsOf(v.Type())

	// Merge keys ("<<: *anchor") go first so explicit keys override them,
	// as YAML specifies, wherever they appear in the mapping.
	for i := 0; i+1 < len(n.Content); i += 2 {
		if isMergeKey(n.Content[i]) {
			d.merge(n.Content[i+1], path, v)
		}
	}

	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if isMergeKey(k) {
			continue
		}
		if k.Kind != yaml.ScalarNode {
			d.add(k.Line, path, "keys must be strings, got %s", describe(k))
			continue
		}
		keyPath := joinPath(path, k.Value)
		if first, dup := seen[k.Value]; dup {
			d.add(k.Line, keyPath, "duplicate key (first set at line %d)", first)
			continue
		}
		seen[k.Value] = k.Line
		f, ok := fields.byName[k.Value]
		if !ok {
			d.add(k.Line, keyPath, "unknown key %s", suggest(k.Value, fields.names))
			continue
		}
		field := v.Field(f)
		// A null value keeps the default and so does not count as set,
		// except for strings: "password:" is an explicitly empty password.
		if !isNull(resolveAlias(val)) || field.Kind() == reflect.String {
			d.lines[keyPath] = k.Line
		}
		d.value(val, keyPath, field)
	}
}

// merge applies the value of a "<<" key: one mapping or a list of them,
// where earlier mappings take precedence.
func (d *decoder) merge(n *yaml.Node, path string, v reflect.Value) {
	n = resolveAlias(n)
	switch n.Kind {
	case yaml.MappingNode:
		d.mapping(n, path, v)
	case yaml.SequenceNode:
		for i := len(n.Content) - 1; i >= 0; i-- {
			m := resolveAlias(n.Content[i])
			if m.Kind != yaml.MappingNode {
				d.add(m.Line, path, "merge key (<<) needs a mapping, got %s", describe(m))
				continue
			}
			d.mapping(m, path, v)
		}
	default:
		d.add(n.Line, path, "merge key (<<) needs a mapping, got %s", describe(n))
	}
}

type structFields struct {
	byName map[string]int // YAML key → field index
	names  []string       // YAML keys in declaration order
}

// fieldsOf lists the YAML keys of a struct from its yaml tags, skipping
// unexported fields and fields tagged "-".
func fieldsOf(t reflect.Type) structFields {
	sf := structFields{byName: map[string]int{}}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		sf.byName[name] = i
		sf.names = append(sf.names, name)
	}
	return sf
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func isMergeKey(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Value == "<<" && n.ShortTag() == "!!merge"
}

// describe names the kind of a node for "expected X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return fmt.Sprintf("string %q", n.Value)
		case "!!int":
			return "integer " + n.Value
		case "!!float":
			return "number " + n.Value
		case "!!bool":
			return "boolean " + n.Value
		case "!!null":
			return "null"
		}
		return fmt.Sprintf("%s %q", n.ShortTag(), n.Value)
	}
	return "an unexpected node"
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// parentPath strips the last ".key" or "[i]" from a dotted key path.
func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}
