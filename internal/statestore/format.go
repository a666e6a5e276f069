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
//
// then the model's sections, which its kind writes and reads
// (pipeline.ModelKind's StateTags, EncodeState and DecodeState; this
// package loops over the registered kinds and switches on none): the
// kind's first tag, odd, once, then any of its other tags. The built-in
// kinds' (pipeline/models_*.go) are
//
//	11 aosvr    svr.AOSVRState, and the window's handles oldest first
//	12 aosvr-incremental (optional, after 11): the margins h, R, the
//	            operations since the last refresh and whether one is due
//	            (svr.AOSVRState.H, R, Ops, RefreshPending), so that a
//	            restored AOSVR goes on bit for bit; a reader that skips it
//	            restores to rounding
//	13 sogsvr   svr.SOGSVRState
//	15 norma    svr.NORMAState
//
// and other kinds use tags of 33 and above; tags below 33 other than 11–16
// are the file's own. One more critical section with target change
// (pipeline.TargetChange), once:
//
//	17 change   embedding.ChangesState (values oldest first, counts,
//	            scale, levels, seasonal periods), whether an input is made,
//	            the pending forecast's scale, and the combination's and the
//	            guard's losses and last forecasts (counts 0 without)
//
// One more critical section with a horizon H > 1 (pipeline.Config.Horizon),
// once:
//
//	27 ahead    the forecasts ahead (ahead.State): the values pushed
//	            and the two periods; the autoregressions' count, then
//	            each one's presence, sums, mean |z| and samples; the profile's presence, level,
//	            bins, bin counts, running sums and values pushed; the cleaner's scale,
//	            count, run and corrections (index, amount); the anchor
//	            steps, each with its candidates' mean squared and
//	            absolute errors and counts, the guard's losses, the
//	            combination's count and mean error, the interval's
//	            half-width in that, and its waiting places (valid, then
//	            origin, label, scale, the guard's members' forecasts, the
//	            path's value and half-width, the mean error at the
//	            origin, the candidates' forecasts as
//	            float32 bits); the errors' window, oldest first; the
//	            newest step 1 and whether there is one.
//
// Files written by earlier versions hold a section 29 (horizon) instead:
// its body is skipped, and the series' steps ahead start afresh.
//
// One more critical section with a step (pipeline.Config.Step), once:
//
//	31 bucket   the open bucket (pipeline.BucketState: open, whether a raw
//	            point was seen, whether the rate has a start; start,
//	            points, accumulator, the last raw point's time and value,
//	            the rate's start, the last closed bucket's end, step,
//	            aggregate) and Stats.Late
//
// and after it, only while the open bucket's sum is scaled (its values
// would overflow float64 together), once:
//
//	19 bucket scale  the power of two the sum is scaled by
//	            (pipeline.BucketState.Shift): critical, so that a reader
//	            that cannot apply it refuses the file rather than take the
//	            scaled sum as the sum; a file without it has shift 0, and
//	            files of every other bucket are as before, byte for byte.
//
// And three optional sections:
//
//	18 anomaly  the anomaly detector's state (anomaly.State: recent
//	            points, open, points inside, age) and Stats.Anomalies; a
//	            reader that skips it starts the detector afresh.
//	20 anomaly history  the history of the detector's step floor and
//	            surprise and extremes (anomaly.State: last actual, mean
//	            step, block peaks, range); a reader that skips it starts
//	            that afresh.
//	22 anomaly seasonal  the detector's seasonal deviations
//	            (anomaly.State: mean deviation, deviations weighed, run,
//	            first reference, last opening); a reader that skips it
//	            starts them afresh.
//
// testdata/v1 holds files written before the kinds wrote their own
// sections; they decode, and are written again byte for byte.
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
	"slices"

	"github.com/forecastd/forecastd/ahead"
	"github.com/forecastd/forecastd/internal/wire"
	"github.com/forecastd/forecastd/pipeline"
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

