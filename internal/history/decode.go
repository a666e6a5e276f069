package history

import (
	"bufio"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/forecastd/forecastd/pipeline"
)

// Bounds of what decoding a /query answer holds in memory, whatever the
// server sends: it reads the body as a stream and keeps only the points
// it returns (at most maxPoints), one series' tags, and one string or
// number at a time, each bounded before it is kept. A body whose bytes
// would pass one of them is refused as too_large.
const (
	// maxString bounds a string kept: a tag key or value, an error.
	maxString = 64 << 10
	// maxKey bounds an object key kept to be matched; a longer one is
	// none of the keys read and is skipped unread.
	maxKey = 256
	// maxNumber bounds a number's text: a float64 or an int64 needs 24
	// bytes at most.
	maxNumber = 64
	// maxTagBytes bounds the keys and values of one series' tags, and
	// maxTags their number (a measurement's tag keys: a few dozen).
	maxTagBytes = 1 << 20
	maxTags     = 4096
	// maxDepth bounds the nesting of the values skipped.
	maxDepth = 64
	// readBuffer is the bytes of the body read at once.
	readBuffer = 32 << 10
)

// errTooLarge is wrapped by the errors of class FailTooLarge.
var errTooLarge = errors.New("too large")

// DecodeMemory bounds the bytes decoding one answer holds beyond the
// points it returns (at most maxPoints, of PointBytes each, and as much
// again while their slice grows): the read buffer, a string and its
// unquoted copy, and the set of a series' tags not wanted (a hash each).
const DecodeMemory = readBuffer + 2*maxString + 32*maxTags

// PointBytes is the memory of one point returned.
const PointBytes = int64(unsafe.Sizeof(pipeline.Point{}))

// LoadBytes bounds the memory one Read holds, of at most maxPoints points
// (0: DefaultMaxPoints): their slice as it grows, and DecodeMemory.
func LoadBytes(maxPoints int) int64 {
	if maxPoints <= 0 {
		maxPoints = DefaultMaxPoints
	}
	return 2*int64(maxPoints)*PointBytes + DecodeMemory
}

// decoder reads one /query JSON answer from a stream.
type decoder struct {
	r         *bufio.Reader
	want      map[string]string
	maxPoints int
	pts       []pipeline.Point
	scratch   []byte // the current string or number's bytes, bounded
	unq       []byte // the current string unquoted, when it has escapes
	// A series' tags, compared with want as they come (a key given twice:
	// the last counts): wantSeen holds, per key of want, whether its last
	// value was want's, by wantAt's index; extra the hashes of the other
	// keys whose last value was not empty. Reused from series to series.
	wantAt   map[string]int
	wantVal  []string
	wantSeen []int8 // 0 absent, 1 want's value, −1 another
	extra    map[uint64]struct{}
	seed     maphash.Seed
	// topErr and resErr are the answer's error and its first result's,
	// told once the whole answer is read (InfluxDB puts no point beside
	// them).
	topErr, resErr string
}

