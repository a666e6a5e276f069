// Package layout checks rules of the repository's layout that no
// compiler checks: the size of files and functions, which packages the
// daemon's may import, that every package that starts goroutines runs
// under the race detector, and that docs/development.md's map ("Layout")
// names every package.
package layout_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Bounds of a non-test Go file and of a function (a literal included).
const (
	maxFileLines = 800
	maxFuncLines = 80
)

// exempt are files allowed over the bounds; none is now.
var exempt = map[string]bool{}

// root is the repository's root.
const root = "../.."

// goFiles returns the repository's non-test Go files, relative to root,
// outside testdata and .git.
func goFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 100 {
		t.Fatalf("only %d Go files under %s", len(out), root)
	}
	return out
}

// TestSizes: no non-test Go file is longer than maxFileLines, no function
// longer than maxFuncLines (from its signature to its closing brace).
func TestSizes(t *testing.T) {
	fset := token.NewFileSet()
	for _, rel := range goFiles(t) {
		if exempt[rel] {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
			t.Errorf("%s: %d lines, more than %d: split it by concern", rel, n, maxFileLines)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var body *ast.BlockStmt
			name := "a function literal"
			switch x := n.(type) {
			case *ast.FuncDecl:
				body, name = x.Body, x.Name.Name
			case *ast.FuncLit:
				body = x.Body
			}
			if body == nil {
				return true
			}
			start, end := fset.Position(n.Pos()), fset.Position(body.Rbrace)
			if lines := end.Line - start.Line + 1; lines > maxFuncLines {
				t.Errorf("%s:%d: %s is %d lines, more than %d", rel, start.Line, name, lines, maxFuncLines)
			}
			return true
		})
	}
}

// TestDaemonImports: the daemon's packages (all but the evaluation
// tools, lab/, and the test servers, internal/testserver/) import
// neither outside their tests.
func TestDaemonImports(t *testing.T) {
	const module = "github.com/forecastd/forecastd/"
	fset := token.NewFileSet()
	for _, rel := range goFiles(t) {
		dir := filepath.Dir(rel)
		if strings.HasPrefix(dir, "lab") || strings.HasPrefix(dir, "internal/testserver") ||
			strings.HasPrefix(dir, "scripts") || dir == "cmd/forecastd-load" || strings.HasPrefix(dir, "svr/testdata") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			switch {
			case rel == "cmd/forecastd/lab.go" || rel == "cmd/forecastd/main.go" || rel == "cmd/forecastd/plot_tag.go":
				// The command wires the evaluation tools as its
				// subcommands (backtest, tune, nab, thresholds).
			case strings.HasPrefix(p, module+"lab"), strings.HasPrefix(p, module+"internal/testserver"):
				t.Errorf("%s imports %s: the daemon's code does not depend on the evaluation tools or the test servers", rel, p)
			}
		}
	}
}

func TestMain(m *testing.M) {
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		panic("layout: the tests run from internal/layout")
	}
	os.Exit(m.Run())
}

// TestRaceListed: every package whose non-test code starts a goroutine
// runs under the race detector in scripts/test (its race_libs or
// race_pkgs, or by name for pipeline and lab/nab), but for commands
// without tests.
func TestRaceListed(t *testing.T) {
	script, err := os.ReadFile(filepath.Join(root, "scripts/test"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(string(script), "\n") {
		for _, w := range strings.Fields(strings.NewReplacer(`"`, " ", "$", " ").Replace(line)) {
			if strings.HasPrefix(w, "./") && (strings.HasPrefix(line, "race_") || strings.Contains(line, "go test -race")) {
				listed[strings.TrimRight(strings.TrimPrefix(w, "./"), ")")] = true
			}
		}
	}
	fset := token.NewFileSet()
	starts := map[string]string{}
	for _, rel := range goFiles(t) {
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				starts[filepath.Dir(rel)] = fset.Position(g.Pos()).String()
			}
			return true
		})
	}
	if len(starts) < 5 {
		t.Fatalf("found goroutines started in only %d packages", len(starts))
	}
	for dir, at := range starts {
		if listed[dir] {
			continue
		}
		tests, _ := filepath.Glob(filepath.Join(root, dir, "*_test.go"))
		if len(tests) == 0 {
			continue // a command without tests (scripts/burst)
		}
		t.Errorf("%s starts a goroutine (%s) but scripts/test does not run it under the race detector", dir, at)
	}
}

// TestDevelopmentMap: docs/development.md's map of the packages names
// every directory of Go code, in backquotes, so that a newcomer finds a
// package there and a moved one does not leave the map behind.
func TestDevelopmentMap(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs/development.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, rel := range goFiles(t) {
		dir := filepath.Dir(rel)
		if seen[dir] || dir == "." {
			continue
		}
		seen[dir] = true
		if !strings.Contains(string(doc), "`"+dir+"`") && !strings.Contains(string(doc), "`"+dir+"/`") {
			t.Errorf("docs/development.md does not name %s", dir)
		}
	}
}