// Section tags of version 1 that are the file's own; odd tags are
// critical. The model's sections are its kind's (pipeline.ModelKind's
// StateTags: 11–16 for the built-in kinds, 33 and above for others).
const (
	secConfig    = 1
	secSeries    = 3
	secStats     = 5
	secEmbedding = 7
	secIntervals = 9
	secChange    = 17
	secAhead     = 27
	// secHorizon (critical) is the steps ahead's state of earlier
	// versions: read and dropped.
	secHorizon = 29
	// secBucket (critical) holds, with a step, the open bucket
	// (pipeline.BucketState: open, start, points, accumulator, whether a
	// raw point was seen, its time and value, the rate's start, whether
	// it has one) and Stats.Late.
	secBucket = 31
	// secBucketScale (critical) holds, after secBucket, the open bucket's
	// pipeline.BucketState.Shift when it is not 0.
	secBucketScale = 19
	// secAnomaly (optional, so even) holds the anomaly detector's state
	// and Stats.Anomalies: recent points (uvarint bits), open, points
	// inside, events opened.
	secAnomaly = 18
	// secAnomalyHistory (optional) holds the history the detector keeps
	// for its step floor and surprise (anomaly.State's LastY … Block):
	// last actual, whether there is one, mean step, steps, the
	// PeakBlocks block peaks, the current block's peak, its start (Unix
	// ns) and the ring's next slot; whether there is a range, its low and
	// high, and the times of the last new low and high (Unix ns). A
	// reader that skips it starts that history afresh.
	secAnomalyHistory = 20
	// secAnomalySeasonal (optional) holds the detector's seasonal
	// deviations (anomaly.State's SeasonalMean … LastOpen): the mean
	// deviation, the deviations it weighs, the run, the time of the first
	// reference and the time an event last opened (Unix ns). A reader
	// that skips it starts them afresh.
	secAnomalySeasonal = 22
	// secAnomalySurprised (optional) holds which of the detector's recent
	// points outside were surprises (anomaly.State's Surprised, uvarint
	// bits), when any was. A reader that skips it takes none for one.
	secAnomalySurprised = 24
)

var sectionNames = map[uint64]string{
	secConfig: "config", secSeries: "series", secStats: "stats", secEmbedding: "embedding",
	secIntervals: "intervals", secChange: "change", secAhead: "ahead", secHorizon: "horizon", secBucket: "bucket", secBucketScale: "bucket scale",
	secAnomaly: "anomaly", secAnomalyHistory: "anomaly history", secAnomalySeasonal: "anomaly seasonal",
	secAnomalySurprised: "anomaly surprised",
}

// ownSections are the tags the file's own sections use or may use in a
// later version (below 33 and not a built-in kind's), which no model kind
// may use.
var ownSections = func() map[uint64]bool {
	m := map[uint64]bool{}
	for t := uint64(0); t < 33; t++ {
		if t < 11 || t > 16 {
			m[t] = true
		}
	}
	return m
}()

// modelTag returns the kind whose state section tag is, and the section's
// name in errors ("aosvr", "aosvr section 12").
func modelTag(tag uint64) (pipeline.Kind, string, bool) {
	if ownSections[tag] {
		return 0, "", false
	}
	for _, k := range pipeline.ModelKinds() {
		tags := k.Model().StateTags()
		if i := slices.Index(tags, tag); i == 0 {
			return k, k.String(), true
		} else if i > 0 {
			return k, fmt.Sprintf("%s section %d", k, tag), true
		}
	}
	return 0, "", false
}

// Encode returns st in the file format (see the package documentation).
// It costs O(size of the state) and allocates the result, once when the
// size estimate holds, and the model's sections (its kind's EncodeState).
// A state whose model's kind is not registered is a programmer error and
// panics, as is a model section whose tag is not its kind's.
func Encode(st pipeline.SeriesState) []byte {
	secs := modelSections(st.Model)
	var e enc
	e.B = make([]byte, headerSize, headerSize+estimate(&st, secs)+crcSize)
	copy(e.B, magic)
	binary.BigEndian.PutUint16(e.B[8:], Version)
	binary.BigEndian.PutUint16(e.B[10:], 0)
	e.Str(st.Key)
	e.Uint(st.Seq)
	for _, sc := range sectionCodecs {
		if sc.enc != nil && (sc.present == nil || sc.present(&st)) {
			section(&e, sc.tag, func(e *enc) { sc.enc(e, &st) })
		}
	}
	for _, sec := range secs {
		e.Uint(sec.Tag)
		e.Uint(uint64(len(sec.Body)))
		e.B = append(e.B, sec.Body...)
	}
	binary.BigEndian.PutUint64(e.B[12:], uint64(len(e.B)-headerSize))
	return binary.BigEndian.AppendUint32(e.B, crc32.Checksum(e.B, castagnoli))
}

