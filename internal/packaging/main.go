// Command packaging makes forecastd's .deb and .rpm packages with nfpm from
// a built binary; `scripts/build --packages` runs it:
//
//	go run ./internal/packaging -binary forecastd -version VERSION -arch GOARCH -out DIR
//
// run from the repository's root. VERSION is what the binary was stamped
// with (scripts/build: VERSION, else `git describe --tags --always
// --dirty`); the packages carry it in the form dpkg and rpm order
// (packageVersion). Both packages install the binary as /usr/bin/forecastd,
// the systemd unit with its paths made /usr/bin and /usr/share/doc
// (packagedUnit), config.example.toml as /etc/forecastd/forecastd.toml
// (a configuration file, root:forecastd-config 0640), a sysusers.d entry
// for the group forecastd-config and the documentation; the maintainer
// scripts are deb/ and rpm/ beside this file. It prints the paths of the
// packages it made.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"
	"github.com/goreleaser/nfpm/v2/rpm"
)

// configGroup may read /etc/forecastd: the unit's SupplementaryGroups=.
const configGroup = "forecastd-config"

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "packaging:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("packaging", flag.ContinueOnError)
	binary := fs.String("binary", "forecastd", "the forecastd binary to package, built for -arch")
	version := fs.String("version", "", "the version the binary was stamped with (required)")
	arch := fs.String("arch", "", "the binary's GOARCH (required)")
	out := fs.String("out", "dist", "where the packages go")
	root := fs.String("root", ".", "the repository's root")
	maintainer := fs.String("maintainer", "forecastd maintainers <forecastd@localhost>", "the packages' Maintainer (Name <email>)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version == "" || *arch == "" || fs.NArg() > 0 {
		return errors.New("usage: packaging -binary FILE -version VERSION -arch GOARCH [-out DIR] [-root DIR]")
	}
	v, err := packageVersion(*version)
	if err != nil {
		return err
	}
	unit, err := os.ReadFile(filepath.Join(*root, "systemd/forecastd.service"))
	if err != nil {
		return err
	}
	packaged, err := packagedUnit(string(unit))
	if err != nil {
		return fmt.Errorf("systemd/forecastd.service: %w", err)
	}
	stage, err := os.MkdirTemp("", "forecastd-packaging-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	generated := map[string]string{
		"forecastd.service":  packaged,
		"forecastd.sysusers": sysusers,
	}
	for name, text := range generated {
		if err := os.WriteFile(filepath.Join(stage, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	for _, format := range []string{"deb", "rpm"} {
		info, err := packageInfo(format, *root, stage, *binary, *arch, *maintainer, v)
		if err != nil {
			return err
		}
		path, err := write(format, info, *out)
		if err != nil {
			return fmt.Errorf("%s: %w", format, err)
		}
		fmt.Fprintln(stdout, path)
	}
	return nil
}

// sysusers declares the group for systemd-sysusers (sysusers.d(5)), which
// recreates it at boot should it be deleted while the package is installed.
const sysusers = "# The group that may read forecastd's configuration (the unit's SupplementaryGroups=).\n" +
	"g " + configGroup + " -\n"

// version is a package's version in nfpm's parts: dpkg and rpm render it
// Version[~Prerelease][+Metadata].
type version struct {
	Version, Prerelease, Metadata string
}

func (v version) String() string {
	s := v.Version
	if v.Prerelease != "" {
		s += "~" + v.Prerelease
	}
	if v.Metadata != "" {
		s += "+" + v.Metadata
	}
	return s
}

var (
	// describeRe is `git describe --tags --always` from a tag vX.Y.Z[-PRE],
	// with -N-gHASH when commits follow the tag.
	describeRe = regexp.MustCompile(`^v?([0-9]+\.[0-9]+\.[0-9]+)(?:-([0-9A-Za-z.]+?))?(?:-([0-9]+)-(g[0-9a-f]+))?$`)
	// hashRe is git describe's answer without a tag: the commit's hash.
	hashRe = regexp.MustCompile(`^[0-9a-f]{7,40}$`)
)

// packageVersion is the package version of the version the binary was
// stamped with, in the order dpkg and rpm compare: a tag v1.2.3 is 1.2.3;
// v1.2.3-rc1 is 1.2.3~rc1 (before 1.2.3); commits after a tag, 5 after
// v1.2.3 at abc1234, are 1.2.3+5.gabc1234 (after it), a modified tree
// adds "dirty"; a commit without any tag, abc1234, is 0.0.0+git.abc1234.
// Anything else is refused: set VERSION to one of these forms.
func packageVersion(s string) (version, error) {
	described, dirty := strings.CutSuffix(s, "-dirty") // --dirty's mark
	var meta []string
	if m := describeRe.FindStringSubmatch(described); m != nil {
		if m[3] != "" {
			meta = append(meta, m[3], m[4])
		}
		if dirty {
			meta = append(meta, "dirty")
		}
		return version{m[1], m[2], strings.Join(meta, ".")}, nil
	}
	if hashRe.MatchString(described) {
		meta = append(meta, "git", described)
		if dirty {
			meta = append(meta, "dirty")
		}
		return version{"0.0.0", "", strings.Join(meta, ".")}, nil
	}
	return version{}, fmt.Errorf("version %q: not vX.Y.Z[-PRE][-N-gHASH][-dirty] nor a commit hash; set VERSION", s)
}

// packagedUnit is the unit as the packages install it: forecastd in
// /usr/bin and its README in /usr/share/doc/forecastd, and in place of
// the manual install steps of its leading comment, a line saying the
// package installed it. A unit with no such steps, or that still names
// /usr/local after the rewrite, is an error, so that a change to the unit
// cannot ship a package whose ExecStart= names a file it does not install.
func packagedUnit(unit string) (string, error) {
	lines := strings.Split(unit, "\n")
	// The leading comment's first paragraphs, up to the "#" line after
	// the last step ("#   install ..."), are the manual install.
	lastStep := -1
	for i, l := range lines {
		if !strings.HasPrefix(l, "#") {
			break
		}
		if strings.HasPrefix(l, "#   ") {
			lastStep = i
		}
	}
	if lastStep < 0 || lastStep+1 >= len(lines) || lines[lastStep+1] != "#" {
		return "", errors.New("no install steps (\"#   ...\" lines, then \"#\") in the leading comment")
	}
	head := "# forecastd as a systemd service, installed by its package: edit\n" +
		"# /etc/forecastd/forecastd.toml, then `systemctl enable --now forecastd`\n" +
		"# (see /usr/share/doc/forecastd/docs/operations.md).\n#\n"
	text := head + strings.Join(lines[lastStep+2:], "\n")
	text = strings.NewReplacer(
		"/usr/local/bin/forecastd", "/usr/bin/forecastd",
		"/usr/local/share/doc/forecastd/", "/usr/share/doc/forecastd/",
	).Replace(text)
	if i := strings.Index(text, "/usr/local"); i >= 0 {
		line := text[strings.LastIndex(text[:i], "\n")+1:]
		line, _, _ = strings.Cut(line, "\n")
		return "", fmt.Errorf("still names /usr/local after the rewrite: %q", line)
	}
	if !strings.Contains(text, "\nExecStart=/usr/bin/forecastd run") {
		return "", errors.New("no ExecStart=/usr/bin/forecastd run after the rewrite")
	}
	return text, nil
}

// packageInfo is the nfpm description of the package in format ("deb" or
// "rpm"): the same files, and each format's maintainer scripts.
func packageInfo(format, root, stage, binary, arch, maintainer string, v version) (*nfpm.Info, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs/*.md"))
	if err != nil || len(docs) == 0 {
		return nil, fmt.Errorf("docs/*.md: %v, %d files", err, len(docs))
	}
	docType := files.TypeFile
	if format == "rpm" {
		docType = files.TypeRPMDoc // left out by rpm --excludedocs
	}
	owned := func(mode os.FileMode, group string) *files.ContentFileInfo {
		return &files.ContentFileInfo{Owner: "root", Group: group, Mode: mode}
	}
	contents := files.Contents{
		{Source: binary, Destination: "/usr/bin/forecastd", FileInfo: owned(0o755, "root")},
		{Source: filepath.Join(stage, "forecastd.service"), Destination: "/usr/lib/systemd/system/forecastd.service", FileInfo: owned(0o644, "root")},
		{Source: filepath.Join(stage, "forecastd.sysusers"), Destination: "/usr/lib/sysusers.d/forecastd.conf", FileInfo: owned(0o644, "root")},
		{Destination: "/etc/forecastd", Type: files.TypeDir, FileInfo: owned(0o755, "root")},
		// A configuration file: an upgrade never replaces the
		// administrator's edits (dpkg's conffiles, rpm's noreplace).
		{Source: filepath.Join(root, "config.example.toml"), Destination: "/etc/forecastd/forecastd.toml", Type: files.TypeConfigNoReplace, FileInfo: owned(0o640, configGroup)},
		{Source: filepath.Join(root, "README.md"), Destination: "/usr/share/doc/forecastd/README.md", Type: docType, FileInfo: owned(0o644, "root")},
	}
	for _, d := range docs {
		contents = append(contents, &files.Content{Source: d, Destination: "/usr/share/doc/forecastd/docs/" + filepath.Base(d), Type: docType, FileInfo: owned(0o644, "root")})
	}
	scripts := filepath.Join(root, "internal/packaging", format)
	info := &nfpm.Info{
		Name:            "forecastd",
		Arch:            arch,
		Platform:        "linux",
		Version:         v.Version,
		Prerelease:      v.Prerelease,
		VersionMetadata: v.Metadata,
		VersionSchema:   "none",
		Section:         "net",
		Priority:        "optional",
		Maintainer:      maintainer,
		Description: "online forecasts of streaming time series\n" +
			"forecastd reads points from NATS, learns an online regressor per series\n" +
			"and publishes forecasts with prediction intervals to NATS and InfluxDB,\n" +
			"with anomaly scores and warnings before a series crosses a threshold.",
		Overridables: nfpm.Overridables{Contents: contents},
	}
	switch format {
	case "deb":
		info.Scripts = nfpm.Scripts{
			PreInstall:  filepath.Join(scripts, "preinst"),
			PostInstall: filepath.Join(scripts, "postinst"),
			PreRemove:   filepath.Join(scripts, "prerm"),
			PostRemove:  filepath.Join(scripts, "postrm"),
		}
		// preinst runs groupadd.
		info.Deb.Predepends = []string{"passwd"}
	case "rpm":
		info.Scripts = nfpm.Scripts{
			PreInstall:  filepath.Join(scripts, "pre"),
			PostInstall: filepath.Join(scripts, "post"),
			PreRemove:   filepath.Join(scripts, "preun"),
			PostRemove:  filepath.Join(scripts, "postun"),
		}
		info.RPM.Summary = "online forecasts of streaming time series"
	default:
		return nil, fmt.Errorf("no package format %q", format)
	}
	return nfpm.WithDefaults(info), nil
}

// write makes the package of info in dir, under the format's
// conventional file name, and returns its path.
func write(format string, info *nfpm.Info, dir string) (string, error) {
	var p nfpm.Packager
	switch format {
	case "deb":
		p = deb.Default
	case "rpm":
		p = rpm.DefaultRPM
	}
	path := filepath.Join(dir, p.ConventionalFileName(info))
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if err := p.Package(info, f); err != nil {
		f.Close()
		os.Remove(path)
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return "", err
	}
	return path, nil
}
