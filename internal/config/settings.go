package config

import (
	"fmt"
	"reflect"
	"strconv"
)

// Setting is one key of a configuration with its value, as SHOW CONFIG
// lists it.
type Setting struct {
	Key   string // dotted path, list items named as Diff names them
	Value string // secrets (reload:"secret") masked as ***
}

// Settings lists every key of c with its value, in file order: what the
// proxy runs with, defaults included.
func Settings(c *Config) []Setting {
	var out []Setting
	settings("", reflect.ValueOf(c).Elem(), fieldTag{}, &out)
	return out
}

func settings(key string, v reflect.Value, tag fieldTag, out *[]Setting) {
	switch {
	case v.Kind() == reflect.Struct && !reflect.PointerTo(v.Type()).Implements(nodeValueType):
		for i, f := range yamlFields(v.Type(), key, tag) {
			settings(f.key, v.Field(i), f.tag, out)
		}
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Struct:
		if v.Len() == 0 {
			*out = append(*out, Setting{Key: key, Value: "(none)"})
		}
		for i := 0; i < v.Len(); i++ {
			k := itemKey(v.Index(i), i)
			if tag.byPosition {
				k = strconv.Itoa(i)
			}
			settings(fmt.Sprintf("%s[%s]", key, k), v.Index(i), tag, out)
		}
	default:
		*out = append(*out, Setting{Key: key, Value: format(v, tag)})
	}
}
