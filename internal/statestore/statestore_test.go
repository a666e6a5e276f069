package statestore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/lab/dataset"
	"github.com/forecastd/forecastd/pipeline"
)

// configs returns a configuration of each kind, with the default target
// (change, combined, seasonal lags of a minute and a day so that one of
// them is in reach at one point a second) and, suffixed "_paper", with the
// AOSVR paper's setup (level, warm-up scale).
func configs() map[string]pipeline.Config {
	out := map[string]pipeline.Config{}
	for suffix, a := range map[string]pipeline.Config{"": pipeline.DefaultConfig(), "_paper": pipeline.PaperConfig()} {
		if a.Target == pipeline.TargetChange {
			a.Seasons = []time.Duration{time.Minute, 24 * time.Hour}
		}
		a0 := a
		a0.Window = 0
		// The bounds the two kinds had when the version-1 fixtures were
		// written: SOG-SVR's dictionary svr's default (0), NORMA τ = 1000
		// and no merging.
		sog := a
		sog.Kind, sog.SOG.MaxDict = pipeline.SOGSVR, 0
		norma := a
		norma.Kind, norma.NORMA.Tau, norma.NORMA.Merge = pipeline.NORMA, 1000, 0
		out["aosvr_W200"+suffix], out["aosvr_W0"+suffix], out["sogsvr"+suffix], out["norma"+suffix] = a, a0, sog, norma
		if a.Target == pipeline.TargetChange { // the steps' state of a 6-step horizon
			h := a
			h.Horizon = 6
			out["aosvr_W200_h6"+suffix] = h
			st := h // and a step: the open bucket's state
			st.Step, st.Aggregate = 10*time.Second, pipeline.AggRate
			out["aosvr_W200_h6_step10s"+suffix] = st
		}
	}
	return out
}

