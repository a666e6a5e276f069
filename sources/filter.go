package sources

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
)

// FieldFilter selects the line-protocol fields that become series, as
// Telegraf's fieldpass and fielddrop (since Telegraf 1.29 also named
// fieldinclude and fieldexclude) select the fields of a metric: a field
// is kept if Pass is empty or its key matches a Pass pattern, and it
// matches no Drop pattern. Patterns are Telegraf's globs (gobwas/glob
// without separators): '*' any run of characters, '?' one character,
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
	pass, drop []*regexp.Regexp
	dropped    atomic.Uint64
}

// NewFieldFilter returns the filter of the pass and drop patterns, or an
// error naming every invalid one ("fieldpass[1]: …").
func NewFieldFilter(pass, drop []string) (*FieldFilter, error) {
	var errs []error
	compile := func(name string, pats []string) []*regexp.Regexp {
		var out []*regexp.Regexp
		for i, p := range pats {
			re, err := compileGlob(p)
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

func matchAny(res []*regexp.Regexp, k string) bool {
	for _, re := range res {
		if re.MatchString(k) {
			return true
		}
	}
	return false
}

// compileGlob translates a glob into an anchored regular expression.
func compileGlob(p string) (*regexp.Regexp, error) {
	if p == "" {
		return nil, errors.New("empty pattern")
	}
	var b strings.Builder
	b.WriteString(`^(?s:`)
	depth := 0 // open '{'
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '*':
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		case '\\':
			if i+1 == len(p) {
				return nil, fmt.Errorf("pattern %q ends in an unfinished escape", p)
			}
			i++
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
		case '[':
			j := i + 1
			if j < len(p) && (p[j] == '!' || p[j] == '^') {
				j++
			}
			if j < len(p) && p[j] == ']' { // a leading ']' is literal
				j++
			}
			for j < len(p) && p[j] != ']' {
				j++
			}
			if j == len(p) {
				return nil, fmt.Errorf("pattern %q has an unclosed '['", p)
			}
			set := p[i+1 : j]
			b.WriteByte('[')
			if set != "" && (set[0] == '!' || set[0] == '^') {
				b.WriteByte('^')
				set = set[1:]
			}
			for k := 0; k < len(set); k++ {
				if c := set[k]; c == '\\' || c == '[' || c == ']' || c == '^' {
					b.WriteByte('\\')
				}
				b.WriteByte(set[k])
			}
			b.WriteByte(']')
			i = j
		case '{':
			depth++
			b.WriteString(`(?:`)
		case '}':
			if depth == 0 {
				return nil, fmt.Errorf("pattern %q has an unopened '}'", p)
			}
			depth--
			b.WriteByte(')')
		case ',':
			if depth > 0 {
				b.WriteByte('|')
			} else {
				b.WriteByte(',')
			}
		default:
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
		}
	}
	if depth > 0 {
		return nil, fmt.Errorf("pattern %q has an unclosed '{'", p)
	}
	b.WriteString(`)$`)
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", p, err)
	}
	return re, nil
}
