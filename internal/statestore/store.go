package statestore

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/forecastd/forecastd/internal/atomicfile"
	"github.com/forecastd/forecastd/pipeline"
)

// Ext is the extension of checkpoint files; temporary files, left only by
// a crash in the middle of Save, are named "." + the file's name +
// ".tmp-" + a random suffix.
const Ext = ".fcstate"

const tmpInfix = Ext + atomicfile.TmpInfix

// Store keeps one checkpoint file per series in a directory. Its methods
// may be called from several goroutines at once, for different keys; calls
// for the same key must not overlap (the daemon's shard owns its series).
type Store struct {
	dir string
}

// Open returns the store over dir, creating the directory (mode 0700) if
// it does not exist.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("statestore: %w", err)
	}
	return &Store{dir: dir}, nil
}

// CheckDir returns why forecastd could not keep its states in dir, nil if
// it can: dir, if it exists, must be a directory in which a file can be
// created (one is, and removed); if it does not, the nearest directory
// above it that does must let this process create dir in it (access(2)),
// without creating anything. A directory that cannot be written would
// otherwise pass unseen: the states are first written a checkpoint
// interval after start.
func CheckDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case err == nil && !fi.IsDir():
		return fmt.Errorf("%s: not a directory", dir)
	case err == nil:
		f, err := os.CreateTemp(dir, ".forecastd-check-*")
		if err != nil {
			return fmt.Errorf("cannot write in %s: %w", dir, unwrapPath(err))
		}
		name := f.Name()
		f.Close()
		return os.Remove(name)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %w", dir, unwrapPath(err))
	}
	parent := filepath.Dir(filepath.Clean(dir))
	for {
		fi, err := os.Stat(parent)
		if err == nil && !fi.IsDir() {
			return fmt.Errorf("cannot create %s: %s is not a directory", dir, parent)
		}
		if err == nil {
			if err := syscall.Access(parent, 0x2|0x1); err != nil { // W_OK|X_OK
				return fmt.Errorf("cannot create %s in %s: %w", dir, parent, err)
			}
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cannot create %s: %w", dir, unwrapPath(err))
		}
		up := filepath.Dir(parent)
		if up == parent {
			return fmt.Errorf("cannot create %s: %w", dir, err)
		}
		parent = up
	}
}

// unwrapPath is err without its *fs.PathError, whose path the message
// names already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// FileName returns the name of key's checkpoint file in a store: the key
// with every byte but ASCII letters, digits, '-' and '_' replaced by '_',
// cut to 64 bytes, then '-' and 24 hex digits of the key's SHA-256, then
// Ext. It is a safe file name for any key ('/', "..", spaces, control
// characters, invalid UTF-8), readable for the usual ones, and distinct
// for distinct keys but with probability 2⁻⁹⁶; the key is stored in the
// file too, and checked on Load.
func FileName(key string) string {
	sum := sha256.Sum256([]byte(key))
	var b strings.Builder
	for i := 0; i < len(key) && i < 64; i++ {
		c := key[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	b.WriteByte('-')
	b.WriteString(hex.EncodeToString(sum[:12]))
	b.WriteString(Ext)
	return b.String()
}

// Path returns the path of key's checkpoint file.
func (s *Store) Path(key string) string { return filepath.Join(s.dir, FileName(key)) }

// Save writes st as key's checkpoint, atomically: to a temporary file in
// the store's directory, synced, then renamed over the previous checkpoint,
// and the directory synced, so that after a crash at any point the file is
// either the previous checkpoint or the new one, whole. st.Key must be key
// (or empty: it is then set). Save costs Encode plus the writes and two
// fsyncs. The error names the file and the series.
func (s *Store) Save(key string, st pipeline.SeriesState) error {
	if st.Key == "" {
		st.Key = key
	}
	if st.Key != key {
		return fmt.Errorf("statestore: save series %q: the state is series %q's", key, st.Key)
	}
	return s.SaveEncoded(key, Encode(st))
}

// SaveEncoded is Save for a state already encoded by Encode, so that the
// encoding may run on another goroutine than the write.
func (s *Store) SaveEncoded(key string, data []byte) error {
	path := s.Path(key)
	if err := atomicfile.WriteFile(path, data); err != nil {
		return fmt.Errorf("statestore: save series %q to %s: %w", key, path, err)
	}
	return nil
}

// Load reads key's checkpoint. If there is none, the error wraps
// fs.ErrNotExist. Its errors name the file and the series, and wrap the
// format's errors (ErrChecksum, ErrVersion, …).
func (s *Store) Load(key string) (pipeline.SeriesState, error) {
	path := s.Path(key)
	st, err := readFile(path)
	if err != nil {
		return st, fmt.Errorf("statestore: series %q: %w", key, err)
	}
	if st.Key != key {
		return pipeline.SeriesState{}, fmt.Errorf("statestore: series %q: %s holds series %q", key, path, st.Key)
	}
	return st, nil
}

// MaxFileSize is the largest checkpoint file read: a state within the
// daemon's ceilings (docs/operations.md "Limits": an AOSVR window of 2000 keeps R, at
// most 2001² floats, 32 MB) is far smaller; a larger file is refused
// (ErrTooLarge) before any of it is read.
const MaxFileSize = 256 << 20

// ErrTooLarge: a file is larger than MaxFileSize.
var ErrTooLarge = errors.New("statestore: file too large")

// ErrNotRegular: a file in the store's place is not a regular file (a
// symbolic link, which is not followed, a FIFO, a device, a directory).
var ErrNotRegular = errors.New("statestore: not a regular file")

// readFile reads and decodes one checkpoint file; its errors name it. The
// file's size and header (magic, version, flags, payload length against
// the size) are checked before the file is read whole, so that a stray
// large file costs one stat and one 20-byte read, not its size in memory.
func readFile(path string) (pipeline.SeriesState, error) {
	data, err := readChecked(path)
	if err != nil {
		return pipeline.SeriesState{}, err
	}
	st, err := Decode(data)
	if err != nil {
		return pipeline.SeriesState{}, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// readChecked reads path whole once its size and header are those of a
// checkpoint file of at most MaxFileSize bytes.
func readChecked(path string) ([]byte, error) {
	f, fi, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := fi.Size()
	if size > MaxFileSize {
		return nil, fmt.Errorf("%s: %w: %d bytes, more than %d", path, ErrTooLarge, size, MaxFileSize)
	}
	// The header and the start of the payload, which names the series
	// in the errors of a damaged file.
	h := make([]byte, min(size, headerSize+1024))
	n, err := io.ReadFull(f, h)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrTruncated, err) // shrank while read
	}
	if n < len(magic) || string(h[:len(magic)]) != magic {
		return nil, fmt.Errorf("%s: %w (%d bytes, starting %q)", path, ErrNotState, size, h[:min(n, len(magic))])
	}
	if n < headerSize+crcSize {
		return nil, fmt.Errorf("%s: %w: %d bytes, shorter than the header", path, ErrTruncated, size)
	}
	if v, fl := binary.BigEndian.Uint16(h[8:]), binary.BigEndian.Uint16(h[10:]); v != Version || fl != 0 {
		return nil, fmt.Errorf("%s: %s%w: version %d, flags %#x; this forecastd reads version %d", path, unverifiedKey(h), ErrVersion, v, fl, Version)
	}
	if plen, have := binary.BigEndian.Uint64(h[12:]), uint64(size-headerSize-crcSize); plen != have {
		what := ErrTruncated
		if plen < have {
			what = ErrMalformed
		}
		return nil, fmt.Errorf("%s: %s%w: header says %d payload bytes, the file's size %d leaves %d", path, unverifiedKey(h), what, plen, size, have)
	}
	data := make([]byte, size)
	copy(data, h)
	if _, err := io.ReadFull(f, data[n:]); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrTruncated, err) // shrank while read
	}
	return data, nil
}

