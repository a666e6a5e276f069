//go:build slow

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	rpmutils "github.com/sassoftware/go-rpmutils"
)

// The revision the test stamps into the packaged binaries.
const testRevision = "0123456789abcdef0123456789abcdef01234567"

// A packaged file: its path, type, mode and owners.
type packagedFile struct {
	path         string
	dir          bool
	mode         fs.FileMode
	owner, group string
}

// packagedFiles are the files both packages install, but for the docs.
var packagedFiles = []packagedFile{
	{"/usr/bin/forecastd", false, 0o755, "root", "root"},
	{"/usr/lib/systemd/system/forecastd.service", false, 0o644, "root", "root"},
	{"/usr/lib/sysusers.d/forecastd.conf", false, 0o644, "root", "root"},
	{"/etc/forecastd", true, 0o755, "root", "root"},
	{"/etc/forecastd/forecastd.toml", false, 0o640, "root", configGroup},
}

// The state systemd keeps for the unit's dynamic user: a directory under
// /var/lib/private and a link to it.
const (
	stateDir  = "/var/lib/private/forecastd"
	stateLink = "/var/lib/forecastd"
	// What `systemctl enable forecastd` links.
	wantsLink = "/etc/systemd/system/multi-user.target.wants/forecastd.service"
)

// TestPackages builds the packages with scripts/build --packages, reads
// the .rpm, then installs the .deb into this machine with dpkg, upgrades
// it, removes it and purges it, checking at each step what
// docs/operations.md ("Installing from the packages") says is there.
// It needs root and dpkg (CI has both: there it must not skip) and a
// machine without forecastd installed, which it leaves as it found it:
// the package purged, and the group forecastd-config deleted if the test
// made it (the packages keep it, as the docs say).
func TestPackages(t *testing.T) {
	ci := os.Getenv("CI") == "true"
	cannot := func(why string) {
		t.Helper()
		if ci {
			t.Fatalf("%s: CI runs this test as root on Debian", why)
		}
		t.Skip(why)
	}
	if os.Geteuid() != 0 {
		cannot("not root: the test installs the .deb into this machine")
	}
	for _, tool := range []string{"dpkg", "dpkg-deb", "dpkg-query", "groupdel", "getent"} {
		if _, err := exec.LookPath(tool); err != nil {
			cannot(tool + " not found: the test installs the .deb with dpkg")
		}
	}
	if out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", "forecastd").CombinedOutput(); err == nil && !strings.Contains(string(out), "not-installed") {
		cannot("forecastd is installed here (" + string(out) + "): the test installs and purges its own")
	}
	for _, p := range []string{"/etc/forecastd", stateLink, stateDir, wantsLink} {
		if _, err := os.Lstat(p); err == nil {
			cannot(p + " exists: the test would install over it and purge it")
		}
	}
	_, groupErr := user.LookupGroup(configGroup)
	groupBefore := groupErr == nil
	_, fdUserErr := user.Lookup("forecastd")
	_, fdGroupErr := user.LookupGroup("forecastd")

	// Leave the machine as found, whatever failed.
	t.Cleanup(func() {
		if out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", "forecastd").CombinedOutput(); err == nil && !strings.Contains(string(out), "not-installed") {
			if out, err := exec.Command("dpkg", "-P", "forecastd").CombinedOutput(); err != nil {
				t.Errorf("cleanup: dpkg -P forecastd: %v\n%s", err, out)
			}
		}
		for _, p := range []string{wantsLink, stateLink, stateDir} {
			os.RemoveAll(p)
		}
		if _, err := user.LookupGroup(configGroup); err == nil && !groupBefore {
			if out, err := exec.Command("groupdel", configGroup).CombinedOutput(); err != nil {
				t.Errorf("cleanup: groupdel %s: %v\n%s", configGroup, err, out)
			}
		}
	})

	debArch := strings.TrimSpace(mustRun(t, "dpkg", "--print-architecture"))
	deb, rpm := buildPackages(t, "v1.2.3")
	if got, want := filepath.Base(deb), "forecastd_1.2.3_"+debArch+".deb"; got != want {
		t.Errorf("the .deb is %s, want %s", got, want)
	}
	if !regexp.MustCompile(`^forecastd-1\.2\.3-1\.[a-z0-9_]+\.rpm$`).MatchString(filepath.Base(rpm)) {
		t.Errorf("the .rpm is %s, want forecastd-1.2.3-1.ARCH.rpm", filepath.Base(rpm))
	}
	example, err := os.ReadFile("../../config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	repoUnit, err := os.ReadFile("../../systemd/forecastd.service")
	if err != nil {
		t.Fatal(err)
	}
	unit, err := packagedUnit(string(repoUnit))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("rpm", func(t *testing.T) { checkRPM(t, rpm, string(example), unit) })

	// Install: the files, the group, the binary, not the service.
	out := mustRun(t, "dpkg", "-i", deb)
	if strings.Contains(strings.ToLower(out), "warning") {
		t.Errorf("dpkg -i warns:\n%s", out)
	}
	for _, f := range packagedFiles {
		checkFile(t, f)
	}
	checkContent(t, "/etc/forecastd/forecastd.toml", string(example))
	checkContent(t, "/usr/lib/systemd/system/forecastd.service", unit)
	checkContent(t, "/usr/lib/sysusers.d/forecastd.conf", sysusers)
	if c := mustRun(t, "dpkg-query", "-W", "-f=${Conffiles}", "forecastd"); !strings.Contains(c, "/etc/forecastd/forecastd.toml ") {
		t.Errorf("/etc/forecastd/forecastd.toml is not a conffile: %q", c)
	}
	// The unit's Documentation= is in the package (Docker's images may
	// leave /usr/share/doc out of what dpkg unpacks).
	if l := mustRun(t, "dpkg", "-L", "forecastd"); !strings.Contains(l, "/usr/share/doc/forecastd/README.md\n") {
		t.Errorf("the package has no /usr/share/doc/forecastd/README.md:\n%s", l)
	}
	if bin, err := exec.LookPath("systemd-analyze"); err == nil {
		if out, err := exec.Command(bin, "verify", "/usr/lib/systemd/system/forecastd.service").CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("systemd-analyze verify on the installed unit: %v\n%s", err, out)
		}
	} else if ci {
		t.Error("systemd-analyze not found: scripts/test installs it")
	}
	g, err := user.LookupGroup(configGroup)
	if err != nil {
		t.Fatalf("the package made no group %s: %v", configGroup, err)
	}
	gid, _ := strconv.Atoi(g.Gid)
	if gid >= 1000 {
		t.Errorf("the group %s has gid %d, not a system group's", configGroup, gid)
	}
	if _, err := user.Lookup("forecastd"); err == nil && fdUserErr != nil {
		t.Error("the package made a user forecastd: the unit's user is dynamic")
	}
	if _, err := user.LookupGroup("forecastd"); err == nil && fdGroupErr != nil {
		t.Error("the package made a group forecastd: systemd refuses a dynamic user forecastd beside it")
	}
	if _, err := os.Lstat(wantsLink); err == nil {
		t.Errorf("the package enabled the service (%s)", wantsLink)
	}
	if v := mustRun(t, "/usr/bin/forecastd", "version"); !strings.HasPrefix(v, "forecastd v1.2.3 (revision "+testRevision+")") {
		t.Errorf("forecastd version: %q", v)
	}
	if c := mustRun(t, "/usr/bin/forecastd", "check-config", "/etc/forecastd/forecastd.toml"); !strings.Contains(c, "/etc/forecastd/forecastd.toml: OK") {
		t.Errorf("forecastd check-config:\n%s", c)
	}
	// The unit's user reads the file through the group alone: a user in
	// it may, a user outside it is told which group.
	nobody := func(groups ...uint32) *exec.Cmd {
		cmd := exec.Command("/usr/bin/forecastd", "check-config", "/etc/forecastd/forecastd.toml")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: groups}}
		cmd.Dir = "/"
		return cmd
	}
	if out, err := nobody(uint32(gid)).CombinedOutput(); err != nil || !strings.Contains(string(out), ": OK") {
		t.Errorf("check-config as a user of the group %s: %v\n%s", configGroup, err, out)
	}
	if out, err := nobody().CombinedOutput(); err == nil || !strings.Contains(string(out), configGroup) {
		t.Errorf("check-config as a user outside the group %s: %v, want an error naming the group\n%s", configGroup, err, out)
	}

	// Upgrade: the new binary, the administrator's configuration kept.
	deb2, _ := buildPackages(t, "v1.2.4")
	edited := string(example) + "# edited by the administrator\n"
	if err := os.WriteFile("/etc/forecastd/forecastd.toml", []byte(edited), 0o640); err != nil {
		t.Fatal(err)
	}
	out = mustRun(t, "dpkg", "-i", deb2)
	if strings.Contains(strings.ToLower(out), "warning") {
		t.Errorf("dpkg -i (upgrade) warns:\n%s", out)
	}
	if v := mustRun(t, "/usr/bin/forecastd", "version"); !strings.HasPrefix(v, "forecastd v1.2.4 ") {
		t.Errorf("forecastd version after the upgrade: %q", v)
	}
	checkContent(t, "/etc/forecastd/forecastd.toml", edited)
	checkFile(t, packagedFiles[len(packagedFiles)-1])

	// Remove: an enabled service is disabled; the configuration and the
	// state stay.
	if _, err := exec.LookPath("systemctl"); err == nil {
		mustRun(t, "systemctl", "enable", "forecastd.service")
		if _, err := os.Lstat(wantsLink); err != nil {
			t.Fatalf("systemctl enable made no %s: %v", wantsLink, err)
		}
	} else if ci {
		t.Error("systemctl not found: scripts/test installs systemd")
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stateDir, "checkpoint"), []byte("state"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("private/forecastd", stateLink); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "dpkg", "-r", "forecastd")
	for _, p := range []string{"/usr/bin/forecastd", "/usr/lib/systemd/system/forecastd.service", "/usr/lib/sysusers.d/forecastd.conf", wantsLink} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("dpkg -r left %s", p)
		}
	}
	checkContent(t, "/etc/forecastd/forecastd.toml", edited)
	checkContent(t, filepath.Join(stateLink, "checkpoint"), "state")
	if s := mustRun(t, "dpkg-query", "-W", "-f=${Status}", "forecastd"); s != "deinstall ok config-files" {
		t.Errorf("after dpkg -r, dpkg-query says %q", s)
	}

	// Purge: the configuration and the state go; the group stays.
	mustRun(t, "dpkg", "-P", "forecastd")
	for _, p := range []string{"/etc/forecastd", stateLink, stateDir} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("dpkg -P left %s", p)
		}
	}
	if _, err := user.LookupGroup(configGroup); err != nil {
		t.Errorf("dpkg -P deleted the group %s, which the docs say stays: %v", configGroup, err)
	}
	if out, err := exec.Command("dpkg-query", "-W", "forecastd").CombinedOutput(); err == nil {
		t.Errorf("dpkg still knows forecastd after dpkg -P: %s", out)
	}
}