// estimate returns roughly the payload size of st, to size the buffer.
func estimate(st *pipeline.SeriesState, secs []pipeline.StateSection) int {
	n := 512 + len(st.Key) + 64*len(st.Config) + 9*(len(st.Residuals)+len(st.Delay.Values)) + 24*len(st.Warmup)
	for _, sec := range secs {
		n += len(sec.Body) + 20
	}
	return n
}

// modelSections returns the sections of the model's state, by its kind.
func modelSections(m *pipeline.ModelState) []pipeline.StateSection {
	if m == nil {
		return nil
	}
	k, err := pipeline.ParseKind(m.Kind)
	if err != nil {
		panic(fmt.Sprintf("statestore: encode: %v", err))
	}
	mk := k.Model()
	secs := mk.EncodeState(m.State)
	tags := mk.StateTags()
	for i, sec := range secs {
		if (i == 0) != (sec.Tag == tags[0]) || !slices.Contains(tags, sec.Tag) || ownSections[sec.Tag] {
			panic(fmt.Sprintf("statestore: encode: %s writes section %d", m.Kind, sec.Tag))
		}
	}
	return secs
}

func encForecast(e *enc, f pipeline.Forecast) {
	e.Time(f.Origin)
	e.Time(f.Time)
	for _, v := range []float64{f.Value, f.Lower, f.Upper, f.Scaled} {
		e.Float(v)
	}
}

// section appends tag, the length of the body that body writes, and the
// body: written in place, then moved up by the size of its header.
func section(e *enc, tag uint64, body func(*enc)) {
	start := len(e.B)
	body(e)
	var hdr [2 * binary.MaxVarintLen64]byte
	h := binary.PutUvarint(hdr[:], tag)
	h += binary.PutUvarint(hdr[h:], uint64(len(e.B)-start))
	e.B = append(e.B, hdr[:h]...)
	copy(e.B[start+h:], e.B[start:len(e.B)-h])
	copy(e.B[start:], hdr[:h])
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
	d := dec{B: data[headerSize:len(body)]}
	st.Key = d.Str()
	if v, fl := binary.BigEndian.Uint16(data[8:]), binary.BigEndian.Uint16(data[10:]); v != Version || fl != 0 {
		return pipeline.SeriesState{}, fmt.Errorf("%s%w: version %d, flags %#x; this forecastd reads version %d", unverifiedKey(data), ErrVersion, v, fl, Version)
	}
	if d.Err != nil {
		return pipeline.SeriesState{}, fmt.Errorf("%w: series key: %w", ErrMalformed, d.Err)
	}
	st.Seq = d.Uint()
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
	d := dec{B: data[headerSize:end]}
	k := d.Str()
	if d.Err != nil {
		return ""
	}
	if binary.BigEndian.Uint32(data[len(data)-crcSize:]) == crc32.Checksum(data[:len(data)-crcSize], castagnoli) {
		return fmt.Sprintf("series %q: ", k)
	}
	return fmt.Sprintf("series %q (unverified): ", k)
}

