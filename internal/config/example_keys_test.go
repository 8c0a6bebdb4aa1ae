package config

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const completeExample = "../../examples/shardgate.yaml"

// notInExample are keys of the Config struct that the complete example
// leaves out on purpose, and why.
var notInExample = map[string]string{
	"users[].password":          "plaintext passwords draw a warning; the example shows password_hash and says so in a comment",
	"admin.users[].password":    "as users[].password",
	"clusters[].primary.weight": "rejected for the primary (Backend is shared with replicas)",
}

// examples/shardgate.yaml shows every configuration key, each with a
// comment: a key added to the Config struct fails this test until the
// example (and so docs/configuration.md, which the example points to) shows
// it.
func TestCompleteExampleShowsEveryKey(t *testing.T) {
	data, err := os.ReadFile(completeExample)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	inExample := map[string]bool{}
	exampleKeys(doc.Content[0], "", inExample, func(key string, k, v *yaml.Node) {
		if v.Kind == yaml.ScalarNode && k.LineComment == "" && v.LineComment == "" && k.HeadComment == "" {
			t.Errorf("%s:%d: %s has no comment", completeExample, k.Line, key)
		}
	})
	var inStruct []string
	structKeys(reflect.TypeFor[Config](), "", &inStruct)
	for _, key := range inStruct {
		if _, skip := notInExample[key]; skip {
			if inExample[key] {
				t.Errorf("%s shows %s, listed in notInExample: remove it from the list", completeExample, key)
			}
			continue
		}
		if !inExample[key] {
			t.Errorf("%s lacks the key %s: add it, with a comment, and document it in docs/configuration.md", completeExample, key)
		}
	}
	for key := range inExample {
		if !slices.Contains(inStruct, key) {
			t.Errorf("%s has %s, which the Config struct does not know", completeExample, key)
		}
	}
}

// exampleKeys records the dotted path of every mapping key under n (list
// items as "[]") and calls leaf for each key with a scalar or list value.
func exampleKeys(n *yaml.Node, prefix string, seen map[string]bool, leaf func(key string, k, v *yaml.Node)) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key := k.Value
			if prefix != "" {
				key = prefix + "." + k.Value
			}
			seen[key] = true
			leaf(key, k, v)
			exampleKeys(v, key, seen, leaf)
		}
	case yaml.SequenceNode:
		for _, item := range n.Content {
			if item.Kind == yaml.MappingNode {
				exampleKeys(item, prefix+"[]", seen, leaf)
			}
		}
	}
}

// structKeys appends the dotted yaml path of every field of t, as
// exampleKeys writes them.
func structKeys(t reflect.Type, prefix string, out *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		key := name
		if prefix != "" {
			key = prefix + "." + name
		}
		*out = append(*out, key)
		ft := f.Type
		switch {
		case ft.Kind() == reflect.Struct:
			structKeys(ft, key, out)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			structKeys(ft.Elem(), key+"[]", out)
		}
	}
}