// limitReader reads at most n bytes from r; beyond, it fails with
// errTooLarge instead of io.EOF, so that a body over the bound is told
// from one that ends.
type limitReader struct {
	r      io.Reader
	n, max int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		// One byte more tells a body of exactly n bytes from a longer one.
		var one [1]byte
		if _, err := io.ReadFull(l.r, one[:]); err == nil {
			return 0, fmt.Errorf("%w: a response larger than %d bytes", errTooLarge, l.max)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	k, err := l.r.Read(p)
	l.n -= int64(k)
	return k, err
}

// decodeStream reads a /query response body of at most maxBytes from r
// and returns the points of the result series whose tags are want (any,
// if nil), at most maxPoints, in time order; on failure, the class. It
// holds at most DecodeMemory bytes beside the points.
func decodeStream(r io.Reader, maxBytes int64, want map[string]string, maxPoints int) ([]pipeline.Point, string, error) {
	d := &decoder{r: bufio.NewReaderSize(&limitReader{r: r, n: maxBytes, max: maxBytes}, readBuffer), want: want, maxPoints: maxPoints,
		extra: map[uint64]struct{}{}, seed: maphash.MakeSeed()}
	if want != nil {
		d.wantAt = make(map[string]int, len(want))
		for k, v := range want {
			d.wantAt[k] = len(d.wantVal)
			d.wantVal = append(d.wantVal, v)
		}
		d.wantSeen = make([]int8, len(want))
	}
	pts, err := d.decode()
	if err != nil {
		if errors.Is(err, errTooLarge) {
			return nil, FailTooLarge, err
		}
		var q queryError
		if errors.As(err, &q) {
			return nil, FailQuery, err
		}
		return nil, FailDecode, err
	}
	return pts, "", nil
}

// decode is the decoder's whole answer: an object whose "results" are
// read, anything else skipped; then nothing but white space.
func (d *decoder) decode() ([]pipeline.Point, error) {
	c, err := d.peek()
	if err != nil {
		return nil, d.eof(err)
	}
	switch c {
	case 'n':
		if err := d.literal("null"); err != nil {
			return nil, err
		}
	case '{':
		if err := d.object(func(key string) error {
			switch {
			case strings.EqualFold(key, "results"):
				d.pts, d.resErr = d.pts[:0], "" // a key given twice: the last counts
				return d.array(d.result)
			case strings.EqualFold(key, "error"):
				s, err := d.optString()
				d.topErr = strings.Clone(s)
				return err
			}
			return d.skip(1)
		}); err != nil {
			return nil, err
		}
	default:
		return nil, d.syntax(c, "an object")
	}
	if _, err := d.peek(); err == nil {
		return nil, errors.New("invalid character after the answer")
	} else if !errors.Is(err, io.EOF) {
		return nil, err
	}
	if d.topErr != "" {
		return nil, queryError(d.topErr)
	}
	if d.resErr != "" {
		return nil, queryError(d.resErr)
	}
	// Newest first (ORDER BY time DESC, for LIMIT); the series wants the
	// oldest first. Several result series are merged.
	slices.SortStableFunc(d.pts, func(a, b pipeline.Point) int { return a.Time.Compare(b.Time) })
	return d.pts, nil
}

// queryError is InfluxDB's error for the query (class FailQuery).
type queryError string

func (e queryError) Error() string { return string(e) }

// result reads one element of "results": its "series" and "error".
func (d *decoder) result() error {
	if ok, err := d.null(); ok || err != nil {
		return err
	}
	start := len(d.pts)
	var msg string // a key given twice: the last counts
	err := d.object(func(key string) error {
		switch {
		case strings.EqualFold(key, "series"):
			d.pts = d.pts[:start]
			return d.array(d.series)
		case strings.EqualFold(key, "error"):
			s, err := d.optString()
			msg = strings.Clone(s)
			return err
		}
		return d.skip(2)
	})
	if msg != "" && d.resErr == "" {
		d.resErr = msg
	}
	return err
}

// series reads one result series: its points are kept, as they come,
// until its tags are known not to be want's (they may come after the
// values), then dropped.
func (d *decoder) series() error {
	if ok, err := d.null(); ok || err != nil {
		return err
	}
	start := len(d.pts)
	d.clearTags()
	if err := d.object(func(key string) error {
		switch {
		case strings.EqualFold(key, "tags"):
			d.clearTags() // a key given twice: the last counts
			return d.tags()
		case strings.EqualFold(key, "values"):
			d.pts = d.pts[:start]
			return d.array(d.row)
		}
		return d.skip(3)
	}); err != nil {
		return err
	}
	if !d.tagsWanted() {
		clear(d.pts[start:])
		d.pts = d.pts[:start]
	}
	return nil
}

// clearTags forgets the tags of the series before.
func (d *decoder) clearTags() {
	clear(d.wantSeen)
	clear(d.extra)
}

// tagsWanted reports whether the series' tags are exactly want (any, if
// want is nil), as sameTags: every key of want with its value ("" where
// absent), no other key but with an empty value.
func (d *decoder) tagsWanted() bool {
	if d.want == nil {
		return true
	}
	if len(d.extra) > 0 {
		return false
	}
	for i, v := range d.wantVal {
		switch d.wantSeen[i] {
		case -1:
			return false
		case 0:
			if v != "" {
				return false
			}
		}
	}
	return true
}

// tags reads a series' tags, a string each, at most maxTagBytes of
// them, noting how they compare with want (tagsWanted).
func (d *decoder) tags() error {
	if ok, err := d.null(); ok || err != nil {
		return err
	}
	size, n := 0, 0
	return d.objectOf(maxString, func(key string) error {
		if n++; n > maxTags {
			return fmt.Errorf("%w: a series with more than %d tags", errTooLarge, maxTags)
		}
		// key is valid until the value is read.
		i, isWant := d.wantAt[key]
		want := ""
		if isWant {
			want = d.wantVal[i]
		}
		h := maphash.String(d.seed, key)
		size += len(key)
		v, err := d.optString()
		if err != nil {
			return err
		}
		if size += len(v); size > maxTagBytes {
			return fmt.Errorf("%w: a series' tags over %d bytes", errTooLarge, maxTagBytes)
		}
		switch {
		case d.want == nil:
		case isWant && v == want:
			d.wantSeen[i] = 1
		case isWant:
			d.wantSeen[i] = -1
		case v != "":
			d.extra[h] = struct{}{}
		default:
			delete(d.extra, h)
		}
		return nil
	})
}

// row reads one row of "values": the time in nanoseconds and the value,
// the first two of its elements. A row whose time or value is not a
// number (null, a string, a bool) is skipped, as is every row past
// maxPoints.
func (d *decoder) row() error {
	if ok, err := d.null(); ok || err != nil {
		return err
	}
	var ns int64
	var val float64
	i, ok := 0, true
	err := d.arrayOf(func() error {
		defer func() { i++ }()
		if i > 1 || !ok {
			return d.skip(0)
		}
		num, isNum, err := d.number()
		if err != nil {
			return err
		}
		if !isNum {
			ok = false
			return nil
		}
		if i == 0 {
			ns, err = strconv.ParseInt(num, 10, 64)
		} else {
			val, err = strconv.ParseFloat(num, 64)
		}
		ok = err == nil
		return nil
	})
	if err == nil && ok && i >= 2 && len(d.pts) < d.maxPoints {
		d.pts = append(d.pts, pipeline.Point{Time: time.Unix(0, ns).UTC(), Value: val})
	}
	return err
}

// number reads a value that may be a number: a JSON number, or a string
// holding one (as encoding/json reads a json.Number); isNum is false for
// anything else, which is skipped. The text returned is valid until the
// next read.
func (d *decoder) number() (text string, isNum bool, err error) {
	c, err := d.peek()
	if err != nil {
		return "", false, d.eof(err)
	}
	switch {
	case c == '-' || c >= '0' && c <= '9':
		b, err := d.numberText()
		return unsafe.String(unsafe.SliceData(b), len(b)), true, err
	case c == '"':
		s, long, err := d.str(maxNumber)
		if err != nil || long || !validNumber(s) {
			return "", false, err
		}
		return s, true, nil
	}
	return "", false, d.skip(0)
}

// validNumber reports whether s is a JSON number (RFC 8259, section 6).
func validNumber(s string) bool {
	i := 0
	digits := func() int {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// object reads an object, calling field for each key (valid until the
// value is read) with the reader before its value, which field must
// read. A key longer than maxKey is none of those read: its value is
// skipped.
func (d *decoder) object(field func(key string) error) error {
	return d.objectOf(maxKey, field)
}

// objectOf is object with keys of up to limit bytes; with limit
// maxString, a longer key is an error.
func (d *decoder) objectOf(limit int, field func(key string) error) error {
	return d.fields(limit, func(key string, kept bool) error {
		switch {
		case kept:
			return field(key)
		case limit >= maxString:
			return fmt.Errorf("%w: a key over %d bytes", errTooLarge, limit)
		}
		return d.skip(1)
	})
}

// fields reads an object, calling field for each key, kept if at most
// limit bytes long (else "").
func (d *decoder) fields(limit int, field func(key string, kept bool) error) error {
	if err := d.expect('{'); err != nil {
		return err
	}
	c, err := d.peek()
	if err != nil {
		return d.eof(err)
	}
	if c == '}' {
		d.r.ReadByte()
		return nil
	}
	for {
		key, long, err := d.str(limit)
		if err != nil {
			return err
		}
		if err := d.expect(':'); err != nil {
			return err
		}
		if err := field(key, !long); err != nil {
			return err
		}
		c, err := d.next()
		if err != nil {
			return d.eof(err)
		}
		switch c {
		case ',':
		case '}':
			return nil
		default:
			return d.syntax(c, "',' or '}'")
		}
	}
}

// array reads null or an array, calling elem for each element with the
// reader before it.
func (d *decoder) array(elem func() error) error {
	if ok, err := d.null(); ok || err != nil {
		return err
	}
	return d.arrayOf(elem)
}

// arrayOf reads an array, calling elem for each element.
func (d *decoder) arrayOf(elem func() error) error {
	if err := d.expect('['); err != nil {
		return err
	}
	c, err := d.peek()
	if err != nil {
		return d.eof(err)
	}
	if c == ']' {
		d.r.ReadByte()
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		c, err := d.next()
		if err != nil {
			return d.eof(err)
		}
		switch c {
		case ',':
		case ']':
			return nil
		default:
			return d.syntax(c, "',' or ']'")
		}
	}
}

// optString reads a string, or null as "".
func (d *decoder) optString() (string, error) {
	if ok, err := d.null(); ok || err != nil {
		return "", err
	}
	s, long, err := d.str(maxString)
	if err == nil && long {
		err = fmt.Errorf("%w: a string over %d bytes", errTooLarge, maxString)
	}
	return s, err
}

// null reads null if it is next.
func (d *decoder) null() (bool, error) {
	c, err := d.peek()
	if err != nil {
		return false, d.eof(err)
	}
	if c != 'n' {
		return false, nil
	}
	return true, d.literal("null")
}

// skip reads one value of any kind without keeping it, its nesting
// bounded by maxDepth.
func (d *decoder) skip(depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: nesting deeper than %d", errTooLarge, maxDepth)
	}
	c, err := d.peek()
	if err != nil {
		return d.eof(err)
	}
	switch {
	case c == '{':
		return d.fields(0, func(string, bool) error { return d.skip(depth + 1) })
	case c == '[':
		return d.arrayOf(func() error { return d.skip(depth + 1) })
	case c == '"':
		_, _, err := d.str(0)
		return err
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		_, err := d.numberText()
		return err
	}
	return d.syntax(c, "a value")
}

// str reads a string and returns it unquoted, as encoding/json does, if
// its text is at most limit bytes (the string returned is valid until
// the next read); a longer one is read to its end but not kept (long).
func (d *decoder) str(limit int) (s string, long bool, err error) {
	if err := d.expect('"'); err != nil {
		return "", false, err
	}
	d.scratch = d.scratch[:0]
	escaped := false
	n := 0
	keep := func(b ...byte) {
		if n += len(b); n <= limit {
			d.scratch = append(d.scratch, b...)
		}
	}
	for {
		c, err := d.r.ReadByte()
		if err != nil {
			return "", false, d.eof(err)
		}
		switch {
		case c == '"':
			if n > limit {
				return "", true, nil
			}
			raw := d.scratch
			if escaped || !utf8.Valid(raw) {
				d.unq = unquote(d.unq[:0], raw)
				raw = d.unq
			}
			return unsafe.String(unsafe.SliceData(raw), len(raw)), false, nil
		case c < 0x20:
			return "", false, errors.New("a control character in a string")
		case c == '\\':
			escaped = true
			e, err := d.r.ReadByte()
			if err != nil {
				return "", false, d.eof(err)
			}
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				keep(c, e)
			case 'u':
				var hex [4]byte
				if _, err := io.ReadFull(d.r, hex[:]); err != nil {
					if errors.Is(err, io.ErrUnexpectedEOF) {
						err = io.EOF // the body's end, not the connection's
					}
					return "", false, d.eof(err)
				}
				for _, h := range hex {
					if hexDigit(h) < 0 {
						return "", false, errors.New("an invalid \\u escape in a string")
					}
				}
				keep(c, e, hex[0], hex[1], hex[2], hex[3])
			default:
				return "", false, fmt.Errorf("an invalid escape \\%c in a string", e)
			}
		default:
			keep(c)
		}
	}
}

// unquote appends the string whose valid JSON text (without its quotes)
// is raw to dst, as encoding/json unquotes it: escapes decoded, a
// surrogate pair joined, a lone surrogate and each byte of invalid UTF-8
// replaced by U+FFFD.
func unquote(dst, raw []byte) []byte {
	for r := 0; r < len(raw); {
		c := raw[r]
		switch {
		case c == '\\':
			e := raw[r+1]
			r += 2
			switch e {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				rr := u4(raw[r:])
				r += 4
				if utf16.IsSurrogate(rr) {
					if r+6 <= len(raw) && raw[r] == '\\' && raw[r+1] == 'u' {
						if dec := utf16.DecodeRune(rr, u4(raw[r+2:])); dec != unicode.ReplacementChar {
							dst = utf8.AppendRune(dst, dec)
							r += 6
							break
						}
					}
					rr = unicode.ReplacementChar
				}
				dst = utf8.AppendRune(dst, rr)
			default: // " \ /
				dst = append(dst, e)
			}
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			r++
		default:
			rr, size := utf8.DecodeRune(raw[r:])
			dst = utf8.AppendRune(dst, rr)
			r += size
		}
	}
	return dst
}

// u4 is the rune of the 4 hex digits h begins with (checked by str).
func u4(h []byte) rune {
	var r rune
	for _, c := range h[:4] {
		r = r<<4 | rune(hexDigit(c))
	}
	return r
}

// hexDigit is c's value as a hex digit, −1 if it is none.
func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// numberText reads a JSON number's text, at most maxNumber bytes; it is
// valid until the next read.
func (d *decoder) numberText() ([]byte, error) {
	b := d.scratch[:0]
	for {
		c, err := d.r.ReadByte()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		if !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			d.r.UnreadByte()
			break
		}
		if len(b) == maxNumber {
			return nil, fmt.Errorf("%w: a number over %d bytes", errTooLarge, maxNumber)
		}
		b = append(b, c)
	}
	d.scratch = b
	if !validNumber(unsafe.String(unsafe.SliceData(b), len(b))) {
		return nil, fmt.Errorf("invalid number %q", b)
	}
	return b, nil
}

