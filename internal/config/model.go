package config

import (
	"errors"
	"iter"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/forecastd/forecastd/internal/config/schema"
	"github.com/forecastd/forecastd/pipeline"
)

// internalName is the packages' prefixes ("svr: bad configuration: "),
// which a person writing the file has no use for. (The model kinds name
// their settings by config key: pipeline maps svr's field names.)
var internalName = regexp.MustCompile(`\b(?:pipeline|svr|embedding|window): bad configuration: |\bthreshold: bad config: `)

var word = regexp.MustCompile(`[a-z0-9_]+`)

// Model returns the series' configuration the [model] keys k describe,
// or every problem at once, each naming its key as check-config does
// ("model.dim: …").
func Model(k pipeline.Keys) (pipeline.Config, error) {
	c, err := k.Config()
	if err != nil {
		return c, errors.Join(modelErrors("model", err)...)
	}
	return c, nil
}

// modelErrors are the problems of a [model] table (pipeline.Keys.Config's
// *pipeline.KeyError), each told by modelError.
func modelErrors(_ string, err error) []error {
	var out []error
	for _, e := range schema.Unjoin(err) {
		var ke *pipeline.KeyError
		if errors.As(e, &ke) {
			out = append(out, modelError(ke.Key, ke.Err))
		} else {
			out = append(out, modelError("", e))
		}
	}
	return out
}

// modelError is a problem of the [model] key (or, key "", of the keys its
// message begins with: "dim must be at least 1"), told without the
// packages' internal names; at lists the model keys the message names.
func modelError(key string, err error) *keyError {
	msg := internalName.ReplaceAllString(err.Error(), "")
	if key != "" {
		msg = strings.TrimPrefix(msg, key+" ")
		msg = strings.TrimPrefix(msg, key+": ")
	}
	var at []string
	for _, w := range word.FindAllString(msg, -1) {
		if pipeline.IsKey(w) && !slices.Contains(at, w) && w != key {
			at = append(at, w)
		}
	}
	if key != "" && key != "kernel" && key != "norma_kernel" {
		at = append([]string{key}, at...) // a kernel's fault is in its parameter's line
	}
	return &keyError{table: "model", key: key, msg: msg, at: at, err: err}
}

// paramKey returns the registration of a model kind's own key.
func paramKey(key string) (pipeline.ModelKey, bool) {
	_, mk, ok := pipeline.KeyKind(key)
	return mk, ok
}

// paramValue returns a new value of the Go type of a key of type t.
func paramValue(t pipeline.KeyType) any {
	switch t {
	case pipeline.KeyInt:
		return new(int)
	case pipeline.KeyFloat:
		return new(float64)
	case pipeline.KeyBool:
		return new(bool)
	}
	return new(string)
}

func mapsKeys[K comparable, V any](m map[K]V) iter.Seq[K] { return maps.Keys(m) }
