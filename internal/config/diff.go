package config

import (
	"fmt"
	"iter"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Change is one key whose value differs between two configurations, as a
// reload (SIGHUP) sees it.
type Change struct {
	// Key is the dotted key path. List items are named by what identifies
	// them across edits: users and clusters by name, replicas by address,
	// listeners by position (clusters[main].replicas[10.0.0.2:3306].weight).
	Key string
	// Old and New are the values, secrets masked. For a list item that
	// was added or removed they are "(none)" and "(added)" or "(present)"
	// and "(removed)".
	Old, New string
	// Restart: a running proxy cannot apply the change (struct tag
	// reload:"restart"; for clusters, removing one).
	Restart bool
}

// Diff lists what differs from old to new, in file order.
func Diff(old, new *Config) []Change {
	var d differ
	d.value("", reflect.ValueOf(old).Elem(), reflect.ValueOf(new).Elem(), fieldTag{})
	return d.out
}

// fieldTag is a struct field's reload tag, e.g. reload:"restart,secret".
type fieldTag struct {
	restart    bool // changing it needs a restart
	secret     bool // mask its values
	addOnly    bool // list items may be added live; removing one needs a restart
	addItems   bool // list items may be added live; changing or removing one needs a restart
	byPosition bool // list items are paired by position, not name or address
}

func parseFieldTag(f reflect.StructField, parent fieldTag) fieldTag {
	t := fieldTag{restart: parent.restart}
	for _, opt := range strings.Split(f.Tag.Get("reload"), ",") {
		switch opt {
		case "restart":
			t.restart = true
		case "secret":
			t.secret = true
		case "addonly":
			t.addOnly = true
		case "byposition":
			t.byPosition = true
		case "additems":
			t.addItems = true
		case "live":
			t.restart = false // within an item that needs a restart, a key that does not
		}
	}
	return t
}

type differ struct{ out []Change }

// nodeValueType: such values are compared whole, their fields are not keys.
var nodeValueType = reflect.TypeFor[nodeValue]()

func (d *differ) value(key string, a, b reflect.Value, tag fieldTag) {
	switch {
	case a.Kind() == reflect.Struct && !reflect.PointerTo(a.Type()).Implements(nodeValueType):
		d.fields(key, a, b, tag)
	case a.Kind() == reflect.Slice && a.Type().Elem().Kind() == reflect.Struct:
		d.list(key, a, b, tag)
	case !reflect.DeepEqual(a.Interface(), b.Interface()):
		d.out = append(d.out, Change{Key: key, Old: format(a, tag), New: format(b, tag), Restart: tag.restart})
	}
}

func (d *differ) fields(key string, a, b reflect.Value, tag fieldTag) {
	for i, f := range yamlFields(a.Type(), key, tag) {
		d.value(f.key, a.Field(i), b.Field(i), f.tag)
	}
}

// yamlField is a struct field's configuration key and reload tag.
type yamlField struct {
	key string
	tag fieldTag
}

// yamlFields yields the index, YAML key (prefixed with key and a dot) and
// reload tag (inheriting tag's) of each configuration field of struct
// type t.
func yamlFields(t reflect.Type, key string, tag fieldTag) iter.Seq2[int, yamlField] {
	return func(yield func(int, yamlField) bool) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if !f.IsExported() || name == "" || name == "-" {
				continue
			}
			if key != "" {
				name = key + "." + name
			}
			if !yield(i, yamlField{name, parseFieldTag(f, tag)}) {
				return
			}
		}
	}
}

// list pairs the items of two lists by itemKey and compares each pair.
func (d *differ) list(key string, a, b reflect.Value, tag fieldTag) {
	itemKey := itemKey
	if tag.byPosition {
		itemKey = func(_ reflect.Value, i int) string { return strconv.Itoa(i) }
	}
	oldByKey := map[string]reflect.Value{}
	for i := 0; i < a.Len(); i++ {
		oldByKey[itemKey(a.Index(i), i)] = a.Index(i)
	}
	newKeys := map[string]bool{}
	itemTag := tag
	itemTag.restart = tag.restart || tag.addItems
	for i := 0; i < b.Len(); i++ {
		k := itemKey(b.Index(i), i)
		newKeys[k] = true
		item := fmt.Sprintf("%s[%s]", key, k)
		if o, ok := oldByKey[k]; ok {
			d.value(item, o, b.Index(i), itemTag)
			continue
		}
		d.out = append(d.out, Change{Key: item, Old: "(none)", New: "(added)", Restart: tag.restart})
	}
	for i := 0; i < a.Len(); i++ {
		if k := itemKey(a.Index(i), i); !newKeys[k] {
			d.out = append(d.out, Change{Key: fmt.Sprintf("%s[%s]", key, k), Old: "(present)", New: "(removed)",
				Restart: tag.restart || tag.addOnly || tag.addItems})
		}
	}
}

// itemKey identifies a list item across edits: its name or address if it
// has one, else its position.
func itemKey(v reflect.Value, i int) string {
	for _, field := range []string{"Name", "Address"} {
		if f := v.FieldByName(field); f.IsValid() && f.Kind() == reflect.String {
			return f.String()
		}
	}
	return strconv.Itoa(i)
}

func format(v reflect.Value, tag fieldTag) string {
	switch {
	case tag.secret && !v.IsZero():
		return "***"
	case v.Type() == durationType:
		return time.Duration(v.Int()).String()
	}
	return fmt.Sprint(v.Interface())
}