// series returns a series of cfg that has taken n points of the Santa Fe
// laser series, one a second.
func series(t testing.TB, key string, cfg pipeline.Config, n int) *pipeline.Series {
	t.Helper()
	s, err := pipeline.New(key, cfg)
	if err != nil {
		t.Fatal(err)
	}
	v := dataset.MustLoad("santafe_laser_a").Values
	t0 := time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)
	for i := range n {
		if _, err := s.Push(pipeline.Point{Time: t0.Add(time.Duration(i) * time.Second), Value: v[i%len(v)]}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func export(t testing.TB, s *pipeline.Series) pipeline.SeriesState {
	t.Helper()
	st, err := s.Export()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// reframe rewrites data's payload length and checksum after a change.
func reframe(data []byte) []byte {
	body := data[:len(data)-crcSize]
	binary.BigEndian.PutUint64(body[12:], uint64(len(body)-headerSize))
	return binary.BigEndian.AppendUint32(body[:len(body):len(body)], crc32.Checksum(body, castagnoli))
}

// TestEncodeDecodeRoundTrip: every field of a state comes back bit for bit
// (NaN intervals included), for every kind, in warm-up and warm.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	for name, cfg := range configs() {
		for _, n := range []int{0, 1, 50, 99, 100, 400} {
			t.Run(fmt.Sprintf("%s/%d", name, n), func(t *testing.T) {
				st := export(t, series(t, "cpu/host=a b", cfg, n))
				st.Seq = math.MaxUint64
				got, err := Decode(Encode(st))
				if err != nil {
					t.Fatal(err)
				}
				if normal(got) != normal(st) {
					t.Fatalf("round trip changed the state:\n got %.2000s\nwant %.2000s", normal(got), normal(st))
				}
				if !bytes.Equal(Encode(got), Encode(st)) {
					t.Fatal("re-encoding differs")
				}
			})
		}
	}
}

// normal makes a state comparable: printed with %+v (floats in their
// shortest exact form, NaN equal to itself, nil and empty slices alike),
// times in UTC, the models by value.
func normal(st pipeline.SeriesState) string {
	st.LastTime = st.LastTime.UTC()
	st.Pend.Time, st.Pend.Origin = st.Pend.Time.UTC(), st.Pend.Origin.UTC()
	for i := range st.Warmup {
		st.Warmup[i].Time = st.Warmup[i].Time.UTC()
	}
	var kind string
	var m any
	if st.Model != nil {
		kind, m = st.Model.Kind, st.Model.State
	}
	chg, comb, guard := st.Changes, st.Combine, st.Guard
	st.Model, st.Changes, st.Combine, st.Guard = nil, nil, nil, nil
	hz := ""
	if b := st.Bucket; b != nil {
		st.Bucket = nil
		hz += fmt.Sprintf("bucket %+v ", *b)
	}
	if h := st.Horizon; h != nil {
		st.Horizon = nil
		for _, ar := range h.ARs {
			if ar != nil {
				hz += fmt.Sprintf("%+v ", *ar)
			}
		}
		if h.Profile != nil {
			hz += fmt.Sprintf("%+v ", *h.Profile)
		}
		h.ARs, h.Profile = nil, nil
		hz += fmt.Sprintf("%+v ", *h)
	}
	return fmt.Sprintf("%+v %s %+v %+v %+v %+v %s", st, kind, m, chg, comb, guard, hz)
}

// TestDecodeRejectsDamage: a wrong magic, a truncation at any length, a
// flipped bit anywhere, a version or flags this reader does not know, and
// trailing bytes are each refused with their own error, naming the series
// where the key can be read; never a panic.
func TestDecodeRejectsDamage(t *testing.T) {
	st := export(t, series(t, "disk/sda", configs()["aosvr_W200"], 300))
	good := Encode(st)
	t.Logf("aosvr W=200 state: %d bytes", len(good))
	for _, tc := range []struct {
		name string
		data []byte
		want error
		key  bool // the error names the series
	}{
		{"empty", nil, ErrNotState, false},
		{"magic", append([]byte("FCDSTATF"), good[8:]...), ErrNotState, false},
		{"json", []byte(`{"key": "disk/sda"}`), ErrNotState, false},
		{"header_only", good[:headerSize], ErrTruncated, false},
		{"half", good[:len(good)/2], ErrTruncated, true},
		{"no_crc", good[:len(good)-1], ErrTruncated, true},
		{"trailing", append(bytes.Clone(good), 0), ErrMalformed, true},
		{"crc", append(bytes.Clone(good[:len(good)-1]), good[len(good)-1]^1), ErrChecksum, true},
		{"version", func() []byte {
			d := bytes.Clone(good)
			binary.BigEndian.PutUint16(d[8:], 2)
			return reframe(d)
		}(), ErrVersion, true},
		{"flags", func() []byte {
			d := bytes.Clone(good)
			d[11] = 1
			return reframe(d)
		}(), ErrVersion, true},
		{"unknown_critical_section", reframe(append(bytes.Clone(good[:len(good)-crcSize]), 17, 1, 0, 0, 0, 0)), ErrMalformed, true},
		{"section_twice", func() []byte {
			d := bytes.Clone(good[:len(good)-crcSize])
			// The intervals section again: tag 9, then a copy of it.
			var e enc
			section(&e, secIntervals, func(e *enc) { e.Floats(st.Residuals); e.Float(st.Alpha) })
			return reframe(append(append(d, e.B...), 0, 0, 0, 0))
		}(), ErrMalformed, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.data)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if named := strings.Contains(err.Error(), `"disk/sda"`); named != tc.key {
				t.Errorf("error %q names the series: %v, want %v", err, named, tc.key)
			}
		})
	}

	// Every truncation and every single-bit flip is refused.
	for n := range len(good) {
		if _, err := Decode(good[:n]); err == nil {
			t.Fatalf("truncated to %d bytes: no error", n)
		}
	}
	for i := range len(good) {
		d := bytes.Clone(good)
		d[i] ^= 1 << (i % 8)
		if _, err := Decode(d); err == nil {
			t.Fatalf("bit %d of byte %d flipped: no error", i%8, i)
		}
	}
}

