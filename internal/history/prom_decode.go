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

	"github.com/forecastd/forecastd/pipeline"
)

// promDecoder reads one answer of Prometheus' HTTP API (/api/v1/query,
// /api/v1/query_range; VictoriaMetrics answers the same) with the bounds
// of decoder: the body as a stream, one string or number at a time.
type promDecoder struct {
	*decoder
	// series counts the result's series; status and msg are the
	// answer's "status" and "error".
	series      int
	status, msg string
	// lim, when set (DecodePromResults), bounds an answer of many
	// series, each kept in results with its labels.
	lim     *PromLimits
	results []PromResult
}

// promDecodeStream reads an answer of at most maxBytes from r and
// returns the points of its one series (a matrix's "values", a vector's
// "value"), at most maxPoints, the newest, in time order. An answer with
// more than one series is an error of class FailQuery: the query must
// select one.
func promDecodeStream(r io.Reader, maxBytes int64, maxPoints int) ([]pipeline.Point, string, error) {
	pts, err := newPromDecoder(r, maxBytes, maxPoints).decode()
	if err != nil {
		return nil, promFailClass(err), err
	}
	return pts, "", nil
}

// newPromDecoder returns a decoder of an answer of at most maxBytes from
// r, keeping at most maxPoints points a series.
func newPromDecoder(r io.Reader, maxBytes int64, maxPoints int) *promDecoder {
	return &promDecoder{decoder: &decoder{r: bufio.NewReaderSize(&limitReader{r: r, n: maxBytes, max: maxBytes}, readBuffer),
		maxPoints: maxPoints, extra: map[uint64]struct{}{}, seed: maphash.MakeSeed()}}
}

// promFailClass is the failure class of a decoding error.
func promFailClass(err error) string {
	var q queryError
	switch {
	case errors.Is(err, errTooLarge):
		return FailTooLarge
	case errors.As(err, &q):
		return FailQuery
	}
	return FailDecode
}

func (d *promDecoder) decode() ([]pipeline.Point, error) {
	if err := d.object(func(key string) error {
		switch key {
		case "status":
			s, err := d.optString()
			d.status = strings.Clone(s)
			return err
		case "error":
			s, err := d.optString()
			d.msg = strings.Clone(s)
			return err
		case "data":
			return d.object(func(key string) error {
				if key == "result" && d.lim != nil {
					return d.array(d.resultOf)
				}
				if key == "result" {
					return d.array(d.result)
				}
				return d.skip(2)
			})
		}
		return d.skip(1)
	}); err != nil {
		return nil, err
	}
	if _, err := d.peek(); err == nil {
		return nil, errors.New("invalid character after the answer")
	} else if !errors.Is(err, io.EOF) {
		return nil, err
	}
	switch {
	case d.status == "error" || d.msg != "":
		return nil, queryError(strings.TrimSpace("query failed: " + d.msg))
	case d.status != "success":
		return nil, errors.New(`no "status":"success" in the answer`)
	case d.lim != nil:
		return nil, nil
	case d.series > 1:
		return nil, queryError("the query selects " + strconv.Itoa(d.series) + " series; it must select one")
	}
	// In time order, as Prometheus answers, whatever a server sends.
	slices.SortStableFunc(d.pts, func(a, b pipeline.Point) int { return a.Time.Compare(b.Time) })
	if len(d.pts) > d.maxPoints {
		d.pts = d.pts[len(d.pts)-d.maxPoints:]
	}
	return d.pts, nil
}

// result reads one series of the result.
func (d *promDecoder) result() error {
	if ok, err := d.null(); ok || err != nil {
		return err
	}
	d.series++
	return d.object(func(key string) error {
		switch key {
		case "values":
			return d.array(d.sample)
		case "value":
			return d.sample()
		}
		return d.skip(3)
	})
}

// sample reads one [time, "value"] pair: the time in seconds, a number
// with up to 3 decimals (milliseconds), the value a string holding a
// number. A pair of anything else, or whose value is NaN or infinite, is
// skipped. Past maxPoints the oldest are forgotten.
func (d *promDecoder) sample() error {
	if ok, err := d.null(); ok || err != nil {
		return err
	}
	var ms int64
	var val float64
	i, ok := 0, true
	err := d.arrayOf(func() error {
		defer func() { i++ }()
		if i > 1 || !ok {
			return d.skip(0)
		}
		num, isNum, err := d.number()
		if err != nil || !isNum {
			ok = false
			return err
		}
		if i == 0 {
			ms, ok = secondsToMillis(num)
		} else {
			val, err = strconv.ParseFloat(num, 64)
			ok = err == nil
		}
		return nil
	})
	if err == nil && ok && i >= 2 {
		if d.lim != nil && len(d.pts) >= d.maxPoints {
			return fmt.Errorf("%w: more than %d samples", errTooLarge, d.maxPoints)
		}
		if len(d.pts) >= 2*d.maxPoints {
			n := copy(d.pts, d.pts[len(d.pts)-d.maxPoints:])
			clear(d.pts[n:])
			d.pts = d.pts[:n]
		}
		d.pts = append(d.pts, pipeline.Point{Time: time.UnixMilli(ms).UTC(), Value: val})
	}
	return err
}

// secondsToMillis reads a JSON number of seconds as whole milliseconds,
// exactly: "1714564810.5" is 1714564810500. False for anything beyond
// int64 milliseconds or with an exponent or more than 3 decimals but
// zeros.
func secondsToMillis(s string) (int64, bool) {
	whole, frac, _ := strings.Cut(s, ".")
	if strings.ContainsAny(s, "eE") || len(whole) == 0 || len(whole) > 16 {
		return 0, false
	}
	sec, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return 0, false
	}
	if strings.TrimRight(frac[min(3, len(frac)):], "0") != "" {
		return 0, false
	}
	frac = (frac + "000")[:3]
	m, err := strconv.ParseInt(frac, 10, 64)
	if err != nil || m < 0 {
		return 0, false
	}
	if strings.HasPrefix(whole, "-") {
		return sec*1000 - m, true
	}
	return sec*1000 + m, true
}