// buildPackages runs scripts/build --packages with VERSION=version and
// returns the .deb and the .rpm it made.
func buildPackages(t *testing.T, version string) (deb, rpm string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("../../scripts/build", "--packages", dir)
	cmd.Env = append(os.Environ(), "VERSION="+version, "REVISION="+testRevision)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/build --packages: %v\n%s", err, out)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		switch {
		case strings.HasPrefix(l, dir) && strings.HasSuffix(l, ".deb"):
			deb = l
		case strings.HasPrefix(l, dir) && strings.HasSuffix(l, ".rpm"):
			rpm = l
		}
	}
	if deb == "" || rpm == "" {
		t.Fatalf("scripts/build --packages named no .deb and .rpm:\n%s", out)
	}
	return deb, rpm
}

// checkRPM reads the .rpm: its version, its files with their modes,
// owners and flags, the configuration's and the unit's text, and its
// scripts, which must be those of rpm/.
func checkRPM(t *testing.T, path, config, unit string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := rpmutils.ReadRpm(f)
	if err != nil {
		t.Fatal(err)
	}
	nevra, err := r.Header.GetNEVRA()
	if err != nil {
		t.Fatal(err)
	}
	if nevra.Name != "forecastd" || nevra.Version != "1.2.3" || nevra.Release != "1" || !strings.HasSuffix(path, "."+nevra.Arch+".rpm") {
		t.Errorf("the rpm is %+v", nevra)
	}
	infos, err := r.Header.GetFiles()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]rpmutils.FileInfo{}
	for _, fi := range infos {
		byName[fi.Name()] = fi
	}
	for _, want := range packagedFiles {
		fi, ok := byName[want.path]
		if !ok {
			t.Errorf("the rpm has no %s", want.path)
			continue
		}
		mode := fs.FileMode(fi.Mode() & 0o7777)
		isDir := fi.Mode()&0o170000 == 0o040000
		if isDir != want.dir || mode != want.mode || fi.UserName() != want.owner || fi.GroupName() != want.group {
			t.Errorf("rpm: %s: dir %v, %04o %s:%s; want dir %v, %04o %s:%s", want.path, isDir, mode, fi.UserName(), fi.GroupName(), want.dir, want.mode, want.owner, want.group)
		}
	}
	if fi, ok := byName["/etc/forecastd/forecastd.toml"]; ok && fi.Flags()&(rpmutils.RPMFILE_CONFIG|rpmutils.RPMFILE_NOREPLACE) != rpmutils.RPMFILE_CONFIG|rpmutils.RPMFILE_NOREPLACE {
		t.Errorf("rpm: /etc/forecastd/forecastd.toml is not %%config(noreplace): flags %#x", fi.Flags())
	}
	if fi, ok := byName["/usr/share/doc/forecastd/README.md"]; !ok || fi.Flags()&rpmutils.RPMFILE_DOC == 0 {
		t.Errorf("rpm: no /usr/share/doc/forecastd/README.md marked %%doc")
	}
	for tag, file := range map[int]string{rpmutils.PREIN: "pre", rpmutils.POSTIN: "post", rpmutils.PREUN: "preun", rpmutils.POSTUN: "postun"} {
		want, err := os.ReadFile(filepath.Join("rpm", file))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := r.Header.GetString(tag); err != nil || got != string(want) {
			t.Errorf("rpm: the %%%s script is %q (%v), want rpm/%s", file, got, err, file)
		}
	}
	payload, err := r.PayloadReaderExtended()
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{"/etc/forecastd/forecastd.toml": config, "/usr/lib/systemd/system/forecastd.service": unit}
	for {
		fi, err := payload.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		want, ok := texts[fi.Name()]
		if !ok {
			continue
		}
		got, err := io.ReadAll(payload)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("rpm: %s differs from what it is made from", fi.Name())
		}
		delete(texts, fi.Name())
	}
	for name := range texts {
		t.Errorf("rpm: no %s in the payload", name)
	}
}

// checkFile checks an installed file's type, mode and owners.
func checkFile(t *testing.T, want packagedFile) {
	t.Helper()
	fi, err := os.Lstat(want.path)
	if err != nil {
		t.Error(err)
		return
	}
	st := fi.Sys().(*syscall.Stat_t)
	owner, group := fmt.Sprint(st.Uid), fmt.Sprint(st.Gid)
	if u, err := user.LookupId(owner); err == nil {
		owner = u.Username
	}
	if g, err := user.LookupGroupId(group); err == nil {
		group = g.Name
	}
	if fi.IsDir() != want.dir || fi.Mode().Perm() != want.mode || owner != want.owner || group != want.group {
		t.Errorf("%s: dir %v, %04o %s:%s; want dir %v, %04o %s:%s", want.path, fi.IsDir(), fi.Mode().Perm(), owner, group, want.dir, want.mode, want.owner, want.group)
	}
}

// checkContent checks a file's text.
func checkContent(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Error(err)
		return
	}
	if string(got) != want {
		t.Errorf("%s is not what it should be (%d bytes, want %d)", path, len(got), len(want))
	}
}

// mustRun runs a command and returns its output, failing the test if it
// fails.
func mustRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}