// TestDecodeSkipsAncillarySection: an unknown section with an even tag, as
// a later version might add, is skipped.
func TestDecodeSkipsAncillarySection(t *testing.T) {
	st := export(t, series(t, "k", configs()["norma"], 200))
	good := Encode(st)
	d := append(bytes.Clone(good[:len(good)-crcSize]), 40, 3, 'a', 'b', 'c', 0, 0, 0, 0)
	got, err := Decode(reframe(d))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(Encode(got), good) {
		t.Error("the state read past an ancillary section differs")
	}
}

// TestAnomalySurprisedSection: the detector's recent surprises survive a
// round trip in their own section, written only when there are any; a
// file without it (an earlier version's) reads as none.
func TestAnomalySurprisedSection(t *testing.T) {
	st := export(t, series(t, "k", configs()["norma"], 200))
	st.Anomaly.Recent, st.Anomaly.Surprised = 0b11, 0b10
	got, err := Decode(Encode(st))
	if err != nil {
		t.Fatal(err)
	}
	if got.Anomaly.Recent != 0b11 || got.Anomaly.Surprised != 0b10 {
		t.Errorf("recent %b surprised %b, want 11 and 10", got.Anomaly.Recent, got.Anomaly.Surprised)
	}
	with := len(Encode(st))
	st.Anomaly.Surprised = 0
	without := Encode(st)
	if len(without) >= with {
		t.Errorf("%d bytes without surprises, %d with: the section is written when empty", len(without), with)
	}
	got, err = Decode(without)
	if err != nil || got.Anomaly.Surprised != 0 || got.Anomaly.Recent != 0b11 {
		t.Errorf("without the section: %+v, %v", got.Anomaly, err)
	}
}

// TestGoldenHeader pins the fixed part of the format, byte for byte.
func TestGoldenHeader(t *testing.T) {
	st := export(t, series(t, "k", configs()["norma"], 0))
	st.Seq = 300
	data := Encode(st)
	want := []byte{
		'F', 'C', 'D', 'S', 'T', 'A', 'T', 'E', // magic
		0, 1, // version
		0, 0, // flags
	}
	if !bytes.Equal(data[:12], want) {
		t.Fatalf("header % x, want % x", data[:12], want)
	}
	if n := binary.BigEndian.Uint64(data[12:20]); n != uint64(len(data)-24) {
		t.Errorf("payload length %d in a file of %d bytes", n, len(data))
	}
	// Key "k", then the sequence 300 as a uvarint (ac 02), then section 1.
	if p := data[20:25]; !bytes.Equal(p, []byte{1, 'k', 0xac, 0x02, secConfig}) {
		t.Errorf("payload starts % x", p)
	}
	if c := binary.BigEndian.Uint32(data[len(data)-4:]); c != crc32.Checksum(data[:len(data)-4], crc32.MakeTable(crc32.Castagnoli)) {
		t.Errorf("trailer %08x is not the CRC-32C of the rest", c)
	}
}

// FuzzDecodeState: Decode never panics or allocates without bound, on raw
// data and on payloads given a valid frame (so that the fuzzer gets past
// the checksum); a state it accepts re-encodes to the same bytes, and
// Restore refuses or takes it without panicking.
func FuzzDecodeState(f *testing.F) {
	for name, cfg := range configs() {
		for _, n := range []int{0, 60, 130} {
			data := Encode(export(f, series(f, name, cfg, n)))
			f.Add(data)
			f.Add(data[headerSize : len(data)-crcSize])
		}
	}
	f.Add([]byte("FCDSTATE"))
	cfgs := configs()
	f.Fuzz(func(t *testing.T, data []byte) {
		framed := make([]byte, headerSize, headerSize+len(data)+crcSize)
		copy(framed, magic)
		binary.BigEndian.PutUint16(framed[8:], Version)
		framed = reframe(append(append(framed, data...), 0, 0, 0, 0))
		for _, d := range [][]byte{data, framed} {
			st, err := Decode(d)
			if err != nil {
				continue
			}
			// Non-canonical varints or skipped sections decode, and
			// re-encode shorter: what was decoded must survive.
			st2, err := Decode(Encode(st))
			if err != nil || normal(st2) != normal(st) {
				t.Fatalf("decoded state does not survive re-encoding: %v", err)
			}
			for _, cfg := range cfgs {
				if s, err := pipeline.Restore(st.Key, cfg, st); err == nil {
					// A restored series must take points.
					s.Push(pipeline.Point{Time: st.LastTime.Add(time.Second), Value: 1})
				}
			}
		}
	})
}

