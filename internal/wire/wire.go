// Package wire holds the primitives of forecastd's binary state format
// (internal/statestore): uvarints, zig-zag varints, little-endian IEEE 754
// floats, booleans as one byte, counted strings and slices, matrices of
// rows, times. Encoder appends; Decoder reads with a sticky first error
// and checks every count against the bytes left before it allocates, so
// that hostile data cannot make it allocate more than a small multiple of
// its size. A model kind's state codec (pipeline.ModelKind) writes its
// sections' bodies with these.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrShort is wrapped by the Decoder's error when the data ends early.
var ErrShort = errors.New("unexpected end of data")

// Encoder appends to B.
type Encoder struct{ B []byte }

// Uint appends an uvarint.
func (e *Encoder) Uint(v uint64) { e.B = binary.AppendUvarint(e.B, v) }

// Int appends a zig-zag varint.
func (e *Encoder) Int(v int64) { e.B = binary.AppendVarint(e.B, v) }

// Float appends v's 8 bytes, little-endian: every value, NaN included,
// comes back bit for bit.
func (e *Encoder) Float(v float64) {
	e.B = binary.LittleEndian.AppendUint64(e.B, math.Float64bits(v))
}

// Str appends the length and the bytes of s.
func (e *Encoder) Str(s string) {
	e.Uint(uint64(len(s)))
	e.B = append(e.B, s...)
}

// Bools appends one byte, 0 or 1, per value.
func (e *Encoder) Bools(bs ...bool) {
	for _, b := range bs {
		v := byte(0)
		if b {
			v = 1
		}
		e.B = append(e.B, v)
	}
}

// Floats appends the count and the values.
func (e *Encoder) Floats(v []float64) {
	e.Uint(uint64(len(v)))
	for _, x := range v {
		e.Float(x)
	}
}

// Uints appends the count and the values, as uvarints.
func (e *Encoder) Uints(v []uint64) {
	e.Uint(uint64(len(v)))
	for _, x := range v {
		e.Uint(x)
	}
}

// Rows appends a matrix whose rows all have length dim: the row count,
// dim, then the values. A row of another length is a programmer error and
// panics.
func (e *Encoder) Rows(v [][]float64, dim int) {
	e.Uint(uint64(len(v)))
	e.Uint(uint64(dim))
	for i, r := range v {
		if len(r) != dim {
			panic(fmt.Sprintf("wire: encode: row %d has length %d, want %d", i, len(r), dim))
		}
		for _, x := range r {
			e.Float(x)
		}
	}
}

// Time appends t's Unix seconds (varint) and nanoseconds (uvarint).
func (e *Encoder) Time(t time.Time) {
	e.Int(t.Unix())
	e.Uint(uint64(t.Nanosecond()))
}

// Decoder reads from B; the first error sticks in Err, and every read
// after it returns zero.
type Decoder struct {
	B   []byte
	Err error
}

// Fail records err (if no error came first) and drops what is left.
func (d *Decoder) Fail(err error) {
	if d.Err == nil {
		d.Err = err
	}
	d.B = nil
}

// Uint reads an uvarint.
func (d *Decoder) Uint() uint64 {
	if d.Err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.B)
	if n <= 0 {
		d.Fail(fmt.Errorf("bad uvarint: %w", ErrShort))
		return 0
	}
	d.B = d.B[n:]
	return v
}

// Int reads a zig-zag varint.
func (d *Decoder) Int() int64 {
	if d.Err != nil {
		return 0
	}
	v, n := binary.Varint(d.B)
	if n <= 0 {
		d.Fail(fmt.Errorf("bad varint: %w", ErrShort))
		return 0
	}
	d.B = d.B[n:]
	return v
}

// Intn reads a varint that must fit an int of 32 bits (sizes, counts,
// enumerations), so that no platform truncates it.
func (d *Decoder) Intn() int {
	v := d.Int()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.Fail(fmt.Errorf("integer %d out of range", v))
		return 0
	}
	return int(v)
}

// Float reads 8 bytes, little-endian.
func (d *Decoder) Float() float64 {
	if d.Err != nil {
		return 0
	}
	if len(d.B) < 8 {
		d.Fail(ErrShort)
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.B))
	d.B = d.B[8:]
	return v
}

// Bool reads one byte, which must be 0 or 1.
func (d *Decoder) Bool() bool {
	if d.Err != nil {
		return false
	}
	if len(d.B) < 1 {
		d.Fail(ErrShort)
		return false
	}
	v := d.B[0]
	d.B = d.B[1:]
	if v > 1 {
		d.Fail(fmt.Errorf("boolean byte %d", v))
	}
	return v == 1
}

// Count reads an element count and checks that that many elements of at
// least minSize bytes each can be left in the data.
func (d *Decoder) Count(minSize int) int {
	n := d.Uint()
	if d.Err == nil && n > uint64(len(d.B)/minSize) {
		d.Fail(fmt.Errorf("%d elements of %d bytes with %d bytes left: %w", n, minSize, len(d.B), ErrShort))
		return 0
	}
	return int(n)
}

// Str reads a string written by Encoder.Str.
func (d *Decoder) Str() string {
	n := d.Count(1)
	if d.Err != nil {
		return ""
	}
	s := string(d.B[:n])
	d.B = d.B[n:]
	return s
}

// Floats reads a slice written by Encoder.Floats; empty is nil.
func (d *Decoder) Floats() []float64 {
	n := d.Count(8)
	if d.Err != nil || n == 0 {
		return nil
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = d.Float()
	}
	return v
}

// Uints reads a slice written by Encoder.Uints; empty is nil.
func (d *Decoder) Uints() []uint64 {
	n := d.Count(1)
	if d.Err != nil || n == 0 {
		return nil
	}
	v := make([]uint64, n)
	for i := range v {
		v[i] = d.Uint()
	}
	return v
}

// Rows reads a matrix written by Encoder.Rows, in one allocation. Unless
// it is empty its rows must have length want, or any one length if
// want < 0.
func (d *Decoder) Rows(want int) [][]float64 {
	n := d.Uint()
	dim := d.Uint()
	if d.Err != nil || n == 0 {
		return nil
	}
	if want >= 0 && dim != uint64(want) {
		d.Fail(fmt.Errorf("rows of %d values, want %d", dim, want))
		return nil
	}
	if dim == 0 || dim > uint64(len(d.B)) || n > uint64(len(d.B))/8/dim {
		d.Fail(fmt.Errorf("%d rows of %d values with %d bytes left: %w", n, dim, len(d.B), ErrShort))
		return nil
	}
	flat := make([]float64, int(n)*int(dim))
	for i := range flat {
		flat[i] = d.Float()
	}
	rows := make([][]float64, n)
	for i := range rows {
		rows[i] = flat[i*int(dim) : (i+1)*int(dim) : (i+1)*int(dim)]
	}
	return rows
}

// Time reads a time written by Encoder.Time, in UTC.
func (d *Decoder) Time() time.Time {
	sec := d.Int()
	nsec := d.Uint()
	if d.Err != nil {
		return time.Time{}
	}
	if nsec >= 1e9 {
		d.Fail(fmt.Errorf("time with %d nanoseconds", nsec))
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}
