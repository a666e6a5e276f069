package runner

import "github.com/forecastd/forecastd/pipeline"

import "testing"

// A rule's match is Telegraf's glob: '*' matches keys holding '/' (a
// series of a file path, Telegraf's disk tags path=/…) too, and
// path.Match's "[^…]" still negates.
func TestRuleMatchGlob(t *testing.T) {
	def := pipeline.DefaultConfig()
	rule := pipeline.DefaultConfig()
	rule.Window = def.Window + 1
	for _, tc := range []struct {
		match, key string
		want       bool
	}{
		{"*", "testdata/series/santafe_laser_a.csv", true},
		{"disk.*", "disk.used_percent.path=/var/lib", true},
		{"*_percent*", "disk.used_percent.path=/", true},
		{"{cpu,mem}.*", "mem.used", true},
		{"cpu.[^u]*", "cpu.usage_idle", false},
		{"cpu.*", "mem.used", false},
	} {
		rs, err := newRuleSet(def, []Rule{{Match: tc.match, Config: rule}})
		if err != nil {
			t.Fatal(err)
		}
		if got := rs.config(tc.key).Window == rule.Window; got != tc.want {
			t.Errorf("rule %q applies to %q: %v, want %v", tc.match, tc.key, got, tc.want)
		}
	}
	if _, err := newRuleSet(def, []Rule{{Match: "{cpu", Config: rule}}); err == nil {
		t.Error("no error for an unclosed '{'")
	}
}
