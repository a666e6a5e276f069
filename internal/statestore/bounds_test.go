package statestore

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// allocated returns the bytes fn allocated.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Issue #11: a 3 GB stray .fcstate file in the state dir was read whole
// (3.2 GB RSS) before its header was checked. Now its size is checked
// first (ErrTooLarge), and a file within MaxFileSize whose header does not
// match its size is refused after reading its first KiB: either costs
// kilobytes, not the file's size. The files are sparse (no disk used).
func TestStrayLargeFilesNotRead(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "stray"+Ext)
	if err := os.WriteFile(huge, []byte(magic), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 3<<30); err != nil {
		t.Fatal(err)
	}
	// 200 MB, within MaxFileSize: a valid header saying 100 payload bytes.
	h := make([]byte, headerSize)
	copy(h, magic)
	binary.BigEndian.PutUint16(h[8:], Version)
	binary.BigEndian.PutUint64(h[12:], 100)
	liar := filepath.Join(dir, "liar"+Ext)
	if err := os.WriteFile(liar, h, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(liar, 200<<20); err != nil {
		t.Fatal(err)
	}
	var errs []error
	n := allocated(func() { _, errs = s.LoadAll() })
	if len(errs) != 2 {
		t.Fatalf("errors %v: want one per stray file", errs)
	}
	if !errors.Is(errs[1], ErrTooLarge) || !errors.Is(errs[0], ErrMalformed) {
		t.Fatalf("errors %v: want the liar malformed, the 3 GB file too large", errs)
	}
	if n > 1<<20 {
		t.Fatalf("LoadAll allocated %d bytes for two stray files of 3 GB and 200 MB", n)
	}
}
