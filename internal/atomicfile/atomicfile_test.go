package atomicfile

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFileReplaces writes random contents over one file many times:
// after each write the file holds exactly the last data and no temporary
// file is left.
func TestWriteFileReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "applied.json")
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 50 {
		data := make([]byte, rng.IntN(4096))
		for j := range data {
			data[j] = byte(rng.IntN(256))
		}
		if err := WriteFile(path, data); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("write %d: file holds %d bytes, want the %d written", i, len(got), len(data))
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) != 1 {
			t.Fatalf("write %d: directory holds %v, want only applied.json", i, names(ents))
		}
	}
}

// TestWriteFileFailureKeepsOld: when the write cannot happen (the target
// is a directory, so the rename fails), the old content stays, the error
// says so and names the file, and no temporary file is left.
func TestWriteFileFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "x")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "keep"), []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := WriteFile(target, []byte("new"))
	if err == nil {
		t.Fatal("WriteFile over a non-empty directory succeeded")
	}
	ents, rerr := os.ReadDir(dir)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if len(ents) != 1 || ents[0].Name() != "x" {
		t.Fatalf("after a failed write the directory holds %v, want only x", names(ents))
	}
	if b, _ := os.ReadFile(filepath.Join(target, "keep")); string(b) != "old" {
		t.Fatalf("old content changed: %q", b)
	}
	// A missing directory: the error names it.
	err = WriteFile(filepath.Join(dir, "missing", "f"), nil)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("missing")) {
		t.Fatalf("write into a missing directory: %v, want an error naming it", err)
	}
}

func TestIsTemp(t *testing.T) {
	dir := t.TempDir()
	// A temporary file as WriteFile names it.
	f, err := os.CreateTemp(dir, "."+"a.json"+TmpInfix+"*")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if !IsTemp(filepath.Base(f.Name()), "a.json") {
		t.Errorf("IsTemp(%q, a.json) = false", filepath.Base(f.Name()))
	}
	for _, n := range []string{"a.json", ".b.json" + TmpInfix + "1", "a.json.tmp-1"} {
		if IsTemp(n, "a.json") {
			t.Errorf("IsTemp(%q, a.json) = true", n)
		}
	}
}

func names(ents []os.DirEntry) []string {
	var out []string
	for _, e := range ents {
		out = append(out, fmt.Sprint(e.Name()))
	}
	return out
}