func decodeSections(d *dec, st *pipeline.SeriesState) error {
	seen := map[uint64]bool{}
	var (
		kind     pipeline.Kind
		haveKind bool
		msecs    []pipeline.StateSection
	)
	for d.Err == nil && len(d.B) > 0 {
		tag := d.Uint()
		n := d.Uint()
		if d.Err != nil {
			break
		}
		if n > uint64(len(d.B)) {
			return fmt.Errorf("section %d: %d bytes, %d left: %w", tag, n, len(d.B), errShort)
		}
		body := d.B[:n]
		d.B = d.B[n:]
		name, known := sectionNames[tag]
		mk, mname, isModel := modelTag(tag)
		if isModel {
			name, known = mname, true
		}
		if !known {
			if tag%2 == 1 {
				return fmt.Errorf("unknown critical section %d (a model kind this forecastd does not register?)", tag)
			}
			continue
		}
		if seen[tag] {
			return fmt.Errorf("section %s twice", name)
		}
		seen[tag] = true
		if isModel {
			switch {
			case !haveKind && tag != mk.Model().StateTags()[0]:
				return fmt.Errorf("section %s comes before the %s section", name, mk)
			case haveKind && mk != kind:
				return fmt.Errorf("sections of two models, %s and %s", kind, mk)
			}
			kind, haveKind = mk, true
			msecs = append(msecs, pipeline.StateSection{Tag: tag, Body: body})
			continue
		}
		s := dec{B: body}
		decodeSection(&s, tag, st)
		if s.Err == nil && len(s.B) != 0 {
			s.Err = fmt.Errorf("%d bytes left over", len(s.B))
		}
		if s.Err != nil {
			return fmt.Errorf("section %s: %w", name, s.Err)
		}
	}
	if d.Err != nil {
		return d.Err
	}
	for _, tag := range []uint64{secConfig, secSeries, secStats, secEmbedding, secIntervals} {
		if !seen[tag] {
			return fmt.Errorf("no %s section", sectionNames[tag])
		}
	}
	if !haveKind {
		return errors.New("no model section")
	}
	ms, err := kind.Model().DecodeState(msecs)
	if err != nil {
		return fmt.Errorf("section %s: %w", kind, err)
	}
	st.Model = &pipeline.ModelState{Kind: kind.String(), State: ms}
	return nil
}

func decodeSection(d *dec, tag uint64, st *pipeline.SeriesState) {
	for _, sc := range sectionCodecs {
		if sc.tag == tag {
			sc.dec(d, st)
			return
		}
	}
}

// enc and dec are the format's primitives (internal/wire), which the
// model kinds' state codecs use too.
type (
	enc = wire.Encoder
	dec = wire.Decoder
)

var errShort = wire.ErrShort

func decForecast(d *dec) pipeline.Forecast {
	return pipeline.Forecast{
		Origin: d.Time(), Time: d.Time(),
		Value: d.Float(), Lower: d.Float(), Upper: d.Float(), Scaled: d.Float(),
	}
}

// encodeCombiner appends an optional combination state.
func encodeCombiner(e *enc, cs *pipeline.CombinerState) {
	e.Bools(cs != nil)
	if cs != nil {
		e.Floats(cs.Loss)
		e.Floats(cs.Forecasts)
	}
}

func decodeCombiner(d *dec) *pipeline.CombinerState {
	if !d.Bool() {
		return nil
	}
	return &pipeline.CombinerState{Loss: d.Floats(), Forecasts: d.Floats()}
}

// encodeAhead appends the body of the ahead section.
func encodeAhead(e *enc, st *ahead.State) {
	e.Uint(st.T)
	e.Int(int64(st.P1))
	e.Int(int64(st.P2))
	e.Uint(uint64(len(st.ARs)))
	for _, sr := range st.ARs {
		e.Bools(sr != nil)
		if sr != nil {
			e.Floats(sr.A)
			e.Floats(sr.B)
			e.Float(sr.ZAbs)
			e.Int(int64(sr.N))
		}
	}
	e.Bools(st.Profile != nil)
	if p := st.Profile; p != nil {
		e.Float(p.Level)
		e.Floats(p.S1)
		e.Floats(p.S2)
		encodeUint16s(e, p.Cnt1)
		encodeUint16s(e, p.Cnt2)
		e.Float(p.Sum1)
		e.Float(p.Sum2)
		e.Uint(p.N)
	}
	e.Float(st.Sigma)
	e.Uint(uint64(st.CleanN))
	e.Int(int64(st.Run))
	e.Uint(uint64(len(st.Corrections)))
	for _, c := range st.Corrections {
		e.Uint(c.T)
		e.Float(c.D)
	}
	e.Uint(uint64(len(st.Anchors)))
	for _, a := range st.Anchors {
		e.Floats(a.MSE)
		e.Floats(a.Abs)
		u := make([]uint64, len(a.Scored))
		for i, v := range a.Scored {
			u[i] = uint64(v)
		}
		e.Uints(u)
		e.Floats(a.Guard)
		e.Uint(uint64(a.NErr))
		e.Float(a.MAE)
		e.Float(a.Q)
		e.Uint(uint64(len(a.Pending)))
		for _, p := range a.Pending {
			e.Bools(p.Valid)
			e.Uint(p.Origin)
			e.Int(p.Label)
			e.Float(p.Scale)
			e.Floats(p.Top)
			e.Float(p.Comb)
			e.Float(p.Half)
			e.Float(p.Unit)
			e.Uint(uint64(len(p.Candidates)))
			for _, c := range p.Candidates {
				e.B = binary.LittleEndian.AppendUint32(e.B, math.Float32bits(c))
			}
		}
	}
	e.Floats(st.Window)
	e.Float(st.Prev1)
	e.Bools(st.Has1)
}

