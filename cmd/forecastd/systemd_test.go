package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// unitValues returns the values of key in a systemd unit's text, each
// assignment split on white space as systemd splits list settings.
func unitValues(unit, key string) []string {
	var out []string
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + `=(.*)$`)
	for _, m := range re.FindAllStringSubmatch(unit, -1) {
		out = append(out, strings.Fields(m[1])...)
	}
	return out
}

// createdNames returns the names the shell steps create with cmd
// ("groupadd" or "useradd"): the last word of each such command.
func createdNames(steps, cmd string) []string {
	var out []string
	re := regexp.MustCompile(`(?m)\b` + cmd + `\b([^#\n]*)`)
	for _, m := range re.FindAllStringSubmatch(steps, -1) {
		if f := strings.Fields(m[1]); len(f) > 0 {
			out = append(out, f[len(f)-1])
		}
	}
	return out
}

// checkSystemdSteps checks install steps (shell) against the unit named
// name (its file name without ".service"): the config is installed 0640
// to a group the unit's user is in and the steps create; with
// DynamicUser=yes, no step creates a group named like the dynamic user
// unless it creates that user too, because systemd (src/core/dynamic-user.c)
// refuses to start a dynamic user whose name exists only as a group.
func checkSystemdSteps(t *testing.T, steps, unit, name string) {
	t.Helper()
	groups, users := createdNames(steps, "groupadd"), createdNames(steps, "useradd")
	user := name
	if u := unitValues(unit, "User"); len(u) > 0 {
		user = u[len(u)-1]
	}
	if slices.Contains(unitValues(unit, "DynamicUser"), "yes") &&
		slices.Contains(groups, user) && !slices.Contains(users, user) {
		t.Errorf("the steps create the group %q but no user of that name: systemd refuses to start the unit's dynamic user %q", user, user)
	}
	var cfgInstall string
	for _, line := range strings.Split(steps, "\n") {
		if strings.Contains(line, "install") && strings.Contains(line, "/etc/forecastd/forecastd.toml") {
			cfgInstall = line
		}
	}
	m := regexp.MustCompile(`-g (\S+)`).FindStringSubmatch(cfgInstall)
	if !strings.Contains(cfgInstall, "-m 0640") || m == nil {
		t.Fatalf("the config is installed with %q, want -m 0640 -g GROUP", cfgInstall)
	}
	group := m[1]
	if !slices.Contains(groups, group) {
		t.Errorf("the config's group %q is not created by the steps (groupadd creates %q)", group, groups)
	}
	if !slices.Contains(unitValues(unit, "SupplementaryGroups"), group) && !slices.Contains(unitValues(unit, "Group"), group) {
		t.Errorf("the unit's user is not in the group %q: it could not read its config", group)
	}
}

// TestSystemdUnitComment: the install steps in the comment at the top of
// the unit pass the same checks as the README's.
func TestSystemdUnitComment(t *testing.T) {
	unit, err := os.ReadFile("../../systemd/forecastd.service")
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, line := range strings.Split(string(unit), "\n") {
		if s, ok := strings.CutPrefix(line, "#   "); ok {
			steps = append(steps, s)
		}
	}
	checkSystemdSteps(t, strings.Join(steps, "\n"), string(unit), "forecastd")
}

// TestSystemdAnalyzeVerify runs systemd-analyze verify on the unit, with
// its command paths pointed at an executable that exists here; any
// complaint (an unknown key, a bad value) fails the test. Then
// systemd-analyze security --offline rates it as the README says (1.4).
// It checks the unit file, not a start under a running systemd, which
// this test cannot have.
func TestSystemdAnalyzeVerify(t *testing.T) {
	bin, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("systemd-analyze not found (apt-get install systemd); scripts/test installs it")
		}
		t.Skip("systemd-analyze not found (apt-get install systemd)")
	}
	unit, err := os.ReadFile("../../systemd/forecastd.service")
	if err != nil {
		t.Fatal(err)
	}
	truePath, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "forecastd.service")
	text := strings.ReplaceAll(string(unit), "/usr/local/bin/forecastd", truePath)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "verify", p).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "security", "--offline=true", p).CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for forecastd.service: ([0-9.]+)`).FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("systemd-analyze security --offline=true: %v\n%s", err, out)
	}
	if !strings.Contains(readmeSection(t, "Running as a systemd service"), "rates it "+string(m[1])+",") {
		t.Errorf("systemd-analyze security rates the unit %s, not what the README says", m[1])
	}
}
