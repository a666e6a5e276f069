package sources

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/forecastd/forecastd/internal/keyglob"
)

// FieldFilter selects the line-protocol fields that become series, as
// Telegraf's fieldpass and fielddrop (since Telegraf 1.29 also named
// fieldinclude and fieldexclude) select the fields of a metric: a field
// is kept if Pass is empty or its key matches a Pass pattern, and it
// matches no Drop pattern. Patterns are Telegraf's globs, compiled as
// Telegraf compiles them (github.com/gobwas/glob without separators, see
// internal/keyglob): '*' any run of characters, '?' one character,
// "[abc]", "[a-z]", "[!abc]" one of or none of a set, "{a,b}" either
// alternative, '\' escaping the next character; a pattern without these
// is the field key itself.
//
// A field left out makes no point and no series, and is not refused: no
// ParseError, not even for a string or boolean field; it is counted in
// Dropped. A FieldFilter is safe for concurrent use: one is shared by the
// decoders of a Source (DecoderConfig.Fields), each of which caches its
// decisions per field key.
type FieldFilter struct {
	pass, drop []keyglob.Glob
	dropped    atomic.Uint64
}

// NewFieldFilter returns the filter of the pass and drop patterns, or an
// error naming every invalid one ("fieldpass[1]: …").
func NewFieldFilter(pass, drop []string) (*FieldFilter, error) {
	var errs []error
	compile := func(name string, pats []string) []keyglob.Glob {
		var out []keyglob.Glob
		for i, p := range pats {
			re, err := keyglob.Compile(p)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s[%d]: %w", name, i, err))
				continue
			}
			out = append(out, re)
		}
		return out
	}
	f := &FieldFilter{pass: compile("fieldpass", pass), drop: compile("fielddrop", drop)}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return f, nil
}

// Keep reports whether a field of key k is kept. It matches every pattern
// (a Decoder caches the answer): O(patterns · len(k)).
func (f *FieldFilter) Keep(k string) bool {
	if len(f.pass) > 0 && !matchAny(f.pass, k) {
		return false
	}
	return !matchAny(f.drop, k)
}

// Dropped returns the number of fields left out so far, by every decoder
// sharing f.
func (f *FieldFilter) Dropped() uint64 { return f.dropped.Load() }

func matchAny(gs []keyglob.Glob, k string) bool {
	for _, g := range gs {
		if g.Match(k) {
			return true
		}
	}
	return false
}
