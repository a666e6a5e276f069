package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestVersionFlag: --version and -version print what `forecastd version`
// prints, with the version and revision stamped at link time.
func TestVersionFlag(t *testing.T) {
	defer func(v, r string) { version, revision = v, r }(version, revision)
	version, revision = "v1.2.3", "0123456789abcdef0123456789abcdef01234567"
	want := mustCLI(t, "version")
	if !strings.HasPrefix(want, "forecastd v1.2.3 (revision 0123456789ab") {
		t.Errorf("version prints %q", want)
	}
	for _, arg := range []string{"--version", "-version"} {
		if got := mustCLI(t, arg); got != want {
			t.Errorf("%s prints %q, want %q", arg, got, want)
		}
	}
}

// TestBuildStampsVersion: scripts/build stamps the version and the git
// revision even with -buildvcs=false, where the Go toolchain records
// neither and `forecastd version` said "(devel)".
func TestBuildStampsVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	rev, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	bin := forecastdBinary(t) // scripts/build with GOFLAGS=-buildvcs=false
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("forecastd --version: %v\n%s", err, out)
	}
	got := string(out)
	if strings.Contains(got, "(devel)") || !strings.Contains(got, "revision "+strings.TrimSpace(string(rev))[:12]) {
		t.Errorf("forecastd --version: %q, want a version and revision %s", got, rev)
	}
}
