// Package keyglob compiles the globs of forecastd's configuration — a
// rule's match on series keys, fieldpass and fielddrop on field keys — in
// one dialect, Telegraf's: github.com/gobwas/glob without separators, as
// Telegraf's filter package compiles fieldpass, namepass and tagpass.
//
//   - any run of characters, '/' and '.' included
//     ?       one character
//     [abc]   one of a set; [a-z] a range; [!abc] or [^abc] none of a set
//     {a,b}   either alternative
//     \x      the character x itself
//
// A pattern without these is matched as it is. "[^abc]", path.Match's
// negated class, which gobwas reads as a class holding '^', is read as
// "[!abc]", so that rules written for path.Match keep their meaning but
// for '*', which now crosses '/'.
//
// Compile refuses what gobwas/glob v0.2.3 takes silently (an unbalanced
// '{' or '}', a trailing '\') and names an unclosed '['. Like Telegraf, it inherits gobwas's
// mismatch of '?' and classes next to non-ASCII characters in a pattern
// without '*' ("é?" does not match "éü"; gobwas/glob issues 41 and 54,
// fixed after v0.2.3 in an unreleased rewrite).
package keyglob

import (
	"fmt"

	"github.com/gobwas/glob"
)

// MaxLen bounds a pattern's length: a configuration is trusted, but a
// compiled glob's size grows with its pattern.
const MaxLen = 4096

// Glob matches keys against one compiled pattern; it is safe for
// concurrent use.
type Glob = glob.Glob

// Compile compiles pattern, or returns an error naming it.
func Compile(pattern string) (Glob, error) {
	if pattern == "" {
		return nil, fmt.Errorf("empty pattern")
	}
	if len(pattern) > MaxLen {
		return nil, fmt.Errorf("pattern of %d bytes, more than %d", len(pattern), MaxLen)
	}
	p, err := check(pattern)
	if err != nil {
		return nil, err
	}
	g, err := glob.Compile(p)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", pattern, err)
	}
	return g, nil
}

// check returns pattern with each class opening "[^" rewritten to
// gobwas's "[!", or an error for an unbalanced brace or a trailing
// escape, which gobwas does not report.
func check(pattern string) (string, error) {
	b := []byte(pattern)
	depth, inClass := 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '\\':
			if i+1 == len(b) {
				return "", fmt.Errorf("pattern %q ends in an unfinished escape", pattern)
			}
			i++ // the escaped character is itself
		case inClass:
			inClass = c != ']'
		case c == '[':
			inClass = true
			if i+1 < len(b) && b[i+1] == '^' {
				b[i+1] = '!'
				i++
			}
		case c == '{':
			depth++
		case c == '}':
			if depth == 0 {
				return "", fmt.Errorf("pattern %q has an unopened '}'", pattern)
			}
			depth--
		}
	}
	if inClass {
		return "", fmt.Errorf("pattern %q has an unclosed '['", pattern)
	}
	if depth > 0 {
		return "", fmt.Errorf("pattern %q has an unclosed '{'", pattern)
	}
	return string(b), nil
}
