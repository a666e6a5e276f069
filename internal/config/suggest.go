package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/forecastd/forecastd/pipeline"
)

// unknownKey says that key, in the table at path of type t, is unknown,
// with the nearest key of the table if one is close (an edit distance of
// at most a third of its length, and 2), else the table the key belongs in
// if it is one of another table.
func unknownKey(t reflect.Type, path, key string) string {
	msg := fmt.Sprintf("unknown key %q", join(path, tomlKeyPart(key)))
	known := slices.Sorted(maps.Keys(schemaFields(t)))
	if t == reflect.TypeFor[pipeline.Keys]() || t == reflect.TypeFor[RuleConfig]() {
		for _, mk := range pipeline.ModelKeys() {
			known = append(known, mk.Key)
		}
	}
	if t == reflect.TypeFor[InputConfig]() {
		known = append(known, formatKeys()...)
	}
	if m := unknownAmong(msg, key, known); m != msg {
		return m
	}
	if table := schemaTableOf(reflect.TypeFor[Config](), "", key); table != "" && table != path {
		return fmt.Sprintf("%s (it belongs in [%s])", msg, table)
	}
	return msg
}

// unknownAmong adds to msg, about the unknown key, the nearest of known if
// one is close: an edit distance of at most a third of its length, and 2.
func unknownAmong(msg, key string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(key, k); d < bestD && d <= max(1, len(key)/3) {
			best, bestD = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf("%s (did you mean %q?)", msg, best)
	}
	return msg
}

// schemaTableOf returns the first table of the schema t (at path) that has
// key, "" if none.
func schemaTableOf(t reflect.Type, path, key string) string {
	var subs []reflect.StructField
	for _, f := range reflect.VisibleFields(t) {
		name := f.Tag.Get("toml")
		if name == "" {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if isTable(ft) {
			subs = append(subs, f)
			continue
		}
		if name == key && path != "" {
			return path
		}
	}
	for _, f := range subs {
		ft := f.Type
		if ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		sub := join(path, f.Tag.Get("toml"))
		if f.Type.Kind() == reflect.Slice {
			sub = "[" + sub + "]"
		}
		if table := schemaTableOf(ft, sub, key); table != "" {
			return table
		}
	}
	return ""
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
