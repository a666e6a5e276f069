// Package statestore writes forecastd's per-series checkpoints
// (pipeline.SeriesState) to a directory and reads them back: one file per
// series, replaced atomically, in a versioned binary format with a
// checksum, so that a corrupt, truncated or foreign file is refused with an
// error naming it and its series, never a panic or a wrong model.
//
// # File format, version 1
//
// All integers in the fixed header and trailer are big-endian:
//
//	offset  size  field
//	0       8     magic "FCDSTATE" (46 43 44 53 54 41 54 45)
//	8       2     format version (00 01)
//	10      2     flags, 0 (a reader refuses any other value)
//	12      8     payload length L
//	20      L     payload
//	20+L    4     CRC-32C (Castagnoli) of bytes [0, 20+L)
//
// The header, the trailer and the payload's first field, the series key
// (uvarint length, then its bytes), are the same in every version, so that
// any error can name the file's series. Then come the
// caller's stream sequence (uvarint), then sections, each a tag (uvarint),
// a body length (uvarint) and the body. A reader must understand every
// section whose tag is odd ("critical") and skips an unknown even tag, so
// that an optional addition needs no new version; any other incompatible
// change takes a new version number, and a reader refuses a version it does
// not know. Version 1 has these critical sections, each required once:
//
//	1 config    count, then key and value strings (pipeline.ConfigFields)
//	3 series    flags, samples learned, last time, spacings, pending forecast
//	5 stats     pipeline.Stats
//	7 embedding delay ring, scaler state, warm-up points
//	9 intervals residuals, oldest first, and the level α
//	11 aosvr    svr.AOSVRState, and the window's handles oldest first
//	13 sogsvr   svr.SOGSVRState
//	15 norma    svr.NORMAState
//
// (exactly one of 11, 13 and 15), and one optional section:
//
//	12 aosvr-incremental  after 11: the margins h, R, the operations since
//	                      the last refresh and whether one is due
//	                      (svr.AOSVRState.H, R, Ops, RefreshPending), so
//	                      that a restored AOSVR goes on bit for bit; a
//	                      reader that skips it restores to rounding.
//
// Inside a body: unsigned integers are uvarints, signed ones zig-zag
// varints, floats 8 bytes little-endian IEEE 754 (so every value, NaN
// included, comes back bit for bit), booleans
// one byte 0 or 1, strings and slices a uvarint count then the elements;
// a matrix of rows is its row count and row length, then the values. A time
// is its Unix seconds (varint) and nanoseconds (uvarint), read back in UTC.
// Every count is checked against the bytes left before anything is
// allocated, so a hostile file cannot make the reader allocate more than
// a small multiple of its size.
//
// Why this and not gob or JSON: the checksum, not the encoding, is what
// detects corruption, and CRC-32C detects every burst error of up to 32
// bits and any other with probability 1 − 2⁻³² at memory speed (SHA-256
// would only add resistance to a forger, who could as well write a valid
// file); JSON cannot carry the NaN of a forecast with no interval, is two to
// three times larger and slower to parse; gob describes its own types, and
// follows renamed Go fields poorly, and its decoder is documented as not
// hardened against hostile input (its allocations are bounded only at
// 1 GiB). Sections give the forward compatibility gob would, explicitly.
package statestore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"time"

	"github.com/forecastd/forecastd/embedding"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/svr"
)

// Version is the format version Encode writes and the only one Decode reads.
const Version = 1

const (
	magic      = "FCDSTATE"
	headerSize = 20
	crcSize    = 4
)