func encodeUint16s(e *enc, v []uint16) {
	e.Uint(uint64(len(v)))
	for _, x := range v {
		e.Uint(uint64(x))
	}
}

func decodeUint16s(d *dec) []uint16 {
	n := d.Count(1)
	out := make([]uint16, n)
	for i := range out {
		v := d.Uint()
		if v > math.MaxUint16 {
			d.Fail(fmt.Errorf("count %d beyond 16 bits", v))
		}
		out[i] = uint16(v)
	}
	return out
}

func decodeAhead(d *dec) *ahead.State {
	st := &ahead.State{T: d.Uint(), P1: d.Intn(), P2: d.Intn()}
	st.ARs = make([]*ahead.SARState, d.Count(1))
	for i := range st.ARs {
		if d.Bool() {
			st.ARs[i] = &ahead.SARState{A: d.Floats(), B: d.Floats(), ZAbs: d.Float(), N: d.Intn()}
		}
	}
	if d.Bool() {
		st.Profile = &ahead.ProfileState{Level: d.Float(), S1: d.Floats(), S2: d.Floats(), Cnt1: decodeUint16s(d), Cnt2: decodeUint16s(d),
			Sum1: d.Float(), Sum2: d.Float(), N: d.Uint()}
	}
	st.Sigma = d.Float()
	st.CleanN = uint32(min(d.Uint(), math.MaxUint32))
	st.Run = d.Intn()
	if n := d.Count(9); n > 0 { // index, then 8 bytes
		st.Corrections = make([]ahead.Correction, n)
		for i := range st.Corrections {
			st.Corrections[i] = ahead.Correction{T: d.Uint(), D: d.Float()}
		}
	}
	st.Anchors = make([]ahead.AnchorState, d.Count(4))
	for i := range st.Anchors {
		a := &st.Anchors[i]
		a.MSE, a.Abs = d.Floats(), d.Floats()
		u := d.Uints()
		a.Scored = make([]uint32, len(u))
		for k, v := range u {
			a.Scored[k] = uint32(min(v, math.MaxUint32))
		}
		a.Guard = d.Floats()
		a.NErr = uint32(min(d.Uint(), math.MaxUint32))
		a.MAE, a.Q = d.Float(), d.Float()
		a.Pending = make([]ahead.SlotState, d.Count(5))
		for k := range a.Pending {
			p := &a.Pending[k]
			p.Valid, p.Origin, p.Label, p.Scale = d.Bool(), d.Uint(), d.Int(), d.Float()
			p.Top, p.Comb, p.Half, p.Unit = d.Floats(), d.Float(), d.Float(), d.Float()
			n := d.Count(4)
			p.Candidates = make([]float32, n)
			for c := range p.Candidates {
				if len(d.B) < 4 {
					d.Fail(errShort)
					break
				}
				p.Candidates[c] = math.Float32frombits(binary.LittleEndian.Uint32(d.B))
				d.B = d.B[4:]
			}
		}
	}
	st.Window = d.Floats()
	st.Prev1, st.Has1 = d.Float(), d.Bool()
	return st
}
