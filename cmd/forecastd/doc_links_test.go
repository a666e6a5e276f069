package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// headingSlug is the anchor GitHub gives a Markdown heading: lower case,
// every character but letters, digits, spaces, '-' and '_' dropped, spaces
// made '-'.
func headingSlug(h string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == ' ':
			return '-'
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			return unicode.ToLower(r)
		}
		return -1
	}, strings.TrimSpace(h))
}

// TestDocLinks: every relative link of README.md, BENCHMARKS.md and
// docs/*.md names a file of the repository, and every #anchor a heading of
// the Markdown file it points into, so that the README's pointers into
// docs/ lead where they say.
func TestDocLinks(t *testing.T) {
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("docs/*.md: %v, %d files", err, len(files))
	}
	files = append(files, "../../README.md", "../../BENCHMARKS.md")
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading := regexp.MustCompile("(?m)^#{1,6} (.+)$")
	fence := regexp.MustCompile("(?ms)^```.*?^```")
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		a := map[string]bool{}
		for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(string(b), ""), -1) {
			a[headingSlug(m[1])] = true
		}
		anchors[path] = a
		return a
	}
	links := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(fence.ReplaceAllString(string(b), ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			path, anchor, _ := strings.Cut(target, "#")
			if path == "" {
				path = f
			} else {
				path = filepath.Join(filepath.Dir(f), path)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s: %v", f, target, err)
				continue
			}
			if anchor != "" && !anchorsOf(path)[anchor] {
				t.Errorf("%s links to %s: %s has no heading with that anchor", f, target, path)
			}
		}
	}
	if links < 10 {
		t.Errorf("%d relative links in the docs, want the README's pointers into docs/ at least", links)
	}
}

// TestHeadingSlug: anchors as GitHub makes them of headings with code,
// punctuation and non-ASCII letters.
func TestHeadingSlug(t *testing.T) {
	for h, want := range map[string]string{
		"Forecasting further ahead: `horizon`, `step` and `[[resolutions]]`": "forecasting-further-ahead-horizon-step-and-resolutions",
		"NATS authentication and TLS":                                        "nats-authentication-and-tls",
		"Backfilling InfluxDB: forecastd replay":                             "backfilling-influxdb-forecastd-replay",
		"Choosing C, ε and γ: forecastd tune":                                "choosing-c-ε-and-γ-forecastd-tune",
	} {
		if got := headingSlug(h); got != want {
			t.Errorf("headingSlug(%q) = %q, want %q", h, got, want)
		}
	}
}

// TestBenchmarksSections: every section of BENCHMARKS.md that a comment or
// a doc names (the file's name, then the section's in double quotes) is a
// heading there, so that a pointer from a constant's comment to its
// measurement leads to it.
func TestBenchmarksSections(t *testing.T) {
	b, err := os.ReadFile("../../BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	var headings []string
	for _, m := range regexp.MustCompile("(?m)^#{2,4} (.+)$").FindAllStringSubmatch(string(b), -1) {
		headings = append(headings, strings.ReplaceAll(m[1], "`", ""))
	}
	ref := regexp.MustCompile(`BENCHMARKS(?:\.md)?(?:\]\([^)]*\))?,? "([^"]+)"`)
	wrap := regexp.MustCompile(`\n\s*(//\s?)?`)
	refs := 0
	err = filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "../.." || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".md") {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range ref.FindAllStringSubmatch(wrap.ReplaceAllString(string(text), " "), -1) {
			refs++
			name := strings.ReplaceAll(m[1], "`", "")
			found := false
			for _, h := range headings {
				found = found || strings.HasPrefix(h, name)
			}
			if !found {
				t.Errorf("%s names BENCHMARKS.md %q, which has no such section", path, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if refs == 0 {
		t.Error("no reference to a section of BENCHMARKS.md found: the pattern is wrong")
	}
}

// TestDocSectionNames: every section of README.md or docs/*.md that the
// code names, in a comment or in a message a user reads (the file's name,
// then the section's in double quotes, escaped or not), is a heading of
// that file, so that an error's pointer leads where it says when a
// section moves.
func TestDocSectionNames(t *testing.T) {
	heading := regexp.MustCompile("(?m)^#{1,6} (.+)$")
	fence := regexp.MustCompile("(?ms)^```.*?^```")
	headings := map[string][]string{}
	headingsOf := func(file string) []string {
		if h, ok := headings[file]; ok {
			return h
		}
		b, err := os.ReadFile(filepath.Join("../..", file))
		if err != nil {
			t.Errorf("%s: %v", file, err)
		}
		var hs []string
		for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(string(b), ""), -1) {
			hs = append(hs, strings.ReplaceAll(m[1], "`", ""))
		}
		headings[file] = hs
		return hs
	}
	ref := regexp.MustCompile(`\b(README(?:\.md)?|docs/[a-z_-]+\.md),? \\?"([^"\\]+)\\?"`)
	wrap := regexp.MustCompile(`\n\s*(//\s?)?`)
	refs := 0
	err := filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "../.." || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range ref.FindAllStringSubmatch(wrap.ReplaceAllString(string(text), " "), -1) {
			refs++
			file := m[1]
			if !strings.HasSuffix(file, ".md") {
				file += ".md"
			}
			name := strings.ReplaceAll(m[2], "`", "")
			found := false
			for _, h := range headingsOf(file) {
				found = found || strings.HasPrefix(h, name)
			}
			if !found {
				t.Errorf("%s names %s %q, which has no such section", path, m[1], name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if refs == 0 {
		t.Error("no reference to a section of the docs found: the pattern is wrong")
	}
}