var (
	// ErrNotState: the data does not start with the format's magic.
	ErrNotState = errors.New("statestore: not a forecastd state file")
	// ErrTruncated: the data is shorter than its header says.
	ErrTruncated = errors.New("statestore: truncated")
	// ErrChecksum: the data does not match its checksum (corrupted).
	ErrChecksum = errors.New("statestore: checksum mismatch")
	// ErrVersion: the format version (or flags) is not one this forecastd
	// reads.
	ErrVersion = errors.New("statestore: unsupported format version")
	// ErrMalformed: the checksum holds but the payload does not parse (a
	// file written by another program, or a bug).
	ErrMalformed = errors.New("statestore: malformed payload")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Section tags of version 1; odd tags are critical.
const (
	secConfig    = 1
	secSeries    = 3
	secStats     = 5
	secEmbedding = 7
	secIntervals = 9
	secAOSVR     = 11
	secAOSVRInc  = 12
	secSOG       = 13
	secNORMA     = 15
)

var sectionNames = map[uint64]string{
	secConfig: "config", secSeries: "series", secStats: "stats", secEmbedding: "embedding",
	secIntervals: "intervals", secAOSVR: "aosvr", secSOG: "sogsvr", secNORMA: "norma",
	secAOSVRInc: "aosvr-incremental",
}

// Encode returns st in the file format (see the package documentation).
// It costs O(size of the state) and allocates the result, once when the
// size estimate holds.
func Encode(st pipeline.SeriesState) []byte {
	var e enc
	e.b = make([]byte, headerSize, headerSize+estimate(&st)+crcSize)
	copy(e.b, magic)
	binary.BigEndian.PutUint16(e.b[8:], Version)
	binary.BigEndian.PutUint16(e.b[10:], 0)
	e.str(st.Key)
	e.uint(st.Seq)

	e.section(secConfig, func(e *enc) {
		e.uint(uint64(len(st.Config)))
		for _, f := range st.Config {
			e.str(f.Key)
			e.str(f.Value)
		}
	})
	e.section(secSeries, func(e *enc) {
		e.bools(st.Learning, st.RestartNext, st.HavePoint, st.Pending)
		e.uint(st.Learned)
		e.time(st.LastTime)
		e.int(int64(st.NSpacing))
		for _, d := range st.Spacings {
			e.int(int64(d))
		}
		e.forecast(st.Pend)
		e.float(st.PendH)
	})
	e.section(secStats, func(e *enc) {
		s := st.Stats
		for _, v := range []uint64{s.Points, s.OutOfOrder, s.NonFinite, s.Restarts, s.Updates, s.LearnErrors, s.Forecasts, s.PredictErrors} {
			e.uint(v)
		}
		e.int(s.UpdateNanos)
		e.int(s.PredictNanos)
		e.int(int64(s.MaxModelSize))
	})
	e.section(secEmbedding, func(e *enc) {
		d := st.Delay
		e.int(int64(d.B))
		e.int(int64(d.Tau))
		e.int(int64(d.Count))
		e.floats(d.Values)
		sc := st.Scaler
		e.int(int64(sc.Spec.Mode))
		e.float(sc.Spec.Min)
		e.float(sc.Spec.Max)
		e.int(int64(sc.Spec.N))
		e.int(int64(sc.Seen))
		e.float(sc.Min)
		e.float(sc.Max)
		e.uint(uint64(len(st.Warmup)))
		for _, p := range st.Warmup {
			e.time(p.Time)
			e.float(p.Value)
			e.bools(p.Restart)
		}
	})
	e.section(secIntervals, func(e *enc) {
		e.floats(st.Residuals)
		e.float(st.Alpha)
	})
	if a := st.AOSVR; a != nil {
		e.section(secAOSVR, func(e *enc) {
			e.int(int64(a.Dim))
			e.rows(a.X, a.Dim)
			e.floats(a.Y)
			e.floats(a.Theta)
			e.uints(a.IDs)
			e.uint(uint64(len(a.Margin)))
			for _, i := range a.Margin {
				e.int(int64(i))
			}
			e.float(a.Bias)
			e.uint(a.Next)
			e.uints(st.Window)
		})
		if len(a.H) > 0 {
			e.section(secAOSVRInc, func(e *enc) {
				e.floats(a.H)
				e.floats(a.R)
				e.int(int64(a.Ops))
				e.bools(a.RefreshPending)
			})
		}
	}
	if s := st.SOG; s != nil {
		e.section(secSOG, func(e *enc) {
			e.int(int64(s.Dim))
			e.rows(s.Atoms, s.Dim)
			for _, v := range [][]float64{s.K, s.KInv, s.AtA, s.AtY, s.AtE, s.AStar, s.Alpha} {
				e.floats(v)
			}
			e.float(s.Weight)
			e.int(s.Learned)
			e.int(s.Evicted)
		})
	}
	if n := st.NORMA; n != nil {
		e.section(secNORMA, func(e *enc) {
			e.int(n.Steps)
			e.float(n.Offset)
			e.float(n.Width)
			e.float(n.Scale)
			dim := 0
			if len(n.X) > 0 {
				dim = len(n.X[0])
			}
			e.rows(n.X, dim)
			e.floats(n.Coef)
			e.uint(uint64(len(n.Born)))
			for _, b := range n.Born {
				e.int(b)
			}
		})
	}
	binary.BigEndian.PutUint64(e.b[12:], uint64(len(e.b)-headerSize))
	return binary.BigEndian.AppendUint32(e.b, crc32.Checksum(e.b, castagnoli))
}

// estimate returns roughly the payload size of st, to size the buffer.
func estimate(st *pipeline.SeriesState) int {
	n := 512 + len(st.Key) + 64*len(st.Config) + 9*(len(st.Residuals)+len(st.Delay.Values)) + 24*len(st.Warmup)
	if a := st.AOSVR; a != nil {
		n += len(a.X)*(8*a.Dim+32) + 10*len(st.Window) + 8*(len(a.H)+len(a.R)) + 32
	}
	if s := st.SOG; s != nil {
		n += 8 * (3*len(s.K) + len(s.Atoms)*(s.Dim+4))
	}
	if m := st.NORMA; m != nil {
		n += len(m.Coef) * 24
		if len(m.X) > 0 {
			n += len(m.Coef) * 8 * len(m.X[0])
		}
	}
	return n
}

// enc appends to b.
type enc struct{ b []byte }

func (e *enc) uint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) int(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) float(v float64) {
	e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(v))
}