// TestHostileKeys: keys with '/', "..", spaces, NUL, newlines, invalid
// UTF-8, very long keys and keys differing only in what the file name
// escapes each get their own file inside the directory, and come back.
func TestHostileKeys(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{
		"", ".", "..", "../../etc/passwd", "/abs/path", "a/b", "a_b", "a b", "a\x00b", "a\nb",
		"\xff\xfe", "ünïcødé/温度", strings.Repeat("x", 5000), strings.Repeat("x", 4999) + "y",
		"CON", "con", ".fcstate", "k" + Ext + ".tmp-1", "cpu,host=a usage_idle", "*", "?",
	}
	st := export(t, series(t, "x", configs()["norma"], 120))
	names := map[string]string{}
	for _, k := range keys {
		name := FileName(k)
		if prev, dup := names[name]; dup {
			t.Fatalf("keys %q and %q share file %s", prev, k, name)
		}
		names[name] = k
		if strings.ContainsAny(name, "/\\\x00") || strings.HasPrefix(name, ".") || len(name) > 200 {
			t.Fatalf("key %q: unsafe file name %q", k, name)
		}
		st.Key = ""
		st.Seq = uint64(len(k))
		if err := s.Save(k, st); err != nil {
			t.Fatal(err)
		}
	}
	ents, _ := os.ReadDir(s.Dir())
	if len(ents) != len(keys) {
		t.Fatalf("%d files for %d keys", len(ents), len(keys))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("files outside the store's directory: %v", ents)
	}
	for _, k := range keys {
		got, err := s.Load(k)
		if err != nil {
			t.Fatal(err)
		}
		if got.Key != k || got.Seq != uint64(len(k)) {
			t.Errorf("key %q: loaded %q, seq %d", k, got.Key, got.Seq)
		}
	}
	all, errs := s.LoadAll()
	if len(errs) != 0 || len(all) != len(keys) {
		t.Fatalf("LoadAll: %d states, errors %v", len(all), errs)
	}
}

// TestStoreSaveLoadDelete: Save replaces, Load reads back, Delete removes
// (and a missing checkpoint is fs.ErrNotExist), and a state of another
// series is refused.
func TestStoreSaveLoadDelete(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("nope"); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("Load of a missing checkpoint: %v", err)
	}
	st := export(t, series(t, "a", configs()["sogsvr"], 200))
	for seq := range uint64(3) {
		st.Seq = seq
		if err := s.Save("a", st); err != nil {
			t.Fatal(err)
		}
		got, err := s.Load("a")
		if err != nil || got.Seq != seq {
			t.Fatalf("Load after save %d: seq %d, %v", seq, got.Seq, err)
		}
	}
	if err := s.Save("b", st); err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("saving series a's state as b: %v", err)
	}
	if err := s.Delete("a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("a"); err != nil {
		t.Fatalf("deleting twice: %v", err)
	}
	if _, err := s.Load("a"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load after Delete: %v", err)
	}
	if ents, _ := os.ReadDir(s.Dir()); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}

