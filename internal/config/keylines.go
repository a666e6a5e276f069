package config

import (
	"fmt"

	"github.com/pelletier/go-toml/v2/unstable"
)

// unstableVersion is the go-toml release whose unstable parser keyLines
// is written and tested against: go-toml/v2/unstable promises no
// compatibility between releases, so go.mod pins this one and
// TestGoTOMLPinned fails when it changes. Bump both together, after
// TestKeyLines and the check-config tests pass on the new release.
const unstableVersion = "v2.4.3"

// keyLines maps each key and table header of a TOML document, which must
// be valid, to the line it is first on: "model.dim", "input.jetstream",
// "rules[1]" and "rules[1].match" (arrays of tables numbered from 0), a
// part that is not bare quoted (`input."a b"`). The positions are
// go-toml's parser's.
func keyLines(src []byte) map[string]int {
	out := map[string]int{}
	set := func(k string, line int) {
		if _, ok := out[k]; !ok {
			out[k] = line
		}
	}
	var p unstable.Parser
	p.Reset(src)
	table := ""
	count := map[string]int{} // entries of each array of tables so far
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			parts, line := keyOf(&p, e.Key())
			name := ""
			for i, part := range parts { // [a.b] defines a; [[a]] then [a.b] is a[i].b
				name = join(name, part)
				if i == len(parts)-1 {
					break
				}
				if n, ok := count[name]; ok {
					name = fmt.Sprintf("%s[%d]", name, n-1)
				}
				set(name, line)
			}
			if e.Kind == unstable.ArrayTable {
				table = fmt.Sprintf("%s[%d]", name, count[name])
				count[name]++
			} else {
				table = name
			}
			set(table, line)
		case unstable.KeyValue:
			parts, line := keyOf(&p, e.Key())
			k := table
			for _, part := range parts { // a.b = 1 defines a
				k = join(k, part)
				set(k, line)
			}
		}
	}
	return out
}

// keyOf returns a key's parts, each as tomlKeyPart writes it, and the line
// of its first part.
func keyOf(p *unstable.Parser, it unstable.Iterator) ([]string, int) {
	var parts []string
	line := 0
	for it.Next() {
		n := it.Node()
		if line == 0 {
			line = p.Shape(n.Raw).Start.Line
		}
		parts = append(parts, tomlKeyPart(string(n.Data)))
	}
	return parts, line
}
