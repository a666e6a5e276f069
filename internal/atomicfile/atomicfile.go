// Package atomicfile replaces files atomically and durably: a reader sees
// the old content or the new, never a part, and after a crash the file
// holds one of them (POSIX rename(2) within a directory, made durable by
// syncing the file before the rename and the directory after it).
//
// Why not github.com/google/renameio/v2 (v2.0.2 is on the module proxy):
// its CloseAtomicallyReplace syncs the file but never the directory, so a
// crash after it returns can bring the old file back, which breaks the
// durability this package promises; and without WithTempDir it may put
// the temporary file in $TMPDIR, whose leftovers no cleaner of the state
// directory would see. We would wrap it with SyncDir and a naming rule of
// our own, which is most of this file.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// TmpInfix is in the names of the temporary files WriteFile creates in the
// file's directory: "." + base name + TmpInfix + a random suffix. Only a
// crash between their creation and the rename leaves one behind;
// IsTemp recognises them, for whoever cleans the directory.
const TmpInfix = ".tmp-"

// IsTemp reports whether name (a base name) is a temporary file that
// WriteFile left behind for the file base.
func IsTemp(name, base string) bool {
	return strings.HasPrefix(name, "."+base+TmpInfix)
}

// WriteFile replaces path with data: it writes a temporary file in the
// same directory, syncs it, renames it over path and syncs the directory.
// On error path is unchanged (or, if only the directory sync failed,
// replaced but perhaps not durably) and the temporary file is removed.
// The new file has mode 0600 (os.CreateTemp's). Cost: two fsyncs.
func WriteFile(path string, data []byte) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+TmpInfix+"*")
	if err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("atomicfile: write %s: %w", f.Name(), err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("atomicfile: sync %s: %w", f.Name(), err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("atomicfile: close %s: %w", f.Name(), err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("atomicfile: %s replaced, but not durably: %w", path, err)
	}
	return nil
}

// SyncDir makes a rename or removal in dir durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
