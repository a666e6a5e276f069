package keyglob

import (
	"path"
	"testing"
)

func TestCompile(t *testing.T) {
	for _, tc := range []struct {
		pattern, key string
		want         bool
	}{
		{"*", "disk.used_percent.path=/var/lib", true}, // crosses '/'
		{"*", "", true},
		{"cpu.*", "cpu.usage_idle.cpu=cpu-total", true},
		{"*_percent*", "mem.used_percent.host=a", true},
		{"*_percent*", "mem.used", false},
		{"disk.*.path=/*", "disk.free.path=/", true},
		{"?", "ab", false},
		{"[ab]x", "bx", true},
		{"[!ab]x", "bx", false},
		{"[^ab]x", "bx", false}, // path.Match's negation kept
		{"[^ab]x", "cx", true},
		{`\[^ab]x`, "[^ab]x", true},
		{"{cpu,mem}.*", "mem.free", true},
		{"{cpu,mem}.*", "disk.free", false},
		{`a\*`, "a*", true},
		{`a\*`, "ab", false},
		{"load1", "load1", true},
		{"load1", "load15", false},
		{"é*", "éü", true},
		{"[{]x", "{x", true},
		{`\{x`, "{x", true},
	} {
		g, err := Compile(tc.pattern)
		if err != nil {
			t.Errorf("Compile(%q): %v", tc.pattern, err)
			continue
		}
		if got := g.Match(tc.key); got != tc.want {
			t.Errorf("%q matches %q: %v, want %v", tc.pattern, tc.key, got, tc.want)
		}
	}
	for _, p := range []string{"", "[ab", "{a,b", "a}", `x\`} {
		if _, err := Compile(p); err == nil {
			t.Errorf("Compile(%q): no error", p)
		}
	}
}

// Patterns without '*' before a '/' mean what they meant with path.Match.
func TestPathMatchCompatible(t *testing.T) {
	keys := []string{"cpu", "cpu.idle", "a/b", "x-1", "[x]", "mem.used_percent", "b]"}
	for _, p := range []string{"cpu*", "cpu.?dle", "a/?", "x-[0-9]", "x-[^0-9]", "[[]x]", `\[x\]`, "*percent", "mem.*"} {
		g, err := Compile(p)
		if err != nil {
			t.Fatalf("Compile(%q): %v", p, err)
		}
		for _, k := range keys {
			want, _ := path.Match(p, k)
			if got := g.Match(k); got != want {
				t.Errorf("%q matches %q: %v; path.Match: %v", p, k, got, want)
			}
		}
	}
}
