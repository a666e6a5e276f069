package main

import (
	"os"
	"strings"
	"testing"
)

// TestPackageVersion: what git describe (or VERSION) says becomes a
// version dpkg and rpm order as the commits do; what is no version is
// refused.
func TestPackageVersion(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"v1.2.3", "1.2.3"},
		{"1.2.3", "1.2.3"},
		{"v1.2.3-rc1", "1.2.3~rc1"},
		{"v1.2.3-5-gabc1234", "1.2.3+5.gabc1234"},
		{"v1.2.3-rc.1-5-gabc1234-dirty", "1.2.3~rc.1+5.gabc1234.dirty"},
		{"v1.2.3-dirty", "1.2.3+dirty"},
		{"1acfa1f", "0.0.0+git.1acfa1f"},
		{"1acfa1f-dirty", "0.0.0+git.1acfa1f.dirty"},
	} {
		v, err := packageVersion(c.in)
		if err != nil || v.String() != c.want {
			t.Errorf("packageVersion(%q) = %q, %v; want %q", c.in, v, err, c.want)
		}
	}
	for _, in := range []string{"", "unknown", "v1.2", "1.2.3 4", "v1.2.3-rc_1", "release-1", "-dirty"} {
		if v, err := packageVersion(in); err == nil {
			t.Errorf("packageVersion(%q) = %q, want an error", in, v)
		}
	}
}

// TestPackagedUnit: the packaged unit is the repository's with the
// packages' paths and without the manual install steps, and a unit whose
// steps or paths the rewrite does not find is refused.
func TestPackagedUnit(t *testing.T) {
	b, err := os.ReadFile("../../systemd/forecastd.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(b)
	got, err := packagedUnit(unit)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\nExecStartPre=/usr/bin/forecastd check-config /etc/forecastd/forecastd.toml\n",
		"\nExecStart=/usr/bin/forecastd run -config /etc/forecastd/forecastd.toml\n",
		"\nDocumentation=file:/usr/share/doc/forecastd/README.md\n",
		"installed by its package",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the packaged unit has no %q", want)
		}
	}
	if strings.Contains(got, "#   ") || strings.Contains(got, "groupadd") {
		t.Errorf("the packaged unit still has the manual install steps:\n%s", got)
	}
	// Everything from [Unit] on is the repository's but for the paths.
	_, srcBody, _ := strings.Cut(unit, "\n[Unit]\n")
	_, gotBody, _ := strings.Cut(got, "\n[Unit]\n")
	if strings.ReplaceAll(strings.ReplaceAll(srcBody, "/usr/local/bin/", "/usr/bin/"), "/usr/local/share/", "/usr/share/") != gotBody {
		t.Errorf("the packaged unit's sections differ from the repository's by more than the paths:\n%s", got)
	}

	for name, bad := range map[string]string{
		"no steps":         strings.ReplaceAll(unit, "#   ", "# "),
		"another path":     strings.Replace(unit, "ExecReload=/bin/kill", "ExecReload=/usr/local/sbin/kill", 1),
		"no ExecStart":     strings.Replace(unit, "ExecStart=", "#ExecStart=", 1),
		"steps not closed": strings.Replace(unit, "forecastd\n#\n# forecastd tells", "forecastd\n# forecastd tells", 1),
	} {
		if _, err := packagedUnit(bad); err == nil {
			t.Errorf("%s: packagedUnit took it", name)
		}
	}
}