func (e *enc) str(s string) {
	e.uint(uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *enc) bools(bs ...bool) {
	for _, b := range bs {
		v := byte(0)
		if b {
			v = 1
		}
		e.b = append(e.b, v)
	}
}

func (e *enc) floats(v []float64) {
	e.uint(uint64(len(v)))
	for _, x := range v {
		e.float(x)
	}
}

func (e *enc) uints(v []uint64) {
	e.uint(uint64(len(v)))
	for _, x := range v {
		e.uint(x)
	}
}

// rows writes a matrix whose rows all have length dim. A row of another
// length is a programmer error (no Export makes one) and panics.
func (e *enc) rows(v [][]float64, dim int) {
	e.uint(uint64(len(v)))
	e.uint(uint64(dim))
	for i, r := range v {
		if len(r) != dim {
			panic(fmt.Sprintf("statestore: encode: row %d has length %d, want %d", i, len(r), dim))
		}
		for _, x := range r {
			e.float(x)
		}
	}
}

func (e *enc) time(t time.Time) {
	e.int(t.Unix())
	e.uint(uint64(t.Nanosecond()))
}

func (e *enc) forecast(f pipeline.Forecast) {
	e.time(f.Origin)
	e.time(f.Time)
	for _, v := range []float64{f.Value, f.Lower, f.Upper, f.Scaled} {
		e.float(v)
	}
}

// section appends tag, the length of the body that body writes, and the
// body: written in place, then moved up by the size of its header.
func (e *enc) section(tag uint64, body func(*enc)) {
	start := len(e.b)
	body(e)
	var hdr [2 * binary.MaxVarintLen64]byte
	h := binary.PutUvarint(hdr[:], tag)
	h += binary.PutUvarint(hdr[h:], uint64(len(e.b)-start))
	e.b = append(e.b, hdr[:h]...)
	copy(e.b[start+h:], e.b[start:len(e.b)-h])
	copy(e.b[start:], hdr[:h])
}

// Decode reads a state from data in the file format. Its errors wrap
// ErrNotState, ErrTruncated, ErrChecksum, ErrVersion or ErrMalformed, and
// name the series when its key can be read (with "unverified" when the
// checksum failed). Decode never panics, and allocates at most a small
// multiple of len(data). It checks the encoding only: whether the state
// fits a configuration is pipeline.Restore's to check.
func Decode(data []byte) (pipeline.SeriesState, error) {
	var st pipeline.SeriesState
	if len(data) < len(magic) || string(data[:len(magic)]) != magic {
		return st, fmt.Errorf("%w (%d bytes, starting %q)", ErrNotState, len(data), data[:min(len(data), len(magic))])
	}
	if len(data) < headerSize+crcSize {
		return st, fmt.Errorf("%w: %d bytes, shorter than the header", ErrTruncated, len(data))
	}
	plen := binary.BigEndian.Uint64(data[12:])
	have := uint64(len(data) - headerSize - crcSize)
	if plen != have {
		what := ErrTruncated
		if plen < have {
			what = ErrMalformed
		}
		return st, fmt.Errorf("%s%w: header says %d payload bytes, the data holds %d", unverifiedKey(data), what, plen, have)
	}
	body := data[:len(data)-crcSize]
	if got, want := crc32.Checksum(body, castagnoli), binary.BigEndian.Uint32(data[len(body):]); got != want {
		return st, fmt.Errorf("%s%w: CRC-32C is %08x, the file says %08x", unverifiedKey(data), ErrChecksum, got, want)
	}
	d := dec{b: data[headerSize:len(body)]}
	st.Key = d.str()
	if v, fl := binary.BigEndian.Uint16(data[8:]), binary.BigEndian.Uint16(data[10:]); v != Version || fl != 0 {
		return pipeline.SeriesState{}, fmt.Errorf("%s%w: version %d, flags %#x; this forecastd reads version %d", unverifiedKey(data), ErrVersion, v, fl, Version)
	}
	if d.err != nil {
		return pipeline.SeriesState{}, fmt.Errorf("%w: series key: %w", ErrMalformed, d.err)
	}
	st.Seq = d.uint()
	if err := decodeSections(&d, &st); err != nil {
		return pipeline.SeriesState{}, fmt.Errorf("series %q: %w: %w", st.Key, ErrMalformed, err)
	}
	return st, nil
}

// unverifiedKey returns "series %q (unverified): " if data's payload
// starts with a plausible key, for the errors of a damaged file.
func unverifiedKey(data []byte) string {
	end := min(len(data), headerSize+1024)
	if len(data) <= headerSize {
		return ""
	}
	d := dec{b: data[headerSize:end]}
	k := d.str()
	if d.err != nil {
		return ""
	}
	if binary.BigEndian.Uint32(data[len(data)-crcSize:]) == crc32.Checksum(data[:len(data)-crcSize], castagnoli) {
		return fmt.Sprintf("series %q: ", k)
	}
	return fmt.Sprintf("series %q (unverified): ", k)
}

func decodeSections(d *dec, st *pipeline.SeriesState) error {
	seen := map[uint64]bool{}
	for d.err == nil && len(d.b) > 0 {
		tag := d.uint()
		n := d.uint()
		if d.err != nil {
			break
		}
		if n > uint64(len(d.b)) {
			return fmt.Errorf("section %d: %d bytes, %d left: %w", tag, n, len(d.b), errShort)
		}
		s := dec{b: d.b[:n]}
		d.b = d.b[n:]
		name, known := sectionNames[tag]
		if !known {
			if tag%2 == 1 {
				return fmt.Errorf("unknown critical section %d", tag)
			}
			continue
		}
		if seen[tag] {
			return fmt.Errorf("section %s twice", name)
		}
		seen[tag] = true
		decodeSection(&s, tag, st)
		if s.err == nil && len(s.b) != 0 {
			s.err = fmt.Errorf("%d bytes left over", len(s.b))
		}
		if s.err != nil {
			return fmt.Errorf("section %s: %w", name, s.err)
		}
	}
	if d.err != nil {
		return d.err
	}
	for _, tag := range []uint64{secConfig, secSeries, secStats, secEmbedding, secIntervals} {
		if !seen[tag] {
			return fmt.Errorf("no %s section", sectionNames[tag])
		}
	}
	if k := b2i(seen[secAOSVR]) + b2i(seen[secSOG]) + b2i(seen[secNORMA]); k != 1 {
		return fmt.Errorf("%d model sections, want 1", k)
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func decodeSection(d *dec, tag uint64, st *pipeline.SeriesState) {
	switch tag {
	case secConfig:
		n := d.count(2)
		st.Config = make([]pipeline.ConfigField, 0, n)
		for range n {
			k := d.str()
			v := d.str()
			st.Config = append(st.Config, pipeline.ConfigField{Key: k, Value: v})
		}
	case secSeries:
		st.Learning, st.RestartNext, st.HavePoint, st.Pending = d.bool(), d.bool(), d.bool(), d.bool()
		st.Learned = d.uint()
		st.LastTime = d.time()
		st.NSpacing = d.intn()
		for i := range st.Spacings {
			st.Spacings[i] = time.Duration(d.int())
		}
		st.Pend = d.forecast()
		st.PendH = d.float()
	case secStats:
		s := &st.Stats
		for _, p := range []*uint64{&s.Points, &s.OutOfOrder, &s.NonFinite, &s.Restarts, &s.Updates, &s.LearnErrors, &s.Forecasts, &s.PredictErrors} {
			*p = d.uint()
		}
		s.UpdateNanos = d.int()
		s.PredictNanos = d.int()
		s.MaxModelSize = d.intn()
	case secEmbedding:
		st.Delay = embedding.DelayState{B: d.intn(), Tau: d.intn(), Count: d.intn(), Values: d.floats()}
		sc := &st.Scaler
		sc.Spec.Mode = embedding.ScaleMode(d.intn())
		sc.Spec.Min, sc.Spec.Max = d.float(), d.float()
		sc.Spec.N = d.intn()
		sc.Seen = d.intn()
		sc.Min, sc.Max = d.float(), d.float()
		n := d.count(11)
		if n > 0 {
			st.Warmup = make([]pipeline.WarmupPoint, n)
		}
		for i := range n {
			st.Warmup[i].Time = d.time()
			st.Warmup[i].Value = d.float()
			st.Warmup[i].Restart = d.bool()
		}
	case secIntervals:
		st.Residuals = d.floats()
		st.Alpha = d.float()
	case secAOSVR:
		a := &svr.AOSVRState{}
		a.Dim = d.intn()
		a.X = d.rows(a.Dim)
		a.Y = d.floats()
		a.Theta = d.floats()
		a.IDs = d.uints()
		n := d.count(1)
		a.Margin = make([]int, 0, n)
		for range n {
			a.Margin = append(a.Margin, d.intn())
		}
		a.Bias = d.float()
		a.Next = d.uint()
		st.Window = d.uints()
		st.AOSVR = a
	case secAOSVRInc:
		a := st.AOSVR
		if a == nil {
			d.fail(errors.New("comes before the aosvr section"))
			return
		}
		a.H = d.floats()
		a.R = d.floats()
		a.Ops = d.intn()
		a.RefreshPending = d.bool()
	case secSOG:
		s := &svr.SOGSVRState{}
		s.Dim = d.intn()
		s.Atoms = d.rows(s.Dim)
		for _, p := range []*[]float64{&s.K, &s.KInv, &s.AtA, &s.AtY, &s.AtE, &s.AStar, &s.Alpha} {
			*p = d.floats()
		}
		s.Weight = d.float()
		s.Learned = d.int()
		s.Evicted = d.int()
		st.SOG = s
	case secNORMA:
		m := &svr.NORMAState{}
		m.Steps = d.int()
		m.Offset, m.Width, m.Scale = d.float(), d.float(), d.float()
		m.X = d.rows(-1)
		m.Coef = d.floats()
		n := d.count(1)
		m.Born = make([]int64, 0, n)
		for range n {
			m.Born = append(m.Born, d.int())
		}
		st.NORMA = m
	}
}

var errShort = errors.New("unexpected end of data")

// dec reads from b; the first error sticks, and every read after it
// returns zero.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.b = nil
}

func (d *dec) uint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(fmt.Errorf("bad uvarint: %w", errShort))
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) int() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(fmt.Errorf("bad varint: %w", errShort))
		return 0
	}
	d.b = d.b[n:]
	return v
}

