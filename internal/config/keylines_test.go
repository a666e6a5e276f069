package config

import (
	"os"
	"strings"
	"testing"
)

// TestKeyLines: the line of every key and table, with arrays of tables
// numbered, values spanning lines and strings holding '=' or '['.
func TestKeyLines(t *testing.T) {
	src := `# comment = [x]
[nats]
servers = [
  "a", # [not a table]
  "b",
]
embedded = true

[ input . "jet stream" ]
stream = """
x = 1
[y]
"""
durable = 'a=b'

[[rules]]
match = "*"
[[rules]]
dim.x = 3
`
	got := keyLines([]byte(src))
	for key, line := range map[string]int{
		"nats": 2, "nats.servers": 3, "nats.embedded": 7,
		`input."jet stream"`: 9, `input."jet stream".stream`: 10, `input."jet stream".durable`: 14,
		"rules[0]": 16, "rules[0].match": 17, "rules[1]": 18, "rules[1].dim.x": 19,
		"input": 9, "rules[1].dim": 19, // implied by [input."jet stream"] and dim.x
	} {
		if got[key] != line {
			t.Errorf("%s: line %d, want %d", key, got[key], line)
		}
	}
	if len(got) != 12 {
		t.Errorf("%d keys, want 12: %v", len(got), got)
	}
}

// TestGoTOMLPinned: go.mod requires the go-toml release keyLines was
// written against (unstableVersion): its unstable parser may change in
// any release.
func TestGoTOMLPinned(t *testing.T) {
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	want := "github.com/pelletier/go-toml/v2 " + unstableVersion
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0]+" "+f[1] == want {
			return
		}
	}
	t.Errorf("go.mod does not require %q: go-toml/v2/unstable has no compatibility promise; check keyLines against the new release, then update unstableVersion", want)
}
