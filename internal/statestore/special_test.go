package statestore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSpecialFiles: a FIFO or a symbolic link in place of a series'
// checkpoint (or of the applied position) is reported with its path and
// skipped: neither Load, LoadAll nor ReadApplied blocks on a FIFO, and a
// link is not followed.
func TestSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save("good", smallState(t, "good", 0)); err != nil {
		t.Fatal(err)
	}
	fifo, link := s.Path("fifo"), s.Path("link")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(target, Encode(smallState(t, "link", 0)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, AppliedFile), 0o600); err != nil {
		t.Fatal(err)
	}

	// Each call in a goroutine: a FIFO opened for reading without a
	// writer blocks for good.
	within := func(what string, f func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { defer close(done); f() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s blocked", what)
		}
	}
	for _, c := range []struct{ key, path string }{{"fifo", fifo}, {"link", link}} {
		within("Load("+c.key+")", func() {
			_, err := s.Load(c.key)
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), c.path) {
				t.Errorf("Load(%q): %v, want ErrNotRegular naming %s", c.key, err, c.path)
			}
		})
	}
	within("LoadAll", func() {
		states, errs := s.LoadAll()
		if len(states) != 1 || states[0].Key != "good" {
			t.Errorf("LoadAll: %d states, want the good one only (%v)", len(states), errs)
		}
		for _, p := range []string{fifo, link} {
			found := false
			for _, err := range errs {
				found = found || errors.Is(err, ErrNotRegular) && strings.Contains(err.Error(), p)
			}
			if !found {
				t.Errorf("LoadAll does not report %s: %v", p, errs)
			}
		}
	})
	within("ReadApplied", func() {
		if _, err := ReadApplied(dir); !errors.Is(err, ErrNotRegular) {
			t.Errorf("ReadApplied on a FIFO: %v, want ErrNotRegular", err)
		}
	})
}