// intn reads a varint that must fit an int of 32 bits (sizes, counts,
// enumerations), so that no platform truncates it.
func (d *dec) intn() int {
	v := d.int()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail(fmt.Errorf("integer %d out of range", v))
		return 0
	}
	return int(v)
}

func (d *dec) float() float64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.fail(errShort)
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}

func (d *dec) bool() bool {
	if d.err != nil {
		return false
	}
	if len(d.b) < 1 {
		d.fail(errShort)
		return false
	}
	v := d.b[0]
	d.b = d.b[1:]
	if v > 1 {
		d.fail(fmt.Errorf("boolean byte %d", v))
	}
	return v == 1
}

// count reads an element count and checks that that many elements of at
// least minSize bytes each can be left in the data.
func (d *dec) count(minSize int) int {
	n := d.uint()
	if d.err == nil && n > uint64(len(d.b)/minSize) {
		d.fail(fmt.Errorf("%d elements of %d bytes with %d bytes left: %w", n, minSize, len(d.b), errShort))
		return 0
	}
	return int(n)
}

func (d *dec) str() string {
	n := d.count(1)
	if d.err != nil {
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *dec) floats() []float64 {
	n := d.count(8)
	if d.err != nil || n == 0 {
		return nil
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = d.float()
	}
	return v
}

func (d *dec) uints() []uint64 {
	n := d.count(1)
	if d.err != nil || n == 0 {
		return nil
	}
	v := make([]uint64, n)
	for i := range v {
		v[i] = d.uint()
	}
	return v
}

// rows reads a matrix written by enc.rows, in one allocation. Unless it is
// empty its rows must have length want, or any one length if want < 0.
func (d *dec) rows(want int) [][]float64 {
	n := d.uint()
	dim := d.uint()
	if d.err != nil || n == 0 {
		return nil
	}
	if want >= 0 && dim != uint64(want) {
		d.fail(fmt.Errorf("rows of %d values, want %d", dim, want))
		return nil
	}
	if dim == 0 || dim > uint64(len(d.b)) || n > uint64(len(d.b))/8/dim {
		d.fail(fmt.Errorf("%d rows of %d values with %d bytes left: %w", n, dim, len(d.b), errShort))
		return nil
	}
	flat := make([]float64, int(n)*int(dim))
	for i := range flat {
		flat[i] = d.float()
	}
	rows := make([][]float64, n)
	for i := range rows {
		rows[i] = flat[i*int(dim) : (i+1)*int(dim) : (i+1)*int(dim)]
	}
	return rows
}

func (d *dec) time() time.Time {
	sec := d.int()
	nsec := d.uint()
	if d.err != nil {
		return time.Time{}
	}
	if nsec >= 1e9 {
		d.fail(fmt.Errorf("time with %d nanoseconds", nsec))
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

func (d *dec) forecast() pipeline.Forecast {
	return pipeline.Forecast{
		Origin: d.time(), Time: d.time(),
		Value: d.float(), Lower: d.float(), Upper: d.float(), Scaled: d.float(),
	}
}