// openRegular opens path for reading if it is a regular file: without
// following a symbolic link (O_NOFOLLOW) nor blocking (O_NONBLOCK: a FIFO
// with no writer would block the open for good), then checked with fstat.
// Anything else is ErrNotRegular; the errors name the path.
func openRegular(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, nil, fmt.Errorf("%s: %w: a symbolic link, not followed", path, ErrNotRegular)
	}
	if err != nil {
		return nil, nil, err // names the path
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: %w: %s", path, ErrNotRegular, fi.Mode().Type())
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// LoadAll reads every checkpoint in the store. It returns the states it
// could read, and one error per file it could not (each naming the file
// and, when it can be read, the series): a bad file does not stop the
// others. A file whose name is not FileName of the key it holds is an
// error too (a file copied under another name). Temporary files left by a
// crash during Save are removed; LoadAll must therefore not run while a
// Save is in progress. Other files are ignored. The order of the states is
// that of the file names.
func (s *Store) LoadAll() ([]pipeline.SeriesState, []error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, []error{fmt.Errorf("statestore: %w", err)}
	}
	var (
		states []pipeline.SeriesState
		errs   []error
	)
	for _, e := range ents {
		name := e.Name()
		path := filepath.Join(s.dir, name)
		switch {
		case strings.HasPrefix(name, ".") && strings.Contains(name, tmpInfix):
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("statestore: remove stale temporary file: %w", err))
			}
			continue
		case !strings.HasSuffix(name, Ext):
			continue
		case !e.Type().IsRegular():
			errs = append(errs, fmt.Errorf("statestore: %s: %w (%s); skipped", path, ErrNotRegular, e.Type()))
			continue
		}
		st, err := readFile(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("statestore: %w", err))
			continue
		}
		if want := FileName(st.Key); want != name {
			errs = append(errs, fmt.Errorf("statestore: %s holds series %q, whose file is %s", path, st.Key, want))
			continue
		}
		states = append(states, st)
	}
	return states, errs
}

// Delete removes key's checkpoint (for an evicted series); a checkpoint
// that does not exist is not an error.
func (s *Store) Delete(key string) error {
	path := s.Path(key)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("statestore: delete series %q: %w", key, err)
	}
	if err := atomicfile.SyncDir(s.dir); err != nil {
		return fmt.Errorf("statestore: delete series %q: %w", key, err)
	}
	return nil
}