// TestCrashBeforeRename: a crash after the temporary file was written but
// before the rename (simulated by leaving such a file, half written) leaves
// the previous checkpoint in force; LoadAll ignores and removes the
// temporary file.
func TestCrashBeforeRename(t *testing.T) {
	s, _ := Open(t.TempDir())
	st := export(t, series(t, "m", configs()["aosvr_W200"], 300))
	st.Seq = 1
	if err := s.Save("m", st); err != nil {
		t.Fatal(err)
	}
	st.Seq = 2
	newer := Encode(st)
	tmp := filepath.Join(s.Dir(), "."+FileName("m")+".tmp-123456")
	if err := os.WriteFile(tmp, newer[:len(newer)/3], 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load("m")
	if err != nil || got.Seq != 1 {
		t.Fatalf("Load: seq %d, %v; want the previous checkpoint", got.Seq, err)
	}
	all, errs := s.LoadAll()
	if len(errs) != 0 || len(all) != 1 || all[0].Seq != 1 {
		t.Fatalf("LoadAll: %d states, %v", len(all), errs)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the temporary file is still there: %v", err)
	}
	// The next Save goes through as usual.
	if err := s.Save("m", st); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Load("m"); got.Seq != 2 {
		t.Errorf("seq %d after the next save", got.Seq)
	}
}

// TestLoadAllSurvivesBadFiles: among many series, truncated, corrupted,
// foreign, future-version and misnamed files each give one error naming
// the file (and the series when it can be read), and every good state
// still loads and restores.
func TestLoadAllSurvivesBadFiles(t *testing.T) {
	s, _ := Open(t.TempDir())
	const n = 300
	cfgs := configs()
	kinds := []string{"aosvr_W200", "aosvr_W0", "sogsvr", "norma"}
	base := map[string]pipeline.SeriesState{}
	for _, k := range kinds {
		base[k] = export(t, series(t, "x", cfgs[k], 150))
	}
	for i := range n {
		st := base[kinds[i%4]]
		st.Key = fmt.Sprintf("host-%d/%s", i, kinds[i%4])
		st.Seq = uint64(i)
		if err := s.Save(st.Key, st); err != nil {
			t.Fatal(err)
		}
	}
	damage := map[string]func([]byte) []byte{
		"host-1/aosvr_W0":   func(d []byte) []byte { return d[:len(d)-10] },
		"host-2/sogsvr":     func(d []byte) []byte { d[len(d)/2] ^= 0x40; return d },
		"host-3/norma":      func(d []byte) []byte { binary.BigEndian.PutUint16(d[8:], 9); return reframe(d) },
		"host-4/aosvr_W200": func([]byte) []byte { return []byte("not a state file") },
		"host-5/aosvr_W0":   func([]byte) []byte { return nil },
	}
	for key, f := range damage {
		p := s.Path(key)
		d, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f(d), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A good file copied under another series' name.
	d, _ := os.ReadFile(s.Path("host-6/sogsvr"))
	os.WriteFile(filepath.Join(s.Dir(), FileName("elsewhere")), d, 0o600)
	os.WriteFile(filepath.Join(s.Dir(), "README"), []byte("ignored"), 0o600)

	all, errs := s.LoadAll()
	if len(all) != n-len(damage) || len(errs) != len(damage)+1 {
		t.Fatalf("%d states and %d errors, want %d and %d: %v", len(all), len(errs), n-len(damage), len(damage)+1, errs)
	}
	msgs := fmt.Sprint(errs)
	for key := range damage {
		if !strings.Contains(msgs, s.Path(key)) {
			t.Errorf("no error names %s (series %q)", s.Path(key), key)
		}
	}
	for _, w := range []string{`"host-1/aosvr_W0"`, `"host-2/sogsvr" (unverified)`, `"host-3/norma"`, `holds series "host-6/sogsvr"`} {
		if !strings.Contains(msgs, w) {
			t.Errorf("errors do not name %s: %s", w, msgs)
		}
	}
	for _, st := range all {
		kind := st.Key[strings.IndexByte(st.Key, '/')+1:]
		if _, err := pipeline.Restore(st.Key, cfgs[kind], st); err != nil {
			t.Fatal(err)
		}
	}
}