// literal reads the literal word (true, false, null).
func (d *decoder) literal(word string) error {
	for i := 0; i < len(word); i++ {
		c, err := d.r.ReadByte()
		if err != nil {
			return d.eof(err)
		}
		if c != word[i] {
			return d.syntax(c, strconv.Quote(word))
		}
	}
	return nil
}

// expect reads the byte c, after white space.
func (d *decoder) expect(c byte) error {
	got, err := d.next()
	if err != nil {
		return d.eof(err)
	}
	if got != c {
		return d.syntax(got, strconv.QuoteRune(rune(c)))
	}
	return nil
}

// next reads the byte after white space.
func (d *decoder) next() (byte, error) {
	for {
		c, err := d.r.ReadByte()
		if err != nil {
			return 0, err
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c, nil
		}
	}
}

// peek returns the byte after white space, unread.
func (d *decoder) peek() (byte, error) {
	c, err := d.next()
	if err != nil {
		return 0, err
	}
	d.r.UnreadByte()
	return c, nil
}

// errTruncated: the body ended inside the answer.
var errTruncated = errors.New("the answer ends inside a value")

// eof turns the end of the body inside a value into errTruncated.
func (d *decoder) eof(err error) error {
	if errors.Is(err, io.EOF) {
		return errTruncated
	}
	return err
}

func (d *decoder) syntax(c byte, want string) error {
	return fmt.Errorf("invalid character %q, want %s", c, want)
}
