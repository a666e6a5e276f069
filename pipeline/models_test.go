package pipeline

import (
	"strings"
	"testing"
)

// renamed is a registered kind under another name, state tags and keys.
type renamed struct {
	ModelKind
	name string
	tags []uint64
	keys []ModelKey
}

func (r renamed) Name() string        { return r.name }
func (r renamed) StateTags() []uint64 { return r.tags }
func (r renamed) Keys() []ModelKey    { return r.keys }

// TestRegisterModelRefusesCollisions: a kind whose name, state tags or keys
// collide with a registered kind's, or with the file's own tags or the
// common keys, is refused (a panic: a programmer error), and the registry
// is unchanged.
func TestRegisterModelRefusesCollisions(t *testing.T) {
	before := len(ModelKinds())
	for _, c := range []struct {
		name string
		k    renamed
		want string
	}{
		{"name", renamed{aosvrKind{}, "norma", []uint64{101}, nil}, "registered twice"},
		{"upper case", renamed{aosvrKind{}, "Big", []uint64{101}, nil}, "bad name"},
		{"even first tag", renamed{aosvrKind{}, "x1", []uint64{102}, nil}, "must be odd"},
		{"file's tag", renamed{aosvrKind{}, "x2", []uint64{17}, nil}, "reserved"},
		{"built-in tag", renamed{aosvrKind{}, "x3", []uint64{13}, nil}, "reserved"},
		{"key of another kind", renamed{aosvrKind{}, "x4", []uint64{101}, []ModelKey{{Key: "norma_tau"}}}, "kind norma's"},
		{"common key", renamed{aosvrKind{}, "x5", []uint64{101}, []ModelKey{{Key: "dim"}}}, "common key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), c.want) {
					t.Errorf("RegisterModel: panic %v, want one saying %q", r, c.want)
				}
			}()
			RegisterModel(c.k)
		})
	}
	if n := len(ModelKinds()); n != before {
		t.Errorf("%d kinds after refusals, %d before", n, before)
	}
	if _, err := ParseKind("x1"); err == nil {
		t.Error("a refused kind is registered")
	}
}
